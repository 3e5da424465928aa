"""``Agent``: one per member. Reads its member every period, gossips, serves the tables.

Each period (``period_s``, 1 s by default like ``group_replication_flow_control_period``):

1. read the local source; record what changed in the gossip state under the agent's stamps:
   the counts every period (GTID columns on the first one after each ``gtid_interval_s``
   mark, facts §2.4), the view and applier fields when they change, ``gtid_executed`` every
   ``executed_interval_s``, the source's health when it changes;
2. push its own news to every peer (or ``fanout`` of them in turn) on a long-lived stream per
   peer, serialized once for all: like GR's stats message, one small message per peer and
   period (all its values on the first message of a stream, then what changed);
3. push-pull with ``pull_fanout`` reachable peers in turn (anti-entropy): each side gets what
   the other's digest says it lacks, including third members' values, so a broken link is
   bridged through the others; clock offsets are estimated from the four timestamps of each
   exchange (NTP's formula);
4. every ``flush_interval_s``, write the registry of seen members in one transaction.

Failures of the source or of a peer are expected: they are logged and the loop goes on.
Queries are answered from the state without waiting for the loop (WL#3656 F5).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Protocol

import structlog
from grpc_health.v1 import health, health_pb2

from grstats.agent.convert import (
    WireError,
    digest_from_wire,
    digest_to_wire,
    update_to_wire,
    updates_from_wire,
    uuid_from_bytes,
    uuid_to_bytes,
)
from grstats.agent.errors import ConfigError, SourceError, TransportError
from grstats.agent.gossip import Counts, GossipState, Key, MergeResult, Stamp
from grstats.agent.gtid import GtidSet
from grstats.agent.limits import LimitsConfig, RateLimiter
from grstats.agent.metrics import AgentMetrics, serve_metrics
from grstats.agent.model import GroupView, SourceHealth
from grstats.agent.registry import MemberRecord, RegistryError
from grstats.agent.rows import ApplierStatusRow, MemberRow
from grstats.agent.security import Security
from grstats.agent.served import served_tables
from grstats.agent.server import SERVICE_NAMES, build_server, now_us
from grstats.agent.transports.rpc import GrpcTransport
from grstats.proto import grstats_pb2 as pb

if TYPE_CHECKING:
    from collections.abc import Callable
    from wsgiref.simple_server import WSGIServer

    import grpc

    from grstats.agent.gossip import Digest, Update
    from grstats.agent.gossip.updates import Value
    from grstats.agent.model import MemberSnapshot
    from grstats.agent.registry import MemberRegistry
    from grstats.agent.served import Served
    from grstats.agent.sources.base import StatsSource
    from grstats.agent.transports.base import Transport


class RuntimeSettings(Protocol):
    """The settings the runtime uses (``agent.config.AgentConfig`` has them all)."""

    @property
    def listen(self) -> str:
        """Address to bind, host:port (port 0: any free port)."""
        ...

    @property
    def advertise(self) -> str | None:
        """Address peers reach this agent at (default: the bound one)."""
        ...

    @property
    def peers(self) -> tuple[str, ...]:
        """Peer agents, host:port."""
        ...

    @property
    def discovery_enabled(self) -> bool:
        """Whether the members' hosts (at ``agent_port``) are peers too."""
        ...

    @property
    def period_s(self) -> float:
        """Seconds between periods."""
        ...

    @property
    def gtid_interval_s(self) -> float:
        """GTID columns ride on the first counts after each such mark."""
        ...

    @property
    def executed_interval_s(self) -> float:
        """Seconds between sends of gtid_executed."""
        ...

    @property
    def silence_periods(self) -> int:
        """Periods without news after which a member is not connected."""
        ...

    @property
    def fanout(self) -> int:
        """Peers pushed to per period, 0 for all."""
        ...

    @property
    def pull_fanout(self) -> int:
        """Peers push-pulled with per period."""
        ...

    @property
    def rpc_timeout_s(self) -> float:
        """Deadline of one exchange."""
        ...

    @property
    def agent_port(self) -> int:
        """The port of the other members' agents, for discovery when ``peers`` is empty."""
        ...

    @property
    def metrics_listen(self) -> str | None:
        """Where to serve Prometheus' ``/metrics``, host:port; None serves none."""
        ...

    @property
    def flush_interval_s(self) -> float:
        """Seconds between registry saves."""
        ...

    @property
    def retention_s(self) -> float:
        """Seconds a member unheard stays remembered; 0 keeps it forever."""
        ...


