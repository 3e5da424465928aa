"""GrstatsSession through a real mysql-mimic server and PyMySQL, over a simulated 3-member group.

The agents run in memory (tests/agent/test_runtime.py's ``start_group``), two periods in, with
the test clock stopped: their tables do not change while a test reads them. Agent 0's tables
are served by a ``MysqlServer`` on 127.0.0.1 (any port), and read with PyMySQL with no
converters, so every value arrives as the text the server sent.
"""

# ruff: noqa: S608

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import struct
import sys
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import pymysql  # type: ignore[import-untyped]
import pytest
import sqlglot
from mysql_mimic.server import MysqlServer
from pymysql.constants import FIELD_TYPE  # type: ignore[import-untyped]
from sqlglot import exp

from grstats.agent.limits import LimitsConfig
from grstats.agent.sql import catalog, execution, sys_schema, value_bounds
from grstats.agent.sql.session import GrstatsSession, SqlIdentity
from grstats.core.rows import (
    EXTENDED_COLUMNS,
    REPLICATION_GROUP_EVENTS,
    ROW_TABLES,
    TABLES,
    Column,
    Kind,
    Value,
    timestamp_text,
)
from grstats.core.rows.member_log import REPLICATION_GROUP_MEMBER_LOG
from grstats.core.rows.render import cell_text
from grstats.core.rows.zone import parse_time_zone
from tests.agent.test_runtime import start_group, stop_all

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping
    from datetime import tzinfo

    from grstats.agent.runtime import Agent
    from grstats.agent.served import Table
    from tests.agent.test_runtime import Group

#: The type MySQL sends for each declared type (sql/field.h, Field::type()), by its first word.
WIRE = {
    "CHAR": FIELD_TYPE.STRING,
    "VARCHAR": FIELD_TYPE.VAR_STRING,
    "ENUM": FIELD_TYPE.STRING,
    "TEXT": FIELD_TYPE.BLOB,
    "LONGTEXT": FIELD_TYPE.BLOB,
    "BIGINT": FIELD_TYPE.LONGLONG,
    "INTEGER": FIELD_TYPE.LONG,
    "TIMESTAMP": FIELD_TYPE.TIMESTAMP,
    "DECIMAL": FIELD_TYPE.NEWDECIMAL,
}
PLAIN_TABLES = ("replication_group_members", "replication_group_member_stats")
#: performance_schema's tables of the agent's own member: its variables, status and
#: communication information
OWN_MEMBER_TABLES = (
    "global_variables",
    "global_status",
    "replication_group_communication_information",
)
#: 1290 as ``err_readonly`` (sql/sql_parse.cc) words it for an account without SUPER.
READ_ONLY = (
    "The MySQL server is running with the --read-only option so it cannot execute this statement"
)


def wire(column: Column) -> int:
    """The type code MySQL sends for ``column``."""
    return int(WIRE[column.sql_type.split("(")[0].split(" ")[0]])


@dataclass(frozen=True)
class Limits:
    """The limits a session reads (a stand-in for LimitsConfig's, with its defaults)."""

    sql_query_timeout_s: float = 5.0
    sql_max_rows: int = 100_000
    sql_max_join_size: int = 100_000
    sql_max_result_bytes: int = 16 * 1024 * 1024
    sql_max_allowed_packet: int = 16 * 1024
    sql_max_cost: int = 400_000
    sql_connect_timeout_s: float = 10.0
    sql_wait_timeout_s: float = 28800.0
    sql_interactive_timeout_s: float = 28800.0


