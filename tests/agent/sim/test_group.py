"""Invariants of the simulated group (issue: tests check invariants, not snapshots)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from grstats.agent.sim.group import TICKS_PER_SECOND, SimulatedGroup
from grstats.agent.sim.scenario import Scenario, from_mapping, list_scenarios, load_scenario
from grstats.agent.sim.views import group_rows, snapshot
from grstats.cli.simulate import ground_truth
from grstats.core.errors import SourceUnavailable
from grstats.core.gtid import GtidSet
from grstats.core.rows import MemberState
from grstats.core.rows.render import json_objects

if TYPE_CHECKING:
    from grstats.core.model import MemberSnapshot

#: One worker runs the module (``pytest -n 2 --dist loadgroup``), so each trace is made once.
pytestmark = pytest.mark.xdist_group("sim-traces")

START_US = 1_700_000_000_000_000
COUNTERS = (
    "count_transactions_checked",
    "count_conflicts_detected",
    "count_transactions_remote_applied",
    "count_transactions_local_proposed",
    "count_transactions_local_rollback",
)


def group_of(scenario: Scenario | str, seed: int = 1) -> SimulatedGroup:
    """A fresh group for ``scenario`` (a name or a Scenario)."""
    return SimulatedGroup(
        load_scenario(scenario) if isinstance(scenario, str) else scenario, seed, START_US
    )


def states(group: SimulatedGroup) -> dict[str, str]:
    """MEMBER_STATE of each member (by uuid) as the group shows it."""
    return {row.member_id: row.member_state for row in group_rows(group)}


def run_seconds(group: SimulatedGroup, seconds: float) -> None:
    """Advance ``group`` to ``seconds`` after its start."""
    group.advance_to(int(seconds * TICKS_PER_SECOND))


def truth_json(group: SimulatedGroup) -> str:
    """All ground-truth tables as one JSON text."""
    return json.dumps({name: json_objects(c, r) for name, (c, r) in ground_truth(group).items()})


def scenario(**changes: Any) -> Scenario:
    """A small inline scenario."""
    return from_mapping({"name": "t", "description": "d", **changes})


#: The instants (s after the start) a trace reads its group at: every whole second, and 60.5 s,
#: when crash-rejoin's restarted member is RECOVERING.
INSTANTS: tuple[float, ...] = tuple(sorted({*range(161), 60.5}))
#: The instants a trace also records the ground truth at.
TRUTH_AT = frozenset({75, 90})


@dataclass(frozen=True)
class MemberFacts:
    """What the tests read of a simulated member itself, besides its snapshot."""

    uuid: str
    server_up: bool
    online: bool
    join_seq: int
    status: MemberState


@dataclass(frozen=True)
class Moment:
    """What the tests read of a traced group at one instant."""

    members: tuple[MemberFacts, ...]
    #: ``snapshot(group, i)`` of each member, or the SourceUnavailable it raised
    reads: tuple[MemberSnapshot | SourceUnavailable, ...]
    states: dict[str, str]  #: ``states(group)``
    view_number: int
    committed: int
    rolled_back: int
    truth: str | None  #: ``truth_json(group)`` at TRUTH_AT, else None

    def snapshot(self, index: int) -> MemberSnapshot:
        """Member ``index``'s snapshot; SourceUnavailable if its server was down."""
        read = self.reads[index]
        if isinstance(read, SourceUnavailable):
            raise read.with_traceback(None)
        return read


def moment_of(group: SimulatedGroup, second: float) -> Moment:
    """Read ``group`` now: every member's snapshot, as an agent reading each member does."""
    reads: list[MemberSnapshot | SourceUnavailable] = []
    for index in range(len(group.members)):
        try:
            reads.append(snapshot(group, index))
        except SourceUnavailable as error:
            reads.append(error)
    return Moment(
        members=tuple(
            MemberFacts(m.uuid, m.server_up, m.online, m.join_seq, m.status) for m in group.members
        ),
        reads=tuple(reads),
        states=states(group),
        view_number=group.view_number,
        committed=group.totals.committed,
        rolled_back=group.totals.rolled_back,
        truth=truth_json(group) if second in TRUTH_AT else None,
    )


