"""Issue 48, point 3: every member's Group Replication log lines from any agent.

Agents run over the simulator on the test clock (tests/agent/test_group_status.py's harness:
one period per second). The lines each agent serves are compared with what the simulated
servers wrote, as a copy of the same group writes them (agent.sim.error_log), every line
each server wrote, those that its crash took from its error_log included.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from grstats.agent.runtime import Agent
from grstats.agent.sim.error_log import ServerErrorLog
from grstats.agent.sim.group import TICKS_PER_SECOND, SimulatedGroup
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.simulated import SimulatedSource
from grstats.core.rows.member_log import REPLICATION_GROUP_MEMBER_LOG
from tests.agent.test_group_status import (
    ids,
    reads_finish_within_their_period,  # noqa: F401  (autouse here too)
    run_to,
    running,
    table,
)
from tests.agent.test_runtime import START_S, _start_without_loop, start_group
from tests.cli.test_query import _grstats  # noqa: F401  (the grstats fixture)

if TYPE_CHECKING:
    from tests.inprocess import Grstats

LOG = REPLICATION_GROUP_MEMBER_LOG.name
SECOND = 1_000_000


def written(scenario: str, until_s: float) -> list[dict[str, Any]]:
    """Every line the simulated servers wrote before ``until_s``, as the table's rows."""
    group = SimulatedGroup(load_scenario(scenario), 1, int(START_S * SECOND))
    logs = [ServerErrorLog(group, index) for index in range(len(group.members))]
    lines: dict[tuple[int, str], dict[str, Any]] = {}
    while group.tick < until_s * TICKS_PER_SECOND:
        group.step()
        for log in logs:
            for line in log.lines:
                lines[(line.logged, line.member_id)] = line.as_dict()
    return [lines[key] for key in sorted(lines)]


def log(agent: Agent) -> list[dict[str, Any]]:
    """The agent's replication_group_member_log."""
    return table(agent, LOG)


def at_s(row: dict[str, Any]) -> float:
    """When the line was logged, seconds after the group started."""
    return int(row["LOGGED"]) / SECOND - START_S


async def test_any_agent_serves_every_members_lines_member_2s_from_before_its_crash() -> None:
    """crash-rejoin over gRPC: at 90 s every agent serves all three servers' lines, member 2's early ones."""
    async with running(await start_group(3, "crash-rejoin", memory=False)) as group:
        await run_to(group, 90)
        zero, one, two = ids(group)
        expected = [row for row in written("crash-rejoin", 89) if at_s(row) < 89]
        for agent in group.agents:
            rows = [row for row in log(agent) if at_s(row) < 89]
            assert rows == expected
        rows = log(group.agents[0])
        assert {row["MEMBER_ID"] for row in rows} == {zero, one, two}
        # member 2's own lines of before its crash at 30 s: it joined, and was declared online
        early = [(row["ERROR_CODE"], row["PRIO"]) for row in rows if row["MEMBER_ID"] == two]
        assert ("MY-011503", "System") in early[:3]
        assert [at_s(r) for r in rows if r["MEMBER_ID"] == two and at_s(r) < 30]
        # the others wrote why it left: unreachable at 35 s, removed at 40 s
        for other in (zero, one):
            said = {
                (row["ERROR_CODE"], round(at_s(row))): row["DATA"]
                for row in rows
                if row["MEMBER_ID"] == other
            }
            assert said[("MY-011493", 35)] == (
                "Plugin group_replication reported: "
                "'Member with address 127.0.0.1:13308 has become unreachable.'"
            )
            assert said[("MY-011499", 40)].endswith(
                "'Members removed from the group: 127.0.0.1:13308'"
            )
        # and member 2's restarted server wrote its rejoin, ONLINE again
        late = [row["ERROR_CODE"] for row in rows if row["MEMBER_ID"] == two and at_s(row) >= 60]
        assert late[0] == "MY-011503"
        assert "MY-011490" in late
        assert all(row["SUBSYSTEM"] == "Repl" and row["THREAD_ID"] == 0 for row in rows)


