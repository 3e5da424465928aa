"""What the simulator gives the group status: transactions_behind, read_only, flow control."""

from __future__ import annotations

from typing import Any

import pytest

from grstats.agent.sim.group import TICKS_PER_SECOND, SimulatedGroup, member_uuid
from grstats.agent.sim.scenario import Scenario, from_mapping, load_scenario
from grstats.agent.sim.views import not_started, received_set, snapshot
from grstats.core.model import FlowControlSettings, MemberSnapshot
from grstats.core.rows import MemberState

START_US = 1_700_000_000_000_000
SEED = 1


def group_of(scenario: Scenario | str) -> SimulatedGroup:
    """A fresh group for ``scenario`` (a name or a Scenario)."""
    return SimulatedGroup(
        load_scenario(scenario) if isinstance(scenario, str) else scenario, SEED, START_US
    )


def scenario(**changes: Any) -> Scenario:
    """A small inline scenario."""
    return from_mapping({"name": "t", "description": "d", **changes})


def run_seconds(group: SimulatedGroup, seconds: float) -> None:
    """Advance ``group`` to ``seconds`` after its start."""
    group.advance_to(round(seconds * TICKS_PER_SECOND))


def read(group: SimulatedGroup, index: int) -> MemberSnapshot:
    """Member ``index`` as its source reads it, its last rows if its server is down."""
    return snapshot(group, index, last_known=True)


def behind(group: SimulatedGroup, index: int) -> int:
    """Member ``index``'s transactions_behind, which the simulator always fills in."""
    value = read(group, index).transactions_behind
    assert value is not None
    return value


def status(group: SimulatedGroup, index: int) -> MemberState:
    """Member ``index``'s own MEMBER_STATE in the simulator."""
    return group.members[index].status


def read_only(group: SimulatedGroup, index: int) -> tuple[bool, bool]:
    """Member ``index``'s (read_only, super_read_only)."""
    server = read(group, index).server
    return server.read_only, server.super_read_only


ON, OFF = (True, True), (False, False)


