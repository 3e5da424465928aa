"""The SQL endpoint: its config, logins, TLS, connection limit, hostile clients and idle cost."""

# ruff: noqa: S106  (the passwords here are the test accounts' own)

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import socket
import ssl
import struct
import subprocess
import time
import uuid
from typing import TYPE_CHECKING, Any

import grpc
import pymysql  # type: ignore[import-untyped]
import pytest
import structlog
from structlog.testing import capture_logs

from grstats.agent.config import load_config, read_sql_users
from grstats.agent.limits import LimitsConfig
from grstats.agent.runtime import Agent
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.sql import SqlEndpoint
from grstats.agent.transports import MemoryNetwork
from grstats.cli.agent import config_from, register
from grstats.core.errors import ConfigError
from grstats.core.tls import TlsConfig
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc
from tests.agent.test_runtime import settings
from tests.certs import make_certs
from tests.programs import require

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from tests.agent.test_runtime import Group

SIMULATED = {
    "source": "simulated",
    "simulated.member_index": 0,
    "simulated.group_start_s": 1_767_225_600,
}
LOOPBACK = "127.0.0.1:0"


def connect(address: str, **options: Any) -> Any:
    """A PyMySQL connection to ``address`` (host:port), user ``grstats`` unless given."""
    host, _, port = address.rpartition(":")
    options.setdefault("user", "grstats")
    return pymysql.connect(host=host, port=int(port), connect_timeout=5, read_timeout=10, **options)


def query(address: str, sql: str, **options: Any) -> list[tuple[Any, ...]]:
    """Connect, run ``sql`` and return its rows."""
    connection = connect(address, **options)
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return list(cursor.fetchall())
    finally:
        connection.close()


def login_error(address: str, **options: Any) -> tuple[int, str]:
    """The (code, message) a login to ``address`` is refused with."""
    with pytest.raises(pymysql.err.OperationalError) as caught:
        connect(address, **options).close()
    code, message = caught.value.args
    return int(code), str(message)


def write_users(path: Path, text: str) -> Path:
    """Write the password file ``path``, mode 0600."""
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    return path


@dataclasses.dataclass
class Served:
    """An endpoint serving an agent, and the address it is bound to."""

    endpoint: SqlEndpoint
    address: str


async def serve(agent: Agent, **changes: Any) -> Served:
    """Start a SqlEndpoint for ``agent`` with its config changed by ``changes``."""
    config = dataclasses.replace(agent.config, **{"sql_listen": LOOPBACK, **changes})
    endpoint = SqlEndpoint(agent, config, structlog.get_logger())
    return Served(endpoint, await endpoint.start())


# -- config ----------------------------------------------------------------------------------


