"""Upgrade and rollback in any order between the earlier release (main at EARLIER) and this checkout.

One simulated group of 3 members runs for the whole module: member 0's agent of the earlier
release, members 1 and 2 of this checkout (docs/upgrades.md, "Tested pairs"). Each test adds
one process of either release beside it: a collector of one release polling an agent of the
other, a client of the earlier release, and member 2's agent rolled back onto its state
directory and upgraded again.
"""

from __future__ import annotations

import functools
import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import grpc
import pytest

from grstats.agent.registry import sqlite as sqlite_registry
from grstats.cli.demo import free_ports
from grstats.collector.records import TABLE_NAMES
from grstats.collector.spool import read_segment, sealed_segments
from grstats.core.query_wire import (
    UNSAID_COLUMNS,
    for_client,
    known_columns,
    query_request,
    table_from_wire,
    table_to_wire,
)
from grstats.core.rows import EXTENDED_COLUMNS, TABLES, Column, Kind
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc
from tests import waiting
from tests.upgrade.earlier import EARLIER, earlier_env, earlier_tree, popen, run

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

#: One worker runs the module: its group of agents is shared by every test.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("upgrade")]

#: The tables of every member that every agent serves (gtid_executed is sampled each 60 s).
TABLES_SERVED = (
    "replication_group_members",
    "replication_group_member_stats",
    "replication_group_member_lag",
)
#: Which release runs each member's agent: the earlier one's tree, or None for this checkout.
EARLIER_MEMBERS = frozenset({0})


@dataclass
class Group:
    """The module's group: its agents' processes, ports and state, and the earlier tree."""

    tree: Path
    state: Path
    ports: list[int]
    start: int
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)

    def agent(self, index: int, tree: Path | None) -> subprocess.Popen[bytes]:
        """Start member ``index``'s agent of the earlier release (``tree``) or of this checkout."""
        peers = ",".join(f"127.0.0.1:{port}" for port in self.ports)
        process = popen(
            tree,
            self.state / f"agent-{index}.log",
            *("agent", "--source", "simulated", "--scenario", "steady"),
            *("--members", "3", "--member-index", str(index)),
            *("--group-start", str(self.start), "--period", "1"),
            *("--listen", f"127.0.0.1:{self.ports[index]}", "--peers", peers),
            *("--state-dir", str(self.state / str(index)), "--log-format", "json"),
        )
        self.processes[index] = process
        return process

    def stop(self, index: int) -> int:
        """Stop member ``index``'s agent (SIGTERM) and return its exit status."""
        process = self.processes.pop(index)
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
            raise

    def logs(self) -> str:
        """The tail of every agent's log, for a failure's message."""
        return "\n".join(
            f"--- agent {index} (exit {process.poll()}):\n"
            + (self.state / f"agent-{index}.log").read_text()[-2500:]
            for index, process in sorted(self.processes.items())
        )

    def serves_everyone(self, index: int) -> bool:
        """Whether member ``index``'s agent serves 3 members CONNECTED YES in every table."""
        response = read(self.ports[index], TABLES_SERVED, revision=False)
        if response is None:
            return False
        tables = {table.name: rows_of(table) for table in response.tables}
        members = {row["MEMBER_ID"]: row for row in tables.get("replication_group_members", [])}
        if len(members) != 3 or any(row["CONNECTED"] != "YES" for row in members.values()):
            return False
        return all({row["MEMBER_ID"] for row in tables[name]} == set(members) for name in tables)

    def wait_served(self, index: int) -> None:
        """Wait until member ``index``'s agent serves every member."""
        waiting.wait_until(
            functools.partial(self.serves_everyone, index),
            45,
            f"agent {index} serves all 3 members CONNECTED YES, with rows in every table",
            detail=self.logs,
        )


def read(
    port: int, tables: tuple[str, ...], *, revision: bool, extended: bool = True
) -> pb.QueryResponse | None:
    """A Query.Read of ``tables``: as this checkout asks (``revision``) or as an older client."""
    if revision:
        request = query_request(tables, extended=extended)
    else:
        request = pb.QueryRequest(tables=tables, extended=extended)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            response: pb.QueryResponse = pb_grpc.QueryStub(channel).Read(request, timeout=3)
        except grpc.RpcError:
            return None
        return response


def rows_of(table: pb.Table) -> list[dict[str, Any]]:
    """A wire table's rows as dicts by column name."""
    columns, rows = table_from_wire(table)
    return [dict(zip(columns, row, strict=True)) for row in rows]


def json_lines(text: str) -> list[dict[str, Any]]:
    """The JSON log lines of a process's output."""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module", name="group")