class TestTransactionsBehind:
    @pytest.mark.parametrize(
        "name", ["steady", "slow-secondary", "crash-rejoin", "network-partition", "demo"]
    )
    def test_is_received_minus_executed(self, name: str) -> None:
        """transactions_behind is the GTID count of RECEIVED_TRANSACTION_SET - gtid_executed."""
        group = group_of(name)
        states = set()
        for second in range(0, 90, 3):
            run_seconds(group, second + 0.3)
            for member in group.members:
                snap = read(group, member.index)
                received = received_set(group, member)
                assert snap.gtid_executed.difference(received).is_empty()
                assert snap.transactions_behind == received.difference(snap.gtid_executed).count()
                states.add(member.status)
        if name in ("crash-rejoin", "network-partition"):
            assert MemberState.RECOVERING in states

    def test_caught_up_members_show_zero(self) -> None:
        """In the steady scenario every member keeps up: none is ever behind at a tick's end."""
        group = group_of("steady")
        for tick in range(1, 20 * TICKS_PER_SECOND):
            group.advance_to(tick)
            assert [behind(group, i) for i in range(3)] == [0, 0, 0]
        assert group.totals.committed > 0

    def test_grows_for_a_slow_member(self) -> None:
        """The slow secondary falls further behind each second until flow control holds."""
        group = group_of("slow-secondary")
        seen = []
        for second in range(1, 11):
            run_seconds(group, second)
            seen.append(behind(group, 2))
            assert behind(group, 0) == 0  # the primary's own transactions are executed
            assert behind(group, 1) < 10
        assert seen == sorted(seen)
        assert seen[-1] > seen[0] > 1000

    @pytest.mark.parametrize("mode", ["single-primary", "multi-primary"])
    def test_agrees_with_the_applier_queue_when_online(self, mode: str) -> None:
        """An ONLINE member's figure is COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE."""
        group = group_of(
            scenario(
                mode=mode,
                workload={"rate_tps": 1000, "writers": "all"},
                appliers={"capacity_tps": 6000, "capacity_overrides": {2: 1500}},
            )
        )
        queued = 0
        for second in range(1, 40, 2):
            run_seconds(group, second + 0.5)
            for index in range(3):
                assert status(group, index) is MemberState.ONLINE
                snap = read(group, index)
                remote = snap.stats.count_transactions_remote_in_applier_queue
                assert snap.transactions_behind == remote
                queued += remote
        assert queued > 0

    def test_recovering_member_counts_what_it_queued_since_joining(self) -> None:
        """RECOVERING: what the group sent since the join, then what step 4 certified.

        During state transfer the figure grows by what the group commits; from
        ``Recovery_module::recovery_thread_handle``'s step 4 on, still RECOVERING, it is the
        applier queue, which the member applies before it turns ONLINE.
        """
        group = group_of("crash-rejoin")
        run_seconds(group, 60.1)
        member = group.members[2]
        assert status(group, 2) is MemberState.RECOVERING
        previous, committed = behind(group, 2), group.totals.committed
        transfer_ticks = 0
        while True:
            assert status(group, 2) is MemberState.RECOVERING
            assert transfer_ticks < 30 * TICKS_PER_SECOND
            group.step()
            if member.transferred:
                break
            now = behind(group, 2)
            # The gap recovery fetches from a donor is not in the applier channel: the figure
            # grows by what the group committed, not by the missed 30 s.
            assert now - previous == group.totals.committed - committed
            previous, committed = now, group.totals.committed
            transfer_ticks += 1
        assert transfer_ticks > 1
        assert previous > 0
        step4_ticks = 0
        while status(group, 2) is MemberState.RECOVERING:
            snap = read(group, 2)
            assert snap.transactions_behind == snap.stats.count_transactions_remote_in_applier_queue
            assert step4_ticks < 30 * TICKS_PER_SECOND
            group.step()
            step4_ticks += 1
        assert step4_ticks > 1
        assert status(group, 2) is MemberState.ONLINE

    def test_crashed_member_keeps_what_it_had(self) -> None:
        """A down member's last rows keep the figure it had when its server went down."""
        group = group_of(
            scenario(
                workload={"rate_tps": 3000},
                appliers={"capacity_tps": 6000, "capacity_overrides": {2: 1500}},
                events=[{"at": 10, "action": "crash", "member": 2}],
            )
        )
        run_seconds(group, 10)
        at_crash = behind(group, 2)
        assert at_crash > 1000
        for second in (12, 20, 30):
            run_seconds(group, second)
            assert behind(group, 2) == at_crash

    def test_member_crashed_while_recovering_keeps_what_it_had(self) -> None:
        """A member that crashes during recovery keeps what its applier channel had then."""
        group = group_of(
            scenario(
                events=[
                    {"at": 5, "action": "crash", "member": 2},
                    {"at": 30, "action": "start", "member": 2},
                    {"at": 30.5, "action": "crash", "member": 2},
                ]
            )
        )
        run_seconds(group, 30.5)
        assert status(group, 2) is MemberState.RECOVERING
        at_crash = behind(group, 2)
        assert at_crash > 0
        run_seconds(group, 35)
        assert group.totals.committed > 0
        assert behind(group, 2) == at_crash

    def test_not_started_is_none(self) -> None:
        """Before the group starts GR has no applier channel: no figure."""
        assert not_started(group_of("steady"), 1).transactions_behind is None


