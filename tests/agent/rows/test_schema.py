"""The column lists, pinned against MySQL's storage/perfschema/table_replication_*.cc."""

from __future__ import annotations

import dataclasses

import pytest

from grstats.core.rows import (
    MYSQL57_STATS_COLUMNS,
    REPLICATION_GROUP_EVENTS,
    REPLICATION_GROUP_MEMBER_GTID_EXECUTED,
    REPLICATION_GROUP_MEMBER_LAG,
    REPLICATION_GROUP_MEMBER_STATS,
    REPLICATION_GROUP_MEMBER_STATUS,
    REPLICATION_GROUP_MEMBER_VIEWS,
    REPLICATION_GROUP_MEMBERS,
    REPLICATION_GROUP_STATUS,
    ROW_TABLES,
    TABLES,
    ApplierStatusRow,
    EventRow,
    GroupStatusRow,
    GtidExecutedRow,
    MemberRow,
    MemberStatsRow,
    MemberStatusRow,
    MemberViewRow,
    Row,
    Table,
)

MEMBERS_FACTS_1_1 = [
    ("CHANNEL_NAME", "CHAR(64)", False),
    ("MEMBER_ID", "CHAR(36)", False),
    ("MEMBER_HOST", "CHAR(255)", False),
    ("MEMBER_PORT", "INTEGER", True),
    ("MEMBER_STATE", "CHAR(64)", False),
    ("MEMBER_ROLE", "CHAR(64)", False),
    ("MEMBER_VERSION", "CHAR(64)", False),
    ("MEMBER_COMMUNICATION_STACK", "CHAR(64)", False),
]

STATS_FACTS_1_2 = [
    ("CHANNEL_NAME", "CHAR(64)"),
    ("VIEW_ID", "CHAR(60)"),
    ("MEMBER_ID", "CHAR(36)"),
    ("COUNT_TRANSACTIONS_IN_QUEUE", "BIGINT UNSIGNED"),
    ("COUNT_TRANSACTIONS_CHECKED", "BIGINT UNSIGNED"),
    ("COUNT_CONFLICTS_DETECTED", "BIGINT UNSIGNED"),
    ("COUNT_TRANSACTIONS_ROWS_VALIDATING", "BIGINT UNSIGNED"),
    ("TRANSACTIONS_COMMITTED_ALL_MEMBERS", "LONGTEXT"),
    ("LAST_CONFLICT_FREE_TRANSACTION", "TEXT"),
    ("COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE", "BIGINT UNSIGNED"),
    ("COUNT_TRANSACTIONS_REMOTE_APPLIED", "BIGINT UNSIGNED"),
    ("COUNT_TRANSACTIONS_LOCAL_PROPOSED", "BIGINT UNSIGNED"),
    ("COUNT_TRANSACTIONS_LOCAL_ROLLBACK", "BIGINT UNSIGNED"),
]

# replication_connection_status columns 11-19 and replication_applier_status_by_worker 7-15.
QUEUE_FACTS_6_2 = [
    "LAST_QUEUED_TRANSACTION",
    "LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP",
    "LAST_QUEUED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP",
    "LAST_QUEUED_TRANSACTION_START_QUEUE_TIMESTAMP",
    "LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP",
    "QUEUEING_TRANSACTION",
    "QUEUEING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP",
    "QUEUEING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP",
    "QUEUEING_TRANSACTION_START_QUEUE_TIMESTAMP",
]
APPLY_FACTS_6_1 = [
    "LAST_APPLIED_TRANSACTION",
    "LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP",
    "LAST_APPLIED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP",
    "LAST_APPLIED_TRANSACTION_START_APPLY_TIMESTAMP",
    "LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP",
    "APPLYING_TRANSACTION",
    "APPLYING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP",
    "APPLYING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP",
    "APPLYING_TRANSACTION_START_APPLY_TIMESTAMP",
]


def test_replication_group_members_columns() -> None:
    """replication_group_members has MySQL 8.0.27+'s 8 columns, types and NULL rules.

    As storage/perfschema/table_replication_group_members.cc defines them.
    """
    got = [(c.name, c.sql_type, c.nullable) for c in REPLICATION_GROUP_MEMBERS.columns]
    assert got == MEMBERS_FACTS_1_1