class AgentSource:
    """The SqlSource of a real agent: its tables and an identity from its own member."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def tables(self, extended: bool) -> Mapping[str, Table]:
        return self.agent.tables(extended)

    @property
    def sql_identity(self) -> SqlIdentity:
        return self.agent.sql_identity


class Client:
    """One PyMySQL connection (no converters: values are the server's text), used off the loop."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    async def query(self, sql: str) -> tuple[list[tuple[str, int]], list[tuple[str | None, ...]]]:
        """Run ``sql``: the columns (name, type code) and the rows."""

        def run() -> tuple[list[tuple[str, int]], list[tuple[str | None, ...]]]:
            with self.connection.cursor() as cursor:
                cursor.execute(sql)
                description = [(d[0], d[1]) for d in cursor.description or ()]
                return description, list(cursor.fetchall())

        return await asyncio.to_thread(run)

    async def rows(self, sql: str) -> list[tuple[str | None, ...]]:
        """The rows of ``sql``."""
        return (await self.query(sql))[1]

    async def error(self, sql: str) -> tuple[int, str]:
        """The error ``sql`` gets: (code, message)."""
        with pytest.raises(pymysql.err.MySQLError) as raised:
            await self.query(sql)
        code, message = raised.value.args
        return int(code), str(message)


@dataclass
class Endpoint:
    """A MysqlServer of GrstatsSessions over agent 0 of a 3-member group."""

    group: Group
    port: int

    @property
    def agent(self) -> Agent:
        return self.group.agents[0]

    async def connect(self, **options: Any) -> Client:
        """A new client connection."""
        connection = await asyncio.to_thread(
            pymysql.connect,
            host="127.0.0.1",
            port=self.port,
            user="x",
            password="",
            conv={},
            **options,
        )
        return Client(connection)


@contextlib.asynccontextmanager
async def serving(limits: Any) -> AsyncIterator[Endpoint]:
    """A 3-member group two periods in and a MysqlServer of agent 0's tables under ``limits``."""
    group = await start_group(3, memory=True)
    executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="sql")
    server = MysqlServer(
        session_factory=lambda: GrstatsSession(AgentSource(group.agents[0]), limits, executor)
    )
    try:
        await group.rounds(2)
        await server.start_server(host="127.0.0.1", port=0)
        yield Endpoint(group, server.sockets()[0].getsockname()[1])
    finally:
        server.close()
        await server.wait_closed()
        executor.shutdown(wait=True, cancel_futures=True)
        await stop_all(group)


@pytest.fixture(name="endpoint")
async def _endpoint() -> AsyncIterator[Endpoint]:
    """The endpoint with the default limits (LimitsConfig's)."""
    async with serving(LimitsConfig()) as endpoint:
        yield endpoint


@pytest.fixture(name="client")
async def _client(endpoint: Endpoint) -> AsyncIterator[Client]:
    """One connection to the endpoint."""
    client = await endpoint.connect()
    yield client
    client.connection.close()


def texts(
    columns: tuple[Column, ...], rows: list[tuple[Value, ...]]
) -> list[tuple[str | None, ...]]:
    """``rows`` as the mysql client prints them (NULL is None)."""
    return [
        tuple(None if v is None else cell_text(c, v) for c, v in zip(columns, row, strict=True))
        for row in rows
    ]


def named(agent: Agent, table: str, *, extended: bool) -> list[dict[str, Value]]:
    """The agent's ``table`` as column name -> value."""
    columns, rows = agent.tables(extended)[table]
    return [{c.name: v for c, v in zip(columns, row, strict=True)} for row in rows]


# -- the tables --------------------------------------------------------------------------


@pytest.mark.parametrize("table", PLAIN_TABLES)
async def test_performance_schema_serves_every_members_plain_rows(
    endpoint: Endpoint, client: Client, table: str
) -> None:
    """performance_schema's two tables are the agent's plain ones: names, types, text of values."""
    columns, rows = endpoint.agent.tables(extended=False)[table]
    description, got = await client.query(f"SELECT * FROM performance_schema.{table}")
    assert description == [(c.name, wire(c)) for c in columns]
    assert columns == TABLES[table].columns
    assert len(got) == 3
    assert got == texts(columns, rows)


@pytest.mark.parametrize("table", list(TABLES))
async def test_grstats_serves_all_six_tables_extended(
    endpoint: Endpoint, client: Client, table: str
) -> None:
    """Schema grstats serves each table with the extended columns, as the agent's tables hold them."""
    columns, rows = endpoint.agent.tables(extended=True)[table]
    description, got = await client.query(f"SELECT * FROM grstats.{table}")
    assert description == [(c.name, wire(c)) for c in columns]
    assert ("LAST_SEEN" in [c.name for c in columns]) == (table in ROW_TABLES)
    assert got == texts(columns, rows)
    assert rows or table == REPLICATION_GROUP_EVENTS.name  # a steady group has no events


@pytest.mark.parametrize("table", list(TABLES))
async def test_the_executor_gives_the_fast_paths_rows(client: Client, table: str) -> None:
    """A query the executor runs returns the same rows and types as the plain SELECT * does."""
    fast = await client.query(f"SELECT * FROM grstats.{table}")
    executed = await client.query(f"SELECT * FROM grstats.{table} WHERE 1 = 1")
    assert executed == fast


