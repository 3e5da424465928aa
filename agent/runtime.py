"""``Agent``: one per member. Reads its member every period, gossips, serves the tables.

This module is the agent's lifecycle: it wires the parts, starts and stops them, and runs the
period loop. Each period (``period_s``, 1 s by default like
``group_replication_flow_control_period``) the agent

1. reads its member and records what changed (:mod:`grstats.agent.local`);
2. runs a round with its peers: pushes its news, push-pulls with some (:mod:`grstats.agent.rounds`);
3. every ``flush_interval_s``, saves the members it knows (:mod:`grstats.agent.registry_sync`).

A read that takes more than :data:`READ_WAIT_PERIODS` of a period (a server that does not
answer, a simulated group catching up after a restart) goes on in the background: the round
runs without it, and the next period waits for it rather than starting another. So an agent
takes its peers' views and rows from its first period, whatever its member does: one whose
member cannot be read serves the live group from its peers (see :mod:`grstats.agent.local`).

Peers reach it through its gRPC server (:mod:`grstats.agent.server`: Gossip, Query, health,
reflection), or through an in-memory network
(:class:`~grstats.agent.transports.memory.MemoryNetwork`), which needs no server. Failures of
the source or of a peer are expected: they are logged and the loop goes on. Queries are
answered from the state without waiting for the loop (WL#3656 F5).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from typing import TYPE_CHECKING

import structlog
from grpc_health.v1 import health, health_pb2

from grstats.agent.event_log import EventCounts, EventLog
from grstats.agent.gossip import RelayRule
from grstats.agent.limits import RateLimiter
from grstats.agent.liveness import Liveness
from grstats.agent.local import LocalMember
from grstats.agent.member_log import MemberLog
from grstats.agent.member_probe import ProbeAnswer, probe
from grstats.agent.messages import SourceReport
from grstats.agent.metrics_scope import agents_heard
from grstats.agent.next_primary_watch import NextPrimaryWatch
from grstats.agent.recovery import RecoveryWatch
from grstats.agent.registry_sync import RegistrySync
from grstats.agent.rounds import PeerRounds
from grstats.agent.server import SERVICE_NAMES, build_server
from grstats.agent.sources.base import LogSource
from grstats.agent.split_watch import SplitBrainWatch
from grstats.agent.status import flow_control_thresholds, throttled_by
from grstats.agent.tables import ServedTables
from grstats.agent.tls_watch import TlsWatch
from grstats.agent.transports.base import ServingTransport
from grstats.agent.transports.rpc import GrpcTransport
from grstats.core.address import join_address, split_address
from grstats.core.clock import now_us
from grstats.core.errors import ConfigError
from grstats.core.events import changes, liveness_event, source_event, throttle_event
from grstats.core.security import Security
from grstats.core.stable_set import StableSetWatch

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    import grpc

    from grstats.agent.config import AgentConfig
    from grstats.agent.gossip import GossipState
    from grstats.agent.metrics import AgentMetrics
    from grstats.agent.metrics_off import Figures
    from grstats.agent.metrics_series import SeriesInput
    from grstats.agent.registry import MemberRegistry
    from grstats.agent.served import Served
    from grstats.agent.sources.base import StatsSource
    from grstats.agent.sql import SqlEndpoint
    from grstats.agent.sql.session import SqlIdentity
    from grstats.agent.transports.base import Transport
    from grstats.core.clock import Clock
    from grstats.core.fault import SourceFault
    from grstats.core.model import MemberSnapshot
    from grstats.core.rows import EventRow

#: How many periods a /metrics exposition rendered mid-period is served: until the next one,
#: with half a period to spare for a late loop.
PREPARED_PERIODS = 1.5
#: How long, in periods, a period waits for its member's read before its round runs without it.
READ_WAIT_PERIODS = 0.5


def _agent_metrics() -> Figures:
    """The default figures: an ``AgentMetrics`` (imported here, with prometheus-client)."""
    from grstats.agent.metrics import AgentMetrics  # noqa: PLC0415

    return AgentMetrics()


class Agent:
    """One agent: see the module docstring. Use ``await start()``, then ``await stop()``.

    The seams are injected: the ``source`` of its member, the ``transport`` to its peers
    (default: gRPC with ``security``), the member ``registry`` (None: nothing is remembered
    across restarts) and the ``clock`` (µs since the epoch), which every part shares.

    Attributes:
        member: the local member, its reads and the gossip state.
        rounds: the gossip with the peers, both halves.
        registry_sync: the member registry, loaded at start and saved every flush.
        liveness: logs each member turning CONNECTED NO (warning) and back (info).
        figures: what the agent's parts count (``figures``).
        metrics: the same, as the ``AgentMetrics`` whose registry ``/metrics`` serves.
        metrics_address: where ``/metrics`` is served once started, else None.
        sql_address: where the MySQL-protocol endpoint (``sql_listen``) is served once
            started, else None.
        limiter: the per-client rate limits of the gRPC services.
        security: TLS and token of the server and of the channels to peers.
        periods: periods run so far.
    """

    def __init__(  # noqa: PLR0913  (the seams are injected: source, transport, registry, clock)
        self,
        config: AgentConfig,
        source: StatsSource,
        *,
        transport: Transport | None = None,
        registry: MemberRegistry | None = None,
        clock: Clock = now_us,
        logger: structlog.typing.FilteringBoundLogger | None = None,
        security: Security | None = None,
        figures: Figures | None = None,
    ) -> None:
        log = logger or structlog.get_logger()
        self.security = security or Security()
        self.figures = figures if figures is not None else _agent_metrics()
        self.metrics_address: str | None = None
        self.limiter = RateLimiter.from_limits(config.limits, log)
        self.periods = 0
        self._config = config
        self._clock = clock
        # Names a TLS mistake with a peer (tls_mismatch) from the transport's failed dials.
        self.tls_watch = TlsWatch(self.security.tls, lambda: self.member.log)
        self._transport = transport or GrpcTransport(config.limits, self.security, self.tls_watch)
        self.member = LocalMember(config, source, clock=clock, log=log, metrics=self.figures)
        if self.security.binds_members:  # only a member's own agent speaks for it
            self.member.state.relays = RelayRule.for_period(config.period_us)
        self.rounds = PeerRounds(
            config, self.member, self._transport, clock=clock, metrics=self.figures
        )
        self.registry_sync = RegistrySync(registry, self.member, config, clock=clock)
        self.liveness = Liveness(self.member)  # logs members turning CONNECTED NO, and back
        self.split_brain = SplitBrainWatch()  # logs members split from the group, once each
        self.next_primary = NextPrimaryWatch()  # logs an unsafe next primary, once a change
        self.stable_set = StableSetWatch()  # fed each read (run_period), asked by the status
        self.recovery = RecoveryWatch()  # fed each period (run_period), asked by the status
        self.event_log = EventLog(self.member.state, clock=clock)  # the member's events
        self.member_log = MemberLog(self.member.state, clock=clock)  # its GR log lines
        self._log_source = source if isinstance(source, LogSource) else None
        self._log_note = ""  # why the source reads no log lines, as last logged
        self._event_counts = EventCounts(self.member.state, self.member.incarnation)
        self._last_read: MemberSnapshot | None = None  # the last read that succeeded
        self._throttled_by: tuple[str, ...] = ()  # whose queues throttle the member now
        self._tables = ServedTables(
            config,
            self.member,
            self.rounds.offsets,
            self.rounds.offset_errors,
            clock=clock,
            address=lambda: self.address,
            stable_set=self.stable_set,
            recovery=self.recovery,
        )
        self._health = health.aio.HealthServicer()
        self._server: grpc.aio.Server | None = None
        self._serving = False
        self._task: asyncio.Task[None] | None = None
        self._reading: asyncio.Task[None] | None = None  # a read that outlasted its period
        self._metrics_server: WSGIServer | None = None
        self.sql_address: str | None = None
        self._sql: SqlEndpoint | None = None
        self._sql_version: str | None = None  # the member's version, once read
        self._hostname = socket.gethostname()
        #: @@hostname and @@port: the member's MEMBER_HOST and MEMBER_PORT once read (0 before)
        self._sql_host_port: tuple[str, int] = (self._hostname, 0)

    @property
    def metrics(self) -> AgentMetrics:
        """The figures as an ``AgentMetrics`` (a TypeError for an agent given ``NoMetrics``)."""
        from grstats.agent.metrics import AgentMetrics  # noqa: PLC0415

        if not isinstance(self.figures, AgentMetrics):
            msg = f"figures: the agent counts with a {type(self.figures).__name__}, not metrics"
            raise TypeError(msg)
        return self.figures

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Load the registry, start serving (gRPC: SERVING), then start the period loop."""
        await self.registry_sync.load()
        self.registry_sync.seed(self.member.state)
        if isinstance(self._transport, ServingTransport):
            self.rounds.address = self._transport.serve(self.rounds)
        else:
            await self._start_server()
        # Before the first read: which member is ours (its values are the source's alone, and
        # its agent is heard) and where the remembered agents are (peers to ask for the group).
        own = self.registry_sync.own_member(self.address)
        if own and not self.member.member_id:
            self.member.claim(own)
        self.rounds.remembered = self.registry_sync.agents(self.address)
        self._serving = True
        self.figures.watch(self._series_input, self._version, asyncio.get_running_loop())
        if self._config.metrics_listen:
            try:
                self._metrics_server, self.metrics_address = self._start_metrics_server()
            except ConfigError:  # stop what started, so the process ends cleanly
                await self.stop(grace_s=0)
                raise
        if self._config.sql_listen:
            await self._start_sql()
        self.member.log.info(
            "agent_started",
            address=self.address,
            period_s=self._config.period_s,
            metrics=self.metrics_address,
            sql=self.sql_address,
        )
        self._task = asyncio.create_task(self._loop(), name=f"agent-{self.address}")

    async def stop(self, grace_s: float = 1.0) -> None:
        """Health NOT_SERVING, stop the loop and the servers, flush, close the seams."""
        await self._health.enter_graceful_shutdown()
        for task in (self._task, self._reading):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._reading = None
        if self._sql is not None:
            await self._sql.aclose()
            self._sql = None
            self.sql_address = None
        if self._server is not None:
            await self._server.stop(grace_s)
            self._server = None
        self._serving = False
        await self.flush()
        await self.registry_sync.aclose()
        await self._transport.aclose()
        await self.member.aclose()
        if self._metrics_server is not None:
            await asyncio.to_thread(self._metrics_server.shutdown)
            self._metrics_server.server_close()
            self._metrics_server = None
        self.member.log.info("agent_stopped", address=self.address, periods=self.periods)

    def _start_metrics_server(self) -> tuple[WSGIServer, str]:
        """Serve ``/metrics`` at ``metrics_listen`` (the figures must be an ``AgentMetrics``)."""
        # Imported here: prometheus-client loads only for an agent that serves /metrics.
        from grstats.agent.metrics import AgentMetrics  # noqa: PLC0415
        from grstats.agent.metrics_http import start_metrics_server  # noqa: PLC0415

        listen = self._config.metrics_listen or ""
        if not isinstance(self.figures, AgentMetrics):
            kind = type(self.figures).__name__
            msg = f"metrics_listen: {listen!r} needs the agent's AgentMetrics, not a {kind}"
            raise ConfigError(msg)
        return start_metrics_server(self.figures, listen, self.probe)

    async def _start_sql(self) -> None:
        """Serve the MySQL protocol at ``sql_listen``; on a bind error stop what started."""
        # Imported here: mysql-mimic and sqlglot load only for an agent that serves SQL.
        from grstats.agent.sql import SqlEndpoint  # noqa: PLC0415

        endpoint = SqlEndpoint(self, self._config, self.member.log)
        try:
            self.sql_address = await endpoint.start()
        except ConfigError:  # stop what started, so the process ends cleanly
            await self.stop(grace_s=0)
            raise
        self._sql = endpoint

    async def _start_server(self) -> None:
        listen = self._config.listen
        self._server = build_server(
            self,
            self.rounds,
            self._health,
            clock=self._clock,
            limits=self._config.limits,
            limiter=self.limiter,
            security=self.security,
            log=self.member.log,
        )
        try:
            port = self.security.bind(self._server, listen)
        except RuntimeError as exc:
            raise ConfigError(f"listen: cannot bind {listen}: {exc}") from exc
        host, _ = split_address(listen, "listen", lowest_port=0)
        self.rounds.address = self._config.advertise or join_address(host, port)
        await self._server.start()
        for name in ("", *SERVICE_NAMES):
            await self._health.set(name, health_pb2.HealthCheckResponse.SERVING)

    async def _loop(self) -> None:
        period = self._config.period_s
        while True:
            began = time.monotonic()
            await self.run_period()  # the first at once: the member is served from the start
            took = time.monotonic() - began
            if took > period:  # overran: the periods missed are skipped, not bunched up
                self.member.log.warning("period_overrun", late_s=round(took - period, 3))
                self.figures.overran()
            # Later periods start at multiples of the period on the wall clock: the agents of
            # a group (on hosts whose clocks NTP keeps within a few ms) read their members at
            # the same instants, so every row an agent serves samples the group at about one
            # moment, and the pushes of all peers arrive together, waking the agent once
            # rather than 8 times.
            wait = period - time.time() % period
            if self._metrics_server is not None and wait > period / 2:
                # Mid-period, the peers' pushes of this period are in: render /metrics ahead
                # (while scraped), so that a scrape never waits for the loop.
                await asyncio.sleep(wait - period / 2)
                self.figures.prepare(valid_s=PREPARED_PERIODS * period)
                wait = period - time.time() % period
            await asyncio.sleep(wait)

    # -- one period ----------------------------------------------------------------------

    async def run_period(self) -> None:
        """Read the source, record what changed, run a round with the peers; flush if due.

        The round waits for the read at most :data:`READ_WAIT_PERIODS` (module docstring).
        """
        self.periods += 1
        fault_before = self.member.fault
        await self._read_source()
        if self._log_source is not None:
            self._take_log(self._log_source)
        snapshot = self.member.snapshot
        events: list[EventRow] = []
        if snapshot is not None:
            own = snapshot.own_row()
            online = own is not None and own.member_state == "ONLINE"
            self.stable_set.observe(snapshot.read_at_us, snapshot.stats, online=online)
            if self._last_read is None or snapshot.read_at_us != self._last_read.read_at_us:
                events += changes(self._last_read, snapshot)
                self._last_read = snapshot
        events += self._source_events(fault_before)
        await self.rounds.run()
        now = self._clock()
        # with the peers' counts of this period
        self.recovery.observe(self.member.state, self.member.snapshot, now, self.rounds.offsets)
        turns = self.liveness.check(
            now, self._config.silence_us, self.rounds.agents, self.rounds.offsets
        )
        for turn in turns:
            found = liveness_event(
                turn.member_id, self._last_read, now, silent=turn.silent, detail=turn.detail
            )
            events += [found] if found is not None else []
        events += self._throttle_events(now)
        self.split_brain.check(
            self.member.state,
            self.member.snapshot,
            self.member.log,
            now_us=now,
            silence_us=self._config.silence_us,
            offsets=self.rounds.offsets,
        )
        self.next_primary.check(self.tables(extended=False), self.member.log)
        self.event_log.add(events)
        primaries, states = self._event_counts.update()
        group_name = self._last_read.view.group_name if self._last_read else ""
        if (primaries or states) and group_name:  # no group series before its name is known
            self.figures.events(group_name, primaries, states)
        if self.registry_sync.due():
            await self.flush()

    def _take_log(self, source: LogSource) -> None:
        """Record the member's new GR log lines; log once why none are read, when it changes."""
        self.member_log.add(source.take_log())
        if source.log_note != self._log_note:
            self._log_note = source.log_note
            if source.log_note:
                self.member.log.warning("member_log_not_read", reason=source.log_note)
            else:
                self.member.log.info("member_log_read")

    def _source_events(self, fault_before: SourceFault | None) -> list[EventRow]:
        """SOURCE_FAILED when this period's read began a fault, SOURCE_RECOVERED when it ended."""
        fault, member = self.member.fault, self.member.member_id
        if (fault is None) == (fault_before is None) or not member:
            return []
        view = self._last_read.view.view_id if self._last_read is not None else ""
        why = fault.message if fault is not None else ""
        return [source_event(member, self._clock(), view, failed=fault is not None, why=why)]

    def _throttle_events(self, now: int) -> list[EventRow]:
        """THROTTLE_STARTED or THROTTLE_STOPPED when flow control's hold on the member changed."""
        by = throttled_by(self.member.state, self.member.snapshot, now, self.rounds.offsets)
        if bool(by) == bool(self._throttled_by) or self._last_read is None:
            self._throttled_by = by
            return []
        self._throttled_by = by
        return [throttle_event(self._last_read.member_id, now, self._last_read.view.view_id, by)]

    async def _read_source(self) -> None:
        """Read the member, or go on waiting for the read still running; wait a bounded time."""
        reading = self._reading
        if reading is None:
            reading = asyncio.create_task(self.member.read(), name=f"read-{self.address}")
        done, _ = await asyncio.wait((reading,), timeout=READ_WAIT_PERIODS * self._config.period_s)
        if done:
            self._reading = None
            reading.result()  # an unexpected error ends the agent, as it did on the loop
        elif self._reading is None:
            self._reading = reading
            self.member.log.debug(
                "source_read_pending", waited_s=READ_WAIT_PERIODS * self._config.period_s
            )

    async def flush(self) -> None:
        """Save the members known to the registry; then drop what no known member needs."""
        agents = {**self.rounds.remembered, **self.rounds.agents}
        await self.registry_sync.flush(lambda: self.tables(extended=False), agents, self.address)
        self.rounds.forget_unknown()

    def tables(self, extended: bool) -> Served:
        """The served tables now (Query.Read), from the peers, the registry and the reads."""
        return self._tables.get(extended, self.periods)

    def probe(self, path: str) -> ProbeAnswer | None:
        """``/member/health`` or ``/member/ready`` now (None for another path), on the loop."""
        tables, health = self.tables(extended=False), self._config.health
        failed = self.member.snapshot is None and self.member.fault is not None
        return probe(path, self.member_id, tables, health, read_failed=failed)

    def _series_input(self) -> SeriesInput:
        """What /metrics builds its members' and group's series from (on the loop)."""
        from grstats.agent.metrics_series import SeriesInput  # noqa: PLC0415  (with /metrics only)

        applier, certifier = flow_control_thresholds(self.member.state, self.member.snapshot)
        heard = agents_heard(
            self.member.state, self._clock(), self._config.silence_us, self.rounds.offsets
        )
        scope = self._config.metrics.scope
        tables = self.tables(extended=True)
        return SeriesInput(tables, self.member_id, applier, certifier, scope, heard)

    def _version(self) -> tuple[tuple[int, int | None, int], str]:
        """Changes whenever the served tables or the scope may (read from /metrics' thread)."""
        return self._tables.version(self.periods), self._config.metrics.scope

    def peers(self) -> list[str]:
        """The peers this agent gossips with now (see :meth:`PeerRounds.peers`)."""
        return self.rounds.peers()

    # -- what the parts hold -------------------------------------------------------------

    @property
    def config(self) -> AgentConfig:
        """The agent's config; a new one takes effect from the next period.

        ``peers``, the fanouts and the timings are read every period; ``listen``,
        ``advertise``, ``metrics_listen`` and the ``sql_*`` keys only at start.
        """
        return self._config

    @config.setter
    def config(self, config: AgentConfig) -> None:
        self._config = config
        self.member.config = self.rounds.config = config
        self.registry_sync.config = self._tables.config = config

    @property
    def address(self) -> str:
        """Where peers reach this agent: the bound address (once started) or ``advertise``."""
        return self.rounds.address

    @property
    def serving(self) -> bool:
        """Whether the agent is started and not yet stopped."""
        return self._serving

    @property
    def member_id(self) -> str:
        """The member's server_uuid, ``''`` until known (first read, or the registry's record)."""
        return self.member.member_id

    def source_report(self) -> SourceReport:
        """Whether the agent can read its member now, and since when it cannot (Query says)."""
        fault = self.member.fault
        return SourceReport(fault, self.member.fault_since_us if fault is not None else None)

    @property
    def sql_identity(self) -> SqlIdentity:
        """Who the SQL endpoint says it is (``@@server_uuid``, ``@@version``, ...); on the loop.

        The version is the member's MEMBER_VERSION as last read (None until one is).
        """
        from grstats.agent.sql.session import SqlIdentity  # noqa: PLC0415  (see _start_sql)

        snapshot = self.member.snapshot
        own = snapshot.own_row() if snapshot is not None else None
        if own is not None and own.member_version:
            self._sql_version = own.member_version
        if own is not None and own.member_port:  # the member's MEMBER_HOST and MEMBER_PORT
            self._sql_host_port = (own.member_host or self._hostname, own.member_port)
        hostname, port = self._sql_host_port
        return SqlIdentity(
            member_id=self.member.member_id,
            version=self._sql_version,
            hostname=hostname,
            port=port,
            snapshot=snapshot,
        )

    @property
    def state(self) -> GossipState:
        """The gossip state (it exists from the agent's construction)."""
        return self.member.state

    @property
    def local(self) -> MemberSnapshot | None:
        """The last read of the member (None when it failed)."""
        return self.member.snapshot

    @property
    def offsets(self) -> dict[str, int]:
        """Member -> its clock minus ours, µs."""
        return self.rounds.offsets

    @property
    def unreachable(self) -> set[str]:
        """Peers whose last push or exchange failed."""
        return self.rounds.unreachable
