"""What an agent serves, read over gRPC as ``grstats query`` reads it, for the demo to show."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import grpc

from grstats.cli.events import EVENTS_TABLE
from grstats.cli.query import WHAT, columns_named
from grstats.core.query_wire import query_request, table_from_wire
from grstats.core.rows import render
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc

if TYPE_CHECKING:
    from collections.abc import Sequence

    from grstats.core.rows import Column, Value

#: Seconds to wait for one agent's answer.
QUERY_TIMEOUT_S = 2.0


class AgentDown(Exception):
    """The agent did not answer."""


@dataclass(frozen=True, slots=True)
class Table:
    """One table as one agent served it: its columns and rows (in MEMBER_ID order)."""

    name: str
    node: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Value, ...], ...]

    def records(self) -> list[dict[str, Value]]:
        """The rows as column name -> value."""
        names = [column.name for column in self.columns]
        return [dict(zip(names, row, strict=True)) for row in self.rows]

    def member(self, member_id: str) -> dict[str, Value] | None:
        """The row of ``member_id``, or None when the table does not list it."""
        return next((row for row in self.records() if row["MEMBER_ID"] == member_id), None)

    def only(self, names: Sequence[str]) -> Table:
        """This table with only the columns ``names``, in that order."""
        index = [next(i for i, c in enumerate(self.columns) if c.name == n) for n in names]
        return Table(
            self.name,
            self.node,
            tuple(self.columns[i] for i in index),
            tuple(tuple(row[i] for i in index) for row in self.rows),
        )

    def where_member(self, member_id: str) -> Table:
        """This table with only the row of ``member_id``."""
        position = next(i for i, c in enumerate(self.columns) if c.name == "MEMBER_ID")
        rows = tuple(row for row in self.rows if row[position] == member_id)
        return Table(self.name, self.node, self.columns, rows)

    def without_freshness(self) -> Table:
        """The table's MySQL columns alone (no CONNECTED, IN_VIEW, LAST_SEEN, AGE_MS, SOURCE)."""
        mysql = [c.name for c in self.columns if c.name not in FRESHNESS]
        return self.only(mysql)

    def render(self, output_format: str = "table") -> str:
        """The table as the ``mysql`` client prints it (``table`` or ``vertical``)."""
        return render(list(self.columns), list(self.rows), output_format)


#: The columns ``--extended`` adds.
FRESHNESS = ("CONNECTED", "IN_VIEW", "LAST_SEEN", "AGE_MS", "SOURCE")


def read(node: str, what: str, *, extended: bool = True) -> Table:
    """Return table ``what`` (members, stats, lag, gtids, events) of the agent at ``node``."""
    (table,) = read_many([node], what, extended=extended)
    return table


def read_many(nodes: Sequence[str], what: str, *, extended: bool = True) -> list[Table]:
    """Return table ``what`` from every agent of ``nodes``, asked at the same moment."""
    name = EVENTS_TABLE if what == "events" else WHAT[what]
    request = query_request([name], extended=extended)
    with contextlib.ExitStack() as stack:
        channels = [stack.enter_context(grpc.insecure_channel(node)) for node in nodes]
        calls = [
            pb_grpc.QueryStub(channel).Read.future(request, timeout=QUERY_TIMEOUT_S)
            for channel in channels
        ]
        return [_table(node, name, call) for node, call in zip(nodes, calls, strict=True)]


def _table(node: str, name: str, call: grpc.Future[pb.QueryResponse]) -> Table:
    try:
        response = call.result()
    except grpc.RpcError as exc:
        raise AgentDown(f"{node}: {exc}") from exc
    wire = next((t for t in response.tables if t.name == name), None)
    if wire is None:
        raise AgentDown(f"{node}: the agent did not return {name}")
    names, rows = table_from_wire(wire)
    return Table(name, node, tuple(columns_named(name, names)), tuple(rows))
