"""Agents whose clocks disagree, in memory; GTID sets of one instant.

Restarts on a clock stepped back, relayed offsets, skew named in a warning, in ``query status``
and in a metric, and every member's gtid_executed sampled on one mark. Each agent gets its own clock (the test's clock plus a skew); the simulated sources read the
test's clock, the true time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from structlog.testing import capture_logs

from grstats.agent.metrics_series import member_families
from grstats.agent.runtime import Agent
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.transports import MemoryNetwork
from grstats.cli.status_view import GroupStatus, render_status
from tests.agent.test_runtime import START_S, Clock, Group, settings, stop_all

if TYPE_CHECKING:
    from collections.abc import Sequence

    from grstats.agent.transports.memory import MemoryTransport

SECOND = 1_000_000


def address(index: int) -> str:
    """The address of agent ``index`` on the in-memory network."""
    return f"agent-{index}:7400"


def skewed_agent(
    group_size: int, index: int, clock: Clock, skew_us: int, transport: MemoryTransport
) -> Agent:
    """Agent ``index`` of a simulated group, on ``transport``, its clock ``skew_us`` off."""
    addresses = tuple(address(i) for i in range(group_size))
    size = load_scenario("steady").with_members(group_size)
    source = SimulatedSource(size, index, seed=1, group_start_s=START_S, clock=clock.s)
    return Agent(
        settings(advertise=addresses[index], peers=addresses),
        source,
        transport=transport,
        clock=lambda: clock.us() + skew_us,
    )


async def start_skewed(skews_us: Sequence[int]) -> Group:
    """One agent per skew, on one in-memory network, started with their loops off."""
    clock, network = Clock(), MemoryNetwork()
    ends = [network.transport(address(index)) for index in range(len(skews_us))]
    agents = [
        skewed_agent(len(skews_us), index, clock, skew, ends[index])
        for index, skew in enumerate(skews_us)
    ]
    for agent in agents:
        await start_without_loop(agent)
    return Group(agents, list(ends), clock, network)


async def start_without_loop(agent: Agent) -> None:
    """Start ``agent`` with its period loop off: the test runs the periods."""
    await agent.start()
    assert agent._task is not None
    agent._task.cancel()


def named(agent: Agent, table: str, *, extended: bool = True) -> dict[str, dict[str, Any]]:
    """``table`` as the agent serves it, rows by MEMBER_ID, cells by column name."""
    columns, rows = agent.tables(extended=extended)[table]
    found = [{c.name: v for c, v in zip(columns, row, strict=True)} for row in rows]
    return {str(row["MEMBER_ID"]): row for row in found}


async def test_a_restart_after_the_clock_went_back_600_s_is_heard_within_two_periods() -> None:
    """Restarted on a clock stepped back 600 s, an agent's fresh rows reach its peers in 2 periods."""
    group = await start_skewed([0, 0, 600 * SECOND])
    assert group.network is not None
    try:
        await group.rounds(3)
        old = group.agents[2]
        await old.stop(grace_s=0)
        end = group.network.transport(address(2))
        restarted = skewed_agent(3, 2, group.clock, 0, end)  # its clock was stepped back
        await start_without_loop(restarted)
        group.agents[2] = restarted
        with capture_logs() as logs:
            for _ in range(2):  # two periods (in memory, what is sent has arrived at the end)
                group.clock.seconds += 1
                for agent in group.agents:
                    await agent.run_period()
        truth = restarted.local.stats.count_transactions_checked  # type: ignore[union-attr]
        for peer in group.agents[:2]:
            row = named(peer, "replication_group_member_stats")[restarted.member_id]
            assert (row["COUNT_TRANSACTIONS_CHECKED"], row["CONNECTED"]) == (truth, "YES")
            assert row["AGE_MS"] == 0
        assert any(log["event"] == "incarnation_refuted" for log in logs)
    finally:
        await stop_all(group)