class Trace:
    """One run of a built-in scenario (seed 1), read at each of INSTANTS as far as tests ask.

    The simulator is deterministic, so one run serves every test that reads the scenario at
    those instants; reading a group does not change it (TestDeterminism compares a traced run
    with runs that nothing read).
    """

    def __init__(self, name: str) -> None:
        self.group = group_of(name)
        self.moments: list[Moment] = []  # at INSTANTS[0], INSTANTS[1], ...

    def at(self, second: float) -> Moment:
        """The group at ``second``, one of INSTANTS."""
        wanted = INSTANTS.index(second)
        while len(self.moments) <= wanted:
            instant = INSTANTS[len(self.moments)]
            run_seconds(self.group, instant)
            self.moments.append(moment_of(self.group, instant))
        return self.moments[wanted]

    def until(self, second: float) -> list[Moment]:
        """The group at every instant of INSTANTS up to ``second``."""
        self.at(second)
        return self.moments[: INSTANTS.index(second) + 1]


class Traces(dict[str, Trace]):
    """The traces of the built-in scenarios, each made when a test first reads it."""

    def __missing__(self, name: str) -> Trace:
        made = self[name] = Trace(name)
        return made


@pytest.fixture(scope="module")
def traces() -> Traces:
    """The module's traces: each scenario runs once for every test that reads it."""
    return Traces()


class TestDeterminism:
    @pytest.mark.parametrize("name", [s.name for s in list_scenarios()])
    def test_same_seed_same_group(self, name: str, traces: Traces) -> None:
        """Two runs of a scenario with the same seed give identical ground truth."""
        unread = group_of(name)
        run_seconds(unread, 75)
        assert truth_json(unread) == traces[name].at(75).truth

    def test_other_seed_other_history(self, traces: Traces) -> None:
        """Another seed draws other keys, so other transactions conflict."""
        other = group_of("multi-primary-conflicts", 2)
        run_seconds(other, 30)
        assert traces["multi-primary-conflicts"].at(30).rolled_back != other.totals.rolled_back

    def test_stepping_in_pieces_equals_one_go(self, traces: Traces) -> None:
        """An agent that reads every second sees the same group as one that catches up at once."""
        at_once = group_of("crash-rejoin")
        run_seconds(at_once, 90)
        # The trace stepped second by second and read every member after each step.
        assert traces["crash-rejoin"].at(90).truth == truth_json(at_once)

    def test_stepping_in_parts_equals_stepping_whole_ticks(self) -> None:
        """A tick run in parts, pausing between them, leaves the group as one whole step does.

        Through 2 stable-set rounds of a 9-member group (the round sweeps in parts too).
        """
        # Rounds every 20 s, not GR's 60: two rounds, each swept in parts (asserted below), in
        # a third of the ticks.
        steady = load_scenario("steady").with_members(9)
        nine = dataclasses.replace(
            steady, timing=dataclasses.replace(steady.timing, gc_period_s=20)
        )
        in_parts, whole = group_of(nine), group_of(nine)
        pauses = 0
        swept = []  # the parts of each stable-set round, beyond certification and 9 appliers
        for _ in range(2 * 20 * TICKS_PER_SECOND + 1):
            parts = sum(1 for _ in in_parts.step_in_parts())
            pauses += parts
            if parts > 10:
                swept.append(parts - 10)
            whole.step()
        assert in_parts.tick == whole.tick
        assert truth_json(in_parts) == truth_json(whole)
        assert in_parts.certification == whole.certification
        assert pauses >= 10 * in_parts.tick  # certification and 9 appliers, every tick
        assert sum(1 for parts in swept if parts > 1) >= 2  # 2 rounds swept in parts