def test_catalog_is_what_the_agent_serves(endpoint: Endpoint) -> None:
    """The catalog's columns of every table are the ones the agent's tables have."""
    for schema, (extended, tables) in catalog.SCHEMAS.items():
        served = endpoint.agent.tables(extended)
        for table in set(tables) - set(catalog.SESSION_TABLES) - set(sys_schema.VIEWS):
            assert catalog.table_columns(schema, table) == served[table][0]
    assert set(catalog.SCHEMAS["performance_schema"][1]) == {*PLAIN_TABLES, *OWN_MEMBER_TABLES}


# -- queries -------------------------------------------------------------------------------


async def test_where_order_by_and_limit(endpoint: Endpoint, client: Client) -> None:
    """WHERE, ORDER BY and LIMIT select the rows; each column keeps its name as written and its type."""
    description, rows = await client.query(
        "SELECT member_id, MEMBER_PORT AS port FROM performance_schema.replication_group_members "
        "WHERE MEMBER_PORT > 13306 ORDER BY MEMBER_PORT DESC LIMIT 1"
    )
    assert description == [("member_id", FIELD_TYPE.STRING), ("port", FIELD_TYPE.LONG)]
    assert rows == [(endpoint.group.agents[2].member_id, "13308")]


async def test_group_by(client: Client) -> None:
    """GROUP BY counts the members by state; COUNT(*) is a BIGINT as in MySQL."""
    description, rows = await client.query(
        "SELECT MEMBER_STATE, COUNT(*) AS n FROM grstats.replication_group_members "
        "GROUP BY MEMBER_STATE"
    )
    assert description == [("MEMBER_STATE", FIELD_TYPE.STRING), ("n", FIELD_TYPE.LONGLONG)]
    assert rows == [("ONLINE", "3")]


async def test_join_between_tables(endpoint: Endpoint, client: Client) -> None:
    """A join of members and stats on MEMBER_ID gives each member's port and checked count."""
    description, rows = await client.query(
        "SELECT m.MEMBER_PORT, s.COUNT_TRANSACTIONS_CHECKED, s.LAST_SEEN "
        "FROM grstats.replication_group_members AS m "
        "JOIN grstats.replication_group_member_stats AS s ON m.MEMBER_ID = s.MEMBER_ID "
        "ORDER BY m.MEMBER_PORT"
    )
    members = {
        r["MEMBER_ID"]: r for r in named(endpoint.agent, "replication_group_members", extended=True)
    }
    stats = named(endpoint.agent, "replication_group_member_stats", extended=True)
    expected = sorted(
        (
            str(members[s["MEMBER_ID"]]["MEMBER_PORT"]),
            str(s["COUNT_TRANSACTIONS_CHECKED"]),
            cell_text(EXTENDED_COLUMNS[2], s["LAST_SEEN"]),
        )
        for s in stats
    )
    assert description == [
        ("MEMBER_PORT", FIELD_TYPE.LONG),
        ("COUNT_TRANSACTIONS_CHECKED", FIELD_TYPE.LONGLONG),
        ("LAST_SEEN", FIELD_TYPE.TIMESTAMP),
    ]
    assert rows == expected
    assert len(rows) == 3


async def test_join_using_gives_the_joined_column_once(client: Client) -> None:
    """SELECT * of a self-join USING (MEMBER_ID) has MEMBER_ID once and both sides' other columns."""
    description, rows = await client.query(
        "SELECT * FROM grstats.replication_group_members AS a "
        "JOIN grstats.replication_group_members AS b USING (MEMBER_ID)"
    )
    width = len(TABLES["replication_group_members"].columns) + len(EXTENDED_COLUMNS)
    assert len(description) == 2 * width - 1
    assert len(rows) == 3


async def test_max_of_a_timestamp_is_a_timestamp(endpoint: Endpoint, client: Client) -> None:
    """MAX(LAST_SEEN) keeps the column's type and MySQL's text; a literal compares with it."""
    description, rows = await client.query(
        "SELECT MAX(LAST_SEEN) AS newest FROM grstats.replication_group_members "
        "WHERE LAST_SEEN > '2000-01-01 00:00:00'"
    )
    seen = max(
        int(r["LAST_SEEN"] or 0)
        for r in named(endpoint.agent, "replication_group_members", extended=True)
    )
    assert description == [("newest", FIELD_TYPE.TIMESTAMP)]
    assert rows == [(timestamp_text(seen),)]


