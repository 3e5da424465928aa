"""The SQL endpoint answers as the member's MySQL would (issue 42, point 6), over PyMySQL.

Statements that would change the server, unknown and Group Replication functions,
TIMESTAMPDIFF, scalar subqueries, SHOW GRANTS / PROCESSLIST / REPLICA STATUS and the sys view
ProxySQL reads, each against the MySQL source it follows. The endpoint is test_session.py's:
agent 0 (the primary) of a 3-member in-memory group, the test clock stopped.
"""

from __future__ import annotations

import pytest

from grstats.agent.sql.functions import gtid_subset, gtid_subtract, timestamp_diff
from grstats.agent.sql.server_show import REPLICA_STATUS_COLUMNS, legacy_name
from tests.agent.sql.test_session import (  # the endpoint and client fixtures too
    READ_ONLY,
    Client,
    Endpoint,
    _client,  # noqa: F401
    _endpoint,  # noqa: F401
)

# -- statements that would change the server -------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        # sqlglot parses these as START TRANSACTION: they must not answer OK
        pytest.param("START GROUP_REPLICATION", id="start-gr"),
        pytest.param("START REPLICA", id="start-replica"),
        pytest.param("STOP GROUP_REPLICATION", id="stop-gr"),
        pytest.param("KILL 12345", id="kill-another-connection"),
        pytest.param("KILL QUERY 12345", id="kill-query"),
        pytest.param("SET GLOBAL super_read_only = OFF", id="set-global"),
        pytest.param("SET PERSIST group_replication_member_weight = 90", id="set-persist"),
        pytest.param("SET @@global.read_only = 0", id="set-at-global"),
        pytest.param("SET SESSION sql_notes = 1, GLOBAL read_only = 0", id="set-mixed"),
        pytest.param("SET PASSWORD = 'new'", id="set-password"),
        pytest.param("SELECT group_replication_set_as_primary('x')", id="set-as-primary"),
    ],
)
async def test_statements_that_change_the_server_get_1290(client: Client, sql: str) -> None:
    """Each is ER_OPTION_PREVENTS_STATEMENT with --read-only's words, the connection kept."""
    # sql/sql_parse.cc's ``err_readonly`` words 1290 for an account without SUPER (none of the
    # endpoint's has it); on main START GROUP_REPLICATION and KILL answered OK.
    assert await client.error(sql) == (1290, READ_ONLY)
    assert await client.rows("SELECT 1") == [("1",)]


async def test_a_transaction_starts_but_group_replication_does_not(client: Client) -> None:
    """START TRANSACTION and SET SESSION run; START GROUP_REPLICATION, parsed alike, is 1290."""
    # sql/sql_yacc.yy: START TRANSACTION's modes are READ ONLY, READ WRITE and WITH CONSISTENT
    # SNAPSHOT; any other word after START starts a server's thread.
    assert await client.rows("START TRANSACTION READ ONLY") == []
    assert await client.rows("COMMIT") == []
    assert await client.rows("SET SESSION sql_notes = 1") == []
    assert await client.error("START GROUP_REPLICATION") == (1290, READ_ONLY)


async def test_kill_refuses_all_but_the_endpoints_own_connections(
    endpoint: Endpoint, client: Client
) -> None:
    """KILL QUERY of one of the endpoint's own connections runs; of any other id, 1290."""
    # A client's Ctrl-C sends KILL QUERY on a second connection (client/mysql.cc,
    # ``handle_sigint``); an id that is no connection of the endpoint's would be the member's.
    ((own_id,),) = await client.rows("SELECT CONNECTION_ID()")
    other = await endpoint.connect()
    try:
        assert await other.rows(f"KILL QUERY {own_id}") == []
        assert await other.error("KILL 12345") == (1290, READ_ONLY)
    finally:
        other.connection.close()


@pytest.mark.parametrize("table", ["replication_group_members", "replication_group_member_stats"])
async def test_drop_index_on_performance_schema_is_1044(client: Client, table: str) -> None:
    """DROP INDEX on a performance_schema table is 1044, as mysql-test's results say."""
    # mysql-test/suite/perfschema/r/ddl_replication_group_members.result and
    # ddl_replication_group_member_stats.result: ``DROP INDEX `PRIMARY` ON ...`` is ``ERROR
    # 42000: Access denied for user 'root'@'localhost' to database 'performance_schema'``.
    code, message = await client.error(f"DROP INDEX `PRIMARY`\n  ON performance_schema.{table}")
    assert (code, message) == (
        1044,
        "Access denied for user 'x'@'localhost' to database 'performance_schema'",
    )


# -- functions -----------------------------------------------------------------------------


