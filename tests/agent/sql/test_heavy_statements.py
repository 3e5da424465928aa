"""Heavy SQL statements and login floods never hold the agent's event loop.

Each test serves agent 0 of a 3-member in-memory group on a real endpoint (127.0.0.1, any
port) and talks to it with PyMySQL from a thread, while a task on the agent's loop measures
how late the loop wakes (:class:`LoopLag`): the gossip periods, the gRPC services and
/metrics run on that loop, so its lateness is the delay of the agent's period.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pymysql  # type: ignore[import-untyped]
import pytest
import sqlglot
import structlog
from sqlglot import exp

from grstats.agent.limits import LimitsConfig
from grstats.agent.sql import SqlEndpoint, metadata
from grstats.agent.sql.auth import ConnectionControl
from grstats.agent.sql.bounds import examined_rows

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from grstats.agent.runtime import Agent
    from tests.agent.test_runtime import Group

#: The most the loop may wake late while a statement runs (a period is 1 s; a peer calls the
#: member silent past 1.5 s). sqlglot on the worker thread takes the GIL in 5 ms turns. On the
#: loop, the smallest of these statements held it 0.7 s; with both cores busy elsewhere the
#: scheduler alone once woke it 0.34 s late, so the bound sits between.
MAX_LAG_S = 0.5
#: information_schema.columns joined with itself: 379 x 379 rows, 143,641 combinations, over
#: the default sql_max_join_size (100,000); (433 x 433) it took 0.7 s and 25 MB on the event loop.
INFO_JOIN = "SELECT COUNT(*) FROM information_schema.columns a, information_schema.columns b"
#: A 40 KB static statement: its parse took 0.4 s and its execution 1.7 s on the event loop.
LONG_SUM = "SELECT " + "+".join(["1"] * 20_000)
TIMEOUT = "Query execution was interrupted, maximum statement execution time exceeded"
#: A cost past any statement's here: what sql_max_cost refuses runs, and is slow enough.
UNBOUNDED = 10**9


class LoopLag:
    """How late the running loop wakes from 5 ms sleeps, at most, while it is measured."""

    def __init__(self) -> None:
        self.max_s = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _measure(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(0.005)
            self.max_s = max(self.max_s, time.perf_counter() - started - 0.005)

    @contextlib.asynccontextmanager
    async def measuring(self) -> AsyncIterator[LoopLag]:
        """Measure for the block's duration."""
        self._task = asyncio.create_task(self._measure())
        try:
            yield self
        finally:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def rss_mb() -> float:
    """This process's resident memory, in MB (Linux)."""
    pages = Path("/proc/self/statm").read_text(encoding="ascii").split()[1]
    return int(pages) * 4096 / 2**20


@dataclasses.dataclass
class Served:
    """An endpoint serving agent 0, and where it listens."""

    endpoint: SqlEndpoint
    host: str
    port: int

    def connect(self, **options: Any) -> Any:
        """A PyMySQL connection (user ``grstats`` unless given)."""
        options.setdefault("user", "grstats")
        return pymysql.connect(
            host=self.host, port=self.port, connect_timeout=5, read_timeout=15, **options
        )


@contextlib.asynccontextmanager
async def serving(agent: Agent, **limits: Any) -> AsyncIterator[Served]:
    """A SqlEndpoint for ``agent`` with its ``[limits]`` changed by ``limits``."""
    config = dataclasses.replace(
        agent.config,
        sql_listen="127.0.0.1:0",
        limits=dataclasses.replace(agent.config.limits, **limits),
    )
    endpoint = SqlEndpoint(agent, config, structlog.get_logger())
    address = await endpoint.start()
    host, _, port = address.rpartition(":")
    try:
        yield Served(endpoint, host, int(port))
    finally:
        await endpoint.aclose()


def error_of(connection: Any, sql: str) -> tuple[int, str]:
    """The (code, message) ``sql`` is refused with on ``connection``."""
    with pytest.raises(pymysql.err.MySQLError) as raised, connection.cursor() as cursor:
        cursor.execute(sql)
    code, message = raised.value.args
    return int(code), str(message)