class TestConfig:
    def test_off_by_default(self) -> None:
        """No sql_listen, no endpoint: the defaults serve no SQL."""
        config = load_config(None, SIMULATED)
        assert config.sql_listen is None
        assert config.sql_password_file is None
        assert config.limits.sql_connections_per_host == 16
        assert config.limits.sql_query_timeout_s == 5.0
        assert config.limits.sql_max_rows == 100_000

    @pytest.mark.parametrize(
        "listen", ["127.0.0.1:7406", "127.1.2.3:0", "[::1]:7406", "localhost:7406"]
    )
    def test_loopback_needs_no_password_file(self, listen: str) -> None:
        """Any loopback address is accepted without a password file."""
        assert load_config(None, {**SIMULATED, "sql_listen": listen}).sql_listen == listen

    @pytest.mark.parametrize(
        "listen", ["0.0.0.0:7406", "10.0.0.5:7406", "[::]:7406", "db1.example.net:7406"]
    )
    def test_other_addresses_need_a_password_file(self, listen: str, tmp_path: Path) -> None:
        """Elsewhere the config is refused, naming the key, the value and why; a file admits it."""
        with pytest.raises(ConfigError) as caught:
            load_config(None, {**SIMULATED, "sql_listen": listen})
        message = str(caught.value)
        assert message.startswith(f"sql_listen: {listen!r} is not a loopback address")
        assert "sql_password_file" in message
        assert "any client" in message
        users = write_users(tmp_path / "users", "alice:secret\n")
        config = load_config(None, {**SIMULATED, "sql_listen": listen, "sql_password_file": users})
        assert config.sql_password_file == users

    @pytest.mark.parametrize("listen", ["nope", "127.0.0.1:99999", "127.0.0.1:"])
    def test_bad_address(self, listen: str) -> None:
        """An address that is not host:port is refused naming sql_listen."""
        with pytest.raises(ConfigError, match=rf"^sql_listen: {listen!r} is not host:port"):
            load_config(None, {**SIMULATED, "sql_listen": listen})

    def test_password_file_from_toml(self, tmp_path: Path) -> None:
        """The file's keys are read as a string path and checked at load."""
        users = write_users(
            tmp_path / "users", "# the exporters\n\nexporter : s3cret:with:colons\n"
        )
        path = tmp_path / "agent.toml"
        path.write_text(
            f'source = "simulated"\nsql_listen = "0.0.0.0:7406"\nsql_password_file = "{users}"\n'
            "[simulated]\nmember_index = 0\ngroup_start_s = 0\n",
            encoding="utf-8",
        )
        config = load_config(path)
        assert config.sql_password_file == users
        assert read_sql_users(users) == {"exporter": "s3cret:with:colons"}

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("alice:one\nbob\n", "line 2 is not user:password"),
            ("alice:\n", "line 1 is not user:password"),
            (":hunter2\n", "line 1 is not user:password"),
            ("al ice:hunter2\n", "line 1 is not user:password"),
            ("alice:one\nalice:hunter2\n", "line 2 names user 'alice' a second time"),
            ("# nobody\n\n", "holds no user:password line"),
        ],
    )
    def test_bad_password_file(self, text: str, message: str, tmp_path: Path) -> None:
        """A malformed file is refused at load naming the key, file and line, never a password."""
        users = write_users(tmp_path / "users", text)
        with pytest.raises(ConfigError) as caught:
            load_config(None, {**SIMULATED, "sql_password_file": users})
        assert str(caught.value).startswith(f"sql_password_file: {str(users)!r}")
        assert message in str(caught.value)
        assert "hunter2" not in str(caught.value)

    def test_unreadable_password_file(self, tmp_path: Path) -> None:
        """A missing file is refused at load, naming the key and the file."""
        missing = tmp_path / "nope"
        with pytest.raises(ConfigError, match=r"^sql_password_file: cannot read '.*nope'"):
            load_config(None, {**SIMULATED, "sql_password_file": missing})

    def test_flags(self, tmp_path: Path) -> None:
        """--sql-listen and --sql-password-file set the config keys; --help explains them."""
        import argparse  # noqa: PLC0415

        parser = argparse.ArgumentParser()
        subparsers = parser.add_subparsers()
        register(subparsers)
        users = write_users(tmp_path / "users", "alice:secret\n")
        args = parser.parse_args(
            [
                "agent",
                "--source",
                "simulated",
                "--member-index",
                "0",
                "--group-start",
                "1",
                "--sql-listen",
                "0.0.0.0:7406",
                "--sql-password-file",
                str(users),
            ]
        )
        config = config_from(args)
        assert config.sql_listen == "0.0.0.0:7406"
        assert config.sql_password_file == users
        helps = {
            action.dest: action.help or ""
            for action in subparsers._name_parser_map["agent"]._actions
        }
        assert "MySQL protocol" in helps["sql_listen"]
        assert "loopback" in helps["sql_listen"]
        assert "user:password" in helps["sql_password_file"]


# -- the endpoint of a running agent ----------------------------------------------------------


def sql_address(agent: Agent) -> str | None:
    """The agent's sql_address, read anew (not narrowed by an earlier assert)."""
    return agent.sql_address


async def test_agent_serves_sql_and_stops_it(tmp_path: Path) -> None:
    """An agent with sql_listen serves at sql_address, logs it at start, and closes it at stop."""
    network = MemoryNetwork()
    config = settings(advertise="agent-0:7400", peers=("agent-0:7400",), sql_listen=LOOPBACK)
    source = SimulatedSource(
        load_scenario("steady").with_members(1), 0, seed=1, group_start_s=time.time() - 5
    )
    agent = Agent(config, source, transport=network.transport("agent-0:7400"))
    with capture_logs() as logs:
        await agent.start()
    try:
        assert agent.sql_address is not None
        started = next(log for log in logs if log["event"] == "agent_started")
        assert started["sql"] == agent.sql_address
        await agent.run_period()
        rows = await asyncio.to_thread(query, agent.sql_address, "SELECT @@server_uuid")
        assert rows == [(agent.member_id,)]
        identity = agent.sql_identity
        assert identity.member_id == agent.member_id
        own = agent.member.snapshot.own_row() if agent.member.snapshot else None
        assert own is not None
        assert (identity.hostname, identity.port) == (own.member_host, own.member_port)
        assert identity.version  # the simulated member's MEMBER_VERSION
    finally:
        address = agent.sql_address
        await agent.stop(grace_s=0)
    assert sql_address(agent) is None
    assert address is not None
    host, _, port = address.rpartition(":")
    with (
        pytest.raises(ConnectionRefusedError),
        socket.create_connection((host, int(port)), timeout=2),
    ):
        pass


