"""``MemoryNetwork``: agents wired together in one event loop, without sockets.

Like memberlist's ``MockNetwork`` (``NewTransport(name)``), it is shipped beside the real
transport so that tests of several agents need no ports, servers or encoding::

    network = MemoryNetwork()
    agent = Agent(config, source, transport=network.transport("db1:7400"))
    await agent.start()          # registers the agent's receiving side at db1:7400
    network.cut("db1:7400", "db2:7400")
    network.heal("db1:7400", "db2:7400")

Messages are handed over as values, at once, in the sender's task: a push is merged before
``push`` returns, an exchange answered before ``exchange`` does. A peer with no agent
registered at its address, or behind a cut link, raises
:class:`~grstats.core.errors.PeerUnreachable`; links are cut with
:class:`~grstats.agent.transports.faulty.FaultyTransport`, one per end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grstats.agent.transports.faulty import FaultyTransport
from grstats.core.errors import PeerUnreachable

if TYPE_CHECKING:
    from grstats.agent.messages import Answer, Gossip
    from grstats.agent.transports.base import Receiver


class MemoryNetwork:
    """Receivers by address, the transports that reach them, and the links that are cut."""

    def __init__(self) -> None:
        self._receivers: dict[str, Receiver] = {}
        self._transports: dict[str, MemoryTransport] = {}
        self._cut: set[frozenset[str]] = set()

    def transport(self, address: str) -> MemoryTransport:
        """A transport for the agent at ``address``; it replaces one made before for it.

        Links cut to ``address`` stay cut for the new transport.
        """
        transport = MemoryTransport(self, address)
        transport.broken.update(self._others(address))
        self._transports[address] = transport
        return transport

    def register(self, address: str, receiver: Receiver) -> None:
        """Deliver what is sent to ``address`` to ``receiver`` from now on."""
        self._receivers[address] = receiver

    def unregister(self, address: str, receiver: Receiver) -> None:
        """Stop delivering to ``receiver`` (a later receiver at ``address`` stays)."""
        if self._receivers.get(address) is receiver:
            del self._receivers[address]

    def receiver(self, address: str) -> Receiver | None:
        """The receiver registered at ``address``, if any."""
        return self._receivers.get(address)

    def cut(self, first: str, second: str) -> None:
        """Cut the link between two addresses, both ways: each is unreachable from the other."""
        self._cut.add(frozenset((first, second)))
        self._set_broken(first, second, broken=True)

    def heal(self, first: str, second: str) -> None:
        """Heal the link between two addresses, both ways."""
        self._cut.discard(frozenset((first, second)))
        self._set_broken(first, second, broken=False)

    def _others(self, address: str) -> set[str]:
        """The addresses whose link to ``address`` is cut."""
        return {other for link in self._cut if address in link for other in link - {address}}

    def _set_broken(self, first: str, second: str, *, broken: bool) -> None:
        for source, target in ((first, second), (second, first)):
            transport = self._transports.get(source)
            if transport is None:
                continue
            if broken:
                transport.broken.add(target)
            else:
                transport.broken.discard(target)


class _Delivery:
    """Hands messages straight to the receiver registered at the peer's address."""

    def __init__(self, network: MemoryNetwork) -> None:
        self._network = network
        self._streams: dict[str, Receiver] = {}  # peer -> the receiver the last push reached

    def streaming(self, peer: str) -> bool:
        receiver = self._network.receiver(peer)
        return receiver is not None and self._streams.get(peer) is receiver

    async def push(self, peer: str, news: Gossip, timeout_s: float) -> int:  # noqa: ARG002  (no waiting in memory)
        receiver = self._reach(peer)
        self._streams[peer] = receiver
        receiver.take(news, 0)
        return 0

    async def exchange(self, peer: str, request: Gossip, timeout_s: float) -> Answer:  # noqa: ARG002  (no waiting in memory)
        return self._reach(peer).answer(request, 0, None)

    async def aclose(self) -> None:
        self._streams.clear()

    def _reach(self, peer: str) -> Receiver:
        receiver = self._network.receiver(peer)
        if receiver is None:
            raise PeerUnreachable(f"{peer}: no agent there (in-memory network)")
        return receiver


class MemoryTransport:
    """One agent's end of a :class:`MemoryNetwork`: it sends, and delivers to its agent.

    A :class:`~grstats.agent.transports.base.ServingTransport`: the agent calls :meth:`serve`
    instead of starting a gRPC server. :attr:`broken` holds the peers this end cannot reach
    (see :meth:`MemoryNetwork.cut`); a push stream lasts while the peer's receiver does, so
    the first push to a restarted agent carries all the sender's values, as over gRPC.
    """

    def __init__(self, network: MemoryNetwork, address: str) -> None:
        self.address = address
        self._network = network
        self._links = FaultyTransport(_Delivery(network))
        self._receiver: Receiver | None = None

    @property
    def broken(self) -> set[str]:
        """The peers this end's links to are cut (add or discard to cut one way only)."""
        return self._links.broken

    def serve(self, receiver: Receiver) -> str:
        """Deliver what peers send to this transport's address to ``receiver``."""
        self._receiver = receiver
        self._network.register(self.address, receiver)
        return self.address

    def streaming(self, peer: str) -> bool:
        """Whether pushes to ``peer`` reach the receiver they reached before."""
        return self._links.streaming(peer)

    async def push(self, peer: str, news: Gossip, timeout_s: float) -> int:
        """Hand ``news`` to ``peer``'s receiver; 0 bytes (nothing is encoded)."""
        return await self._links.push(peer, news, timeout_s)

    async def exchange(self, peer: str, request: Gossip, timeout_s: float) -> Answer:
        """Hand ``request`` to ``peer``'s receiver and return its answer."""
        return await self._links.exchange(peer, request, timeout_s)

    async def aclose(self) -> None:
        """Stop delivering to this end's receiver, and forget the push streams."""
        if self._receiver is not None:
            self._network.unregister(self.address, self._receiver)
            self._receiver = None
        await self._links.aclose()
