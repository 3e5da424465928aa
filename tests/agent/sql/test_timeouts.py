"""The SQL endpoint closes what MySQL closes: silent logins, idle sessions; logins per account.

Real sockets against the real endpoint on 127.0.0.1, with timeouts of a fraction of a second.
MySQL's rules: ``login_connection`` (sql/sql_connect.cc) reads the login with
``connect_timeout``, ``do_command`` (sql/sql_parse.cc) waits ``wait_timeout`` for a command,
``net_read_raw_loop`` (sql-common/net_serv.cc) turns a timeout into error 1159, or 4031 for the
first packet of a command, which the client is sent before the connection is closed;
connection_control counts failed logins per ``'user'@'host'``
(plugin/connection_control/connection_delay.cc, ``make_hash_key``).
"""

from __future__ import annotations

import asyncio
import struct
import time
from typing import TYPE_CHECKING, Any

import pymysql  # type: ignore[import-untyped]
import pytest

from grstats.agent.limits import LimitsConfig
from grstats.agent.runtime import Agent
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.sql.variables import timeout_schema
from grstats.agent.transports import MemoryNetwork
from grstats.core.errors import ConfigError
from tests.agent.sql.test_endpoint import connect, serve, write_users
from tests.agent.sql.test_heavy_statements import MAX_LAG_S, LoopLag
from tests.agent.test_runtime import settings
from tests.waiting import wait_until_async

if TYPE_CHECKING:
    from pathlib import Path

#: MySQL's errors for a login too slow and a session too idle (include/mysqld_error.h).
ER_NET_READ_INTERRUPTED = 1159
ER_CLIENT_INTERACTION_TIMEOUT = 4031
INACTIVITY = (
    "The client was disconnected by the server because of inactivity. "
    "See wait_timeout and interactive_timeout for configuring this behavior."
)
#: Client capabilities: PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH (include/mysql_com.h).
CAPABILITIES = 0x200 | 0x8000 | 0x80000


