"""The simulated certifier's stable set and garbage collection follow certifier.cc."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grstats.agent.sim.group import TICKS_PER_SECOND, SimulatedGroup
from grstats.agent.sim.scenario import from_mapping
from grstats.agent.sim.views import snapshot
from grstats.core.rows import MemberState

if TYPE_CHECKING:
    from grstats.core.gtid import GtidSet

START_US = 1_700_000_000_000_000


def group_of(**changes: Any) -> SimulatedGroup:
    """A 3-member group of an inline scenario."""
    return SimulatedGroup(from_mapping({"name": "t", "description": "d", **changes}), 1, START_US)


def run_seconds(group: SimulatedGroup, seconds: float) -> None:
    """Advance ``group`` to ``seconds`` after its start."""
    group.advance_to(round(seconds * TICKS_PER_SECOND))


def stable(group: SimulatedGroup, index: int) -> GtidSet:
    """TRANSACTIONS_COMMITTED_ALL_MEMBERS of member ``index``."""
    return snapshot(group, index).stats.committed_all_members()


def rows_validating(group: SimulatedGroup) -> int:
    """COUNT_TRANSACTIONS_ROWS_VALIDATING of member 0."""
    return snapshot(group, 0).stats.count_transactions_rows_validating


class TestStableSetRound:
    def test_intersect_members_gtid_executed_waits_for_an_unreachable_member(self) -> None:
        """A cut-off member still in the view stalls the round until it is expelled.

        ``Certifier::intersect_members_gtid_executed_and_garbage_collect`` needs one
        ``gtid_executed`` per ONLINE member, and ``get_number_of_members_online`` counts
        UNREACHABLE members: the stable set never holds a GTID a member of the view lacks,
        and garbage collection waits with it.
        """
        group = group_of(
            group={"expel_timeout_s": 100},
            events=[{"at": 10, "action": "partition", "member": 2}],
        )
        run_seconds(group, 70)
        cut_off = snapshot(group, 2).gtid_executed
        rows_at_70 = rows_validating(group)
        run_seconds(group, 110)  # suspected at 15 s, expelled at 115 s
        assert [member.in_view for member in group.members] == [True, True, True]
        for index in (0, 1):
            assert stable(group, index) <= cut_off
        assert rows_validating(group) > rows_at_70 > 0
        run_seconds(group, 121)  # expelled; the round at 120 s completes without it
        assert [member.in_view for member in group.members] == [True, True, False]
        assert not stable(group, 0) <= cut_off
        assert rows_validating(group) < rows_at_70

    def test_dispatcher_broadcasts_from_the_start(self) -> None:
        """The first round runs at the start, not 60 s in.

        ``Certifier_broadcast_thread::dispatcher`` broadcasts ``gtid_executed`` when its
        counter, which starts at 0, is a multiple of 60.
        """
        group = group_of()
        run_seconds(group, 1)
        assert stable(group, 0)
        assert stable(group, 0) <= snapshot(group, 1).gtid_executed
        assert group.gc_runs == 1


class TestGarbageCollect:
    def test_garbage_collect_internal_keeps_versions_equal_to_the_stable_set(self) -> None:
        """Once writes stop, the last transaction's keys stay in the certification database.

        ``Certifier::garbage_collect_internal`` erases a write-set only when its version is a
        strict subset of the stable set (``is_subset_not_equals``); the last transaction of a
        lone primary has a version equal to it.
        """
        group = group_of(events=[{"at": 30, "action": "rate", "member": 0, "value": 0}])
        run_seconds(group, 61)
        for index in range(3):
            stats = snapshot(group, index).stats
            assert 0 < stats.count_transactions_rows_validating <= 4  # keys_per_transaction
            assert stats.committed_all_members() == snapshot(group, index).gtid_executed

    def test_apply_view_change_packet_garbage_collects_at_a_join(self) -> None:
        """A view with a joining member garbage-collects; one where a member leaves does not.

        ``Plugin_gcs_events_handler::handle_joining_members`` queues the view's executed sets
        and ``Applier_module::apply_view_change_packet`` calls ``Certifier::garbage_collect``;
        ``handle_leaving_members`` does neither.
        """
        group = group_of(
            events=[
                {"at": 30, "action": "stop", "member": 2},
                {"at": 40, "action": "start", "member": 2},
            ]
        )
        run_seconds(group, 29.9)
        before_leave = rows_validating(group)
        run_seconds(group, 30.2)
        assert rows_validating(group) > before_leave
        run_seconds(group, 39.9)
        before_join = rows_validating(group)
        run_seconds(group, 40.2)
        assert rows_validating(group) < before_join // 10


class TestRecoveryCertifies:
    def test_recovery_thread_handle_step_4_counts_conflicts_while_recovering(self) -> None:
        """After state transfer a RECOVERING member certifies: its conflict count grows.

        ``Recovery_module::recovery_thread_handle`` wakes the applier at step 4
        (``awake_applier_module``) and waits in ``wait_for_applier_module_recovery`` before
        step 5 turns the member ONLINE: meanwhile ``Certifier::certify`` certifies the backlog
        and what the group orders, and ``get_negative_certified`` counts the conflicts.
        During state transfer the applier is suspended and nothing is certified.
        """
        group = group_of(
            mode="multi-primary",
            workload={
                "rate_tps": 300,
                "writers": "all",
                "key_space": 20000,
                "keys_per_transaction": 4,
                "skew": 0.7,
            },
            appliers={"capacity_tps": 4000, "capacity_overrides": {2: 1200}},
            events=[
                {"at": 10, "action": "crash", "member": 2},
                {"at": 30, "action": "start", "member": 2},
            ],
        )
        run_seconds(group, 30.1)
        member = group.members[2]
        while member.applied_upto < member.recovering_target:  # state transfer
            stats = snapshot(group, 2).stats
            assert member.status is MemberState.RECOVERING
            assert stats.count_conflicts_detected == stats.count_transactions_checked == 0
            group.step()
        conflicts: list[int] = []
        checked: list[int] = []
        while member.status is MemberState.RECOVERING:
            stats = snapshot(group, 2).stats
            conflicts.append(stats.count_conflicts_detected)
            checked.append(stats.count_transactions_checked)
            group.step()
        assert len(conflicts) > TICKS_PER_SECOND  # step 4 lasts while the backlog is applied
        assert conflicts[-1] > conflicts[0] > 0  # the backlog's, then the new transactions'
        assert checked[-1] > checked[0] > 0  # counted in MEMBER_IN_RECOVERY, as MySQL does now
        assert member.status is MemberState.ONLINE
