"""The doctor's MySQL lines, against the real MariaDB server of the test fixtures.

Each test breaks one thing (the password, the grant, performance_schema, Group Replication's
tables) as tests/agent/sources/test_mysql_diagnosis.py does, and checks the line it fails on,
its fix, and that the lines after it are skipped. The server runs with performance_schema OFF.
"""

# Test SQL is built from the fixtures' own schema, table and column names:
# ruff: noqa: S608

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from grstats.agent.config import AgentConfig
from grstats.agent.doctor.checklist import FAILED, OK, SKIPPED, WARNING
from grstats.agent.doctor.local import check_secret_file
from grstats.agent.doctor.run import DoctorOptions, examine
from grstats.agent.doctor.source import STEPS, check_source
from grstats.agent.sources import SimulatedSourceConfig

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from grstats.agent.doctor import Check
    from grstats.agent.sources.mysql_config import MySQLSourceConfig
    from tests.agent.sources.schemas import Accounts
    from tests.mariadb import MariaDB

    MakeConfig = Callable[..., MySQLSourceConfig]

pytestmark = pytest.mark.mysql

LOCAL = "e14043d7-16ee-11eb-9a3b-0800275c3a8f"
BARE_USER = "grstats_doctor_bare"


def agent_config(mysql: MySQLSourceConfig, **changes: object) -> AgentConfig:
    """An agent's config reading ``mysql``, with fixed peers (no discovery) unless changed."""
    settings: dict[str, object] = {"peers": ("127.0.0.1:7401",), "listen": "127.0.0.1:0"}
    settings.update(changes)
    return AgentConfig(source="mysql", mysql=mysql, **settings)  # type: ignore[arg-type]


def statuses(checks: list[Check]) -> dict[str, str]:
    """Each line's status by name."""
    return {check.name: check.status for check in checks}


def stopped_at(checks: list[Check], step: str) -> Check:
    """Check that the lines pass before ``step`` and are skipped after it; return its line."""
    names = list(STEPS)
    at = names.index(step)
    expected = dict.fromkeys(names[:at], OK) | dict.fromkeys(names[at + 1 :], SKIPPED)
    found = statuses(checks)
    assert {name: found[name] for name in expected} == expected, checks
    (line,) = [check for check in checks if check.name == step]
    assert line.status == FAILED, line
    return line


@pytest.fixture(name="bare_account")
def _bare_account(mariadb: MariaDB, accounts: Accounts) -> Iterator[str]:
    """An account with the test password and no grant."""
    mariadb.execute(
        f"DROP USER IF EXISTS '{BARE_USER}'@'%%'; CREATE USER '{BARE_USER}'@'%%' IDENTIFIED BY %s",
        (accounts.password,),
    )
    yield BARE_USER
    mariadb.execute(f"DROP USER IF EXISTS '{BARE_USER}'@'%'")


