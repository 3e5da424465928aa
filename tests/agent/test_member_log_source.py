"""Issue 48, point 3: the MySQL source reads its member's Group Replication lines of error_log.

Against MariaDB serving performance_schema's tables as MySQL defines them
(tests/agent/sources/fixtures/mysql80.sql, error_log included), read by the least-privilege
account: only the Repl lines with the plugin's prefix, only the new ones at each read, at most
LOG_LINES_PER_READ a read, and none from a server before 8.0.22, which ``log_note`` says; an
agent over the source serves the lines, or logs once why it reads none.
"""

# Test SQL is built from the fixtures' own schema, table and column names:
# ruff: noqa: S608

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from structlog.testing import capture_logs

from grstats.agent.member_log import FIRST_RECORD_WAIT
from grstats.agent.runtime import Agent
from grstats.agent.sources.base import LOG_LINES_PER_READ, LogSource
from grstats.agent.sources.mysql import MySQLSource
from grstats.agent.transports import MemoryNetwork
from grstats.core.rows.member_log import REPLICATION_GROUP_MEMBER_LOG
from tests.agent.test_runtime import Clock, _start_without_loop, settings

if TYPE_CHECKING:
    from collections.abc import Callable, MutableMapping

    from grstats.agent.sources.mysql_config import MySQLSourceConfig
    from grstats.core.rows.member_log import MemberLogRow
    from tests.mariadb import MariaDB

    MakeConfig = Callable[..., MySQLSourceConfig]

LOCAL = "e14043d7-16ee-11eb-9a3b-0800275c3a8f"  # the fixture's server_uuid
#: 2021-01-01 00:00:00 UTC, µs since the epoch
NEW_YEAR_US = 1_609_459_200_000_000


def insert_lines(mariadb: MariaDB, schema: str, seconds: range, *, data: str = "x") -> None:
    """Add one Group Replication line at each of ``seconds`` after the fixture's new year."""
    values = ", ".join(
        f"(TIMESTAMPADD(SECOND, {s}, '2021-01-01 00:00:00.000000'), 0, 'Note', 'MY-011071',"
        f" 'Repl', 'Plugin group_replication reported: ''{data} {s}''')"
        for s in seconds
    )
    mariadb.execute(
        f"SET SESSION time_zone = '+00:00'; INSERT INTO `{schema}`.error_log VALUES {values}"
    )


async def read(source: MySQLSource) -> tuple[MemberLogRow, ...]:
    """One read of the source, and the lines it found."""
    await source.read()
    return source.take_log()


async def test_the_members_group_replication_lines_as_error_log_shows_them(
    make_config: MakeConfig, ps80: str
) -> None:
    """The first read takes GR's three lines, not the server's nor the async channel's."""
    async with MySQLSource(make_config(ps80)) as source:
        assert isinstance(source, LogSource)
        lines = await read(source)
        assert [line.as_dict() for line in lines] == [
            {
                "LOGGED": NEW_YEAR_US + 2_000_000,
                "THREAD_ID": 0,
                "PRIO": "System",
                "ERROR_CODE": "MY-011503",
                "SUBSYSTEM": "Repl",
                "DATA": "Plugin group_replication reported: 'Group membership changed to "
                "db1:3306, db2:3307, db3:3308 on view 16036502905383892:9.'",
                "MEMBER_ID": LOCAL,
            },
            {
                "LOGGED": NEW_YEAR_US + 3_000_000,
                "THREAD_ID": 0,
                "PRIO": "System",
                "ERROR_CODE": "MY-011490",
                "SUBSYSTEM": "Repl",
                "DATA": "Plugin group_replication reported: "
                "'This server was declared online within the replication group.'",
                "MEMBER_ID": LOCAL,
            },
            {
                "LOGGED": NEW_YEAR_US + 4_000_000,
                "THREAD_ID": None,
                "PRIO": "Warning",
                "ERROR_CODE": "MY-011493",
                "SUBSYSTEM": "Repl",
                "DATA": "Plugin group_replication reported: "
                "'Member with address db3:3308 has become unreachable.'",
                "MEMBER_ID": LOCAL,
            },
        ]
        assert source.log_note == ""
        assert await read(source) == ()  # nothing new
        assert source.take_log() == ()  # taken once


async def test_each_read_takes_only_the_new_lines_and_at_most_its_bound(
    make_config: MakeConfig, ps80: str, mariadb: MariaDB
) -> None:
    """After the first read, only lines logged later come, LOG_LINES_PER_READ a read at most."""
    async with MySQLSource(make_config(ps80)) as source:
        assert len(await read(source)) == 3
        insert_lines(mariadb, ps80, range(10, 10 + LOG_LINES_PER_READ + 20))
        first = await read(source)
        assert [line.data for line in first] == [
            f"Plugin group_replication reported: 'x {s}'"
            for s in range(10, 10 + LOG_LINES_PER_READ)
        ]
        rest = await read(source)
        assert [line.logged for line in rest] == [
            NEW_YEAR_US + s * 1_000_000
            for s in range(10 + LOG_LINES_PER_READ, 10 + LOG_LINES_PER_READ + 20)
        ]
        assert await read(source) == ()


