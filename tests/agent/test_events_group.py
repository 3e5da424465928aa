"""Issue 34, point 1: the group's events from any agent, against the simulator's own group.

Agents run in memory over the simulator on the test clock (tests/agent/test_group_status.py's
harness: one period per second; a crashed member is UNREACHABLE 5 s after, expelled 5 s
later). Each test compares the events with what the simulated members' own rows show: the
member whose row says PRIMARY after the failover, the states each view lists.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from typing import TYPE_CHECKING, Any

from grstats.agent.registry import MemoryRegistry
from grstats.agent.runtime import Agent
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.transports import MemoryNetwork
from grstats.core.rows import REPLICATION_GROUP_EVENTS
from tests.agent.test_group_status import (
    ids,
    reads_finish_within_their_period,  # noqa: F401  (autouse here too)
    run_to,
    running,
    start,
    table,
)
from tests.agent.test_metrics_series import export_everything
from tests.agent.test_runtime import (
    START_S,
    Clock,
    Group,
    _start_without_loop,
    settings,
    start_group,
    stop_all,
)
from tests.cli.test_query import _grstats  # noqa: F401  (the grstats fixture)

if TYPE_CHECKING:
    from tests.inprocess import Grstats

EVENTS = REPLICATION_GROUP_EVENTS.name
SECOND = 1_000_000


def events(agent: Agent) -> list[dict[str, Any]]:
    """The events table as the agent serves it."""
    return table(agent, EVENTS)


def at_s(event: dict[str, Any]) -> float:
    """The event's time in seconds after the simulated group started."""
    return int(event["EVENT_TIME"]) / SECOND - START_S


def found(rows: list[dict[str, Any]], kind: str, member: str, **cells: str) -> list[float]:
    """The times (s) of the events of ``kind`` about ``member`` with ``cells``."""
    return [
        at_s(row)
        for row in rows
        if row["EVENT_TYPE"] == kind
        and row["MEMBER_ID"] == member
        and all(row[name] == value for name, value in cells.items())
    ]


def primary(agent: Agent) -> str:
    """The member whose row the agent's own simulated member lists as PRIMARY."""
    local = agent.local
    assert local is not None
    (row,) = [r for r in local.view.members if r.member_role == "PRIMARY"]
    return row.member_id


async def test_a_failover_as_every_agent_tells_it() -> None:
    """Primary 0 crashes at 30 s and returns at 90 s: every agent lists the same events."""
    async with running(await start(load_scenario("primary-failover"))) as group:
        export_everything(*group.agents)  # agent 1's counts of every member, below
        old, one, two = ids(group)
        await run_to(group, 45)
        elected = primary(group.agents[1])  # the simulator's new primary
        assert elected in (one, two)
        await run_to(group, 100)
        rows = events(group.agents[1])
        assert all(events(agent) == rows for agent in group.agents)
        assert [at_s(r) for r in rows] == sorted(at_s(r) for r in rows)
        # member 0's own agent lost its server at the crash, and found it again at 90 s
        assert found(rows, "SOURCE_FAILED", old, REPORTED_BY=old) == [31]
        assert found(rows, "SOURCE_RECOVERED", old, REPORTED_BY=old) == [91]
        # the others saw it UNREACHABLE 5 s after the crash, then left out of their view
        for other in (one, two):
            assert found(rows, "MEMBER_STATE", old, REPORTED_BY=other, NEW_VALUE="UNREACHABLE")
            (left,) = found(rows, "VIEW_CHANGE", other, REPORTED_BY=other, DETAIL=f"left: {old}")
            assert 40 <= left <= 41
            assert found(rows, "AGENT_SILENT", old, REPORTED_BY=other)
        (when,) = found(rows, "MEMBER_ROLE", elected, NEW_VALUE="PRIMARY")
        assert 40 <= when <= 41
        # back at 90 s: a secondary that recovers, then ONLINE
        assert found(rows, "MEMBER_ROLE", old, OLD_VALUE="PRIMARY", NEW_VALUE="SECONDARY")
        (recovering,) = found(rows, "MEMBER_STATE", old, NEW_VALUE="RECOVERING")
        (online,) = found(rows, "MEMBER_STATE", old, OLD_VALUE="RECOVERING", NEW_VALUE="ONLINE")
        assert 90 <= recovering < online <= 100
        # the metrics count the election and the state changes, once each
        metrics = group.agents[1].metrics.registry
        group_name = group.agents[1].local.view.group_name  # type: ignore[union-attr]
        assert (
            metrics.get_sample_value("grstats_primary_changes_total", {"group_name": group_name})
            == 1
        )
        unreachable = {"group_name": group_name, "member_id": old, "state": "UNREACHABLE"}
        assert metrics.get_sample_value("grstats_member_state_changes_total", unreachable) == 1


