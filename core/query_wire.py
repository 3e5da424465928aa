"""The Query service's wire forms: a request of this build, tables as columns of typed cells.

The agent's server answers with :func:`table_to_wire` (keeping of each table only the columns
an older client knows: :func:`known_columns`, :func:`for_client`); every Query client (the
collector, ``grstats query``, the demo, ``grstats doctor``) asks with :func:`query_request`
and reads the answer with :func:`table_from_wire`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grstats.core.build import OWN_BUILD
from grstats.core.rows import EXTENDED_COLUMNS, TABLES, Kind
from grstats.proto import grstats_pb2 as pb

if TYPE_CHECKING:
    from collections.abc import Sequence

    from grstats.core.rows import Column, Value

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