async def test_set_use_and_unqualified_tables(endpoint: Endpoint, client: Client) -> None:
    """SET is accepted; after USE a table name alone is the session schema's table."""
    await client.query("SET NAMES utf8mb4")
    await client.query("SET autocommit = 1")
    await client.query("USE performance_schema")
    description, rows = await client.query("SELECT * FROM replication_group_members")
    assert [name for name, _ in description] == [
        c.name for c in TABLES["replication_group_members"].columns
    ]
    assert await client.error("SELECT * FROM replication_group_status") == (
        1146,
        "Table 'performance_schema.replication_group_status' doesn't exist",
    )
    await client.query("USE grstats")
    description, rows = await client.query("SELECT * FROM replication_group_status")
    assert rows == texts(*endpoint.agent.tables(extended=True)["replication_group_status"])
    await asyncio.to_thread(client.connection.select_db, "performance_schema")
    assert len((await client.query("SELECT * FROM replication_group_member_stats"))[0]) == 13


# -- SHOW, DESCRIBE, information_schema, variables ------------------------------------------


async def test_show_databases_and_tables(client: Client) -> None:
    """SHOW DATABASES lists both schemas; SHOW TABLES each schema's tables."""
    databases = {row[0] for row in await client.rows("SHOW DATABASES")}
    assert {"grstats", "performance_schema", "information_schema"} <= databases
    grstats_tables = (*TABLES, REPLICATION_GROUP_MEMBER_LOG.name)  # the log has no extended form
    assert sorted(await client.rows("SHOW TABLES FROM grstats")) == sorted(
        (t,) for t in grstats_tables
    )
    await client.query("USE performance_schema")
    assert sorted(await client.rows("SHOW TABLES")) == sorted(
        (t,) for t in (*PLAIN_TABLES, *OWN_MEMBER_TABLES)
    )


async def test_describe(client: Client) -> None:
    """DESCRIBE gives each column's name, MySQL's full type and nullability, in order."""
    rows = await client.rows("DESCRIBE performance_schema.replication_group_members")
    assert [row[:3] for row in rows] == [
        ("CHANNEL_NAME", "char(64)", "NO"),
        ("MEMBER_ID", "char(36)", "NO"),
        ("MEMBER_HOST", "char(255)", "NO"),
        ("MEMBER_PORT", "int", "YES"),
        ("MEMBER_STATE", "char(64)", "NO"),
        ("MEMBER_ROLE", "char(64)", "NO"),
        ("MEMBER_VERSION", "char(64)", "NO"),
        ("MEMBER_COMMUNICATION_STACK", "char(64)", "NO"),
    ]
    await client.query("USE grstats")
    status = await client.rows("DESCRIBE replication_group_member_status")
    assert status[6][:3] == ("CONNECTED", "enum('YES','NO')", "NO")
    assert status[8][:3] == ("APPLIER_LAG_SECONDS", "decimal(20,6)", "YES")


async def test_information_schema_columns(client: Client) -> None:
    """information_schema.columns has each column's data_type, column_type and nullability."""
    rows = await client.rows(
        "SELECT column_name, data_type, column_type, is_nullable FROM information_schema.columns "
        "WHERE table_schema = 'grstats' AND table_name = 'replication_group_member_lag' "
        "ORDER BY ordinal_position"
    )
    assert rows[:4] == [
        ("CHANNEL_NAME", "char", "char(64)", "NO"),
        ("MEMBER_ID", "char", "char(36)", "NO"),
        ("LAST_QUEUED_TRANSACTION", "char", "char(90)", "YES"),
        ("LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP", "timestamp", "timestamp(6)", "NO"),
    ]
    assert rows[-10:-5] == [
        ("APPLIER_LAG_SECONDS", "decimal", "decimal(20,6)", "YES"),
        ("TRANSACTIONS_BEHIND", "bigint", "bigint unsigned", "YES"),
        ("TRANSPORT_SECONDS", "decimal", "decimal(20,6)", "YES"),
        ("WAITING_SECONDS", "decimal", "decimal(20,6)", "YES"),
        ("APPLY_SECONDS", "decimal", "decimal(20,6)", "YES"),
    ]
    assert len(rows) == len(TABLES["replication_group_member_lag"].columns) + 5