class TestConvergence:
    @pytest.mark.parametrize("name", ["multi-primary-conflicts", "slow-secondary", "crash-rejoin"])
    def test_when_load_stops_every_gtid_executed_is_equal(self, name: str) -> None:
        """Once writes stop, every member applies everything: all gtid_executed become equal."""
        base = load_scenario(name)
        # Writes stop after the scenario's last event (crash-rejoin's restart at 60 s); at 30 s
        # for the others, when conflicts have rolled back and the slow member is behind by the
        # flow-control threshold (it passes 25000 at 17 s).
        stop = 75 if base.events else 30
        quiet = [
            {"at": stop, "action": "rate", "member": i, "value": 0} for i in range(base.members)
        ]
        data = {
            "name": name,
            "description": "d",
            "mode": base.mode,
            "members": base.members,
            "workload": {
                "rate_tps": base.workload.rate_tps,
                "key_space": base.workload.key_space,
                "skew": base.workload.skew,
            },
            "appliers": {
                "capacity_tps": base.capacity_tps,
                "capacity_overrides": {str(k): v for k, v in base.capacity_overrides.items()},
            },
            "events": [
                {"at": e.at, "action": e.action, "member": e.member, "value": e.value}
                for e in base.events
            ]
            + quiet,
        }
        group = group_of(from_mapping(data))
        run_seconds(group, stop)
        executed = {str(snapshot(group, i).gtid_executed) for i in range(base.members)}
        if name == "slow-secondary":  # the slow member is still far behind while writes go on
            assert len(executed) > 1
        run_seconds(group, stop + 45)  # the slow member takes 18 s to apply its backlog
        executed = {str(snapshot(group, i).gtid_executed) for i in range(base.members)}
        assert len(executed) == 1
        views = len(group.view_log)  # one GTID per view with a joiner, the first ones too
        assert GtidSet.parse(executed.pop()).count() == group.totals.committed + views


class TestCounters:
    @pytest.mark.parametrize(
        "name", ["crash-rejoin", "primary-failover", "network-partition", "slow-secondary"]
    )
    def test_counters_never_decrease_between_restarts(self, name: str, traces: Traces) -> None:
        """Cumulative counters only grow, except when a member (re)joins and restarts at 0."""
        trace = traces[name]
        previous: dict[int, tuple[int, ...]] = {}
        joins_seen = {i: member.join_seq for i, member in enumerate(trace.at(0).members)}
        for second in range(1, 150):
            moment = trace.at(second)
            for index, member in enumerate(moment.members):
                if not member.server_up:
                    continue
                stats = moment.snapshot(index).stats
                values = tuple(getattr(stats, name) for name in COUNTERS)
                if member.join_seq != joins_seen[index] or member.status is MemberState.OFFLINE:
                    joins_seen[index] = member.join_seq
                    previous.pop(index, None)
                if index in previous:
                    assert all(
                        now >= before for now, before in zip(values, previous[index], strict=True)
                    ), f"member {index} at {second} s: {values} after {previous[index]}"
                previous[index] = values

    def test_rejoined_member_restarts_at_zero(self, traces: Traces) -> None:
        """A rejoined member's counters restart at 0 (new ``Pipeline_stats_member_collector``)."""
        trace = traces["crash-rejoin"]
        before = trace.at(29).snapshot(2).stats.count_transactions_checked
        after = trace.at(60.5).snapshot(2).stats
        assert before > 10_000
        assert after.count_transactions_checked == 0  # still RECOVERING: certifies nothing yet
        assert after.count_transactions_in_queue > 0  # but queues what arrives meanwhile