async def read_packet(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """One packet: its sequence id and payload (IncompleteReadError at the server's close)."""
    header = await reader.readexactly(4)
    return header[3], await reader.readexactly(int.from_bytes(header[:3], "little"))


@pytest.fixture(name="agent")
def _agent() -> Agent:
    """An agent that is not started: what the endpoint serves matters not here, only its cost."""
    source = SimulatedSource(load_scenario("steady"), 0, seed=1, group_start_s=time.time())
    return Agent(settings(), source, transport=MemoryNetwork().transport("agent-0:7400"))


Client = tuple[asyncio.StreamReader, asyncio.StreamWriter, float]


async def silent(host: str, port: int, source: str) -> Client:
    """A client from ``source`` that reads the greeting and never answers; when it was read."""
    reader, writer = await asyncio.open_connection(host, port, local_addr=(source, 0))
    await read_packet(reader)
    return reader, writer, time.monotonic()


async def logged_in(host: str, port: int) -> Client:
    """A client logged in (any password: no password file) that then sends nothing."""
    reader, writer = await asyncio.open_connection(host, port)
    await read_packet(reader)  # the greeting
    response = (
        struct.pack("<IIB", CAPABILITIES, 2**24, 33)
        + bytes(23)
        + b"idle\x00"
        + bytes([20])
        + bytes(20)
        + b"mysql_native_password\x00"
    )
    writer.write(struct.pack("<I", len(response))[:3] + b"\x01" + response)
    _, ok = await read_packet(reader)
    assert ok[0] == 0x00, ok
    return reader, writer, time.monotonic()


async def farewell(client: Client) -> tuple[int, int, str, float]:
    """What the server sends before it closes: (sequence, error code, message, seconds after)."""
    reader, writer, since = client
    try:
        async with asyncio.timeout(5):
            sequence, payload = await read_packet(reader)
            after = time.monotonic() - since
            with pytest.raises(asyncio.IncompleteReadError):
                await read_packet(reader)  # then the connection is closed
    finally:
        writer.close()
    assert payload[0] == 0xFF, payload
    message = payload[3:].decode()
    return sequence, int.from_bytes(payload[1:3], "little"), message.removeprefix("#HY000"), after


def keep_querying(address: str, seconds: float) -> list[float]:
    """Query ``address`` on one connection every 50 ms for ``seconds``: each query's time."""
    connection = connect(address)
    times: list[float] = []
    try:
        deadline = time.monotonic() + seconds
        with connection.cursor() as cursor:
            while time.monotonic() < deadline:
                started = time.monotonic()
                cursor.execute("SELECT COUNT(*) FROM performance_schema.replication_group_members")
                assert len(cursor.fetchall()) == 1
                times.append(time.monotonic() - started)
                time.sleep(0.05)
    finally:
        connection.close()
    return times


async def test_idle_connections_are_closed_while_a_client_is_served(agent: Agent) -> None:
    """Silent logins get 1159, idle sessions 4031, and are closed; a busy client is served on time."""
    # MySQL: login_connection (sql/sql_connect.cc) reads with connect_timeout and sends the
    # 1159 net_read_raw_loop (sql-common/net_serv.cc) set; do_command (sql/sql_parse.cc) waits
    # wait_timeout, and net_read_raw_loop makes it 4031 for a command's first packet, which
    # goes with sequence 0. 100 silent clients from 50 addresses, 10 idle sessions.
    limits = LimitsConfig(sql_connect_timeout_s=0.5, sql_wait_timeout_s=0.8)
    served = await serve(agent, limits=limits)
    host, _, port = served.address.rpartition(":")
    try:
        async with LoopLag().measuring() as lag:
            silents = [await silent(host, int(port), f"127.0.0.{2 + n % 50}") for n in range(100)]
            idles = [await logged_in(host, int(port)) for _ in range(10)]
            busy = asyncio.create_task(asyncio.to_thread(keep_querying, served.address, 1.3))
            said = await asyncio.gather(*(farewell(client) for client in silents + idles))
            await wait_until_async(
                lambda: served.endpoint.connections == 1, 2.0, "only the busy client left"
            )
            times = await busy
        assert {(seq, code, text) for seq, code, text, _ in said[:100]} == {
            (1, ER_NET_READ_INTERRUPTED, "Got timeout reading communication packets")
        }
        assert all(0.3 <= after < 2.0 for *_, after in said[:100]), said[:100]
        assert {(seq, code, text) for seq, code, text, _ in said[100:]} == {
            (0, ER_CLIENT_INTERACTION_TIMEOUT, INACTIVITY)
        }
        assert all(0.6 <= after < 2.3 for *_, after in said[100:]), said[100:]
        assert len(times) >= 15
        assert max(times) < 2 * MAX_LAG_S, times
        assert lag.max_s < MAX_LAG_S
    finally:
        await served.endpoint.aclose()


async def test_the_timeouts_as_variables(agent: Agent) -> None:
    """The @@ timeouts are the limits, interactive clients get theirs, SET SESSION is applied."""
    # MySQL: server_mpvio_update_thd (sql/auth/sql_authentication.cc) for CLIENT_INTERACTIVE;
    # Sys_var_integral (sql/sys_vars.h) and throw_bounds_warning (sql/set_var.cc) for SET's
    # 1232 and its bounds; Sys_connect_timeout is a GLOBAL_VAR (sql/sys_vars.cc): 1229.
    limits = LimitsConfig(
        sql_connect_timeout_s=7, sql_wait_timeout_s=100, sql_interactive_timeout_s=200
    )
    served = await serve(agent, limits=limits)
    select = "SELECT @@connect_timeout, @@wait_timeout, @@interactive_timeout"

    def run(connection: Any, sql: str) -> Any:
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchall()

    def error(connection: Any, sql: str) -> tuple[int, str]:
        with pytest.raises(pymysql.err.MySQLError) as caught:
            run(connection, sql)
        return int(caught.value.args[0]), str(caught.value.args[1])

    def session() -> list[Any]:
        plain = connect(served.address)
        interactive = connect(served.address, client_flag=pymysql.constants.CLIENT.INTERACTIVE)
        answers = [run(plain, select), run(interactive, select)]
        run(plain, "SET SESSION wait_timeout = 0")  # below 1: brought to 1, as MySQL's
        answers.append(run(plain, "SELECT @@wait_timeout"))
        run(interactive, "SET wait_timeout = DEFAULT")
        answers.append(run(interactive, "SELECT @@session.wait_timeout"))
        answers.append(error(interactive, "SET SESSION wait_timeout = 'ten'"))
        answers.append(error(interactive, "SET wait_timeout = 1.5"))
        answers.append(error(interactive, "SET SESSION connect_timeout = 5"))
        interactive.close()
        return answers

    try:
        answers = await asyncio.to_thread(session)
        assert answers == [
            ((7, 100, 200),),
            ((7, 200, 200),),
            ((1,),),
            ((100,),),
            (1232, "Incorrect argument type to variable 'wait_timeout'"),
            (1232, "Incorrect argument type to variable 'wait_timeout'"),
            (
                1229,
                "Variable 'connect_timeout' is a GLOBAL variable and should be set with SET GLOBAL",
            ),
        ]
        # the plain session's own wait_timeout of 1 s closes it; the endpoint had no other
        await wait_until_async(
            lambda: served.endpoint.connections == 0, 3.0, "the session idle for 1 s closed"
        )
    finally:
        await served.endpoint.aclose()


async def test_a_bad_account_does_not_delay_a_good_one(agent: Agent, tmp_path: Path) -> None:
    """One user's failed logins delay that user's next login, not another user's on the host."""
    # connection_control counts per 'user'@'host' (plugin/connection_control/
    # connection_delay.cc: make_hash_key, notify_event); the good login waited 35 s
    # behind a bad one from its host.
    users = write_users(tmp_path / "users", "alice:secret\nbob:hunter2\n")
    limits = LimitsConfig(sql_failed_connections_threshold=2)
    served = await serve(agent, sql_password_file=users, limits=limits)

    def attempt(user: str, password: str) -> tuple[int, float]:
        started = time.monotonic()
        try:
            connect(served.address, user=user, password=password).close()
            code = 0
        except pymysql.err.OperationalError as exc:
            code = int(exc.args[0])
        return code, time.monotonic() - started

    try:
        bob = [await asyncio.to_thread(attempt, "bob", "wrong") for _ in range(3)]
        alice = await asyncio.to_thread(attempt, "alice", "secret")
        mallory = await asyncio.to_thread(attempt, "mallory", "guess")
        assert [code for code, _ in bob] == [1045, 1045, 1045]
        assert bob[0][1] < 0.9
        assert bob[1][1] < 0.9
        assert 1.0 <= bob[2][1] < 2.5  # past 2 failures: 1 s
        assert alice[0] == 0
        assert alice[1] < 0.9
        assert mallory[0] == 1045
        assert mallory[1] < 0.9
    finally:
        await served.endpoint.aclose()


def test_timeout_limits() -> None:
    """The timeouts default to MySQL's 10, 28800 and 28800 s (sql/sys_vars.cc) and show so."""
    limits = LimitsConfig()
    assert (
        limits.sql_connect_timeout_s,
        limits.sql_wait_timeout_s,
        limits.sql_interactive_timeout_s,
    ) == (10.0, 28800.0, 28800.0)
    assert {name: value for name, (_, value, _) in timeout_schema(limits).items()} == {
        "connect_timeout": 10,
        "wait_timeout": 28800,
        "interactive_timeout": 28800,
    }
    fractional = timeout_schema(LimitsConfig(sql_connect_timeout_s=0.5))
    assert fractional["connect_timeout"][1] == 0.5


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("sql_connect_timeout_s", 0),
        ("sql_wait_timeout_s", 31_536_001),
        ("sql_interactive_timeout_s", "8h"),
    ],
)
def test_bad_timeout_limits(key: str, value: Any) -> None:
    """A timeout out of 0.1..31536000 s (LONG_TIMEOUT, sql/sys_vars.cc) is refused naming it."""
    with pytest.raises(ConfigError, match=f"^limits.{key}: {value!r} is not in "):
        LimitsConfig(**{key: value})