def _group(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Group]:
    """The group of 3 agents, member 0's of the earlier release, every one serving everyone."""
    tree = earlier_tree()
    group = Group(tree, tmp_path_factory.mktemp("upgrade"), free_ports(3), int(time.time()))
    try:
        for index in range(3):
            group.agent(index, tree if index in EARLIER_MEMBERS else None)
        for index in range(3):
            group.wait_served(index)
        yield group
    finally:
        for index in list(group.processes):
            group.stop(index)


def test_agents_of_both_releases_serve_one_group(group: Group) -> None:
    """An earlier agent beside newer peers, and newer agents beside an earlier peer: each serves every member and refuses nothing."""
    for index in range(3):
        assert group.serves_everyone(index), group.logs()
    for index in range(3):
        lines = json_lines((group.state / f"agent-{index}.log").read_text())
        refused = [
            line
            for line in lines
            if "refused" in line.get("event", "") or "INVALID_ARGUMENT" in str(line.get("error"))
        ]
        assert not refused, refused
        assert line_events(lines).isdisjoint({"agent_failed", "registry_unreadable"})


def line_events(lines: list[dict[str, Any]]) -> set[str]:
    """The events named by log lines."""
    return {str(line.get("event")) for line in lines}


def collect(group: Group, tree: Path | None, node: int, spool: Path) -> list[dict[str, Any]]:
    """Run a collector of ``tree``'s release (None: this checkout's) for 3 polls of agent ``node``; return its records."""
    done = run(
        tree,
        *("collect", "--node", f"127.0.0.1:{group.ports[node]}", "--spool", str(spool)),
        *("--count", "3", "--interval", "1", "--log-format", "json"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    events = line_events(json_lines(done.stderr))
    assert events.isdisjoint({"agent_failover", "no_agent_answered", "poll_failed"}), done.stderr
    assert "0 polls unanswered" in done.stdout, done.stdout
    return [record for segment in sealed_segments(spool) for record in read_segment(segment)]


def test_an_earlier_collector_polls_todays_agents(group: Group, tmp_path: Path) -> None:
    """The collector of the earlier release polls an agent of this checkout: every poll is answered and spooled with every member's rows."""
    records = collect(group, group.tree, 1, tmp_path / "spool")
    assert len(records) == 3
    for record in records:
        members = record["tables"]["replication_group_members"]["rows"]
        assert len(members) == 3
        for name, table in record["tables"].items():
            known, extended = UNSAID_COLUMNS[name]
            expected = [c.name for c in (*TABLES[name].columns[:known], *EXTENDED_COLUMNS)]
            assert table["columns"] == expected[: known + extended], name


def test_todays_collector_polls_an_earlier_agent(group: Group, tmp_path: Path) -> None:
    """The collector of this checkout polls the agent of the earlier release: every poll is answered and spooled with every member's rows."""
    records = collect(group, None, 0, tmp_path / "spool")
    assert len(records) == 3
    assert all(len(r["tables"]["replication_group_members"]["rows"]) == 3 for r in records)


def earlier_schema(tree: Path) -> dict[str, Any]:
    """The earlier release's tables and stored rows, asked of its own code.

    ``tables``: each table's own columns; ``extended``: the extended columns; ``rows``: how
    many values its registry reads at most of each stored row (``newest`` in its reader).
    """
    # The earlier release's own path: its rows lived in grstats.agent.rows before issue 49's move.
    code = (
        "import json, grstats; from grstats.agent.rows import TABLES, EXTENDED_COLUMNS, "
        "ApplierStatusRow, MemberStatsRow; print(json.dumps({'file': grstats.__file__, "
        "'tables': {n: [c.name for c in t.columns] for n, t in TABLES.items()}, "
        "'extended': [c.name for c in EXTENDED_COLUMNS], "
        "'rows': {r.__name__: len(r.TABLE.columns) for r in (MemberStatsRow, ApplierStatusRow)}"
        "}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tree,
        env=earlier_env(tree),
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    schema: dict[str, Any] = json.loads(done.stdout)
    assert schema.pop("file").startswith(f"{tree}/"), "the earlier release imported this checkout"
    return schema


def test_what_todays_release_keeps_to_is_what_the_earlier_one_reads(group: Group) -> None:
    """UNSAID_COLUMNS are the earlier release's tables and the registry's widths its reader's: both asked of its code."""
    schema = earlier_schema(group.tree)
    assert {
        name: (len(columns), len(schema["extended"])) for name, columns in schema["tables"].items()
    } == UNSAID_COLUMNS
    for name, columns in schema["tables"].items():  # today's tables only append to them
        assert list(TABLES[name].column_names[: len(columns)]) == columns, name
    widths = {row.__name__: width for row, width in sqlite_registry._EARLIER_WIDTHS.items()}
    assert widths == schema["rows"]


def test_an_earlier_client_is_sent_only_the_columns_it_knows(group: Group) -> None:
    """A client that says no revision gets each table's columns of the earlier release, in its order; one that says this revision gets every column."""
    schema = earlier_schema(group.tree)
    known = {name: [*columns, *schema["extended"]] for name, columns in schema["tables"].items()}
    assert EARLIER[:7] == "e5928da"
    names = tuple(name for name in TABLES if name in known)
    old = read(group.ports[1], names, revision=False)
    new = read(group.ports[1], names, revision=True)
    assert old is not None
    assert new is not None
    trimmed = set()
    for before, now in zip(old.tables, new.tables, strict=True):
        assert before.name == now.name
        assert list(now.columns)[: len(TABLES[now.name].columns)] == list(
            TABLES[now.name].column_names
        )
        expected = [name for name in now.columns if name in known[now.name]]
        assert list(before.columns) == expected, now.name  # in the order the earlier one knows
        assert len(before.rows) == len(now.rows)
        if len(expected) < len(now.columns):
            trimmed.add(now.name)
    assert "replication_group_member_status" in trimmed  # MEMBER_WEIGHT came after EARLIER
    status = run(group.tree, "query", "status", "--node", f"127.0.0.1:{group.ports[1]}")
    assert status.returncode == 0, status.stderr
    header = next(line for line in status.stdout.splitlines() if "MEMBER_ID" in line)
    shown = [cell.strip() for cell in header.strip("|").split("|")]
    assert shown == known["replication_group_member_status"][: len(shown)], shown


def test_rollback_onto_todays_state_directory_and_upgrade_again(group: Group) -> None:
    """Member 2's agent rolled back to the earlier release on its state directory starts, reads its registry and serves everyone; upgraded again, the same."""
    log = group.state / "agent-2.log"
    for tree in (group.tree, None):
        assert group.stop(2) == 0, group.logs()
        mark = len(log.read_text())
        group.agent(2, tree)
        group.wait_served(2)
        lines = json_lines(log.read_text()[mark:])
        loaded = [line for line in lines if line.get("event") == "registry_loaded"]
        assert loaded, lines
        assert loaded[0]["members"] == 3
        assert group.processes[2].poll() is None
    for index in range(3):
        group.wait_served(index)


#: Decodes a QueryResponse on stdin as the earlier release's collector does, for one poll.
EARLIER_POLL = (
    "import sys; from grstats.proto import grstats_pb2 as pb; "
    "from grstats.collector.records import record_from_response; "
    "response = pb.QueryResponse.FromString(sys.stdin.buffer.read()); "
    "record = record_from_response(response, agent='agent', collected_at_us=1); "
    "print(len(record['tables']))"
)


def with_later_column(table: pb.Table, known: dict[str, tuple[int, int]] | None) -> pb.Table:
    """``table`` as an agent serves it after a DECIMAL column is appended to its own columns, for a client that knows ``known``."""
    by_name = {c.name: c for c in (*TABLES[table.name].columns, *EXTENDED_COLUMNS)}
    names, rows = table_from_wire(table)
    own = len(TABLES[table.name].columns)
    later = Column("LATER_SECONDS", "DECIMAL(20,6)", nullable=True, kind=Kind.DECIMAL)
    columns = [*(by_name[n] for n in names[:own]), later, *(by_name[n] for n in names[own:])]
    cells = [[*row[:own], 0.00055, *row[own:]] for row in rows]
    return table_to_wire(table.name, *for_client(table.name, columns, cells, known))


def test_an_earlier_collector_is_never_sent_a_column_it_cannot_type(group: Group) -> None:
    """The earlier release's own reader takes a poll whose lag table gained a number column, as this release serves it; sent whole, it fails as issue 45 saw."""
    answer = read(group.ports[1], TABLE_NAMES, revision=True)
    assert answer is not None
    outcomes = []
    for known in (known_columns(0), None):  # this release's rule; an agent sending every column
        tables = [
            with_later_column(t, known) if t.name == "replication_group_member_lag" else t
            for t in answer.tables
        ]
        response = pb.QueryResponse(tables=tables, member=answer.member)
        outcomes.append(
            subprocess.run(
                [sys.executable, "-c", EARLIER_POLL],
                cwd=group.tree,
                env=earlier_env(group.tree),
                input=response.SerializeToString(),
                capture_output=True,
                check=False,
                timeout=30,
            )
        )
    kept, whole = outcomes
    assert (kept.returncode, kept.stdout.strip()) == (0, b"4"), kept.stderr[-2000:]
    assert whole.returncode == 1
    assert b"LATER_SECONDS: 0.00055 is not a text value" in whole.stderr, whole.stderr[-2000:]
