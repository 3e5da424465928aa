"""MySQLSource names what is wrong, against the real MariaDB server of the test fixtures.

Each test breaks one thing an operator gets wrong in the first hour (the password, the grant,
performance_schema, Group Replication's tables, state or group name, the port) in a ps80
look-alike schema or an account, and checks the fault the read raises: its kind, and that
its message and fix name what a DBA needs. The test server runs with performance_schema OFF
and is MariaDB, which is what a missing table or empty global_variables is diagnosed from.
"""

# Test SQL is built from the fixtures' own schema, table and column names:
# ruff: noqa: S608

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
import structlog
from structlog.testing import capture_logs

from grstats.agent.config import AgentConfig
from grstats.agent.local import LocalMember
from grstats.agent.metrics import AgentMetrics
from grstats.agent.sources import SimulatedSourceConfig
from grstats.agent.sources.mysql import MySQLSource
from grstats.core.errors import SourceUnavailable
from tests.agent.sources.schemas import USER
from tests.mariadb import free_port

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from grstats.agent.sources.mysql_config import MySQLSourceConfig
    from grstats.core.fault import SourceFault
    from tests.agent.sources.schemas import Accounts
    from tests.mariadb import MariaDB

    MakeConfig = Callable[..., MySQLSourceConfig]

pytestmark = pytest.mark.mysql

LOCAL = "e14043d7-16ee-11eb-9a3b-0800275c3a8f"
#: An account that may log in and read nothing: the grant is missing.
BARE_USER = "grstats_bare"


async def fault_of_read(config: MySQLSourceConfig) -> tuple[SourceUnavailable, SourceFault]:
    """Read once with a fresh source; return the error it raised and its fault."""
    async with MySQLSource(config) as source:
        with pytest.raises(SourceUnavailable) as caught:
            await source.read()
    fault = caught.value.fault
    assert fault is not None, f"no fault on {caught.value!r}"
    return caught.value, fault


def shown(error: BaseException, fault: SourceFault) -> str:
    """Everything the agent shows of a failure: the error's text and the fault's."""
    return f"{error}\n{fault.message}\n{fault.fix}"


@pytest.fixture(name="bare_account")
def _bare_account(mariadb: MariaDB, accounts: Accounts) -> Iterator[str]:
    """Create an account with the test password and no grant; return its name."""
    mariadb.execute(
        f"DROP USER IF EXISTS '{BARE_USER}'@'%%'; CREATE USER '{BARE_USER}'@'%%' IDENTIFIED BY %s",
        (accounts.password,),
    )
    yield BARE_USER
    mariadb.execute(f"DROP USER IF EXISTS '{BARE_USER}'@'%'")


class TestLogin:
    async def test_wrong_password(
        self, make_config: MakeConfig, ps80: str, accounts: Accounts, tmp_path: Path
    ) -> None:
        """A wrong password is access_denied, naming the account and the password_file read."""
        wrong = "Wr0ng-but-s3cret-Passw0rd"
        path = tmp_path / "mysql-password"
        path.write_text(wrong, encoding="utf-8")
        config = make_config(ps80, password_file=path)
        error, fault = await fault_of_read(config)
        assert fault.kind == "access_denied"
        assert f"MySQL at {config.address} refused the login of '{USER}'@'127.0.0.1'" in (
            fault.message
        )
        assert f"password_file {str(path)!r}" in fault.message
        assert "MySQL error 1045" in fault.message
        assert f"password_file {str(path)!r}" in fault.fix
        assert wrong not in shown(error, fault)
        assert accounts.password not in shown(error, fault)

    async def test_connection_refused(self, make_config: MakeConfig) -> None:
        """A port nothing listens on is connect_refused, naming host:port."""
        config = make_config(port=free_port())
        _, fault = await fault_of_read(config)
        assert fault.kind == "connect_refused"
        assert f"cannot connect to MySQL at 127.0.0.1:{config.port}: connection refused" in (
            fault.message
        )


class TestPrivilege:
    async def test_missing_grant_prints_the_grant(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB, bare_account: str
    ) -> None:
        """Without the grant the fault prints the GRANT; running it makes the read succeed."""
        config = make_config(ps80, user=bare_account)
        error, fault = await fault_of_read(config)
        assert fault.kind == "missing_privilege"
        assert "MySQL error 1142" in fault.message
        grant = f"GRANT SELECT ON {ps80}.* TO '{bare_account}'@'%';"
        assert fault.fix == f"run {grant}"
        assert "1142" in str(error)
        mariadb.execute(grant)
        async with MySQLSource(config) as source:
            assert (await source.read()).member_id == LOCAL


