"""Rendering like the mysql client (boxed and \\G) and as JSON, pinned to exact text."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from grstats.core.rows import (
    REPLICATION_GROUP_MEMBER_LAG,
    REPLICATION_GROUP_MEMBER_STATS,
    REPLICATION_GROUP_MEMBERS,
    ApplierStatusRow,
    MemberRow,
    MemberStatsRow,
    render,
    render_json,
    render_table,
    render_vertical,
)
from grstats.core.rows.zone import parse_time_zone

ID1 = "d8a706aa-0000-1111-2222-333344445555"
ID2 = "e14043d7-0000-1111-2222-333344445555"
MEMBERS = [
    MemberRow(
        member_id=ID1,
        member_host="example1",
        member_port=4410,
        member_state="ONLINE",
        member_role="PRIMARY",
        member_version="9.4.0",
        member_communication_stack="XCom",
    ),
    MemberRow(member_id=ID2, member_host="h2", member_state="UNREACHABLE", member_role="SECONDARY"),
]
COLUMNS = REPLICATION_GROUP_MEMBERS.columns


def test_boxed_table() -> None:
    """The boxed layout: header left-aligned, numbers right-aligned, NULL, footer with time."""
    expected = """\
+---------------------------+--------------------------------------+-------------+-------------+--------------+-------------+----------------+----------------------------+
| CHANNEL_NAME              | MEMBER_ID                            | MEMBER_HOST | MEMBER_PORT | MEMBER_STATE | MEMBER_ROLE | MEMBER_VERSION | MEMBER_COMMUNICATION_STACK |
+---------------------------+--------------------------------------+-------------+-------------+--------------+-------------+----------------+----------------------------+
| group_replication_applier | d8a706aa-0000-1111-2222-333344445555 | example1    |        4410 | ONLINE       | PRIMARY     | 9.4.0          | XCom                       |
| group_replication_applier | e14043d7-0000-1111-2222-333344445555 | h2          |        NULL | UNREACHABLE  | SECONDARY   |                |                            |
+---------------------------+--------------------------------------+-------------+-------------+--------------+-------------+----------------+----------------------------+
2 rows in set (0.01 sec)
"""
    assert render_table(COLUMNS, [row.values() for row in MEMBERS], elapsed_s=0.012) == expected


def test_vertical_layout_keeps_mysql_line_break() -> None:
    """The \\G layout right-aligns names; the GTID set's ',\\n' breaks the line as in mysql."""
    row = MemberStatsRow(
        view_id="16036502905383892:9",
        member_id=ID1,
        count_transactions_checked=10154,
        transactions_committed_all_members=f"{ID1}:1-18,{ID2}:1-1588",
    )
    text = render_vertical(REPLICATION_GROUP_MEMBER_STATS.columns, [row.values()])
    lines = text.splitlines()
    assert lines[0] == "*************************** 1. row ***************************"
    assert lines[1] == "                              CHANNEL_NAME: group_replication_applier"
    assert lines[5] == "                COUNT_TRANSACTIONS_CHECKED: 10154"
    assert lines[8] == f"        TRANSACTIONS_COMMITTED_ALL_MEMBERS: {ID1}:1-18,"
    assert lines[9] == f"{ID2}:1-1588"
    assert lines[-1] == "1 row in set"


def test_footer_words() -> None:
    """The footer reads 'Empty set', '1 row in set' or 'N rows in set', as mysql words it."""
    assert render_table(COLUMNS, []) == "Empty set\n"
    assert render_vertical(COLUMNS, [MEMBERS[0].values()]).endswith("1 row in set\n")
    assert render_table(COLUMNS, [r.values() for r in MEMBERS]).endswith("2 rows in set\n")


def test_json_keys_and_types() -> None:
    """JSON is a list of objects with exact column names: ints as numbers, null, text times."""
    lag = ApplierStatusRow(
        member_id=ID1,
        last_applied_transaction=f"{ID1}:5",
        last_applied_transaction_original_commit_timestamp=1_700_000_000_000_000,
        last_applied_transaction_end_apply_timestamp=1_700_000_000_250_000,
        applying_transaction=f"{ID1}:6",
        applying_transaction_original_commit_timestamp=1_700_000_000_000_000,
    ).with_lag(1_700_000_000_250_000)
    members = json.loads(render_json(COLUMNS, [row.values() for row in MEMBERS]))
    assert list(members[0]) == list(REPLICATION_GROUP_MEMBERS.column_names)
    assert members[0]["MEMBER_PORT"] == 4410
    assert members[1]["MEMBER_PORT"] is None
    [parsed] = json.loads(render_json(REPLICATION_GROUP_MEMBER_LAG.columns, [lag.values()]))
    assert parsed["LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP"] == "2023-11-14T22:13:20.250000Z"
    assert parsed["APPLYING_TRANSACTION_START_APPLY_TIMESTAMP"] is None  # 0: not set
    assert parsed["APPLIER_LAG_SECONDS"] == 0.25


def test_timestamps_in_the_zone_asked_and_json_in_utc() -> None:
    """Table and \\G show TIMESTAMP(6) in the zone given, as a session's time_zone; JSON is UTC."""
    lag = ApplierStatusRow(
        member_id=ID1, last_applied_transaction_end_apply_timestamp=1_700_000_000_250_000
    )
    columns, rows = REPLICATION_GROUP_MEMBER_LAG.columns, [lag.values()]
    plus_two = parse_time_zone("+02:00")
    name = "LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP"
    assert f"{name}: 2023-11-15 00:13:20.250000" in render(columns, rows, "vertical", zone=plus_two)
    assert "| 2023-11-15 00:13:20.250000 " in render(columns, rows, "table", zone=plus_two)
    assert "| 2023-11-14 22:13:20.250000 " in render(columns, rows, "table")
    assert "| 0000-00-00 00:00:00.000000 " in render(columns, rows, "table", zone=plus_two)
    [parsed] = json.loads(render(columns, rows, "json", zone=plus_two))
    assert datetime.fromisoformat(parsed[name]) == datetime(
        2023, 11, 14, 22, 13, 20, 250_000, tzinfo=UTC
    )


def test_decimal_prints_six_places_in_tables() -> None:
    """APPLIER_LAG_SECONDS prints as DECIMAL(20,6) in the table layouts."""
    row = ApplierStatusRow(member_id=ID1, applier_lag_seconds=0.25)
    assert "APPLIER_LAG_SECONDS: 0.250000" in render_vertical(
        REPLICATION_GROUP_MEMBER_LAG.columns, [row.values()]
    )


def test_unknown_format_names_the_value() -> None:
    """Asking for a format that does not exist is a ValueError naming it."""
    assert render(COLUMNS, [], "json") == "[]\n"
    with pytest.raises(ValueError, match=r"^format: 'yaml'"):
        render(COLUMNS, [], "yaml")
