"""View changes logged as GTID transactions, and the GNOs the certifier hands out (certifier.cc)."""

from __future__ import annotations

from typing import Any

import pytest

from grstats.agent.sim.gno import GnoAssigner
from grstats.agent.sim.group import TICKS_PER_SECOND, SimulatedGroup
from grstats.agent.sim.scenario import from_mapping
from grstats.agent.sim.views import snapshot
from grstats.core.errors import ConfigError
from grstats.core.gtid import GtidSet

START_US = 1_700_000_000_000_000
VIEW_UUID = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"


def group_of(**changes: Any) -> SimulatedGroup:
    """A 3-member group of an inline scenario."""
    return SimulatedGroup(from_mapping({"name": "t", "description": "d", **changes}), 1, START_US)


def run_seconds(group: SimulatedGroup, seconds: float) -> None:
    """Advance ``group`` to ``seconds`` after its start."""
    group.advance_to(round(seconds * TICKS_PER_SECOND))


def executed(group: SimulatedGroup, index: int) -> GtidSet:
    """Member ``index``'s gtid_executed."""
    return snapshot(group, index).gtid_executed


def one_interval(uuid: str, start: int, end: int) -> GtidSet:
    """``uuid:start-end``."""
    return GtidSet([(uuid, "", start, end)])


class TestHandleJoiningMembers:
    def test_a_new_group_of_3_on_8_0_has_executed_its_three_view_changes(self) -> None:
        """The bootstrap and two joins log group_name:1-3 on every member before any write."""
        group = group_of(workload={"rate_tps": 0})
        run_seconds(group, 2)
        for index in range(3):
            assert executed(group, index) == one_interval(group.group_name, 1, 3)

    def test_the_primary_writes_from_the_first_gno_after_the_view_changes(self) -> None:
        """generate_view_change_group_gtid recomputes the free intervals: the first block is 4-."""
        group = group_of(workload={"rate_tps": 100})
        run_seconds(group, 2)
        primary = executed(group, 0)
        assert one_interval(group.group_name, 1, 4) <= primary
        assert group.gno(0, 1) == 4

    def test_a_rejoin_logs_one_more_gtid_on_every_member(self) -> None:
        """A crash logs nothing (handle_leaving_members); the restart's join logs the next GNO."""
        events = [
            {"at": 5, "action": "crash", "member": 2},
            {"at": 20, "action": "start", "member": 2},
            {"at": 40, "action": "rate", "member": 0, "value": 0},
        ]
        group = group_of(workload={"rate_tps": 50}, events=events)
        run_seconds(group, 19)
        assert len(group.view_log) == 3  # the expulsion logged nothing
        run_seconds(group, 60)
        assert len(group.view_log) == 4
        committed = group.totals.committed
        every = {str(executed(group, index)) for index in range(3)}
        assert len(every) == 1
        # one primary, block size 1000000: the view's GNO sits between its writes, no gap
        assert GtidSet.parse(every.pop()) == one_interval(group.group_name, 1, committed + 4)

    def test_online_members_apply_it_as_remote_and_do_not_certify_it(self) -> None:
        """An ONLINE member counts it in REMOTE_APPLIED (group_replication_trans_before_commit).

        It is not certified (Certification_handler::log_view_change_event_in_order), so
        COUNT_TRANSACTIONS_CHECKED does not count it; the queue is empty again once applied.
        """
        events = [
            {"at": 5, "action": "stop", "member": 2},
            {"at": 10, "action": "start", "member": 2},
        ]
        group = group_of(workload={"rate_tps": 0}, events=events)
        run_seconds(group, 20)
        for index in (0, 1):
            stats = snapshot(group, index).stats
            assert stats.count_transactions_remote_applied == 1
            assert stats.count_transactions_checked == 0
            assert stats.count_transactions_remote_in_applier_queue == 0
        joiner = snapshot(group, 2)
        assert joiner.stats.count_transactions_remote_applied == 0  # it came through recovery
        assert joiner.gtid_executed == one_interval(group.group_name, 1, 4)

    def test_a_primary_with_nothing_queued_writes_on_through_a_join(self) -> None:
        """Its applier applies the view change at once: the primary's queue never holds it."""
        events = [
            {"at": 5, "action": "stop", "member": 2},
            {"at": 10, "action": "start", "member": 2},
        ]
        group = group_of(workload={"rate_tps": 100}, events=events)
        run_seconds(group, 10)
        before = group.positives_by_origin[0]
        run_seconds(group, 10.1)  # the tick of the join
        assert group.positives_by_origin[0] - before == 10

    def test_the_stable_set_holds_the_view_changes(self) -> None:
        """Certifier::update_stable_set intersects gtid_executed, view changes included."""
        group = group_of(workload={"rate_tps": 0})
        run_seconds(group, 2)
        stats = snapshot(group, 1).stats
        assert stats.committed_all_members() == one_interval(group.group_name, 1, 3)