async def test_unknown_functions_are_1305_or_1046(client: Client) -> None:
    """An unknown function is 1305 in the session's (or its named) schema, 1046 without one."""
    # ER_SP_DOES_NOT_EXIST ``%s %s does not exist`` (share/messages_to_clients.txt): a name
    # that is no native function nor UDF is a stored function of the named or current
    # database (sql/parse_tree_items.cc, PTI_function_call_generic_ident_sys::itemize;
    # Create_sp_func in sql/item_create.cc, 1046 without a database); on main this was 1105
    # with Python's ``name 'NOSUCH' is not defined``.
    assert await client.error("SELECT nosuch(1)") == (1046, "No database selected")
    assert await client.error("SELECT sys.nosuch()") == (
        1305,
        "FUNCTION sys.nosuch does not exist",
    )
    await client.rows("USE performance_schema")
    assert await client.error("SELECT NoSuch(1) FROM replication_group_members") == (
        1305,
        "FUNCTION performance_schema.NoSuch does not exist",
    )


async def test_functions_sqlglot_knows_but_cannot_run_are_1235(client: Client) -> None:
    """A MySQL function the executor lacks is 1235 with MySQL's name, never Python's words."""
    code, message = await client.error("SELECT DATE_FORMAT(NOW(), '%Y')")
    assert (code, message) == (1235, "This version of MySQL doesn't yet support 'DATE_FORMAT'")


async def test_group_replication_functions_read_the_communication_row(
    endpoint: Endpoint, client: Client
) -> None:
    """The GR UDFs that read answer from replication_group_communication_information."""
    # plugin/group_replication/src/udf/udf_write_concurrency.cc and
    # udf_communication_protocol.cc return the group's write concurrency and protocol version,
    # the values that table shows (table_communication_information.cc).
    rows = await client.rows(
        "SELECT WRITE_CONCURRENCY, PROTOCOL_VERSION "
        "FROM performance_schema.replication_group_communication_information"
    )
    got = await client.rows(
        "SELECT group_replication_get_write_concurrency() AS c, "
        "group_replication_get_communication_protocol() AS p"
    )
    assert rows
    assert got == rows


async def test_group_replication_functions_take_no_arguments(client: Client) -> None:
    """An argument is 1123, as the UDF's ``init`` refuses it (udf_write_concurrency.cc)."""
    message = (
        "Can't initialize function 'group_replication_get_write_concurrency'; "
        "UDF does not take arguments."
    )
    assert await client.error("SELECT group_replication_get_write_concurrency(1)") == (
        1123,
        message,
    )


async def test_booleans_are_mysqls_integers(client: Client) -> None:
    """A boolean @@variable or TRUE is 1 or 0 in any expression, never Python's True/False."""
    # sql/item_cmpfunc.h: ``Item_func_true`` and ``Item_func_false`` give 1 and 0, as integers
    # and as text; on main ``CONCAT(@@read_only, TRUE)`` was ``'TrueTrue'``.
    assert await client.rows("SELECT @@read_only") == [("0",)]  # agent 0's member: primary
    assert await client.rows("SELECT CONCAT(@@read_only, TRUE, FALSE) AS c") == [("010",)]


@pytest.mark.parametrize(
    ("unit", "first", "second", "expected"),
    [
        # the MySQL Reference Manual's TIMESTAMPDIFF examples
        ("MONTH", "2003-02-01", "2003-05-01", 3),
        ("YEAR", "2002-05-01", "2001-01-01", -1),
        ("MINUTE", "2003-02-01", "2003-05-01 12:05:55", 128885),
        # a month is whole when the later day (and time) reach the earlier's
        ("MONTH", "2024-01-31", "2024-02-29", 0),
        ("QUARTER", "2024-01-15 10:00:00", "2024-07-15 09:59:59", 1),
        # truncated toward zero, both ways
        ("MINUTE", "2024-01-01 00:10:00", "2024-01-01 00:00:30", -9),
        ("SECOND", "2024-01-01 00:00:00.900000", "2024-01-01 00:00:01.100000", 0),
        ("MICROSECOND", "2024-01-01 00:00:00.900000", "2024-01-01 00:00:01.100000", 200000),
        ("WEEK", "2024-01-01", "2024-01-15", 2),
        ("DAY", None, "2024-01-15", None),
        ("DAY", "not a date", "2024-01-15", None),
    ],
)
def test_timestamp_diff_as_mysql_computes_it(
    unit: str, first: str | None, second: str, expected: int | None
) -> None:
    """TIMESTAMPDIFF as ``Item_func_timestamp_diff::val_int`` (sql/item_timefunc.cc) gives it."""
    assert timestamp_diff(unit, first, second) == expected


