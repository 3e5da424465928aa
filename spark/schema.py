"""The ingested table: one row per (snapshot, member), and its Spark schema ``MEMBER_ROWS``.

A snapshot is one spool record: the four tables one agent served at one moment. Ingest joins
that record's tables on MEMBER_ID into one row per member. Column names are the lower-case
versions of MySQL's (``count_transactions_in_queue``), shortened only where MySQL's are
unwieldy (``last_applied_original_commit`` for LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP).

* ``collected_at`` (the collector's clock) and ``collected_date`` (its UTC date, the partition
  column), ``agent`` (the agent asked) and ``served_at`` (the agent's clock);
* replication_group_members: ``member_*``;
* replication_group_member_stats: ``view_id`` and the counters (null when the member has no
  stats row), the two GTID texts;
* replication_group_member_lag: the applier's last applied and applying transactions and
  ``applier_lag_seconds``;
* replication_group_member_gtid_executed: ``gtid_executed``;
* derived at ingest: ``gtid_executed_count`` (GTID_COUNT) and ``gtids_ahead_of_committed_all``
  (how many GTIDs of ``gtid_executed`` are not in TRANSACTIONS_COMMITTED_ALL_MEMBERS; null when
  either text is empty);
* freshness, from the extended columns of the member's replication_group_members row:
  ``connected``, ``in_view``, ``last_seen``, ``age_ms``;
* lineage: ``segment`` (the spool segment's file name) and ``record_offset`` (the frame's byte
  offset in it);
* the group: ``group_label`` (the operator's name of the group, as the collector was given it;
  ``default`` for records written before records named their group) and ``group_name`` (GR's
  group name as the agent reported it, "" when unknown). Several groups share one table.

Timestamps are UTC; MySQL's zero timestamp is null.

WARNING: ONLY APPEND to this schema. Parquet files already written, the report and users'
queries read these names and types.

Lineage across spools: several spools (one per collector) load into one table, and their
segments have the same names, so ``segment`` alone does not identify a segment; (spool,
``segment``) does. The table has no spool column: a row's spool is that of the commit that
loaded it, found through its data file, ``data/collected_date=.../c<commit>-<segment>.parquet``,
whose commit's log entry (``_grstats/log/<commit>.json``, :class:`grstats.spark.table.Commit`)
names the spool's directory as ingest saw it.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

#: The partition column of the dataset (``data/collected_date=YYYY-MM-DD/``).
PARTITION_COLUMN = "collected_date"

#: The stats counters, in MySQL's order; all long, null when the member has no stats row.
COUNTER_COLUMNS = (
    "count_transactions_in_queue",
    "count_transactions_checked",
    "count_conflicts_detected",
    "count_transactions_rows_validating",
    "count_transactions_remote_in_applier_queue",
    "count_transactions_remote_applied",
    "count_transactions_local_proposed",
    "count_transactions_local_rollback",
)


def _field(name: str, data_type: DataType) -> StructField:
    # Every field is nullable: Spark reads Parquet files back as nullable whatever was written,
    # so a stricter schema here would differ from the one readers get.
    return StructField(name, data_type, nullable=True)


#: One row per (snapshot, member).
MEMBER_ROWS = StructType(
    [
        # the snapshot
        _field("collected_at", TimestampType()),
        _field("collected_date", DateType()),
        _field("agent", StringType()),
        _field("served_at", TimestampType()),
        # replication_group_members
        _field("member_id", StringType()),
        _field("member_host", StringType()),
        _field("member_port", IntegerType()),
        _field("member_state", StringType()),
        _field("member_role", StringType()),
        _field("member_version", StringType()),
        # replication_group_member_stats
        _field("view_id", StringType()),
        *(_field(name, LongType()) for name in COUNTER_COLUMNS),
        _field("transactions_committed_all_members", StringType()),
        _field("last_conflict_free_transaction", StringType()),
        # replication_group_member_lag
        _field("last_applied_transaction", StringType()),
        _field("last_applied_original_commit", TimestampType()),
        _field("last_applied_end_apply", TimestampType()),
        _field("applying_transaction", StringType()),
        _field("applying_original_commit", TimestampType()),
        _field("applier_lag_seconds", DoubleType()),
        # replication_group_member_gtid_executed
        _field("gtid_executed", StringType()),
        # derived at ingest
        _field("gtid_executed_count", LongType()),
        _field("gtids_ahead_of_committed_all", LongType()),
        # freshness (extended columns)
        _field("connected", BooleanType()),
        _field("in_view", BooleanType()),
        _field("last_seen", TimestampType()),
        _field("age_ms", LongType()),
        # lineage
        _field("segment", StringType()),
        _field("record_offset", LongType()),
        # the group (appended after the first release)
        _field("group_label", StringType()),
        _field("group_name", StringType()),
    ]
)

#: The columns appended after the first release, and the value of rows written before them
#: (:func:`grstats.spark.table.read_member_rows` fills them in for older data files).
LATER_COLUMNS: dict[str, str] = {"group_label": "default", "group_name": ""}

#: The column names of MEMBER_ROWS, in order.
MEMBER_ROW_COLUMNS: tuple[str, ...] = tuple(MEMBER_ROWS.fieldNames())


# -- rollups (grstats.spark.rollup): Spark's mirrors of ARROW_MEMBER_ROLLUPS and
# ARROW_GROUP_ROLLUPS, field for field (a test holds them equal). ONLY APPEND, as above.

_ROLLUP_STATES = ("online", "recovering", "unreachable", "error", "offline")
_ROLLUP_COUNTERS = ("applied", "proposed", "checked", "conflicts", "rollback")
_ROLLUP_GAUGES = ("cert_queue", "applier_queue", "rows_validating", "lag_seconds", "gtids_ahead")
_ROLLUP_SKETCHED = ("cert_queue", "applier_queue", "lag_seconds", "gtids_ahead")
#: A sketch: bucket key (grstats.spark.sketch) -> count of values.
SKETCH_TYPE = MapType(LongType(), LongType(), valueContainsNull=True)

#: One row per (group_label, member_id, UTC minute, spool segment): a member's partial.
MEMBER_ROLLUPS = StructType(
    [
        _field("group_label", StringType()),
        _field("group_name", StringType()),
        _field("group_name_at", TimestampType()),
        _field("member_id", StringType()),
        _field("minute", TimestampType()),
        _field("first_at", TimestampType()),
        _field("last_at", TimestampType()),
        _field("snapshots", LongType()),
        _field("member_host", StringType()),
        _field("member_port", IntegerType()),
        _field("first_state", StringType()),
        _field("first_connected", BooleanType()),
        _field("first_throttling", BooleanType()),
        _field("last_state", StringType()),
        _field("last_connected", BooleanType()),
        _field("last_throttling", BooleanType()),
        _field(
            "changes",
            ArrayType(
                StructType(
                    [
                        _field("at", TimestampType()),
                        _field("member_state", StringType()),
                        _field("connected", BooleanType()),
                        _field("throttling", BooleanType()),
                    ]
                ),
                containsNull=True,
            ),
        ),
        _field("held_s", DoubleType()),
        *(_field(f"{state}_s", DoubleType()) for state in _ROLLUP_STATES),
        _field("not_connected_s", DoubleType()),
        _field("throttling_s", DoubleType()),
        _field("elapsed_s", DoubleType()),
        *(_field(name, LongType()) for name in _ROLLUP_COUNTERS),
        *(_field(f"first_{name}", LongType()) for name in _ROLLUP_COUNTERS),
        *(_field(f"last_{name}", LongType()) for name in _ROLLUP_COUNTERS),
        *(
            field
            for name in _ROLLUP_GAUGES
            for field in (
                _field(f"{name}_max", DoubleType() if name == "lag_seconds" else LongType()),
                _field(f"{name}_sum", DoubleType()),
                _field(f"{name}_n", LongType()),
            )
        ),
        *(_field(f"{name}_sketch", SKETCH_TYPE) for name in _ROLLUP_SKETCHED),
    ]
)

#: One row per (group_label, UTC minute, spool segment): the group's partial.
GROUP_ROLLUPS = StructType(
    [
        _field("group_label", StringType()),
        _field("minute", TimestampType()),
        _field("first_at", TimestampType()),
        _field("last_at", TimestampType()),
        _field("snapshots", LongType()),
        _field("held_s", DoubleType()),
        _field("throttling_s", DoubleType()),
        _field("first_throttling", BooleanType()),
        _field("last_throttling", BooleanType()),
        _field("rows_validating_sum", DoubleType()),
        _field("rows_validating_n", LongType()),
        _field("rows_validating_max", LongType()),
        _field("rows_validating_x_mean", DoubleType()),
        _field("rows_validating_y_mean", DoubleType()),
        _field("rows_validating_cxy", DoubleType()),
        _field("rows_validating_m2x", DoubleType()),
        *(_field(f"{name}_sketch", SKETCH_TYPE) for name in _ROLLUP_SKETCHED),
    ]
)
