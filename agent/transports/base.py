"""The seam between an agent and its peers: ``Transport``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from proto import grstats_pb2 as pb


class Transport(Protocol):
    """Carries one push-pull exchange to a peer agent.

    Calling contract:

    * Who calls: the agent's exchange loop, once per chosen peer per period; exchanges with
      different peers run concurrently, never two with the same peer.
    * It must return or raise within ``timeout_s``.
    * Failures raise :class:`agent.errors.PeerUnreachable` or :class:`agent.errors.PeerTimeout`
      naming the peer; nothing else for expected failures. The loop logs them and goes on.
    * :meth:`aclose` closes every connection; it is called once, at shutdown.
    """

    async def exchange(
        self, peer: str, request: pb.ExchangeRequest, timeout_s: float
    ) -> pb.ExchangeResponse:
        """Send ``request`` to ``peer`` (host:port) and return its response."""
        ...

    async def aclose(self) -> None:
        """Close every connection."""
        ...
