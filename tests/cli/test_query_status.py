"""grstats query status against real agents: the JSON document, the text layouts, exit statuses.

The agents are a simulated group over gRPC on 127.0.0.1 (tests.agent.test_runtime), driven one
period per second of a fake clock; the command runs in-process (``grstats.cli.main`` in a thread; the query command's process smoke
test is in test_query.py).
"""

from __future__ import annotations

import json
import re
import socket
import sys
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from grpc_health.v1 import health

from grstats.agent.server import build_server
from grstats.cli.status_view import GroupStatus, document, render_status
from grstats.core.rows.zone import parse_time_zone
from tests.agent.test_runtime import Group, start_group, stop_all
from tests.inprocess import grstats_in_thread

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping
    from pathlib import Path

    from grstats.agent.runtime import Agent
    from grstats.agent.served import Table
    from tests.inprocess import Grstats

#: ``python -m grstats``, for the tests that start it as a process (test_status_watch).
PYTHON = (sys.executable, "-m", "grstats")
TOLERATES_ONE = "Group is ONLINE and can tolerate up to ONE failure."
#: The documented keys of the JSON document and of each of its members (docs/cli.md).
DOCUMENT_KEYS = {
    "status",
    "status_text",
    "tolerance",
    "mode",
    "primary",
    "group_name",
    "group_label",
    "view_id",
    "as_of",
    "members",
    "throttled",
    "throttled_by",
    "agent",
    "agent_source",
    "stable_set_stalled",
    "disagreements",
    "next_primary",
}
#: The keys of ``next_primary`` (docs/cli.md).
NEXT_PRIMARY_KEYS = {
    "member_id",
    "host",
    "port",
    "version",
    "weight",
    "weight_known",
    "applier_lag_seconds",
    "transactions_behind",
    "errant",
    "errant_transactions",
    "warning",
}
MEMBER_KEYS = {
    "member_id",
    "host",
    "port",
    "state",
    "role",
    "version",
    "connected",
    "age_ms",
    "applier_lag_seconds",
    "applier_queue",
    "certifier_queue",
    "transactions_behind",
    "read_only",
    "super_read_only",
    "throttling",
    "clock_skew_ms",
    "errant_transactions",
    "split_brain",
    "member_weight",
    "transactions_left",
    "apply_rate",
    "eta_s",
}
#: A time in the JSON: ISO 8601 in UTC with Z, to the microsecond.
ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


@pytest.fixture(name="grstats")
def _grstats(capsys: pytest.CaptureFixture[str]) -> Grstats:
    """``grstats`` run in-process, in a thread, while the agents serve on the test's loop."""
    return grstats_in_thread(capsys)


