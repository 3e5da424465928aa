"""Issue 34, point 4: a stalled stable set, shown by real agents over the simulator.

The simulator computes the stable set as GR does: a round every 60 s that completes once every
member of the view has broadcast its ``gtid_executed`` (agent/sim/group.py), so a member
UNREACHABLE in the view stops it, and its certification info grows until the member leaves.
Agents run in memory on the test clock (tests/agent/test_group_status.py's harness).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from grstats.cli.status_view import (
    STATUS_TABLES,
    GroupStatus,
    stable_set_stalled,
    stall_document,
)
from grstats.core.rows import MemberStatsRow
from grstats.core.stable_set import STALLED_AFTER_US, StableSetWatch
from tests.agent.test_group_status import (
    custom,
    ids,
    partition,
    reads_finish_within_their_period,  # noqa: F401  (autouse here too)
    run_to,
    running,
    start,
    status,
)

if TYPE_CHECKING:
    from grstats.agent.runtime import Agent

#: Member 2 is cut off at 20 s: UNREACHABLE from 25 s, expelled 150 s later (at 175 s).
CUT_AT_S, EXPEL_TIMEOUT_S = 20, 150


def rows_validating(agent: Agent) -> int:
    """COUNT_TRANSACTIONS_ROWS_VALIDATING of the agent's own member, as last read."""
    local = agent.local
    assert local is not None
    return local.stats.count_transactions_rows_validating


def status_of(agent: Agent) -> GroupStatus:
    """What ``grstats query status`` reads from the agent: its two status tables."""
    tables = agent.tables(extended=False)
    wire = {}
    for name in STATUS_TABLES:
        columns, rows = tables[name]
        wire[name] = ([column.name for column in columns], rows)
    return GroupStatus.from_tables("agent-0:7400", wire)


async def test_an_unreachable_member_stalls_the_stable_set_until_it_is_expelled() -> None:
    """From two broadcast rounds on, the majority's agents name the UNREACHABLE member; it clears."""
    scenario = custom(
        3, group={"expel_timeout_s": EXPEL_TIMEOUT_S}, events=[partition(2, CUT_AT_S)]
    )
    async with running(await start(scenario)) as group:
        cut = ids(group)[2]
        majority = group.agents[:2]
        await run_to(group, 110)
        assert all(status(agent)["STABLE_SET_STALLED_S"] is None for agent in group.agents)
        await run_to(group, 119)
        before = rows_validating(majority[0])
        await run_to(group, 170)
        for agent in majority:
            row = status(agent)
            assert row["STABLE_SET_STALLED_S"] >= STALLED_AFTER_US // 1_000_000
            assert row["STABLE_SET_HELD_BY"] == cut
        # The simulator's own rows: ROWS_VALIDATING of member 0 grew over the stall.
        row = status(majority[0])
        assert row["ROWS_VALIDATING_PER_MINUTE"] is not None
        assert row["ROWS_VALIDATING_PER_MINUTE"] > 0
        assert rows_validating(majority[0]) > before
        shown = stable_set_stalled(status_of(majority[0]))
        assert cut in shown
        assert "UNREACHABLE" in shown
        assert stall_document(status_of(majority[0])) == {
            "seconds": row["STABLE_SET_STALLED_S"],
            "held_back_by": [cut],
            "rows_validating_per_minute": row["ROWS_VALIDATING_PER_MINUTE"],
        }
        await run_to(group, 185)  # expelled at 175 s; the round at 180 s completes without it
        assert all(status(agent)["STABLE_SET_STALLED_S"] is None for agent in majority)


async def test_a_healthy_group_never_shows_a_stall() -> None:
    """Three ONLINE members certifying for 130 s: the stable set advances every round."""
    async with running(await start(custom(3))) as group:
        for at in (70, 130):
            await run_to(group, at)
            assert all(status(agent)["STABLE_SET_STALLED_S"] is None for agent in group.agents)
            assert all(status(agent)["STABLE_SET_HELD_BY"] == "" for agent in group.agents)


def _row(committed: str, checked: int, rows: int) -> MemberStatsRow:
    """A stats row with the stable set, CHECKED and ROWS_VALIDATING given."""
    return MemberStatsRow(
        transactions_committed_all_members=committed,
        count_transactions_checked=checked,
        count_transactions_rows_validating=rows,
    )


UUID = "8a94f357-aab4-11df-86ab-c80aa9429562"


class TestWatch:
    def test_unchanged_while_certifying_is_a_stall_after_two_rounds(self) -> None:
        """The set unchanged for 120 s while CHECKED grows: a stall, with the rows' rate."""
        watch = StableSetWatch()
        for second in range(181):
            watch.observe(
                second * 1_000_000, _row(f"{UUID}:1-5", 100 + second, 10 * second), online=True
            )
        assert watch.stall(119_000_000) is None
        found = watch.stall(180_000_000)
        assert found is not None
        assert found.for_us == 180_000_000
        assert found.certified == 180
        assert found.rows_per_minute == 600

    def test_an_idle_group_is_not_stalled(self) -> None:
        """No transaction certified since the set last changed: nothing to advance to."""
        watch = StableSetWatch()
        for second in range(200):
            watch.observe(second * 1_000_000, _row(f"{UUID}:1-5", 100, 50), online=True)
        assert watch.stall(200_000_000) is None

    def test_an_advance_restarts_the_count(self) -> None:
        """A new stable set at 150 s: no stall until 270 s."""
        watch = StableSetWatch()
        for second in range(300):
            committed = f"{UUID}:1-5" if second < 150 else f"{UUID}:1-500"
            watch.observe(second * 1_000_000, _row(committed, second, second), online=True)
            if second == 260:
                assert watch.stall(second * 1_000_000) is None
        assert watch.stall(299_000_000) is not None

    @pytest.mark.parametrize("committed", ["", f"{UUID}:1-5"])
    def test_a_member_not_online_forgets(self, committed: str) -> None:
        """A RECOVERING member (no stable set) or any not ONLINE: the watch starts over."""
        watch = StableSetWatch()
        for second in range(200):
            watch.observe(second * 1_000_000, _row(f"{UUID}:1-5", second, second), online=True)
        watch.observe(200_000_000, _row(committed, 200, 200), online=False)
        assert watch.stall(200_000_000) is None
