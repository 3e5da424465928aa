"""Invariants of the simulated group (issue: tests check invariants, not snapshots)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest

from grstats.agent.cli.simulate import ground_truth
from grstats.agent.errors import SourceUnavailable
from grstats.agent.gtid import GtidSet
from grstats.agent.rows import MemberState
from grstats.agent.rows.render import json_objects
from grstats.agent.sim.group import TICKS_PER_SECOND, SimulatedGroup
from grstats.agent.sim.scenario import Scenario, from_mapping, list_scenarios, load_scenario
from grstats.agent.sim.views import group_rows, snapshot

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


class TestDeterminism:
    @pytest.mark.parametrize("name", [s.name for s in list_scenarios()])
    def test_same_seed_same_group(self, name: str) -> None:
        """Two runs of a scenario with the same seed give identical ground truth."""
        first, second = group_of(name, seed=7), group_of(name, seed=7)
        run_seconds(first, 75)
        run_seconds(second, 75)
        assert truth_json(first) == truth_json(second)

    def test_other_seed_other_history(self) -> None:
        """Another seed draws other keys, so other transactions conflict."""
        first, second = (
            group_of("multi-primary-conflicts", 1),
            group_of("multi-primary-conflicts", 2),
        )
        run_seconds(first, 30)
        run_seconds(second, 30)
        assert first.totals.rolled_back != second.totals.rolled_back

    def test_stepping_in_pieces_equals_one_go(self) -> None:
        """An agent that reads every second sees the same group as one that catches up at once."""
        piecewise, at_once = group_of("crash-rejoin"), group_of("crash-rejoin")
        for second in range(1, 91):
            run_seconds(piecewise, second)
            for index in range(3):
                with contextlib.suppress(SourceUnavailable):
                    snapshot(piecewise, index)
        run_seconds(at_once, 90)
        assert truth_json(piecewise) == truth_json(at_once)

    def test_stepping_in_parts_equals_stepping_whole_ticks(self) -> None:
        """A tick run in parts, pausing between them, leaves the group as one whole step does.

        Through 2 stable-set rounds of a 9-member group (the round sweeps in parts too).
        """
        nine = load_scenario("steady").with_members(9)
        in_parts, whole = group_of(nine), group_of(nine)
        pauses = 0
        for _ in range(2 * 60 * TICKS_PER_SECOND + 1):
            pauses += sum(1 for _ in in_parts.step_in_parts())
            whole.step()
        assert in_parts.tick == whole.tick
        assert truth_json(in_parts) == truth_json(whole)
        assert in_parts.certification == whole.certification
        assert pauses >= 10 * in_parts.tick  # certification and 9 appliers, every tick


class TestConvergence:
    @pytest.mark.parametrize("name", ["multi-primary-conflicts", "slow-secondary", "crash-rejoin"])
    def test_when_load_stops_every_gtid_executed_is_equal(self, name: str) -> None:
        """Once writes stop, every member applies everything: all gtid_executed become equal."""
        base = load_scenario(name)
        quiet = [{"at": 75, "action": "rate", "member": i, "value": 0} for i in range(base.members)]
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
        run_seconds(group, 75)
        executed = {str(snapshot(group, i).gtid_executed) for i in range(base.members)}
        if name == "slow-secondary":  # the slow member is still far behind while writes go on
            assert len(executed) > 1
        run_seconds(group, 200)
        executed = {str(snapshot(group, i).gtid_executed) for i in range(base.members)}
        assert len(executed) == 1
        views = len(group.view_log)  # one GTID per view with a joiner, the first ones too
        assert GtidSet.parse(executed.pop()).count() == group.totals.committed + views


class TestCounters:
    @pytest.mark.parametrize(
        "name", ["crash-rejoin", "primary-failover", "network-partition", "slow-secondary"]
    )
    def test_counters_never_decrease_between_restarts(self, name: str) -> None:
        """Cumulative counters only grow, except when a member (re)joins and restarts at 0."""
        group = group_of(name)
        previous: dict[int, tuple[int, ...]] = {}
        joins_seen = {i: group.members[i].join_seq for i in range(len(group.members))}
        for second in range(1, 150):
            run_seconds(group, second)
            for index, member in enumerate(group.members):
                if not member.server_up:
                    continue
                stats = snapshot(group, index).stats
                values = tuple(getattr(stats, name) for name in COUNTERS)
                if member.join_seq != joins_seen[index] or member.status is MemberState.OFFLINE:
                    joins_seen[index] = member.join_seq
                    previous.pop(index, None)
                if index in previous:
                    assert all(
                        now >= before for now, before in zip(values, previous[index], strict=True)
                    ), f"member {index} at {second} s: {values} after {previous[index]}"
                previous[index] = values

    def test_rejoined_member_restarts_at_zero(self) -> None:
        """A rejoined member's counters restart at 0 (new ``Pipeline_stats_member_collector``)."""
        group = group_of("crash-rejoin")
        run_seconds(group, 29)
        before = snapshot(group, 2).stats.count_transactions_checked
        run_seconds(group, 60.5)
        after = snapshot(group, 2).stats
        assert before > 10_000
        assert after.count_transactions_checked == 0  # still RECOVERING: certifies nothing yet
        assert after.count_transactions_in_queue > 0  # but queues what arrives meanwhile


