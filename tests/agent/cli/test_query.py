"""grstats query against real agents: tables, JSON, extended columns, and a node that is down."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.agent.test_runtime import Group, start_group
from tests.agent.test_source_visibility import FAULT, expected_line, expected_source, serve
from tests.agent.test_source_visibility import grstats as grstats_in_utc

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

SCRIPT = Path(sys.executable).parent / "grstats"


async def grstats(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the installed grstats in a subprocess without blocking the agents' event loop."""
    process = await asyncio.create_subprocess_exec(
        SCRIPT, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return subprocess.CompletedProcess(args, process.returncode, out.decode(), err.decode())


@pytest.fixture(name="group")
async def _group() -> AsyncIterator[Group]:
    group = await start_group(3)
    await group.rounds(2)
    yield group
    for agent in group.agents:
        await agent.stop(grace_s=0)


async def test_stats_as_a_mysql_table(group: Group) -> None:
    """The stats query prints every member's row in the mysql client's boxed layout."""
    done = await grstats("query", "stats", "--node", group.agents[0].address)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("| CHANNEL_NAME ")
    assert "COUNT_TRANSACTIONS_CHECKED" in lines[1]
    assert lines[-1].startswith("3 rows in set (")
    for agent in group.agents:
        assert agent.member_id in done.stdout


async def test_members_as_json_with_extended_columns(group: Group) -> None:
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
async def test_table_json_carries_the_agent_source(what: str, table: str) -> None:
    """An agent that cannot read its member: agent_source as in status, and the stderr line."""
    failing = await serve(FAULT)
    try:
        address = failing.agent.address
        done = await grstats_in_utc("query", what, "--node", address, "--format", "json")
    finally:
        await failing.agent.stop(grace_s=0)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert (document["agent"], document["table"]) == (address, table)
    assert document["agent_source"] == expected_source(failing.agent)
    assert isinstance(document["rows"], list)
    assert done.stderr == expected_line(failing.agent)


async def test_a_node_that_does_not_answer() -> None:
    """A node where no agent listens is a one-line error and exit status 1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = await grstats("query", "lag", "--node", f"127.0.0.1:{port}", "--timeout", "2")
    assert done.returncode == 1
    assert done.stderr.startswith("grstats: error: 127.0.0.1:")
    assert "unreachable" in done.stderr or "no answer" in done.stderr


async def test_bad_arguments_exit_2() -> None:
    """An unknown table word is a usage error (exit 2)."""
    done = await grstats("query", "everything", "--node", "127.0.0.1:1")
    assert done.returncode == 2
