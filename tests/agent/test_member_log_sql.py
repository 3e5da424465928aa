"""Issue 48, point 3: the SQL endpoint serves every member's GR log lines.

``grstats.replication_group_member_log`` through a real mysql-mimic server and PyMySQL
(tests/agent/sql/test_session.py's endpoint: agent 0 of a simulated 3-member group, run on until
every agent recorded the lines its server wrote at the group's start).
"""

# ruff: noqa: S608

from __future__ import annotations

from typing import TYPE_CHECKING

from grstats.agent.member_log import FIRST_RECORD_WAIT
from grstats.core.rows.member_log import REPLICATION_GROUP_MEMBER_LOG
from tests.agent.sql.test_session import (
    _client,  # noqa: F401  (the client fixture)
    _endpoint,  # noqa: F401  (the endpoint fixture)
    texts,
    wire,
)

if TYPE_CHECKING:
    from tests.agent.sql.test_session import Client, Endpoint

LOG = REPLICATION_GROUP_MEMBER_LOG.name


async def test_select_star_is_the_agents_table(endpoint: Endpoint, client: Client) -> None:
    """SELECT * gives the agent's rows of every member, with MySQL's types for each column."""
    await endpoint.group.rounds(FIRST_RECORD_WAIT)  # each agent's first record of its lines
    columns, rows = endpoint.agent.tables(extended=False)[LOG]
    assert columns == REPLICATION_GROUP_MEMBER_LOG.columns  # no extended columns
    description, got = await client.query(f"SELECT * FROM grstats.{LOG}")
    assert description == [(c.name, wire(c)) for c in columns]
    assert got == texts(columns, rows)
    assert len({row[-1] for row in got}) == 3  # MEMBER_ID: all three members' lines


async def test_queries_filter_and_group_the_lines(endpoint: Endpoint, client: Client) -> None:
    """WHERE and GROUP BY run on the lines: each member's count of System lines."""
    await endpoint.group.rounds(FIRST_RECORD_WAIT)
    _, got = await client.query(
        f"SELECT MEMBER_ID, COUNT(*) AS n FROM grstats.{LOG} WHERE PRIO = 'System' "
        "AND ERROR_CODE = 'MY-011503' GROUP BY MEMBER_ID ORDER BY MEMBER_ID"
    )
    assert [n for _, n in got] == ["1", "1", "1"]  # each server's membership line at the start


async def test_describe_gives_error_logs_types(client: Client) -> None:
    """The columns' types are performance_schema.error_log's (table_error_log.cc), and MEMBER_ID."""
    _, got = await client.query(
        "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE FROM information_schema.COLUMNS "
        f"WHERE TABLE_SCHEMA = 'grstats' AND TABLE_NAME = '{LOG}' ORDER BY ORDINAL_POSITION"
    )
    assert got == [
        ("LOGGED", "timestamp(6)", "NO"),
        ("THREAD_ID", "bigint unsigned", "YES"),
        ("PRIO", "enum('System','Error','Warning','Note')", "NO"),
        ("ERROR_CODE", "varchar(10)", "YES"),
        ("SUBSYSTEM", "varchar(7)", "YES"),
        ("DATA", "text", "NO"),
        ("MEMBER_ID", "char(36)", "NO"),
    ]