async def test_a_taken_address_stops_the_agent(tmp_path: Path) -> None:
    """A bind error names sql_listen, and what had started is stopped."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = settings(
            advertise="agent-0:7400", peers=("agent-0:7400",), sql_listen=f"127.0.0.1:{port}"
        )
        source = SimulatedSource(load_scenario("steady"), 0, seed=1, group_start_s=time.time())
        agent = Agent(config, source, transport=MemoryNetwork().transport("agent-0:7400"))
        with pytest.raises(ConfigError, match=rf"^sql_listen: cannot bind 127\.0\.0\.1:{port}: "):
            await agent.start()
    assert not agent.serving
    assert sql_address(agent) is None


# -- logins -----------------------------------------------------------------------------------


async def test_without_a_password_file_anyone_logs_in(group: Group) -> None:
    """On loopback without a file any user and password are let in."""
    served = await serve(group.agents[0])
    try:
        for options in ({"user": "x"}, {"user": "root", "password": "whatever"}):
            rows = await asyncio.to_thread(query, served.address, "SELECT 1", **options)
            assert rows == [(1,)]
    finally:
        await served.endpoint.aclose()


async def test_wrong_password_and_unknown_user_both_get_1045(group: Group, tmp_path: Path) -> None:
    """A wrong password and an unknown user get the same 1045; the right one gets in."""
    users = write_users(tmp_path / "users", "alice:right\n")
    served = await serve(group.agents[0], sql_password_file=users)
    try:
        address = served.address
        ok = await asyncio.to_thread(query, address, "SELECT 1", user="alice", password="right")
        assert ok == [(1,)]
        wrong = await asyncio.to_thread(login_error, address, user="alice", password="wrong")
        assert wrong == (1045, "Access denied for user 'alice' (using password: YES)")
        unknown = await asyncio.to_thread(login_error, address, user="mallory", password="right")
        assert unknown == (1045, "Access denied for user 'mallory' (using password: YES)")
        empty = await asyncio.to_thread(login_error, address, user="alice")
        assert empty == (1045, "Access denied for user 'alice' (using password: NO)")
    finally:
        await served.endpoint.aclose()


def caching_sha2_login(address: str, user: str, password: str) -> tuple[bytes, bytes, bytes]:
    """Log in as a MySQL 9 client does: the greeting, then the packets that answer the scramble.

    The scramble is ``generate_sha2_scramble`` (sql/auth/sha2_password_common.cc):
    XOR(SHA256(password), SHA256(SHA256(SHA256(password)) + nonce)), with the greeting's nonce.
    """
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        greeting = read_packet(sock)
        version_end = greeting.index(b"\x00", 1)
        rest = greeting[version_end + 1 :]
        nonce = rest[4:12] + rest[31:43]  # auth-plugin-data parts 1 and 2 (HandshakeV10)
        stage1 = hashlib.sha256(password.encode()).digest()
        stage2 = hashlib.sha256(stage1).digest()
        mask = hashlib.sha256(stage2 + nonce).digest()
        scramble = bytes(a ^ b for a, b in zip(stage1, mask, strict=True))
        capabilities = 0x200 | 0x8000 | 0x80000  # PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH
        response = (
            struct.pack("<IIB", capabilities, 2**24, 33)
            + bytes(23)
            + user.encode()
            + b"\x00"
            + bytes([len(scramble)])
            + scramble
            + b"caching_sha2_password\x00"
        )
        sock.sendall(packet(1, response))
        first = read_packet(sock)
        second = read_packet(sock) if first[:1] == b"\x01" else b""
        return greeting, first, second


async def test_caching_sha2_password_fast_authentication(group: Group, tmp_path: Path) -> None:
    """caching_sha2_password: the greeting offers it; a right scramble gets fast_auth_success, then OK."""
    users = write_users(tmp_path / "users", "alice:right\n")
    served = await serve(group.agents[0], sql_password_file=users)
    try:
        greeting, first, second = await asyncio.to_thread(
            caching_sha2_login, served.address, "alice", "right"
        )
        assert greeting.rstrip(b"\x00").endswith(b"caching_sha2_password")  # MySQL 8.4's default
        assert first == b"\x01\x03"  # AuthMoreData: fast_auth_success
        assert second[:1] == b"\x00"  # OK
        _, refused, _ = await asyncio.to_thread(
            caching_sha2_login, served.address, "alice", "wrong"
        )
        assert refused[:1] == b"\xff"
        assert int.from_bytes(refused[1:3], "little") == 1045
    finally:
        await served.endpoint.aclose()


@pytest.mark.parametrize("plugin", ["caching_sha2_password", "mysql_native_password"])
async def test_the_mariadb_client_logs_in_with_either_plugin(
    group: Group, tmp_path: Path, plugin: str
) -> None:
    """The mariadb client starting with either plugin gets in with the password, not without."""
    program = require("mariadb", "mariadb-client")
    users = write_users(tmp_path / "users", "alice:right\n")
    served = await serve(group.agents[0], sql_password_file=users)
    host, _, port = served.address.rpartition(":")
    login = [program, "-h", host, "-P", port, "--ssl=0", "-u", "alice", f"--default-auth={plugin}"]

    def run(password: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*login, f"-p{password}", "-N", "-e", "SELECT CURRENT_USER()"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )

    try:
        done = await asyncio.to_thread(run, "right")
        assert done.returncode == 0, done.stderr
        refused = await asyncio.to_thread(run, "wrong")
        assert "ERROR 1045 (28000): Access denied for user 'alice'" in refused.stderr
    finally:
        await served.endpoint.aclose()


def packet(sequence: int, payload: bytes) -> bytes:
    """One MySQL packet: 3-byte length, sequence id, payload."""
    return struct.pack("<I", len(payload))[:3] + bytes([sequence]) + payload


def read_packet(sock: socket.socket) -> bytes:
    """One packet's payload, or b'' when the server closed the connection."""
    header = sock.recv(4, socket.MSG_WAITALL)
    if len(header) < 4:
        return b""
    length = int.from_bytes(header[:3], "little")
    return sock.recv(length, socket.MSG_WAITALL)


