"""The seam between an agent and its peers: ``Transport``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from grstats.proto import grstats_pb2 as pb


class Transport(Protocol):
    """Carries the agent's own news to its peers (push) and push-pull exchanges (pull).

    Calling contract:

    * Who calls: the agent's period loop. Every period it calls :meth:`push` once per peer
      (its own news, on a long-lived stream) and :meth:`exchange` with ``pull_fanout`` peers;
      calls to different peers run concurrently, never two of a kind with the same peer.
    * Each must return or raise within ``timeout_s``.
    * Failures raise :class:`grstats.agent.errors.PeerUnreachable` or
      :class:`grstats.agent.errors.PeerTimeout` naming the peer; nothing else for expected
      failures. The loop logs them and goes on; a broken push stream is dropped and the next
      :meth:`push` opens a new one.
    * :meth:`aclose` closes every connection; it is called once, at shutdown.
    """

    def streaming(self, peer: str) -> bool:
        """Whether a push stream to ``peer`` is open (else the next push opens one)."""
        ...

    async def push(self, peer: str, payload: bytes, timeout_s: float) -> None:
        """Send one serialized ``ExchangeRequest`` to ``peer`` on its push stream."""
        ...

    async def exchange(
        self, peer: str, request: pb.ExchangeRequest, timeout_s: float
    ) -> pb.ExchangeResponse:
        """Send ``request`` to ``peer`` (host:port) and return its response."""
        ...

    async def aclose(self) -> None:
        """Close every connection."""
        ...
