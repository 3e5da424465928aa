"""Pure conversions of the MySQL source: versions, timestamps, roles, workers, variables, lag."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from grstats.agent.sources.mysql_records import (
    APPLY_COLUMNS,
    FLOW_CONTROL_VARIABLES,
    QUEUE_COLUMNS,
    VARIABLE_NAMES,
    VARIABLE_VALUE_MAX,
    applier_row,
    is_truncated,
    member_rows,
    parse_version,
    server_settings,
    server_variables,
    stats_row,
    timestamp_us,
    transactions_behind,
    variable_map,
)
from grstats.core.errors import SourceDataError
from grstats.core.gtid import GtidSet
from grstats.core.model import FlowControlSettings, ServerSettings
from grstats.core.rows import ApplierStatusRow

A = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
B = "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"
C = "cccccccc-cccc-cccc-cccc-cccccccccccc"
ZERO = "0000-00-00 00:00:00.000000"


def member(member_id: str, state: str) -> dict[str, object]:
    """Return a 5.7 replication_group_members record (no role, version or stack)."""
    return {
        "CHANNEL_NAME": "group_replication_applier",
        "MEMBER_ID": member_id,
        "MEMBER_HOST": "h",
        "MEMBER_PORT": 3306,
        "MEMBER_STATE": state,
    }


def worker(worker_id: int, **times: Any) -> dict[str, object]:
    """Return a worker record with empty transactions and zero times, overridden by ``times``."""
    record: dict[str, object] = {
        name: ZERO if name.endswith("_TIMESTAMP") else "" for name in APPLY_COLUMNS
    }
    record["WORKER_ID"] = worker_id
    record.update({name.upper(): value for name, value in times.items()})
    return record


class TestVersion:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [("8.0.36", (8, 0, 36)), ("5.7.44-log", (5, 7, 44)), ("8.4.0-commercial", (8, 4, 0))],
    )
    def test_parse(self, text: str, expected: tuple[int, int, int]) -> None:
        """The version's numbers are read, whatever suffix follows."""
        assert parse_version(text) == expected

    def test_garbage(self) -> None:
        """Text that is not a version is a data error naming global_variables.version."""
        with pytest.raises(SourceDataError, match=r"^global_variables\.version: 'eight' is not"):
            parse_version("eight")


class TestTimestamp:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            (ZERO, 0),
            ("0000-00-00 00:00:00", 0),
            ("1970-01-01 00:00:00.000001", 1),
            ("2020-10-26 08:41:30.1", 1_603_701_690_100_000),
            ("2020-10-26 08:41:30", 1_603_701_690_000_000),
            ("2038-01-19 03:14:07.999999", 2_147_483_647_999_999),
        ],
    )
    def test_text_as_utc_micros(self, text: str, expected: int) -> None:
        """TIMESTAMP(6) text read in UTC gives exact µs; the zero timestamp gives 0."""
        assert timestamp_us("t", "C", text) == expected

    def test_datetime(self) -> None:
        """A naive datetime is taken as UTC."""
        assert timestamp_us("t", "C", datetime(1970, 1, 1, 0, 0, 1)) == 1_000_000  # noqa: DTZ001
        assert timestamp_us("t", "C", datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)) == 1_000_000

    @pytest.mark.parametrize("value", ["2020-02-30 00:00:00", "yesterday", None, 5])
    def test_invalid(self, value: object) -> None:
        """A value that is no TIMESTAMP(6) is a data error naming table and column."""
        with pytest.raises(SourceDataError, match=r"^tbl\.COL: .* is not a TIMESTAMP\(6\)"):
            timestamp_us("tbl", "COL", value)


class TestRoles57:
    def test_single_primary(self) -> None:
        """The primary's uuid marks it PRIMARY, other live members SECONDARY, others ''."""
        records = [member(C, "OFFLINE"), member(B, "UNREACHABLE"), member(A, "ONLINE")]
        rows = member_rows(records, single_primary_mode=True, primary_member=A.upper())
        assert [(row.member_id, row.member_role) for row in rows] == [
            (A, "PRIMARY"),
            (B, "SECONDARY"),
            (C, ""),
        ]

    def test_multi_primary(self) -> None:
        """In multi-primary mode every ONLINE or RECOVERING member is PRIMARY."""
        records = [member(A, "ONLINE"), member(B, "RECOVERING"), member(C, "ERROR")]
        rows = member_rows(records, single_primary_mode=False, primary_member="")
        assert [row.member_role for row in rows] == ["PRIMARY", "PRIMARY", ""]

    def test_primary_unknown(self) -> None:
        """In single-primary mode with no primary known (an election), roles are ''."""
        rows = member_rows([member(A, "ONLINE")], single_primary_mode=True, primary_member="")
        assert rows[0].member_role == ""

    def test_null_state(self) -> None:
        """A NULL MEMBER_STATE is a data error naming the column, not a crash deriving the role."""
        record = member(A, "ONLINE")
        record["MEMBER_STATE"] = None
        with pytest.raises(
            SourceDataError, match=r"^replication_group_members\.MEMBER_STATE: None"
        ):
            member_rows([record], single_primary_mode=True, primary_member=A)