class TestRead:
    async def test_all_passes_and_names_the_member(
        self, make_config: MakeConfig, ps80: str, metadata: str
    ) -> None:
        """A member that reads well passes every line, the last one naming its server_uuid."""
        config = make_config(ps80, metadata_schema=metadata)
        result = await check_source(agent_config(config), timeout_s=3)
        assert statuses(result.checks) == {**dict.fromkeys(STEPS, OK), "mysql.group_name": OK}
        assert result.member_id == LOCAL
        connect, _, _, group, member, name = result.checks
        assert f"MySQL at {config.address} accepts the login of 'grstats'" in connect.message
        assert "ONLINE, SECONDARY, in group" in group.message
        assert member.message == f"the member's server_uuid is {LOCAL} at node2:3307"
        assert name.message == f"InnoDB Cluster 'orders' ({metadata}.clusters)"

    async def test_a_missing_metadata_grant_is_a_warning_with_the_grant(
        self, make_config: MakeConfig, ps80: str, metadata: str, mariadb: MariaDB
    ) -> None:
        """An account that may not read the InnoDB Cluster metadata: a warning naming the GRANT."""
        mariadb.execute(
            "DROP DATABASE IF EXISTS md_denied; CREATE DATABASE md_denied;"
            f"CREATE TABLE md_denied.clusters AS SELECT * FROM {metadata}.clusters"
        )
        config = make_config(ps80, metadata_schema="md_denied")
        result = await check_source(agent_config(config, group_label="orders"), timeout_s=3)
        (line,) = [check for check in result.checks if check.name == "mysql.group_name"]
        assert line.status == WARNING
        assert "the account may not read md_denied" in line.message
        assert "the group is called 'orders' (group_label)" in line.message
        assert line.fix.startswith("GRANT SELECT ON md_denied.* TO 'grstats'@'")

    async def test_discovers_the_other_members_agents(
        self, make_config: MakeConfig, ps80: str
    ) -> None:
        """Without peers, the other members' hosts at agent_port are the peers to check."""
        config = agent_config(make_config(ps80), peers=(), agent_port=7400)
        result = await check_source(config, timeout_s=3)
        assert sorted(result.discovered) == ["node1:7400", "node3:7400"]

    async def test_recovering_member_is_a_warning(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """A member in distributed recovery warns: it serves its group once ONLINE."""
        mariadb.execute(
            f"UPDATE {ps80}.replication_group_members SET MEMBER_STATE = 'RECOVERING'"
            " WHERE MEMBER_ID = %s",
            (LOCAL,),
        )
        result = await check_source(agent_config(make_config(ps80)), timeout_s=3)
        assert statuses(result.checks)["mysql.group_replication"] == WARNING


class TestFaults:
    async def test_wrong_password(
        self, make_config: MakeConfig, ps80: str, accounts: Accounts, tmp_path: Path
    ) -> None:
        """A wrong password fails the login line, naming the password file; the rest is skipped."""
        path = tmp_path / "mysql-password"
        path.write_text("Wr0ng-d0ctor-Passw0rd", encoding="utf-8")
        result = await check_source(agent_config(make_config(ps80, password_file=path)), 3)
        line = stopped_at(result.checks, "mysql.connect")
        assert "refused the login of 'grstats'@'127.0.0.1'" in line.message
        assert f"password_file {str(path)!r}" in line.fix
        assert "Wr0ng-d0ctor-Passw0rd" not in repr(result)
        assert accounts.password not in repr(result)
        assert result.member_id == ""

    async def test_missing_grant_prints_the_grant(
        self, make_config: MakeConfig, ps80: str, bare_account: str
    ) -> None:
        """Without the grant, the privileges line fails with the GRANT to run."""
        result = await check_source(agent_config(make_config(ps80, user=bare_account)), 3)
        line = stopped_at(result.checks, "mysql.privileges")
        assert line.fix == f"run GRANT SELECT ON {ps80}.* TO '{bare_account}'@'%';"

    async def test_performance_schema_off(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """On a server with performance_schema OFF (its tables empty) that line fails."""
        assert mariadb.execute("SELECT @@performance_schema") == [(0,)]
        mariadb.execute(f"DELETE FROM {ps80}.global_variables")
        result = await check_source(agent_config(make_config(ps80)), 3)
        line = stopped_at(result.checks, "mysql.performance_schema")
        assert "(@@performance_schema = 0)" in line.message
        assert "performance_schema = ON" in line.fix

    async def test_no_group_replication_tables(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """Without replication_group_members, Group Replication's line says to install it."""
        mariadb.execute(f"DROP TABLE {ps80}.replication_group_members")
        result = await check_source(agent_config(make_config(ps80)), 3)
        line = stopped_at(result.checks, "mysql.group_replication")
        assert "INSTALL PLUGIN group_replication" in line.fix

    async def test_not_started_still_names_the_member(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """A member OFFLINE fails Group Replication's line; the member line names it all the same."""
        mariadb.execute(
            f"UPDATE {ps80}.replication_group_members SET MEMBER_STATE = 'OFFLINE',"
            " MEMBER_ROLE = '' WHERE MEMBER_ID = %s",
            (LOCAL,),
        )
        result = await check_source(agent_config(make_config(ps80)), 3)
        found = statuses(result.checks)
        assert found["mysql.group_replication"] == FAILED
        assert found["mysql.member"] == OK
        assert result.member_id == LOCAL

    async def test_server_down(self, make_config: MakeConfig, ps80: str) -> None:
        """A port nothing listens on fails the login line: connection refused."""
        from tests.mariadb import free_port  # noqa: PLC0415

        result = await check_source(agent_config(make_config(ps80, port=free_port())), 3)
        line = stopped_at(result.checks, "mysql.connect")
        assert "connection refused" in line.message


async def test_peers_to_discover_are_skipped_when_the_view_is_not_read(
    make_config: MakeConfig, ps80: str, tmp_path: Path
) -> None:
    """Peers discovered from the member's view are skipped, with why, when the read failed."""
    path = tmp_path / "mysql-password"
    path.write_text("Wr0ng-d0ctor-Passw0rd", encoding="utf-8")
    config = agent_config(make_config(ps80, password_file=path), peers=(), state_dir=tmp_path)
    checks = await examine(config, DoctorOptions(timeout_s=2))
    (line,) = [check for check in checks if check.name == "peers"]
    assert line.status == SKIPPED
    assert "the member's view, which names them, could not be read" in line.message


class TestPasswordFile:
    def test_mode_0644_fails_with_chmod(self, tmp_path: Path) -> None:
        """A password file every user may read fails, and the fix is chmod 600."""
        path = tmp_path / "mysql-password"
        path.write_text("s3cret", encoding="utf-8")
        path.chmod(0o644)
        line = check_secret_file("mysql.password_file", path)
        assert line.status == FAILED
        assert "mode 0644: every user of this host may read it" in line.message
        assert line.fix.startswith(f"chmod 600 {str(path)!r}")
        path.chmod(0o640)  # the deployment files' mode: group grstats may read
        assert check_secret_file("mysql.password_file", path).status == OK
        path.chmod(0o660)
        assert check_secret_file("mysql.password_file", path).status == WARNING

    def test_missing_file_fails(self, tmp_path: Path) -> None:
        """A password file that is not there fails, naming the key and the file."""
        path = tmp_path / "missing"
        line = check_secret_file("mysql.password_file", path)
        assert line.status == FAILED
        assert line.message.startswith(f"mysql.password_file {str(path)!r} cannot be read")


async def test_simulated_source_is_skipped() -> None:
    """A simulated source skips the MySQL lines and names the simulated member."""
    config = AgentConfig(
        source="simulated",
        simulated=SimulatedSourceConfig(member_index=1, group_start_s=0, seed=7),
    )
    result = await check_source(config, timeout_s=1)
    (line,) = result.checks
    assert line.status == SKIPPED
    assert "source is simulated" in line.message
    assert result.member_id in line.message