def refused_then_query(address: str) -> tuple[bytes, bytes]:
    """Log in with a wrong password, ignore the refusal and send a query: both answers."""
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        read_packet(sock)  # the greeting
        capabilities = 0x200 | 0x8000 | 0x80000  # PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH
        response = (
            struct.pack("<IIB", capabilities, 2**24, 33)
            + bytes(23)
            + b"alice\x00"
            + bytes([20])
            + bytes(20)
            + b"mysql_native_password\x00"
        )
        sock.sendall(packet(1, response))
        refusal = read_packet(sock)
        try:
            sock.sendall(packet(0, b"\x03SELECT 1"))
            after = read_packet(sock)
        except ConnectionError:
            after = b""
        return refusal, after


async def test_a_refused_client_cannot_go_on(group: Group, tmp_path: Path) -> None:
    """A client that ignores its 1045 and sends a query finds the connection closed."""
    users = write_users(tmp_path / "users", "alice:right\n")
    served = await serve(group.agents[0], sql_password_file=users)
    try:
        refusal, after = await asyncio.to_thread(refused_then_query, served.address)
        assert refusal[0] == 0xFF
        assert int.from_bytes(refusal[1:3], "little") == 1045
        assert after == b""
    finally:
        await served.endpoint.aclose()


async def test_password_file_is_read_at_each_login(group: Group, tmp_path: Path) -> None:
    """Editing the file takes effect at the next login; a broken file refuses and is logged once."""
    users = write_users(tmp_path / "users", "alice:one\n")
    served = await serve(group.agents[0], sql_password_file=users)
    address = served.address
    try:
        assert await asyncio.to_thread(query, address, "SELECT 1", user="alice", password="one")
        write_users(users, "alice:two\nbob:three\n")
        old = await asyncio.to_thread(login_error, address, user="alice", password="one")
        assert old[0] == 1045
        for user, password in (("alice", "two"), ("bob", "three")):
            rows = await asyncio.to_thread(query, address, "SELECT 1", user=user, password=password)
            assert rows == [(1,)]
        write_users(users, "alice:two\nbob three\n")
        with capture_logs() as logs:
            for _ in range(3):
                refused = await asyncio.to_thread(
                    login_error, address, user="alice", password="two"
                )
                assert refused[0] == 1045
        problems = [log for log in logs if log["event"] == "sql_password_file_unreadable"]
        assert len(problems) == 1
        assert problems[0]["log_level"] == "warning"
        assert str(users) in problems[0]["error"]
        assert "line 2" in problems[0]["error"]
        assert "three" not in str(logs)
        assert "two" not in str(problems)
        write_users(users, "alice:two\n")
        rows = await asyncio.to_thread(query, address, "SELECT 1", user="alice", password="two")
        assert rows == [(1,)]
    finally:
        await served.endpoint.aclose()


