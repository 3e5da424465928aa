"""The agent's own health on /metrics, the group's flow-control series, and when series are built."""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING

import pytest

from grstats import __version__
from grstats.agent.metrics import TablesCollector
from grstats.agent.runtime import Agent
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.memory import MemorySource
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.status import flow_control_thresholds
from grstats.agent.transports import MemoryNetwork
from tests.agent.test_group_status import (
    THRESHOLD,
    ids,
    member_status,
    running,
    slow_secondary,
    start,
    status,
)
from tests.agent.test_metrics_series import export_everything, rendered, value
from tests.agent.test_runtime import (
    START_S,
    Clock,
    _start_without_loop,
    settings,
    start_group,
    stop_all,
)
from tests.agent.test_served import NOW, A, B, C, group_view, learn, local_state, member
from tests.agent.test_status import local, peer
from tests.agent.test_status import settings as server_settings

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from grstats.agent.metrics_series import SeriesInput
    from grstats.core.model import MemberSnapshot

#: How long each read of the slow source takes.
READ_S = 0.02


class SlowSource(MemorySource):
    """A MemorySource whose reads take READ_S of real time, failed ones too."""

    async def read(self) -> MemberSnapshot:
        """Wait READ_S, then read as MemorySource does."""
        await asyncio.sleep(READ_S)
        return await super().read()


async def lone_agent() -> tuple[Agent, SlowSource, Clock]:
    """One started agent (loop disabled) of a simulated 3-member group, its peers absent."""
    clock = Clock()
    simulated = SimulatedSource(
        load_scenario("steady").with_members(3), 0, seed=1, group_start_s=START_S, clock=clock.s
    )
    source = SlowSource(await simulated.read())
    address = "agent-0:7400"
    agent = Agent(
        settings(advertise=address, peers=(address,)),
        source,
        transport=MemoryNetwork().transport(address),
        clock=clock.us,
    )
    await _start_without_loop(agent)
    return agent, source, clock


async def test_build_info_carries_the_version() -> None:
    """grstats_build_info is 1, labelled with grstats' version only, before any read."""
    agent, _, _ = await lone_agent()
    try:
        families = rendered(agent)
        (sample,) = families["grstats_build_info"].samples
        assert families["grstats_build_info"].type == "gauge"
        assert (sample.labels, sample.value) == ({"version": __version__}, 1.0)
    finally:
        await agent.stop(grace_s=0)


async def test_source_up_errors_and_read_duration() -> None:
    """A failed read: source_up 0 and one more error; a good one: 1; every read's time observed."""
    agent, source, clock = await lone_agent()
    try:
        seen = []
        for fail in (False, True, True, False):
            if fail:
                source.fail("server is down")
            else:
                source.recover()
            clock.seconds += 1
            await agent.run_period()
            families = rendered(agent)
            seen.append(
                (
                    value(families, "grstats_source_up"),
                    value(families, "grstats_source_read_errors_total"),
                )
            )
            assert value(families, "grstats_transactions_checked_total", member_id=agent.member_id)
        assert seen == [(1.0, 0.0), (0.0, 1.0), (0.0, 2.0), (1.0, 2.0)]
        assert families["grstats_source_read_errors"].type == "counter"
        duration = families["grstats_source_read_duration_seconds"]
        assert duration.type == "histogram"
        assert value(families, "grstats_source_read_duration_seconds_count") == 4.0
        assert value(families, "grstats_source_read_duration_seconds_sum") >= 4 * READ_S
        fast = value(families, "grstats_source_read_duration_seconds_bucket", le="0.01")
        assert fast == 0.0  # each took READ_S, over 10 ms
    finally:
        await agent.stop(grace_s=0)


async def test_peers_heard_counts_the_other_agents_heard_now() -> None:
    """Two peers heard; one falls silent for 11 periods: one; healed: two again."""
    group = await start_group(3, memory=True)
    network = group.network
    assert network is not None
    first, second, third = (agent.address for agent in group.agents)
    try:
        await group.rounds(2)
        assert [value(rendered(a), "grstats_peers_heard") for a in group.agents] == [2.0] * 3
        network.cut(third, first)
        network.cut(third, second)
        await group.rounds(11)
        heard = [value(rendered(a), "grstats_peers_heard") for a in group.agents]
        assert heard == [1.0, 1.0, 0.0]
        network.heal(third, first)
        network.heal(third, second)
        await group.rounds(2)
        assert [value(rendered(a), "grstats_peers_heard") for a in group.agents] == [2.0] * 3
    finally:
        await stop_all(group)