class TestApplierChoice:
    def test_ties_go_to_the_lowest_worker(self) -> None:
        """Equal end-of-apply times pick the first worker (the lowest WORKER_ID)."""
        end = "2020-01-01 00:00:01.000000"
        workers = [
            worker(1, last_applied_transaction=f"{A}:1", last_applied_transaction_end_apply_timestamp=end),
            worker(2, last_applied_transaction=f"{A}:2", last_applied_transaction_end_apply_timestamp=end),
        ]  # fmt: skip
        assert applier_row(A, None, workers).last_applied_transaction == f"{A}:1"

    def test_applying_without_times(self) -> None:
        """Without commit times the first worker that applies anything gives APPLYING_*."""
        workers = [worker(1), worker(2, applying_transaction=f"{A}:7")]
        row = applier_row(A, None, workers)
        assert row.applying_transaction == f"{A}:7"
        assert row.applying_transaction_original_commit_timestamp == 0

    def test_idle_channel(self) -> None:
        """No rows at all (GR stopped) give the idle defaults with the member's id."""
        assert applier_row(A, None, []) == ApplierStatusRow(member_id=A)

    def test_anonymous(self) -> None:
        """ANONYMOUS transactions are kept as MySQL shows them."""
        workers = [worker(1, last_applied_transaction="ANONYMOUS")]
        assert applier_row(A, None, workers).last_applied_transaction == "ANONYMOUS"

    def test_null_time(self) -> None:
        """A NULL time is a data error naming the table, the column and the worker."""
        workers = [worker(3, applying_transaction_start_apply_timestamp=None)]
        with pytest.raises(
            SourceDataError,
            match=r"^replication_applier_status_by_worker\.APPLYING_TRANSACTION_START_APPLY_TIMESTAMP: None .*WORKER_ID=3",
        ):
            applier_row(A, None, workers)


class TestVariables:
    def base(self, **extra: str) -> dict[str, str]:
        """Return the variables every server has, plus ``extra``."""
        return {"server_uuid": A, "version": "8.0.36", "gtid_executed": "", **extra}

    @pytest.mark.parametrize(
        ("text", "expected"),
        [("ON", True), ("on", True), ("1", True), ("OFF", False), ("0", False)],
    )
    def test_single_primary_mode(self, text: str, expected: bool) -> None:
        """group_replication_single_primary_mode reads ON/OFF and 1/0."""
        variables = server_variables(self.base(group_replication_single_primary_mode=text))
        assert variables.single_primary_mode is expected

    def test_member_weight(self) -> None:
        """group_replication_member_weight reads 0..100; another value names the variable."""
        assert server_variables(self.base(group_replication_member_weight="70")).member_weight == 70
        with pytest.raises(
            SourceDataError, match=r"group_replication_member_weight: '101' is not in 0..100"
        ):
            server_variables(self.base(group_replication_member_weight="101"))

    def test_without_group_replication(self) -> None:
        """Without the plugin's variables the group is unnamed and single-primary by default."""
        variables = server_variables(self.base())
        assert (variables.group_name, variables.single_primary_mode) == ("", True)
        assert variables.member_weight is None
        assert variables.has_transaction_timestamps

    def test_bad_mode(self) -> None:
        """Any other single-primary value is a data error naming the variable."""
        with pytest.raises(
            SourceDataError, match=r"group_replication_single_primary_mode: 'maybe'"
        ):
            server_variables(self.base(group_replication_single_primary_mode="maybe"))

    def test_bad_server_uuid(self) -> None:
        """A server_uuid that is no UUID is a data error naming it."""
        with pytest.raises(
            SourceDataError, match=r"^global_variables\.server_uuid: 'x' is not a UUID"
        ):
            server_variables({**self.base(), "server_uuid": "x"})

    def test_null_value(self) -> None:
        """A NULL VARIABLE_VALUE is a data error naming the variable."""
        with pytest.raises(
            SourceDataError, match=r"^global_variables\.gtid_executed: VARIABLE_VALUE None"
        ):
            variable_map("global_variables", [("GTID_EXECUTED", None)])

    def test_names_are_case_insensitive(self) -> None:
        """Variable names are matched in lower case, as 5.7 and 8.0 list them."""
        assert variable_map("global_variables", [("Server_UUID", A)]) == {"server_uuid": A}

    def test_truncation_length(self) -> None:
        """A value as long as VARCHAR(1024) may have been cut; a shorter one was not."""
        assert is_truncated("x" * VARIABLE_VALUE_MAX)
        assert not is_truncated("x" * (VARIABLE_VALUE_MAX - 1))