# -- TLS --------------------------------------------------------------------------------------


async def test_tls_with_the_agents_certificate(group: Group, tmp_path: Path) -> None:
    """With [tls] configured, a client verifying the group's CA gets TLS; plain still logs in."""
    certs = make_certs(tmp_path / "tls", f"db1={uuid.uuid4()}@127.0.0.1,localhost")
    tls = TlsConfig(
        cert_file=certs / "db1.pem", key_file=certs / "db1.key", ca_file=certs / "ca.pem"
    )
    served = await serve(group.agents[0], tls=tls)

    def over_tls() -> tuple[str, list[tuple[Any, ...]]]:
        connection = connect(served.address, ssl={"ca": str(certs / "ca.pem")})
        try:
            assert isinstance(connection._sock, ssl.SSLSocket)
            version = str(connection._sock.version())
            with connection.cursor() as cursor:
                cursor.execute("SELECT @@server_uuid")
                return version, list(cursor.fetchall())
        finally:
            connection.close()

    try:
        version, rows = await asyncio.to_thread(over_tls)
        assert version.startswith("TLSv1.")
        assert rows == [(group.agents[0].member_id,)]
        assert await asyncio.to_thread(query, served.address, "SELECT 1") == [(1,)]
    finally:
        await served.endpoint.aclose()


# -- limits and hostile clients ---------------------------------------------------------------


async def test_connections_per_host_over_the_limit_get_1040(group: Group) -> None:
    """A host's connection over sql_connections_per_host is refused with 1040; closing frees one."""
    limits = LimitsConfig(sql_connections_per_host=2)
    served = await serve(group.agents[0], limits=limits)
    try:
        first = await asyncio.to_thread(connect, served.address)
        second = await asyncio.to_thread(connect, served.address)
        code, message = await asyncio.to_thread(login_error, served.address)
        # Sent before the handshake, the error has no SQLSTATE marker (as MySQL's own):
        # PyMySQL before 1.1 skips 6 characters for one anyway, so check the end only.
        assert code == 1040
        assert "Too many connections".endswith(message), message
        assert len(message) >= len("ny connections")
        first.close()
        for _ in range(50):  # the server notices the close at its next read
            if served.endpoint.connections < 2:
                break
            await asyncio.sleep(0.02)
        third = await asyncio.to_thread(connect, served.address)
        third.close()
        second.close()
    finally:
        await served.endpoint.aclose()


def hostile_clients(address: str) -> None:
    """Garbage before and after the handshake, abrupt disconnects at each step."""
    host, _, port = address.rpartition(":")
    target = (host, int(port))
    with socket.create_connection(target, timeout=5) as sock:  # garbage instead of a login
        read_packet(sock)
        sock.sendall(b"\xff" * 64 + b"garbage\x00" * 8)
        while read_packet(sock):
            pass
    with socket.create_connection(target, timeout=5) as sock:  # a packet out of sequence
        read_packet(sock)
        sock.sendall(packet(7, b"\x00" * 40))
        while read_packet(sock):
            pass
    with socket.create_connection(target, timeout=5):  # gone before the greeting is read
        pass
    with socket.create_connection(target, timeout=5) as sock:  # gone mid-packet
        read_packet(sock)
        sock.sendall(b"\x50\x00")
    with socket.create_connection(target, timeout=5) as sock:  # reset mid-handshake
        read_packet(sock)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def bad_commands(connection: Any) -> None:
    """A logged-in client sending an unknown command byte and a malformed prepared statement."""
    connection._execute_command(0x7E, b"")  # no such command
    with pytest.raises(pymysql.err.MySQLError):
        connection._read_ok_packet()
    connection._execute_command(0x17, b"\x01")  # COM_STMT_EXECUTE, truncated
    with pytest.raises(pymysql.err.MySQLError):
        connection._read_ok_packet()


