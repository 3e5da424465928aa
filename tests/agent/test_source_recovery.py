"""Back within 10 s of a fault's end: the member of a MySQL source is CONNECTED YES everywhere again.

Two agents on an in-memory network and a test clock, at the agent's default settings (1 s
periods, 10 periods of silence) and the source's default backoff: agent 0 reads the real
MariaDB server of the test fixtures (the ``ps80`` look-alike schema) with an account of its
own, agent 1 a simulated member. Each fault lasts 20 s of the test clock, so that the backoff
has reached its cap, and ends right after a connect attempt failed, the worst moment; then
both agents must show agent 0's member CONNECTED YES within 10 s of the test clock. While it
lasts the fault is named: agent 0's ``source_fault`` gives its kind, and agent 1 warns that
the member is not connected because its server is not read (``server_not_read``), with the
state the member's own table showed (``member_state``).
"""

# Test SQL is built from the test's own account and schema names:
# ruff: noqa: S608

from __future__ import annotations

import dataclasses
import secrets
import socket
from typing import TYPE_CHECKING, Any

import pytest
from structlog.testing import capture_logs

from grstats.agent.config import AgentConfig
from grstats.agent.runtime import Agent
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources import SimulatedSourceConfig
from grstats.agent.sources.mysql import MySQLSource, retry_delay
from grstats.agent.sources.mysql_config import MySQLSourceConfig
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.transports import MemoryNetwork
from tests.agent.test_runtime import START_S, Clock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator
    from pathlib import Path

    from tests.mariadb import MariaDB

    MakeConfig = Callable[..., MySQLSourceConfig]

pytestmark = pytest.mark.mysql

#: The member agent 0 reads (ps80's local member, ONLINE in its own replication_group_members).
LOCAL = "e14043d7-16ee-11eb-9a3b-0800275c3a8f"
#: The account of agent 0, of this test alone: its grant and password are what the faults break.
ACCOUNT = "grstats_recovery"
#: How long each fault lasts (test-clock seconds): the backoff reaches its cap (1, 2, 4, 5 s),
#: and a doubling without a cap of 5 s would wait 16 s after the next failed attempt.
FAULT_S = 20
#: Issue 43: CONNECTED YES everywhere within this long of the server answering again.
BACK_WITHIN_S = 10
ADDRESSES = ("agent-0:7400", "agent-1:7400")


def defaults() -> dict[str, Any]:
    """MySQLSourceConfig's own backoff defaults (the fixtures' make_config shortens them)."""
    fields = {field.name: field.default for field in dataclasses.fields(MySQLSourceConfig)}
    return {name: fields[name] for name in ("backoff_initial_s", "backoff_max_s")}


def test_the_default_backoff_is_back_within_10_s() -> None:
    """The longest wait between connects, then a period to the read and the push: within 10 s.

    A read starts at each period mark and its counts are pushed in the same period's round
    (agent/runtime.py, run_period), within rpc_timeout_s; a peer serves the member CONNECTED
    YES from those counts (agent/known.py, connected).
    """
    source = MySQLSourceConfig(host="db1")
    agent = AgentConfig(
        source="simulated", simulated=SimulatedSourceConfig(member_index=0, group_start_s=0)
    )
    waits = [retry_delay(source.backoff_initial_s, source.backoff_max_s, n) for n in range(1, 99)]
    assert waits[:4] == [1.0, 2.0, 4.0, 5.0]  # doubling, then the cap: one attempt per step
    assert max(waits) + agent.period_s + agent.rpc_timeout_s <= BACK_WITHIN_S


def test_retry_delay_checks_its_count() -> None:
    """A failure count below 1 is refused, naming it."""
    with pytest.raises(ValueError, match="failures: 0 is not 1 or more"):
        retry_delay(1.0, 5.0, 0)