class TestStats:
    def test_absent_row_is_mysql_default(self) -> None:
        """No row for the member gives MySQL's row before START GROUP_REPLICATION."""
        assert stats_row(None).values()[1:] == ("", "", 0, 0, 0, 0, "", "", 0, 0, 0, 0)

    def test_57_row_keeps_defaults_for_missing_columns(self) -> None:
        """A 9-column 5.7 row leaves the four 8.0 counters at 0."""
        record: dict[str, object] = {
            "CHANNEL_NAME": "group_replication_applier",
            "VIEW_ID": "1:1",
            "MEMBER_ID": A,
            "COUNT_TRANSACTIONS_IN_QUEUE": 1,
            "COUNT_TRANSACTIONS_CHECKED": 2,
            "COUNT_CONFLICTS_DETECTED": 3,
            "COUNT_TRANSACTIONS_ROWS_VALIDATING": 4,
            "TRANSACTIONS_COMMITTED_ALL_MEMBERS": f"{B}:1-3,\n{A}:1",
            "LAST_CONFLICT_FREE_TRANSACTION": f"{A}:1",
        }
        row = stats_row(record)
        assert row.values()[3:7] == (1, 2, 3, 4)
        assert row.values()[9:] == (0, 0, 0, 0)
        assert row.transactions_committed_all_members == f"{A}:1,\n{B}:1-3"  # MySQL's order


def connection(received: object) -> dict[str, object]:
    """Return a group_replication_applier connection-status record with ``received``."""
    return {"CHANNEL_NAME": "group_replication_applier", "RECEIVED_TRANSACTION_SET": received}


class TestTransactionsBehind:
    @pytest.mark.parametrize(
        ("received", "executed", "expected"),
        [
            (f"{A}:1-100", f"{A}:1-90", 10),
            (f"{A}:1-100,\n{B}:1-50:61-70", f"{A}:1-90,\n{B}:1-40,\n{C}:1-5", 10 + 10 + 10),
            (f"{A}:1-10:audit:1-5", f"{A}:1-10", 5),  # 8.4's tagged GTIDs count too
            (f"{A}:1-90", f"{A}:1-100,\n{B}:1-3", 0),  # all applied, and local transactions
            ("", f"{A}:1-5", 0),  # nothing received since the channel started
        ],
    )
    def test_received_minus_executed(self, received: str, executed: str, expected: int) -> None:
        """It is the GTID count of RECEIVED_TRANSACTION_SET minus gtid_executed."""
        assert transactions_behind(connection(received), GtidSet.parse(executed)) == expected

    def test_no_channel(self) -> None:
        """Without the applier channel's row (GR never started) it is unknown: None."""
        assert transactions_behind(None, GtidSet.parse(f"{A}:1-5")) is None

    @pytest.mark.parametrize(
        ("record", "reason"),
        [
            (connection(f"{A}:0"), f"'{A}:0' is not a GTID set"),
            (connection("garbage"), "'garbage' is not a GTID set"),
            (connection(None), "None is not allowed"),
            (connection(b"bytes"), "b'bytes' is not text"),
            ({"CHANNEL_NAME": "group_replication_applier"}, "the column is missing"),
        ],
    )
    def test_bad_set(self, record: dict[str, object], reason: str) -> None:
        """A malformed or missing set is a data error naming the column and showing the value."""
        with pytest.raises(SourceDataError) as caught:
            transactions_behind(record, GtidSet())
        message = str(caught.value)
        assert message.startswith("replication_connection_status.RECEIVED_TRANSACTION_SET: ")
        assert reason in message

    def test_not_an_applier_column(self) -> None:
        """RECEIVED_TRANSACTION_SET and TRANSACTIONS_BEHIND are not among the WL#7374 columns."""
        assert "TRANSACTIONS_BEHIND" not in APPLY_COLUMNS + QUEUE_COLUMNS
        assert "RECEIVED_TRANSACTION_SET" not in APPLY_COLUMNS + QUEUE_COLUMNS


ALL_FLOW_CONTROL = {
    "group_replication_flow_control_mode": "DISABLED",
    "group_replication_flow_control_certifier_threshold": "1000",
    "group_replication_flow_control_applier_threshold": "2000",
    "group_replication_flow_control_min_quota": "3",
    "group_replication_flow_control_min_recovery_quota": "4",
    "group_replication_flow_control_max_quota": "2147483647",
    "group_replication_flow_control_member_quota_percent": "60",
    "group_replication_flow_control_period": "60",
    "group_replication_flow_control_hold_percent": "0",
    "group_replication_flow_control_release_percent": "1000",
}