async def test_a_member_whose_host_died_keeps_its_lines_at_the_others() -> None:
    """Member 2's server and agent die together at 30 s: the others serve its lines until then."""
    async with running(await start_group(3, "crash-rejoin", memory=True)) as group:
        await run_to(group, 29)
        two = group.agents[2].member_id
        before = [row for row in log(group.agents[2]) if row["MEMBER_ID"] == two]
        assert before  # what its agent had read of its server
        dead = group.agents.pop()
        group.transports.pop()
        await dead.stop(grace_s=0)
        await run_to(group, 50)
        for agent in group.agents:
            rows = log(agent)
            assert [row for row in rows if row["MEMBER_ID"] == two] == before
            assert [row for row in rows if row["MEMBER_ID"] != two] == [
                row
                for row in written("crash-rejoin", 49)
                if row["MEMBER_ID"] != two and at_s(row) < 49
            ]


async def test_query_log_prints_every_members_lines_as_a_table_and_json(grstats: Grstats) -> None:
    """Over gRPC: ``grstats query log`` as a table and as JSON keyed by column, --member, --since."""
    async with running(await start_group(3, "crash-rejoin")) as group:
        await run_to(group, 45)
        node, two = group.agents[0].address, group.agents[2].member_id
        served = log(group.agents[0])
        done = await grstats("query", "log", "--node", node, "--format", "json")
        assert done.returncode == 0, done.stderr
        shown = json.loads(done.stdout)
        assert shown["table"] == LOG
        assert [list(row) for row in shown["rows"]] == [list(row) for row in served]
        assert [row["DATA"] for row in shown["rows"]] == [row["DATA"] for row in served]
        assert shown["rows"][0]["LOGGED"].endswith("Z")  # JSON's times: ISO 8601 in UTC
        text = await grstats("query", "log", "--node", node)
        assert text.returncode == 0, text.stderr
        assert text.stdout.splitlines()[1].split()[1:8:2] == [
            "LOGGED",
            "THREAD_ID",
            "PRIO",
            "ERROR_CODE",
        ]
        assert "has become unreachable" in text.stdout
        mine = await grstats(
            "query", "log", "--node", node, "--member", two.upper(), "--format", "json"
        )
        theirs = json.loads(mine.stdout)["rows"]
        assert theirs == [row for row in shown["rows"] if row["MEMBER_ID"] == two] != []
        later = await grstats(
            "query", "log", "--node", node, "--since", "2099-01-01 00:00", "--format", "json"
        )
        assert json.loads(later.stdout)["rows"] == []
        wrong = await grstats("query", "log", "--node", node, "--follow")
        assert wrong.returncode == 2


async def test_a_restarted_agent_takes_its_members_lines_back_from_its_peers() -> None:
    """Agent 2 restarts with no registry at 70 s: its member's lines of before the crash come back.

    Member 2's server restarted at 60 s, so its error_log holds only the lines since: the
    earlier ones are the others' copies.
    """
    scenario = load_scenario("crash-rejoin")
    async with running(await start_group(3, "crash-rejoin", memory=True)) as group:
        await run_to(group, 70)
        two = group.agents[2].member_id
        before = [row for row in log(group.agents[0]) if row["MEMBER_ID"] == two]
        early = [row for row in before if at_s(row) < 30]
        assert early
        old = group.agents[2]
        await old.stop(grace_s=0)
        source = SimulatedSource(scenario, 2, seed=1, group_start_s=START_S, clock=group.clock.s)
        assert group.network is not None
        restarted = Agent(
            old.config,
            source,
            transport=group.network.transport(old.address),
            clock=group.clock.us,
        )
        await _start_without_loop(restarted)
        group.agents[2] = restarted
        await run_to(group, 75)
        rows = [row for row in log(restarted) if row["MEMBER_ID"] == two]
        assert rows == before  # nothing new since 70 s
        assert rows[: len(early)] == early
        assert rows == [row for row in log(group.agents[0]) if row["MEMBER_ID"] == two]
