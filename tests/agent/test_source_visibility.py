"""Whether the agent asked can read its own member, where people look (issue 17, part 2).

Real agents over gRPC on 127.0.0.1 with a source that fails with a fault, asked by
``grstats query`` in a subprocess (TZ=UTC, so the times are known): the Query answer's
``source_fault``, the one warning line on stderr, ``agent_source`` in the JSON, the UNKNOWN
verdict that says why, the watch's stream and screen, and an agent that recovers.
"""

from __future__ import annotations

import asyncio
import calendar
import io
import json
import os
import re
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

import grpc
import pytest
from grpc_health.v1 import health
from rich.console import Console

from grstats.agent.convert import (
    MAX_TEXT,
    WireError,
    source_report_from_wire,
    source_report_to_wire,
)
from grstats.agent.messages import SourceReport
from grstats.agent.runtime import Agent
from grstats.agent.server import build_server
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.transports import GrpcTransport
from grstats.cli.status_view import GroupStatus, clock_text, source_document, source_line
from grstats.cli.watch import WatchScreen
from grstats.core.errors import SourceUnavailable
from grstats.core.fault import SourceFault
from grstats.core.rows.zone import parse_time_zone
from grstats.core.verdict import source_unknown
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc
from tests.agent.test_runtime import START_S, Clock, settings
from tests.cli.test_status_watch import interrupt

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from grstats.agent.served import Table
    from grstats.core.model import MemberSnapshot

PYTHON = (sys.executable, "-m", "grstats")
FAULT = SourceFault(
    kind="access_denied",
    message="Access denied for user 'grstats'@'127.0.0.1' at 127.0.0.1:3306 "
    "(password from password_file /etc/grstats/mysql.password)",
    fix="check the password in /etc/grstats/mysql.password",
)


class ScriptedSource:
    """A simulated member whose reads raise SourceUnavailable carrying ``fault`` while it is set."""

    def __init__(self, clock: Clock, fault: SourceFault | None) -> None:
        size = load_scenario("steady").with_members(1)
        self._inner = SimulatedSource(size, 0, seed=1, group_start_s=START_S, clock=clock.s)
        self.fault = fault

    async def read(self) -> MemberSnapshot:
        """The member's snapshot, or SourceUnavailable with the fault."""
        if self.fault is not None:
            raise SourceUnavailable(self.fault.message, fault=self.fault)
        return await self._inner.read()

    async def aclose(self) -> None:
        """Close the simulated member."""
        await self._inner.aclose()


class Served:
    """One agent over gRPC whose loop the test drives, its source and its clock."""

    def __init__(self, agent: Agent, source: ScriptedSource, clock: Clock) -> None:
        self.agent = agent
        self.source = source
        self.clock = clock

    async def period(self) -> None:
        """Advance the clock a second and run one period."""
        self.clock.seconds += 1
        await self.agent.run_period()


async def serve(fault: SourceFault | None) -> Served:
    """Start one agent (no peers) whose source fails with ``fault``; run its first period."""
    clock = Clock()
    source = ScriptedSource(clock, fault)
    agent = Agent(settings(), source, transport=GrpcTransport(), clock=clock.us)
    await agent.start()
    assert agent._task is not None
    agent._task.cancel()  # the test drives the periods
    served = Served(agent, source, clock)
    await served.period()
    return served


@pytest.fixture(name="failing")
async def _failing() -> AsyncIterator[Served]:
    """An agent that has never read its member: every read fails with FAULT."""
    served = await serve(FAULT)
    yield served
    await served.agent.stop(grace_s=0)


