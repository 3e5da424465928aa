"""Views change only by a majority, or by group_replication_force_members (XCom, GCS)."""

from __future__ import annotations

from typing import Any

import pytest

from grstats.agent.sim.group import TICKS_PER_SECOND, SimulatedGroup
from grstats.agent.sim.scenario import from_mapping, load_scenario
from grstats.agent.sim.views import group_rows, snapshot
from grstats.core.errors import ConfigError

START_US = 1_700_000_000_000_000


def run_seconds(group: SimulatedGroup, seconds: float) -> None:
    """Advance ``group`` to ``seconds`` after its start."""
    group.advance_to(round(seconds * TICKS_PER_SECOND))


def states(group: SimulatedGroup) -> list[str]:
    """MEMBER_STATE of members 0, 1, 2, ... as the group shows them."""
    by_id = {row.member_id: str(row.member_state) for row in group_rows(group)}
    return [by_id[member.uuid] for member in group.members]


def scenario_with(*events: dict[str, Any], members: int = 3) -> SimulatedGroup:
    """A group of an inline scenario with ``events``."""
    data = {"name": "t", "description": "d", "members": members, "events": list(events)}
    return SimulatedGroup(from_mapping(data), 1, START_US)


class TestNoQuorum:
    def test_no_majority_no_expel_and_writes_block(self) -> None:
        """With 1 of 2 members left, member 1 stays UNREACHABLE and nothing commits.

        XCom installs no view without a majority (``Gcs_xcom_control::xcom_receive_global_view``
        never comes), so the expel is never agreed and writes wait for consensus.
        """
        group = SimulatedGroup(load_scenario("no-quorum"), 1, START_US)
        run_seconds(group, 40)
        committed = group.totals.committed
        run_seconds(group, 59)
        assert states(group) == ["ONLINE", "UNREACHABLE", "OFFLINE"]
        assert group.totals.committed == committed

    def test_five_members_three_cut_off_stay_in_the_view(self) -> None:
        """3 of 5 members cut off are never expelled: 2 is not a majority of 5."""
        group = scenario_with(
            *({"at": 10, "action": "partition", "member": i} for i in (2, 3, 4)), members=5
        )
        run_seconds(group, 100)
        assert states(group) == ["ONLINE", "ONLINE", *["UNREACHABLE"] * 3]
        assert all(member.in_view for member in group.members)

    def test_force_members_installs_a_view_without_quorum(self) -> None:
        """``Gcs_operations::force_members`` on the survivor: a group of one that writes again."""
        group = SimulatedGroup(load_scenario("no-quorum"), 1, START_US)
        run_seconds(group, 59)
        view, committed = group.view_number, group.totals.committed
        run_seconds(group, 61)
        assert states(group) == ["ONLINE", "OFFLINE", "OFFLINE"]
        assert group.view_number == view + 1
        assert [row.member_id for row in snapshot(group, 0).view.members] == [group.members[0].uuid]
        assert group.totals.committed > committed

    def test_force_members_leaves_out_a_member_that_can_talk(self) -> None:
        """A member left out of a forced view that can still talk errs, then rejoins."""
        group = scenario_with({"at": 10, "action": "force-members", "member": 0, "members": [0, 1]})
        run_seconds(group, 11)
        assert states(group) == ["ONLINE", "ONLINE", "ERROR"]
        run_seconds(group, 40)
        assert states(group) == ["ONLINE", "ONLINE", "ONLINE"]

    def test_force_members_needs_an_online_member(self) -> None:
        """Forcing from a member that is not ONLINE in the view changes nothing."""
        group = scenario_with(
            {"at": 5, "action": "crash", "member": 1},
            {"at": 6, "action": "force-members", "member": 1, "members": [1]},
        )
        run_seconds(group, 7)
        assert all(member.in_view for member in group.members)


class TestForceMembersParsing:
    @pytest.mark.parametrize(
        ("event", "message"),
        [
            (
                {"members": [1, 2]},
                (
                    "events[0].members: [1, 2] is not a membership that includes "
                    "events[0].member (0)"
                ),
            ),
            ({"members": "0,1"}, "events[0].members: '0,1' is not a list of member indexes"),
            ({}, "events[0].members: None is not a list of member indexes"),
            ({"members": [0, 9]}, "events[0].members: 9 is not a member index in 0..8"),
            ({"members": [0, 5]}, "events[0].members: 5 is not in 0..2 for 3 members"),
            (
                {"action": "crash", "members": [0]},
                "events[0].members: [0] is not allowed: crash takes no members",
            ),
        ],
    )
    def test_errors_name_the_field_and_value(self, event: dict[str, Any], message: str) -> None:
        """A bad ``members`` of an event names the field and the value."""
        item = {"at": 1, "action": "force-members", "member": 0, **event}
        with pytest.raises(ConfigError) as caught:
            from_mapping({"name": "t", "description": "d", "events": [item]})
        assert message in str(caught.value)

    def test_members_are_sorted_and_unique(self) -> None:
        """The membership is read as a sorted set of indexes."""
        item = {"at": 1, "action": "force-members", "member": 1, "members": [2, 1, 2]}
        scenario = from_mapping({"name": "t", "description": "d", "events": [item]})
        assert scenario.events[0].members == (1, 2)


class TestElectionAndConflicts:
    def test_handle_leader_election_keeps_an_unreachable_primary(self) -> None:
        """A view change while the primary is only UNREACHABLE elects no new primary.

        ``Plugin_gcs_events_handler::handle_leader_election_if_needed`` looks for a new primary
        when the old one left the group (``DEAD_OLD_PRIMARY``), not while it is suspected.
        """
        data = {
            "name": "t",
            "description": "d",
            "members": 5,
            "group": {"expel_timeout_s": 300},
            "events": [
                {"at": 10, "action": "partition", "member": 0},
                {"at": 20, "action": "stop", "member": 4},
            ],
        }
        group = SimulatedGroup(from_mapping(data), 1, START_US)
        run_seconds(group, 25)
        assert not group.members[4].in_view  # the view changed
        assert group.primary == 0

    def test_certify_counts_conflicts_only_for_what_the_member_certified(self) -> None:
        """A cut-off member's COUNT_CONFLICTS_DETECTED stops with its COUNT_TRANSACTIONS_CHECKED.

        ``Certifier::certify`` counts a negative certification as it certifies; a member that
        hears nothing certifies nothing, and an expelled one keeps its counts.
        """
        base = load_scenario("multi-primary-conflicts")
        data = {
            "name": "t",
            "description": "d",
            "mode": "multi-primary",
            "workload": {
                "rate_tps": base.workload.rate_tps,
                "key_space": base.workload.key_space,
                "skew": base.workload.skew,
            },
            "events": [{"at": 20, "action": "partition", "member": 2}],
        }
        group = SimulatedGroup(from_mapping(data), 1, START_US)
        run_seconds(group, 21)
        before = snapshot(group, 2).stats
        run_seconds(group, 29)  # suspected, not expelled yet
        during = snapshot(group, 2).stats
        run_seconds(group, 35)  # expelled: ERROR
        after = snapshot(group, 2).stats
        assert before.count_conflicts_detected > 0
        assert during.count_transactions_checked == before.count_transactions_checked
        assert during.count_conflicts_detected == before.count_conflicts_detected
        assert after.count_conflicts_detected == before.count_conflicts_detected
