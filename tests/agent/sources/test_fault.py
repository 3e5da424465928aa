"""Faults: their values, how MySQLSource classifies errors and what it read, the simulator's.

No server is needed: driver errors are built as aiomysql raises them (``OperationalError(code, message)``, the
network cause as ``__cause__``); the server texts are MySQL's and MariaDB's.
"""

# password_env names a variable, not a password:
# ruff: noqa: S106

from __future__ import annotations

import re
import ssl
from typing import Any

import pytest
from pymysql.err import InternalError, OperationalError, ProgrammingError  # type: ignore[import-untyped]

from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.mysql import (
    MySQLSource,
    ServerFacts,
    classify,
    empty_variables_fault,
    password_source,
    state_fault,
)
from grstats.agent.sources.mysql_config import MySQLSourceConfig
from grstats.agent.sources.simulated import SimulatedSource
from grstats.core.errors import SourceDataError, SourceError, SourceUnavailable
from grstats.core.fault import FAULT_KINDS, SourceFault, fault_of, grant_statement
from tests.mariadb import free_port

UUID = "e14043d7-16ee-11eb-9a3b-0800275c3a8f"
GROUP = "dc527338-16ee-11eb-a0c4-0800279c4a12"
ADDRESS = "db1.example:3306"
#: global_variables of a MySQL 8.0 member with Group Replication configured.
VARIABLES = {"server_uuid": UUID, "version": "8.0.36", "group_replication_group_name": GROUP}


def config(**overrides: Any) -> MySQLSourceConfig:
    """Return a config for ADDRESS, the documented account, a password file."""
    settings: dict[str, Any] = {
        "host": "db1.example",
        "user": "grstats",
        "password_file": "/etc/grstats/mysql-password",
    }
    settings.update(overrides)
    return MySQLSourceConfig(**settings)


def caused(error: BaseException, cause: BaseException) -> BaseException:
    """Return ``error`` with ``cause`` as its __cause__ (``raise error from cause``)."""
    error.__cause__ = cause
    return error


def member(state: str, member_id: str = UUID) -> dict[str, object]:
    """Return a replication_group_members record."""
    return {"MEMBER_ID": member_id, "MEMBER_STATE": state}


class TestSourceFault:
    def test_kinds_are_distinct(self) -> None:
        """FAULT_KINDS has the kinds the Query answer and the log use, each once."""
        assert len(set(FAULT_KINDS)) == len(FAULT_KINDS)
        assert {"connect_refused", "access_denied", "gr_not_started", "other"} <= set(FAULT_KINDS)

    def test_fault_of_a_carrying_error(self) -> None:
        """An error that carries a fault gives that fault."""
        fault = SourceFault("server_down", "down", "start it")
        assert fault_of(SourceUnavailable("x", fault=fault)) is fault

    def test_fault_of_a_plain_error(self) -> None:
        """An error without a fault reads as kind other, with its text."""
        assert fault_of(SourceError("read after aclose")) == SourceFault(
            "other", "read after aclose"
        )
        assert fault_of(ValueError()) == SourceFault("other", "ValueError")

    def test_source_error_text_is_unchanged(self) -> None:
        """A fault does not change str() of the error: the message alone."""
        error = SourceUnavailable("db1:3306: connect failed", fault=SourceFault("other", "m"))
        assert str(error) == "db1:3306: connect failed"
        assert SourceError("plain").fault is None

    def test_str_has_the_fix(self) -> None:
        """str() of a fault is its message and, when there is one, its fix."""
        assert str(SourceFault("other", "broken.", "mend it")) == "broken. Fix: mend it"
        assert str(SourceFault("other", "broken.")) == "broken."

    @pytest.mark.parametrize(
        ("schema", "statement"),
        [
            ("performance_schema", "GRANT SELECT ON performance_schema.* TO 'grstats'@'%';"),
            ("ps80", "GRANT SELECT ON ps80.* TO 'grstats'@'%';"),
            ("123", "GRANT SELECT ON `123`.* TO 'grstats'@'%';"),
        ],
    )
    def test_grant_statement(self, schema: str, statement: str) -> None:
        """The GRANT names the schema (quoted only when it must be) and the account."""
        assert grant_statement(schema, "'grstats'@'%'") == statement