async def test_the_first_read_of_a_long_log_takes_its_newest_lines(
    make_config: MakeConfig, ps80: str, mariadb: MariaDB
) -> None:
    """An agent started beside a server with a long log gets its last LOG_LINES_PER_READ lines."""
    insert_lines(mariadb, ps80, range(10, 10 + 2 * LOG_LINES_PER_READ))
    async with MySQLSource(make_config(ps80)) as source:
        lines = await read(source)
        assert [line.logged for line in lines] == [
            NEW_YEAR_US + s * 1_000_000
            for s in range(10 + LOG_LINES_PER_READ, 10 + 2 * LOG_LINES_PER_READ)
        ]


async def test_a_server_before_8022_has_no_error_log_and_says_so(
    make_config: MakeConfig, ps80: str, mariadb: MariaDB
) -> None:
    """MySQL 8.0.21: the table is not read (no lines), and ``log_note`` says why; reads go on."""
    mariadb.execute(
        f"UPDATE `{ps80}`.global_variables SET VARIABLE_VALUE = '8.0.21'"
        " WHERE VARIABLE_NAME = 'version'"
    )
    async with MySQLSource(make_config(ps80)) as source:
        snapshot = await source.read()
        assert snapshot.member_id == LOCAL
        assert source.take_log() == ()
        assert source.log_note == (
            "MySQL 8.0.21 has no performance_schema.error_log (8.0.22+): its Group Replication "
            "log lines are not read"
        )


async def test_a_missing_error_log_reads_no_lines(
    make_config: MakeConfig, ps80: str, mariadb: MariaDB
) -> None:
    """8.0.22+ whose error_log the account cannot read: the read stands, ``log_note`` says why."""
    mariadb.execute(f"DROP TABLE `{ps80}`.error_log")
    async with MySQLSource(make_config(ps80)) as source:
        snapshot = await source.read()
        assert snapshot.member_id == LOCAL
        assert source.take_log() == ()
        assert source.log_note.startswith(f"{ps80}.error_log could not be read (")


async def run_agent(
    config: MySQLSourceConfig, periods: int
) -> tuple[Agent, list[MutableMapping[str, Any]]]:
    """An agent over ``config``'s server, alone on a memory network, after ``periods`` periods.

    Returns it (stopped) and what it logged.
    """
    clock, network = Clock(), MemoryNetwork()
    address = "agent-0:7400"
    agent = Agent(
        settings(advertise=address, peers=(address,)),
        MySQLSource(config),
        transport=network.transport(address),
        clock=clock.us,
    )
    await _start_without_loop(agent)
    try:
        with capture_logs() as logs:
            for _ in range(periods):
                clock.seconds += 1
                await agent.run_period()
    finally:
        await agent.stop(grace_s=0)
    return agent, logs


async def test_an_agent_over_mysql_serves_its_members_lines(
    make_config: MakeConfig, ps80: str
) -> None:
    """The agent's table holds its member's three GR lines once its first record is due."""
    agent, logs = await run_agent(make_config(ps80), FIRST_RECORD_WAIT + 1)
    _, rows = agent.tables(extended=False)[REPLICATION_GROUP_MEMBER_LOG.name]
    assert [row[3] for row in rows] == ["MY-011503", "MY-011490", "MY-011493"]
    assert {row[-1] for row in rows} == {LOCAL}
    assert not [log for log in logs if log["event"] == "member_log_not_read"]


async def test_an_agent_over_mysql_8021_says_once_that_it_reads_no_lines(
    make_config: MakeConfig, ps80: str, mariadb: MariaDB
) -> None:
    """Before 8.0.22: one warning, member_log_not_read, with the reason; no lines."""
    mariadb.execute(
        f"UPDATE `{ps80}`.global_variables SET VARIABLE_VALUE = '8.0.21'"
        " WHERE VARIABLE_NAME = 'version'"
    )
    agent, logs = await run_agent(make_config(ps80), FIRST_RECORD_WAIT + 2)
    _, rows = agent.tables(extended=False)[REPLICATION_GROUP_MEMBER_LOG.name]
    assert rows == []
    said = [log for log in logs if log["event"].startswith("member_log")]
    assert [(log["event"], log["log_level"]) for log in said] == [
        ("member_log_not_read", "warning")
    ]
    assert said[0]["reason"].startswith("MySQL 8.0.21 has no performance_schema.error_log")