class Agent:
    """One agent: see the module docstring. Use ``await start()``, then ``await stop()``."""

    def __init__(  # noqa: PLR0913  (the seams are injected: source, transport, registry, clock)
        self,
        settings: RuntimeSettings,
        source: StatsSource,
        *,
        transport: Transport | None = None,
        registry: MemberRegistry | None = None,
        clock: Callable[[], int] = now_us,
        logger: structlog.typing.FilteringBoundLogger | None = None,
        security: Security | None = None,
    ) -> None:
        self.settings = settings
        self._source = source
        limits = getattr(settings, "limits", None)  # AgentConfig's [limits]; else the defaults
        self.limits = limits if isinstance(limits, LimitsConfig) else LimitsConfig()
        self.security = security or Security()  #: TLS and token of the server and of peers
        self._transport: Transport = transport or GrpcTransport(
            self.limits.max_message_bytes, self.security
        )
        self._registry = registry
        self._remembered: list[MemberRecord] = []
        self._saved: set[str] = set()  # members in the registry after the last save
        self._agents: dict[str, str] = {}  # member -> its agent's address, as heard directly
        self._flushed_at = clock()
        self._clock = clock
        self._log = logger or structlog.get_logger()
        self.limiter = RateLimiter.from_limits(self.limits, self._log)
        self.incarnation = clock()
        self.state: GossipState | None = None
        self.local: MemberSnapshot | None = None
        self.member_id = ""
        self.address = settings.advertise or settings.listen
        self.offsets: dict[str, int] = {}  #: member -> its clock minus ours, µs
        self._peer_digests: dict[str, Digest] = {}
        self._gtid_mark = -1
        self._executed_at = -(2**62)
        self._health = health.aio.HealthServicer()
        self._server: grpc.aio.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._turn = 0
        self._pull_turn = 0
        self._pushed_upto = Stamp(0, 0)  # the newest own value pushed
        self.unreachable: set[str] = set()  #: peers whose last push or exchange failed
        self.periods = 0
        self._cached: tuple[tuple[int, int | None, int], Served] | None = None
        self.metrics = AgentMetrics()
        self.metrics_address: str | None = None  #: where /metrics is served, once started
        self._metrics_server: WSGIServer | None = None

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Bind and start the server (SERVING), then start the period loop."""
        if self._registry is not None:
            self._remembered = await asyncio.to_thread(self._registry.load)
            self._saved = {record.member_id for record in self._remembered}
            self._log.info("registry_loaded", members=len(self._remembered))
        self._server = build_server(
            self,
            self._health,
            limits=self.limits,
            limiter=self.limiter,
            security=self.security,
            log=self._log,
        )
        try:
            port = self.security.bind(self._server, self.settings.listen)
        except RuntimeError as exc:
            raise ConfigError(f"listen: cannot bind {self.settings.listen}: {exc}") from exc
        host = self.settings.listen.rsplit(":", 1)[0]
        self.address = self.settings.advertise or f"{host}:{port}"
        await self._server.start()
        for name in ("", *SERVICE_NAMES):
            await self._health.set(name, health_pb2.HealthCheckResponse.SERVING)
        self.metrics.watch(lambda: self.tables(extended=True), asyncio.get_running_loop())
        if self.settings.metrics_listen:
            self._start_metrics(self.settings.metrics_listen)
        self._log.info(
            "agent_started",
            address=self.address,
            period_s=self.settings.period_s,
            metrics=self.metrics_address,
        )
        self._task = asyncio.create_task(self._loop(), name=f"agent-{self.address}")

    async def stop(self, grace_s: float = 1.0) -> None:
        """Health NOT_SERVING, stop the loop, stop the server, close transport and source."""
        await self._health.enter_graceful_shutdown()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._server is not None:
            await self._server.stop(grace_s)
            self._server = None
        await self.flush()
        if self._registry is not None:
            await asyncio.to_thread(self._registry.close)
        await self._transport.aclose()
        await self._source.aclose()
        if self._metrics_server is not None:
            await asyncio.to_thread(self._metrics_server.shutdown)
            self._metrics_server.server_close()
            self._metrics_server = None
        self._log.info("agent_stopped", address=self.address, periods=self.periods)

    def clock(self) -> int:
        """The agent's clock, µs since the epoch (the one it was given; the wall clock)."""
        return self._clock()

    @property
    def serving(self) -> bool:
        """Whether the agent's server is started and not yet stopped."""
        return self._server is not None

    def _start_metrics(self, listen: str) -> None:
        host, _, port = listen.rpartition(":")
        try:
            server, _, bound = serve_metrics(self.metrics, host.strip("[]"), int(port))
        except OSError as exc:
            raise ConfigError(f"metrics_listen: cannot bind {listen}: {exc}") from exc
        self._metrics_server = server
        self.metrics_address = f"{host}:{bound}"

    async def _loop(self) -> None:
        period = self.settings.period_s
        while True:
            began = time.monotonic()
            await self.run_period()  # the first at once: the member is served from the start
            took = time.monotonic() - began
            if took > period:  # overran: the periods missed are skipped, not bunched up
                self._log.warning("period_overrun", late_s=round(took - period, 3))
                self.metrics.overran()
            # Later periods start at multiples of the period on the wall clock: the agents of
            # a group (on hosts whose clocks NTP keeps within a few ms) read their members at
            # the same instants, so every row an agent serves samples the group at about one
            # moment, and the pushes of all peers arrive together, waking the agent once
            # rather than 8 times.
            await asyncio.sleep(period - time.time() % period)

    # -- one period ----------------------------------------------------------------------

    async def run_period(self) -> None:
        """Read the source, record what changed, exchange with the peers."""
        self.periods += 1
        await self._read_source()
        if self.state is not None:
            peers = self.peers()
            await asyncio.gather(
                self._push_all(_in_turn(peers, self.settings.fanout, self._turn)),
                *(self._exchange(peer) for peer in self._pull_peers(peers)),
            )
            self._turn += self.settings.fanout
        if self._clock() - self._flushed_at >= self.settings.flush_interval_s * 1_000_000:
            await self.flush()

    async def _read_source(self) -> None:
        now = self._clock()
        try:
            snapshot = await self._source.read()
        except SourceError as exc:
            self._log.warning("source_read_failed", error=str(exc))
            # The last read is no longer the member's present: its rows stay in the gossip
            # state (served as its last values) and the freshest view of the others is served.
            self.local = None
            if self.state is not None:
                self._record_if_changed(Key.HEALTH, SourceHealth(ok=False, message=str(exc)), now)
            return
        if self.state is None:
            self.member_id = snapshot.member_id
            self.state = GossipState(
                snapshot.member_id, self.incarnation, max_origins=self.limits.max_members
            )
            self._log = self._log.bind(member_id=snapshot.member_id)
            for record in self._remembered:
                self.state.seed(
                    record.member_id, remembered_values(record), record.last_seen_us, "registry"
                )
        self.local = snapshot
        self._record_if_changed(Key.VIEW, snapshot.view, now)
        self._record_if_changed(Key.APPLIER, snapshot.applier, now)
        self._record_if_changed(Key.HEALTH, snapshot.health, now)
        mark = int(now // (self.settings.gtid_interval_s * 1_000_000))
        present = mark != self._gtid_mark
        self._gtid_mark = mark
        self.state.record_local(Key.COUNTS, Counts(snapshot.stats, gtids_present=present), now)
        if now - self._executed_at >= self.settings.executed_interval_s * 1_000_000:
            self._executed_at = now
            self.state.record_local(Key.GTID_EXECUTED, snapshot.gtid_executed, now)

    def _record_if_changed(self, key: Key, value: GroupView | object, now: int) -> None:
        assert self.state is not None
        held = self.state.value(self.member_id, key)
        if held is None or held.update.value != value:
            self.state.record_local(key, value, now)  # type: ignore[arg-type]

    def peers(self) -> list[str]:
        """The peers: ``--peers``, plus the members' hosts at ``agent_port`` when discovering.

        Discovery is on when no peers are given, unless ``discover_peers`` says otherwise.
        Never this agent.
        """
        peers = list(self.settings.peers)
        if self.settings.discovery_enabled and self.local is not None:
            for row in self.local.view.members:
                found = f"{row.member_host}:{self.settings.agent_port}"
                if row.member_id != self.member_id and row.member_host and found not in peers:
                    peers.append(found)
        return [peer for peer in peers if peer != self.address]

    def _pull_peers(self, peers: list[str]) -> list[str]:
        """The peers to push-pull with this period: ``pull_fanout`` reachable ones, in turn."""
        reachable = [peer for peer in peers if peer not in self.unreachable] or peers
        chosen = _in_turn(reachable, self.settings.pull_fanout, self._pull_turn)
        self._pull_turn += self.settings.pull_fanout
        return chosen

    async def _push_all(self, peers: list[str]) -> None:
        """Push the agent's own news to ``peers``: serialized once, sent on each one's stream."""
        state = self.state
        assert state is not None
        own = state.origins.get(self.member_id)
        if own is None or not peers:
            return
        sent = self._clock()
        news = [
            heard.update for heard in own.values.values() if heard.update.stamp > self._pushed_upto
        ]
        self._pushed_upto = own.stamp
        payloads: dict[bool, bytes] = {}

        def payload(opening: bool) -> bytes:
            if opening not in payloads:
                updates = [heard.update for heard in own.values.values()] if opening else news
                payloads[opening] = pb.ExchangeRequest(
                    sender=self.address,
                    sender_member=uuid_to_bytes(self.member_id),
                    updates=[update_to_wire(update) for update in updates],
                    sent_at_us=sent,
                ).SerializeToString()
            return payloads[opening]

        await asyncio.gather(
            *(self._push(peer, payload(not self._transport.streaming(peer))) for peer in peers)
        )

    async def _push(self, peer: str, payload: bytes) -> None:
        try:
            await self._transport.push(peer, payload, self.settings.rpc_timeout_s)
        except TransportError as exc:
            self.metrics.failed(peer, "push")
            if peer not in self.unreachable:
                self._log.info("peer_push_failed", peer=peer, error=str(exc))
            self.unreachable.add(peer)
            return
        self.metrics.sent(peer, "push", len(payload))
        if peer in self.unreachable:
            self.unreachable.discard(peer)
            self._log.info("peer_push_resumed", peer=peer)

    async def _exchange(self, peer: str) -> None:
        state = self.state
        assert state is not None
        sent = self._clock()
        # Push only the agent's own news: the values of third members travel on the pull side,
        # which is exact (judged by the digest this request carries), so a full mesh does not
        # deliver each value once per relaying agent, and a broken link is still bridged.
        lacking = state.updates_for(self._peer_digests.get(peer, {}))
        own = [update for update in lacking if update.origin == self.member_id]
        request = pb.ExchangeRequest(
            sender=self.address,
            sender_member=uuid_to_bytes(self.member_id),
            digest=digest_to_wire(state.digest()),
            updates=[update_to_wire(update) for update in own],
            sent_at_us=sent,
        )
        self.metrics.sent(peer, "exchange", request.ByteSize())
        try:
            response = await self._transport.exchange(peer, request, self.settings.rpc_timeout_s)
        except TransportError as exc:
            self.metrics.failed(peer, "exchange")
            self._log.info("peer_exchange_failed", peer=peer, error=str(exc))
            self.unreachable.add(peer)
            return
        arrived = self._clock()
        self.metrics.round_trip(peer, max(0, arrived - sent) / 1_000_000)
        try:
            updates = updates_from_wire(
                response.updates,
                max_updates=self.limits.max_updates,
                max_gtid_text=self.limits.max_gtid_text,
            )
            digest = digest_from_wire(response.digest)
            responder = uuid_from_bytes(response.member, "member") if response.member else ""
        except WireError as exc:
            self._log.warning("peer_answer_refused", peer=peer, error=str(exc))
            return
        self.unreachable.discard(peer)
        self._merge(updates, peer)
        self._peer_digests[peer] = digest
        if responder not in state.known_members():
            return  # an unknown member never gets state (nor a spoofed one, growing the maps)
        if responder:
            self._agents[responder] = peer
        if responder and response.received_at_us and response.sent_at_us:
            offset = ((response.received_at_us - sent) + (response.sent_at_us - arrived)) // 2
            self.offsets[responder] = offset

    def _merge(self, updates: list[Update], via: str) -> MergeResult:
        assert self.state is not None
        result = self.state.merge(updates, self._clock(), via)
        if result.unknown:
            self._log.warning("unknown_members_refused", via=via, members=list(result.unknown))
        return result

    # -- what the servicers use ------------------------------------------------------------

    def accept(self, updates: list[Update], sender: str, sender_member: str) -> MergeResult:
        """Merge updates a peer pushed (Gossip.Exchange)."""
        if self.state is None:
            return MergeResult()
        # The sender's address is believed only for a known member and one of this agent's
        # peers: anything may claim to be anyone, and this map must not grow from what it says.
        if sender and sender_member in self.state.known_members() and sender in self.peers():
            self._agents[sender_member] = sender
        return self._merge(updates, sender)

    def knowledge(self) -> GossipState | None:
        """The gossip state, once the local member is known."""
        return self.state

    def tables(self, extended: bool) -> Served:
        """The served tables now (Query.Read); before the first read, what the registry holds.

        The plain tables change only when the state or the local read does: they are built once
        per change and shared by every query until then. The extended columns depend on the
        time, so they are built per query.
        """
        if not extended and self.state is not None:
            key = (self.state.changes, self.local.read_at_us if self.local else None, self.periods)
            if self._cached is None or self._cached[0] != key:
                self._cached = (key, self._tables(extended=False))
            return self._cached[1]
        return self._tables(extended)

    def _tables(self, extended: bool) -> Served:
        state = self.state
        if state is None:
            state = GossipState(self.member_id, self.incarnation)
            for record in self._remembered:
                state.seed(
                    record.member_id, remembered_values(record), record.last_seen_us, "registry"
                )
        silence = int(self.settings.silence_periods * self.settings.period_s * 1_000_000)
        return served_tables(
            state, self.local, self._clock(), silence, offsets_us=self.offsets, extended=extended
        )

    # -- the registry ------------------------------------------------------------------------

    async def flush(self) -> None:
        """Save every known member to the registry in one transaction; purge the expired.

        A member this agent saved last time that is no longer in the registry was removed by
        ``grstats members forget`` while the agent ran: it is dropped from the agent's state
        too, so the save does not bring it back (it returns only if some member's view still
        lists it). A forget between this check and the save, a few ms, is undone by the save.
        """
        now = self._clock()
        self._flushed_at = now
        if self._registry is None or self.state is None:
            return
        try:
            held = {record.member_id for record in await asyncio.to_thread(self._registry.load)}
        except RegistryError as exc:
            self._log.warning("registry_load_failed", error=str(exc))
            return
        for member_id in sorted(self._saved - held - {self.member_id}):
            if self.state.forget(member_id):
                self._log.info("member_forgotten", member=member_id)
        self._drop_unknown()
        retention = int(self.settings.retention_s * 1_000_000)
        if retention:
            for member_id, origin in list(self.state.origins.items()):
                if (
                    member_id != self.member_id
                    and now - max(origin.fresh_at_us, origin.first_seen_us) > retention
                ):
                    self.state.forget(member_id)
        records = member_records(
            self.state, self.tables(extended=False), self._agents, self.address
        )
        try:
            await asyncio.to_thread(self._registry.save, records)
            self._saved = {record.member_id for record in records}
            if retention:
                await asyncio.to_thread(self._registry.purge, now - retention)
        except RegistryError as exc:
            self._log.warning("registry_save_failed", error=str(exc))

    def _drop_unknown(self) -> None:
        """Keep the per-member and per-peer maps to known members and current peers only."""
        if self.state is None:
            return
        known = self.state.known_members()
        for table in (self._agents, self.offsets):
            for member_id in [member_id for member_id in table if member_id not in known]:
                del table[member_id]
        peers = set(self.peers())
        for peer in [peer for peer in self._peer_digests if peer not in peers]:
            del self._peer_digests[peer]


def _in_turn(peers: list[str], count: int, turn: int) -> list[str]:
    """``count`` of ``peers`` starting at ``turn`` (all when ``count`` is 0 or covers them)."""
    if not count or len(peers) <= count:
        return peers
    start = turn % len(peers)
    return (peers + peers)[start : start + count]


def remembered_values(record: MemberRecord) -> dict[Key, Value]:
    """The values a registry record gives back to the gossip state after a restart."""
    values: dict[Key, Value] = {
        Key.VIEW: GroupView(
            members=(
                MemberRow(
                    member_id=record.member_id,
                    member_host=record.member_host,
                    member_port=record.member_port,
                ),
            )
        )
    }
    if record.stats is not None:
        values[Key.COUNTS] = Counts(record.stats, gtids_present=True)
    if record.applier is not None:
        values[Key.APPLIER] = record.applier
    if record.gtid_executed:
        values[Key.GTID_EXECUTED] = GtidSet.parse(record.gtid_executed)
    return values


def member_records(
    state: GossipState, tables: Served, agents: dict[str, str], own_address: str
) -> list[MemberRecord]:
    """One registry record per member the served tables list."""
    columns, rows = tables["replication_group_members"]
    names = [column.name for column in columns]
    records = []
    for row in rows:
        member = dict(zip(names, row, strict=True))
        member_id = str(member["MEMBER_ID"])
        origin = state.origins.get(member_id)
        if not member_id or origin is None:
            continue
        counts = state.value(member_id, Key.COUNTS)
        applier = state.value(member_id, Key.APPLIER)
        executed = state.value(member_id, Key.GTID_EXECUTED)
        port = member["MEMBER_PORT"]
        records.append(
            MemberRecord(
                member_id=member_id,
                member_host=str(member["MEMBER_HOST"]),
                member_port=port if isinstance(port, int) else None,
                agent_address=own_address
                if member_id == state.local_id
                else agents.get(member_id, ""),
                first_seen_us=max(0, origin.first_seen_us),
                last_seen_us=max(0, origin.fresh_at_us, origin.first_seen_us),
                last_state=str(member["MEMBER_STATE"]),
                stats=counts.update.value.row
                if counts and isinstance(counts.update.value, Counts)
                else None,
                applier=applier.update.value
                if applier and isinstance(applier.update.value, ApplierStatusRow)
                else None,
                gtid_executed=str(executed.update.value)
                if executed and isinstance(executed.update.value, GtidSet)
                else "",
            )
        )
    return records
