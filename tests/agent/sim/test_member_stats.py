"""A simulated member's replication_group_member_stats after a join and after a cut-off."""

from __future__ import annotations

from grstats.agent.sim.group import TICKS_PER_SECOND, SimulatedGroup
from grstats.agent.sim.views import snapshot
from grstats.core.rows import MemberState
from tests.agent.sim.test_group import group_of, run_seconds, scenario


def stable_text(group: SimulatedGroup, index: int) -> str:
    """TRANSACTIONS_COMMITTED_ALL_MEMBERS of member ``index``."""
    return snapshot(group, index).stats.transactions_committed_all_members


class TestJoinerStableSet:
    def test_is_empty_until_its_first_complete_round(self) -> None:
        """A rejoined member shows '' once ONLINE until the next stable-set round fills it.

        Its new ``Certifier`` starts with an empty ``stable_gtid_set``; the view it joins in
        carries no executed sets for it (``Plugin_gcs_events_handler::handle_joining_members``
        calls ``collect_members_executed_sets`` only on the members already in the group), and
        ``Certifier::set_certification_info`` installs the donor's write-sets, not its stable
        set; ``Certifier::handle_certifier_data`` sets it once every member's
        ``gtid_executed`` arrived (``stable_set_handle``), read by
        ``get_group_stable_transactions_set_string`` (plugin/group_replication/src/certifier.cc).
        """
        group = group_of(
            scenario(
                workload={"rate_tps": 200},
                group={"gc_period_s": 60},
                events=[
                    {"at": 5, "action": "stop", "member": 2},
                    {"at": 10, "action": "start", "member": 2},
                ],
            )
        )
        run_seconds(group, 9)
        assert stable_text(group, 2) == ""  # stopped: OFFLINE's stats row
        run_seconds(group, 10.1)
        joiner = group.members[2]
        for _ in range(20 * TICKS_PER_SECOND):  # until it is ONLINE
            if joiner.status is MemberState.ONLINE:
                break
            group.advance_to(group.tick + 1)
        assert joiner.status is MemberState.ONLINE
        assert group.tick < 60 * TICKS_PER_SECOND  # before the next round
        assert stable_text(group, 0) != ""
        assert stable_text(group, 2) == ""
        run_seconds(group, 61)  # the round at 60 s: every ONLINE member's set, the joiner's too
        assert stable_text(group, 2) != ""
        assert stable_text(group, 2) == stable_text(group, 0)


class TestCutOffRowsValidating:
    def test_a_cut_off_member_keeps_its_certification_info(self) -> None:
        """Members 3 and 4 of 5, each cut off and expelled, keep the rows they had at the cut.

        Each still sees itself ONLINE in its own view; its certifier certifies nothing without
        consensus and only ``Certifier::garbage_collect`` after a new stable set
        (``stable_set_handle``, plugin/group_replication/src/certifier.cc) erases write-sets,
        so COUNT_TRANSACTIONS_ROWS_VALIDATING (``get_certification_info_size``) stays.
        """
        group = group_of(
            scenario(
                members=5,
                mode="multi-primary",
                workload={"rate_tps": 100, "key_space": 1_000_000},
                group={"gc_period_s": 30},
                events=[
                    {"at": 20, "action": "partition", "member": 3},
                    {"at": 20, "action": "partition", "member": 4},
                ],
            )
        )
        run_seconds(group, 20.1)
        at_cut = [snapshot(group, i).stats.count_transactions_rows_validating for i in (3, 4)]
        assert min(at_cut) > 0
        run_seconds(group, 95)  # expelled at 30 s; rounds at 30, 60 and 90 s in the majority
        for index, rows in zip((3, 4), at_cut, strict=True):
            read = snapshot(group, index)
            own = next(r for r in read.view.members if r.member_id == read.member_id)
            assert not group.members[index].in_view
            assert own.member_state == MemberState.ONLINE
            assert read.stats.count_transactions_rows_validating == rows
        majority = snapshot(group, 0).stats.count_transactions_rows_validating
        assert majority != at_cut[0]  # the majority certified and collected meanwhile