async def test_variables_and_server_uuid(endpoint: Endpoint, client: Client) -> None:
    """The identity's variables are the member's; its own row is found by @@server_uuid or @@port."""
    rows = await client.rows(
        "SELECT @@version, @@version_comment, @@server_uuid, @@hostname, @@port, "
        "@@read_only, @@super_read_only"
    )
    me = endpoint.agent.member_id
    (own_row,) = [
        r for r in named(endpoint.agent, PLAIN_TABLES[0], extended=False) if r["MEMBER_ID"] == me
    ]
    snapshot = endpoint.agent.member.snapshot
    assert snapshot is not None
    server = snapshot.server  # the member's own flags: agent 0's member is the primary, 0 and 0
    assert rows == [
        (
            "8.0.36-grstats",
            "grstats read-only Group Replication stats",
            me,
            own_row["MEMBER_HOST"],
            "13306",  # the member's MySQL port (MEMBER_PORT), not the endpoint's
            str(int(server.read_only)),
            str(int(server.super_read_only)),
        )
    ]
    for where in ("MEMBER_ID = @@server_uuid", "MEMBER_HOST = @@hostname AND MEMBER_PORT = @@port"):
        own = await client.rows(
            f"SELECT MEMBER_ID, MEMBER_PORT FROM performance_schema.replication_group_members WHERE {where}"
        )
        assert own == [(me, "13306")], where
    assert endpoint.agent.member_id != endpoint.group.agents[1].member_id


async def test_group_replication_variables_and_status(endpoint: Endpoint, client: Client) -> None:
    """The member's GR variables through @@, SHOW VARIABLES and global_variables; its status too."""
    snapshot = endpoint.agent.member.snapshot
    assert snapshot is not None
    group_name = snapshot.view.group_name
    rows = await client.rows(
        "SELECT @@group_replication_group_name, @@group_replication_single_primary_mode,"
        " @@group_replication_member_weight, @@group_replication_flow_control_mode,"
        " @@group_replication_flow_control_certifier_threshold"
    )
    assert rows == [(group_name, "1", "50", "QUOTA", "25000")]  # plugin_variables.h's defaults
    shown = await client.rows("SHOW GLOBAL VARIABLES LIKE 'group\\_replication\\_flow%'")
    assert shown == [  # sorted by name, booleans ON/OFF, as MySQL prints them
        ("group_replication_flow_control_applier_threshold", "25000"),
        ("group_replication_flow_control_certifier_threshold", "25000"),
        ("group_replication_flow_control_hold_percent", "10"),
        ("group_replication_flow_control_max_quota", "0"),
        ("group_replication_flow_control_member_quota_percent", "0"),
        ("group_replication_flow_control_min_quota", "0"),
        ("group_replication_flow_control_min_recovery_quota", "0"),
        ("group_replication_flow_control_mode", "QUOTA"),
        ("group_replication_flow_control_period", "1"),
        ("group_replication_flow_control_release_percent", "50"),
    ]
    assert await client.rows(
        "SELECT VARIABLE_VALUE FROM performance_schema.global_variables"
        " WHERE VARIABLE_NAME = 'group_replication_single_primary_mode'"
    ) == [("ON",)]
    primary = next(r.member_id for r in snapshot.view.members if r.member_role == "PRIMARY")
    status = [("group_replication_primary_member", primary)]  # 8.0's (removed in 8.4)
    assert await client.rows("SHOW GLOBAL STATUS LIKE 'group_replication%'") == status
    assert await client.rows("SELECT * FROM performance_schema.global_status") == status
    assert (await client.rows("SHOW CREATE TABLE performance_schema.global_variables"))[0][1] == (
        "CREATE TABLE `global_variables` (\n"
        "  `VARIABLE_NAME` varchar(64) NOT NULL,\n"
        "  `VARIABLE_VALUE` varchar(1024) DEFAULT NULL,\n"
        "  PRIMARY KEY (`VARIABLE_NAME`)\n"
        ") ENGINE=PERFORMANCE_SCHEMA DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci"
    )


# -- errors --------------------------------------------------------------------------------