def test_replication_group_member_stats_columns() -> None:
    """replication_group_member_stats has 13 NOT NULL columns in MySQL's order.

    As storage/perfschema/table_replication_group_member_stats.cc defines them.
    """
    got = [(c.name, c.sql_type) for c in REPLICATION_GROUP_MEMBER_STATS.columns]
    assert got == STATS_FACTS_1_2
    assert not any(c.nullable for c in REPLICATION_GROUP_MEMBER_STATS.columns)


def test_mysql57_stats_is_the_first_nine_columns() -> None:
    """5.7's table is the first 9 columns; 8.0.2 appended the other 4 (WL#10380)."""
    first = REPLICATION_GROUP_MEMBER_STATS.column_names[:MYSQL57_STATS_COLUMNS]
    assert first[-1] == "LAST_CONFLICT_FREE_TRANSACTION"
    assert MYSQL57_STATS_COLUMNS == 9


def test_lag_table_uses_wl7374_names_in_mysql_order() -> None:
    """The lag table: channel, member, the WL#7374 queue and apply columns, lag, behind, stages."""
    names = list(REPLICATION_GROUP_MEMBER_LAG.column_names)
    assert names == [
        "CHANNEL_NAME",
        "MEMBER_ID",
        *QUEUE_FACTS_6_2,
        *APPLY_FACTS_6_1,
        "APPLIER_LAG_SECONDS",
        "TRANSACTIONS_BEHIND",
        "TRANSPORT_SECONDS",
        "WAITING_SECONDS",
        "APPLY_SECONDS",
    ]
    for column in REPLICATION_GROUP_MEMBER_LAG.columns:
        if column.name.endswith("_TIMESTAMP"):
            assert (column.sql_type, column.nullable) == ("TIMESTAMP(6)", False)
        if column.name.endswith("TRANSACTION"):
            assert column.sql_type == "CHAR(90)"  # 8.3+ width, Gtid::MAX_TEXT_LENGTH + 1 with tags


@pytest.mark.parametrize(
    ("row_type", "table"),
    [
        pytest.param(MemberRow, REPLICATION_GROUP_MEMBERS, id="members"),
        pytest.param(MemberStatsRow, REPLICATION_GROUP_MEMBER_STATS, id="stats"),
        pytest.param(ApplierStatusRow, REPLICATION_GROUP_MEMBER_LAG, id="lag"),
        pytest.param(GtidExecutedRow, REPLICATION_GROUP_MEMBER_GTID_EXECUTED, id="gtid-executed"),
        pytest.param(GroupStatusRow, REPLICATION_GROUP_STATUS, id="group-status"),
        pytest.param(MemberStatusRow, REPLICATION_GROUP_MEMBER_STATUS, id="member-status"),
        pytest.param(EventRow, REPLICATION_GROUP_EVENTS, id="events"),
        pytest.param(MemberViewRow, REPLICATION_GROUP_MEMBER_VIEWS, id="views"),
    ],
)
def test_row_fields_follow_the_columns(row_type: type[Row], table: Table) -> None:
    """Each row type's fields are its table's column names, lowercased, in the same order."""
    fields = [field.name for field in dataclasses.fields(row_type)]
    assert fields == [name.lower() for name in table.column_names]
    assert row_type.TABLE is table


def test_tables_by_name() -> None:
    """TABLES maps each served table's name to its definition; ROW_TABLES are the members' rows."""
    assert sorted(TABLES) == [
        "replication_group_events",
        "replication_group_member_gtid_executed",
        "replication_group_member_lag",
        "replication_group_member_stats",
        "replication_group_member_status",
        "replication_group_member_views",
        "replication_group_members",
        "replication_group_status",
    ]
    assert ROW_TABLES == (
        "replication_group_members",
        "replication_group_member_stats",
        "replication_group_member_lag",
        "replication_group_member_gtid_executed",
    )
    with pytest.raises(KeyError, match="NOPE"):
        REPLICATION_GROUP_MEMBERS.column("NOPE")