class TestConnectFaults:
    def test_refused(self) -> None:
        """Error 2003 caused by ECONNREFUSED is connect_refused, naming host:port."""
        error = caused(
            OperationalError(2003, "Can't connect to MySQL server on 'db1.example'"),
            ConnectionRefusedError(111, "Connection refused"),
        )
        fault = classify(config(), "connect", error)
        assert fault.kind == "connect_refused"
        assert ADDRESS in fault.message
        assert "refused" in fault.message
        assert ADDRESS in fault.fix

    def test_timed_out(self) -> None:
        """A connect that got no answer in time is connect_timeout, naming connect_timeout_s."""
        fault = classify(config(connect_timeout_s=3.0), "connect", TimeoutError())
        assert fault.kind == "connect_timeout"
        assert f"{ADDRESS}: no answer within 3 s (connect_timeout_s)" in fault.message

    def test_driver_timeout(self) -> None:
        """The driver's own connect timeout (2003 from a TimeoutError) is connect_timeout too."""
        error = caused(OperationalError(2003, "Can't connect"), TimeoutError())
        assert classify(config(), "connect", error).kind == "connect_timeout"

    def test_tls_handshake(self) -> None:
        """A failed TLS handshake names the CA to check."""
        error = caused(OperationalError(2003, "Can't connect"), ssl.SSLError(1, "bad cert"))
        fault = classify(config(), "connect", error)
        assert fault.kind == "other"
        assert "ssl_ca" in fault.fix

    def test_other_network_error(self) -> None:
        """An unresolvable host is named with its reason."""
        error = caused(OperationalError(2003, "Can't connect"), OSError(-2, "Name not known"))
        fault = classify(config(), "connect", error)
        assert fault.kind == "other"
        assert "Name not known" in fault.message


class TestAccessDenied:
    def test_wrong_password_from_file(self) -> None:
        """1045 names the account as the server reports it and the password_file read."""
        error = OperationalError(
            1045, "Access denied for user 'grstats'@'10.0.0.7' (using password: YES)"
        )
        fault = classify(config(), "connect", error)
        assert fault.kind == "access_denied"
        assert "'grstats'@'10.0.0.7'" in fault.message
        assert "password_file '/etc/grstats/mysql-password'" in fault.message
        assert "MySQL error 1045" in fault.message
        assert "password_file '/etc/grstats/mysql-password'" in fault.fix

    def test_wrong_password_from_environment(self) -> None:
        """With password_env, the variable is named."""
        error = OperationalError(
            1045, "Access denied for user 'grstats'@'10.0.0.7' (using password: YES)"
        )
        fault = classify(
            config(password_file=None, password_env="GRSTATS_MYSQL_PASSWORD"), "connect", error
        )
        assert "password_env $GRSTATS_MYSQL_PASSWORD" in fault.message

    def test_no_password_configured(self) -> None:
        """Without password_file and password_env, the message says no password was set."""
        assert password_source(config(password_file=None)) == (
            "no password (neither password_file nor password_env is set)"
        )

    def test_host_not_allowed(self) -> None:
        """1130 (no account for the agent's host) is access_denied too."""
        error = InternalError(1130, "Host '10.0.0.7' is not allowed to connect to this server")
        assert classify(config(), "connect", error).kind == "access_denied"