class TestMemberVersionRemovingVcle:
    def test_8_4_logs_no_view_change(self) -> None:
        """prepare_view_change_packet: no m_need_vcle when every member is 8.3.0 or later."""
        group = group_of(version="8.4.0", workload={"rate_tps": 100})
        run_seconds(group, 2)
        assert group.view_log == []
        assert group.gno(0, 1) == 1
        assert executed(group, 1) <= one_interval(group.group_name, 1, 1000)

    def test_8_2_still_logs_them(self) -> None:
        """MEMBER_VERSION_REMOVING_VCLE is 0x080300: 8.2.0 logs the view changes."""
        group = group_of(version="8.2.0", workload={"rate_tps": 0})
        run_seconds(group, 1)
        assert executed(group, 0) == one_interval(group.group_name, 1, 3)


class TestViewChangeUuid:
    def test_view_changes_take_the_view_change_uuid(self) -> None:
        """Certifier::initialize_server_gtid_set: the views' sidno is view_change_uuid's."""
        group = group_of(view_change_uuid=VIEW_UUID.upper(), workload={"rate_tps": 100})
        run_seconds(group, 2)
        primary = executed(group, 0)
        assert one_interval(VIEW_UUID, 1, 3) <= primary
        assert group.gno(0, 1) == 1  # the group name's GNOs start at 1

    @pytest.mark.parametrize(
        ("value", "message"),
        [
            ("not-a-uuid", "view_change_uuid: 'not-a-uuid' is not AUTOMATIC or a UUID"),
            (7, "view_change_uuid: 7 is not AUTOMATIC or a UUID"),
        ],
    )
    def test_check_view_change_uuid_string_rejects_bad_values(
        self, value: Any, message: str
    ) -> None:
        """Only AUTOMATIC or a UUID is taken, as check_view_change_uuid_string takes them."""
        with pytest.raises(ConfigError, match=message):
            group_of(view_change_uuid=value)

    def test_it_needs_8_0_26(self) -> None:
        """group_replication_view_change_uuid came with 8.0.26 (WL#14539)."""
        with pytest.raises(ConfigError, match=r"view_change_uuid: .* came with MySQL 8\.0\.26"):
            group_of(version="8.0.25", view_change_uuid=VIEW_UUID)


class TestGnoAssigner:
    def test_get_next_available_gtid_gives_each_writer_a_block(self) -> None:
        """Certifier::reserve_gtid_block: consecutive blocks of block_size from the first free."""
        gnos = GnoAssigner(10)
        assert [gnos.next_for(0), gnos.next_for(1), gnos.next_for(0)] == [1, 11, 2]

    def test_a_writer_whose_block_is_used_up_reserves_the_next(self) -> None:
        """get_next_available_gtid: a block with no free GNO left (-2) makes it reserve another."""
        gnos = GnoAssigner(10)
        for _ in range(3):
            gnos.next_for(0)  # 1-3
        gnos.next_for(1)  # 11
        gnos.view_change(on_group_uuid=True)  # 4; the free intervals are 5-10 and 12-
        assert [gnos.next_for(0) for _ in range(7)] == [5, 6, 7, 8, 9, 10, 12]

    def test_generate_view_change_group_gtid_fills_the_first_gap(self) -> None:
        """A view change takes the first free GNO and hands out the blocks again."""
        gnos = GnoAssigner(10)
        for _ in range(3):
            gnos.next_for(0)  # 1-3
        gnos.next_for(1)  # 11
        assert gnos.view_change(on_group_uuid=True) == 4
        assert gnos.next_for(0) == 5  # the rest of its old block, 5-10, is the first free
        assert gnos.next_for(1) == 12  # then 12-21
        assert gnos.used == [[1, 5], [11, 12]]

    def test_another_uuid_still_hands_the_blocks_out_again(self) -> None:
        """With view_change_uuid, get_next_available_gtid still recomputes the intervals."""
        gnos = GnoAssigner(10)
        gnos.next_for(0)
        gnos.next_for(1)  # 11
        assert gnos.view_change(on_group_uuid=False) == 0
        assert gnos.next_for(1) == 2  # the first free interval, 2-10, is its block now

    def test_blocks_are_collected_back_after_block_size_assignments(self) -> None:
        """gtids_assigned_in_blocks_counter % (block_size + 1) == 0 recomputes the intervals."""
        gnos = GnoAssigner(3)
        assert [gnos.next_for(0), gnos.next_for(1), gnos.next_for(0)] == [1, 4, 2]
        assert gnos.next_for(1) == 3  # blocks dropped: the first free interval is 3-3

    def test_block_size_1_is_sequential(self) -> None:
        """A block size of 1 takes the first free GNO for every transaction."""
        gnos = GnoAssigner(1)
        first = [gnos.next_for(0), gnos.next_for(1)]
        assert [*first, gnos.view_change(on_group_uuid=True), gnos.next_for(0)] == [1, 2, 3, 4]
