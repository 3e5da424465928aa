"""An agent serves the live group whatever its own member does; CONNECTED and AGE_MS agree.

Agents restarted beside a member that is down, or whose first read is slow, take the group's
view and rows from their peers (real gRPC servers on 127.0.0.1); the freshness columns mean
the same in every table and at every agent (in memory).
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
from typing import TYPE_CHECKING, Any

import pytest
from structlog.testing import capture_logs

from grstats.agent.registry import SqliteRegistry
from grstats.agent.runtime import Agent
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.memory import MemorySource
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.transports import FaultyTransport, GrpcTransport
from grstats.core.rows import ROW_TABLES
from tests.agent.test_metrics_series import rendered, value
from tests.agent.test_runtime import START_S, Group, start_group, stop_all
from tests.waiting import wait_until_async

if TYPE_CHECKING:
    from pathlib import Path

    from grstats.core.model import MemberSnapshot


#: A member's COUNT_TRANSACTIONS_CHECKED in /metrics.
CHECKED = "grstats_transactions_checked_total"


def rows(agent: Agent, table: str) -> dict[str, dict[str, Any]]:
    """The agent's rows of ``table`` (extended) by MEMBER_ID."""
    columns, values = agent.tables(extended=True)[table]
    named = [{c.name: v for c, v in zip(columns, row, strict=True)} for row in values]
    return {str(row["MEMBER_ID"]): row for row in named}


def verdict(agent: Agent) -> str:
    """The agent's STATUS of replication_group_status."""
    columns, values = agent.tables(extended=False)["replication_group_status"]
    return str(values[0][[c.name for c in columns].index("STATUS")])


async def periods(group: Group, count: int) -> None:
    """Advance the test clock a second and run a period on every agent, ``count`` times.

    A period's read may take at most half a period before its round runs without it: a
    period that does not end within its own length fails the test.
    """
    for _ in range(count):
        group.clock.seconds += 1
        for agent in group.agents:
            await asyncio.wait_for(agent.run_period(), timeout=agent.config.period_s)


async def restart(
    group: Group, index: int, source: Any, registry_path: Path | None, **changes: Any
) -> Agent:
    """Stop agent ``index``, start another on its address with ``source``; loop disabled.

    ``changes`` change its config.
    """
    old = group.agents[index]
    await old.stop(grace_s=0)
    agent = Agent(
        dataclasses.replace(old.config, listen=old.address, **changes),
        source,
        transport=FaultyTransport(GrpcTransport(old.config.limits)),
        registry=SqliteRegistry(registry_path) if registry_path is not None else None,
        clock=group.clock.us,
    )
    await agent.start()
    assert agent._task is not None
    agent._task.cancel()  # the test drives the periods
    group.agents[index] = agent
    return agent


def simulated(scenario: str, index: int, group: Group) -> SimulatedSource:
    """Member ``index`` of the tests' simulated group, as start_group makes it."""
    size = load_scenario(scenario).with_members(len(group.agents))
    return SimulatedSource(size, index, seed=1, group_start_s=START_S, clock=group.clock.s)


class SlowFirstRead:
    """A source whose first read waits for :attr:`done`: a long-running simulated group catching up."""

    def __init__(self, source: SimulatedSource) -> None:
        self._source = source
        self.done = asyncio.Event()

    async def read(self) -> MemberSnapshot:
        await self.done.wait()
        return await self._source.read()

    async def aclose(self) -> None:
        await self._source.aclose()


@pytest.mark.parametrize("remembered", [True, False], ids=["registry", "no-registry"])
async def test_restarted_beside_a_down_member_serves_the_live_group(
    tmp_path: Path, remembered: bool
) -> None:
    """Restarted beside its crashed member, an agent serves the live group within 2 periods."""
    path = tmp_path / "registry.sqlite" if remembered else None
    group = await start_group(
        3, "crash-rejoin", registries={2: SqliteRegistry(path)} if path else None
    )
    try:
        await group.rounds(2)
        down = group.agents[2].member_id
        group.clock.seconds += 30  # 42 s: member 2 crashed at 30 s, was expelled at 40 s
        await group.rounds(2)
        restarted = await restart(group, 2, simulated("crash-rejoin", 2, group), path)
        await periods(group, 2)
        live = {agent.member_id for agent in group.agents[:2]}
        served = rows(restarted, "replication_group_members")
        assert {m: (r["MEMBER_STATE"], r["CONNECTED"]) for m, r in served.items() if m in live} == (
            dict.fromkeys(live, ("ONLINE", "YES"))
        )
        assert all(served[m]["AGE_MS"] <= 2_000 for m in live)
        assert verdict(restarted) != "UNKNOWN"
        # Its own member as the group sees it: out of the view, its last values (remembered,
        # or its last view of the group, relayed by the peers, which lists it).
        assert (served[down]["MEMBER_STATE"], served[down]["IN_VIEW"]) == ("OFFLINE", "NO")
        stats = rows(restarted, "replication_group_member_stats")
        assert stats[down]["COUNT_TRANSACTIONS_CHECKED"] > 0
        assert verdict(restarted) == verdict(group.agents[0])
    finally:
        await stop_all(group)


async def test_healthy_restart_answers_its_verdict_while_its_first_read_runs(
    tmp_path: Path,
) -> None:
    """A restarted agent whose first read is slow serves the group's verdict within 2 periods."""
    path = tmp_path / "registry.sqlite"
    group = await start_group(3, registries={2: SqliteRegistry(path)})
    try:
        await group.rounds(2)
        slow = SlowFirstRead(simulated("steady", 2, group))
        restarted = await restart(group, 2, slow, path, period_s=1.0, rpc_timeout_s=0.9)
        await periods(group, 2)
        assert verdict(restarted) == verdict(group.agents[0]) == "OK"
        served = rows(restarted, "replication_group_members")
        assert [r["MEMBER_STATE"] for r in served.values()] == ["ONLINE"] * 3
        slow.done.set()  # the read ends: the agent's own member is its read again
        await periods(group, 1)
        await wait_until_async(
            lambda: restarted.local is not None, 3, "the restarted agent has its own member"
        )
        own = rows(restarted, "replication_group_member_stats")[restarted.member_id]
        assert (own["SOURCE"], own["CONNECTED"]) == ("local", "YES")
    finally:
        await stop_all(group)