class TestMissingPrivilege:
    @pytest.mark.parametrize(
        ("code", "text"),
        [
            (1142, "SELECT command denied to user 'grstats'@'10.0.0.7' for table 'global_variables'"),
            (1143, "SELECT command denied to user 'grstats'@'10.0.0.7' for column 'X' in table 'y'"),
            (1227, "Access denied; you need (at least one of) the SELECT privilege(s)"),
            (1044, "Access denied for user 'grstats'@'10.0.0.7' to database 'performance_schema'"),
        ],
    )  # fmt: skip
    def test_grant_for_the_account_the_server_matched(self, code: int, text: str) -> None:
        """Each privilege error prints the GRANT for CURRENT_USER(), the account itself."""
        facts = ServerFacts(version="8.0.36", account="grstats@%")
        fault = classify(config(), "read", ProgrammingError(code, text), facts)
        assert fault.kind == "missing_privilege"
        assert fault.fix == "run GRANT SELECT ON performance_schema.* TO 'grstats'@'%';"
        assert f"MySQL error {code}" in fault.message

    def test_grant_from_the_message_without_facts(self) -> None:
        """When CURRENT_USER() is unknown, the account is the one the server's message names."""
        error = ProgrammingError(
            1142, "SELECT command denied to user 'grstats'@'10.0.0.7' for table 'x'"
        )
        fault = classify(config(), "read", error, ServerFacts())
        assert "TO 'grstats'@'10.0.0.7';" in fault.fix


class TestMissingTable:
    TEXT = "Table 'performance_schema.global_variables' doesn't exist"

    def test_mariadb(self) -> None:
        """MariaDB, which lacks the tables, is named: it has no Group Replication."""
        facts = ServerFacts(version="10.11.19-MariaDB-0+deb12u1", performance_schema=True)
        fault = classify(config(), "read", ProgrammingError(1146, self.TEXT), facts)
        assert fault.kind == "not_mysql"
        assert "MariaDB 10.11.19-MariaDB-0+deb12u1" in fault.message
        assert "no Group Replication" in fault.message

    def test_mariadb_by_comment(self) -> None:
        """MariaDB is recognised by @@version_comment too."""
        facts = ServerFacts(version="10.6.5", version_comment="MariaDB Server")
        fault = classify(config(), "read", ProgrammingError(1146, self.TEXT), facts)
        assert fault.kind == "not_mysql"

    def test_old_mysql(self) -> None:
        """MySQL before 5.7 is named as too old."""
        facts = ServerFacts(version="5.6.51-log")
        fault = classify(config(), "read", ProgrammingError(1146, self.TEXT), facts)
        assert fault.kind == "not_mysql"
        assert "5.6.51-log, older than 5.7" in fault.message

    def test_no_group_replication_table(self) -> None:
        """On MySQL 5.7+, a missing replication_group_members means no Group Replication."""
        text = "Table 'performance_schema.replication_group_members' doesn't exist"
        facts = ServerFacts(version="8.0.36")
        fault = classify(config(), "read", ProgrammingError(1146, text), facts)
        assert fault.kind == "gr_not_installed"
        assert "INSTALL PLUGIN group_replication" in fault.fix

    def test_other_table_on_mysql(self) -> None:
        """Another missing table on MySQL 5.7+ is named."""
        fault = classify(config(), "read", ProgrammingError(1146, self.TEXT), ServerFacts("8.0.36"))
        assert fault.kind == "not_mysql"
        assert "has no table performance_schema.global_variables" in fault.message


class TestReadFaults:
    def test_lost_connection(self) -> None:
        """2013 during a read is server_down."""
        error = OperationalError(2013, "Lost connection to MySQL server during query")
        fault = classify(config(), "read", error)
        assert fault.kind == "server_down"
        assert ADDRESS in fault.message

    def test_read_timeout(self) -> None:
        """A read that got no answer in time is server_down, naming query_timeout_s."""
        fault = classify(config(query_timeout_s=2.0), "read", TimeoutError())
        assert fault.kind == "server_down"
        assert "within 2 s (query_timeout_s)" in fault.message

    def test_unknown_error(self) -> None:
        """Any other error is kind other, with the server's code and text."""
        text = "Lock wait timeout exceeded; try restarting transaction"
        fault = classify(config(), "read", OperationalError(1205, text))
        assert fault == SourceFault(
            "other", f"MySQL at {ADDRESS}: read failed: MySQL error 1205: {text}"
        )

    def test_too_many_connections(self) -> None:
        """MySQL's 1040 (ER_CON_COUNT_ERROR, connection_handler_manager.cc) names max_connections."""
        fault = classify(config(), "connect", OperationalError(1040, "Too many connections"))
        assert fault.kind == "too_many_connections"
        assert fault.message == (
            f"MySQL at {ADDRESS} refused the connection: it holds max_connections client "
            "connections already (MySQL error 1040: Too many connections)"
        )
        assert "raise max_connections" in fault.fix


