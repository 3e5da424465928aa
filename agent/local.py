"""``LocalMember``: the agent's own member, read once a period and recorded in the gossip state.

Each read records, under the agent's own stamps, what changed since the last one:

* the counts every period. The GTID columns ride on the first counts after each
  ``gtid_interval_s`` mark, as in Group Replication: ``Certifier_broadcast_thread::dispatcher``
  (plugin/group_replication/src/certifier.cc) sets the flag every 30 ticks, and
  ``Pipeline_stats_member_collector::send_stats_member_message``
  (plugin/group_replication/src/pipeline_stats.cc) sends them once and clears it;
* the view, the applier fields, the source's health and the server's variables (read_only,
  super_read_only, flow control), when they change; ``transactions_behind`` rides on the counts;
* ``gtid_executed`` every ``executed_interval_s``, as ``dispatcher`` broadcasts it every 60
  ticks (``Certifier_broadcast_thread::broadcast_gtid_executed``).

The gossip state is made at the first read that succeeds: it is keyed by the member's
server_uuid, which only the source knows. A failed read is logged, counted in the agent's
metrics (``grstats_source_up`` goes to 0, ``grstats_source_read_errors_total`` grows) and
leaves the member's values in the state, served as its last ones. Every read's duration, on
the monotonic clock (the injected clock stamps values and may stand still in tests), goes to
``grstats_source_read_duration_seconds``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from grstats.agent.errors import SourceError
from grstats.agent.gossip import Counts, GossipState, Key
from grstats.agent.model import SourceHealth

if TYPE_CHECKING:
    import structlog

    from grstats.agent.clock import Clock
    from grstats.agent.config import AgentConfig
    from grstats.agent.gossip.updates import Value
    from grstats.agent.metrics import AgentMetrics
    from grstats.agent.model import MemberSnapshot
    from grstats.agent.sources.base import StatsSource


class LocalMember:
    """The agent's own member: its identity, its last read, and the gossip state.

    Attributes:
        incarnation: the agent's start on its clock, µs: orders its values after those of its
            previous runs.
        member_id: the member's server_uuid, ``''`` until the first read succeeds.
        state: the gossip state, None until then.
        snapshot: the last read, None when it failed (the member's server is down).
        log: the agent's logger, bound to ``member_id`` once it is known.
    """

    def __init__(
        self,
        config: AgentConfig,
        source: StatsSource,
        *,
        clock: Clock,
        log: structlog.typing.FilteringBoundLogger,
        metrics: AgentMetrics,
    ) -> None:
        self.config = config
        self.incarnation = clock()
        self.member_id = ""
        self.state: GossipState | None = None
        self.snapshot: MemberSnapshot | None = None
        self.log = log
        self._source = source
        self._clock = clock
        self._metrics = metrics
        self._gtid_mark = -1
        self._executed_at = -(2**62)

    async def read(self) -> None:
        """Read the source and record what changed (see the module docstring)."""
        now = self._clock()
        began = time.perf_counter()
        try:
            snapshot = await self._source.read()
        except SourceError as exc:
            self._metrics.source_read(time.perf_counter() - began, ok=False)
            self.log.warning("source_read_failed", error=str(exc))
            self.snapshot = None
            if self.state is not None:
                self._record_if_changed(Key.HEALTH, SourceHealth(ok=False, message=str(exc)), now)
            return
        self._metrics.source_read(time.perf_counter() - began, ok=True)
        if self.state is None:
            self.member_id = snapshot.member_id
            self.state = GossipState(
                snapshot.member_id, self.incarnation, max_origins=self.config.limits.max_members
            )
            self.log = self.log.bind(member_id=snapshot.member_id)
        self.snapshot = snapshot
        self._record_if_changed(Key.VIEW, snapshot.view, now)
        self._record_if_changed(Key.APPLIER, snapshot.applier, now)
        self._record_if_changed(Key.HEALTH, snapshot.health, now)
        self._record_if_changed(Key.SERVER, snapshot.server, now)
        mark = int(now // (self.config.gtid_interval_s * 1_000_000))
        present = mark != self._gtid_mark
        self._gtid_mark = mark
        counts = Counts(snapshot.stats, present, transactions_behind=snapshot.transactions_behind)
        self.state.record_local(Key.COUNTS, counts, now)
        if now - self._executed_at >= self.config.executed_interval_s * 1_000_000:
            self._executed_at = now
            self.state.record_local(Key.GTID_EXECUTED, snapshot.gtid_executed, now)

    async def aclose(self) -> None:
        """Close the source."""
        await self._source.aclose()

    def _record_if_changed(self, key: Key, value: Value, now: int) -> None:
        assert self.state is not None
        held = self.state.value(self.member_id, key)
        if held is None or held.update.value != value:
            self.state.record_local(key, value, now)
