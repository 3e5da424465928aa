"""MySQLSource against a real MariaDB server holding performance_schema look-alike schemas.

The layouts of ``tests/agent/sources/fixtures`` are extended here for what the source reads
since issue 13: ``ps57`` gains 5.7's ``replication_connection_status`` (RECEIVED_TRANSACTION_SET,
no WL#7374 columns), ``ps57`` and ``ps80`` the member's ``read_only`` and ``super_read_only``
(ON: it is a secondary), and ``ps84`` is MySQL 8.4's layout, built from ``ps80``.
"""

# Test SQL is built from the fixtures' own schema, table and column names; password_env names
# a variable, not a password:
# ruff: noqa: S106, S608

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from grstats.agent.sources.mysql import NO_TIMESTAMPS_57, MySQLSource
from grstats.agent.sources.mysql_records import Record, cluster_name
from grstats.core.errors import SourceDataError, SourceError, SourceUnavailable
from grstats.core.gtid import GtidSet
from grstats.core.model import (
    CommunicationInfo,
    FlowControlSettings,
    ServerSettings,
    SourceHealth,
)
from grstats.core.rows import GROUP_REPLICATION_APPLIER, MemberRow, MemberStatsRow
from tests.agent.sources.schemas import X509_USER
from tests.mariadb import free_port, missing, run_script

if TYPE_CHECKING:
    from collections.abc import Callable

    from grstats.agent.sources.mysql_config import MySQLSourceConfig
    from grstats.core.model import MemberSnapshot
    from tests.agent.sources.schemas import Accounts
    from tests.mariadb import MariaDB, Tls

    MakeConfig = Callable[..., MySQLSourceConfig]

pytestmark = pytest.mark.mysql

PRIMARY = "d8a706aa-16ee-11eb-8b4c-0800270d5e61"
LOCAL = "e14043d7-16ee-11eb-9a3b-0800275c3a8f"
RECOVERING = "ea775284-16ee-11eb-b6a6-080027b2b7c2"
SUSPECTED = "f3c1e0b5-16ee-11eb-8d2e-0800271a9b70"
GROUP = "dc527338-16ee-11eb-a0c4-0800279c4a12"
COMMITTED = f"{PRIMARY}:1-18,\n{GROUP}:1-1588"
#: A GTID tag as long as MySQL allows (32 characters; tags are 8.3+).
TAG = "night_shift_batch_loader_2024_q4"
#: The applier channel's row of replication_connection_status.
APPLIER_ROW = "CHANNEL_NAME = 'group_replication_applier'"
#: Slack for timing checks on a busy machine.
MARGIN_S = 1.0


#: The member's read-only flags: GR turns super_read_only (and so read_only) on for a secondary.
SECONDARY_FLAGS = """
INSERT INTO global_variables VALUES ('read_only', 'ON'), ('super_read_only', 'ON');
"""

#: 5.7's replication_connection_status: 11 columns (5.7's field_types in
#: storage/perfschema/table_replication_connection_status.cc), RECEIVED_TRANSACTION_SET but no
#: WL#7374 columns; TIMESTAMP without fractions. The applier channel received 10 transactions
#: more than gtid_executed holds (GROUP:6000-6009); a recovery channel row must be ignored.
MYSQL57_CONNECTION_STATUS = f"""
SET SESSION sql_mode = '';
CREATE TABLE replication_connection_status (
  CHANNEL_NAME CHAR(64) NOT NULL,
  GROUP_NAME CHAR(36) CHARACTER SET utf8 COLLATE utf8_bin NOT NULL,
  SOURCE_UUID CHAR(36) CHARACTER SET utf8 COLLATE utf8_bin NOT NULL,
  THREAD_ID BIGINT(20) UNSIGNED DEFAULT NULL,
  SERVICE_STATE ENUM('ON', 'OFF', 'CONNECTING') NOT NULL,
  COUNT_RECEIVED_HEARTBEATS BIGINT(20) UNSIGNED NOT NULL DEFAULT 0,
  LAST_HEARTBEAT_TIMESTAMP TIMESTAMP NOT NULL DEFAULT '0000-00-00 00:00:00',
  RECEIVED_TRANSACTION_SET LONGTEXT NOT NULL,
  LAST_ERROR_NUMBER INT(11) NOT NULL,
  LAST_ERROR_MESSAGE VARCHAR(1024) NOT NULL,
  LAST_ERROR_TIMESTAMP TIMESTAMP NOT NULL DEFAULT '0000-00-00 00:00:00',
  PRIMARY KEY (CHANNEL_NAME)
);
INSERT INTO replication_connection_status VALUES
  ('group_replication_applier', '{GROUP}', '{GROUP}', NULL, 'ON', 0, '0000-00-00 00:00:00',
   '{PRIMARY}:1-18,\\n{GROUP}:1-6009', 0, '', '0000-00-00 00:00:00'),
  ('group_replication_recovery', '', '{PRIMARY}', NULL, 'OFF', 0, '0000-00-00 00:00:00',
   '{PRIMARY}:1-20', 0, '', '0000-00-00 00:00:00');
"""

#: MySQL 8.4 as 8.0.27+, but with transaction columns CHAR(90) (GTID tags, 8.3+: uuid:tag:gno
#: in m_table_def of table_replication_connection_status.cc and
#: table_replication_applier_status_by_worker.cc), version 8.4.3, and a tag in the GTID sets:
#: 15 tagged transactions received and not applied besides GROUP:6000-10160.
MYSQL84 = f"""
SET SESSION sql_mode = '';
ALTER TABLE replication_connection_status
  MODIFY LAST_QUEUED_TRANSACTION CHAR(90) DEFAULT NULL,
  MODIFY QUEUEING_TRANSACTION CHAR(90) DEFAULT NULL;
ALTER TABLE replication_applier_status_by_worker
  MODIFY LAST_APPLIED_TRANSACTION CHAR(90) DEFAULT NULL,
  MODIFY APPLYING_TRANSACTION CHAR(90) DEFAULT NULL;
UPDATE global_variables SET VARIABLE_VALUE = '8.4.3' WHERE VARIABLE_NAME = 'version';
UPDATE replication_group_members SET MEMBER_VERSION = '8.4.3';
ALTER TABLE replication_group_communication_information
  ADD MEMBER_FAILURE_SUSPICIONS_COUNT LONGTEXT NOT NULL;
UPDATE replication_group_communication_information
  SET MEMBER_FAILURE_SUSPICIONS_COUNT = '{{"{PRIMARY}":0,"{LOCAL}":2}}';
UPDATE replication_connection_status
  SET RECEIVED_TRANSACTION_SET = '{PRIMARY}:1-18,\\n{GROUP}:1-10160:{TAG}:1-40',
      QUEUEING_TRANSACTION = '{GROUP}:{TAG}:41'
  WHERE {APPLIER_ROW};
UPDATE global_variables SET VARIABLE_VALUE = '{PRIMARY}:1-18,\\n{GROUP}:1-5999:{TAG}:1-25'
  WHERE VARIABLE_NAME = 'gtid_executed';
"""