async def test_hostile_clients_close_only_their_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Garbage and abrupt disconnects close those connections only; periods and gRPC go on."""
    config = settings(period_s=1.0, rpc_timeout_s=0.5, sql_listen=LOOPBACK)
    source = SimulatedSource(
        load_scenario("steady").with_members(1), 0, seed=1, group_start_s=time.time() - 5
    )
    agent = Agent(config, source)
    await agent.start()
    try:
        assert agent.sql_address is not None
        address = agent.sql_address
        steady = await asyncio.to_thread(connect, address)
        periods = agent.periods
        caplog.clear()
        with capture_logs() as logs:
            for _ in range(3):
                await asyncio.to_thread(hostile_clients, address)
            await asyncio.to_thread(bad_commands, steady)
            await asyncio.sleep(2.2)
        assert agent.periods >= periods + 2
        with steady.cursor() as cursor:
            await asyncio.to_thread(cursor.execute, "SELECT @@server_uuid")
            assert cursor.fetchall() == ((agent.member_id,),)
        async with grpc.aio.insecure_channel(agent.address) as channel:
            response = await pb_grpc.QueryStub(channel).Read(
                pb.QueryRequest(tables=["replication_group_members"]), timeout=5
            )
        assert len(response.tables) == 1
        steady.close()
        assert not [r for r in caplog.records if r.levelname in {"WARNING", "ERROR"} and r.exc_info]
        assert not [r for r in caplog.records if r.name.startswith("asyncio")]
        warnings = [log for log in logs if log["log_level"] in {"warning", "error"}]
        assert len(warnings) <= 6, warnings  # one line per kind of failure, not per client
        assert all("exception" not in log and "exc_info" not in log for log in warnings)
        for _ in range(50):
            if not agent._sql or not agent._sql.connections:
                break
            await asyncio.sleep(0.02)
        assert agent._sql is not None
        assert agent._sql.connections == 0
    finally:
        await agent.stop(grace_s=0)


# -- idle cost --------------------------------------------------------------------------------


@pytest.fixture(name="quiet_gc")
def _quiet_gc() -> Iterator[None]:
    """No garbage collection pauses inside a CPU measurement."""
    import gc  # noqa: PLC0415

    gc.collect()
    gc.disable()
    yield
    gc.enable()


async def idle_cpu_s(sql_listen: str | None, seconds: float) -> float:
    """CPU seconds this process spends over ``seconds`` with one agent running its periods."""
    config = settings(period_s=1.0, rpc_timeout_s=0.5, sql_listen=sql_listen)
    source = SimulatedSource(
        load_scenario("steady").with_members(1), 0, seed=1, group_start_s=time.time() - 5
    )
    agent = Agent(config, source)
    await agent.start()
    try:
        await asyncio.sleep(1.5)  # the first periods and the endpoint's start are not counted
        began = time.process_time()
        await asyncio.sleep(seconds)
        return time.process_time() - began
    finally:
        await agent.stop(grace_s=0)


@pytest.mark.slow
async def test_an_idle_endpoint_costs_no_cpu(quiet_gc: None) -> None:
    """An agent with the endpoint on and no client uses no more CPU than one without it."""
    without = await idle_cpu_s(None, 3.0)
    with_sql = await idle_cpu_s(LOOPBACK, 3.0)
    print(f"idle CPU over 3 s: {without:.3f} s without the endpoint, {with_sql:.3f} s with it")
    assert with_sql <= without + 0.05, (without, with_sql)


def test_sql_identity_before_the_first_read() -> None:
    """Before a read the identity has no member id, version or member port (0), the host's name."""
    source = SimulatedSource(load_scenario("steady"), 0, seed=1, group_start_s=time.time())
    agent = Agent(settings(), source, transport=MemoryNetwork().transport("agent-0:7400"))
    identity = agent.sql_identity
    assert (identity.member_id, identity.version, identity.port) == ("", None, 0)
    assert identity.hostname == socket.gethostname()
