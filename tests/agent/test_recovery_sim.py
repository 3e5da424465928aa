"""The ETA of a recovering member, held to the simulator's truth (issue 48, point 2).

The simulator is the truth: a copy of the agents' group, stepped tick by tick (0.1 s), says when
member 2 turns ONLINE; every ETA its agent gave while it recovered must put the end within
``STATED_ERROR`` of that (:func:`~grstats.agent.recovery.within_stated_error`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grstats.agent.recovery import within_stated_error
from grstats.agent.sim.group import TICKS_PER_SECOND, SimulatedGroup
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.status import Progress, group_status
from grstats.core.rows import MemberState
from tests.agent.test_group_status import crash, custom, running, seconds, start
from tests.agent.test_runtime import START_S, start_group, stop_all

if TYPE_CHECKING:
    from grstats.agent.runtime import Agent
    from grstats.agent.sim.scenario import Scenario
    from tests.agent.test_runtime import Group

RECOVERING = 2  #: the member that crashes and recovers


def online_at(scenario: Scenario, after_s: float) -> float:
    """When, in seconds from the group's start, member 2 ends a recovery begun after ``after_s``."""
    group = SimulatedGroup(scenario, 1, int(START_S * 1_000_000))
    group.advance_to(round(after_s * TICKS_PER_SECOND))
    for awaited in (MemberState.RECOVERING, MemberState.ONLINE):
        while group.members[RECOVERING].status is not awaited:
            group.step()
    return group.tick / TICKS_PER_SECOND


async def progress_while_recovering(group: Group, until_s: int) -> list[tuple[float, Progress]]:
    """Member 2's progress as its agent gives it, at each period while its row says RECOVERING."""
    agent = group.agents[RECOVERING]
    seen = []
    while seconds(group) < until_s:
        await group.rounds(1)
        found = agent.recovery.progress().get(agent.member_id)
        if found is not None and own_state(agent) == "RECOVERING":
            seen.append((seconds(group), found))
    return seen


def own_state(agent: Agent) -> str:
    """The member's state in its agent's status row."""
    _, rows = group_status(agent.state, agent.local, 0, 10**12)
    return next(row.member_state for row in rows if row.member_id == agent.member_id)


def check_etas(seen: list[tuple[float, Progress]], ends_s: float) -> list[float]:
    """Every ETA given is within the stated error of the end; return the errors, in seconds."""
    errors = []
    for at_s, found in seen:
        assert found.left > 0, (at_s, found)
        if found.eta_s is None:
            continue
        actual = ends_s - at_s
        assert within_stated_error(found.eta_s, actual), (at_s, found, actual)
        errors.append(round(found.eta_s - actual, 3))
    return errors


async def test_crash_rejoin_member_2_recovers_within_its_eta() -> None:
    """crash-rejoin: member 2's agent gives an ETA while it recovers, and recovery ends within it."""
    group = await start_group(3, scenario="crash-rejoin", memory=True)
    try:
        await group.rounds(5)
        seen = await progress_while_recovering(group, 75)
    finally:
        await stop_all(group)
    ends = online_at(load_scenario("crash-rejoin").with_members(3), 60)
    assert 60 < ends < 70
    assert [found.eta_s for _, found in seen[1:]], seen  # an ETA from the second period on
    assert all(found.eta_s is not None for _, found in seen[1:]), seen
    assert seen[0][1].left > 10_000
    errors = check_etas(seen, ends)
    print("crash-rejoin: ends", ends, "ETA errors", errors)  # for the record (pytest -s)
    assert errors


async def test_a_slow_applier_recovers_for_half_a_minute_within_its_eta() -> None:
    """Appliers of 500 tps under 250 tps: about 30 s of recovery, every ETA within the error."""
    scenario = custom(
        3,
        workload={"rate_tps": 250},
        appliers={"capacity_tps": 500},
        events=[crash(RECOVERING, 30), {"at": 60, "action": "start", "member": RECOVERING}],
    )
    async with running(await start(scenario)) as group:
        seen = await progress_while_recovering(group, 110)
    ends = online_at(scenario, 60)
    assert ends - 60 > 20
    errors = check_etas(seen, ends)
    print("slow applier: ends", ends, "ETA errors", errors)  # for the record (pytest -s)
    assert len(errors) >= len(seen) - 1 >= 20
    lefts = [found.left for _, found in seen]
    assert lefts == sorted(lefts, reverse=True)  # it only falls
    rates = [found.rate for _, found in seen[1:]]
    assert all(rate is not None and 450 <= rate <= 550 for rate in rates), rates


def drained_at(scenario: Scenario, after_s: float) -> float:
    """When, in seconds from the group's start, member 2's applier queue first empties after ``after_s``."""
    group = SimulatedGroup(scenario, 1, int(START_S * 1_000_000))
    group.advance_to(round(after_s * TICKS_PER_SECOND))
    while group.members[RECOVERING].queue > 0:
        group.step()
    return group.tick / TICKS_PER_SECOND


async def test_every_agent_gives_the_eta_of_an_online_members_backlog() -> None:
    """Member 2 applies 750 tps under 1500 tps; at 20 s the primary slows to 250: each agent's ETA holds."""
    scenario = custom(
        3,
        workload={"rate_tps": 1500},
        appliers={"capacity_tps": 3000, "capacity_overrides": {str(RECOVERING): 750}},
        flow_control={"mode": "DISABLED"},
        events=[{"at": 20, "action": "rate", "member": 0, "value": 250}],
    )
    async with running(await start(scenario)) as group:
        slow = group.agents[RECOVERING].member_id
        seen: dict[int, list[tuple[float, Progress]]] = {0: [], 2: []}
        growing: list[Progress] = []
        while seconds(group) < 60:
            await group.rounds(1)
            for index, kept in seen.items():
                found = group.agents[index].recovery.progress().get(slow)
                assert found is not None
                if seconds(group) <= 20:
                    growing.append(found)
                elif found.left > 0:
                    kept.append((seconds(group), found))
    ends = drained_at(scenario, 20)
    assert 40 < ends < 60
    assert growing
    assert all(found.eta_s is None for found in growing[4:]), growing
    for index, kept in seen.items():
        errors = check_etas(kept, ends)
        assert len(errors) >= len(kept) - 2 >= 15, (index, kept)
        print("backlog at agent", index, "ends", ends, "ETA errors", errors)  # for the record