@pytest.fixture(name="ps80")
def _ps80(ps80: str, mariadb: MariaDB) -> str:
    """Return the 8.0.27+ schema with the member's read-only flags."""
    mariadb.execute(f"USE {ps80}; {SECONDARY_FLAGS}")
    return ps80


@pytest.fixture(name="ps57")
def _ps57(ps57: str, mariadb: MariaDB) -> str:
    """Return the 5.7 schema with its replication_connection_status and read-only flags."""
    mariadb.execute(f"USE {ps57}; {SECONDARY_FLAGS} {MYSQL57_CONNECTION_STATUS}")
    return ps57


@pytest.fixture(name="ps84")
def _ps84(ps80: str, mariadb: MariaDB) -> str:
    """Return MySQL 8.4's layout (in the ps80 schema, which it replaces)."""
    mariadb.execute(f"USE {ps80}; {MYSQL84}")
    return ps80


def micros(text: str) -> int:
    """Return a fixture TIMESTAMP(6) literal, read as UTC, in µs since the epoch."""
    moment = datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC)
    return int(moment.timestamp()) * 1_000_000 + moment.microsecond


def open_sockets() -> list[str]:
    """The sockets this process has open (Linux: /proc/self/fd)."""
    sockets = []
    for fd in list(Path("/proc/self/fd").iterdir()):
        with contextlib.suppress(FileNotFoundError):  # the listing's own descriptor
            link = str(fd.readlink())
            if link.startswith("socket:"):
                sockets.append(link)
    return sorted(sockets)


async def read_once(config: MySQLSourceConfig) -> MemberSnapshot:
    """Read one snapshot with a fresh source and close it."""
    async with MySQLSource(config) as source:
        return await source.read()


async def failure_of(source: MySQLSource) -> SourceError:
    """Return the error a read raises (in a frame of its own, which holds no secret)."""
    try:
        await source.read()
    except SourceError as exc:
        return exc
    raise AssertionError("the read succeeded")


def secret_leaks(exc: BaseException, secret: str) -> list[str]:
    """Return where ``secret`` shows: message, repr, or a traceback rendered with its locals."""
    rendered = "".join(
        traceback.TracebackException.from_exception(exc, capture_locals=True).format()
    )
    places = {"str": str(exc), "repr": repr(exc), "traceback with locals": rendered}
    return [name for name, text in places.items() if secret in text]