ERRORS = [
    pytest.param(
        "INSERT INTO grstats.replication_group_members VALUES (1)",
        1142,
        "INSERT command denied to user 'x'@'localhost' for table 'replication_group_members'",
        id="insert",
    ),
    pytest.param("INSERT INTO grstats.t VALUES (1)", 1290, READ_ONLY, id="insert-elsewhere"),
    pytest.param(
        "REPLACE INTO grstats.replication_group_members VALUES (1)", 1290, READ_ONLY, id="replace"
    ),
    pytest.param("CREATE TABLE grstats.t (a INT)", 1290, READ_ONLY, id="ddl"),
    pytest.param("DROP DATABASE grstats", 1290, READ_ONLY, id="drop"),
    pytest.param("GRANT ALL ON *.* TO x", 1290, READ_ONLY, id="grant"),
    pytest.param("LOAD DATA INFILE 'x' INTO TABLE t", 1290, READ_ONLY, id="unparsed-write"),
    pytest.param("FLUSH LOGS", 1290, READ_ONLY, id="flush"),
    pytest.param(
        "SELECT * FROM grstats.nope", 1146, "Table 'grstats.nope' doesn't exist", id="table"
    ),
    pytest.param("SELECT * FROM nope", 1046, "No database selected", id="no-database"),
    pytest.param(
        "DESCRIBE grstats.nope", 1146, "Table 'grstats.nope' doesn't exist", id="describe"
    ),
    pytest.param("USE nope", 1049, "Unknown database 'nope'", id="use"),
    pytest.param("SHOW TABLES FROM nope", 1049, "Unknown database 'nope'", id="show-tables"),
    pytest.param(
        "SELECT nope FROM grstats.replication_group_members WHERE 1 = 1",
        1054,
        "Unknown column 'nope' in 'field list'",
        id="column",
    ),
    pytest.param(
        "SELECT * FROM grstats.replication_group_members WHERE",
        1064,
        "You have an error in your SQL syntax; check the manual that corresponds to your MySQL "
        "server version for the right syntax to use near 'WHERE' at line 1",
        id="syntax",
    ),
    pytest.param(
        "SELECT 1 FROM\nWHERE x",
        1064,
        "You have an error in your SQL syntax; check the manual that corresponds to your MySQL "
        "server version for the right syntax to use near 'WHERE x' at line 2",
        id="syntax-line-2",
    ),
    pytest.param(
        "EXPLAIN SELECT 1",
        1235,
        "This version of MySQL doesn't yet support 'EXPLAIN'",
        id="explain",
    ),
]


@pytest.mark.parametrize(("sql", "code", "message"), ERRORS)
async def test_errors_keep_the_connection(
    client: Client, sql: str, code: int, message: str
) -> None:
    """Each refused statement gets MySQL's code and message, and the connection goes on."""
    assert await client.error(sql) == (code, message)
    assert await client.rows("SELECT COUNT(*) FROM grstats.replication_group_members") == [("3",)]


async def test_unknown_database_on_init_db(client: Client) -> None:
    """COM_INIT_DB (a client's select_db) of an unknown schema is 1049, the connection kept."""
    with pytest.raises(pymysql.err.MySQLError) as raised:
        await asyncio.to_thread(client.connection.select_db, "nope")
    assert raised.value.args == (1049, "Unknown database 'nope'")
    assert await client.rows("SELECT 1") == [("1",)]


# -- limits --------------------------------------------------------------------------------

#: A 3-row table joined with itself 11 times: 177,147 row combinations, about 1.5 s of the
#: executor (within Limits(sql_max_join_size=10**7, sql_max_cost=10**8); past the defaults).
CROSS_JOIN = "SELECT COUNT(*) FROM " + ", ".join(
    f"grstats.replication_group_members AS t{i}" for i in range(11)
)
TIMEOUT = (3024, "Query execution was interrupted, maximum statement execution time exceeded")
#: What a slow statement needs: its join and its cost allowed, a short time.
SLOW = Limits(sql_query_timeout_s=0.3, sql_max_join_size=10**7, sql_max_cost=10**8)


async def answered(client: Client, sql: str, within_s: float) -> tuple[list[Any], float]:
    """The rows of ``sql`` once the worker is free (3024 meanwhile), and how long that took."""
    started = time.monotonic()
    while time.monotonic() - started < within_s:
        with contextlib.suppress(pymysql.err.OperationalError):
            return await client.rows(sql), time.monotonic() - started
    raise AssertionError(f"{sql} was not answered within {within_s} s")


async def test_timeout_answers_3024_and_the_bounded_work_ends() -> None:
    """Past sql_query_timeout_s a query gets 3024 at once; the worker ends its work, then answers."""
    async with serving(SLOW) as endpoint:
        client = await endpoint.connect()
        try:
            started = time.monotonic()
            assert await client.error(CROSS_JOIN) == TIMEOUT
            errored = time.monotonic() - started
            rows, waited = await answered(
                client, "SELECT COUNT(*) FROM grstats.replication_group_members t", 30
            )
            assert rows == [("3",)]
            # 3024 came at about sql_query_timeout_s, while the join still ran (its 1-1.5 s):
            # the next query waited for the worker. (Not a fixed end: the join took 0.96 s
            # in all on a quick run.)
            assert errored < 1.0
            assert waited > 0.1
        finally:
            client.connection.close()