@pytest.fixture(name="account")
def _account(mariadb: MariaDB, ps80: str) -> Iterator[str]:
    """Create ACCOUNT with SELECT on ps80; return its password. Dropped at the end."""
    password = secrets.token_urlsafe(18)
    mariadb.execute(
        f"DROP USER IF EXISTS '{ACCOUNT}'@'%%'; CREATE USER '{ACCOUNT}'@'%%' IDENTIFIED BY %s;"
        f"GRANT SELECT ON `{ps80}`.* TO '{ACCOUNT}'@'%%'",
        (password,),
    )
    yield password
    mariadb.execute(f"SET GLOBAL max_connections = 60; DROP USER IF EXISTS '{ACCOUNT}'@'%'")


class Pair:
    """Agent 0 on the MySQL source, agent 1 on a simulated member, and the test clock."""

    def __init__(self, source: MySQLSource, clock: Clock) -> None:
        self.clock = clock
        self.source = source
        network = MemoryNetwork()
        size = load_scenario("steady").with_members(2)
        self.agents = []
        for index, address in enumerate(ADDRESSES):
            config = AgentConfig(
                source="simulated",
                simulated=SimulatedSourceConfig(member_index=index, group_start_s=START_S),
                listen="127.0.0.1:0",
                advertise=address,
                peers=ADDRESSES,
            )
            read = (
                source
                if index == 0
                else SimulatedSource(size, 1, seed=1, group_start_s=START_S, clock=clock.s)
            )
            self.agents.append(
                Agent(config, read, transport=network.transport(address), clock=clock.us)
            )

    async def start(self) -> None:
        """Start both agents with their loops disabled: the test runs their periods."""
        for agent in self.agents:
            await agent.start()
            assert agent._task is not None
            agent._task.cancel()

    async def period(self) -> None:
        """One second of the test clock: a period of each agent."""
        self.clock.seconds += 1
        for agent in self.agents:
            await agent.run_period()

    def connected(self) -> list[str]:
        """CONNECTED of agent 0's member in each agent's replication_group_members."""
        found = []
        for agent in self.agents:
            columns, values = agent.tables(extended=True)["replication_group_members"]
            rows = [dict(zip([c.name for c in columns], row, strict=True)) for row in values]
            found += [str(row["CONNECTED"]) for row in rows if row["MEMBER_ID"] == LOCAL]
        return found

    async def stop(self) -> None:
        """Stop both agents."""
        for agent in self.agents:
            await agent.stop(grace_s=0)


class Fault:
    """One way the server stops serving agent 0, and how it ends."""

    kind = ""

    def begin(self, mariadb: MariaDB, pair: Pair) -> None:
        """Break the server for agent 0."""

    def end(self, mariadb: MariaDB) -> None:
        """Mend it: from now on the server would answer agent 0."""


class RevokedGrant(Fault):
    kind = "missing_privilege"

    def begin(self, mariadb: MariaDB, pair: Pair) -> None:  # noqa: ARG002  (Fault's signature)
        mariadb.execute(f"REVOKE SELECT ON `ps80`.* FROM '{ACCOUNT}'@'%'")

    def end(self, mariadb: MariaDB) -> None:
        mariadb.execute(f"GRANT SELECT ON `ps80`.* TO '{ACCOUNT}'@'%'")


class RefusedLogin(Fault):
    kind = "access_denied"

    def __init__(self, password: str) -> None:
        self.password = password

    def begin(self, mariadb: MariaDB, pair: Pair) -> None:
        other = secrets.token_urlsafe(18)
        mariadb.execute(f"ALTER USER '{ACCOUNT}'@'%%' IDENTIFIED BY %s", (other,))
        kill_connection(mariadb, pair.source)

    def end(self, mariadb: MariaDB) -> None:
        mariadb.execute(f"ALTER USER '{ACCOUNT}'@'%%' IDENTIFIED BY %s", (self.password,))