class TestStableSet:
    @pytest.mark.parametrize(
        "name", ["multi-primary-conflicts", "crash-rejoin", "network-partition"]
    )
    def test_stable_set_is_in_every_gtid_executed(self, name: str, traces: Traces) -> None:
        """TRANSACTIONS_COMMITTED_ALL_MEMBERS is in every ONLINE member's gtid_executed."""
        trace = traces[name]
        seen_nonempty = False
        for second in range(5, 160, 5):
            moment = trace.at(second)
            # The stable set is made of ONLINE members' sets only: an expelled or RECOVERING
            # member may be behind it (that is why a RECOVERING member reports '').
            online = [i for i, member in enumerate(moment.members) if member.online]
            executed = [moment.snapshot(i).gtid_executed for i in online]
            for index in online:
                stable = moment.snapshot(index).stats.committed_all_members()
                seen_nonempty |= bool(stable)
                assert all(stable <= other for other in executed), (
                    f"{name} {second} s member {index}"
                )
        assert seen_nonempty

    def test_recovering_member_reports_no_stable_set(self, traces: Traces) -> None:
        """A RECOVERING member reports '' for TRANSACTIONS_COMMITTED_ALL_MEMBERS.

        As ``Certifier::get_group_stable_transactions_set_string`` returns while RECOVERING.
        """
        read = traces["crash-rejoin"].at(60.5).snapshot(2)
        assert read.own_row().member_state == "RECOVERING"  # type: ignore[union-attr]
        assert read.stats.transactions_committed_all_members == ""


class TestConflicts:
    @pytest.mark.parametrize(
        "name", ["steady", "slow-secondary", "crash-rejoin", "primary-failover"]
    )
    def test_no_conflicts_in_single_primary_mode(self, name: str, traces: Traces) -> None:
        """Single-primary mode does not detect conflicts: no conflict, no local rollback.

        The ``Certifier`` constructor enables conflict detection only in multi-primary mode.
        """
        for moment in traces[name].until(120):  # every second, not only at 120 s
            for index, member in enumerate(moment.members):
                if member.server_up:
                    stats = moment.snapshot(index).stats
                    assert stats.count_conflicts_detected == 0
                    assert stats.count_transactions_local_rollback == 0

    def test_conflicts_in_multi_primary_mode(self, traces: Traces) -> None:
        """Multi-primary writers on hot keys conflict; the rollbacks add up at the origins."""
        moment = traces["multi-primary-conflicts"].at(60)
        rows = [moment.snapshot(i).stats for i in range(3)]
        assert all(row.count_conflicts_detected == moment.rolled_back > 0 for row in rows)
        assert sum(row.count_transactions_local_rollback for row in rows) == moment.rolled_back
        assert sum(row.count_transactions_local_proposed for row in rows) == (
            moment.committed + moment.rolled_back
        )
        assert (
            0.01 < moment.rolled_back / sum(r.count_transactions_local_proposed for r in rows) < 0.2
        )


class TestFlowControl:
    def test_engages_above_threshold_and_releases_after(self) -> None:
        """The quota appears only after a queue passes 25000, and goes back to 0 once it drains."""
        group = group_of(
            scenario(
                workload={"rate_tps": 3000},
                appliers={"capacity_tps": 6000, "capacity_overrides": {"2": 1500}},
                events=[{"at": 30, "action": "capacity", "member": 2, "value": 20000}],
            )
        )
        engaged_at = over_at = None
        # The queue passes 25000 at 17 s and the quota appears at 18 s; after the applier speeds
        # up at 30 s the quota grows by half each period until past INT_MAX32 and drops to 0 at
        # 67 s, where the run stops.
        for tick in range(1, 200 * TICKS_PER_SECOND):
            group.advance_to(tick)
            if over_at is None and group.members[2].queue > 25000:
                over_at = tick
            if engaged_at is None and group.members[0].quota > 0:
                engaged_at = tick
            if engaged_at is not None and group.members[0].quota == 0:
                break
        assert over_at is not None
        assert engaged_at is not None
        assert engaged_at >= over_at
        assert group.totals.throttled_ticks[0] > 0
        assert group.members[0].quota == 0  # released
        assert group.members[2].queue < 25000

    def test_quota_holds_the_writer_near_the_slow_member(self, traces: Traces) -> None:
        """While held, the primary commits about what the slowest applier applies."""
        trace = traces["slow-secondary"]
        proposed = trace.at(60).snapshot(0).stats.count_transactions_local_proposed
        now = trace.at(120).snapshot(0).stats.count_transactions_local_proposed
        rate = (now - proposed) / 60
        assert 1000 < rate < 2200  # well under the 3000 tps it wants