async def test_throttled_thresholds_and_throttling_follow_the_verdict() -> None:
    """Applier threshold 500: the series are THROTTLED, the writer's thresholds and THROTTLING."""
    async with running(await start(slow_secondary(applier_threshold=THRESHOLD))) as group:
        export_everything(*group.agents)  # every agent's own verdict
        primary = ids(group)[0]
        seen = set()
        for _ in range(15):
            await group.rounds(1)
            for agent in group.agents:
                families = rendered(agent)
                held = status(agent)["THROTTLED"] == "YES"
                seen.add(held)
                assert value(families, "grstats_group_throttled") == float(held)
                throttling = {
                    m: float(row["THROTTLING"] == "YES") for m, row in member_status(agent).items()
                }
                assert {
                    m: value(families, "grstats_member_throttling", member_id=m) for m in throttling
                } == throttling
                assert throttling[primary] == float(held)
                assert value(families, "grstats_flow_control_applier_threshold") == THRESHOLD
                assert value(families, "grstats_flow_control_certifier_threshold") == 25000
        assert seen == {True, False}


class TestFlowControlThresholds:
    """The thresholds the verdict judges with: the QUOTA writers' lowest, else MySQL's."""

    def test_the_lowest_of_each_among_the_writers(self) -> None:
        """Two primaries: the lower applier threshold of one, the lower certifier one of the other."""
        view = group_view(member(A, role="PRIMARY"), member(B, role="PRIMARY"), member(C))
        state = local_state(A, view)
        learn(state, peer(B, view, server=server_settings(applier=900, certifier=80)), NOW)
        learn(state, peer(C, view, server=server_settings(applier=1, certifier=1)), NOW)
        read = local(A, view, server=server_settings(applier=100, certifier=800))
        assert flow_control_thresholds(state, read) == (100, 80)  # C is no writer

    def test_a_disabled_writer_is_not_judged(self) -> None:
        """A writer in DISABLED mode does not count; with no other, MySQL's defaults."""
        view = group_view(member(A, role="PRIMARY"), member(B))
        state = local_state(A, view)
        read = local(A, view, server=server_settings(mode="DISABLED", applier=5, certifier=5))
        assert flow_control_thresholds(state, read) == (25000, 25000)

    def test_unknown_variables_and_no_state_are_mysqls_defaults(self) -> None:
        """A writer never heard has MySQL's defaults; so has an agent with no state yet."""
        view = group_view(member(A), member(B, role="PRIMARY"))
        state = local_state(A, view)
        learn(state, peer(B, view), NOW)  # B's variables never sent
        assert flow_control_thresholds(state, local(A, view)) == (25000, 25000)
        assert flow_control_thresholds(None, None) == (25000, 25000)


class TestTablesCollector:
    """The series are built on the agent's loop, and reused while the agent's state is unchanged."""

    @pytest.fixture(name="agent")
    async def _agent(self) -> AsyncIterator[Agent]:
        agent, _, clock = await lone_agent()
        clock.seconds += 1
        await agent.run_period()
        yield agent
        await agent.stop(grace_s=0)

    def collector(
        self, agent: Agent, version: list[int], now: list[float]
    ) -> tuple[TablesCollector, list[str]]:
        """A collector of ``agent``'s series with a version and a clock the test sets."""
        threads: list[str] = []

        def build() -> SeriesInput:
            threads.append(threading.current_thread().name)
            return agent._series_input()

        loop = asyncio.get_running_loop()
        found = TablesCollector(
            build, lambda: version[0], loop, rebuild_after_s=1.0, clock=lambda: now[0]
        )
        return found, threads

    async def test_reused_until_the_state_changes(self, agent: Agent) -> None:
        """Same version within 1 s: the same families; a new version: built again."""
        version, now = [1], [100.0]
        collector, _ = self.collector(agent, version, now)
        first = collector.families()
        now[0] += 0.9
        assert collector.families() is first
        version[0] = 2
        second = collector.families()
        assert second is not first
        assert collector.builds == 2

    async def test_rebuilt_when_older_than_the_limit(self, agent: Agent) -> None:
        """Same version, 1 s later: built again (row ages and CONNECTED move with time)."""
        version, now = [1], [100.0]
        collector, _ = self.collector(agent, version, now)
        first = collector.families()
        now[0] += 1.0
        assert collector.families() is not first
        assert collector.builds == 2

    async def test_a_scrape_from_another_thread_builds_on_the_loop(self, agent: Agent) -> None:
        """Scraped from threads, the build runs in the loop's thread, once for concurrent scrapes."""
        version, now = [1], [100.0]
        collector, threads = self.collector(agent, version, now)
        results = await asyncio.gather(*(asyncio.to_thread(collector.families) for _ in range(4)))
        assert all(result is results[0] for result in results)
        assert threads == [threading.current_thread().name]
        assert collector.builds == 1

    async def test_the_agent_rebuilds_after_each_period(self, agent: Agent) -> None:
        """The agent's version changes with every period, so a scrape after one sees new rows."""
        collector = agent.metrics.watch(
            agent._series_input, agent._version, asyncio.get_running_loop()
        )
        collector.families()
        collector.families()
        assert collector.builds == 1
        await agent.run_period()
        collector.families()
        assert collector.builds == 2