class MaxConnections(Fault):
    """max_connections low, every connection held by another client; the agent's is killed.

    The connections are held by sockets that never log in: the server counts a connection from
    its accept (Connection_handler_manager::check_and_incr_conn_count, before the login), and
    the one beyond the count greets with error 1040 instead of its handshake.
    """

    kind = "too_many_connections"

    def __init__(self) -> None:
        self.held: list[socket.socket] = []

    def begin(self, mariadb: MariaDB, pair: Pair) -> None:
        mariadb.execute("SET GLOBAL max_connections = 10")
        kill_connection(mariadb, pair.source)
        greeting = b""
        while len(self.held) < 60:
            held = socket.create_connection((mariadb.host, mariadb.port), timeout=5)
            self.held.append(held)
            greeting = held.recv(1024)
            if greeting[4:5] == b"\xff":  # an ERR packet instead of the handshake
                break
        assert int.from_bytes(greeting[5:7], "little") == 1040, greeting  # ER_CON_COUNT_ERROR

    def end(self, mariadb: MariaDB) -> None:
        for held in self.held:
            held.close()
        mariadb.execute("SET GLOBAL max_connections = 60")


class Restart(Fault):
    kind = "connect_refused"

    def begin(self, mariadb: MariaDB, pair: Pair) -> None:  # noqa: ARG002  (Fault's signature)
        mariadb.stop()

    def end(self, mariadb: MariaDB) -> None:
        mariadb.start()


def kill_connection(mariadb: MariaDB, source: MySQLSource) -> None:
    """Kill the source's connection, so that its next read connects anew."""
    mariadb.execute(f"KILL CONNECTION {source._conn.server_thread_id[0]}")


@pytest.fixture(name="pair")
async def _pair(make_config: MakeConfig, account: str, tmp_path: Path) -> AsyncIterator[Pair]:
    password_file = tmp_path / "password"
    password_file.write_text(account, encoding="utf-8")
    clock = Clock()
    config = make_config("ps80", user=ACCOUNT, password_file=password_file, **defaults())
    pair = Pair(MySQLSource(config, clock=clock.s), clock)
    await pair.start()
    yield pair
    await pair.stop()


@pytest.mark.parametrize("name", ["revoked_grant", "refused_login", "max_connections", "restart"])
async def test_back_within_10_s_of_the_fault_ending(
    pair: Pair, mariadb: MariaDB, account: str, name: str
) -> None:
    """The fault is named while it lasts; once mended, the member is CONNECTED YES at both within 10 s.

    Also one connect attempt per backoff step while it lasts (agent/sources/mysql.py,
    retry_delay): 1, 2, 4, then every 5 s.
    """
    fault = {
        "revoked_grant": RevokedGrant(),
        "refused_login": RefusedLogin(account),
        "max_connections": MaxConnections(),
        "restart": Restart(),
    }[name]
    for _ in range(3):
        await pair.period()
    assert pair.connected() == ["YES", "YES"]
    with capture_logs() as logs:
        fault.begin(mariadb, pair)
        try:
            attempts = pair.source.connect_attempts
            for _ in range(FAULT_S):
                await pair.period()
            before = pair.source.connect_attempts
            while pair.source.connect_attempts == before:  # to the next failed attempt
                await pair.period()
            during = pair.source.connect_attempts - attempts
        finally:
            fault.end(mariadb)
        assert pair.agents[0].member.fault is not None
        assert pair.agents[0].member.fault.kind == fault.kind
        mended_at = pair.clock.seconds
        while pair.connected() != ["YES", "YES"]:
            assert pair.clock.seconds - mended_at < BACK_WITHIN_S, pair.connected()
            await pair.period()
    assert during <= 3 + (FAULT_S + 5) // 5, during  # 1, 2, 4 s, then one per 5 s
    kinds = [line["kind"] for line in logs if line["event"] == "source_fault"]
    assert kinds[-1] == fault.kind, kinds
    (silent,) = [line for line in logs if line["event"] == "member_not_connected"]
    assert silent["member_id"] == LOCAL
    assert (silent["reason"], silent["member_state"]) == ("server_not_read", "ONLINE")
    assert [line["event"] for line in logs if line["event"] == "source_recovered"] == [
        "source_recovered"
    ]
