"""SimulatedSource: the StatsSource of one simulated member, driven by a controllable clock."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources import simulated
from grstats.agent.sources.simulated import SimulatedSource
from grstats.core.errors import ConfigError, SourceError, SourceUnavailable

if TYPE_CHECKING:
    from collections.abc import Iterator

    from grstats.agent.sources import StatsSource

START = 1_700_000_000.0


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def source(member: int, clock: Clock, name: str = "crash-rejoin") -> SimulatedSource:
    """A source for ``member`` of the scenario's group, started at START."""
    return SimulatedSource(load_scenario(name), member, seed=3, group_start_s=START, clock=clock)


async def test_is_a_stats_source() -> None:
    """SimulatedSource satisfies the StatsSource protocol."""
    checked: StatsSource = source(0, Clock(START))
    assert checked is not None


async def test_reads_follow_the_clock() -> None:
    """Each read steps the group to the clock: counters grow, the read time follows."""
    clock = Clock(START + 10)
    member = source(1, clock)
    first = await member.read()
    clock.now += 5
    second = await member.read()
    assert second.read_at_us - first.read_at_us == 5_000_000
    assert second.stats.count_transactions_checked > first.stats.count_transactions_checked > 0
    assert second.member_id == member.group.members[1].uuid
    assert [row.member_state for row in second.view.members] == ["ONLINE"] * 3


async def test_agents_of_one_group_agree() -> None:
    """Two agents' sources of the same group, read at different times, agree on GTIDs."""
    clock = Clock(START + 20)
    primary, secondary = source(0, clock), source(1, clock)
    early = await primary.read()
    clock.now = START + 25
    late = await secondary.read()
    catch_up = await primary.read()
    assert early.gtid_executed <= late.gtid_executed
    assert catch_up.gtid_executed == late.gtid_executed
    assert (
        catch_up.stats.last_conflict_free_transaction == late.stats.last_conflict_free_transaction
    )


async def test_crashed_member_is_unavailable_then_back() -> None:
    """While the scenario has the member's server down, reads raise SourceUnavailable."""
    clock = Clock(START + 31)
    crashed = source(2, clock)
    with pytest.raises(SourceUnavailable, match="is down"):
        await crashed.read()
    clock.now = START + 61
    back = await crashed.read()
    assert back.own_row() is not None
    assert back.own_row().member_state == "RECOVERING"  # type: ignore[union-attr]


async def test_before_the_group_starts() -> None:
    """Before the group's start, Group Replication has not started: MySQL's default rows."""
    read = await source(0, Clock(START - 60)).read()
    assert [row.member_state for row in read.view.members] == ["OFFLINE"]
    assert read.stats.count_transactions_checked == 0
    assert not read.gtid_executed
    assert read.fault is not None
    assert read.fault.kind == "gr_not_started"


async def test_the_group_name_is_the_label() -> None:
    """A named group's reads carry its name as group_label, before its start too; its UUIDs are its own."""
    clock = Clock(START - 1)
    steady = load_scenario("steady")
    named = SimulatedSource(steady, 0, 3, START, clock, group_name="orders")
    assert (await named.read()).view.group_label == "orders"
    clock.now = START + 2
    read = await named.read()
    assert (read.view.group_label, read.view.group_name) == ("orders", named.group.group_name)
    unnamed = source(0, Clock(START + 2), "steady")
    assert (await unnamed.read()).view.group_label == ""
    assert read.member_id != unnamed.group.members[0].uuid
    with pytest.raises(ConfigError, match=r"^group_name: ' orders' is not a group name"):
        SimulatedSource(steady, 0, 3, START, group_name=" orders")


def test_member_index_out_of_the_group() -> None:
    """A member index outside the group is a ConfigError naming member_index."""
    with pytest.raises(ConfigError, match=r"^member_index: 3"):
        source(3, Clock(START))


async def test_read_after_close() -> None:
    """After aclose, a read is an error."""
    member = source(0, Clock(START + 1))
    await member.aclose()
    with pytest.raises(SourceError):
        await member.read()


async def test_step_ahead_steps_the_group_between_reads() -> None:
    """With step_ahead the group follows the clock without reads, and aclose stops it."""
    clock = Clock(START + 10)
    member = SimulatedSource(
        load_scenario("steady"), 0, seed=3, group_start_s=START, clock=clock, step_ahead=True
    )
    await member.read()
    read_tick = member.group.tick
    clock.now += 3
    for _ in range(100):  # the stepper wakes every 0.1 s
        if member.group.tick == read_tick + 30:
            break
        await asyncio.sleep(0.02)
    assert member.group.tick == read_tick + 30
    await member.aclose()
    clock.now += 3
    await asyncio.sleep(0.25)
    assert member.group.tick == read_tick + 30


async def test_the_stepper_lets_other_work_run_within_a_tick(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Stepping ahead on the event loop pauses within each tick, so queries wait for a part only.

    With a pause after every part, a task that counts the loop's turns runs between every two
    parts of each tick stepped (a whole step would leave the count unchanged within a tick).
    """
    monkeypatch.setattr(simulated, "PAUSE_EVERY_S", 0.0)
    clock = Clock(START + 10)
    member = SimulatedSource(
        load_scenario("steady").with_members(9),
        0,
        seed=3,
        group_start_s=START,
        clock=clock,
        step_ahead=True,
    )
    await member.read()
    read_tick = member.group.tick
    turns = 0
    turns_at_parts: list[list[int]] = []  # per tick stepped: the count at each of its parts
    whole_tick = member.group.step_in_parts

    def recorded_parts() -> Iterator[None]:
        turns_at_parts.append([])
        for part in whole_tick():
            turns_at_parts[-1].append(turns)
            yield part

    monkeypatch.setattr(member.group, "step_in_parts", recorded_parts)

    async def count_turns() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    counter = asyncio.create_task(count_turns())
    for step in range(1, 11):  # one tick at a time, as in real time
        tick = read_tick + step
        clock.now = START + 10 + step / 10 + 0.001
        for _ in range(100):  # the stepper wakes every 0.1 s
            if member.group.tick == tick:
                break
            await asyncio.sleep(0.02)
    counter.cancel()
    await member.aclose()
    assert member.group.tick == read_tick + 10
    assert len(turns_at_parts) == 10
    for counts in turns_at_parts:
        assert len(counts) == 10  # certification and 9 appliers
        assert counts == sorted(set(counts)), counts


async def test_without_step_ahead_only_reads_step_the_group() -> None:
    """By default the group moves only when it is read."""
    clock = Clock(START + 10)
    member = source(0, clock, "steady")
    await member.read()
    read_tick = member.group.tick
    clock.now += 3
    await asyncio.sleep(0.25)
    assert member.group.tick == read_tick


async def test_a_long_catch_up_stops_soon_after_the_read_is_cancelled() -> None:
    """Catching up on a group that started 30 days ago stops within a chunk when cancelled.

    A stopped agent cancels its read; the worker thread must not go on stepping for minutes
    (asyncio.run waits for it before the process can exit).
    """
    member = source(0, Clock(START + 30 * 86_400), name="steady")
    reading = asyncio.create_task(member.read())
    await asyncio.sleep(0.5)
    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading
    seen = [member.group.tick]
    for _ in range(100):  # the chunk under way when cancelled ends, and no other starts
        await asyncio.sleep(0.2)
        seen.append(member.group.tick)
        if seen[-1] == seen[-2]:
            break
    assert seen[-1] == seen[-2], f"still stepping after {0.2 * len(seen):.1f} s: {seen}"
    assert seen[-1] < 30 * 86_400 * 10  # 10 ticks a second: far from caught up