async def test_timestampdiff_runs_over_the_tables(client: Client) -> None:
    """TIMESTAMPDIFF runs in a query over a table and without one (main: 1105, Python text)."""
    # The DBA's lag query: whole seconds between two TIMESTAMP(6) values of the lag table.
    assert await client.rows(
        "SELECT TIMESTAMPDIFF(SECOND, '2024-01-01 00:00:00', '2024-01-01 00:01:30') AS s"
    ) == [("90",)]
    rows = await client.rows(
        "SELECT TIMESTAMPDIFF(MICROSECOND, LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP, "
        "LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP) AS us "
        "FROM grstats.replication_group_member_lag"
    )
    assert rows
    assert {row[0] for row in rows} <= {"0", None}


A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
B = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"


@pytest.mark.parametrize(
    ("first", "second", "subset", "subtract"),
    [
        # The examples of the manual's "Functions Used with GTIDs" (12.18.2), upper case in,
        # MySQL's lower case out (Gtid_set::to_string).
        (f"{A.upper()}:21-57", f"{A.upper()}:21", 0, f"{A}:22-57"),
        (f"{A}:21-57", f"{A}:20-57", 1, ""),
        (f"{A}:1-6", f"{A}:3-4", 0, f"{A}:1-2:5-6"),
        # Two UUIDs: MySQL separates them with ",\n" (Gtid_set::default_string_format).
        (f"{B}:1-3,{A}:1-9", f"{A}:5", 0, f"{A}:1-4:6-9,\n{B}:1-3"),
        ("", f"{A}:1", 1, ""),
        (None, f"{A}:1", None, None),
        (f"{A}:1", None, None, None),
    ],
)
def test_gtid_functions_as_mysql_computes_them(
    first: str | None, second: str | None, subset: int | None, subtract: str | None
) -> None:
    """GTID_SUBSET and GTID_SUBTRACT as sql/item_func.cc and item_strfunc.cc compute them."""
    assert gtid_subset(first, second) == subset
    assert gtid_subtract(first, second) == subtract


async def test_gtid_functions_run_at_the_endpoint(client: Client) -> None:
    """A DBA's errant-transaction check runs over @@gtid_executed; bad text is MySQL's 1772."""
    # On main GTID_SUBTRACT and GTID_SUBSET answered 1046 (no such stored function).
    ((executed,),) = await client.rows("SELECT @@gtid_executed")
    assert executed is not None
    assert await client.rows("SELECT GTID_SUBSET(@@gtid_executed, @@gtid_executed)") == [("1",)]
    assert await client.rows("SELECT GTID_SUBTRACT(@@gtid_executed, @@gtid_executed)") == [("",)]
    assert await client.rows(f"SELECT GTID_SUBTRACT('{A}:1-10', '{A}:3-4') AS e") == [
        (f"{A}:1-2:5-10",)
    ]
    # share/messages_to_clients.txt, ER_MALFORMED_GTID_SET_SPECIFICATION: '%.200s'.
    assert await client.error("SELECT GTID_SUBSET('5.7.26', '')") == (
        1772,
        "Malformed GTID set specification '5.7.26'.",
    )
    assert await client.error("SELECT GTID_SUBTRACT(1, '')") == (
        1772,
        "Malformed GTID set specification '1'.",
    )


async def test_scalar_subqueries_without_from(client: Client) -> None:
    """A FROM-less SELECT whose scalar subquery reads a table is answered, named as written."""
    description, rows = await client.query(
        "SELECT (SELECT COUNT(*) FROM performance_schema.replication_group_members)"
    )
    assert description[0][0] == (
        "(SELECT COUNT(*) FROM performance_schema.replication_group_members)"
    )
    assert rows == [("3",)]
    assert await client.rows("SELECT (SELECT 1) + 1 AS two") == [("2",)]


# -- SHOW ----------------------------------------------------------------------------------


async def test_show_grants_are_the_endpoints(client: Client) -> None:
    """SHOW GRANTS: USAGE and SELECT on each served schema, in MySQL 8's words."""
    # ``mysql_show_grants`` (sql/auth/sql_authorization.cc): one column ``Grants for user@host``,
    # names in backquotes; FOR CURRENT_USER() is the same. On main it was 1046.
    expected = [
        ("GRANT USAGE ON *.* TO `x`@`%`",),
        ("GRANT SELECT ON `grstats`.* TO `x`@`%`",),
        ("GRANT SELECT ON `performance_schema`.* TO `x`@`%`",),
        ("GRANT SELECT ON `sys`.* TO `x`@`%`",),
    ]
    description, rows = await client.query("SHOW GRANTS")
    assert [name for name, _ in description] == ["Grants for x@%"]
    assert rows == expected
    assert await client.rows("SHOW GRANTS FOR CURRENT_USER()") == expected
    assert await client.rows("SHOW GRANTS FOR 'x'@'%'") == expected