async def test_a_member_heard_only_through_a_relay_has_its_clock_known() -> None:
    """C, 5 s ahead and cut off from A, has at A its true LAST_SEEN, AGE_MS and lag."""
    group = await start_skewed([0, 0, 5 * SECOND])
    assert group.network is not None
    a, b, c = group.agents
    group.network.cut(a.address, c.address)
    try:
        await group.rounds(6)
        assert abs(a.offsets[c.member_id] - 5 * SECOND) < SECOND // 10
        row = named(a, "replication_group_member_stats")[c.member_id]
        assert row["SOURCE"] == b.address
        # C reads once a period, on whole seconds of the true clock; relayed, the row is that
        # period's or the last one's: LAST_SEEN is that read's time, AGE_MS its age.
        age_us = group.clock.us() - row["LAST_SEEN"]
        assert min(abs(age_us), abs(age_us - SECOND)) < SECOND // 10
        assert abs(row["AGE_MS"] * 1000 - age_us) < SECOND // 10
        own = named(c, "replication_group_member_lag")[c.member_id]["APPLIER_LAG_SECONDS"]
        relayed = named(a, "replication_group_member_lag")[c.member_id]["APPLIER_LAG_SECONDS"]
        assert own is not None
        assert relayed is not None
        assert abs(relayed - own) < 0.1
    finally:
        await stop_all(group)


async def test_an_agent_started_late_knows_a_relayed_clock_within_two_periods() -> None:
    """A, restarted between GTID marks and cut off from C (5 s ahead), knows C's clock in 2 periods."""
    group = await start_skewed([0, 0, 5 * SECOND])
    assert group.network is not None
    a, _, c = group.agents
    group.network.cut(a.address, c.address)
    try:
        await group.rounds(6)  # B has estimated C and shared it
        await a.stop(grace_s=0)
        a = group.agents[0] = skewed_agent(3, 0, group.clock, 0, group.network.transport(a.address))
        await start_without_loop(a)
        await group.rounds(2)
        assert abs(a.offsets[c.member_id] - 5 * SECOND) < SECOND // 10
    finally:
        await stop_all(group)


async def test_a_skewed_clock_is_named_in_a_warning_in_query_status_and_in_a_metric() -> None:
    """A member 5 s off the others is warned of once, shown by query status, and exported."""
    group = await start_skewed([0, 0, 5 * SECOND])
    a, b, c = group.agents
    try:
        with capture_logs() as logs:
            await group.rounds(4)
        warned = [
            log for log in logs if log["event"] == "clock_skewed" and log["log_level"] == "warning"
        ]
        # Every agent names C (the median is the clock two of three agree on), once.
        assert sorted(log["member"] for log in warned) == [c.member_id] * 3
        assert all(abs(log["skew_s"] - 5.0) < 0.1 for log in warned)
        status = named(a, "replication_group_member_status", extended=False)
        assert abs(status[c.member_id]["CLOCK_SKEW_MS"] - 5_000) < 100
        assert abs(status[b.member_id]["CLOCK_SKEW_MS"]) < 100
        served = a.tables(extended=False)
        tables = {
            name: ([col.name for col in served[name][0]], served[name][1])
            for name in ("replication_group_status", "replication_group_member_status")
        }
        text = render_status(GroupStatus.from_tables(a.address, tables), "table")
        line = next(line for line in text.splitlines() if "clock skew" in line)
        assert "+5.000 s" in line
        families = {f.name: f for f in member_families(a.tables(extended=True), "g")}
        samples = {
            s.labels["member_id"]: s.value
            for s in families["grstats_member_clock_skew_seconds"].samples
        }
        assert abs(samples[c.member_id] - 5.0) < 0.1
        assert abs(samples[a.member_id]) < 0.1
    finally:
        await stop_all(group)


async def test_gtid_sets_served_side_by_side_were_sampled_on_one_mark() -> None:
    """Every member's gtid_executed, the local one's too, is the sample of the last mark."""
    group = await start_skewed([0, 0])
    a, b = group.agents
    try:
        mark = 1_700_000_040 * SECOND  # a multiple of executed_interval_s, 60 s
        await group.rounds(3, step_s=10)  # reads at :20, :30 and :40, the mark
        sampled = {agent.member_id: agent.local.gtid_executed for agent in group.agents}  # type: ignore[union-attr]
        await group.rounds(1, step_s=10)  # :50, after commits
        rows = named(a, "replication_group_member_gtid_executed", extended=False)
        assert {m: row["SAMPLED_AT"] for m, row in rows.items()} == {
            a.member_id: mark,
            b.member_id: mark,
        }
        assert {m: row["GTID_EXECUTED"] for m, row in rows.items()} == {
            m: str(executed) for m, executed in sampled.items()
        }
        fresh = a.local.gtid_executed  # type: ignore[union-attr]
        assert str(fresh) != rows[a.member_id]["GTID_EXECUTED"]  # the read moved on: not served
    finally:
        await stop_all(group)