class TestRead80:
    async def test_snapshot_fields(self, make_config: MakeConfig, ps80: str) -> None:
        """A read of MySQL 8.0.27+ returns the member's id, version, view, GTIDs and health."""
        before = time.time_ns() // 1000
        snapshot = await read_once(make_config(ps80))
        after = time.time_ns() // 1000
        assert snapshot.member_id == LOCAL
        assert before <= snapshot.read_at_us <= after
        assert snapshot.view.view_id == "16036502905383892:9"
        assert snapshot.view.group_name == GROUP
        assert snapshot.view.single_primary_mode is True
        assert snapshot.gtid_executed == GtidSet.parse(f"{PRIMARY}:1-18,{GROUP}:1-5999")
        assert snapshot.health == SourceHealth()
        assert snapshot.own_row() == snapshot.view.members[1]

    async def test_variables_it_does_not_use_are_not_read(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """A variable no reader uses (max_connections) is not asked for, so even NULL fails nothing."""
        mariadb.execute(
            f"UPDATE {ps80}.global_variables SET VARIABLE_VALUE = NULL"
            " WHERE VARIABLE_NAME = 'max_connections'"
        )
        snapshot = await read_once(make_config(ps80))
        assert snapshot.member_id == LOCAL

    async def test_members(self, make_config: MakeConfig, ps80: str) -> None:
        """Members come sorted by MEMBER_ID with their ports (NULL kept), roles, versions, stacks."""
        snapshot = await read_once(make_config(ps80))
        assert snapshot.view.members == (
            MemberRow(GROUP_REPLICATION_APPLIER, PRIMARY, "node1", 3306, "ONLINE", "PRIMARY", "8.0.36", "XCom"),
            MemberRow(GROUP_REPLICATION_APPLIER, LOCAL, "node2", 3307, "ONLINE", "SECONDARY", "8.0.36", "MySQL"),
            MemberRow(GROUP_REPLICATION_APPLIER, RECOVERING, "node3", None, "RECOVERING", "SECONDARY", "8.0.35", "XCom"),
        )  # fmt: skip

    async def test_own_stats_row(self, make_config: MakeConfig, ps80: str) -> None:
        """The stats row is the member's own, every counter in its column, the GTID text as MySQL's."""
        stats = (await read_once(make_config(ps80))).stats
        assert stats == MemberStatsRow(
            view_id="16036502905383892:9",
            member_id=LOCAL,
            count_transactions_in_queue=2,
            count_transactions_checked=10037,
            count_conflicts_detected=1,
            count_transactions_rows_validating=9247,
            transactions_committed_all_members=COMMITTED,
            last_conflict_free_transaction=f"{GROUP}:8030",
            count_transactions_remote_in_applier_queue=5859,
            count_transactions_remote_applied=4180,
            count_transactions_local_proposed=3,
            count_transactions_local_rollback=1,
        )
        assert stats.transactions_committed_all_members == COMMITTED  # ",\n" between UUIDs
        assert stats.committed_all_members() == GtidSet.parse(f"{PRIMARY}:1-18,{GROUP}:1-1588")

    async def test_gtid_text_is_normalised(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """GTID text in another valid form (case, order, spaces) is served in MySQL's own form."""
        mariadb.execute(
            f"UPDATE {ps80}.replication_group_member_stats"
            " SET TRANSACTIONS_COMMITTED_ALL_MEMBERS = %s, LAST_CONFLICT_FREE_TRANSACTION = %s"
            " WHERE MEMBER_ID = %s",
            (
                f" {GROUP.upper()}:1-1000:1001-1588 , {PRIMARY}:1-18,",
                f"{GROUP.upper()}:8030",
                LOCAL,
            ),
        )
        stats = (await read_once(make_config(ps80))).stats
        assert stats.transactions_committed_all_members == COMMITTED
        assert stats.last_conflict_free_transaction == f"{GROUP}:8030"

    async def test_queue_fields(self, make_config: MakeConfig, ps80: str) -> None:
        """Queue fields are the applier channel's connection-status row, times in µs (UTC)."""
        applier = (await read_once(make_config(ps80))).applier
        assert applier.member_id == LOCAL
        assert applier.last_queued_transaction == f"{GROUP}:10160"
        assert applier.last_queued_transaction_original_commit_timestamp == micros(
            "2020-10-26 08:41:30.100000"
        )
        assert applier.last_queued_transaction_immediate_commit_timestamp == micros(
            "2020-10-26 08:41:30.100000"
        )
        assert applier.last_queued_transaction_start_queue_timestamp == micros(
            "2020-10-26 08:41:30.101000"
        )
        assert applier.last_queued_transaction_end_queue_timestamp == micros(
            "2020-10-26 08:41:30.101050"
        )
        assert applier.queueing_transaction == f"{GROUP}:10161"
        assert applier.queueing_transaction_original_commit_timestamp == micros(
            "2020-10-26 08:41:30.110000"
        )
        assert applier.queueing_transaction_immediate_commit_timestamp == micros(
            "2020-10-26 08:41:30.110000"
        )
        assert applier.queueing_transaction_start_queue_timestamp == micros(
            "2020-10-26 08:41:30.111000"
        )

    async def test_apply_fields_choose_workers(self, make_config: MakeConfig, ps80: str) -> None:
        """LAST_APPLIED is the worker that finished last (2), APPLYING the most behind one (3)."""
        applier = (await read_once(make_config(ps80))).applier
        assert applier.last_applied_transaction == f"{GROUP}:5999"
        assert applier.last_applied_transaction_original_commit_timestamp == micros(
            "2020-10-26 08:41:00.000001"
        )
        assert applier.last_applied_transaction_immediate_commit_timestamp == micros(
            "2020-10-26 08:41:00.000001"
        )
        assert applier.last_applied_transaction_start_apply_timestamp == micros(
            "2020-10-26 08:41:30.005000"
        )
        assert applier.last_applied_transaction_end_apply_timestamp == micros(
            "2020-10-26 08:41:30.020000"
        )
        assert applier.applying_transaction == f"{GROUP}:6000"
        assert applier.applying_transaction_original_commit_timestamp == micros(
            "2020-10-26 08:41:00.050000"
        )
        assert applier.applying_transaction_immediate_commit_timestamp == micros(
            "2020-10-26 08:41:00.050000"
        )
        assert applier.applying_transaction_start_apply_timestamp == micros(
            "2020-10-26 08:41:30.015200"
        )
        assert applier.applier_lag_seconds is None  # the agent computes it when it serves the row

    async def test_idle_applier_reads_zero_times(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """Zero timestamps ('0000-00-00 00:00:00.000000') read as 0, empty transactions as ''."""
        mariadb.execute(
            f"SET SESSION sql_mode = ''; DELETE FROM {ps80}.replication_applier_status_by_worker"
            " WHERE WORKER_ID <> 4 AND CHANNEL_NAME = 'group_replication_applier'"
        )
        applier = (await read_once(make_config(ps80))).applier
        assert applier.last_applied_transaction == applier.applying_transaction == ""
        assert applier.last_applied_transaction_end_apply_timestamp == 0
        assert applier.applying_transaction_original_commit_timestamp == 0
        assert applier.last_queued_transaction == f"{GROUP}:10160"  # the queue side is unchanged

    async def test_group_replication_never_started(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """Without its stats row (GR never started) the member gets MySQL's default row."""
        mariadb.execute(
            f"DELETE FROM {ps80}.replication_group_member_stats WHERE MEMBER_ID = %s", (LOCAL,)
        )
        snapshot = await read_once(make_config(ps80))
        assert snapshot.stats == MemberStatsRow()
        assert snapshot.view.view_id == ""
        assert len(snapshot.view.members) == 3

    async def test_connection_is_reused(self, make_config: MakeConfig, ps80: str) -> None:
        """Successive reads share one connection, opened by the first read."""
        async with MySQLSource(make_config(ps80)) as source:
            assert source.connect_attempts == 0
            first = await source.read()
            second = await source.read()
            assert source.connect_attempts == 1
        assert first.stats == second.stats
        assert second.read_at_us >= first.read_at_us


class TestOtherVersions:
    async def test_mysql57(self, make_config: MakeConfig, ps57: str) -> None:
        """5.7: roles from group_replication_primary_member, 9 stats columns, no WL#7374 times."""
        snapshot = await read_once(make_config(ps57))
        assert [(m.member_id, m.member_state, m.member_role) for m in snapshot.view.members] == [
            (PRIMARY, "ONLINE", "PRIMARY"),
            (LOCAL, "ONLINE", "SECONDARY"),
            (RECOVERING, "RECOVERING", "SECONDARY"),
            (SUSPECTED, "UNREACHABLE", "SECONDARY"),  # keeps the role of its underlying state
        ]
        assert {
            (m.member_version, m.member_communication_stack) for m in snapshot.view.members
        } == {("", "")}
        assert snapshot.view.members[2].member_port is None
        assert snapshot.stats == MemberStatsRow(
            view_id="16036502905383892:9",
            member_id=LOCAL,
            count_transactions_checked=10037,
            count_transactions_rows_validating=9247,
            transactions_committed_all_members=COMMITTED,
            last_conflict_free_transaction=f"{GROUP}:8030",
        )
        assert snapshot.applier.member_id == LOCAL
        assert snapshot.applier.last_applied_transaction is None  # NULL: no such column
        assert snapshot.applier.timestamps_unknown
        assert snapshot.applier.with_lag(10**16).applier_lag_seconds is None
        assert snapshot.health == SourceHealth(ok=True, message=NO_TIMESTAMPS_57)

    async def test_mysql57_multi_primary(
        self, make_config: MakeConfig, ps57: str, mariadb: MariaDB
    ) -> None:
        """5.7 in multi-primary mode shows every ONLINE or RECOVERING member as PRIMARY."""
        mariadb.execute(
            f"UPDATE {ps57}.global_variables SET VARIABLE_VALUE = 'OFF'"
            " WHERE VARIABLE_NAME = 'group_replication_single_primary_mode';"
            f"UPDATE {ps57}.global_status SET VARIABLE_VALUE = ''"
            " WHERE VARIABLE_NAME = 'group_replication_primary_member';"
            f"UPDATE {ps57}.replication_group_members SET MEMBER_STATE = 'ERROR' WHERE MEMBER_ID = %s",
            (SUSPECTED,),
        )
        snapshot = await read_once(make_config(ps57))
        assert snapshot.view.single_primary_mode is False
        assert [m.member_role for m in snapshot.view.members] == [
            "PRIMARY",
            "PRIMARY",
            "PRIMARY",
            "",
        ]

    async def test_mysql80_before_8027(self, make_config: MakeConfig, ps8026: str) -> None:
        """8.0 before 8.0.27 has no MEMBER_COMMUNICATION_STACK: it reads as ''."""
        snapshot = await read_once(make_config(ps8026))
        assert [m.member_communication_stack for m in snapshot.view.members] == ["", "", ""]
        assert [m.member_role for m in snapshot.view.members] == [
            "PRIMARY",
            "SECONDARY",
            "SECONDARY",
        ]
        assert snapshot.applier.last_applied_transaction == f"{GROUP}:5999"

    async def test_mysql84(self, make_config: MakeConfig, ps84: str) -> None:
        """8.4 reads as 8.0.27+ does, tagged GTIDs longer than 8.0's CHAR(57) included."""
        snapshot = await read_once(make_config(ps84))
        assert snapshot.health == SourceHealth()
        assert [m.member_version for m in snapshot.view.members] == ["8.4.3"] * 3
        assert snapshot.applier.queueing_transaction == f"{GROUP}:{TAG}:41"
        assert snapshot.applier.last_applied_transaction == f"{GROUP}:5999"
        assert snapshot.gtid_executed == GtidSet.parse(f"{PRIMARY}:1-18,{GROUP}:1-5999:{TAG}:1-25")

    async def test_communication_information(self, make_config: MakeConfig, ps80: str) -> None:
        """An 8.0.27+ member's communication row is read, leaders split at their commas."""
        info = (await read_once(make_config(ps80))).communication
        assert info == CommunicationInfo(
            write_concurrency=10,
            protocol_version="8.0.27",
            leaders_preferred=(PRIMARY,),
            leaders_actual=(PRIMARY,),
            single_leader_capable=True,
            failure_suspicions=None,
        )

    async def test_communication_information_84(self, make_config: MakeConfig, ps84: str) -> None:
        """An 8.4 member's row has MEMBER_FAILURE_SUSPICIONS_COUNT's JSON text as MySQL gives it."""
        info = (await read_once(make_config(ps84))).communication
        assert info is not None
        assert info.failure_suspicions == f'{{"{PRIMARY}":0,"{LOCAL}":2}}'

    async def test_communication_information_8026(
        self, make_config: MakeConfig, ps8026: str
    ) -> None:
        """MySQL before 8.0.27 has no such table: no row, and the read stands."""
        snapshot = await read_once(make_config(ps8026))
        assert snapshot.communication is None
        assert snapshot.health == SourceHealth()

    async def test_communication_information_missing_or_not_online(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """No row while the member is not ONLINE or RECOVERING, or without the table; the read stands."""
        mariadb.execute(
            f"UPDATE {ps80}.replication_group_members SET MEMBER_STATE = 'UNREACHABLE'"
            f" WHERE MEMBER_ID = '{LOCAL}'"
        )
        unreachable = await read_once(make_config(ps80))
        assert unreachable.communication is None
        assert unreachable.own_row() is not None
        mariadb.execute(
            f"UPDATE {ps80}.replication_group_members SET MEMBER_STATE = 'ONLINE'"
            f" WHERE MEMBER_ID = '{LOCAL}';"
            f"DROP TABLE {ps80}.replication_group_communication_information"
        )
        missing = await read_once(make_config(ps80))
        assert missing.communication is None
        assert missing.health == SourceHealth()

    async def test_channel_without_wl7374_columns(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """An 8.0 server whose worker table lacks WL#7374's columns reads, with a health note."""
        mariadb.execute(
            f"ALTER TABLE {ps80}.replication_applier_status_by_worker DROP COLUMN APPLYING_TRANSACTION"
        )
        snapshot = await read_once(make_config(ps80))
        assert snapshot.health.ok
        assert "replication_applier_status_by_worker: no WL#7374 columns" in snapshot.health.message
        assert snapshot.applier.last_queued_transaction == ""  # no half-filled row
        assert snapshot.stats.member_id == LOCAL


LAYOUTS = ["ps57", "ps80", "ps84"]


def layout(request: pytest.FixtureRequest, name: str) -> str:
    """Return the schema of layout ``name`` (a fixture of this module), freshly loaded."""
    schema: str = request.getfixturevalue(name)
    return schema


class TestTransactionsBehind:
    @pytest.mark.parametrize(("name", "expected"), [("ps57", 10), ("ps80", 4161), ("ps84", 4176)])
    async def test_each_layout(
        self, make_config: MakeConfig, request: pytest.FixtureRequest, name: str, expected: int
    ) -> None:
        """Each layout's member is behind by its applier channel's received set minus gtid_executed."""
        snapshot = await read_once(make_config(layout(request, name)))
        assert snapshot.transactions_behind == expected
        assert snapshot.applier.transactions_behind is None  # the agent fills it in when serving

    @pytest.mark.parametrize("name", LAYOUTS)
    @pytest.mark.parametrize(
        ("received", "executed", "expected"),
        [
            ("aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1-100", "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1-90", 10),
            (f"{PRIMARY}:1-18,\n{GROUP}:1-500:601-700", f"{PRIMARY}:1-20,\n{GROUP}:1-450,\n{LOCAL}:1-3", 150),
        ],
    )  # fmt: skip
    async def test_vectors(
        self,
        *,
        make_config: MakeConfig,
        mariadb: MariaDB,
        request: pytest.FixtureRequest,
        name: str,
        received: str,
        executed: str,
        expected: int,
    ) -> None:
        """The count is received minus executed, over every UUID, with MySQL's ",\\n" separators."""
        schema = layout(request, name)
        mariadb.execute(
            f"UPDATE {schema}.replication_connection_status SET RECEIVED_TRANSACTION_SET = %s"
            f" WHERE {APPLIER_ROW};"
            f"UPDATE {schema}.global_variables SET VARIABLE_VALUE = %s"
            " WHERE VARIABLE_NAME = 'gtid_executed'",
            (received, executed),
        )
        assert (await read_once(make_config(schema))).transactions_behind == expected

    @pytest.mark.parametrize("name", LAYOUTS)
    async def test_no_channel_row(
        self, make_config: MakeConfig, mariadb: MariaDB, request: pytest.FixtureRequest, name: str
    ) -> None:
        """Without the applier channel's row (GR never started) it is None; the read still succeeds."""
        schema = layout(request, name)
        mariadb.execute(f"DELETE FROM {schema}.replication_connection_status WHERE {APPLIER_ROW}")
        snapshot = await read_once(make_config(schema))
        assert snapshot.transactions_behind is None
        assert snapshot.member_id == LOCAL
        # 5.7 has no WL#7374 columns: NULL, not the empty channel of 8.0
        assert snapshot.applier.last_queued_transaction == (None if name == "ps57" else "")

    @pytest.mark.parametrize("name", LAYOUTS)
    async def test_malformed_set(
        self, make_config: MakeConfig, mariadb: MariaDB, request: pytest.FixtureRequest, name: str
    ) -> None:
        """A malformed received set raises SourceDataError naming the column and the value."""
        schema = layout(request, name)
        mariadb.execute(
            f"UPDATE {schema}.replication_connection_status SET RECEIVED_TRANSACTION_SET = %s"
            f" WHERE {APPLIER_ROW}",
            (f"{GROUP}:0",),
        )
        with pytest.raises(
            SourceDataError,
            match=rf"^replication_connection_status\.RECEIVED_TRANSACTION_SET: '{GROUP}:0' is not",
        ):
            await read_once(make_config(schema))


class TestServerSettings:
    async def test_read(self, make_config: MakeConfig, ps80: str) -> None:
        """The flags, member weight and flow-control variables are read; one the server lacks is default."""
        snapshot = await read_once(make_config(ps80))
        assert snapshot.member_weight == 70
        server = snapshot.server
        assert server == ServerSettings(
            read_only=True,
            super_read_only=True,
            flow_control=FlowControlSettings(applier_threshold=20000, period=2, hold_percent=15),
        )

    @pytest.mark.parametrize("name", LAYOUTS)
    async def test_writable_primary(
        self, make_config: MakeConfig, mariadb: MariaDB, request: pytest.FixtureRequest, name: str
    ) -> None:
        """A member whose flags are off reads them off (0 and OFF alike) on every layout."""
        schema = layout(request, name)
        mariadb.execute(
            f"UPDATE {schema}.global_variables SET VARIABLE_VALUE = '0' WHERE VARIABLE_NAME = 'read_only';"
            f"UPDATE {schema}.global_variables SET VARIABLE_VALUE = 'OFF' WHERE VARIABLE_NAME = 'super_read_only'"
        )  # fmt: skip
        server = (await read_once(make_config(schema))).server
        assert (server.read_only, server.super_read_only) == (False, False)

    async def test_mysql57_before_5720(
        self, make_config: MakeConfig, ps57: str, mariadb: MariaDB
    ) -> None:
        """5.7 before 5.7.20 has three flow-control variables: the other seven keep their defaults."""
        mariadb.execute(
            f"UPDATE {ps57}.global_variables SET VARIABLE_VALUE = '5.7.19' WHERE VARIABLE_NAME = 'version';"
            f"UPDATE {ps57}.global_variables SET VARIABLE_VALUE = 'DISABLED' WHERE VARIABLE_NAME = 'group_replication_flow_control_mode';"
            f"UPDATE {ps57}.global_variables SET VARIABLE_VALUE = '100' WHERE VARIABLE_NAME = 'group_replication_flow_control_certifier_threshold';"
            f"UPDATE {ps57}.global_variables SET VARIABLE_VALUE = '200' WHERE VARIABLE_NAME = 'group_replication_flow_control_applier_threshold'"
        )  # fmt: skip
        server = (await read_once(make_config(ps57))).server
        assert server == ServerSettings(
            read_only=True,
            super_read_only=True,
            flow_control=FlowControlSettings(
                mode="DISABLED", certifier_threshold=100, applier_threshold=200
            ),
        )

    async def test_without_flow_control_variables(
        self, make_config: MakeConfig, ps57: str, mariadb: MariaDB
    ) -> None:
        """Without the flow-control variables, and before 5.7.8's super_read_only, MySQL's defaults."""
        mariadb.execute(
            f"DELETE FROM {ps57}.global_variables WHERE VARIABLE_NAME LIKE "
            "'group\\_replication\\_flow\\_control\\_%' OR VARIABLE_NAME = 'super_read_only'"
        )
        server = (await read_once(make_config(ps57))).server
        assert server == ServerSettings(read_only=True)


class TestUnavailable:
    async def test_closed_port_fails_fast(self, make_config: MakeConfig) -> None:
        """A port nobody listens on raises SourceUnavailable at once, naming the address."""
        config = make_config(port=free_port(), connect_timeout_s=3.0)
        async with MySQLSource(config) as source:
            started = time.monotonic()
            with pytest.raises(
                SourceUnavailable, match=rf"127\.0\.0\.1:{config.port}: connect failed"
            ) as caught:
                await source.read()
            assert time.monotonic() - started < config.connect_timeout_s
        assert re.search(r"; next attempt at \d\d:\d\d:\d\d\.\d UTC$", str(caught.value))
        assert caught.value.fault is not None
        assert caught.value.fault.kind == "connect_refused"

    async def test_silent_server_times_out(self, make_config: MakeConfig) -> None:
        """A server that accepts but never greets raises SourceUnavailable after connect_timeout_s."""
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(4)
            config = make_config(port=listener.getsockname()[1], connect_timeout_s=0.3)
            async with MySQLSource(config) as source:
                started = time.monotonic()
                with pytest.raises(
                    SourceUnavailable, match=r"no answer within 0\.3 s \(connect_timeout_s\)"
                ):
                    await source.read()
                assert 0.3 <= time.monotonic() - started < 0.3 + MARGIN_S

    async def test_timed_out_connect_leaves_no_socket_open(self, make_config: MakeConfig) -> None:
        """A connect cut off by connect_timeout_s has closed its socket when the error is raised."""
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(4)
            config = make_config(port=listener.getsockname()[1], connect_timeout_s=0.2)
            async with MySQLSource(config) as source:
                before = open_sockets()
                with pytest.raises(SourceUnavailable, match="connect_timeout_s"):
                    await source.read()
                assert open_sockets() == before  # no await since the failure

    async def test_backoff_between_connects(self, make_config: MakeConfig) -> None:
        """After failures, reads before the (doubling, capped) delay repeat the failure without connecting.

        They name the same next attempt, the failure's time plus the delay (not recomputed per read).
        """
        now, wall = [100.0], [1_767_225_600.0]  # 2026-01-01 00:00:00 UTC
        config = make_config(port=free_port(), backoff_initial_s=1.0, backoff_max_s=3.0)
        async with MySQLSource(config, clock=lambda: now[0], wall_clock=lambda: wall[0]) as source:
            for attempt, (delay, at) in enumerate(
                (
                    (1.0, "00:00:01.0"),
                    (2.0, "00:00:03.1"),
                    (3.0, "00:00:06.2"),
                    (3.0, "00:00:09.3"),
                ),
                start=1,
            ):  # doubling, capped
                with pytest.raises(
                    SourceUnavailable, match=rf"connect failed.*; next attempt at {at} UTC$"
                ) as failed:
                    await source.read()
                now[0] += delay - 0.3
                wall[0] += delay - 0.3
                with pytest.raises(SourceUnavailable) as waiting:
                    await source.read()
                assert str(waiting.value) == str(failed.value)
                assert waiting.value.fault == failed.value.fault
                assert source.connect_attempts == attempt
                now[0] += 0.4  # past the delay: the next read connects again
                wall[0] += 0.4

    async def test_server_restart(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """While the server is down reads raise SourceUnavailable; once it is back they recover."""
        async with MySQLSource(make_config(ps80)) as source:
            await source.read()
            try:
                mariadb.stop()
                with pytest.raises(SourceUnavailable):
                    await source.read()
                with pytest.raises(SourceUnavailable, match="next attempt at"):
                    await source.read()  # within the backoff: no new connect
                assert source.connect_attempts == 1
                await asyncio.sleep(0.15)
                with pytest.raises(SourceUnavailable, match="connect failed"):
                    await source.read()  # the server is still down
            finally:
                mariadb.start()
            await asyncio.sleep(0.25)  # the second failure doubled the delay to 0.2 s
            snapshot = await source.read()
            assert snapshot.member_id == LOCAL
            assert source.connect_attempts == 3

    async def test_lost_connection(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """A connection the server killed fails one read; a read after the backoff reconnects."""
        async with MySQLSource(make_config(ps80)) as source:
            await source.read()
            mariadb.execute(f"KILL CONNECTION {source._conn.server_thread_id[0]}")
            with pytest.raises(SourceUnavailable, match="read failed"):
                await source.read()
            await asyncio.sleep(0.15)
            assert (await source.read()).member_id == LOCAL
            assert source.connect_attempts == 2

    async def test_query_timeout(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """A read blocked by a table lock raises SourceUnavailable after query_timeout_s."""
        async with MySQLSource(make_config(ps80, query_timeout_s=0.3)) as source:
            await source.read()
            with mariadb.admin() as admin, admin.cursor() as cursor:
                run_script(cursor, f"LOCK TABLES {ps80}.replication_group_members WRITE")
                started = time.monotonic()
                with pytest.raises(
                    SourceUnavailable, match=r"no answer within 0\.3 s \(query_timeout_s\)"
                ):
                    await source.read()
                assert 0.3 <= time.monotonic() - started < 0.3 + MARGIN_S
                run_script(cursor, "UNLOCK TABLES")
            await asyncio.sleep(0.15)
            assert (await source.read()).member_id == LOCAL

    async def test_read_after_aclose(self, make_config: MakeConfig, ps80: str) -> None:
        """A closed source refuses to read, and closing twice is harmless."""
        source = MySQLSource(make_config(ps80))
        await source.read()
        await source.aclose()
        await source.aclose()
        with pytest.raises(SourceError, match="read after aclose"):
            await source.read()


#: (table, column, its type made nullable, the row, a valid value that heals the read).
NULL_CASES = [
    ("replication_group_member_stats", "COUNT_TRANSACTIONS_CHECKED", "BIGINT UNSIGNED NULL", f"MEMBER_ID = '{LOCAL}'", "7"),
    ("replication_group_members", "MEMBER_HOST", "CHAR(255) NULL", f"MEMBER_ID = '{RECOVERING}'", "'fixed'"),
    ("replication_applier_status_by_worker", "LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP", "TIMESTAMP(6) NULL", "WORKER_ID = 3", "0"),
    ("replication_connection_status", "QUEUEING_TRANSACTION_START_QUEUE_TIMESTAMP", "TIMESTAMP(6) NULL", APPLIER_ROW, "0"),
    ("replication_connection_status", "RECEIVED_TRANSACTION_SET", "LONGTEXT NULL", APPLIER_ROW, "''"),
]  # fmt: skip

GARBAGE_CASES = [
    ("replication_group_member_stats", "TRANSACTIONS_COMMITTED_ALL_MEMBERS", "garbage", f"MEMBER_ID = '{LOCAL}'", "is not a GTID set"),
    ("replication_group_member_stats", "LAST_CONFLICT_FREE_TRANSACTION", f"{GROUP}:0", f"MEMBER_ID = '{LOCAL}'", "is not one GTID"),
    ("replication_applier_status_by_worker", "APPLYING_TRANSACTION", "not-a-gtid", "WORKER_ID = 3", "is not '', ANONYMOUS or one GTID"),
    ("replication_connection_status", "LAST_QUEUED_TRANSACTION", f"{GROUP}:5-6", "CHANNEL_NAME = 'group_replication_applier'", "is not '', ANONYMOUS or one GTID"),
    ("replication_group_members", "MEMBER_STATE", "SLEEPING", f"MEMBER_ID = '{PRIMARY}'", "is not a MEMBER_STATE"),
    ("global_variables", "gtid_executed", f"{GROUP}:1-5,3-4", "VARIABLE_NAME = 'gtid_executed'", "is not a GTID set"),
    ("replication_connection_status", "RECEIVED_TRANSACTION_SET", f"{GROUP}:1-10160:0", APPLIER_ROW, "is not a GTID set"),
    ("global_variables", "read_only", "maybe", "VARIABLE_NAME = 'read_only'", "'maybe' is not ON, OFF, 1 or 0"),
    ("global_variables", "super_read_only", "2", "VARIABLE_NAME = 'super_read_only'", "'2' is not ON, OFF, 1 or 0"),
    ("global_variables", "group_replication_flow_control_mode", "FAST", "VARIABLE_NAME = 'group_replication_flow_control_mode'", "'FAST' is not QUOTA or DISABLED"),
    ("global_variables", "group_replication_flow_control_certifier_threshold", "abc", "VARIABLE_NAME = 'group_replication_flow_control_certifier_threshold'", "'abc' is not an integer"),
    ("global_variables", "group_replication_flow_control_period", "0", "VARIABLE_NAME = 'group_replication_flow_control_period'", ": 0 is not in 1..60"),
    ("global_variables", "group_replication_flow_control_hold_percent", "101", "VARIABLE_NAME = 'group_replication_flow_control_hold_percent'", ": 101 is not in 0..100"),
]  # fmt: skip


class TestDataErrors:
    @pytest.mark.parametrize(("table", "column", "nullable", "where", "fixed"), NULL_CASES)
    async def test_null_in_not_null_column(
        self,
        *,
        make_config: MakeConfig,
        ps80: str,
        mariadb: MariaDB,
        table: str,
        column: str,
        nullable: str,
        where: str,
        fixed: str,
    ) -> None:
        """A NULL where MySQL never puts one raises SourceDataError naming table.column; a fix heals."""
        mariadb.execute(
            f"ALTER TABLE {ps80}.{table} MODIFY {column} {nullable};"
            f"UPDATE {ps80}.{table} SET {column} = NULL WHERE {where};"
        )
        async with MySQLSource(make_config(ps80)) as source:
            with pytest.raises(SourceDataError, match=rf"^{table}\.{column}: None is not allowed"):
                await source.read()
            mariadb.execute(
                f"SET SESSION sql_mode = ''; UPDATE {ps80}.{table} SET {column} = {fixed} WHERE {where}"
            )
            assert (await source.read()).member_id == LOCAL
            assert source.connect_attempts == 1  # a data error keeps the connection

    @pytest.mark.parametrize(("table", "column", "value", "where", "reason"), GARBAGE_CASES)
    async def test_value_outside_domain(
        self,
        *,
        make_config: MakeConfig,
        ps80: str,
        mariadb: MariaDB,
        table: str,
        column: str,
        value: str,
        where: str,
        reason: str,
    ) -> None:
        """Malformed text raises SourceDataError naming table.column and value; a fix heals."""
        target = "VARIABLE_VALUE" if table.startswith("global_") else column
        saved = mariadb.execute(f"SELECT {target} FROM {ps80}.{table} WHERE {where}")[0][0]
        mariadb.execute(f"UPDATE {ps80}.{table} SET {target} = %s WHERE {where}", (value,))
        async with MySQLSource(make_config(ps80)) as source:
            with pytest.raises(SourceDataError) as caught:
                await source.read()
            message = str(caught.value)
            assert message.startswith(f"{table}.{column}: ")
            assert value in message
            assert reason in message
            mariadb.execute(f"UPDATE {ps80}.{table} SET {target} = %s WHERE {where}", (saved,))
            assert (await source.read()).member_id == LOCAL

    async def test_missing_variable(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """A server without server_uuid in global_variables is a data error naming it."""
        mariadb.execute(f"DELETE FROM {ps80}.global_variables WHERE VARIABLE_NAME = 'server_uuid'")
        with pytest.raises(
            SourceDataError, match=r"^global_variables\.server_uuid: the variable is missing"
        ):
            await read_once(make_config(ps80))

    async def test_gtid_executed_cut_by_performance_schema(
        self, make_config: MakeConfig, ps80: str, mariadb: MariaDB
    ) -> None:
        """A 1024-character gtid_executed may be cut: without @@GLOBAL.gtid_executed it is an error."""
        value = f"{GROUP}:" + ":".join(str(gno) for gno in range(1, 2000, 2))
        value = value[:1023] + "1"  # a valid set (any order is fine), exactly 1024 characters
        assert len(value) == 1024
        assert GtidSet.parse(value)
        mariadb.execute(
            f"UPDATE {ps80}.global_variables SET VARIABLE_VALUE = %s WHERE VARIABLE_NAME = 'gtid_executed'",
            (value,),
        )
        with pytest.raises(
            SourceDataError, match=r"^global_variables\.gtid_executed: 1024 characters.*may be cut"
        ):
            await read_once(make_config(ps80))


class TestPassword:
    async def test_password_from_environment(
        self,
        make_config: MakeConfig,
        ps80: str,
        accounts: Accounts,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """The password can come from the environment variable the config names."""
        monkeypatch.setenv("GRSTATS_TEST_MYSQL_PASSWORD", accounts.password)
        config = make_config(ps80, password_file=None, password_env="GRSTATS_TEST_MYSQL_PASSWORD")
        assert (await read_once(config)).member_id == LOCAL

    async def test_password_from_file(
        self, make_config: MakeConfig, ps80: str, accounts: Accounts
    ) -> None:
        """The password can come from a file (its trailing newline is not part of it)."""
        assert accounts.password_file.read_text(encoding="utf-8").endswith("\n")
        assert (await read_once(make_config(ps80))).member_id == LOCAL

    async def test_password_file_is_read_at_connect(
        self, make_config: MakeConfig, ps80: str, accounts: Accounts, tmp_path: Path
    ) -> None:
        """The file is read at each connect, so a fixed file heals the source without a restart."""
        path = tmp_path / "password"
        path.write_text("not-the-password", encoding="utf-8")
        async with MySQLSource(make_config(ps80, password_file=path)) as source:
            with pytest.raises(SourceUnavailable, match="Access denied"):
                await source.read()
            path.write_text(accounts.password, encoding="utf-8")
            await asyncio.sleep(0.15)
            assert (await source.read()).member_id == LOCAL

    async def test_wrong_password_is_never_shown(
        self, make_config: MakeConfig, ps80: str, tmp_path: Path
    ) -> None:
        """A refused login raises SourceUnavailable whose text, repr and traceback omit the password."""
        wrong = "Wr0ng-but-s3cret-Passw0rd"
        path = tmp_path / "password"
        path.write_text(wrong, encoding="utf-8")
        source = MySQLSource(make_config(ps80, password_file=path))
        error = await failure_of(source)
        await source.aclose()
        assert isinstance(error, SourceUnavailable)
        assert "MySQL error 1045: Access denied" in str(error)
        assert secret_leaks(error, wrong) == []
        assert wrong not in repr(source)
        assert wrong not in repr(source.config)

    async def test_repr_has_no_password(
        self, make_config: MakeConfig, ps80: str, accounts: Accounts
    ) -> None:
        """Neither the config nor a connected source shows the password in repr()."""
        async with MySQLSource(make_config(ps80)) as source:
            await source.read()
            assert "connected" in repr(source)
            assert accounts.password not in repr(source)
            assert accounts.password not in repr(source.config)
            assert accounts.password not in repr(vars(source))  # nothing the source keeps holds it


@pytest.fixture(name="tls")
def _tls(mariadb: MariaDB) -> Tls:
    if mariadb.tls is None:
        missing("openssl not found: the TLS tests need it to make certificates")
    assert mariadb.tls is not None
    return mariadb.tls


class TestTls:
    async def test_client_certificate_account(
        self, make_config: MakeConfig, ps80: str, tls: Tls
    ) -> None:
        """An account that REQUIRES X509 reads over TLS with a verified server and a client cert."""
        config = make_config(
            ps80,
            user=X509_USER,
            ssl_ca=tls.ca,
            ssl_cert=tls.client_cert,
            ssl_key=tls.client_key,
            ssl_verify_identity=True,
        )
        assert (await read_once(config)).member_id == LOCAL

    async def test_account_refuses_without_certificate(
        self, make_config: MakeConfig, ps80: str, tls: Tls
    ) -> None:
        """Without a client certificate the X509 account is refused: SourceUnavailable."""
        with pytest.raises(SourceUnavailable, match="Access denied"):
            await read_once(make_config(ps80, user=X509_USER, ssl_ca=tls.ca))

    async def test_unknown_ca_is_refused(
        self, make_config: MakeConfig, ps80: str, tls: Tls
    ) -> None:
        """A server certificate not signed by ssl_ca fails the connect."""
        with pytest.raises(SourceUnavailable, match="certificate verify failed"):
            await read_once(make_config(ps80, ssl_ca=tls.other_ca))

    @pytest.mark.parametrize("refusal", ["unknown CA", "account needs a client certificate"])
    async def test_a_refused_connect_leaves_no_socket_open(
        self, make_config: MakeConfig, ps80: str, tls: Tls, refusal: str
    ) -> None:
        """When the read fails on TLS or on the login over TLS, its socket is already closed.

        Nothing may be left for a later loop turn: an agent that stops right after the
        failure (its loop closes) would leave the socket to the garbage collector.
        """
        if refusal == "unknown CA":
            config, error = make_config(ps80, ssl_ca=tls.other_ca), "certificate verify failed"
        else:
            config, error = make_config(ps80, user=X509_USER, ssl_ca=tls.ca), "Access denied"
        with pytest.raises(SourceUnavailable, match=error):
            await read_once(config)  # the first connect may open files it keeps (CA, loop)
        before = open_sockets()
        with pytest.raises(SourceUnavailable, match=error):
            await read_once(config)
        assert open_sockets() == before  # no await since the failure

    async def test_wrong_host_name_is_refused(
        self, make_config: MakeConfig, ps80: str, tls: Tls
    ) -> None:
        """With ssl_verify_identity a certificate that does not name the host fails the connect."""
        config = make_config(ps80, host="localhost", ssl_ca=tls.ca, ssl_verify_identity=True)
        with pytest.raises(SourceUnavailable, match="certificate verify failed"):
            await read_once(config)
        assert (
            await read_once(make_config(ps80, host="localhost", ssl_ca=tls.ca))
        ).member_id == LOCAL


class TestInnoDBClusterName:
    """The group's label is its InnoDB Cluster name in MySQL Shell's metadata (issue 32)."""

    async def test_the_metadata_names_the_group(
        self, make_config: MakeConfig, ps80: str, metadata: str
    ) -> None:
        """Of a ClusterSet's clusters, the one whose attributes name the member's group."""
        source = MySQLSource(make_config(ps80, metadata_schema=metadata))
        async with source:
            snapshot = await source.read()
        assert snapshot.view.group_label == "orders"
        assert source.cluster_name_note == ""

    async def test_no_metadata_or_no_grant_gives_no_name(
        self, make_config: MakeConfig, ps80: str, metadata: str, mariadb: MariaDB
    ) -> None:
        """Without the schema, or without SELECT on it, the read stands with no name and says why."""
        missing = MySQLSource(make_config(ps80, metadata_schema="md_absent"))
        async with missing:
            assert (await missing.read()).view.group_label == ""
        assert missing.cluster_name_note in {"no_metadata", "metadata_denied"}
        mariadb.execute(
            f"DROP DATABASE IF EXISTS md_denied; CREATE DATABASE md_denied;"
            f"CREATE TABLE md_denied.clusters AS SELECT * FROM {metadata}.clusters"
        )
        denied = MySQLSource(make_config(ps80, metadata_schema="md_denied"))
        async with denied:
            snapshot = await denied.read()
        assert snapshot.view.group_label == ""
        assert snapshot.health == SourceHealth()
        assert denied.cluster_name_note == "metadata_denied"

    async def test_a_renamed_cluster_is_read_again_after_a_minute(
        self, make_config: MakeConfig, ps80: str, metadata: str, mariadb: MariaDB
    ) -> None:
        """The name is kept CLUSTER_NAME_TTL_S, then read again (Shell's cluster.rename())."""
        now = [1000.0]
        source = MySQLSource(make_config(ps80, metadata_schema=metadata), clock=lambda: now[0])
        async with source:
            assert (await source.read()).view.group_label == "orders"
            mariadb.execute(
                f"UPDATE {metadata}.clusters SET cluster_name = 'payments'"
                " WHERE cluster_name = 'orders'"
            )
            now[0] += 30
            assert (await source.read()).view.group_label == "orders"
            now[0] += 31
            assert (await source.read()).view.group_label == "payments"


def test_cluster_name_matches_the_group_or_a_lone_cluster() -> None:
    """The cluster whose attributes name the group; a lone unnamed one; never another group's."""
    other: Record = {"CLUSTER_NAME": "dr", "ATTRIBUTES": '{"group_replication_group_name": "x"}'}
    mine: Record = {
        "CLUSTER_NAME": "orders",
        "ATTRIBUTES": f'{{"group_replication_group_name": "{GROUP.upper()}"}}',
    }
    lone: Record = {"CLUSTER_NAME": "solo", "ATTRIBUTES": "{}"}
    assert cluster_name([other, mine], GROUP) == "orders"
    assert cluster_name([other], GROUP) == ""
    assert cluster_name([lone], GROUP) == "solo"
    assert cluster_name([lone, other], GROUP) == ""
    assert cluster_name([{"CLUSTER_NAME": " bad", "ATTRIBUTES": None}], GROUP) == ""
