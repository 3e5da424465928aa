"""Real ``grstats agent`` processes with ``--sql-listen``, read by real MySQL clients.

Three agents of one simulated group, each serving SQL on 127.0.0.1; the third with a password
file. Read by the ``mariadb`` command-line client and ``mysqldump`` (Debian's MariaDB client),
by aiomysql, by SQLAlchemy's MySQL dialect (reflection) and by Prometheus' ``mysqld_exporter``
(Debian's ``prometheus-mysqld-exporter``). A missing program skips its test, or fails it under
CI.
"""

# ruff: noqa: S608  (the SQL here is the tests' own, built from constants)

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiomysql  # type: ignore[import-untyped]
import pymysql  # type: ignore[import-untyped]
import pytest
import sqlalchemy

from grstats.cli.demo import free_ports
from tests.programs import require
from tests.waiting import wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.slow

PYTHON = [sys.executable, "-m", "grstats"]
MEMBERS = 3
USER, PASSWORD = "exporter", "s3cret-pw"
#: MySQL's replication_group_members columns, in order (8.0.27+).
MEMBERS_COLUMNS = [
    "CHANNEL_NAME",
    "MEMBER_ID",
    "MEMBER_HOST",
    "MEMBER_PORT",
    "MEMBER_STATE",
    "MEMBER_ROLE",
    "MEMBER_VERSION",
    "MEMBER_COMMUNICATION_STACK",
]
MEMBERS_TABLE = "performance_schema.replication_group_members"
STATS_TABLE = "performance_schema.replication_group_member_stats"


@dataclass
class Group:
    """The agent processes and their SQL ports; the last agent has a password file."""

    processes: list[subprocess.Popen[bytes]]
    sql_ports: list[int]
    member_ids: list[str]  # by agent

    @property
    def open_port(self) -> int:
        """The SQL port of an agent without a password file."""
        return self.sql_ports[0]

    @property
    def locked_port(self) -> int:
        """The SQL port of the agent with a password file."""
        return self.sql_ports[-1]