async def test_a_restart_exports_no_remembered_counter_that_would_go_back(tmp_path: Path) -> None:
    """Before its first read a restarted agent exports no counter of its member from the registry.

    The registry is flushed every few seconds, so a kill leaves it behind what /metrics gave:
    the remembered COUNT_TRANSACTIONS_CHECKED is lower, and exported under the same
    ``instance`` it is a reset to Prometheus (main exported it; the handover test saw the reset
    under load). Once its read comes, the counter is the member's, no lower than before.
    """
    path, older = tmp_path / "registry.sqlite", tmp_path / "older.sqlite"
    group = await start_group(3, registries={2: SqliteRegistry(path)})
    try:
        await group.rounds(2)
        await group.agents[2].flush()
        shutil.copyfile(path, older)  # as a kill -9 leaves it: the last flush's rows
        await group.rounds(6)
        own = group.agents[2].member_id
        before = value(rendered(group.agents[2]), CHECKED, member_id=own)
        slow = SlowFirstRead(simulated("steady", 2, group))
        restarted = await restart(group, 2, slow, older, period_s=1.0, rpc_timeout_s=0.9)
        await periods(group, 1)
        remembered = rows(restarted, "replication_group_member_stats")[own]
        assert remembered["SOURCE"] == "registry"
        assert remembered["COUNT_TRANSACTIONS_CHECKED"] < before  # what main exported: a reset
        samples = rendered(restarted)[CHECKED.removesuffix("_total")].samples
        assert own not in {sample.labels["member_id"] for sample in samples}
        slow.done.set()
        await periods(group, 1)
        await wait_until_async(
            lambda: restarted.local is not None, 3, "the restarted agent has its own member"
        )
        assert value(rendered(restarted), CHECKED, member_id=own) >= before
    finally:
        await stop_all(group)


async def test_idle_connected_members_are_fresh_in_every_table() -> None:
    """AGE_MS of a connected member is the age of its last report, in every table."""
    group = await start_group(3, memory=True)
    try:
        await group.rounds(15)  # the primary's applier is idle; gtid_executed is 60 s apart
        asked = group.agents[1]
        for table in ROW_TABLES:
            ages = {m: (r["CONNECTED"], r["AGE_MS"]) for m, r in rows(asked, table).items()}
            assert all(connected == "YES" and age <= 1_000 for connected, age in ages.values()), (
                table,
                ages,
            )
    finally:
        await stop_all(group)


async def test_a_down_server_whose_agent_runs_is_not_connected_everywhere() -> None:
    """Every agent shows a crashed member whose agent runs as CONNECTED NO, at one LAST_SEEN."""
    group = await start_group(3, "crash-rejoin", memory=True)
    try:
        await group.rounds(20)  # 30 s: member 2 crashes
        with capture_logs() as logs:
            await group.rounds(16)  # 46 s: more than the silence (10 s) after the crash
        down = group.agents[2].member_id
        seen = {
            (r["CONNECTED"], r["LAST_SEEN"])
            for agent in group.agents
            for table in ROW_TABLES
            for r in [rows(agent, table)[down]]
        }
        assert len(seen) == 1
        ((connected, last_seen),) = seen
        assert connected == "NO"  # its server unread for more than the silence
        assert group.clock.us() - last_seen >= 15_000_000  # its last read, at about 30 s
        silence = group.agents[0].config.silence_us
        assert all(a.state.connected(down, group.clock.us(), silence) for a in group.agents[:2])
        warned = [
            (e["member_id"], e["reason"]) for e in logs if e["event"] == "member_not_connected"
        ]
        assert warned == [(down, "server_not_read")] * 2  # once by each peer
    finally:
        await stop_all(group)


async def test_a_discovering_agent_finds_its_peers_in_its_registry(tmp_path: Path) -> None:
    """With no peers given and its member down, an agent asks the agents its registry remembers."""
    path = tmp_path / "registry.sqlite"
    group = await start_group(3, memory=True, registries={2: SqliteRegistry(path)})
    assert group.network is not None
    try:
        await group.rounds(2)
        old = group.agents[2]
        await old.stop(grace_s=0)  # flushes the registry: the peers' agents' addresses
        for peer in group.agents[:2]:  # they no longer push to it: it must ask them
            others = tuple(a.address for a in group.agents[:2])
            peer.config = dataclasses.replace(peer.config, peers=others)
        failing = MemorySource(lambda: pytest.fail("read while down"))
        failing.fail()
        restarted = Agent(
            dataclasses.replace(old.config, peers=(), discover_peers=True),
            failing,
            transport=group.network.transport(old.address),
            registry=SqliteRegistry(path),
            clock=group.clock.us,
        )
        await restarted.start()
        assert restarted._task is not None
        restarted._task.cancel()  # the test drives the periods
        group.agents[2] = restarted
        await periods(group, 1)
        live = {agent.member_id for agent in group.agents[:2]}
        served = rows(restarted, "replication_group_members")
        assert {m: (served[m]["MEMBER_STATE"], served[m]["CONNECTED"]) for m in live} == (
            dict.fromkeys(live, ("ONLINE", "YES"))
        )
    finally:
        await stop_all(group)