async def grstats(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m grstats`` without blocking the agents' event loop.

    The machine's zone is +05:30 for it: grstats shows UTC by default all the same.
    """
    process = await asyncio.create_subprocess_exec(
        *PYTHON,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "TZ": "Asia/Kolkata"},
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return subprocess.CompletedProcess(args, process.returncode, out.decode(), err.decode())


def expected_line(agent: Agent) -> str:
    """The warning line for FAULT, the time in UTC with the date (the test clock is in 2023)."""
    since = agent.member.fault_since_us
    assert since is not None
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(since / 1_000_000))
    return (
        f"grstats: warning: agent {agent.address} cannot read its member since {when} UTC: "
        f"{FAULT.message} Fix: {FAULT.fix}\n"
    )


def expected_source(agent: Agent) -> dict[str, Any]:
    """``agent_source`` for FAULT, ``since`` in ISO 8601 UTC."""
    since = agent.member.fault_since_us
    assert since is not None
    return {
        "ok": False,
        "kind": FAULT.kind,
        "message": FAULT.message,
        "fix": FAULT.fix,
        "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since / 1_000_000)),
    }


async def read(address: str) -> pb.QueryResponse:
    """Query.Read of every table, in process."""
    async with grpc.aio.insecure_channel(address) as channel:
        response: pb.QueryResponse = await pb_grpc.QueryStub(channel).Read(
            pb.QueryRequest(), timeout=10
        )
        return response


class TestQueryAnswer:
    """The Query answer says whether the answering agent can read its own member."""

    async def test_a_failing_agent_answers_its_fault_and_since(self, failing: Served) -> None:
        """The answer carries the fault's kind, message, fix and the agent's clock when it began."""
        response = await read(failing.agent.address)
        assert response.HasField("source_fault")
        assert response.source_fault == pb.SourceFault(
            kind=FAULT.kind,
            message=FAULT.message,
            fix=FAULT.fix,
            since_us=failing.agent.member.fault_since_us,
        )
        assert source_report_from_wire(response) == SourceReport(
            FAULT, failing.agent.member.fault_since_us
        )

    async def test_a_recovered_agent_answers_without_a_fault(self, failing: Served) -> None:
        """Once a read succeeds the answer has no source_fault, which reads as ok."""
        failing.source.fault = None
        await failing.period()
        response = await read(failing.agent.address)
        assert not response.HasField("source_fault")
        assert source_report_from_wire(response).ok

    async def test_a_node_without_the_report_answers_as_an_older_agent(
        self, failing: Served
    ) -> None:
        """A node lacking source_report (an older agent) sends no source_fault: clients read ok."""
        server = build_server(
            Unreporting(failing.agent), failing.agent.rounds, health.aio.HealthServicer()
        )
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            response = await read(f"127.0.0.1:{port}")
            done = await grstats(
                "query", "status", "--node", f"127.0.0.1:{port}", "--format", "json"
            )
        finally:
            await server.stop(grace=None)
        assert not response.HasField("source_fault")
        assert (done.returncode, done.stderr) == (0, "")
        assert json.loads(done.stdout)["agent_source"] == {"ok": True}


class Unreporting:
    """The real agent's address, member and tables, without ``source_report``."""

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    @property
    def address(self) -> str:
        return self._agent.address

    @property
    def member_id(self) -> str:
        return self._agent.member_id

    def tables(self, extended: bool) -> Mapping[str, Table]:
        return self._agent.tables(extended)


class TestWire:
    """``QueryResponse.source_fault`` both ways."""

    def test_absent_reads_as_ok(self) -> None:
        """An answer without the field (an older agent, or one that can read) is ok, no since."""
        assert source_report_from_wire(pb.QueryResponse(agent="a:1")) == SourceReport()

    def test_a_fault_round_trips(self) -> None:
        """Kind, message, fix and since survive the wire; since 0 reads as unknown."""
        report = SourceReport(FAULT, 1_700_000_000_000_000)
        response = pb.QueryResponse(source_fault=source_report_to_wire(report))
        assert source_report_from_wire(response) == report
        response.source_fault.since_us = 0
        assert source_report_from_wire(response) == SourceReport(FAULT, None)

    def test_ok_has_no_message(self) -> None:
        """A report of an agent that can read encodes to nothing."""
        assert source_report_to_wire(SourceReport()) is None

    def test_long_texts_are_cut_to_what_the_decoder_accepts(self) -> None:
        """A driver message over MAX_TEXT is cut short with an ellipsis, and the answer decodes."""
        fault = SourceFault(kind="other", message="x" * 5000, fix="")
        wire = source_report_to_wire(SourceReport(fault, 1))
        assert wire is not None
        assert len(wire.message) == MAX_TEXT
        assert wire.message.endswith("…")
        assert source_report_from_wire(pb.QueryResponse(source_fault=wire)).fault is not None

    def test_an_over_long_message_from_a_peer_is_refused_by_name(self) -> None:
        """A decoder error names source_fault.message and the length."""
        response = pb.QueryResponse(source_fault=pb.SourceFault(kind="other", message="y" * 2000))
        with pytest.raises(WireError, match=r"source_fault\.message: 2000 characters"):
            source_report_from_wire(response)


class TestQueryCommand:
    """``grstats query`` warns on stderr, keeps its exit status, and says it in JSON."""

    @pytest.mark.parametrize(
        ("what", "output_format"),
        [
            pytest.param("members", "table", id="members-table"),
            pytest.param("stats", "vertical", id="stats-vertical"),
            pytest.param("lag", "json", id="lag-json"),
            pytest.param("gtids", "table", id="gtids-table"),
            pytest.param("status", "table", id="status-table"),
            pytest.param("status", "vertical", id="status-vertical"),
            pytest.param("status", "json", id="status-json"),
        ],
    )
    async def test_one_warning_line_and_exit_0(
        self, failing: Served, what: str, output_format: str
    ) -> None:
        """Every subcommand and format prints exactly the one warning line on stderr and exits 0."""
        done = await grstats(
            "query", what, "--node", failing.agent.address, "--format", output_format
        )
        assert done.returncode == 0
        assert done.stderr == expected_line(failing.agent)
        assert "cannot read" not in done.stdout or what == "status"

    async def test_status_json_says_unknown_with_the_reason(self, failing: Served) -> None:
        """The status document has agent_source, and an UNKNOWN verdict whose sentence says why."""
        address = failing.agent.address
        done = await grstats("query", "status", "--node", address, "--format", "json")
        assert done.returncode == 0, done.stderr
        found = json.loads(done.stdout)
        assert found["agent_source"] == expected_source(failing.agent)
        assert found["status"] == "UNKNOWN"
        assert found["status_text"] == (
            f"Group status unknown: agent {address} cannot read its member: {FAULT.message}"
        )
        assert found["members"] == []

    async def test_status_text_says_unknown_with_the_reason(self, failing: Served) -> None:
        """The text summary's status text line gives the reason."""
        address = failing.agent.address
        done = await grstats("query", "status", "--node", address)
        assert done.returncode == 0, done.stderr
        assert (
            f"status text: Group status unknown: agent {address} cannot read its member: "
            f"{FAULT.message}\n"
        ) in done.stdout
        assert re.search(r"^ *status: UNKNOWN$", done.stdout, re.MULTILINE)

    async def test_a_recovered_agent_clears_it(self, failing: Served) -> None:
        """After a read succeeds: no warning, agent_source ok, and a verdict that is not UNKNOWN."""
        failing.source.fault = None
        await failing.period()
        address = failing.agent.address
        done = await grstats("query", "status", "--node", address, "--format", "json")
        plain = await grstats("query", "members", "--node", address)
        assert (done.returncode, done.stderr) == (0, "")
        assert (plain.returncode, plain.stderr) == (0, "")
        found = json.loads(done.stdout)
        assert found["agent_source"] == {"ok": True}
        assert found["status"] != "UNKNOWN"
        assert "cannot read" not in found["status_text"]

    async def test_an_agent_that_knows_its_member_warns_and_keeps_its_verdict(self) -> None:
        """A fault after a good read warns, but the agent still knows its member: no UNKNOWN."""
        served = await serve(None)
        try:
            served.source.fault = FAULT
            await served.period()
            done = await grstats(
                "query", "status", "--node", served.agent.address, "--format", "json"
            )
        finally:
            await served.agent.stop(grace_s=0)
        assert done.returncode == 0
        assert done.stderr == expected_line(served.agent)
        found = json.loads(done.stdout)
        assert found["agent_source"] == expected_source(served.agent)
        assert found["status"] != "UNKNOWN"
        assert len(found["members"]) == 1


class TestWatch:
    """``--watch`` shows it too: once on stderr when piped, one line on the screen."""

    async def test_piped_watch_warns_once_then_says_when_it_can_read(self, failing: Served) -> None:
        """JSON Lines carry agent_source; stderr has the warning once, then one line at recovery."""
        process = await asyncio.create_subprocess_exec(
            *PYTHON,
            "query",
            "status",
            "--node",
            failing.agent.address,
            "--format",
            "json",
            "--watch",
            "0.2",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "TZ": "UTC", "PYTHONFAULTHANDLER": "1"},
        )
        assert process.stdout is not None
        assert process.stderr is not None
        line_before, source_before = expected_line(failing.agent), expected_source(failing.agent)
        try:
            first = [await asyncio.wait_for(process.stdout.readline(), 30) for _ in range(3)]
            failing.source.fault = None
            await failing.period()
            while json.loads(line := await asyncio.wait_for(process.stdout.readline(), 30))[
                "agent_source"
            ] != {"ok": True}:
                assert line, "the watch ended"
            await asyncio.wait_for(process.stdout.readline(), 30)  # stderr has been written
        finally:
            _, text = await interrupt(process)
        assert process.returncode == 0
        for line in first:
            assert json.loads(line)["agent_source"] == source_before
        assert text == (
            line_before + f"grstats: agent {failing.agent.address} can read its member again\n"
        )

    def test_the_screen_shows_one_warning_line(self) -> None:
        """The live screen has the warning on one line under the title, cut to the width."""
        status = GroupStatus(
            agent="db1:7400",
            group={
                "STATUS": "UNKNOWN",
                "STATUS_TEXT": source_unknown("db1:7400", FAULT.message).text,
            },
            member_columns=(),
            member_rows=(),
            source=SourceReport(FAULT, int(1e9 * 1_000_000)),
        )
        screen = WatchScreen("db1:7400", 1.0)
        screen.answered(status)
        console = Console(file=io.StringIO(), width=80, height=24, color_system=None)
        console.print(screen.render(1e9 + 7))
        lines = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
        assert lines[1].startswith(
            f"agent db1:7400 cannot read its member since {clock_text(int(1e15), 1e9)}:"
        )
        assert len(lines[1]) <= 80
        assert "Group status unknown: agent db1:7400 cannot read its member: Access" in lines[2]


