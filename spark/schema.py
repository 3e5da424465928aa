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
* the group: ``group_label`` (the group's name: the collector's label of it when given, else,
  for its one group of ``--node``, the label the agent answered, ``default`` when none; and
  ``default`` for records written before records named their group), ``group_name`` (GR's
  group name as the agent reported it, "" when unknown) and ``agent_group_label`` (the group's
  label as the agent answered it, its InnoDB Cluster name or the agents' ``group_label``; ""
  when none, and for records written before the key). Several groups share one table;
* appended after them, the lag by stage of replication_group_member_lag, in seconds (see
  ``grstats.core.rows.applier.stage_seconds``): ``transport_seconds`` (the last queued
  transaction's original commit to the end of its queueing), ``waiting_seconds`` (the last
  applied one's wait from there to the start of its apply) and ``apply_seconds`` (its apply).
  Null where a time is unknown: always on MySQL 5.7 (no WL#7374 timestamps), from an agent
  older than the columns, and in data files written before them (readers get null).

Timestamps are UTC; MySQL's zero timestamp is null.

``MEMBER_ROWS`` is what Spark makes of :data:`grstats.spark.decode.ARROW_MEMBER_ROWS`, the Arrow
schema the executors write (and the rollups' schemas likewise of :mod:`grstats.spark.rollup`'s):
the columns are defined once, in Arrow.

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

from pyspark.sql.pandas.types import from_arrow_schema

from grstats.collector.records import DEFAULT_GROUP_LABEL
from grstats.spark.decode import ARROW_MEMBER_ROWS
from grstats.spark.rollup import ARROW_GROUP_ROLLUPS, ARROW_MEMBER_ROLLUPS

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

# The Spark schemas are what Spark makes of the Arrow schemas the executors write
# (:data:`grstats.spark.decode.ARROW_MEMBER_ROWS`, :mod:`grstats.spark.rollup`'s two), field
# for field: one definition each, nothing to keep equal. Every Arrow field is nullable, as
# Spark reads Parquet files back whatever was written; the timestamps are UTC (``tz="UTC"``),
# which Spark takes as TimestampType (``prefer_timestamp_ntz`` only concerns timestamps
# without a zone).

#: One row per (snapshot, member).
MEMBER_ROWS = from_arrow_schema(ARROW_MEMBER_ROWS)

#: The columns appended after the first release, and the value of rows written before them
#: (:func:`grstats.spark.table.read_member_rows` fills them in for older data files). The
#: columns appended since whose rows written before them read null are not listed.
LATER_COLUMNS: dict[str, str] = {
    "group_label": DEFAULT_GROUP_LABEL,
    "group_name": "",
    "agent_group_label": "",
}

#: The column names of MEMBER_ROWS, in order.
MEMBER_ROW_COLUMNS: tuple[str, ...] = tuple(MEMBER_ROWS.fieldNames())


# -- rollups (grstats.spark.rollup). ONLY APPEND, as above (to the Arrow schemas).

#: One row per (group_label, member_id, UTC minute, spool segment): a member's partial.
MEMBER_ROLLUPS = from_arrow_schema(ARROW_MEMBER_ROLLUPS)

#: One row per (group_label, UTC minute, spool segment): the group's partial.
GROUP_ROLLUPS = from_arrow_schema(ARROW_GROUP_ROLLUPS)