async def test_a_query_stopped_before_it_starts_never_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A query queued behind a running one gets 3024 at its time and never starts; the running one ends."""
    started: list[str] = []
    running_one = threading.Event()
    run = execution.run_query

    def spied(expression: Any, *args: Any) -> Any:
        started.append(expression.sql())
        running_one.set()
        return run(expression, *args)

    monkeypatch.setattr(execution, "run_query", spied)
    queued = "SELECT COUNT(*) AS queued FROM grstats.replication_group_members t"
    async with serving(SLOW) as endpoint:
        first, second = await endpoint.connect(), await endpoint.connect()
        try:
            running = asyncio.create_task(first.error(CROSS_JOIN))
            assert await asyncio.to_thread(running_one.wait, 5)  # the join is on the worker
            assert await second.error(queued) == TIMEOUT
            assert await running == TIMEOUT
            rows, _ = await answered(
                second, "SELECT COUNT(*) FROM grstats.replication_group_members x", 30
            )
            assert rows == [("3",)]
            assert not [sql for sql in started if "queued" in sql]
            # the join once, then the last query (more than once if a try of it got 3024 while
            # the join still ran)
            join, *last = started
            assert "t10" in join, started
            assert last, started
            assert len(set(last)) == 1, started
            assert "t10" not in last[0], started
        finally:
            first.connection.close()
            second.connection.close()


async def test_row_limit() -> None:
    """A result over sql_max_rows is 1104 naming the limit; within it, the rows come."""
    async with serving(Limits(sql_max_rows=2)) as endpoint:
        client = await endpoint.connect()
        try:
            message = (
                "The SELECT would return 3 rows, more than limits.sql_max_rows = 2; "
                "narrow it with WHERE or LIMIT"
            )
            for sql in (
                "SELECT * FROM grstats.replication_group_members",
                "SELECT MEMBER_ID FROM grstats.replication_group_members WHERE MEMBER_PORT > 0",
            ):
                assert await client.error(sql) == (1104, message)
            rows = await client.rows(
                "SELECT MEMBER_ID FROM grstats.replication_group_members LIMIT 2"
            )
            assert len(rows) == 2
        finally:
            client.connection.close()


# -- the catalog's encoders ----------------------------------------------------------------


def test_binary_protocol_encodings() -> None:
    """Prepared statements get TIMESTAMP(6) as MySQL's 11-byte value (0 bytes if unset), DECIMAL as text."""
    last_seen, lag = (
        EXTENDED_COLUMNS[2],
        TABLES["replication_group_member_lag"].column("APPLIER_LAG_SECONDS"),
    )
    stamp = catalog.result_column(last_seen)
    assert stamp.binary_encode(0) == b"\x00"
    assert stamp.binary_encode(1_700_000_000_123_456) == bytes(
        [11, 0xE7, 0x07, 11, 14, 22, 13, 20]
    ) + (123_456).to_bytes(4, "little")
    assert stamp.binary_encode("2023-11-14 22:13:20.123456") == stamp.binary_encode(
        1_700_000_000_123_456
    )
    assert catalog.result_column(lag).binary_encode(1.5) == b"\x081.500000"
    assert catalog.result_column(lag).text_encode(1.5) == b"1.500000"


def test_wire_types_of_every_declared_type() -> None:
    """Every column of every table has MySQL's wire type for its declared type."""
    encode: Callable[[Column], int] = lambda c: int(catalog.wire_type(c))  # noqa: E731
    for table in TABLES.values():
        for column in table.columns + EXTENDED_COLUMNS:
            assert encode(column) == wire(column), column
            assert (column.kind is Kind.TEXT) == (
                catalog.result_column(column).character_set.name == "utf8mb4"
            )


def test_a_stopped_job_never_starts() -> None:
    """A job stopped before the worker takes it raises and never calls its work."""
    calls: list[int] = []
    job = execution._Job(lambda: calls.append(1))
    job.stop()
    with pytest.raises(execution._Interrupted):
        job()
    assert calls == []


def test_a_started_job_runs_to_its_end() -> None:
    """A job stopped while it runs (its work bounded) ends it and returns; its caller drops it."""
    running, release = threading.Event(), threading.Event()

    def work() -> str:
        running.set()
        release.wait(5)
        return "done"

    job = execution._Job(work)
    with concurrent.futures.ThreadPoolExecutor(1) as executor:
        future = executor.submit(job)
        assert running.wait(5)
        job.stop()
        release.set()
        assert future.result(5) == "done"


