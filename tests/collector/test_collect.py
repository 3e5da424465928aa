"""The collect loop with real agents and a real spool: interval, limits, stop, no agent at start."""

from __future__ import annotations

import asyncio
import itertools
import socket
import time
from typing import TYPE_CHECKING, Any

import pytest
import structlog
from structlog.testing import capture_logs

from grstats.agent.runtime import Agent
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.simulated import SimulatedSource
from grstats.cli.demo import free_ports
from grstats.collector.collect import Limits, collect
from grstats.collector.poller import Poller, PollerSettings
from grstats.collector.spool import SpoolWriter, read_segment, sealed_segments
from grstats.core.errors import ConfigError
from tests.agent.test_runtime import Group, Settings, start_group

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from grstats.collector.collect import Progress


@pytest.fixture(name="group")
async def _group() -> AsyncIterator[Group]:
    group = await start_group(3)
    await group.rounds(2)
    yield group
    for agent in group.agents:
        await agent.stop(grace_s=0)


async def run(
    tmp_path: Path, nodes: tuple[str, ...], limits: Limits, stop: asyncio.Event | None = None
) -> tuple[Progress, list[dict[str, Any]]]:
    """Collect from ``nodes`` into a spool under ``tmp_path``; return progress and the records."""
    poller = Poller(PollerSettings(nodes, interval_s=1.0, timeout_s=1.5))
    with SpoolWriter(tmp_path / "spool") as writer:
        try:
            progress = await collect(
                [poller],
                writer,
                stop or asyncio.Event(),
                limits=limits,
                logger=structlog.get_logger(),
            )
        finally:
            await poller.aclose()
    records = [r for path in sealed_segments(tmp_path / "spool") for r in read_segment(path)]
    return progress, records


async def test_one_snapshot_per_interval(group: Group, tmp_path: Path) -> None:
    """--count 3 gives three records one interval apart, from the first agent."""
    first = group.agents[0].address
    progress, records = await run(tmp_path, (first,), Limits(count=3))
    assert progress.snapshots == 3
    assert [r["agent"] for r in records] == [first] * 3
    stamps = [r["collected_at_us"] for r in records]
    gaps = [(later - earlier) / 1e6 for earlier, later in itertools.pairwise(stamps)]
    assert all(0.8 <= gap <= 1.5 for gap in gaps), gaps


async def test_overrun_skips_ticks(group: Group, tmp_path: Path) -> None:
    """A first poll slowed by a hung node skips the tick it covered instead of catching up."""
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(8)
        nodes = (f"127.0.0.1:{hung.getsockname()[1]}", group.agents[0].address)
        with capture_logs() as logs:
            progress, records = await run(tmp_path, nodes, Limits(count=3))
    assert progress.skipped_ticks == 1
    assert [e["missed"] for e in logs if e["event"] == "polls_skipped"] == [1]
    stamps = [r["collected_at_us"] / 1e6 for r in records]
    assert stamps[1] - stamps[0] >= 0.3  # the next poll waited for the grid's next tick
    assert 0.8 <= stamps[2] - stamps[1] <= 1.5


async def test_duration_stops_the_loop(group: Group, tmp_path: Path) -> None:
    """--duration 2.5 with a 1 s interval takes the snapshots at 0, 1 and 2 s, then stops."""
    started = time.monotonic()
    progress, records = await run(tmp_path, (group.agents[1].address,), Limits(duration_s=2.5))
    assert 2.4 <= time.monotonic() - started < 4
    assert progress.snapshots == len(records) == 3


async def test_stop_interrupts_a_poll(tmp_path: Path) -> None:
    """Setting stop ends the loop at once, even while it waits for an agent."""
    stop = asyncio.Event()
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(8)
        asyncio.get_running_loop().call_later(0.3, stop.set)
        started = time.monotonic()
        progress, records = await run(
            tmp_path, (f"127.0.0.1:{hung.getsockname()[1]}",), Limits(), stop
        )
    assert time.monotonic() - started < 1.0
    assert (progress.snapshots, records) == (0, [])


async def test_keeps_trying_until_an_agent_answers(tmp_path: Path) -> None:
    """With no agent up at start it keeps polling, says so once, and collects when one starts."""
    port = free_ports(1)[0]
    scenario = load_scenario("steady").with_members(1)
    source = SimulatedSource(scenario, 0, seed=1, group_start_s=time.time() - 5)
    agent = Agent(Settings(listen=f"127.0.0.1:{port}"), source)

    async def start_later() -> None:
        await asyncio.sleep(2.2)
        await agent.start()

    starter = asyncio.create_task(start_later())
    try:
        with capture_logs() as logs:
            progress, records = await asyncio.wait_for(
                run(tmp_path, (f"127.0.0.1:{port}",), Limits(count=2)), timeout=30
            )
    finally:
        await starter
        await agent.stop(grace_s=0)
    assert progress.failed_polls >= 2
    assert [e["event"] for e in logs].count("no_agent_answered") == 1
    assert any(e["event"] == "agent_answering" for e in logs)
    assert len(records) == 2
    assert records[0]["agent_member"] == agent.member_id


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"count": 0}, "count: 0 is not a whole number of snapshots >= 1"),
        ({"count": 2.5}, "count: 2.5"),
        ({"duration_s": 0}, "duration_s: 0 is not a number of seconds > 0"),
        ({"summary_every_s": -1}, "summary_every_s: -1"),
    ],
)
def test_limits_name_the_bad_field(kwargs: dict[str, Any], message: str) -> None:
    """Invalid limits are refused with the field and its value."""
    with pytest.raises(ConfigError) as caught:
        Limits(**kwargs)
    assert str(caught.value).startswith(message)
