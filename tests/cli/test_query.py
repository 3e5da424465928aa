"""grstats query against real agents: tables, JSON, extended columns, and a node that is down.

One test runs the installed script as a process (the query command's smoke test); the others
call ``grstats.cli.main`` in-process, in a thread while the agents serve on the test's loop.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import pytest

from tests.agent.test_runtime import Group, start_group
from tests.agent.test_source_visibility import FAULT, expected_line, expected_source, serve
from tests.inprocess import grstats_in_thread, machine_zone, run_main

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from datetime import tzinfo

    from tests.inprocess import Grstats

SCRIPT = Path(sys.executable).parent / "grstats"


async def grstats_process(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the installed grstats in a subprocess without blocking the agents' event loop."""
    process = await asyncio.create_subprocess_exec(
        SCRIPT, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return subprocess.CompletedProcess(args, process.returncode, out.decode(), err.decode())


@pytest.fixture(name="grstats")
def _grstats(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Grstats:
    """``grstats`` in-process, with no GRSTATS_ variable of the environment that runs the tests."""
    for name in os.environ:
        if name.startswith("GRSTATS_"):
            monkeypatch.delenv(name)
    return grstats_in_thread(capsys)


@pytest.fixture(name="group")
async def _group() -> AsyncIterator[Group]:
    group = await start_group(3)
    await group.rounds(2)
    yield group
    for agent in group.agents:
        await agent.stop(grace_s=0)


async def test_stats_as_a_mysql_table(group: Group) -> None:
    """The installed script's stats query prints every member's row in the mysql client's layout."""
    done = await grstats_process("query", "stats", "--node", group.agents[0].address)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("| CHANNEL_NAME ")
    assert "COUNT_TRANSACTIONS_CHECKED" in lines[1]
    assert lines[-1].startswith("3 rows in set (")
    for agent in group.agents:
        assert agent.member_id in done.stdout


async def test_members_as_json_with_extended_columns(group: Group, grstats: Grstats) -> None:
    """The members query in JSON --extended gives objects keyed by the exact column names."""
    address = group.agents[2].address
    done = await grstats("query", "members", "--node", address, "--format", "json", "--extended")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert list(document) == ["agent", "table", "agent_source", "rows"]
    assert document["agent"] == address
    assert document["table"] == "replication_group_members"
    assert document["agent_source"] is None  # the agent reads its member
    rows = document["rows"]
    assert len(rows) == 3
    assert list(rows[0])[:2] == ["CHANNEL_NAME", "MEMBER_ID"]
    assert list(rows[0])[-5:] == ["CONNECTED", "IN_VIEW", "LAST_SEEN", "AGE_MS", "SOURCE"]
    assert {row["CONNECTED"] for row in rows} == {"YES"}
    assert isinstance(rows[0]["MEMBER_PORT"], int)


@pytest.mark.parametrize(
    ("what", "table"),
    [
        ("members", "replication_group_members"),
        ("stats", "replication_group_member_stats"),
        ("lag", "replication_group_member_lag"),
        ("gtids", "replication_group_member_gtid_executed"),
    ],
)
async def test_table_json_carries_the_agent_source(what: str, table: str, grstats: Grstats) -> None:
    """An agent that cannot read its member: agent_source as in status, and the stderr line."""
    failing = await serve(FAULT)
    try:
        address = failing.agent.address
        with machine_zone("Asia/Kolkata"):  # grstats shows UTC by default all the same
            done = await grstats("query", what, "--node", address, "--format", "json")
    finally:
        await failing.agent.stop(grace_s=0)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert (document["agent"], document["table"]) == (address, table)
    assert document["agent_source"] == expected_source(failing.agent)
    assert isinstance(document["rows"], list)
    assert done.stderr == expected_line(failing.agent)


async def test_a_node_that_does_not_answer(grstats: Grstats) -> None:
    """A node where no agent listens is a one-line error and exit status 1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = await grstats("query", "lag", "--node", f"127.0.0.1:{port}", "--timeout", "2")
    assert done.returncode == 1
    assert done.stderr.startswith("grstats: error: 127.0.0.1:")
    assert "unreachable" in done.stderr or "no answer" in done.stderr


async def test_bad_arguments_exit_2(grstats: Grstats) -> None:
    """An unknown table word is a usage error (exit 2)."""
    done = await grstats("query", "everything", "--node", "127.0.0.1:1")
    assert done.returncode == 2


def vertical_values(text: str, name: str) -> dict[str, str]:
    """MEMBER_ID -> the value of column ``name`` in the ``\\G`` layout ``text``."""
    found: dict[str, str] = {}
    member = ""
    for line in text.splitlines():
        column, _, value = line.strip().partition(": ")
        if column == "MEMBER_ID":
            member = value
        elif column == name:
            found[member] = value
    return found


@pytest.mark.parametrize(
    ("flag", "machine", "zone"),
    [
        pytest.param([], "Asia/Kolkata", UTC, id="default-utc-whatever-the-machine"),
        pytest.param(["--time-zone", "+02:00"], "UTC", timezone(timedelta(hours=2)), id="offset"),
        pytest.param(
            ["--time-zone", "SYSTEM"], "America/New_York", ZoneInfo("America/New_York"), id="system"
        ),
        pytest.param(["--time-zone", "Europe/Paris"], "UTC", ZoneInfo("Europe/Paris"), id="named"),
    ],
)
async def test_time_zone_moves_the_text_and_json_stays_utc(
    group: Group, flag: list[str], machine: str, zone: tzinfo, grstats: Grstats
) -> None:
    """LAST_SEEN prints as a MySQL session with that time_zone does; JSON holds it in UTC, Z."""
    address = group.agents[1].address
    asked = ("query", "members", "--node", address, "--extended")
    with machine_zone(machine):
        done = await grstats(*asked, "--format", "json", *flag)
        shown = await grstats(*asked, "--format", "vertical", *flag)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    seen = {row["MEMBER_ID"]: datetime.fromisoformat(row["LAST_SEEN"]) for row in rows}
    assert all(row["LAST_SEEN"].endswith("Z") for row in rows)
    assert {moment.utcoffset() for moment in seen.values()} == {timedelta(0)}
    assert shown.returncode == 0, shown.stderr
    assert vertical_values(shown.stdout, "LAST_SEEN") == {
        member: f"{moment.astimezone(zone):%Y-%m-%d %H:%M:%S.%f}" for member, moment in seen.items()
    }


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--time-zone", "+14:01"], {}, "--time-zone: Unknown or incorrect time zone: '+14:01'"),
        (["--time-zone", "Mars/Olympus"], {}, "--time-zone: Unknown or incorrect time zone: "),
        ([], {"GRSTATS_TIME_ZONE": "-14:00"}, "GRSTATS_TIME_ZONE: Unknown or incorrect time zone"),
    ],
)
def test_a_bad_time_zone_exits_2(
    args: list[str],
    env: dict[str, str],
    named: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A zone MySQL's time_zone would refuse exits 2, naming where it came from and the value."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    done = run_main(["query", "lag", "--node", "127.0.0.1:1", *args], capsys)
    assert done.returncode == 2
    assert done.stderr.startswith(f"grstats: error: {named}")
    assert done.stderr.count("\n") == 1