class TestReadOnly:
    def test_single_primary_only_the_primary_is_writable(self) -> None:
        """Single-primary: the primary has both OFF, the secondaries super_read_only ON."""
        group = group_of("steady")
        run_seconds(group, 5)
        assert [read_only(group, i) for i in range(3)] == [OFF, ON, ON]
        roles = {r.member_id: r.member_role for r in read(group, 0).view.members}
        assert roles[group.members[0].uuid] == "PRIMARY"

    def test_multi_primary_online_members_are_writable(self) -> None:
        """Multi-primary: every ONLINE member has both OFF."""
        group = group_of("multi-primary-conflicts")
        run_seconds(group, 5)
        assert [read_only(group, i) for i in range(3)] == [OFF, OFF, OFF]

    def test_multi_primary_member_not_online_is_read_only(self) -> None:
        """Multi-primary: stopped, RECOVERING and ERROR members are read-only until ONLINE."""
        group = group_of(
            scenario(
                mode="multi-primary",
                workload={"writers": "all"},
                events=[
                    {"at": 10, "action": "stop", "member": 1},
                    {"at": 20, "action": "start", "member": 1},
                    {"at": 30, "action": "partition", "member": 2},
                    {"at": 50, "action": "heal", "member": 2},
                ],
            )
        )
        run_seconds(group, 11)
        assert status(group, 1) is MemberState.OFFLINE
        assert [read_only(group, i) for i in range(3)] == [OFF, ON, OFF]
        run_seconds(group, 20.1)
        assert status(group, 1) is MemberState.RECOVERING
        assert read_only(group, 1) == ON
        run_seconds(group, 29)
        assert status(group, 1) is MemberState.ONLINE
        assert read_only(group, 1) == OFF
        run_seconds(group, 51)
        assert status(group, 2) is MemberState.ERROR
        assert [read_only(group, i) for i in range(3)] == [OFF, OFF, ON]

    def test_failover_turns_the_new_primary_writable(self) -> None:
        """After a failover the new primary turns both OFF; the old one rejoins read-only."""
        group = group_of("primary-failover")
        run_seconds(group, 35)  # the primary is down, not yet expelled
        assert [read_only(group, i) for i in range(3)] == [OFF, ON, ON]
        run_seconds(group, 45)
        new = group.primary
        assert new in (1, 2)
        assert read_only(group, new) == OFF
        assert read_only(group, 3 - new) == ON
        run_seconds(group, 91)
        assert status(group, 0) is MemberState.RECOVERING
        assert read_only(group, 0) == ON
        run_seconds(group, 120)
        assert status(group, 0) is MemberState.ONLINE
        assert [read_only(group, i) for i in range(3)].count(OFF) == 1
        assert read_only(group, 0) == ON

    def test_new_primary_stays_read_only_until_its_backlog_is_applied(self) -> None:
        """A new primary with a backlog keeps super_read_only ON until it has applied it."""
        elected = min((1, 2), key=lambda i: member_uuid("t", SEED, i))
        group = group_of(
            scenario(
                workload={"rate_tps": 3000},
                appliers={"capacity_tps": 6000, "capacity_overrides": {elected: 1500}},
                events=[{"at": 10, "action": "stop", "member": 0}],
            )
        )
        run_seconds(group, 10)
        assert read_only(group, elected) == ON
        group.step()  # the primary leaves: the group elects another at once
        assert group.primary == elected
        assert read_only(group, 0) == ON  # STOP GROUP_REPLICATION turns it back on
        assert group.members[elected].queue > 0
        assert read_only(group, elected) == ON
        while group.members[elected].queue > 0:
            assert read_only(group, elected) == ON
            group.step()
        assert read_only(group, elected) == OFF
        assert read_only(group, 3 - elected) == ON

    def test_not_started_is_read_only(self) -> None:
        """A member whose GR never started is no writer."""
        assert not_started(group_of("steady"), 0).server.super_read_only


class TestFlowControl:
    def test_is_the_scenarios(self) -> None:
        """Every member, started or not, shows the scenario's flow-control variables."""
        flow: dict[str, Any] = {
            "mode": "DISABLED",
            "applier_threshold": 1000,
            "period": 2,
            "max_quota": 5000,
        }
        group = group_of(scenario(flow_control=flow))
        expected = FlowControlSettings(**flow)
        assert expected != FlowControlSettings()
        assert not_started(group, 0).server.flow_control == expected
        run_seconds(group, 3)
        assert [read(group, i).server.flow_control for i in range(3)] == [expected] * 3

    def test_defaults_without_overrides(self) -> None:
        """A scenario without [flow_control] shows MySQL's defaults."""
        group = group_of("steady")
        run_seconds(group, 1)
        assert read(group, 1).server.flow_control == FlowControlSettings()


def test_communication_information_lists_the_view_and_counts_suspicions_on_84() -> None:
    """An 8.4 member's row names its view's members as leaders and counts a crash's suspicion."""
    group = group_of(
        scenario(version="8.4.3", members=3, events=[{"at": 10, "action": "crash", "member": 2}])
    )
    run_seconds(group, 5)
    before = read(group, 0).communication
    assert before is not None
    uuids = sorted(member.uuid for member in group.members)
    assert before.leaders_preferred == tuple(uuids) == before.leaders_actual
    assert (before.write_concurrency, before.protocol_version) == (10, "8.0.27")
    assert before.failure_suspicions == "{" + ",".join(f'"{u}":0' for u in uuids) + "}"
    run_seconds(group, 17)  # member 2 suspected at 15 s, still in the view until 20 s
    during = read(group, 0).communication
    assert during is not None
    assert f'"{group.members[2].uuid}":1' in (during.failure_suspicions or "")
    assert read(group, 2).communication is None  # its server is down: no row


def test_communication_information_is_none_before_8_0_27_and_without_the_84_column() -> None:
    """An 8.0.26 member has no such table; an 8.0.36 member's lacks the suspicions column."""
    old = group_of(scenario(version="8.0.26"))
    run_seconds(old, 2)
    assert read(old, 0).communication is None
    current = group_of(scenario(version="8.0.36"))
    run_seconds(current, 2)
    info = read(current, 0).communication
    assert info is not None
    assert info.failure_suspicions is None
