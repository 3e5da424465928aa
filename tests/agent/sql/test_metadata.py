"""The SQL endpoint's metadata answers as MySQL 8.4's for the Group Replication tables (issue 31).

Each expected answer is written from MySQL's own test results or DDL, not from the endpoint's:
``mysql_results/table_schema.result`` holds the lines of mysql-server's
``mysql-test/suite/perfschema/r/table_schema.result`` for the two tables; the DDL is
``storage/perfschema/table_replication_group_members.cc`` and
``table_replication_group_member_stats.cc`` (``m_table_def``), rendered as SHOW CREATE TABLE
renders a performance_schema table (``r/schema.result``); the SHOW statements are those of
``sql/dd/info_schema/show.cc``; the errors are ``r/dml_replication_group_members.result``,
``r/dml_replication_group_member_stats.result`` and ``r/ddl_replication_group_members.result``.
One difference is deliberate: PRIVILEGES is ``select``, what MySQL shows an account granted only
SELECT (the result files run as root, who sees ``select,insert,update,references``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pymysql  # type: ignore[import-untyped]
import pytest

from tests.agent.sql.test_session import _client, _endpoint  # noqa: F401  (the fixtures)

if TYPE_CHECKING:
    from tests.agent.sql.test_session import Client

RESULTS = Path(__file__).parent / "mysql_results"
ROOT_PRIVILEGES = "select,insert,update,references"
#: information_schema.TABLES of a performance_schema table, AVG_ROW_LENGTH to TABLE_COMMENT
#: (r/information_schema.result): sizes 0, no times, its collation, no options or comment.
SIZES = ("0", "0", "0", "0", "0", None, None, None, None, "utf8mb4_0900_ai_ci", None, "", "")
PLAIN_TABLES = ("replication_group_members", "replication_group_member_stats")

MEMBERS_DDL = """CREATE TABLE `replication_group_members` (
  `CHANNEL_NAME` char(64) NOT NULL,
  `MEMBER_ID` char(36) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  `MEMBER_HOST` char(255) CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
  `MEMBER_PORT` int DEFAULT NULL,
  `MEMBER_STATE` char(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  `MEMBER_ROLE` char(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  `MEMBER_VERSION` char(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  `MEMBER_COMMUNICATION_STACK` char(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL
) ENGINE=PERFORMANCE_SCHEMA DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci"""

STATS_DDL = """CREATE TABLE `replication_group_member_stats` (
  `CHANNEL_NAME` char(64) NOT NULL,
  `VIEW_ID` char(60) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  `MEMBER_ID` char(36) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  `COUNT_TRANSACTIONS_IN_QUEUE` bigint unsigned NOT NULL,
  `COUNT_TRANSACTIONS_CHECKED` bigint unsigned NOT NULL,
  `COUNT_CONFLICTS_DETECTED` bigint unsigned NOT NULL,
  `COUNT_TRANSACTIONS_ROWS_VALIDATING` bigint unsigned NOT NULL,
  `TRANSACTIONS_COMMITTED_ALL_MEMBERS` longtext NOT NULL,
  `LAST_CONFLICT_FREE_TRANSACTION` text NOT NULL,
  `COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE` bigint unsigned NOT NULL,
  `COUNT_TRANSACTIONS_REMOTE_APPLIED` bigint unsigned NOT NULL,
  `COUNT_TRANSACTIONS_LOCAL_PROPOSED` bigint unsigned NOT NULL,
  `COUNT_TRANSACTIONS_LOCAL_ROLLBACK` bigint unsigned NOT NULL
) ENGINE=PERFORMANCE_SCHEMA DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci"""


#: Pfs_table_communication_information::init's definition (table_communication_information.cc,
#: MySQL 8.4) rendered by the rules of the two above: BOOLEAN is tinyint(1), LONGTEXT NOT NULL
#: has no DEFAULT, the COMMENTs verbatim (the first with its trailing space).
COMMUNICATION = "replication_group_communication_information"
COMMUNICATION_DDL = f"""CREATE TABLE `{COMMUNICATION}` (
  `WRITE_CONCURRENCY` bigint unsigned NOT NULL,
  `PROTOCOL_VERSION` longtext NOT NULL,
  `WRITE_CONSENSUS_LEADERS_PREFERRED` longtext NOT NULL,
  `WRITE_CONSENSUS_LEADERS_ACTUAL` longtext NOT NULL,
  `WRITE_CONSENSUS_SINGLE_LEADER_CAPABLE` tinyint(1) NOT NULL COMMENT 'What the option \
group_replication_paxos_single_leader was set to at the time this member joined the group. ',
  `MEMBER_FAILURE_SUSPICIONS_COUNT` longtext NOT NULL COMMENT 'A list of pairs between a group \
member address and the number of times the local node has seen it as suspected'
) ENGINE=PERFORMANCE_SCHEMA DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci"""


def result_file(name: str) -> tuple[list[str], list[tuple[str | None, ...]]]:
    """A mysqltest result's header and rows (TAB-separated, ``NULL`` for SQL NULL)."""
    lines = [line for line in (RESULTS / name).read_text().splitlines() if not line.startswith("#")]
    header, *rows = (line.split("\t") for line in lines)
    return header, [tuple(None if cell == "NULL" else cell for cell in row) for row in rows]


def as_our_account(row: tuple[str | None, ...], at: int) -> tuple[str | None, ...]:
    """``row`` with root's PRIVILEGES (at index ``at``) as a SELECT-only account's."""
    assert row[at] == ROOT_PRIVILEGES
    return (*row[:at], "select", *row[at + 1 :])


async def test_information_schema_columns_as_table_schema_result(client: Client) -> None:
    """table_schema.result's query gives its 22 columns and, per table, its rows."""
    header, expected = result_file("table_schema.result")
    columns, rows = await client.query(
        'select * from information_schema.columns where table_schema="performance_schema"\n'
        "   order by table_name COLLATE utf8mb3_general_ci, ordinal_position;"
    )
    assert [name for name, _ in columns] == header
    at = header.index("PRIVILEGES")
    for table in PLAIN_TABLES:  # the endpoint orders binary: member_stats first
        want = [as_our_account(row, at) for row in expected if row[2] == table]
        assert [row for row in rows if row[2] == table] == want, table


async def test_show_create_table(client: Client) -> None:
    """SHOW CREATE TABLE gives MySQL's DDL of both tables, named Table and Create Table."""
    for table, ddl in (("replication_group_members", MEMBERS_DDL), (PLAIN_TABLES[1], STATS_DDL)):
        columns, rows = await client.query(f"SHOW CREATE TABLE performance_schema.{table}")
        assert [name for name, _ in columns] == ["Table", "Create Table"]
        assert rows == [(table, ddl)]
    await client.query("USE performance_schema")
    assert (await client.rows("SHOW CREATE TABLE `Replication_Group_Members`"))[0][1] == MEMBERS_DDL


async def test_communication_information(endpoint: Any, client: Client) -> None:
    """The member's one communication row, with MySQL's DDL, types and column comments."""
    assert await client.rows(f"SHOW CREATE TABLE performance_schema.{COMMUNICATION}") == [
        (COMMUNICATION, COMMUNICATION_DDL)
    ]
    columns, rows = await client.query(
        "SELECT * FROM performance_schema.replication_group_communication_information"
    )
    bigint, blob, tiny = 8, 252, 1  # MYSQL_TYPE_LONGLONG, _BLOB, _TINY
    assert [code for _, code in columns] == [bigint, blob, blob, blob, tiny, blob]
    view = endpoint.agent.sql_identity.snapshot.view
    leaders = ",".join(sorted(row.member_id for row in view.members))
    assert rows == [("10", "8.0.27", leaders, leaders, "0", "")]  # 8.0.36: no suspicions column
    comments = await client.rows(
        "SELECT COLUMN_NAME, COLUMN_TYPE, COLUMN_COMMENT FROM information_schema.COLUMNS"
        " WHERE TABLE_NAME = 'replication_group_communication_information'"
        " AND COLUMN_COMMENT <> ''"
    )
    assert [(name, kind) for name, kind, _ in comments] == [
        ("WRITE_CONSENSUS_SINGLE_LEADER_CAPABLE", "tinyint(1)"),
        ("MEMBER_FAILURE_SUSPICIONS_COUNT", "longtext"),
    ]
    assert str(comments[0][2]).endswith("joined the group. ")


async def test_describe_and_show_columns(client: Client) -> None:
    """DESCRIBE and SHOW [FULL] COLUMNS: show.cc's columns and order, the rows of COLUMNS."""
    header, expected = result_file("table_schema.result")
    at = {name: index for index, name in enumerate(header)}
    for table in PLAIN_TABLES:
        mine = [as_our_account(row, at["PRIVILEGES"]) for row in expected if row[2] == table]
        pick = ["COLUMN_NAME", "COLUMN_TYPE", "IS_NULLABLE", "COLUMN_KEY", "COLUMN_DEFAULT"]
        short = [(*(row[at[name]] for name in pick), row[at["EXTRA"]]) for row in mine]
        for sql in (
            f"DESCRIBE performance_schema.{table}",
            f"SHOW COLUMNS FROM {table} FROM performance_schema",
        ):
            columns, rows = await client.query(sql)
            assert [name for name, _ in columns] == [
                "Field",
                "Type",
                "Null",
                "Key",
                "Default",
                "Extra",
            ]
            assert rows == short
        full_pick = [
            "COLUMN_NAME",
            "COLUMN_TYPE",
            "COLLATION_NAME",
            "IS_NULLABLE",
            "COLUMN_KEY",
            "COLUMN_DEFAULT",
            "EXTRA",
            "PRIVILEGES",
            "COLUMN_COMMENT",
        ]
        columns, rows = await client.query(f"SHOW FULL COLUMNS FROM performance_schema.{table}")
        assert [name for name, _ in columns] == [
            "Field",
            "Type",
            "Collation",
            "Null",
            "Key",
            "Default",
            "Extra",
            "Privileges",
            "Comment",
        ]
        assert rows == [tuple(row[at[name]] for name in full_pick) for row in mine]
    like = await client.rows(
        "SHOW FIELDS FROM performance_schema.replication_group_members LIKE 'MEMBER_P%'"
    )
    assert [row[0] for row in like] == ["MEMBER_PORT"]


async def test_show_tables_index_and_status(client: Client) -> None:
    """SHOW TABLES names its column Tables_in_db (pattern); SHOW INDEX is empty; TABLE STATUS as TABLES."""
    columns, rows = await client.query(
        "SHOW TABLES FROM performance_schema LIKE 'replication_group%'"
    )
    assert [name for name, _ in columns] == ["Tables_in_performance_schema (replication_group%)"]
    assert rows == [
        (COMMUNICATION,),
        ("replication_group_member_stats",),
        ("replication_group_members",),
    ]
    await client.query("USE performance_schema")
    columns, _ = await client.query("SHOW TABLES")
    assert [name for name, _ in columns] == ["Tables_in_performance_schema"]
    columns, rows = await client.query("SHOW INDEX FROM replication_group_members")
    assert [name for name, _ in columns] == [
        "Table",
        "Non_unique",
        "Key_name",
        "Seq_in_index",
        "Column_name",
        "Collation",
        "Cardinality",
        "Sub_part",
        "Packed",
        "Null",
        "Index_type",
        "Comment",
        "Index_comment",
        "Visible",
        "Expression",
    ]
    assert rows == []
    assert await client.rows("SHOW KEYS FROM replication_group_member_stats") == []
    status = await client.rows("SHOW TABLE STATUS LIKE 'replication_group_members'")
    assert status == [
        ("replication_group_members", "PERFORMANCE_SCHEMA", "10", "Fixed", "3", *SIZES)
    ]


async def test_information_schema_tables_and_schemata(client: Client) -> None:
    """TABLES as r/information_schema.result's rows; SCHEMATA as SHOW CREATE DATABASE says."""
    rows = await client.rows(
        "select lower(TABLE_NAME), TABLE_TYPE, ENGINE, VERSION, ROW_FORMAT, AVG_ROW_LENGTH,"
        " DATA_LENGTH, MAX_DATA_LENGTH, INDEX_LENGTH, DATA_FREE, AUTO_INCREMENT, CREATE_TIME,"
        " UPDATE_TIME, CHECK_TIME, TABLE_COLLATION, CHECKSUM, CREATE_OPTIONS, TABLE_COMMENT,"
        " TABLE_CATALOG from information_schema.tables where TABLE_SCHEMA='performance_schema'"
        " and TABLE_NAME like 'replication%' order by 1"
    )
    common = (*SIZES, "def")
    assert rows == [
        (COMMUNICATION, "BASE TABLE", "PERFORMANCE_SCHEMA", "10", "Dynamic", *common),
        (
            "replication_group_member_stats",
            "BASE TABLE",
            "PERFORMANCE_SCHEMA",
            "10",
            "Dynamic",
            *common,
        ),
        ("replication_group_members", "BASE TABLE", "PERFORMANCE_SCHEMA", "10", "Fixed", *common),
    ]
    columns, rows = await client.query(
        "SELECT * FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'performance_schema'"
    )
    assert [name for name, _ in columns] == [
        "CATALOG_NAME",
        "SCHEMA_NAME",
        "DEFAULT_CHARACTER_SET_NAME",
        "DEFAULT_COLLATION_NAME",
        "SQL_PATH",
        "DEFAULT_ENCRYPTION",
    ]
    assert rows == [("def", "performance_schema", "utf8mb4", "utf8mb4_0900_ai_ci", None, "NO")]
    assert await client.rows("SHOW CREATE DATABASE performance_schema") == [
        (
            "performance_schema",
            (
                "CREATE DATABASE `performance_schema` /*!40100 DEFAULT CHARACTER SET utf8mb4"
                " COLLATE utf8mb4_0900_ai_ci */ /*!80016 DEFAULT ENCRYPTION='N' */"
            ),
        )
    ]
    columns, _ = await client.query("SHOW DATABASES LIKE 'perf%'")
    assert [name for name, _ in columns] == ["Database (perf%)"]


async def test_information_schema_names_are_upper_case(endpoint: Any) -> None:
    """A dict cursor finds MySQL 8's upper-case names, however the query spells the column."""
    client = await endpoint.connect(cursorclass=pymysql.cursors.DictCursor)
    try:
        rows = await client.rows(
            "select table_name, Column_Name, ordinal_position as pos from information_schema.columns"
            " where table_schema = 'performance_schema' and table_name = 'replication_group_members'"
            " and ordinal_position = 1"
        )
        assert rows == [
            {"TABLE_NAME": "replication_group_members", "COLUMN_NAME": "CHANNEL_NAME", "pos": "1"}
        ]
        (row,) = await client.rows(
            "SELECT * FROM information_schema.TABLES WHERE TABLE_NAME = 'replication_group_members'"
            " AND TABLE_SCHEMA = 'performance_schema'"
        )
        assert row["ENGINE"] == "PERFORMANCE_SCHEMA"
        assert row["TABLE_ROWS"] == "3"  # the members served now
    finally:
        client.connection.close()


#: mysql-test/suite/perfschema/r/dml_replication_group_members.result and
#: dml_replication_group_member_stats.result (as root@localhost there; here the client's account)
DENIED = [
    (
        "INSERT INTO performance_schema.replication_group_members\nSET channel_name='FOO', member_id=1;",
        1142,
        "INSERT command denied to user 'x'@'localhost' for table 'replication_group_members'",
    ),
    (
        "UPDATE performance_schema.replication_group_members\nSET member_id=12;",
        1142,
        "UPDATE command denied to user 'x'@'localhost' for table 'replication_group_members'",
    ),
    (
        'UPDATE performance_schema.replication_group_members\nSET member_id=12 WHERE channel_name LIKE "FOO";',
        1142,
        "UPDATE command denied to user 'x'@'localhost' for table 'replication_group_members'",
    ),
    (
        "DELETE FROM performance_schema.replication_group_members\nWHERE member_id=1;",
        1142,
        "DELETE command denied to user 'x'@'localhost' for table 'replication_group_members'",
    ),
    (
        "DELETE FROM performance_schema.replication_group_members;",
        1142,
        "DELETE command denied to user 'x'@'localhost' for table 'replication_group_members'",
    ),
    (
        "LOCK TABLES performance_schema.replication_group_members READ;",
        1142,
        "SELECT, LOCK TABLES command denied to user 'x'@'localhost' for table 'replication_group_members'",
    ),
    (
        "LOCK TABLES performance_schema.replication_group_members WRITE;",
        1142,
        "SELECT, LOCK TABLES command denied to user 'x'@'localhost' for table 'replication_group_members'",
    ),
    (
        "INSERT INTO performance_schema.replication_group_member_stats\nSET channel_name='FOO', node_id=1;",
        1142,
        "INSERT command denied to user 'x'@'localhost' for table 'replication_group_member_stats'",
    ),
    (
        'UPDATE performance_schema.replication_group_member_stats\nSET member_id=12 WHERE group_name LIKE "FOO";',
        1142,
        "UPDATE command denied to user 'x'@'localhost' for table 'replication_group_member_stats'",
    ),
    (
        "LOCK TABLES performance_schema.replication_group_member_stats WRITE;",
        1142,
        "SELECT, LOCK TABLES command denied to user 'x'@'localhost' for table 'replication_group_member_stats'",
    ),
    # r/ddl_replication_group_members.result
    (
        "ALTER TABLE performance_schema.replication_group_members\nADD COLUMN foo INTEGER;",
        1044,
        "Access denied for user 'x'@'localhost' to database 'performance_schema'",
    ),
    (
        "TRUNCATE TABLE performance_schema.replication_group_members;",
        1683,
        "Invalid performance_schema usage.",
    ),
    (
        "CREATE UNIQUE INDEX test_index\nON performance_schema.replication_group_members(Member_Id);",
        1044,
        "Access denied for user 'x'@'localhost' to database 'performance_schema'",
    ),
]


@pytest.mark.parametrize(
    ("sql", "code", "message"), DENIED, ids=[f"{i}" for i in range(len(DENIED))]
)
async def test_writes_get_the_result_files_errors(
    client: Client, sql: str, code: int, message: str
) -> None:
    """Each statement of the dml/ddl result files gets MySQL's error; UNLOCK TABLES succeeds."""
    assert await client.error(sql) == (code, message)
    assert await client.rows("UNLOCK TABLES") == []
