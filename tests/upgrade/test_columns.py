"""The columns an agent sends a Query client of each protocol revision (agent.convert, known_columns)."""

from __future__ import annotations

from pathlib import Path

from grstats.core.build import PROTOCOL_REVISION
from grstats.core.query_wire import (
    QUERY_COLUMNS,
    SAID_QUERY_REVISION,
    UNSAID_COLUMNS,
    for_client,
    known_columns,
    query_request,
)
from grstats.core.rows import EXTENDED_COLUMNS, TABLES, Column, Kind, Value

ROOT = Path(__file__).resolve().parents[2]
MEMBERS = "replication_group_members"
#: A column appended after every release so far, of a kind an older collector cannot take as text.
LATER = Column("LATER_SECONDS", "DECIMAL(20,6)", nullable=True, kind=Kind.DECIMAL)


def served(name: str, *later: Column) -> tuple[list[Column], list[list[Value]]]:
    """Table ``name`` as an agent serves it with ``extended``, ``later`` appended to its own columns."""
    columns = [*TABLES[name].columns, *later, *EXTENDED_COLUMNS]
    rows: list[list[Value]] = [[f"cell {i}" for i in range(len(columns))] for _ in range(2)]
    return columns, rows


def test_a_client_that_says_no_revision_is_not_sent_a_column_appended_after_its_release() -> None:
    """Revision 0 (an older client): the column appended to its table is left out, every other kept in order."""
    columns, rows = served(MEMBERS, LATER)
    kept, kept_rows = for_client(MEMBERS, columns, rows, known_columns(0))
    assert [c.name for c in kept] == [c.name for c in columns if c is not LATER]
    position = columns.index(LATER)
    assert [list(row) for row in kept_rows] == [
        row[:position] + row[position + 1 :] for row in rows
    ]


def test_a_client_of_this_revision_or_a_later_one_gets_every_column() -> None:
    """This build's revision and newer ones get every column; so does a table the older client never knew."""
    columns, rows = served(MEMBERS, LATER)
    for revision in (PROTOCOL_REVISION, PROTOCOL_REVISION + 1):
        assert known_columns(revision) is None
        assert for_client(MEMBERS, columns, rows, known_columns(revision)) == (columns, rows)
    unknown, cells = [LATER], [[1.5]]
    assert for_client("a_table_of_later", unknown, cells, known_columns(0)) == (unknown, cells)


def test_every_revision_that_says_itself_has_its_columns() -> None:
    """Each revision from the first that says itself up to the one before this build's has its entry in QUERY_COLUMNS (add it at each bump)."""
    expected = set(range(SAID_QUERY_REVISION, PROTOCOL_REVISION))
    assert set(QUERY_COLUMNS) == expected
    for revision in range(1, SAID_QUERY_REVISION):
        assert known_columns(revision) is UNSAID_COLUMNS
    for known in (UNSAID_COLUMNS, *QUERY_COLUMNS.values()):
        for name, (own, extended) in known.items():
            assert own <= len(TABLES[name].columns)
            assert extended <= len(EXTENDED_COLUMNS)


def test_query_request_says_this_builds_revision() -> None:
    """The request of this build's clients carries PROTOCOL_REVISION."""
    request = query_request([MEMBERS], extended=True, events_since_us=7)
    assert (list(request.tables), request.extended, request.events_since_us) == ([MEMBERS], True, 7)
    assert request.protocol_revision == PROTOCOL_REVISION


def query_requests_built_by_hand() -> list[str]:
    """The lines of grstats's modules that build a QueryRequest themselves instead of query_request()."""
    return [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("agent", "cli", "collector", "core", "spark")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path.name != "query_wire.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "QueryRequest(" in line and not line.lstrip().startswith("#")
    ]


def test_every_client_of_this_build_says_its_revision() -> None:
    """No module builds a QueryRequest by hand: one that says no revision would be sent the earlier release's columns only."""
    assert query_requests_built_by_hand() == []
