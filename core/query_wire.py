"""The Query service's wire forms: a request of this build, tables as columns of typed cells.

The agent's server answers with :func:`table_to_wire` (keeping of each table only the columns
an older client knows: :func:`known_columns`, :func:`for_client`); every Query client (the
collector, ``grstats query``, the demo, ``grstats doctor``) asks with :func:`query_request`
and reads the answer with :func:`table_from_wire`, and what it says of the agent's source
with :func:`source_report_from_wire` (:class:`SourceReport`; here rather than in the agent's
modules so that ``grstats query`` loads none of them, issue 50).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from grstats.core.build import OWN_BUILD
from grstats.core.errors import AgentError
from grstats.core.fault import SourceFault
from grstats.core.rows import EXTENDED_COLUMNS, TABLES, Kind
from grstats.proto import grstats_pb2 as pb

if TYPE_CHECKING:
    from collections.abc import Sequence

    from grstats.core.rows import Column, Value

#: Longest text of the wire (hosts, versions, messages) accepted.
MAX_TEXT = 1024
#: Longest ``SourceFault.kind`` accepted (the kinds are short snake_case words).
MAX_FAULT_KIND = 64


class WireError(AgentError, ValueError):
    """A message that breaks the contract; the message names the field path and the value."""


def bounded(text: str, limit: int, where: str) -> None:
    """Raise WireError, naming ``where``, when ``text`` is longer than ``limit`` characters."""
    if len(text) > limit:
        raise WireError(f"{where}: {len(text)} characters is more than {limit}")


# -- query tables -------------------------------------------------------------------------

#: Of each table, the columns a Query client knew when it sent no ``QueryRequest.protocol_revision``
#: (main at e5928da, protocol revision 3, the release before the field, and every earlier one):
#: how many of the table's own columns (:data:`grstats.core.rows.TABLES`), then how many of
#: :data:`~grstats.core.rows.EXTENDED_COLUMNS`. Columns are only appended, so these leading
#: columns are the ones it types; a table it did not know is served whole (it never asks for one).
UNSAID_COLUMNS: dict[str, tuple[int, int]] = {
    "replication_group_members": (8, 5),
    "replication_group_member_stats": (13, 5),
    "replication_group_member_lag": (25, 5),
    "replication_group_member_gtid_executed": (3, 5),
    "replication_group_status": (14, 5),
    "replication_group_member_status": (18, 5),
    "replication_group_events": (8, 5),
}
#: The first protocol revision whose clients say theirs in ``QueryRequest.protocol_revision``.
SAID_QUERY_REVISION = 5
#: By the revision a client says, from :data:`SAID_QUERY_REVISION` to the one before
#: PROTOCOL_REVISION, the columns its clients know, as :data:`UNSAID_COLUMNS` (every table of
#: that release). Add the entry of PROTOCOL_REVISION here when PROTOCOL_REVISION is bumped
#: (tests/upgrade/test_columns.py checks that every revision has one).
QUERY_COLUMNS: dict[int, dict[str, tuple[int, int]]] = {}


def query_request(
    tables: Sequence[str] = (), *, extended: bool = False, events_since_us: int = 0
) -> pb.QueryRequest:
    """Return a Query.Read request of this build: it says this agent's protocol revision."""
    return pb.QueryRequest(
        tables=list(tables),
        extended=extended,
        events_since_us=events_since_us,
        protocol_revision=OWN_BUILD.revision,
    )


def known_columns(revision: int) -> dict[str, tuple[int, int]] | None:
    """The columns a Query client of protocol ``revision`` knows of each table; None: every one.

    0 (a client older than the field) and any revision before :data:`SAID_QUERY_REVISION`
    read as :data:`UNSAID_COLUMNS`; this revision and later ones get every column (a newer
    client knows at least this agent's columns).
    """
    if revision >= OWN_BUILD.revision:
        return None
    if revision < SAID_QUERY_REVISION:
        return UNSAID_COLUMNS
    return QUERY_COLUMNS.get(revision, UNSAID_COLUMNS)