class TestEmptyVariables:
    def test_performance_schema_off(self) -> None:
        """Empty global_variables with @@performance_schema = 0 is performance_schema_off."""
        fault = empty_variables_fault(config(), ServerFacts("8.0.36", performance_schema=False))
        assert fault.kind == "performance_schema_off"
        assert "@@performance_schema = 0" in fault.message
        assert "performance_schema = ON" in fault.fix

    def test_performance_schema_on(self) -> None:
        """Empty global_variables while performance_schema is on: the tables are not MySQL's."""
        fault = empty_variables_fault(config(), ServerFacts("8.0.36", performance_schema=True))
        assert fault.kind == "not_mysql"


class TestStateFault:
    def test_a_member_online(self) -> None:
        """A configured member that is ONLINE (or RECOVERING, ERROR) has no fault."""
        for state in ("ONLINE", "RECOVERING", "ERROR", "UNREACHABLE"):
            assert state_fault(config(), VARIABLES, [member(state)]) is None
        assert state_fault(config(), VARIABLES) is None

    def test_mariadb(self) -> None:
        """A MariaDB version is not_mysql."""
        variables = {**VARIABLES, "version": "10.11.19-MariaDB"}
        fault = state_fault(config(), variables)
        assert fault is not None
        assert fault.kind == "not_mysql"

    def test_old_mysql(self) -> None:
        """MySQL 5.6 is not_mysql."""
        fault = state_fault(config(), {**VARIABLES, "version": "5.6.40"})
        assert fault is not None
        assert fault.kind == "not_mysql"

    def test_plugin_not_installed(self) -> None:
        """Without the plugin's variables, Group Replication is not installed."""
        variables = {name: value for name, value in VARIABLES.items() if "group" not in name}
        fault = state_fault(config(), variables, [])
        assert fault is not None
        assert fault.kind == "gr_not_installed"
        assert ADDRESS in fault.message

    @pytest.mark.parametrize("name", ["", "  "])
    def test_group_name_empty(self, name: str) -> None:
        """An empty group_replication_group_name is group_name_empty, before any state."""
        fault = state_fault(config(), {**VARIABLES, "group_replication_group_name": name})
        assert fault is not None
        assert fault.kind == "group_name_empty"
        assert "group_replication_group_name" in fault.fix

    def test_offline(self) -> None:
        """The member's own row OFFLINE is gr_not_started, as MySQL shows it."""
        others = [member("ONLINE", GROUP), member("OFFLINE")]
        fault = state_fault(config(), VARIABLES, others)
        assert fault is not None
        assert fault.kind == "gr_not_started"
        assert "OFFLINE in performance_schema.replication_group_members" in fault.message
        assert "START GROUP_REPLICATION" in fault.fix

    def test_never_started(self) -> None:
        """The row of a server whose GR never started (MEMBER_ID empty, OFFLINE) is gr_not_started."""
        fault = state_fault(config(), VARIABLES, [member("OFFLINE", "")])
        assert fault is not None
        assert fault.kind == "gr_not_started"

    def test_no_row(self) -> None:
        """No row for the member is gr_not_started too."""
        fault = state_fault(config(), VARIABLES, [member("ONLINE", GROUP)])
        assert fault is not None
        assert fault.kind == "gr_not_started"
        assert "not listed" in fault.message