#: (variable, value, the message after "global_variables.<variable>: ").
BAD_SETTINGS = [
    ("read_only", "maybe", "'maybe' is not ON, OFF, 1 or 0"),
    ("super_read_only", "2", "'2' is not ON, OFF, 1 or 0"),
    ("group_replication_flow_control_mode", "FAST", "'FAST' is not QUOTA or DISABLED"),
    ("group_replication_flow_control_mode", "", "'' is not QUOTA or DISABLED"),
    ("group_replication_flow_control_certifier_threshold", "abc", "'abc' is not an integer"),
    ("group_replication_flow_control_applier_threshold", "1.5", "'1.5' is not an integer"),
    ("group_replication_flow_control_min_quota", " 5", "' 5' is not an integer"),
    ("group_replication_flow_control_min_recovery_quota", "1_000", "'1_000' is not an integer"),
    ("group_replication_flow_control_max_quota", "-1", "-1 is not in 0..2147483647"),
    (
        "group_replication_flow_control_max_quota",
        "2147483648",
        "2147483648 is not in 0..2147483647",
    ),
    ("group_replication_flow_control_member_quota_percent", "101", "101 is not in 0..100"),
    ("group_replication_flow_control_period", "0", "0 is not in 1..60"),
    ("group_replication_flow_control_hold_percent", "+5", "'+5' is not an integer"),
    ("group_replication_flow_control_release_percent", "1001", "1001 is not in 0..1000"),
]


class TestServerSettings:
    def test_all_read(self) -> None:
        """Both flags and the ten flow-control variables are read as the server shows them."""
        settings = server_settings({"read_only": "ON", "super_read_only": "1", **ALL_FLOW_CONTROL})
        assert settings == ServerSettings(
            read_only=True,
            super_read_only=True,
            flow_control=FlowControlSettings(
                mode="DISABLED",
                certifier_threshold=1000,
                applier_threshold=2000,
                min_quota=3,
                min_recovery_quota=4,
                max_quota=2147483647,
                member_quota_percent=60,
                period=60,
                hold_percent=0,
                release_percent=1000,
            ),
        )

    @pytest.mark.parametrize(
        ("text", "expected"),
        [("ON", True), ("on", True), ("1", True), ("OFF", False), ("0", False)],
    )
    def test_flags(self, text: str, expected: bool) -> None:
        """read_only and super_read_only read ON/OFF and 1/0, each from its own variable."""
        other = "OFF" if expected else "ON"
        assert server_settings({"read_only": text, "super_read_only": other}) == ServerSettings(
            read_only=expected, super_read_only=not expected
        )
        assert server_settings({"read_only": other, "super_read_only": text}) == ServerSettings(
            read_only=not expected, super_read_only=expected
        )

    def test_without_group_replication(self) -> None:
        """Without the plugin's variables (and before 5.7.8's super_read_only) MySQL's defaults."""
        assert server_settings({"read_only": "ON"}) == ServerSettings(read_only=True)

    def test_mysql57_before_5720(self) -> None:
        """5.7 before 5.7.20 has only mode and the two thresholds: the rest are the defaults."""
        settings = server_settings(
            {
                "group_replication_flow_control_mode": "DISABLED",
                "group_replication_flow_control_certifier_threshold": "100",
                "group_replication_flow_control_applier_threshold": "200",
            }
        )
        assert settings.flow_control == FlowControlSettings(
            mode="DISABLED", certifier_threshold=100, applier_threshold=200
        )

    def test_mode_case(self) -> None:
        """The mode is read whatever its case, and kept as MySQL spells it."""
        settings = server_settings({"group_replication_flow_control_mode": "disabled"})
        assert settings.flow_control.mode == "DISABLED"

    @pytest.mark.parametrize(("name", "value", "reason"), BAD_SETTINGS)
    def test_bad_value(self, name: str, value: str, reason: str) -> None:
        """A value the variable cannot take is a data error naming it and showing the value."""
        with pytest.raises(SourceDataError) as caught:
            server_settings({name: value})
        assert str(caught.value) == f"global_variables.{name}: {reason}"

    def test_variables_are_asked_for(self) -> None:
        """The one variables query asks for both flags and all ten flow-control variables."""
        assert {"read_only", "super_read_only", *FLOW_CONTROL_VARIABLES.values()} <= set(
            VARIABLE_NAMES
        )
        assert len(FLOW_CONTROL_VARIABLES) == 10

    def test_in_server_variables(self) -> None:
        """server_variables carries the settings it read."""
        variables = server_variables(
            {"server_uuid": A, "version": "5.7.44", "gtid_executed": "", "super_read_only": "ON"}
        )
        assert variables.server == ServerSettings(super_read_only=True)