def for_client(
    name: str,
    columns: Sequence[Column],
    rows: Sequence[Sequence[Value]],
    known: dict[str, tuple[int, int]] | None,
) -> tuple[Sequence[Column], Sequence[Sequence[Value]]]:
    """Table ``name`` with only the columns a client that knows ``known`` types (known_columns).

    A column is kept when it is one of the table's first columns the client knows, or one of
    the extended columns it knows, by name; a table the client does not know is kept whole.
    """
    counts = None if known is None else known.get(name)
    if counts is None:
        return columns, rows
    own, extended = counts
    names = {column.name for column in TABLES[name].columns[:own]}
    names.update(column.name for column in EXTENDED_COLUMNS[:extended])
    kept = [index for index, column in enumerate(columns) if column.name in names]
    if len(kept) == len(columns):
        return columns, rows
    return [columns[i] for i in kept], [[row[i] for i in kept] for row in rows]


def table_to_wire(
    name: str, columns: Sequence[Column], rows: Sequence[Sequence[Value]]
) -> pb.Table:
    """Return a table as named columns of typed cells."""
    return pb.Table(
        name=name,
        columns=[column.name for column in columns],
        rows=[
            pb.Row(cells=[_cell(column, value) for column, value in zip(columns, row, strict=True)])
            for row in rows
        ],
    )


def _cell(column: Column, value: Value) -> pb.Cell:
    if value is None:
        return pb.Cell(null=True)
    if column.kind is Kind.DECIMAL:
        return pb.Cell(decimal=float(value))
    if isinstance(value, int):
        return pb.Cell(unsigned=value) if value >= 0 else pb.Cell(signed=value)
    return pb.Cell(text=str(value))


def table_from_wire(table: pb.Table) -> tuple[list[str], list[tuple[Value, ...]]]:
    """Return (column names, rows) of a wire table."""
    rows = []
    for row in table.rows:
        cells: list[Value] = []
        for cell in row.cells:
            kind = cell.WhichOneof("value")
            cells.append(None if kind in (None, "null") else getattr(cell, kind))
        rows.append(tuple(cells))
    return list(table.columns), rows


# -- what a Query answer says of the answering agent's source -----------------------------


@dataclass(frozen=True, slots=True)
class SourceReport:
    """Whether an agent can read its own member, and since when it cannot (Query answers say).

    Attributes:
        fault: why the agent cannot read its member; None while it can. An answer of an agent
            older than the report has none, and reads as "can read".
        since_us: the agent's clock when the fault began, µs since the epoch; None while it
            can read, or when the agent did not say.
    """

    fault: SourceFault | None = None
    since_us: int | None = None

    @property
    def ok(self) -> bool:
        """Whether the agent can read its member."""
        return self.fault is None


def source_report_to_wire(report: SourceReport) -> pb.SourceFault | None:
    """Return ``QueryResponse.source_fault`` of ``report``: None while the agent can read.

    Texts longer than the decoder accepts are cut short (ending in ``…``), so that a long
    driver message never makes the whole answer unreadable.
    """
    fault = report.fault
    if fault is None:
        return None
    return pb.SourceFault(
        kind=_cut(fault.kind, MAX_FAULT_KIND),
        message=_cut(fault.message, MAX_TEXT),
        fix=_cut(fault.fix, MAX_TEXT),
        since_us=max(0, report.since_us or 0),
    )


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def source_report_from_wire(response: pb.QueryResponse) -> SourceReport:
    """Return what ``response`` says of the answering agent's source; raise WireError if bad.

    An answer without ``source_fault`` (an agent that can read, or one older than the field)
    reads as "can read"; ``since_us`` 0 reads as unknown.
    """
    if not response.HasField("source_fault"):
        return SourceReport()
    message = response.source_fault
    bounded(message.kind, MAX_FAULT_KIND, "source_fault.kind")
    bounded(message.message, MAX_TEXT, "source_fault.message")
    bounded(message.fix, MAX_TEXT, "source_fault.fix")
    fault = SourceFault(kind=message.kind, message=message.message, fix=message.fix)
    return SourceReport(fault, message.since_us or None)