class TestLifecycle:
    def test_crash_unreachable_then_offline_then_rejoin(self, traces: Traces) -> None:
        """A crashed member: UNREACHABLE after 5 s, out of the view after 5 s more, back later."""
        trace = traces["crash-rejoin"]
        crashed = trace.at(0).members[2].uuid
        at = trace.at(34)
        assert at.states[crashed] == "ONLINE"
        with pytest.raises(SourceUnavailable):
            at.snapshot(2)
        at = trace.at(36)
        assert at.states[crashed] == "UNREACHABLE"
        assert any(
            r.member_id == crashed and r.member_state == "UNREACHABLE"
            for r in at.snapshot(0).view.members
        )
        view = at.view_number
        at = trace.at(41)
        assert at.states[crashed] == "OFFLINE"
        assert crashed not in {r.member_id for r in at.snapshot(0).view.members}
        assert at.view_number == view + 1
        assert trace.at(61).states[crashed] == "RECOVERING"
        assert trace.at(90).states[crashed] == "ONLINE"

    def test_primary_failover_elects_the_lowest_uuid(self, traces: Traces) -> None:
        """When the primary is expelled the ONLINE member with the lowest uuid becomes PRIMARY."""
        trace = traces["primary-failover"]
        old = trace.at(0).members[0].uuid
        rows = {r.member_id: r.member_role for r in trace.at(41).snapshot(1).view.members}
        new_primary = min(rows)
        assert old not in rows
        assert rows[new_primary] == "PRIMARY"
        assert sorted(rows.values()) == ["PRIMARY", "SECONDARY"]
        assert {r.member_id: r.member_role for r in trace.at(120).snapshot(1).view.members}[
            old
        ] == "SECONDARY"

    def test_partitioned_member_sees_the_others_unreachable(self, traces: Traces) -> None:
        """A cut-off member shows the others UNREACHABLE, errs after healing, then rejoins."""
        trace = traces["network-partition"]
        cut = trace.at(0).members[1].uuid
        own = {r.member_id: r.member_state for r in trace.at(36).snapshot(1).view.members}
        assert own[cut] == "ONLINE"
        assert sorted(own.values()) == ["ONLINE", "UNREACHABLE", "UNREACHABLE"]
        read = trace.at(61).snapshot(1)
        assert read.own_row().member_state == "ERROR"  # type: ignore[union-attr]
        assert len(read.view.members) == 1
        assert trace.at(90).states[cut] == "ONLINE"

    def test_stopped_member_shows_only_itself_offline(self) -> None:
        """A stopped member lists only its own OFFLINE row (``get_group_members_info``)."""
        group = group_of(scenario(events=[{"at": 10, "action": "stop", "member": 1}]))
        run_seconds(group, 12)
        read = snapshot(group, 1)
        assert [(r.member_state, r.member_role, r.member_version) for r in read.view.members] == [
            ("OFFLINE", "", "")
        ]
        assert read.stats.view_id == ""
        assert read.stats.count_transactions_checked == 0

    @pytest.mark.parametrize("size", [1, 9])
    def test_group_sizes(self, size: int) -> None:
        """Groups of 1 and 9 members run; every member lists every member, sorted by uuid."""
        group = group_of(scenario(mode="multi-primary", members=size, workload={"rate_tps": 200}))
        run_seconds(group, 10)
        for index in range(size):
            ids = [r.member_id for r in snapshot(group, index).view.members]
            assert ids == sorted(m.uuid for m in group.members)
        assert group.totals.committed > 0