def free_port() -> int:
    """A port of 127.0.0.1 where nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(name="group")
async def _group() -> AsyncIterator[Group]:
    group = await start_group(3)
    await group.rounds(2)
    yield group
    await stop_all(group)


async def test_the_groups_label_from_any_agent(grstats: Grstats) -> None:
    """One agent's group_label names the group in every agent's status, text and JSON (issue 32)."""
    group = await start_group(3, group_labels={0: "orders"})
    try:
        await group.rounds(2)
        for asked in group.agents:
            done = await grstats("query", "status", "--node", asked.address, "--format", "json")
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stdout)["group_label"] == "orders"
        text = await grstats("query", "status", "--node", group.agents[2].address)
        assert "group label: orders\n" in text.stdout
    finally:
        await stop_all(group)


async def test_json_is_the_documented_document(group: Group, grstats: Grstats) -> None:
    """--format json prints one object with exactly the documented keys: OK, tolerance 1, 3 members."""
    asked = group.agents[1]
    done = await grstats("query", "status", "--node", asked.address, "--format", "json")
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    assert set(found) == DOCUMENT_KEYS
    primary = group.agents[0].member_id
    local = group.agents[0].local
    assert local is not None
    assert {key: found[key] for key in DOCUMENT_KEYS - {"members", "as_of", "next_primary"}} == {
        "status": "OK",
        "status_text": TOLERATES_ONE,
        "tolerance": 1,
        "mode": "single-primary",
        "primary": [primary],
        "group_name": local.view.group_name,
        "group_label": None,
        "view_id": local.view.view_id,
        "throttled": False,
        "throttled_by": [],
        "agent": asked.address,
        "agent_source": {"ok": True},
        "stable_set_stalled": None,
        "disagreements": [],
    }
    assert set(found["next_primary"]) == NEXT_PRIMARY_KEYS
    next_up = min(agent.member_id for agent in group.agents[1:])  # weights 50: the lowest uuid
    assert (found["next_primary"]["member_id"], found["next_primary"]["weight"]) == (next_up, 50)
    assert ISO_UTC.fullmatch(found["as_of"])
    as_of = datetime.fromisoformat(found["as_of"])
    assert as_of.utcoffset() == timedelta(0)
    members = found["members"]
    assert [m["member_id"] for m in members] == sorted(a.member_id for a in group.agents)
    for member in members:
        assert set(member) == MEMBER_KEYS
        assert member["state"] == "ONLINE"
        assert member["role"] == ("PRIMARY" if member["member_id"] == primary else "SECONDARY")
        assert (member["host"], member["connected"], member["throttling"]) == (
            "127.0.0.1",
            True,
            False,
        )
        assert isinstance(member["port"], int)
        assert isinstance(member["age_ms"], int)
        assert member["read_only"] in (True, False, None)
        assert member["super_read_only"] in (True, False, None)


async def test_table_has_the_summary_and_a_boxed_row_per_member(
    group: Group, grstats: Grstats
) -> None:
    """The default layout: the status lines, then every member as the mysql client's table."""
    done = await grstats("query", "status", "--node", group.agents[0].address)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].strip() == "status: OK"
    assert lines[1].strip() == f"status text: {TOLERATES_ONE}"
    assert f"agent: {group.agents[0].address}" in [line.strip() for line in lines]
    header = next(line for line in lines if line.startswith("| MEMBER_ID"))
    assert "MEMBER_STATE" in header
    assert "THROTTLING" in header
    rows = [line for line in lines if line.startswith("| ") and line != header]
    for agent in group.agents:
        assert [row for row in rows if row.startswith(f"| {agent.member_id} ")], agent.member_id
    assert lines[-1].startswith("3 rows in set (")


async def test_vertical_has_the_summary_and_a_record_per_member(
    group: Group, grstats: Grstats
) -> None:
    """--format vertical: the status lines, then every member as \\G prints it."""
    done = await grstats(
        "query", "status", "--node", group.agents[2].address, "--format", "vertical"
    )
    assert done.returncode == 0, done.stderr
    stripped = [line.strip() for line in done.stdout.splitlines()]
    assert stripped[0] == "status: OK"
    assert "*************************** 3. row ***************************" in stripped
    for agent in group.agents:
        assert f"MEMBER_ID: {agent.member_id}" in stripped
    assert stripped[-1].startswith("3 rows in set (")


async def test_no_quorum_is_an_answer_exit_0(tmp_path: Path, grstats: Grstats) -> None:
    """Two of three members crashed: the verdict NO_QUORUM is data, printed with exit status 0."""
    scenario = tmp_path / "two-crash.toml"
    scenario.write_text(
        'name = "two-crash"\ndescription = "members 2 and 1 crash"\nmode = "single-primary"\n'
        'members = 3\n[[events]]\nat = 12\naction = "crash"\nmember = 2\n'
        '[[events]]\nat = 25\naction = "crash"\nmember = 1\n',
        encoding="utf-8",
    )
    group = await start_group(3, scenario=str(scenario))
    try:
        await group.rounds(21)  # 31 s after the group started: member 1 UNREACHABLE, one of two
        done = await grstats(
            "query", "status", "--node", group.agents[0].address, "--format", "json"
        )
    finally:
        await stop_all(group)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert (found["status"], found["tolerance"]) == ("NO_QUORUM", 0)
    assert {m["state"] for m in found["members"]} == {"ONLINE", "UNREACHABLE", "OFFLINE"}


@pytest.mark.parametrize("value", ["0", "-1", "abc", "nan", "inf"])
async def test_a_bad_watch_value_exits_2_naming_it(value: str, grstats: Grstats) -> None:
    """--watch takes a positive number of seconds; anything else is exit 2 naming --watch and the value."""
    done = await grstats("query", "status", "--node", "127.0.0.1:1", "--watch", value)
    assert done.returncode == 2
    assert done.stderr.startswith("grstats: error: --watch:")
    assert repr(value) in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        pytest.param(["status", "--extended"], "--extended", id="status-extended"),
        pytest.param(["lag", "--watch"], "--watch", id="lag-watch"),
    ],
)
async def test_flags_that_do_not_apply_exit_2(args: list[str], flag: str, grstats: Grstats) -> None:
    """--extended with status, and --watch with another table, are usage errors naming the flag."""
    done = await grstats("query", *args, "--node", "127.0.0.1:1")
    assert done.returncode == 2
    assert done.stderr.startswith(f"grstats: error: {flag}:")