class TestStableSet:
    @pytest.mark.parametrize(
        "name", ["multi-primary-conflicts", "crash-rejoin", "network-partition"]
    )
    def test_stable_set_is_in_every_gtid_executed(self, name: str) -> None:
        """TRANSACTIONS_COMMITTED_ALL_MEMBERS is in every ONLINE member's gtid_executed."""
        group = group_of(name)
        seen_nonempty = False
        for second in range(5, 160, 5):
            run_seconds(group, second)
            # The stable set is made of ONLINE members' sets only: an expelled or RECOVERING
            # member may be behind it (that is why a RECOVERING member reports '').
            online = [m.index for m in group.members if m.online]
            executed = [snapshot(group, i).gtid_executed for i in online]
            for index in online:
                stable = snapshot(group, index).stats.committed_all_members()
                seen_nonempty |= bool(stable)
                assert all(stable <= other for other in executed), (
                    f"{name} {second} s member {index}"
                )
        assert seen_nonempty

    def test_recovering_member_reports_no_stable_set(self) -> None:
        """A RECOVERING member reports '' for TRANSACTIONS_COMMITTED_ALL_MEMBERS.

        As ``Certifier::get_group_stable_transactions_set_string`` returns while RECOVERING.
        """
        group = group_of("crash-rejoin")
        run_seconds(group, 60.5)
        stats = snapshot(group, 2).stats
        assert snapshot(group, 2).own_row().member_state == "RECOVERING"  # type: ignore[union-attr]
        assert stats.transactions_committed_all_members == ""


class TestConflicts:
    @pytest.mark.parametrize(
        "name", ["steady", "slow-secondary", "crash-rejoin", "primary-failover"]
    )
    def test_no_conflicts_in_single_primary_mode(self, name: str) -> None:
        """Single-primary mode does not detect conflicts: no conflict, no local rollback.

        The ``Certifier`` constructor enables conflict detection only in multi-primary mode.
        """
        group = group_of(name)
        run_seconds(group, 120)
        for index, member in enumerate(group.members):
            if member.server_up:
                stats = snapshot(group, index).stats
                assert stats.count_conflicts_detected == 0
                assert stats.count_transactions_local_rollback == 0

    def test_conflicts_in_multi_primary_mode(self) -> None:
        """Multi-primary writers on hot keys conflict; the rollbacks add up at the origins."""
        group = group_of("multi-primary-conflicts")
        run_seconds(group, 60)
        rows = [snapshot(group, i).stats for i in range(3)]
        assert all(row.count_conflicts_detected == group.totals.rolled_back > 0 for row in rows)
        assert (
            sum(row.count_transactions_local_rollback for row in rows) == group.totals.rolled_back
        )
        assert sum(row.count_transactions_local_proposed for row in rows) == (
            group.totals.committed + group.totals.rolled_back
        )
        assert (
            0.01
            < group.totals.rolled_back / sum(r.count_transactions_local_proposed for r in rows)
            < 0.2
        )


