"""``PeerRounds``: the agent's gossip with its peers, both halves of it.

Each period, a round:

1. pushes the agent's own news to every peer (or ``fanout`` of them in turn), the same
   message for all: like GR's stats message, one small message per peer and period on a
   long-lived stream (all its values on the first message of a stream, then what changed);
2. push-pulls with ``pull_fanout`` reachable peers in turn (anti-entropy): each side gets
   what the other's digest says it lacks, including third members' values, so a broken link
   is bridged through the others. The clock offset of each answering member is estimated from
   the four timestamps of the exchange (NTP's formula);
3. composes every member's clock offset from its own estimates and those the other agents
   share on their counts (:func:`~grstats.agent.gossip.clocks.compose`), so that a member
   heard only through relays has its clock known too, and warns of a member whose clock is
   off the group's median by more than half a second (``clock_skewed``, once; ``clock_skew_ended``
   at info when it is back).

Both halves refute a peer's digest that holds the local member's values under a stamp above
the agent's own (:meth:`~grstats.agent.gossip.GossipState.refute`): the agent's clock went back
since an earlier run, and without it the peers would drop its values as stale
(``incarnation_refuted``, a warning).

The receiving half is here too (:meth:`PeerRounds.take`, :meth:`PeerRounds.answer`): a
transport's server half hands it what peers send. Failures of a peer are expected: they are
logged, counted, and the round goes on.

Every message and answer from a peer says which grstats its agent runs
(:class:`~grstats.agent.messages.AgentBuild`): the rounds keep it per member
(:attr:`PeerRounds.builds`), serve it as ``grstats_peer_info``, and log ``peer_version``
(info) when a member's agent is first heard or runs another build than before, and
``peer_protocol_newer`` (a warning) when it speaks a newer protocol revision than this agent:
this agent then ignores the fields it does not know, and is the one to upgrade
(docs/upgrades.md).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import TYPE_CHECKING

from grstats.agent.gossip import ClockOffset, Counts, Key, MergeResult, Stamp
from grstats.agent.gossip.clocks import FILTER_SAMPLES, SKEW_WARN_US, compose, filtered, skews
from grstats.agent.gossip.state import self_listing_view
from grstats.agent.known import departed, served_view
from grstats.agent.messages import Answer, Gossip, for_build
from grstats.core.address import join_address
from grstats.core.build import PROTOCOL_REVISION, AgentBuild
from grstats.core.errors import AgentError, TransportError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from grstats.agent.config import AgentConfig
    from grstats.agent.gossip import Digest, Update
    from grstats.agent.local import LocalMember
    from grstats.agent.metrics_off import Figures
    from grstats.agent.transports.base import Transport
    from grstats.core.clock import Clock


class PeerRounds:
    """The agent's rounds with its peers; a :class:`~grstats.agent.transports.base.Receiver`.

    Attributes:
        config: the agent's config (peers, fanouts, the deadline of each call).
        address: this agent's address as its peers know it (set when the agent starts).
        offsets: member -> its clock minus ours, µs: every member's whose clock is known,
            directly (this agent's exchanges) or through the estimates other agents share.
        offset_errors: member -> the most its offset can be wrong by, µs.
        direct: member -> this agent's own estimate of its clock: the best of its latest
            exchanges (:func:`~grstats.agent.gossip.clocks.filtered`).
        unreachable: peers whose last push or exchange failed (skipped for exchanges).
        builds: member -> which grstats its agent runs, as its last message to this agent
            said (members heard directly only).
    """

    def __init__(
        self,
        config: AgentConfig,
        member: LocalMember,
        transport: Transport,
        *,
        clock: Clock,
        metrics: Figures,
    ) -> None:
        self.config = config
        self.address = config.advertised
        self.offsets: dict[str, int] = {}
        self.offset_errors: dict[str, int] = {}
        self.direct: dict[str, ClockOffset] = {}
        self._samples: dict[str, deque[ClockOffset]] = {}  # member -> its latest exchanges'
        self._direct_runs: dict[str, int] = {}  # member -> its incarnation when estimated
        self._skewed: dict[str, int] = {}  # members warned of: their skew, µs
        self.unreachable: set[str] = set()
        self._member = member
        self._transport = transport
        self._clock = clock
        self._metrics = metrics
        self._agents: dict[str, str] = {}  # member -> its agent's address, as heard directly
        self.builds: dict[str, AgentBuild] = {}
        #: member -> its agent's address as the registry remembers it (set at the agent's start)
        self.remembered: Mapping[str, str] = {}
        self._peer_digests: dict[str, Digest] = {}
        self._turn = 0
        self._pull_turn = 0
        self._pushed_upto = Stamp(0, 0)  # the newest own value pushed

    @property
    def agents(self) -> Mapping[str, str]:
        """Member -> the address of its agent, for members whose agent was heard directly."""
        return self._agents

    def peers(self) -> list[str]:
        """The peers: ``peers``, plus, when discovering, the agents of the served view's members.

        Discovery is on when no peers are given, unless ``discover_peers`` says otherwise. It
        dials each member of the view the agent serves (its member's own, else the freshest a
        peer reported: :func:`~grstats.agent.known.served_view`) at its host and
        ``agent_port``, and the agents the registry remembers (:attr:`remembered`) of those
        members, or of every member while no view is known: so an agent whose member is down,
        out of the group or never read still finds the group. Never this agent.
        """
        peers = list(self.config.peers)
        if self.config.discovery_enabled:
            view, _ = served_view(self._member.state, self._member.snapshot)
            listed = {row.member_id for row in view.members}
            found = [
                join_address(row.member_host, self.config.agent_port)
                for row in view.members
                if row.member_id != self._member.member_id and row.member_host
            ]
            found += [
                address
                for member_id, address in self.remembered.items()
                if not view.view_id or member_id in listed
            ]
            peers += [address for address in dict.fromkeys(found) if address not in peers]
        return [peer for peer in peers if peer != self.address]

    async def run(self) -> None:
        """One round: push to the peers and push-pull with some, concurrently."""
        peers = self.peers()
        fanout = self.config.fanout
        await asyncio.gather(
            self._push_all(_in_turn(peers, fanout, self._turn)),
            *(self._exchange(peer) for peer in self._pull_peers(peers)),
        )
        self._turn += fanout
        self.update_clocks()

    def update_clocks(self) -> None:
        """Compose every member's clock offset; warn of a member whose clock is off (once).

        Once a round, after it, and at a merge only when an agent estimated directly restarted
        (composing at every push of 8 peers cost a tenth of an idle agent's CPU); the tables
        serve the offsets of the last round.
        """
        state = self._member.state
        shared = {}
        for member_id, origin in state.origins.items():
            heard = origin.values.get(Key.COUNTS)
            if heard is not None and isinstance(heard.update.value, Counts):
                shared[member_id] = heard.update.value.offsets
        for member_id, run in list(self._direct_runs.items()):
            estimated = state.origins.get(member_id)
            if estimated is not None and estimated.stamp.incarnation != run:
                # Its agent restarted (or refuted) since: its clock may have been stepped.
                del self._direct_runs[member_id], self.direct[member_id]
                self._samples.pop(member_id, None)
                self._member.clock_offsets = self._shared_offsets()
        found = compose(state.local_id, self.direct.values(), shared)
        # In place: the served tables hold these very maps.
        for table in (self.offsets, self.offset_errors):
            for member_id in [m for m in table if m not in found]:
                del table[member_id]
        for member_id, estimate in found.items():
            self.offsets[member_id] = estimate.offset_us
            self.offset_errors[member_id] = estimate.error_us
        self._warn_skews(skews(self.offsets, state.local_id, len(state.known_members())))

    def _warn_skews(self, skew: Mapping[str, int]) -> None:
        """Log ``clock_skewed`` when a member goes past the limit, ``clock_skew_ended`` back."""
        for member_id, off in skew.items():
            if abs(off) > SKEW_WARN_US and member_id not in self._skewed:
                row = departed(self._member.state, member_id)  # its host and port, if listed
                host, port = row.member_host, row.member_port
                self._member.log.warning(
                    "clock_skewed",
                    member=member_id,
                    address=join_address(host, port) if host and port else host,
                    skew_s=round(off / 1_000_000, 3),
                    error_s=round(self.offset_errors.get(member_id, 0) / 1_000_000, 3),
                )
                self._skewed[member_id] = off
        for member_id in [m for m in self._skewed if abs(skew.get(m, 0)) <= SKEW_WARN_US]:
            del self._skewed[member_id]
            self._member.log.info(
                "clock_skew_ended", member=member_id, skew_s=round(skew.get(member_id, 0) / 1e6, 3)
            )

    def merge(
        self, updates: list[Update], via: str, sender_member: str = "", *, sent: bool = False
    ) -> MergeResult:
        """Merge what a peer (``via``) delivered, pushed or answered, into the gossip state.

        ``sender_member`` is the member the peer's agent says it reads: see :meth:`_admit`.
        ``sent``: the peer sent it (a push or an exchange's request), which the server half
        hands over only once the peer's certificate, if any, names ``sender_member``
        (:mod:`grstats.agent.identity`): its values are heard directly from their member's
        agent. An answer's are relays (:mod:`grstats.agent.gossip.relays`).
        """
        state = self._member.state
        self._admit(sender_member, updates, via)
        result = state.merge(updates, self._clock(), via, sender_member if sent else "")
        if result.unknown:
            self._member.log.warning(
                "unknown_members_refused", via=via, members=list(result.unknown)
            )
        self._refuted(result.refuted, via)
        if result.accepted and (self._restarted() or _shares_offsets(updates)):
            # Drop the estimates of a restarted agent's earlier run at once, and take a
            # member's new shared estimates at once (they ride only every 30 s or when they
            # moved): a clock stepped at a restart is then placed right within the period.
            self.update_clocks()
        return result

    def _restarted(self) -> bool:
        """Whether a member estimated directly has changed its incarnation since (cheap)."""
        origins = self._member.state.origins
        return any(
            (origin := origins.get(member_id)) is not None and origin.stamp.incarnation != run
            for member_id, run in self._direct_runs.items()
        )

    def _admit(self, member: str, updates: list[Update], via: str) -> None:
        """Let a peer's own member be known, by the view it reports, to an agent without a view.

        A message about a member no view lists is refused; but an agent that has no view of its
        own (its member is down, not in a group, or never read) and none remembered would
        refuse everything. So, for such an agent only, a peer of its own (``via``) that sends
        its member's view, listing that member, makes the member known, within ``max_members``:
        the view counts as the agent's own view would, and its members' values are taken.
        Not a member forgotten (``grstats members forget``, kept across restarts): it stays
        forgotten until another member's view lists it, even while the agent's first read
        is failing or still running after a restart.
        """
        state, snapshot = self._member.state, self._member.snapshot
        if (
            not member
            or member in state.origins
            or member.lower() in state.forgotten
            or (snapshot is not None and snapshot.view.view_id)
            or len(state.origins) >= state.max_origins
            or via not in self.peers()
        ):
            return
        for update in updates:
            view = self_listing_view(update) if update.origin == member else None
            if view is not None and view.view_id:
                state.seed(member, {}, self._clock(), via)
                return

    def _refuted(self, stamp: Stamp | None, via: str) -> None:
        """Log a refutation of ``stamp`` (see :meth:`~grstats.agent.gossip.GossipState.refute`)."""
        state = self._member.state
        if stamp is None:
            return
        self._member.log.warning(
            "incarnation_refuted",
            via=via,
            held_incarnation=stamp.incarnation,
            incarnation=state.incarnation,
            ahead_s=round((stamp.incarnation - self._member.incarnation) / 1_000_000, 3),
        )

    def forget_unknown(self) -> None:
        """Keep the per-member and per-peer maps to known members and current peers only."""
        state = self._member.state
        known = state.known_members()
        tables = (
            self._agents,
            self.offsets,
            self.offset_errors,
            self.direct,
            self._direct_runs,
            self._samples,
        )
        for table in (*tables, self._skewed):
            for member_id in [member_id for member_id in table if member_id not in known]:
                del table[member_id]
        for member_id in [member_id for member_id in self.builds if member_id not in known]:
            del self.builds[member_id]
            self._metrics.peer_gone(member_id)
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
        own = state.origins.get(self._member.member_id)
        if own is None or not peers:
            return
        sent = self._clock()
        news = tuple(h.update for h in own.values.values() if h.update.stamp > self._pushed_upto)
        self._pushed_upto = own.stamp
        messages: dict[tuple[bool, bool], Gossip] = {}

        def message(opening: bool, build: AgentBuild | None) -> Gossip:
            kind = (opening, build is not None and build.takes_events)
            if kind not in messages:
                updates = tuple(h.update for h in own.values.values()) if opening else news
                updates = for_build(updates, build)
                messages[kind] = Gossip(self.address, self._member.member_id, updates, sent)
            return messages[kind]

        pushes: list[asyncio.Future[None]] = []
        try:
            for peer in peers:
                pushed = message(not self._transport.streaming(peer), self._build_at(peer))
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
        sent = self._clock()
        # Send only the agent's own news: the values of third members travel on the pull side,
        # which is exact (judged by the digest this request carries), so a full mesh does not
        # deliver each value once per relaying agent, and a broken link is still bridged.
        lacking = state.updates_for(self._peer_digests.get(peer, {}))
        own = tuple(update for update in lacking if update.origin == self._member.member_id)
        own = for_build(own, self._build_at(peer))
        request = Gossip(self.address, self._member.member_id, own, sent, state.digest())
        try:
            answer = await self._transport.exchange(peer, request, self.config.rpc_timeout_s)
        except TransportError as exc:
            self._metrics.failed(peer, "exchange")
            # Info: a peer's failures are the transport's; its member's silence is the warning
            # (grstats.agent.liveness).
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
        self.merge(list(answer.updates), peer, answer.member)
        self._heard_build(answer.member, answer.build, peer)
        self._refuted(state.refute(answer.digest, arrived), peer)
        self._peer_digests[peer] = answer.digest
        responder = answer.member
        if responder not in state.known_members():
            return  # an unknown member never gets state (nor a spoofed one, growing the maps)
        if responder:
            self._agents[responder] = peer
        if responder and answer.received_at_us and answer.sent_at_us:
            offset = ((answer.received_at_us - sent) + (answer.sent_at_us - arrived)) // 2
            delay = max(0, (arrived - sent) - (answer.sent_at_us - answer.received_at_us))
            origin = state.origins.get(responder)
            run = origin.stamp.incarnation if origin is not None else 0
            samples = self._samples.get(responder)
            if samples is None or self._direct_runs.get(responder) != run:
                samples = self._samples[responder] = deque(maxlen=FILTER_SAMPLES)
            samples.append(ClockOffset(responder, offset, delay))
            self.direct[responder] = filtered(samples)
            self._direct_runs[responder] = run
            self.offsets[responder] = self.direct[responder].offset_us
            self._member.clock_offsets = self._shared_offsets()

    def _build_at(self, peer: str) -> AgentBuild | None:
        """What the agent at ``peer`` (an address) runs, as its messages said; None: unknown."""
        member = next((m for m, address in self._agents.items() if address == peer), None)
        return self.builds.get(member) if member is not None else None

    def _shared_offsets(self) -> tuple[ClockOffset, ...]:
        """This agent's own estimates, as its counts share them."""
        return tuple(self.direct[m] for m in sorted(self.direct))

    # -- the receiving half ----------------------------------------------------------------

    def take(self, news: Gossip, size_bytes: int) -> None:
        """Merge the news a peer pushed (Gossip.Push)."""
        self._accept(news)
        self._metrics.received(self._label(news.sender_member), "push", size_bytes)

    def answer(self, request: Gossip, size_bytes: int, received_at_us: int | None) -> Answer:
        """Merge what a peer sent with its exchange, and answer what it lacks by its digest."""
        received = self._clock() if received_at_us is None else received_at_us
        self._accept(request)
        self._refuted(self._member.state.refute(request.digest, received), request.sender)
        self._metrics.received(self._label(request.sender_member), "exchange", size_bytes)
        state = self._member.state
        return Answer(
            updates=for_build(tuple(state.updates_for(request.digest)), request.build),
            digest=state.digest(),
            member=self._member.member_id,
            received_at_us=received,
            sent_at_us=self._clock(),
        )

    def _accept(self, message: Gossip) -> None:
        state = self._member.state
        # The sender's address is believed only for a known member and one of this agent's
        # peers: anything may claim to be anyone, and this map must not grow from what it says.
        sender, member = message.sender, message.sender_member
        if sender and member in state.known_members() and sender in self.peers():
            self._agents[member] = sender
        self.merge(list(message.updates), sender, member, sent=True)
        self._heard_build(member, message.build, sender)

    def _heard_build(self, member: str, build: AgentBuild, via: str) -> None:
        """Keep which grstats ``member``'s agent runs; log and relabel only when it changed.

        Only a known member other than this agent's own is kept (what a message claims must
        not grow the map), after the message was merged: its view may have made it known.
        """
        if self.builds.get(member) == build:
            return  # the usual case: one dict lookup per message
        if not member or member == self._member.member_id:
            return
        if member not in self._member.state.known_members():
            return
        before = self.builds.get(member)
        self.builds[member] = build
        self._metrics.peer_build(member, build.version, build.revision)
        fields: dict[str, object] = {
            "member": member,
            "agent": via,
            "version": build.version or None,  # None: an agent older than the field
            "protocol_revision": build.revision,
            "own_protocol_revision": PROTOCOL_REVISION,
        }
        if before is not None:  # its agent was upgraded, downgraded or replaced
            fields["was_version"] = before.version or None
            fields["was_protocol_revision"] = before.revision
        self._member.log.info("peer_version", **fields)
        if build.newer:
            self._member.log.warning(
                "peer_protocol_newer",
                member=member,
                agent=via,
                version=build.version,
                protocol_revision=build.revision,
                own_protocol_revision=PROTOCOL_REVISION,
                message="this agent is older than its peer: upgrade it",
            )

    def _label(self, member: str) -> str:
        """The ``member_id`` label of a sender: its UUID if known, so that labels stay bounded."""
        return member if member in self._member.state.origins else "unknown"


def _shares_offsets(updates: list[Update]) -> bool:
    """Whether ``updates`` hold counts that carry their origin's clock estimates anew."""
    return any(
        update.key is Key.COUNTS
        and isinstance(update.value, Counts)
        and update.value.offsets_present
        for update in updates
    )


def _in_turn(peers: list[str], count: int, turn: int) -> list[str]:
    """``count`` of ``peers`` starting at ``turn`` (all when ``count`` is 0 or covers them)."""
    if not count or len(peers) <= count:
        return peers
    start = turn % len(peers)
    return (peers + peers)[start : start + count]