async def test_an_agent_restarted_catches_up_on_the_events_it_missed() -> None:
    """Agent 1 is down from 20 s to 70 s while member 2 crashes and rejoins: it learns it all."""
    scenario = load_scenario("crash-rejoin")
    clock, network = Clock(), MemoryNetwork()
    addresses = tuple(f"agent-{index}:7400" for index in range(3))
    registries = [MemoryRegistry() for _ in addresses]

    def agent(index: int) -> Agent:
        source = SimulatedSource(scenario, index, seed=1, group_start_s=START_S, clock=clock.s)
        return Agent(
            settings(advertise=addresses[index], peers=addresses),
            source,
            transport=network.transport(addresses[index]),
            registry=registries[index],
            clock=clock.us,
        )

    agents = [agent(index) for index in range(3)]
    for each in agents:
        await _start_without_loop(each)
    group = Group(agents, [], clock, network)
    async with running(group):
        zero, one, two = ids(group)
        await run_to(group, 20)
        await group.agents[1].flush()
        kept = registries[1].load()  # its registry's file, as its last flush left it
        await group.agents[1].stop(grace_s=0)
        registries[1] = MemoryRegistry(kept)
        del group.agents[1]  # down: the others run on
        await run_to(group, 70)
        restarted = agent(1)
        await _start_without_loop(restarted)
        group.agents.insert(1, restarted)
        await run_to(group, 73)
        rows = events(group.agents[0])
        assert events(restarted) == rows  # every event of the others, from while it was down
        assert found(rows, "SOURCE_FAILED", two, REPORTED_BY=two) == [31]
        assert found(rows, "VIEW_CHANGE", zero, REPORTED_BY=zero, DETAIL=f"left: {two}")
        assert found(rows, "MEMBER_STATE", two, OLD_VALUE="RECOVERING", NEW_VALUE="ONLINE")
        (silent,) = found(rows, "AGENT_SILENT", one, REPORTED_BY=zero)
        (heard,) = found(rows, "AGENT_HEARD", one, REPORTED_BY=zero)
        assert 30 <= silent < 70 <= heard <= 73


async def test_query_events_prints_filters_and_follows(grstats: Grstats) -> None:
    """Over gRPC: a table, JSON, --member and --since, a bad --since (exit 2), and --follow."""
    group = await start_group(3, "primary-failover")
    try:
        await group.rounds(35)  # member 0 crashed at 30 s: its agent reported it at once
        node = group.agents[1].address
        old = group.agents[0].member_id
        done = await grstats("query", "events", "--node", node, "--format", "json")
        assert done.returncode == 0, done.stderr
        shown = json.loads(done.stdout)
        _, rows = group.agents[1].tables(extended=False)[EVENTS]
        assert shown["table"] == EVENTS
        assert len(shown["rows"]) == len(rows) > 0
        assert [r["EVENT_TYPE"] for r in shown["rows"]] == [row[2] for row in rows]
        mine = await grstats("query", "events", "--node", node, "--member", old.upper())
        assert mine.returncode == 0, mine.stderr
        assert "SOURCE_FAILED" in mine.stdout
        assert mine.stdout.splitlines()[1].startswith("| EVENT_TIME ")
        member = await grstats(
            "query", "events", "--node", node, "--member", old, "--format", "json"
        )
        theirs = json.loads(member.stdout)["rows"]
        assert theirs
        assert {r["MEMBER_ID"] for r in theirs} == {old}
        assert len(theirs) < len(rows)
        later = await grstats(
            "query", "events", "--node", node, "--since", "2099-01-01 00:00", "--format", "json"
        )
        assert json.loads(later.stdout)["rows"] == []
        bad = await grstats("query", "events", "--node", node, "--since", "yesterday")
        assert bad.returncode == 2
        assert "--since: 'yesterday' is neither a duration" in bad.stderr
        wrong = await grstats("query", "members", "--node", node, "--follow")
        assert wrong.returncode == 2
        assert "--follow: only 'grstats query events' follows" in wrong.stderr
        # --follow: the events so far, then a new one as it happens, until Ctrl-C (exit 0)
        follower = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "grstats", "query", "events", "--node", node, "--follow"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert follower.stdout is not None
        first = await asyncio.wait_for(follower.stdout.readline(), 30)
        assert b"SOURCE_FAILED" in first or b"MEMBER_STATE" in first
        await group.rounds(6)  # member 0 expelled at 40 s: views change, a primary is elected
        lines: list[bytes] = []
        while not any(b"PRIMARY" in line and b"MEMBER_ROLE" in line for line in lines):
            lines.append(await asyncio.wait_for(follower.stdout.readline(), 30))
        follower.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(follower.wait(), 30) == 0
    finally:
        await stop_all(group)
