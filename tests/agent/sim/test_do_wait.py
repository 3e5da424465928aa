"""A throttled writer in the simulated group, as ``Flow_control_module::do_wait`` holds it."""

from __future__ import annotations

import pytest

from grstats.agent.sim.group import TICKS_PER_SECOND, SimulatedGroup
from tests.agent.sim.test_group import group_of, scenario

CLIENTS = 4
HOLD = 0.9  # 1 - group_replication_flow_control_hold_percent (10) / 100


def throttled_group(period: int = 1, rate_tps: int = 1000) -> SimulatedGroup:
    """The primary wants 1000 tps, member 2 applies 500: its queue passes 1000 within seconds."""
    return group_of(
        scenario(
            workload={"rate_tps": rate_tps, "clients": CLIENTS},
            appliers={"capacity_tps": 4000, "capacity_overrides": {"2": 500}},
            flow_control={"applier_threshold": 1000, "certifier_threshold": 1000, "period": period},
        )
    )


def held_periods(group: SimulatedGroup, periods: int) -> list[tuple[int, int, list[int]]]:
    """(quota, commits, waiting commits' release ticks) of each 1 s period once the writer waits."""
    writer = group.members[0]
    for _ in range(60):  # until a period ends with commits waiting: the writer is held
        group.advance_to(group.tick + TICKS_PER_SECOND)
        if writer.waiting:
            break
    else:
        pytest.fail("no commit waited in the first 60 s")
    seen = []
    for _ in range(periods):
        quota, proposed = writer.quota, writer.local_proposed
        group.advance_to(group.tick + TICKS_PER_SECOND)
        seen.append((quota, writer.local_proposed - proposed, list(writer.waiting)))
    return seen


class TestDoWait:
    def test_commits_over_the_quota_wait_for_the_step_then_commit(self) -> None:
        """do_wait: commits over the quota block their sessions until the step; none is dropped."""
        group = throttled_group()
        seen = held_periods(group, 8)
        for period, (quota, commits, waiting) in enumerate(seen, start=1):
            # the quota, plus the commits that waited through the period before
            assert commits == quota + CLIENTS
            # every session waits at the end of the period; the step's broadcast frees them
            assert waiting == [group.tick - (len(seen) - period) * TICKS_PER_SECOND] * CLIENTS

    def test_the_overshoot_comes_off_the_next_quota(self) -> None:
        """flow_control_step: the held quota is lowered by extra_quota, the commits that waited."""
        group = throttled_group()
        seen = held_periods(group, 6)  # still held: member 2's queue stays over 1000
        for (_, commits, _), (quota, _, _) in zip(seen, seen[2:], strict=False):
            # min_capacity: the commits two periods back (their message is read one step after
            # it is sent), or member 2's 500 tps; the held quota is 90% of it less the overshoot
            assert quota == int(min(commits, 500) * HOLD) - CLIENTS

    def test_a_wait_lasts_at_most_one_second(self) -> None:
        """do_wait waits 1 s at most (set_timespec): with a 2 s period commits go on before the step."""
        group = throttled_group(period=2, rate_tps=2000)
        writer = group.members[0]
        step_ticks = 2 * TICKS_PER_SECOND
        for _ in range(60 * TICKS_PER_SECOND):  # until commits begin to wait between steps
            group.advance_to(group.tick + 1)
            if writer.waiting and group.tick % step_ticks != 0:
                break
        else:
            pytest.fail("no commit waited in the first 60 s")
        began = group.tick - 1  # the tick whose commits began to wait
        timeout = began + TICKS_PER_SECOND
        assert writer.waiting == [timeout] * CLIENTS
        assert timeout // step_ticks == began // step_ticks  # the quota ran out early: no step
        quota, proposed = writer.quota, writer.local_proposed
        group.advance_to(timeout + 1)
        assert writer.quota == quota
        assert writer.local_proposed - proposed == CLIENTS
        # still over the quota: each session's next commit waits again
        assert writer.waiting == [timeout + TICKS_PER_SECOND] * CLIENTS
