"""SHOW's direct answers (agent/sql/show.py) are what their SELECTs over information_schema give."""

from __future__ import annotations

import pytest
from sqlglot.executor import execute

from grstats.agent.sql import metadata, show
from grstats.agent.sql.catalog import INFORMATION_SCHEMA

PS = "performance_schema"
QUERIES = {
    "columns": show.columns_query(PS, "replication_group_members", full=False, like=None),
    "full-columns-like": show.columns_query(
        PS, "replication_group_member_stats", full=True, like="COUNT_TRANSACTIONS_%"
    ),
    "tables": show.tables_query(PS, full=True, like=None),
    "tables-like": show.tables_query("grstats", full=False, like="replication_group_member_%"),
    "databases": show.databases_query(None),
    "index": show.index_query(PS, "global_variables"),
    "status": show.table_status_query(PS, "replication_group_members"),
}


@pytest.mark.parametrize("query", QUERIES.values(), ids=QUERIES.keys())
def test_direct_answer_is_the_selects(query: show.ShowQuery) -> None:
    """Each SHOW's filter and sort give the rows sqlglot's executor gives for its SELECT."""
    name = query.table.lower()
    columns = metadata.info_tables()[name].columns
    rows = metadata.info_rows(name, {(PS, "replication_group_members"): 3})
    tables = {
        INFORMATION_SCHEMA: {
            query.table: [
                {column.name: value for column, value in zip(columns, row, strict=True)}
                for row in rows
            ]
        }
    }
    expected = execute(query.select(), dialect="mysql", tables=tables).rows
    at = {column.name: index for index, column in enumerate(columns)}
    answer = [
        tuple(row[at[column]] for column, _ in query.outputs) for row in query.answer(columns, rows)
    ]
    assert answer == [tuple(row) for row in expected]
    assert answer  # every statement here selects some rows


def test_like_is_mysqls_for_names() -> None:
    """LIKE matches names in any case, ``_`` is one character, and ``\\_`` a literal ``_``."""
    matches = show.like_matcher("member\\_p%")
    assert [name for name in ("MEMBER_PORT", "member_port", "MEMBERXPORT") if matches(name)] == [
        "MEMBER_PORT",
        "member_port",
    ]
    assert show.like_matcher("a_c")("abc")
    assert not show.like_matcher("a_c")("abbc")
