"""The QUOTA step of Group Replication's flow control, checked by hand (``flow_control_step``)."""

from __future__ import annotations

import pytest

from grstats.agent.sim.flow_control import (
    MAXTPS,
    MemberPeriod,
    Quota,
    StatsMessage,
    StatsTable,
    needs_flow_control,
    next_quota,
)
from grstats.agent.sources import FlowControlSettings

DEFAULTS = FlowControlSettings()


def member(
    waiting_apply: int = 0,
    applied: int = 0,
    certified: int = 0,
    local: int = 0,
    waiting_cert: int = 0,
) -> MemberPeriod:
    """One member's period, with the deltas given."""
    return MemberPeriod(waiting_cert, waiting_apply, certified, applied, local)


def test_no_member_over_threshold_means_no_quota() -> None:
    """With no member over a threshold and no quota before, writes are not throttled."""
    assert (
        next_quota(Quota(), [member(waiting_apply=25000, applied=3000, certified=3000)], DEFAULTS)
        == 0
    )


def test_over_threshold_is_strict() -> None:
    """A member is over the threshold only above it (waiting_apply > 25000)."""
    assert not needs_flow_control(member(waiting_apply=25000), DEFAULTS)
    assert needs_flow_control(member(waiting_apply=25001), DEFAULTS)
    assert needs_flow_control(member(waiting_cert=25001), DEFAULTS)
    assert not needs_flow_control(member(waiting_apply=10**6), FlowControlSettings(mode="DISABLED"))


def test_hold_uses_the_slowest_applier_times_hold() -> None:
    """Held (``flow_control_step``): quota = min capacity x (1 - hold%); 1500 tps gives 1350."""
    members = [
        member(applied=0, certified=3000, local=3000),
        member(applied=3000, certified=3000),
        member(waiting_apply=30000, applied=1500, certified=3000),
    ]
    assert next_quota(Quota(), members, DEFAULTS) == 1350


def test_hold_never_goes_below_the_throttle_floor() -> None:
    """lim_throttle is 5% of the smaller threshold (1250): a 600 tps applier still gives 1125."""
    members = [
        member(certified=3000, local=3000),
        member(waiting_apply=30000, applied=600, certified=3000),
    ]
    assert next_quota(Quota(), members, DEFAULTS) == 1125


def test_safe_capacity_caps_the_slowest_applier() -> None:
    """safe_capacity, the smallest positive delta of any member, caps min_capacity."""
    members = [
        member(certified=1400, local=1400),
        member(waiting_apply=30000, applied=1500, certified=1400),
    ]
    assert next_quota(Quota(), members, DEFAULTS) == 1260


def test_writers_share_the_quota() -> None:
    """With several writing members and member_quota_percent 0 the quota is divided evenly."""
    members = [
        member(certified=3000, local=1000),
        member(certified=3000, local=1000),
        member(waiting_apply=30000, applied=2000, certified=3000),
    ]
    assert next_quota(Quota(), members, DEFAULTS) == 900  # 2000 x 0.9 / 2 writers


def test_quota_overrun_is_paid_back() -> None:
    """Commits over last period's quota (extra) are taken off the next quota."""
    members = [
        member(certified=3000, local=3000),
        member(waiting_apply=30000, applied=1500, certified=3000),
    ]
    assert next_quota(Quota(size=1000, used=1100), members, DEFAULTS) == 1250


def test_release_grows_by_half_then_stops_at_maxtps() -> None:
    """Released: quota x 1.5 per period, at least +1, until it would pass MAXTPS, then 0."""
    assert next_quota(Quota(size=1350), [], DEFAULTS) == 2025
    assert next_quota(Quota(size=1), [], DEFAULTS) == 2
    assert next_quota(Quota(size=MAXTPS // 3 * 2 + 3), [], DEFAULTS) == 0  # x1.5 > MAXTPS


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        pytest.param(FlowControlSettings(max_quota=1000), 1000, id="max-quota-caps"),
        pytest.param(FlowControlSettings(min_quota=2000), 1800, id="min-quota-floors"),
        pytest.param(FlowControlSettings(hold_percent=50), 750, id="hold-percent"),
        pytest.param(FlowControlSettings(mode="DISABLED"), 0, id="disabled"),
    ],
)
def test_settings(settings: FlowControlSettings, expected: int) -> None:
    """The group_replication_flow_control_* variables change the quota as flow_control_step does."""
    members = [
        member(certified=3000, local=3000),
        member(waiting_apply=30000, applied=1500, certified=3000),
    ]
    assert next_quota(Quota(), members, settings) == expected


def test_lim_throttle_is_truncated_to_an_integer() -> None:
    """flow_control_step casts lim_throttle to int64: thresholds 250 give 12, so quota 10, not 11."""
    settings = FlowControlSettings(certifier_threshold=250, applier_threshold=250)
    members = [
        member(certified=5, local=5),
        member(waiting_apply=300, applied=5, certified=5),
    ]
    assert next_quota(Quota(), members, settings) == 10  # int(12 x 0.9); 12.5 x 0.9 gives 11


def writer_message(step: int) -> StatsMessage:
    """The writer's message after ``step`` periods of 3000 tps, its own queue over 25000."""
    return StatsMessage(0, 30000, certified=3000 * step, applied=3000 * step, local=3000 * step)


def slow_message(step: int) -> StatsMessage:
    """The slow member's message after ``step`` periods of applying 1500 tps."""
    return StatsMessage(0, 30000, certified=3000 * step, applied=1500 * step, local=0)


class TestStatsTable:
    def test_a_silent_member_keeps_its_last_stats_for_10_steps(self) -> None:
        """flow_control_step purges an entry only when stamp < m_stamp - 10: 10 held quotas read it."""
        table = StatsTable()
        for step in range(1, 12):
            table.step()
            table.receive(0, writer_message(step), DEFAULTS)
            table.receive(1, slow_message(step), DEFAULTS)
        quotas = []
        for step in range(12, 24):  # member 1 is silent from here on
            holds = table.step()
            quotas.append(next_quota(Quota(), table.held_periods(), DEFAULTS, holds))
            table.receive(0, writer_message(step), DEFAULTS)
        assert quotas == [1350] * 10 + [2700] * 2  # its 1500 tps, then the writer's 3000 alone

    def test_deltas_are_counted_from_the_last_message(self) -> None:
        """update_member_stats: a member whose counters restarted reports negative deltas."""
        table = StatsTable()
        table.receive(1, slow_message(10), DEFAULTS)
        table.step()
        table.receive(1, slow_message(1), DEFAULTS)  # restarted: counters from 0 again
        table.step()
        (period,) = table.held_periods()
        assert period.delta_applied == 1500 - 15000
        assert period.delta_certified == 3000 - 30000

    def test_holds_count_the_messages_over_a_threshold(self) -> None:
        """m_holds_in_period counts each message over a threshold received since the last step."""
        table = StatsTable()
        table.receive(0, writer_message(1), DEFAULTS)
        table.receive(1, slow_message(1), DEFAULTS)
        table.receive(2, StatsMessage(0, 10, 0, 0, 0), DEFAULTS)
        assert table.step() == 2
        assert table.step() == 0