async def test_show_grants_for_another_user_is_1044(client: Client) -> None:
    """SHOW GRANTS FOR another user needs SELECT on ``mysql``: 1044, as MySQL answers."""
    # sql/sql_parse.cc, SQLCOM_SHOW_GRANTS: the client's own user, or check_access(SELECT_ACL,
    # "mysql"), whose refusal is ER_DBACCESS_DENIED_ERROR; on main a 1064.
    assert await client.error("SHOW GRANTS FOR 'root'@'localhost'") == (
        1044,
        "Access denied for user 'x'@'localhost' to database 'mysql'",
    )


async def test_show_processlist_lists_the_users_connections(
    endpoint: Endpoint, client: Client
) -> None:
    """SHOW PROCESSLIST: MySQL's columns, this user's connections, the SHOW itself in ``init``."""
    # ``mysqld_list_processes`` (sql/sql_show.cc) for an account without PROCESS; on main 1046.
    other = await endpoint.connect()
    try:
        ((own_id,),) = await client.rows("SELECT CONNECTION_ID()")
        ((other_id,),) = await other.rows("SELECT CONNECTION_ID()")
        description, rows = await client.query("SHOW PROCESSLIST")
    finally:
        other.connection.close()
    names = [name for name, _ in description]
    assert names == ["Id", "User", "Host", "db", "Command", "Time", "State", "Info"]
    by_id = {row[0]: row for row in rows}
    assert set(by_id) == {own_id, other_id}
    assert by_id[own_id][1] == "x"
    assert by_id[own_id][4:] == ("Query", "0", "init", "SHOW PROCESSLIST")
    assert by_id[other_id][4] == "Sleep"
    assert by_id[other_id][7] is None
    assert str(by_id[own_id][2]).startswith("127.0.0.1:")


async def test_show_replica_status_is_an_empty_set_of_mysqls_columns(client: Client) -> None:
    """SHOW REPLICA STATUS (and SLAVE STATUS, old names) is no row with MySQL 8.0's columns."""
    # The Reference Manual's SHOW REPLICA STATUS lists the 60 fields; the endpoint serves no
    # asynchronous channel. On main both were 1046.
    description, rows = await client.query("SHOW REPLICA STATUS")
    assert rows == []
    assert [name for name, _ in description] == list(REPLICA_STATUS_COLUMNS)
    assert len(REPLICA_STATUS_COLUMNS) == 60
    description, rows = await client.query("SHOW SLAVE STATUS")
    legacy = [name for name, _ in description]
    assert rows == []
    assert legacy[:3] == ["Slave_IO_State", "Master_Host", "Master_User"]
    assert "Replicate_Do_DB" in legacy
    assert "Seconds_Behind_Master" in legacy
    assert legacy == [legacy_name(name) for name in REPLICA_STATUS_COLUMNS]


# -- sys.gr_member_routing_candidate_status --------------------------------------------------


async def test_routing_candidate_status_is_the_local_members(
    endpoint: Endpoint, client: Client
) -> None:
    """addition_to_sys.sql's view: one row, the member's ONLINE majority, flags and queues."""
    # grpubr/mysql_gr_routing_check's addition_to_sys.sql: ``viable_candidate`` is
    # gr_member_in_primary_partition(), ``read_only`` YES unless read_only and super_read_only
    # are OFF,OFF, ``transactions_to_cert`` the member's COUNT_TRANSACTIONS_IN_QUEUE.
    description, rows = await client.query("SELECT * FROM sys.gr_member_routing_candidate_status")
    assert [name for name, _ in description] == [
        "viable_candidate",
        "read_only",
        "transactions_behind",
        "transactions_to_cert",
    ]
    flags = await client.rows("SELECT @@read_only, @@super_read_only")
    queue = await client.rows(
        "SELECT COUNT_TRANSACTIONS_IN_QUEUE FROM performance_schema.replication_group_member_stats "
        "WHERE MEMBER_ID = @@server_uuid"
    )
    read_only = "NO" if flags == [("0", "0")] else "YES"
    snapshot = endpoint.agent.member.snapshot
    assert snapshot is not None
    behind = str(snapshot.transactions_behind or 0)
    assert rows == [("YES", read_only, behind, queue[0][0])]
    assert read_only == "NO"  # agent 0's member is the primary