def rows_of(port: int, sql: str, **options: Any) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` on the agent at ``port`` (PyMySQL), [] when it does not answer yet."""
    options.setdefault("user", "grstats")
    try:
        connection = pymysql.connect(
            host="127.0.0.1", port=port, connect_timeout=2, read_timeout=5, **options
        )
    except pymysql.err.OperationalError:
        return []
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return list(cursor.fetchall())
    finally:
        connection.close()


def serves_the_group(port: int, options: dict[str, str]) -> bool:
    """Whether the agent at ``port`` serves every member and knows its own."""
    members = rows_of(port, f"SELECT MEMBER_ID FROM {MEMBERS_TABLE}", **options)
    return len(members) == MEMBERS and rows_of(port, "SELECT @@server_uuid", **options) != [("",)]


@pytest.fixture(name="group", scope="module")
def _group(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Group]:
    """Three agent processes serving SQL, every member's rows at every agent."""
    state = tmp_path_factory.mktemp("sql-agents")
    users = state / "sql-users"
    users.write_text(f"# for mysqld_exporter\n{USER}:{PASSWORD}\n", encoding="utf-8")
    users.chmod(0o600)
    ports = free_ports(2 * MEMBERS)
    grpc_ports, sql_ports = ports[:MEMBERS], ports[MEMBERS:]
    peers = ",".join(f"127.0.0.1:{port}" for port in grpc_ports)
    start = int(time.time())
    processes = []
    for index in range(MEMBERS):
        extra = ["--sql-password-file", str(users)] if index == MEMBERS - 1 else []
        command = [
            *PYTHON,
            *("agent", "--source", "simulated", "--scenario", "steady"),
            *("--members", str(MEMBERS), "--member-index", str(index)),
            *("--group-start", str(start), "--listen", f"127.0.0.1:{grpc_ports[index]}"),
            *("--peers", peers, "--state-dir", str(state / str(index))),
            *("--sql-listen", f"127.0.0.1:{sql_ports[index]}", "--log-format", "json"),
            *extra,
        ]
        with (state / f"agent-{index}.log").open("wb") as log:  # the child keeps its own copy
            processes.append(subprocess.Popen(command, stdout=log, stderr=log))
    try:
        login = {"user": USER, "password": PASSWORD}
        for index, port in enumerate(sql_ports):
            options: dict[str, str] = login if index == MEMBERS - 1 else {}
            wait_until(
                functools.partial(serves_the_group, port, options),
                30,
                f"the agent on SQL port {port} serves every member and knows its own",
            )
        member_ids = [
            str(rows_of(port, "SELECT @@server_uuid", **(login if i == MEMBERS - 1 else {}))[0][0])
            for i, port in enumerate(sql_ports)
        ]
        yield Group(processes, sql_ports, member_ids)
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=15)
        assert [process.returncode for process in processes] == [0] * MEMBERS


# -- the mariadb client -------------------------------------------------------------------------


def mariadb(port: int, sql: str, *options: str) -> subprocess.CompletedProcess[str]:
    """Run the mariadb client against ``port`` with ``sql``."""
    program = require("mariadb", "mariadb-client")
    user = [] if any(o.startswith("-u") for o in options) else ["-u", "grstats"]
    return subprocess.run(
        [program, "-h", "127.0.0.1", "-P", str(port), "--ssl=0", *user, *options, "-e", sql],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_mariadb_reads_every_members_rows(group: Group) -> None:
    """The batch output has MySQL's column names and one row per member, at every agent."""
    for port in group.sql_ports[:-1]:
        done = mariadb(port, f"SELECT * FROM {MEMBERS_TABLE}", "-B")
        assert done.returncode == 0, done.stderr
        header, *lines = done.stdout.splitlines()
        assert header.split("\t") == MEMBERS_COLUMNS
        assert sorted(line.split("\t")[1] for line in lines) == sorted(group.member_ids)
        assert all(line.split("\t")[4] == "ONLINE" for line in lines)


def test_mariadb_table_output_and_stats(group: Group) -> None:
    """The table output boxes the rows; the stats table has a row per member too."""
    done = mariadb(
        group.open_port,
        f"SELECT MEMBER_ID, COUNT_TRANSACTIONS_CHECKED FROM {STATS_TABLE} ORDER BY MEMBER_ID",
        "-t",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("+-")
    assert "| MEMBER_ID" in lines[1]
    assert "COUNT_TRANSACTIONS_CHECKED |" in lines[1]
    assert len(lines) == 4 + MEMBERS
    for member_id in group.member_ids:
        assert member_id in done.stdout


#: ProxySQL's Group Replication health check, verbatim (sysown/proxysql lib/MySQL_Monitor.cpp,
#: ``monitor_group_replication_thread``), which wants 3 fields and 1 row.
PROXYSQL_GR_CHECK = (
    "SELECT viable_candidate,read_only,transactions_behind "
    "FROM sys.gr_member_routing_candidate_status"
)


def test_proxysql_group_replication_check(group: Group) -> None:
    """ProxySQL's check over PyMySQL: one row per agent, the writer its member's primary."""
    # ProxySQL routes writes to a viable member whose read_only is NO, reads to one whose is YES
    # (``MyHGM->update_group_replication_set_writer`` / ``set_read_only``); on main the view
    # did not exist (1146). The values are addition_to_sys.sql's (sys_schema.py).
    for port in group.sql_ports[:-1]:
        rows = rows_of(port, PROXYSQL_GR_CHECK)
        assert len(rows) == 1
        assert len(rows[0]) == 3
        viable, read_only, behind = rows[0]
        ((role,),) = rows_of(
            port, f"SELECT MEMBER_ROLE FROM {MEMBERS_TABLE} WHERE MEMBER_ID=@@server_uuid"
        )
        flags = rows_of(port, "SELECT @@read_only, @@super_read_only")
        assert viable == "YES"
        assert read_only == ("NO" if flags == [(0, 0)] else "YES")
        assert (read_only == "NO") == (role == "PRIMARY")
        assert int(behind) >= 0


PROXYSQL_SCRIPT = Path(__file__).parents[3] / "deploy" / "examples" / "proxysql-grstats-check.sh"


def test_the_proxysql_scheduler_script_routes_by_the_agents_view(group: Group) -> None:
    """deploy/examples' scheduler script reads each agent's sys view with the mariadb client."""
    # Two open agents and a port nobody serves: the writer's hostgroup for the primary, the
    # readers' for the secondary, OFFLINE_SOFT for the member whose agent does not answer.
    primary = [
        port
        for port in group.sql_ports[:-1]
        if rows_of(port, "SELECT read_only FROM sys.gr_member_routing_candidate_status")
        == [("NO",)]
    ]
    (dead,) = free_ports(1)
    # One host here: the members are told apart by their MySQL ports, 3300, 3301 and 3302.
    ports = [*group.sql_ports[:-1], dead]
    backends = [f"127.0.0.1:330{i}:{port}" for i, port in enumerate(ports)]
    done = subprocess.run(
        ["/bin/sh", str(PROXYSQL_SCRIPT), "--dry-run", *backends],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "CLIENT": require("mariadb", "mariadb-client")},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    where = " AND hostgroup_id IN (10, 20);"
    expected = [
        f"UPDATE mysql_servers SET status='ONLINE', hostgroup_id="
        f"{10 if port in primary else 20} WHERE hostname='127.0.0.1' AND port=330{i}{where}"
        for i, port in enumerate(group.sql_ports[:-1])
    ]
    assert lines == [
        *expected,
        "UPDATE mysql_servers SET status='OFFLINE_SOFT' WHERE hostname='127.0.0.1' AND port=3302;",
        "LOAD MYSQL SERVERS TO RUNTIME;",
    ]
    assert len(primary) <= 1


def test_mariadb_filter_on_server_uuid(group: Group) -> None:
    """``WHERE MEMBER_ID=@@server_uuid`` gives the asked agent's own member only."""
    for index, port in enumerate(group.sql_ports[:-1]):
        done = mariadb(
            port,
            f"SELECT MEMBER_ID FROM {MEMBERS_TABLE} WHERE MEMBER_ID=@@server_uuid",
            "-B",
            "-N",
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [group.member_ids[index]]


@pytest.mark.parametrize(
    ("sql", "error"),
    [
        pytest.param(  # mysql-test/suite/perfschema/r/dml_replication_group_members.result
            f"DELETE FROM {MEMBERS_TABLE}",
            "ERROR 1142 (42000) at line 1: DELETE command denied to user 'grstats'@'localhost' "
            "for table 'replication_group_members'",
            id="write",
        ),
        pytest.param(  # sql/sql_parse.cc, err_readonly: an account without SUPER
            "FLUSH LOGS",
            "ERROR 1290 (HY000) at line 1: The MySQL server is running with the "
            "--read-only option so it cannot execute this statement",
            id="administer",
        ),
        pytest.param(
            "SELECT * FROM performance_schema.nope",
            "ERROR 1146 (42S02) at line 1: Table 'performance_schema.nope' doesn't exist",
            id="unknown-table",
        ),
        pytest.param(
            "SELEC * FROM x",
            "ERROR 1064 (42000) at line 1: You have an error in your SQL syntax",
            id="syntax",
        ),
    ],
)
def test_mariadb_errors(group: Group, sql: str, error: str) -> None:
    """Writes, unknown tables and bad syntax get MySQL's errors, as the client prints them."""
    done = mariadb(group.open_port, sql)
    assert done.returncode == 1
    assert error in done.stderr, done.stderr


#: SHOW CREATE TABLE of each table, as MySQL's DDL gives it (tests/agent/sql/test_metadata.py
#: writes both out from storage/perfschema/table_replication_group_member*.cc): its first lines.
CREATE_MEMBERS = (
    "CREATE TABLE `replication_group_members` (\n"
    "  `CHANNEL_NAME` char(64) NOT NULL,\n"
    "  `MEMBER_ID` char(36) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,\n"
    "  `MEMBER_HOST` char(255) CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,\n"
)
ENGINE_LINE = ") ENGINE=PERFORMANCE_SCHEMA DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci;\n"


def test_mysqldump_no_data_dumps_the_tables(group: Group) -> None:
    """``mysqldump --no-data --skip-lock-tables performance_schema`` writes MySQL's DDL.

    As against MySQL, whose manual says to dump performance_schema with --skip-lock-tables:
    without it, LOCK TABLES gets MySQL's 1142.
    """
    program = require("mysqldump", "mariadb-client")
    login = [program, "-h", "127.0.0.1", "-P", str(group.open_port), "--ssl=0", "-u", "grstats"]

    def dump(*options: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*login, "--no-data", *options, "performance_schema"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    done = dump("--skip-lock-tables")
    assert done.returncode == 0, done.stderr
    # and global_status, global_variables, replication_group_communication_information
    assert done.stdout.count("CREATE TABLE") == 5
    assert (
        "  `WRITE_CONSENSUS_SINGLE_LEADER_CAPABLE` tinyint(1) NOT NULL COMMENT 'What the option "
        "group_replication_paxos_single_leader was set to at the time this member joined the "
        "group. ',\n" in done.stdout
    )
    assert CREATE_MEMBERS in done.stdout
    assert "  PRIMARY KEY (`VARIABLE_NAME`)\n" + ENGINE_LINE in done.stdout
    assert "  `COUNT_TRANSACTIONS_LOCAL_ROLLBACK` bigint unsigned NOT NULL\n" + ENGINE_LINE in (
        done.stdout
    )
    assert "-- Dump completed" in done.stdout
    locked = dump()
    assert locked.returncode == 2
    assert "1142: \"SELECT, LOCK TABLES command denied to user 'grstats'@'localhost'" in (
        locked.stderr
    )


def test_sqlalchemy_reflects_the_tables(group: Group) -> None:
    """SQLAlchemy's MySQL dialect reflects names, types, collations, nullability and no key."""
    engine = sqlalchemy.create_engine(
        f"mysql+pymysql://grstats:@127.0.0.1:{group.open_port}/performance_schema"
    )
    try:
        inspector = sqlalchemy.inspect(engine)
        assert sorted(inspector.get_table_names()) == [
            "global_status",
            "global_variables",
            "replication_group_communication_information",
            "replication_group_member_stats",
            "replication_group_members",
        ]
        columns = inspector.get_columns("replication_group_members")
        assert [c["name"] for c in columns] == MEMBERS_COLUMNS
        member_id, host, port = columns[1], columns[2], columns[3]
        member_type: Any = member_id[
            "type"
        ]  # the dialect's CHAR, BIGINT, ... (typed as TypeEngine)
        host_type: Any = host["type"]
        assert (member_type.length, member_type.collation) == (36, "utf8mb4_bin")
        assert (host_type.length, host_type.charset) == (255, "ascii")
        assert port["nullable"] is True
        assert not member_id["nullable"]
        stats = {c["name"]: c for c in inspector.get_columns("replication_group_member_stats")}
        queue_type: Any = stats["COUNT_TRANSACTIONS_IN_QUEUE"]["type"]
        assert queue_type.unsigned is True
        assert inspector.get_pk_constraint("replication_group_members")["constrained_columns"] == []
        key = inspector.get_pk_constraint("global_variables")["constrained_columns"]
        assert key == ["VARIABLE_NAME"]
        assert inspector.get_indexes("replication_group_member_stats") == []
        communication = inspector.get_columns("replication_group_communication_information")
        assert [c.get("comment") for c in communication][4:] == [
            (
                "What the option group_replication_paxos_single_leader was set to at the time this "
                "member joined the group. "
            ),
            (
                "A list of pairs between a group member address and the number of times the local "
                "node has seen it as suspected"
            ),
        ]
        with engine.connect() as connection:
            rows = connection.execute(sqlalchemy.text(f"SELECT MEMBER_ID FROM {MEMBERS_TABLE}"))
            assert sorted(row[0] for row in rows) == sorted(group.member_ids)
    finally:
        engine.dispose()


def test_mariadb_show_create_table(group: Group) -> None:
    """The mariadb client prints SHOW CREATE TABLE and SHOW TABLES' heading as MySQL's do."""
    done = mariadb(
        group.open_port,
        f"SHOW CREATE TABLE {MEMBERS_TABLE}; "
        "SHOW TABLES FROM performance_schema LIKE 'replication_group%'",
    )
    assert done.returncode == 0, done.stderr
    assert "Tables_in_performance_schema (replication_group%)\n" in done.stdout
    assert "CREATE TABLE `replication_group_members` (\\n  `CHANNEL_NAME` char(64)" in done.stdout


def test_mariadb_password_file(group: Group) -> None:
    """With a password file the right password reads, a wrong one is ERROR 1045."""
    sql = f"SELECT COUNT(*) FROM {MEMBERS_TABLE}"
    done = mariadb(group.locked_port, sql, f"-u{USER}", f"-p{PASSWORD}", "-B", "-N")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(MEMBERS)
    wrong = mariadb(group.locked_port, sql, f"-u{USER}", "-pwrong")
    assert wrong.returncode == 1
    assert (
        f"ERROR 1045 (28000): Access denied for user '{USER}' (using password: YES)" in wrong.stderr
    )


# -- aiomysql -----------------------------------------------------------------------------------


async def test_aiomysql_reads_the_same_rows(group: Group) -> None:
    """The aiomysql driver gets the same members, columns and identity as the mariadb client."""
    connection = await aiomysql.connect(
        host="127.0.0.1", port=group.locked_port, user=USER, password=PASSWORD, connect_timeout=5
    )
    try:
        async with connection.cursor() as cursor:
            await cursor.execute(f"SELECT * FROM {MEMBERS_TABLE} ORDER BY MEMBER_ID")
            rows = await cursor.fetchall()
            names = [column[0] for column in cursor.description]
            await cursor.execute("SELECT @@server_uuid, @@version")
            ((server_uuid, version),) = await cursor.fetchall()
    finally:
        connection.close()
    assert names == MEMBERS_COLUMNS
    assert [row[1] for row in rows] == sorted(group.member_ids)
    assert server_uuid == group.member_ids[-1]
    assert str(version).endswith("-grstats")


# -- mysqld_exporter ----------------------------------------------------------------------------

#: mysqld_exporter 0.14's default collectors that read what the agent does not serve (InnoDB's
#: information_schema tables, SHOW SLAVE STATUS); each would only add a scrape error.
EXPORTER_OFF = (
    "--no-collect.info_schema.innodb_cmp",
    "--no-collect.info_schema.innodb_cmpmem",
    "--no-collect.info_schema.query_response_time",
    "--no-collect.slave_status",
)
#: The exporter's Group Replication collectors, off by default.
EXPORTER_GR = (
    "--collect.perf_schema.replication_group_members",
    "--collect.perf_schema.replication_group_member_stats",
)
#: The my.cnf example the README points mysqld_exporter at.
EXPORTER_CNF = Path(__file__).parents[3] / "deploy" / "examples" / "mysqld-exporter.cnf"


def scrape(port: int) -> str:
    """The exporter's /metrics text, or '' while it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            return str(response.read().decode("utf-8"))
    except OSError:
        return ""


@functools.cache
def exporter_help(program: str) -> str:
    """The installed exporter's --help text (0.15 and later list --mysqld.address)."""
    done = subprocess.run(
        [program, "--help"], capture_output=True, text=True, timeout=30, check=False
    )
    return done.stdout + done.stderr


def exporter_series(
    program: str, arguments: list[str], environment: dict[str, str], tmp_path: Path
) -> tuple[list[str], str]:
    """The series of a mysqld_exporter run once it reports mysql_up, and its log; it is stopped."""
    (web,) = free_ports(1)
    log_path = tmp_path / "exporter.log"
    with log_path.open("wb") as log:  # the child keeps its own copy
        exporter = subprocess.Popen(
            [program, f"--web.listen-address=127.0.0.1:{web}", *arguments],
            env=environment,
            stdout=log,
            stderr=log,
        )
    try:

        def exporter_log() -> str:
            return log_path.read_text(encoding="utf-8", errors="replace")

        def answered() -> str:
            """The exporter's /metrics once it reports mysql_up; fails at once if it exited."""
            assert exporter.poll() is None, exporter_log()
            text = scrape(web)
            return text if "\nmysql_up " in text else ""

        text = wait_until(answered, 20, "mysqld_exporter reports mysql_up", detail=exporter_log)
        return [line for line in text.splitlines() if not line.startswith("#")], exporter_log()
    finally:
        exporter.send_signal(signal.SIGTERM)
        exporter.wait(timeout=15)


def assert_group_replication(series: list[str], group: Group, failed: str) -> None:
    """The exporter is up, with every member's info and the asked member's stats."""
    assert "mysql_up 1" in series, failed
    assert "mysql_exporter_last_scrape_error 0" in series, failed
    info = [s for s in series if s.startswith("mysql_perf_schema_replication_group_member_info{")]
    assert len(info) == MEMBERS
    for member_id in group.member_ids:
        assert any(f'member_id="{member_id}"' in s and 'member_state="ONLINE"' in s for s in info)
    checked = [s for s in series if s.startswith("mysql_perf_schema_transactions_checked_total ")]
    assert len(checked) == 1  # the asked member's own row (WHERE MEMBER_ID=@@server_uuid)
    assert float(checked[0].split()[1]) > 0
    assert any(s.startswith("mysql_perf_schema_transactions_in_queue ") for s in series)
    assert any(s.startswith("mysql_version_info{") and "-grstats" in s for s in series)


def test_mysqld_exporter_reads_the_agent(group: Group, tmp_path: Path) -> None:
    """mysqld_exporter 0.14 given DATA_SOURCE_NAME is up, with every member's info and own stats."""
    program = require("prometheus-mysqld-exporter", "prometheus-mysqld-exporter")
    if "--mysqld.address" in exporter_help(program):
        pytest.skip("mysqld_exporter 0.15 and later ignore DATA_SOURCE_NAME")
    environment = {
        **os.environ,
        "DATA_SOURCE_NAME": f"{USER}:{PASSWORD}@(127.0.0.1:{group.locked_port})/",
    }
    series, failed = exporter_series(program, [*EXPORTER_GR, *EXPORTER_OFF], environment, tmp_path)
    assert_group_replication(series, group, failed)


def test_mysqld_exporter_reads_the_agent_through_a_my_cnf(group: Group, tmp_path: Path) -> None:
    """mysqld_exporter given deploy/examples' my.cnf (--config.my-cnf) reads the agent as above."""
    program = require("prometheus-mysqld-exporter", "prometheus-mysqld-exporter")
    example = EXPORTER_CNF.read_text(encoding="utf-8")
    for line in ("user = grstats", "password = SECRET", "host = 127.0.0.1", "port = 7406"):
        assert f"\n{line}\n" in example, line
    my_cnf = tmp_path / "exporter.cnf"
    my_cnf.write_text(
        example.replace("user = grstats", f"user = {USER}")
        .replace("password = SECRET", f"password = {PASSWORD}")
        .replace("port = 7406", f"port = {group.locked_port}"),
        encoding="utf-8",
    )
    my_cnf.chmod(0o600)
    # 0.14 takes DATA_SOURCE_NAME over the file
    environment = {k: v for k, v in os.environ.items() if k != "DATA_SOURCE_NAME"}
    arguments = [f"--config.my-cnf={my_cnf}", *EXPORTER_GR, *EXPORTER_OFF]
    series, failed = exporter_series(program, arguments, environment, tmp_path)
    assert_group_replication(series, group, failed)