def rows_of(connection: Any, sql: str) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` on ``connection``."""
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return list(cursor.fetchall())


async def refused_on_time(
    served: Served, sql: str, *, repeat: int = 1
) -> tuple[list[tuple[int, str]], LoopLag]:
    """Send ``sql`` ``repeat`` times on one connection: the errors, the loop's lag meanwhile.

    The connection must still answer ``SELECT 1`` afterwards.
    """

    def run() -> list[tuple[int, str]]:
        connection = served.connect()
        try:
            errors = [error_of(connection, sql) for _ in range(repeat)]
            assert rows_of(connection, "SELECT 1") == [(1,)]
            return errors
        finally:
            connection.close()

    async with LoopLag().measuring() as lag:
        errors = await asyncio.to_thread(run)
    return errors, lag


# -- information_schema ------------------------------------------------------------------


async def test_a_heavy_information_schema_join_is_refused_before_it_runs(group: Group) -> None:
    """Past sql_max_join_size, information_schema's join gets MySQL's 1104 at once, on time."""
    async with serving(group.agents[0]) as served:
        started = time.monotonic()
        errors, lag = await refused_on_time(served, INFO_JOIN, repeat=3)
    assert time.monotonic() - started < 2
    columns = len(metadata.columns_rows())
    assert (
        errors
        == [
            (
                1104,
                (
                    "The SELECT would examine more than MAX_JOIN_SIZE rows; check your WHERE "
                    f"(it may examine {columns**2} row combinations, more than "
                    "limits.sql_max_join_size = 100000)"
                ),
            )
        ]
        * 3
    )
    assert lag.max_s < MAX_LAG_S


async def test_a_costly_information_schema_join_is_refused_before_it_runs(group: Group) -> None:
    """Within sql_max_join_size but past sql_max_cost, the join gets 1104 at once, on time."""
    async with serving(group.agents[0], sql_max_join_size=1_000_000) as served:
        started = time.monotonic()
        errors, lag = await refused_on_time(served, INFO_JOIN)
    assert time.monotonic() - started < 2
    ((code, message),) = errors
    assert code == 1104
    assert message.startswith("The statement would cost more than limits.sql_max_cost = 400000")
    assert "to run over" in message
    assert lag.max_s < MAX_LAG_S


async def past_its_time(served: Served, sql: str) -> tuple[tuple[int, str], float, float, LoopLag]:
    """Send ``sql``: its error, when it came, when the connection answered ``SELECT 1`` again.

    The worker runs a statement past its time to its end (its cost is bounded): until then
    the ``SELECT 1`` queued behind it gets 3024 too, and is sent again.
    """

    def run() -> tuple[tuple[int, str], float, float]:
        connection = served.connect()
        try:
            started = time.monotonic()
            error = error_of(connection, sql)
            errored = time.monotonic() - started
            while time.monotonic() - started < 30:
                with contextlib.suppress(pymysql.err.OperationalError):
                    assert rows_of(connection, "SELECT 1") == [(1,)]
                    return error, errored, time.monotonic() - started
            raise AssertionError("the worker never came back")
        finally:
            connection.close()

    async with LoopLag().measuring() as lag:
        error, errored, answered = await asyncio.to_thread(run)
    return error, errored, answered, lag


async def test_an_information_schema_query_past_its_time_gets_3024(group: Group) -> None:
    """An allowed information_schema join runs off the loop: 3024 at its time, before the join ends."""
    async with serving(
        group.agents[0],
        sql_query_timeout_s=0.3,
        sql_max_join_size=1_000_000,
        sql_max_cost=UNBOUNDED,
    ) as served:
        gc.collect()
        idle_mb = rss_mb()
        error, errored, answered, lag = await past_its_time(served, INFO_JOIN)
        gc.collect()
        assert rss_mb() - idle_mb < 50
    assert error == (3024, TIMEOUT)
    # 3024 at its time (0.3 s), before the join (175,000 combinations) ends in the background
    assert errored < min(1.0, answered)
    assert lag.max_s < MAX_LAG_S


# -- the statement's text ------------------------------------------------------------------


async def test_a_long_static_statement_is_refused_before_it_is_parsed(group: Group) -> None:
    """A 40 KB SELECT 1+1+...: 1104 for its parse's cost, told from its tokens, on time."""
    async with serving(group.agents[0], sql_max_allowed_packet=65_536) as served:
        started = time.monotonic()
        errors, lag = await refused_on_time(served, LONG_SUM, repeat=2)
    assert time.monotonic() - started < 2
    message = (
        "The statement would cost more than limits.sql_max_cost = 400000 (parsing its "
        f"{len(LONG_SUM)} characters: {len(LONG_SUM) * 5 + 40_000 * 48}); simplify it, or "
        "narrow it with WHERE"
    )
    assert errors == [(1104, message)] * 2
    assert lag.max_s < MAX_LAG_S


async def test_a_long_static_statement_is_parsed_off_the_loop(group: Group) -> None:
    """Its parse within sql_max_cost, a 16 KB SELECT 1+1+... is parsed on the worker: 1436, too deep."""
    async with serving(group.agents[0], sql_max_cost=UNBOUNDED) as served:
        started = time.monotonic()
        errors, lag = await refused_on_time(served, "SELECT " + "+".join(["1"] * 8_000))
    assert time.monotonic() - started < 5
    assert errors == [
        (
            1436,
            (
                "Thread stack overrun: the statement's expressions nest 8001 deep, more than "
                "the 100 grstats evaluates; simplify it"
            ),
        )
    ]
    assert lag.max_s < MAX_LAG_S


async def test_a_statement_past_max_allowed_packet_gets_1153(group: Group) -> None:
    """A text longer than sql_max_allowed_packet is dropped unread and answered with 1153."""
    async with serving(group.agents[0], sql_max_allowed_packet=4096) as served:
        errors, lag = await refused_on_time(served, "SELECT " + "+".join(["1"] * 3000))
        short = "SELECT LENGTH('" + "x" * 3000 + "')"

        def within() -> list[tuple[Any, ...]]:
            with served.connect() as connection:
                return rows_of(connection, short)

        assert await asyncio.to_thread(within) == [(3000,)]
    assert errors == [(1153, "Got a packet bigger than 'max_allowed_packet' bytes")]
    assert lag.max_s < MAX_LAG_S


# -- the result ----------------------------------------------------------------------------


#: Five copies of the stats table: 243 rows of every column, about 0.5 MB of text.
FIVE_STATS = "SELECT * FROM " + ", ".join(  # noqa: S608  (the test's own names)
    f"grstats.replication_group_member_stats AS s{index}" for index in range(5)
)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM information_schema.columns a, information_schema.schemata b",
        FIVE_STATS,
        "SELECT " + ", ".join(f"'{index:0>1000}'" for index in range(70)),
    ],
    ids=["information_schema", "executor", "static"],
)
async def test_a_result_past_sql_max_result_bytes_gets_1104(group: Group, sql: str) -> None:
    """On every path a result whose text passes sql_max_result_bytes is 1104, on time."""
    async with serving(
        group.agents[0], sql_max_result_bytes=65_536, sql_max_allowed_packet=2**20
    ) as served:
        errors, lag = await refused_on_time(served, sql)
    assert errors == [
        (
            1104,
            (
                "The SELECT's result would take more than limits.sql_max_result_bytes = 65536 "
                "bytes; narrow it with WHERE or LIMIT, or select fewer columns"
            ),
        )
    ]
    assert lag.max_s < MAX_LAG_S


# -- logins ------------------------------------------------------------------------------


class TestConnectionControl:
    def test_delays_follow_mysqls_rule(self) -> None:
        """Past the threshold each login waits 1 s more, from min to max; a success resets it.

        As ``Connection_delay_action::notify_event`` and ``get_wait_time``
        (plugin/connection_control/connection_delay.cc), per ``'user'@'host'``.
        """
        waits: list[float] = []

        async def sleep(seconds: float) -> None:
            waits.append(seconds)

        control = ConnectionControl(3, 1000, 3500, 16, sleep=sleep)

        async def logins(user: str, host: str, outcomes: str) -> None:
            for outcome in outcomes:
                await control.settle(user, host, failed=outcome == "x")

        asyncio.run(logins("bob", "10.0.0.5", "xxxxxxx"))
        assert waits == [1.0, 2.0, 3.0, 3.5]
        assert control.failures("bob", "10.0.0.5") == 7
        asyncio.run(logins("bob", "10.0.0.5", "o"))  # a success still waits, then resets the count
        assert waits[-1] == 3.5
        assert control.failures("bob", "10.0.0.5") == 0
        asyncio.run(logins("bob", "10.0.0.6", "xxxx"))
        assert waits[-1] == 1.0

    def test_accounts_are_counted_apart(self) -> None:
        """Another user on the same host is not delayed (make_hash_key: 'user'@'host')."""
        waits: list[float] = []

        async def sleep(seconds: float) -> None:
            waits.append(seconds)

        control = ConnectionControl(2, 1000, 9000, 16, sleep=sleep)

        async def logins() -> None:
            for _ in range(4):
                await control.settle("bob", "10.0.0.5", failed=True)
            await control.settle("alice", "10.0.0.5", failed=False)

        asyncio.run(logins())
        assert waits == [1.0, 2.0]  # bob's third and fourth; alice none
        assert control.failures("bob", "10.0.0.5") == 4
        assert control.failures("alice", "10.0.0.5") == 0

    def test_min_delay_and_off(self) -> None:
        """The first delay is at least min; a threshold of 0 never delays."""
        assert ConnectionControl(1, 5000, 9000, 16).delay_ms(1) == 5000
        assert ConnectionControl(1, 1000, 9000, 16).delay_ms(3) == 3000
        assert ConnectionControl(0, 1000, 9000, 16).delay_ms(100) == 0

    def test_accounts_are_bounded(self) -> None:
        """At most max_accounts are counted; the least recently failing goes first."""
        control = ConnectionControl(3, 1000, 2000, 16)
        for index in range(40):
            asyncio.run(control.settle(f"user{index}", "10.0.0.5", failed=True))
        assert control.failures("user39", "10.0.0.5") == 1
        assert control.failures("user0", "10.0.0.5") == 0


def write_users(path: Path) -> Path:
    """A password file with one account, mode 0600."""
    path.write_text("alice:secret\n", encoding="utf-8")
    path.chmod(0o600)
    return path


async def test_failed_logins_of_an_account_are_delayed(group: Group, tmp_path: Path) -> None:
    """Past 2 failed logins the account's next one is answered 1 s late, the loop on time."""
    users = write_users(tmp_path / "users")
    async with serving_with_users(group.agents[0], users) as served:

        def attempt(password: str) -> tuple[float, int]:
            started = time.monotonic()
            try:
                served.connect(user="alice", password=password).close()
                code = 0
            except pymysql.err.OperationalError as exc:
                code = int(exc.args[0])
            return time.monotonic() - started, code

        async with LoopLag().measuring() as lag:
            times = [await asyncio.to_thread(attempt, "wrong") for _ in range(3)]
    assert [code for _, code in times] == [1045, 1045, 1045]
    assert times[0][0] < 0.5
    assert times[1][0] < 0.5
    assert 1.0 <= times[2][0] < 1.8
    assert lag.max_s < MAX_LAG_S


@contextlib.asynccontextmanager
async def serving_with_users(agent: Agent, users: Path) -> AsyncIterator[Served]:
    """The endpoint with a password file and connection_control's threshold at 2."""
    config = dataclasses.replace(
        agent.config,
        sql_listen="127.0.0.1:0",
        sql_password_file=users,
        limits=dataclasses.replace(agent.config.limits, sql_failed_connections_threshold=2),
    )
    endpoint = SqlEndpoint(agent, config, structlog.get_logger())
    address = await endpoint.start()
    host, _, port = address.rpartition(":")
    try:
        yield Served(endpoint, host, int(port))
    finally:
        await endpoint.aclose()


# -- the estimate ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "examined"),
    [
        ("SELECT * FROM t", 10),
        ("SELECT * FROM t, u", 200),
        ("SELECT * FROM t JOIN u ON t.a = u.a JOIN t AS v ON v.a = t.a", 2000),
        ("SELECT * FROM (SELECT * FROM t, u) AS d", 200 + 200),
        ("WITH c AS (SELECT * FROM t, t AS x) SELECT * FROM c, u", 100 + 2000),
        ("SELECT (SELECT COUNT(*) FROM u) FROM t", 10 + 10 * 20),
        ("SELECT * FROM t UNION ALL SELECT * FROM u", 30),
        ("SELECT 1", 1),
    ],
)
def test_examined_rows(sql: str, examined: int) -> None:
    """The estimate multiplies each SELECT's sources, a scalar subquery by its outer rows."""
    sizes = {"t": 10, "u": 20}
    expression = sqlglot.parse_one(sql, read="mysql")
    assert isinstance(expression, exp.Expression)
    assert examined_rows(expression, lambda table: sizes[table.name]) == examined


def test_default_limits() -> None:
    """The new [limits] keys have their documented defaults and bounds."""
    limits = LimitsConfig()
    assert limits.sql_max_join_size == 100_000
    assert limits.sql_max_cost == 400_000
    assert limits.sql_max_result_bytes == 16 * 2**20
    assert limits.sql_max_allowed_packet == 16_384
    assert (
        limits.sql_failed_connections_threshold,
        limits.sql_min_connection_delay_ms,
        limits.sql_max_connection_delay_ms,
    ) == (3, 1000, 2**31 - 1)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("sql_max_join_size", 0, "limits.sql_max_join_size: 0 is not in 1..1000000000000"),
        ("sql_max_cost", 0, "limits.sql_max_cost: 0 is not in 1..1000000000000"),
        (
            "sql_max_allowed_packet",
            100,
            "limits.sql_max_allowed_packet: 100 is not in 1024..1073741824",
        ),
        (
            "sql_max_connection_delay_ms",
            500,
            "limits.sql_max_connection_delay_ms: 500 is not in 1000..2147483647",
        ),
    ],
)
def test_bad_limits(key: str, value: int, message: str) -> None:
    """A value out of bounds is refused naming the key, the value and the bounds."""
    from grstats.core.errors import ConfigError  # noqa: PLC0415

    with pytest.raises(ConfigError, match=f"^{message}$"):
        LimitsConfig(**{key: value})
