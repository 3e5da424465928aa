"""``LocalMember``: the agent's own member, read once a period and recorded in the gossip state.

Each read records, under the agent's own stamps, what changed since the last one:

* the counts every period. The GTID columns ride on the first counts after each
  ``gtid_interval_s`` mark, as in Group Replication: ``Certifier_broadcast_thread::dispatcher``
  (plugin/group_replication/src/certifier.cc) sets the flag every 30 ticks, and
  ``Pipeline_stats_member_collector::send_stats_member_message``
  (plugin/group_replication/src/pipeline_stats.cc) sends them once and clears it;
* the view, the applier fields, the source's health and the server's variables (read_only,
  super_read_only, flow control, and the member weight the source read beside them: the next
  primary forecast's input), when they change; ``transactions_behind`` rides on the counts;
* ``gtid_executed`` on the first read after each ``executed_interval_s`` mark of the wall
  clock (and on the first read of a run), as ``dispatcher`` broadcasts it every 60 ticks
  (``Certifier_broadcast_thread::broadcast_gtid_executed``): every agent reads at the same
  marks, so the sets of all members describe one instant, and the agent serves its own
  member's sampled set beside the others', never a fresher read;
* the clock offsets the rounds estimated of the direct peers (:attr:`LocalMember.clock_offsets`)
  ride on the counts when they moved (:func:`~grstats.agent.gossip.clocks.moved`) and with the
  GTID columns.

The gossip state exists from the agent's construction, so that peers' views and rows are taken
before the member is ever read (an agent whose server is down still serves the live group).
It is keyed by the member's server_uuid: ``''`` until the agent knows it, from the first read
that succeeds or from the registry's record of the agent's own member (:meth:`LocalMember.claim`);
until then a peer's values of any member a view lists are taken, the agent's own included. A
failed read records the source's health under the member's id, when known, every time: it is
the agent's heartbeat, so that peers hear an agent whose server is down (``CONNECTED`` is
whether a member's agent is heard). A failed read is counted in the agent's metrics
(``grstats_source_up`` goes to 0, ``grstats_source_read_errors_total`` grows), sets
:attr:`LocalMember.fault` (why, in a DBA's words: :class:`~grstats.core.fault.SourceFault`)
and leaves the member's values in the state, served as its last ones; the member's health
becomes the fault's message. Every read's duration, on the monotonic clock (the injected
clock stamps values and may stand still in tests), goes to
``grstats_source_read_duration_seconds``.

A fault is logged when it starts, not at every read (the agent reads every period):

* ``source_fault`` (warning): a fault began, or its kind changed (``replaces`` names the
  previous kind): ``kind``, ``message``, ``fix`` and the source's ``error`` text (which, for
  MySQLSource, ends with the time of its next connect attempt);
* ``source_fault_persisted`` (warning): the same kind still, at most every
  :data:`FAULT_REPEAT_S`, with ``failed_reads`` since the previous line and ``lasted_s``;
* ``source_recovered`` (info): a read succeeded again, with ``kind``, ``lasted_s`` and
  ``failed_reads`` (all of the fault's).

Durations are on the injected clock, as ``fault_since_us`` is.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from grstats.agent.gossip import Counts, GossipState, Key
from grstats.agent.gossip.clocks import moved
from grstats.core.errors import SourceError
from grstats.core.fault import fault_of
from grstats.core.model import SourceHealth

if TYPE_CHECKING:
    import structlog

    from grstats.agent.config import AgentConfig
    from grstats.agent.gossip import ClockOffset
    from grstats.agent.gossip.updates import Value
    from grstats.agent.metrics_off import Figures
    from grstats.agent.sources.base import StatsSource
    from grstats.core.clock import Clock
    from grstats.core.fault import SourceFault
    from grstats.core.model import MemberSnapshot

#: A fault that lasts is logged again at most this often (seconds), with a count of failed reads.
FAULT_REPEAT_S = 300.0


class LocalMember:
    """The agent's own member: its identity, its last read, and the gossip state.

    Attributes:
        incarnation: the agent's start on its clock, µs: orders its values after those of its
            previous runs (the gossip state raises it above a peer's stamp of an earlier run
            whose clock was ahead: :meth:`~grstats.agent.gossip.GossipState.refute`).
        clock_offsets: the peers' clock offsets as this agent estimated them (set by the
            rounds), shared on the counts.
        member_id: the member's server_uuid, ``''`` until known (:meth:`claim`).
        state: the gossip state, keyed by ``member_id`` (see the module docstring).
        snapshot: the last read, None when it failed (the member's server is down).
        fault: why the last read failed, None when it succeeded (or before the first read).
        fault_since_us: the agent's clock (µs) when the current fault began (its kind first
            seen), None without a fault.
        log: the agent's logger, bound to ``member_id`` once it is known.
    """

    def __init__(
        self,
        config: AgentConfig,
        source: StatsSource,
        *,
        clock: Clock,
        log: structlog.typing.FilteringBoundLogger,
        metrics: Figures,
    ) -> None:
        self.config = config
        self.incarnation = clock()
        self.member_id = ""
        self.state = GossipState("", self.incarnation, max_origins=config.limits.max_members)
        self.snapshot: MemberSnapshot | None = None
        self.fault: SourceFault | None = None
        self.fault_since_us: int | None = None
        self.log = log
        self._source = source
        self._clock = clock
        self._metrics = metrics
        self.clock_offsets: tuple[ClockOffset, ...] = ()
        self._offsets_sent: tuple[ClockOffset, ...] = ()
        self._gtid_mark = -1
        self._executed_mark = -1
        self._fault_reads = 0  # failed reads since the fault began
        self._unlogged_reads = 0  # failed reads since its last log line
        self._fault_logged_us = 0

    async def read(self) -> None:
        """Read the source and record what changed (see the module docstring)."""
        now = self._clock()
        began = time.perf_counter()
        try:
            snapshot = await self._source.read()
        except SourceError as exc:
            self._metrics.source_read(time.perf_counter() - began, ok=False)
            fault = self._failed(exc, now)
            self.snapshot = None
            if self.member_id:  # every failed read: the agent's heartbeat (module docstring)
                self.state.record_local(
                    Key.HEALTH, SourceHealth(ok=False, message=fault.message), now
                )
            return
        self._metrics.source_read(time.perf_counter() - began, ok=True)
        if snapshot.fault is None:
            self._recovered(now)
        else:  # read, but not serving its group (OFFLINE): reported like a failed read
            self._noted(snapshot.fault, snapshot.fault.message, now)
        if snapshot.member_id != self.member_id:
            self.claim(snapshot.member_id)
        label = self.config.group_label
        if label and not snapshot.view.group_label:  # the member's metadata names it first
            snapshot = replace(snapshot, view=replace(snapshot.view, group_label=label))
        if snapshot.server.member_weight != snapshot.member_weight:  # gossiped with the server's
            snapshot = replace(
                snapshot, server=replace(snapshot.server, member_weight=snapshot.member_weight)
            )
        self.snapshot = snapshot
        self._record_if_changed(Key.VIEW, snapshot.view, now)
        self._record_if_changed(Key.APPLIER, snapshot.applier, now)
        self._record_if_changed(Key.HEALTH, snapshot.health, now)
        self._record_if_changed(Key.SERVER, snapshot.server, now)
        mark = int(now // (self.config.gtid_interval_s * 1_000_000))
        present = mark != self._gtid_mark
        self._gtid_mark = mark
        ride = present or moved(self._offsets_sent, self.clock_offsets)
        if ride:
            self._offsets_sent = self.clock_offsets
        counts = Counts(
            snapshot.stats,
            present,
            transactions_behind=snapshot.transactions_behind,
            offsets=self.clock_offsets,
            offsets_present=ride,
        )
        self.state.record_local(Key.COUNTS, counts, now)
        executed_mark = int(now // (self.config.executed_interval_s * 1_000_000))
        if executed_mark != self._executed_mark:
            self._executed_mark = executed_mark
            self.state.record_local(Key.GTID_EXECUTED, snapshot.gtid_executed, now)

    def claim(self, member_id: str) -> None:
        """Key the gossip state by ``member_id``: from now on, its values come from the source only.

        Called at the first read that succeeds, or earlier with the registry's record of the
        agent's own member. Values peers gave of it before stay, as its last ones, below any
        the source gives.
        """
        self.member_id = self.state.local_id = member_id
        self.log = self.log.bind(member_id=member_id)

    async def aclose(self) -> None:
        """Close the source."""
        await self._source.aclose()

    def _failed(self, exc: SourceError, now: int) -> SourceFault:
        """Note a failed read; log it if its fault is new, or has not been logged for long."""
        fault = fault_of(exc)
        self.log.debug("source_read_failed", kind=fault.kind, error=str(exc))
        return self._noted(fault, str(exc), now)

    def _noted(self, fault: SourceFault, error: str, now: int) -> SourceFault:
        """Note a read with ``fault``; log it if it is new, or has not been logged for long."""
        current, since = self.fault, self.fault_since_us
        self.fault = fault  # the latest wording, for the Query answer
        if current is None or since is None or current.kind != fault.kind:
            replaced = {} if current is None else {"replaces": current.kind}
            self.fault_since_us = now
            self._fault_reads = 1
            self._unlogged_reads = 0
            self._fault_logged_us = now
            self.log.warning(
                "source_fault",
                kind=fault.kind,
                message=fault.message,
                fix=fault.fix,
                error=error,
                **replaced,
            )
            return fault
        self._fault_reads += 1
        self._unlogged_reads += 1
        if now - self._fault_logged_us >= FAULT_REPEAT_S * 1_000_000:
            self.log.warning(
                "source_fault_persisted",
                kind=fault.kind,
                message=fault.message,
                fix=fault.fix,
                error=error,
                failed_reads=self._unlogged_reads,
                lasted_s=round((now - since) / 1_000_000, 3),
            )
            self._unlogged_reads = 0
            self._fault_logged_us = now
        return fault

    def _recovered(self, now: int) -> None:
        """Log the end of the current fault, if there is one, and clear it."""
        fault, since = self.fault, self.fault_since_us
        if fault is None or since is None:
            return
        self.log.info(
            "source_recovered",
            kind=fault.kind,
            lasted_s=round((now - since) / 1_000_000, 3),
            failed_reads=self._fault_reads,
        )
        self.fault = None
        self.fault_since_us = None

    def _record_if_changed(self, key: Key, value: Value, now: int) -> None:
        held = self.state.value(self.member_id, key)
        if held is None or held.update.value != value:
            self.state.record_local(key, value, now)
