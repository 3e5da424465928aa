"""``FaultyTransport``: wraps a transport and breaks chosen links, for fault-injection tests."""

from __future__ import annotations

from typing import TYPE_CHECKING

from grstats.core.errors import PeerUnreachable

if TYPE_CHECKING:
    from grstats.agent.messages import Answer, Gossip
    from grstats.agent.transports.base import Transport


class FaultyTransport:
    """Passes pushes and exchanges to ``inner``, except to peers in :attr:`broken` (unreachable).

    :attr:`broken` is a plain set of peer addresses: add one to cut this side's link to it,
    discard it to heal the link. The in-memory network cuts both sides of a link this way.
    """

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.broken: set[str] = set()

    def streaming(self, peer: str) -> bool:
        """Whether the inner transport has a push stream to ``peer`` (never over a cut link)."""
        return peer not in self.broken and self.inner.streaming(peer)

    async def push(self, peer: str, news: Gossip, timeout_s: float) -> int:
        """Push to ``peer`` unless its link is broken."""
        self._check(peer)
        return await self.inner.push(peer, news, timeout_s)

    async def exchange(self, peer: str, request: Gossip, timeout_s: float) -> Answer:
        """Exchange with ``peer`` unless its link is broken."""
        self._check(peer)
        return await self.inner.exchange(peer, request, timeout_s)

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self.inner.aclose()

    def _check(self, peer: str) -> None:
        if peer in self.broken:
            raise PeerUnreachable(f"{peer}: link broken (fault injection)")
