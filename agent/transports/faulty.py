"""``FaultyTransport``: wraps a transport and breaks chosen links, for fault-injection tests."""

from __future__ import annotations

from typing import TYPE_CHECKING

from grstats.agent.errors import PeerUnreachable

if TYPE_CHECKING:
    from grstats.agent.transports.base import Transport
    from grstats.proto import grstats_pb2 as pb


class FaultyTransport:
    """Passes pushes and exchanges to ``inner``, except to peers in :attr:`broken` (unreachable)."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.broken: set[str] = set()

    async def exchange(
        self, peer: str, request: pb.ExchangeRequest, timeout_s: float
    ) -> pb.ExchangeResponse:
        """Exchange with ``peer`` unless its link is broken."""
        if peer in self.broken:
            raise PeerUnreachable(f"{peer}: link broken (fault injection)")
        return await self.inner.exchange(peer, request, timeout_s)

    def streaming(self, peer: str) -> bool:
        """Whether the inner transport has a push stream to ``peer``."""
        return peer not in self.broken and self.inner.streaming(peer)

    async def push(self, peer: str, payload: bytes, timeout_s: float) -> None:
        """Push to ``peer`` unless its link is broken."""
        if peer in self.broken:
            raise PeerUnreachable(f"{peer}: link broken (fault injection)")
        await self.inner.push(peer, payload, timeout_s)

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self.inner.aclose()