def test_the_executor_runs_under_no_trace_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside sqlglot's executor the worker thread has its own trace function (none is added)."""
    seen: list[object] = []
    env = value_bounds.engine_env

    def spied_env(limits: Any) -> dict[str, Any]:
        functions = env(limits)
        length = functions.get("LENGTH", len)

        def traced_length(value: Any) -> Any:
            seen.append(sys.gettrace())
            return length(value)

        return {**functions, "LENGTH": traced_length}

    monkeypatch.setattr(execution, "engine_env", spied_env)
    columns = catalog.table_columns("grstats", "replication_group_members")
    assert columns is not None
    row: tuple[Value, ...] = tuple(
        3306 if c.kind is Kind.INTEGER else None if c.kind is Kind.TIMESTAMP else "m"
        for c in columns
    )
    snapshot = {("grstats", "replication_group_members"): (columns, [row])}
    expression = sqlglot.parse_one(
        "SELECT LENGTH(MEMBER_ID) FROM grstats.replication_group_members", read="mysql"
    )
    assert isinstance(expression, exp.Select)
    work = functools.partial(
        execution.run_query, expression, snapshot, parse_time_zone("+00:00"), LimitsConfig()
    )
    with concurrent.futures.ThreadPoolExecutor(1) as executor:
        outside = executor.submit(sys.gettrace).result(5)
        assert executor.submit(execution._Job(work)).result(5) == (("_col_0",), [(1,)])
    assert seen == [outside]


async def test_set_time_zone_as_mysql_takes_it(endpoint: Endpoint, client: Client) -> None:
    """SET time_zone moves TIMESTAMP values (sent and compared) to that zone; 1298 for bad ones."""
    sql = "SELECT MEMBER_ID, LAST_SEEN FROM grstats.replication_group_members"
    seen = {
        str(r["MEMBER_ID"]): int(r["LAST_SEEN"] or 0)
        for r in named(endpoint.agent, "replication_group_members", extended=True)
    }

    def shown(zone: tzinfo | None) -> dict[str, str]:
        return {
            member: f"{datetime.fromtimestamp(at / 1e6, UTC).astimezone(zone):%Y-%m-%d %H:%M:%S.%f}"
            for member, at in seen.items()
        }

    async def served() -> dict[str, str]:
        return {str(member): str(text) for member, text in await client.rows(sql)}

    assert await client.rows("SELECT @@time_zone") == [("+00:00",)]
    assert await served() == shown(UTC)
    await client.query("SET time_zone = '+2:00'")
    assert await client.rows("SELECT @@time_zone") == [("+02:00",)]
    assert await served() == shown(timezone(timedelta(hours=2)))
    newest = max(shown(timezone(timedelta(hours=2))).values())
    assert await client.rows(  # the executor compares in the session's zone too
        f"SELECT MAX(LAST_SEEN) FROM grstats.replication_group_members WHERE LAST_SEEN >= '{newest}'"
    ) == [(newest,)]
    await client.query("SET SESSION time_zone = 'europe/paris'")
    assert await client.rows("SELECT @@session.time_zone") == [("Europe/Paris",)]
    assert await served() == shown(ZoneInfo("Europe/Paris"))
    await client.query("SET time_zone = 'SYSTEM'")  # mysql-mimic refused every query after it
    assert await served() == shown(None)
    assert await client.error("SET time_zone = '+14:01'") == (
        1298,
        "Unknown or incorrect time zone: '+14:01'",
    )
    assert await client.error("SET time_zone = 'Mars/Olympus'") == (
        1298,
        "Unknown or incorrect time zone: 'Mars/Olympus'",
    )
    assert await client.rows("SELECT @@time_zone") == [("SYSTEM",)]  # unchanged by the errors
    await client.query("SET time_zone = DEFAULT")
    assert await served() == shown(UTC)
    other = await endpoint.connect()  # a session's zone is its own
    try:
        await client.query("SET time_zone = '-05:00'")
        assert {str(m): str(t) for m, t in await other.rows(sql)} == shown(UTC)
    finally:
        other.connection.close()


def test_binary_timestamps_in_the_session_zone() -> None:
    """Prepared statements' binary TIMESTAMP is in the session's zone too; 0 is 0 bytes."""
    last_seen = EXTENDED_COLUMNS[2]
    column = catalog.result_column(last_seen, zone=parse_time_zone("+02:00"))
    packed = column.binary_encode(1_700_000_000_250_000)  # 2023-11-14 22:13:20.25 UTC
    assert struct.unpack("<BHBBBBBI", packed) == (11, 2023, 11, 15, 0, 13, 20, 250_000)
    assert column.binary_encode(0) == b"\x00"