class TestLine:
    """The warning line and the JSON object, as values."""

    def test_today_shows_the_time_only(self) -> None:
        """A fault that began today shows HH:MM:SS UTC; another day adds the date."""
        now = calendar.timegm((2026, 3, 4, 19, 30, 0, 0, 0, 0))
        began = calendar.timegm((2026, 3, 4, 19, 26, 13, 0, 0, 0)) * 1_000_000
        report = SourceReport(FAULT, began)
        assert source_line("h:1", report, now) == (
            f"agent h:1 cannot read its member since 19:26:13 UTC: {FAULT.message} Fix: {FAULT.fix}"
        )
        assert "since 2026-03-04 19:26:13 UTC:" in (source_line("h:1", report, now + 86400) or "")

    def test_since_in_the_zone_asked(self) -> None:
        """In another zone the time, the day and the mark are that zone's (here the next day)."""
        now = calendar.timegm((2026, 7, 4, 23, 30, 0, 0, 0, 0))
        report = SourceReport(FAULT, (now - 60) * 1_000_000)
        paris = parse_time_zone("Europe/Paris")  # 01:29:00 CEST on July 5th
        assert "since 01:29:00 CEST:" in (source_line("h:1", report, now, paris) or "")
        plus = parse_time_zone("+02:00")
        assert "since 01:29:00 +02:00:" in (source_line("h:1", report, now, plus) or "")
        assert "since 2026-07-04 23:29:00 UTC:" in (source_line("h:1", report, now + 86400) or "")

    def test_no_fix_no_since_and_one_line(self) -> None:
        """Without a fix there is no Fix part, without since no time; newlines become spaces."""
        fault = SourceFault(kind="other", message="broken\n  badly\x1b[2J", fix="")
        assert source_line("h:1", SourceReport(fault), 0) == (
            "agent h:1 cannot read its member: broken badly [2J"
        )
        assert source_line("h:1", SourceReport(), 0) is None

    def test_the_json_object(self) -> None:
        """While the agent can read, only ok; else kind, message, fix and since in UTC."""
        assert source_document(SourceReport()) == {"ok": True}
        assert source_document(SourceReport(FAULT, 1_700_000_010_500_000)) == {
            "ok": False,
            "kind": FAULT.kind,
            "message": FAULT.message,
            "fix": FAULT.fix,
            "since": "2023-11-14T22:13:30Z",
        }
