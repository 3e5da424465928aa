"""``PeerRounds``: the agent's gossip with its peers, both halves of it.

Each period, a round:

1. pushes the agent's own news to every peer (or ``fanout`` of them in turn), the same
   message for all: like GR's stats message, one small message per peer and period on a
   long-lived stream (all its values on the first message of a stream, then what changed);
2. push-pulls with ``pull_fanout`` reachable peers in turn (anti-entropy): each side gets
   what the other's digest says it lacks, including third members' values, so a broken link
   is bridged through the others. The clock offset of each answering member is estimated from
   the four timestamps of the exchange (NTP's formula).

The receiving half is here too (:meth:`PeerRounds.take`, :meth:`PeerRounds.answer`): a
transport's server half hands it what peers send. Failures of a peer are expected: they are
logged, counted, and the round goes on.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from grstats.agent.address import join_address
from grstats.agent.errors import AgentError, TransportError
from grstats.agent.gossip import MergeResult, Stamp
from grstats.agent.messages import Answer, Gossip

if TYPE_CHECKING:
    from collections.abc import Mapping

    from grstats.agent.clock import Clock
    from grstats.agent.config import AgentConfig
    from grstats.agent.gossip import Digest, GossipState, Update
    from grstats.agent.local import LocalMember
    from grstats.agent.metrics import AgentMetrics
    from grstats.agent.transports.base import Transport


class PeerRounds:
    """The agent's rounds with its peers; a :class:`~grstats.agent.transports.base.Receiver`.

    Attributes:
        config: the agent's config (peers, fanouts, the deadline of each call).
        address: this agent's address as its peers know it (set when the agent starts).
        offsets: member -> its clock minus ours, µs, as estimated from the exchanges.
        unreachable: peers whose last push or exchange failed (skipped for exchanges).
    """

    def __init__(
        self,
        config: AgentConfig,
        member: LocalMember,
        transport: Transport,
        *,
        clock: Clock,
        metrics: AgentMetrics,
    ) -> None:
        self.config = config
        self.address = config.advertised
        self.offsets: dict[str, int] = {}
        self.unreachable: set[str] = set()
        self._member = member
        self._transport = transport
        self._clock = clock
        self._metrics = metrics
        self._agents: dict[str, str] = {}  # member -> its agent's address, as heard directly
        self._peer_digests: dict[str, Digest] = {}
        self._turn = 0
        self._pull_turn = 0
        self._pushed_upto = Stamp(0, 0)  # the newest own value pushed

    @property
    def agents(self) -> Mapping[str, str]:
        """Member -> the address of its agent, for members whose agent was heard directly."""
        return self._agents

    def peers(self) -> list[str]:
        """The peers: ``peers``, plus the members' hosts at ``agent_port`` when discovering.

        Discovery is on when no peers are given, unless ``discover_peers`` says otherwise.
        Never this agent.
        """
        peers = list(self.config.peers)
        snapshot = self._member.snapshot
        if self.config.discovery_enabled and snapshot is not None:
            for row in snapshot.view.members:
                found = join_address(row.member_host, self.config.agent_port)
                if (
                    row.member_id != self._member.member_id
                    and row.member_host
                    and found not in peers
                ):
                    peers.append(found)
        return [peer for peer in peers if peer != self.address]

    async def run(self) -> None:
        """One round: push to the peers and push-pull with some, concurrently."""
        if self._member.state is None:
            return
        peers = self.peers()
        fanout = self.config.fanout
        await asyncio.gather(
            self._push_all(_in_turn(peers, fanout, self._turn)),
            *(self._exchange(peer) for peer in self._pull_peers(peers)),
        )
        self._turn += fanout

    def merge(self, updates: list[Update], via: str) -> MergeResult:
        """Merge what a peer (``via``) delivered, pushed or answered, into the gossip state."""
        state = self._member.state
        if state is None:
            return MergeResult()
        result = state.merge(updates, self._clock(), via)
        if result.unknown:
            self._member.log.warning(
                "unknown_members_refused", via=via, members=list(result.unknown)
            )
        return result

    def forget_unknown(self) -> None:
        """Keep the per-member and per-peer maps to known members and current peers only."""
        state = self._member.state
        if state is None:
            return
        known = state.known_members()
        for table in (self._agents, self.offsets):
            for member_id in [member_id for member_id in table if member_id not in known]:
                del table[member_id]
        peers = set(self.peers())
        for peer in [peer for peer in self._peer_digests if peer not in peers]:
            del self._peer_digests[peer]

    # -- the sending half ------------------------------------------------------------------

    def _pull_peers(self, peers: list[str]) -> list[str]:
        """The peers to push-pull with this period: ``pull_fanout`` reachable ones, in turn."""
        reachable = [peer for peer in peers if peer not in self.unreachable] or peers
        chosen = _in_turn(reachable, self.config.pull_fanout, self._pull_turn)
        self._pull_turn += self.config.pull_fanout
        return chosen

    async def _push_all(self, peers: list[str]) -> None:
        """Push the agent's own news to ``peers``: one message for all (a stream's first: all)."""
        state = self._member.state
        assert state is not None
        own = state.origins.get(self._member.member_id)
        if own is None or not peers:
            return
        sent = self._clock()
        news = tuple(h.update for h in own.values.values() if h.update.stamp > self._pushed_upto)
        self._pushed_upto = own.stamp
        messages: dict[bool, Gossip] = {}

        def message(opening: bool) -> Gossip:
            if opening not in messages:
                updates = tuple(h.update for h in own.values.values()) if opening else news
                messages[opening] = Gossip(self.address, self._member.member_id, updates, sent)
            return messages[opening]

        pushes: list[asyncio.Future[None]] = []
        try:
            for peer in peers:
                pushed = message(not self._transport.streaming(peer))
                pushes.append(asyncio.ensure_future(self._push(peer, pushed)))
                # One write per turn of the event loop: a query that arrives meanwhile waits
                # for one peer's write, not for all of them (each costs gRPC about 0.5 ms).
                await asyncio.sleep(0)
        except asyncio.CancelledError:  # the agent stops: so do the writes begun
            for push in pushes:
                push.cancel()
            raise
        await asyncio.gather(*pushes)

    async def _push(self, peer: str, news: Gossip) -> None:
        try:
            size = await self._transport.push(peer, news, self.config.rpc_timeout_s)
        except TransportError as exc:
            self._metrics.failed(peer, "push")
            if peer not in self.unreachable:
                self._member.log.info("peer_push_failed", peer=peer, error=str(exc))
            self.unreachable.add(peer)
            return
        self._metrics.sent(peer, "push", size)
        if peer in self.unreachable:
            self.unreachable.discard(peer)
            self._member.log.info("peer_push_resumed", peer=peer)

    async def _exchange(self, peer: str) -> None:
        state = self._member.state
        assert state is not None
        sent = self._clock()
        # Send only the agent's own news: the values of third members travel on the pull side,
        # which is exact (judged by the digest this request carries), so a full mesh does not
        # deliver each value once per relaying agent, and a broken link is still bridged.
        lacking = state.updates_for(self._peer_digests.get(peer, {}))
        own = tuple(update for update in lacking if update.origin == self._member.member_id)
        request = Gossip(self.address, self._member.member_id, own, sent, state.digest())
        try:
            answer = await self._transport.exchange(peer, request, self.config.rpc_timeout_s)
        except TransportError as exc:
            self._metrics.failed(peer, "exchange")
            self._member.log.info("peer_exchange_failed", peer=peer, error=str(exc))
            self.unreachable.add(peer)
            return
        except AgentError as exc:  # an answer that breaks the wire contract
            self._member.log.warning("peer_answer_refused", peer=peer, error=str(exc))
            return
        arrived = self._clock()
        self._metrics.sent(peer, "exchange", answer.request_bytes)
        self._metrics.round_trip(peer, max(0, arrived - sent) / 1_000_000)
        self.unreachable.discard(peer)
        self.merge(list(answer.updates), peer)
        self._peer_digests[peer] = answer.digest
        responder = answer.member
        if responder not in state.known_members():
            return  # an unknown member never gets state (nor a spoofed one, growing the maps)
        if responder:
            self._agents[responder] = peer
        if responder and answer.received_at_us and answer.sent_at_us:
            offset = ((answer.received_at_us - sent) + (answer.sent_at_us - arrived)) // 2
            self.offsets[responder] = offset

    # -- the receiving half ----------------------------------------------------------------

    def take(self, news: Gossip, size_bytes: int) -> None:
        """Merge the news a peer pushed (Gossip.Push)."""
        self._accept(news)
        self._metrics.received(self._label(news.sender_member), "push", size_bytes)

    def answer(self, request: Gossip, size_bytes: int, received_at_us: int | None) -> Answer:
        """Merge what a peer sent with its exchange, and answer what it lacks by its digest."""
        received = self._clock() if received_at_us is None else received_at_us
        self._accept(request)
        self._metrics.received(self._label(request.sender_member), "exchange", size_bytes)
        state = self._member.state
        if state is None:
            return Answer(received_at_us=received, sent_at_us=self._clock())
        return Answer(
            updates=tuple(state.updates_for(request.digest)),
            digest=state.digest(),
            member=self._member.member_id,
            received_at_us=received,
            sent_at_us=self._clock(),
        )

    def _accept(self, message: Gossip) -> None:
        state = self._member.state
        if state is None:
            return
        # The sender's address is believed only for a known member and one of this agent's
        # peers: anything may claim to be anyone, and this map must not grow from what it says.
        sender, member = message.sender, message.sender_member
        if sender and member in state.known_members() and sender in self.peers():
            self._agents[member] = sender
        self.merge(list(message.updates), sender)

    def _label(self, member: str) -> str:
        """The ``member_id`` label of a sender: its UUID if known, so that labels stay bounded."""
        state: GossipState | None = self._member.state
        return member if state is not None and member in state.origins else "unknown"


def _in_turn(peers: list[str], count: int, turn: int) -> list[str]:
    """``count`` of ``peers`` starting at ``turn`` (all when ``count`` is 0 or covers them)."""
    if not count or len(peers) <= count:
        return peers
    start = turn % len(peers)
    return (peers + peers)[start : start + count]