class TestFlowControl:
    def test_engages_above_threshold_and_releases_after(self) -> None:
        """The quota appears only after a queue passes 25000, and goes back to 0 once it drains."""
        group = group_of(
            scenario(
                workload={"rate_tps": 3000},
                appliers={"capacity_tps": 6000, "capacity_overrides": {"2": 1500}},
                events=[{"at": 60, "action": "capacity", "member": 2, "value": 20000}],
            )
        )
        engaged_at = over_at = None
        for tick in range(1, 200 * TICKS_PER_SECOND):
            group.advance_to(tick)
            if over_at is None and group.members[2].queue > 25000:
                over_at = tick
            if engaged_at is None and group.members[0].quota > 0:
                engaged_at = tick
        assert over_at is not None
        assert engaged_at is not None
        assert engaged_at >= over_at
        assert group.totals.throttled_ticks[0] > 0
        assert group.members[0].quota == 0  # released
        assert group.members[2].queue < 25000

    def test_quota_holds_the_writer_near_the_slow_member(self) -> None:
        """While held, the primary commits about what the slowest applier applies."""
        group = group_of("slow-secondary")
        run_seconds(group, 60)
        proposed = snapshot(group, 0).stats.count_transactions_local_proposed
        run_seconds(group, 120)
        rate = (snapshot(group, 0).stats.count_transactions_local_proposed - proposed) / 60
        assert 1000 < rate < 2200  # well under the 3000 tps it wants


class TestLifecycle:
    def test_crash_unreachable_then_offline_then_rejoin(self) -> None:
        """A crashed member: UNREACHABLE after 5 s, out of the view after 5 s more, back later."""
        group = group_of("crash-rejoin")
        crashed = group.members[2].uuid
        run_seconds(group, 34)
        assert states(group)[crashed] == "ONLINE"
        with pytest.raises(SourceUnavailable):
            snapshot(group, 2)
        run_seconds(group, 36)
        assert states(group)[crashed] == "UNREACHABLE"
        assert any(
            r.member_id == crashed and r.member_state == "UNREACHABLE"
            for r in snapshot(group, 0).view.members
        )
        view = group.view_number
        run_seconds(group, 41)
        assert states(group)[crashed] == "OFFLINE"
        assert crashed not in {r.member_id for r in snapshot(group, 0).view.members}
        assert group.view_number == view + 1
        run_seconds(group, 61)
        assert states(group)[crashed] == "RECOVERING"
        run_seconds(group, 90)
        assert states(group)[crashed] == "ONLINE"

    def test_primary_failover_elects_the_lowest_uuid(self) -> None:
        """When the primary is expelled the ONLINE member with the lowest uuid becomes PRIMARY."""
        group = group_of("primary-failover")
        old = group.members[0].uuid
        run_seconds(group, 41)
        rows = {r.member_id: r.member_role for r in snapshot(group, 1).view.members}
        new_primary = min(rows)
        assert old not in rows
        assert rows[new_primary] == "PRIMARY"
        assert sorted(rows.values()) == ["PRIMARY", "SECONDARY"]
        run_seconds(group, 120)
        assert {r.member_id: r.member_role for r in snapshot(group, 1).view.members}[
            old
        ] == "SECONDARY"

    def test_partitioned_member_sees_the_others_unreachable(self) -> None:
        """A cut-off member shows the others UNREACHABLE, errs after healing, then rejoins."""
        group = group_of("network-partition")
        run_seconds(group, 36)
        own = {r.member_id: r.member_state for r in snapshot(group, 1).view.members}
        assert own[group.members[1].uuid] == "ONLINE"
        assert sorted(own.values()) == ["ONLINE", "UNREACHABLE", "UNREACHABLE"]
        run_seconds(group, 61)
        assert snapshot(group, 1).own_row().member_state == "ERROR"  # type: ignore[union-attr]
        assert len(snapshot(group, 1).view.members) == 1
        run_seconds(group, 90)
        assert states(group)[group.members[1].uuid] == "ONLINE"

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