class TestPerformanceSchema:
    async def test_disabled(self, make_config: MakeConfig, ps80: str, mariadb: MariaDB) -> None:
        """Empty global_variables on a server with performance_schema OFF: performance_schema_off."""
        assert mariadb.execute("SELECT @@performance_schema") == [(0,)]
        mariadb.execute(f"DELETE FROM {ps80}.global_variables")
        _, fault = await fault_of_read(make_config(ps80))
        assert fault.kind == "performance_schema_off"
        assert "(@@performance_schema = 0)" in fault.message
        assert "performance_schema = ON" in fault.fix

    async def test_tables_missing_on_mariadb(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """A missing global_variables on MariaDB (the issue's first hour) names MariaDB."""
        mariadb.execute(f"DROP TABLE {ps80}.global_variables")
        error, fault = await fault_of_read(make_config(ps80))
        assert fault.kind == "not_mysql"
        assert "runs MariaDB" in fault.message
        assert "which has no Group Replication" in fault.message
        assert "MySQL error 1146" in str(error)


class TestGroupReplication:
    async def test_no_group_replication_table(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """MySQL 8.0 without replication_group_members: the plugin is not installed."""
        mariadb.execute(f"DROP TABLE {ps80}.replication_group_members")
        _, fault = await fault_of_read(make_config(ps80))
        assert fault.kind == "gr_not_installed"
        assert "INSTALL PLUGIN group_replication" in fault.fix

    async def test_no_plugin_variables(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """Without the plugin's variables, Group Replication is not installed."""
        mariadb.execute(
            f"DELETE FROM {ps80}.global_variables WHERE VARIABLE_NAME LIKE 'group\\_replication\\_%'"
        )
        config = make_config(ps80)
        _, fault = await fault_of_read(config)
        assert fault.kind == "gr_not_installed"
        assert config.address in fault.message

    async def test_offline(self, make_config: MakeConfig, ps80: str, mariadb: MariaDB) -> None:
        """The member OFFLINE (STOP GROUP_REPLICATION) is read OFFLINE, with gr_not_started; ONLINE again clears it."""
        members = f"{ps80}.replication_group_members"
        mariadb.execute(
            f"UPDATE {members} SET MEMBER_STATE = 'OFFLINE', MEMBER_ROLE = '' WHERE MEMBER_ID = %s",
            (LOCAL,),
        )
        config = make_config(ps80)
        async with MySQLSource(config) as source:
            read = await source.read()
            own = read.own_row()
            assert own is not None
            assert own.member_state == "OFFLINE"  # as MySQL shows it
            fault = read.fault
            assert fault is not None
            assert fault.kind == "gr_not_started"
            assert f"this member is OFFLINE in {members}" in fault.message
            assert "START GROUP_REPLICATION" in fault.fix
            mariadb.execute(
                f"UPDATE {members} SET MEMBER_STATE = 'ONLINE', MEMBER_ROLE = 'SECONDARY'"
                " WHERE MEMBER_ID = %s",
                (LOCAL,),
            )
            read = await source.read()
            assert read.member_id == LOCAL
            assert read.fault is None

    async def test_never_started(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """The one empty OFFLINE row of a server whose GR never started is read, with gr_not_started."""
        mariadb.execute(
            f"DELETE FROM {ps80}.replication_group_members;"
            f" INSERT INTO {ps80}.replication_group_members VALUES"
            " ('group_replication_applier', '', '', NULL, 'OFFLINE', '', '', '')"
        )
        async with MySQLSource(make_config(ps80)) as source:
            read = await source.read()
        assert [row.member_state for row in read.view.members] == ["OFFLINE"]
        assert read.fault is not None
        assert read.fault.kind == "gr_not_started"

    async def test_empty_group_name(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """An empty group_replication_group_name is group_name_empty."""
        mariadb.execute(
            f"UPDATE {ps80}.global_variables SET VARIABLE_VALUE = ''"
            " WHERE VARIABLE_NAME = 'group_replication_group_name'"
        )
        _, fault = await fault_of_read(make_config(ps80))
        assert fault.kind == "group_name_empty"
        assert "group_replication_group_name" in fault.message


class TestAgentLog:
    async def test_logged_once_without_the_password(
        self, make_config: MakeConfig, ps80: str, accounts: Accounts, tmp_path: Path
    ) -> None:
        """An agent on a wrong password logs one fault naming the file, and no password."""
        wrong = "An0ther-s3cret-Passw0rd"
        path = tmp_path / "mysql-password"
        path.write_text(wrong, encoding="utf-8")
        config = make_config(ps80, password_file=path, backoff_initial_s=0.05, backoff_max_s=0.05)
        agent_config = AgentConfig(
            source="simulated",
            simulated=SimulatedSourceConfig(member_index=0, group_start_s=0),
            listen="127.0.0.1:0",
        )
        local = LocalMember(
            agent_config,
            MySQLSource(config),
            clock=lambda: 1_700_000_000_000_000,
            log=structlog.get_logger(),
            metrics=AgentMetrics(),
        )
        with capture_logs() as logs:
            for _ in range(5):  # some within the backoff, some connecting again
                await local.read()
                await asyncio.sleep(0.03)
            path.write_text(accounts.password, encoding="utf-8")
            await asyncio.sleep(0.1)
            await local.read()
        await local.aclose()
        lines = [line for line in logs if line["log_level"] != "debug"]
        assert [line["event"] for line in lines] == ["source_fault", "source_recovered"]
        assert lines[0]["kind"] == "access_denied"
        assert str(path) in lines[0]["message"]
        assert lines[1]["failed_reads"] == 5
        for line in logs:
            assert wrong not in repr(line)
            assert accounts.password not in repr(line)