async def test_an_agent_that_does_not_answer_exits_1_with_one_line(grstats: Grstats) -> None:
    """A node where no agent listens: exit status 1 and one line on standard error."""
    port = free_port()
    done = await grstats("query", "status", "--node", f"127.0.0.1:{port}", "--timeout", "2")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"grstats: error: 127.0.0.1:{port}: ")
    assert "unreachable" in done.stderr or "no answer" in done.stderr


class OlderAgent:
    """An agent as served before some tables existed (the status tables, by default).

    The real agent's tables but those ``lacks`` names.
    """

    def __init__(
        self, agent: Agent, lacks: Callable[[str], bool] = lambda n: "status" in n
    ) -> None:
        self._agent = agent
        self._lacks = lacks

    @property
    def address(self) -> str:
        return self._agent.address

    @property
    def member_id(self) -> str:
        return self._agent.member_id

    def tables(self, extended: bool) -> Mapping[str, Table]:
        tables = self._agent.tables(extended)
        return {name: rows for name, rows in tables.items() if not self._lacks(name)}


async def test_an_older_agent_without_the_tables_exits_1_with_one_line(
    group: Group, grstats: Grstats
) -> None:
    """The real Query service over an older agent's tables: one line naming the missing table, exit 1."""
    agent = group.agents[0]
    server = build_server(OlderAgent(agent), agent.rounds, health.aio.HealthServicer())
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        done = await grstats("query", "status", "--node", f"127.0.0.1:{port}")
        plain = await grstats("query", "members", "--node", f"127.0.0.1:{port}")
    finally:
        await server.stop(grace=None)
    assert plain.returncode == 0, plain.stderr  # the server does answer the older tables
    assert done.returncode == 1
    assert done.stderr == (
        f"grstats: error: 127.0.0.1:{port}: the agent does not serve replication_group_status:"
        " it is an older grstats agent (upgrade it)\n"
    )


def wire(agent: Agent) -> dict[str, tuple[list[str], list[tuple[Any, ...]]]]:
    """The agent's two status tables as a client reads them: column names and rows."""
    tables = agent.tables(extended=False)
    return {
        name: ([c.name for c in tables[name][0]], list(tables[name][1]))
        for name in ("replication_group_status", "replication_group_member_status")
    }


async def test_a_newer_agents_extra_columns_do_not_change_the_document(group: Group) -> None:
    """Columns a newer agent appends are left out of the JSON and shown in the members' table."""
    tables = wire(group.agents[0])
    before = GroupStatus.from_tables("a:1", tables)
    for names, rows in tables.values():
        names.append("NEWER_COLUMN")
        rows[:] = [(*row, "newer") for row in rows]
    after = GroupStatus.from_tables("a:1", tables)
    assert document(after) == document(before)
    assert set(document(after)) == DOCUMENT_KEYS
    text = render_status(after, "table")
    assert "| NEWER_COLUMN |" in text
    assert text.count("| newer        |") == 3


def test_as_of_in_the_zone_asked_and_utc_in_json() -> None:
    """The text's as of is in --time-zone and marked with it; the JSON's is ISO 8601 UTC."""
    summer_us = 1_784_116_800_000_001  # 2026-07-15 12:00:00.000001 UTC
    status = GroupStatus(
        agent="db1:7400",
        group={"STATUS": "OK", "AS_OF": summer_us},
        member_columns=(),
        member_rows=(),
    )
    paris = parse_time_zone("Europe/Paris")
    assert "as of: 2026-07-15 14:00:00.000001 CEST\n" in render_status(status, "table", zone=paris)
    assert "as of: 2026-07-15 12:00:00.000001 UTC\n" in render_status(status, "vertical")
    minus = parse_time_zone("-05:30")
    assert "as of: 2026-07-15 06:30:00.000001 -05:30\n" in render_status(
        status, "table", zone=minus
    )
    found = json.loads(render_status(status, "json", zone=paris))
    assert found["as_of"] == "2026-07-15T12:00:00.000001Z"
    assert datetime.fromisoformat(found["as_of"]).timestamp() * 1e6 == pytest.approx(summer_us)
    unknown = GroupStatus(agent="db1:7400", group={"AS_OF": 0}, member_columns=(), member_rows=())
    assert document(unknown)["as_of"] is None