class TestBackoffReport:
    async def test_next_attempt_is_stable(self) -> None:
        """Reads within the backoff repeat the failure's text: the next attempt's UTC time."""
        now, wall = [100.0], [1_767_225_600.0]  # 2026-01-01 00:00:00 UTC
        source = MySQLSource(
            config(
                host="127.0.0.1",
                port=free_port(),
                password_file=None,
                backoff_initial_s=2.0,
                backoff_max_s=8.0,
            ),
            clock=lambda: now[0],
            wall_clock=lambda: wall[0],
        )
        texts = []
        for step in (0.0, 0.5, 1.0, 0.4):  # 1.9 s: all within the first 2 s
            now[0] += step
            wall[0] += step
            with pytest.raises(SourceUnavailable) as caught:
                await source.read()
            texts.append(str(caught.value))
            assert caught.value.fault is not None
            assert caught.value.fault.kind == "connect_refused"
        assert source.connect_attempts == 1
        assert len(set(texts)) == 1
        assert texts[0].endswith("; next attempt at 00:00:02.0 UTC")
        now[0] += 0.2  # past the delay: a new attempt, the delay doubles
        wall[0] += 0.2
        with pytest.raises(SourceUnavailable, match=r"; next attempt at 00:00:06\.1 UTC$"):
            await source.read()
        assert source.connect_attempts == 2
        await source.aclose()

    async def test_no_backoff(self) -> None:
        """With backoff_initial_s = 0 every read tries again, and says so."""
        source = MySQLSource(
            config(
                host="127.0.0.1",
                port=free_port(),
                password_file=None,
                backoff_initial_s=0.0,
                backoff_max_s=0.0,
            )
        )
        for attempt in (1, 2):
            with pytest.raises(SourceUnavailable, match=r"next attempt at the next read$"):
                await source.read()
            assert source.connect_attempts == attempt
        await source.aclose()

    async def test_unreadable_password_file(self, tmp_path: Any) -> None:
        """A password file that cannot be read is named, with what to do."""
        missing = tmp_path / "nope"
        source = MySQLSource(config(host="127.0.0.1", port=free_port(), password_file=missing))
        with pytest.raises(SourceUnavailable) as caught:
            await source.read()
        await source.aclose()
        fault = caught.value.fault
        assert fault is not None
        assert fault.kind == "access_denied"
        assert re.search(r"password_file: cannot read '.*nope'", fault.message)
        assert f"password_file {str(missing)!r}" in fault.fix

    def test_data_error_fault_kind(self) -> None:
        """A SourceDataError carries no fault until the source attaches bad_data."""
        assert fault_of(SourceDataError("t.C: 'x' is not a UUID")).kind == "other"


class TestSimulatedFaults:
    async def test_crash_is_server_down(self) -> None:
        """A member whose simulated server crashed fails with kind server_down."""
        clock = 1_700_000_031.0  # crash-rejoin: member 2 is down from 30 s to 60 s
        source = SimulatedSource(
            load_scenario("crash-rejoin"),
            2,
            seed=3,
            group_start_s=1_700_000_000.0,
            clock=lambda: clock,
        )
        with pytest.raises(SourceUnavailable, match="is down") as caught:
            await source.read()
        await source.aclose()
        assert fault_of(caught.value).kind == "server_down"

    async def test_before_the_group_starts(self) -> None:
        """Before the simulated group starts, a read gives the member OFFLINE with gr_not_started."""
        source = SimulatedSource(
            load_scenario("steady"),
            0,
            seed=3,
            group_start_s=1_700_000_060.0,
            clock=lambda: 1_700_000_000.0,
        )
        read = await source.read()
        await source.aclose()
        assert [row.member_state for row in read.view.members] == ["OFFLINE"]
        fault = read.fault
        assert fault is not None
        assert fault.kind == "gr_not_started"
        assert "2023-11-14 22:14:20 UTC" in fault.message
        assert "group_start_s" in fault.fix
