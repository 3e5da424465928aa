"""The seam between an agent and its peers: ``Transport``, and the ``Receiver`` it delivers to.

Both carry values (:mod:`grstats.agent.messages`: ``Gossip`` and ``Answer``), never protobuf:
encoding is the business of the transport that needs it (gRPC's, in
:mod:`grstats.agent.transports.rpc`, with its server half in :mod:`grstats.agent.server`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from grstats.agent.messages import Answer, Gossip


class Transport(Protocol):
    """Carries the agent's own news to its peers (push) and push-pull exchanges (pull).

    Calling contract:

    * Who calls: the agent's gossip rounds, once per period (1 to 60 s). Every period they
      call :meth:`push` once per peer (the agent's own news, on a long-lived stream) and
      :meth:`exchange` with ``pull_fanout`` peers. Calls to different peers run concurrently,
      never two of a kind with the same peer; :meth:`streaming` never blocks.
    * Each call returns or raises within ``timeout_s``.
    * A peer that cannot be reached, or does not answer in time, raises
      :class:`grstats.core.errors.PeerUnreachable` or :class:`grstats.core.errors.PeerTimeout`
      (both :class:`~grstats.core.errors.TransportError`) naming the peer; an answer that
      breaks the wire contract raises another :class:`~grstats.core.errors.AgentError`
      naming the bad field. Nothing else is raised for expected failures: the rounds log them
      and go on. A broken push stream is dropped, and the next :meth:`push` opens a new one.
    * :meth:`aclose` closes every connection; it is called once, at shutdown.
    """

    def streaming(self, peer: str) -> bool:
        """Whether a push stream to ``peer`` is open (else the next push opens one)."""
        ...

    async def push(self, peer: str, news: Gossip, timeout_s: float) -> int:
        """Send ``news`` to ``peer`` on its push stream; return its size on the wire in bytes.

        The rounds pass the same ``news`` object to every peer of a period, so a transport
        may encode it once. The size is for the metrics; 0 if nothing is encoded.
        """
        ...

    async def exchange(self, peer: str, request: Gossip, timeout_s: float) -> Answer:
        """Send ``request`` to ``peer`` (``host:port``) and return its answer."""
        ...

    async def aclose(self) -> None:
        """Close every connection."""
        ...


class Receiver(Protocol):
    """The agent's receiving side: what a transport's server half hands each message to.

    Calling contract:

    * Who calls: the server half of a transport (gRPC's ``Gossip`` servicer, or the in-memory
      network), once per message a peer sends, after checking it. Calls come from the event
      loop, one at a time, and never block: each merges into the gossip state and returns.
    * ``size_bytes`` is the message's size on the wire (0 when nothing was encoded), for
      the metrics. Neither method raises for what a peer sends: refusals happen before.
    """

    def take(self, news: Gossip, size_bytes: int) -> None:
        """Merge a peer's pushed news."""
        ...

    def answer(self, request: Gossip, size_bytes: int, received_at_us: int | None) -> Answer:
        """Merge an exchange's request and answer it (``received_at_us`` None: now)."""
        ...


@runtime_checkable
class ServingTransport(Transport, Protocol):
    """A transport that also delivers the agent's incoming gossip: no gRPC server is needed.

    The agent calls :meth:`serve` once, at start, instead of binding its gRPC server; its
    :meth:`aclose` stops the delivery. The in-memory network's transports are such.
    """

    def serve(self, receiver: Receiver) -> str:
        """Deliver the messages sent to this transport's address to ``receiver``; return it."""
        ...
