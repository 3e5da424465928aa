"""Per-snapshot facts about each member: what it showed, and what changed since its last snapshot.

Two transforms over the ingested member rows (``spark.schema.MEMBER_ROWS``):

* :func:`gauges`, row by row (no ordering): the member's state, its freshness, and its queues,
  lag, ROWS_VALIDATING and GTIDs ahead, kept only for *sampled* rows: rows of a member whose
  agent is heard (CONNECTED) and that is ONLINE or RECOVERING. A member that is down or not
  heard shows frozen values; they would only repeat its last moment.
* :func:`member_steps`, with window functions over each member's snapshots in time order:
  counter deltas (a counter that goes down was reset, e.g. by a restart, so the delta is the
  new value: what was counted since the reset), the time each snapshot's state is held (until
  the member's next snapshot, at most ``max_gap_s``, so that a collector outage is not
  counted as time in a state), and flags where the state, connectedness or flow-control
  throttling changes, and the segments (runs without a change) they start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)
from pyspark.sql.types import (
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
)

from grstats.spark.report.frame import conform, epoch_seconds, schema

# The states (MEMBER_STATE values in report order), the sampled states, and the counters and
# gauges (output name -> column of MEMBER_ROWS) have one definition, with the rollups ingest
# writes, which must agree with the report (grstats.spark.rollup imports no pyspark).
from grstats.spark.rollup import COUNTERS, GAUGES, SAMPLED_STATES

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

_GAUGE_TYPES = {
    "cert_queue": LongType(),
    "applier_queue": LongType(),
    "rows_validating": LongType(),
    "lag_seconds": DoubleType(),
    "gtids_ahead": LongType(),
}

#: Output of :func:`gauges`: one row per (snapshot, member).
GAUGES_SCHEMA = schema(
    ("group_label", StringType()),
    ("member_id", StringType()),
    ("collected_at", TimestampType()),
    ("member_host", StringType()),
    ("member_port", IntegerType()),
    ("member_state", StringType()),
    ("connected", BooleanType()),
    ("sampled", BooleanType()),
    ("throttling", BooleanType()),
    *((name, _GAUGE_TYPES[name]) for name in GAUGES),
    *((name, LongType()) for name in COUNTERS),
)

#: Output of :func:`member_steps`: GAUGES_SCHEMA's identity columns plus what changed.
STEPS = schema(
    ("group_label", StringType()),
    ("member_id", StringType()),
    ("collected_at", TimestampType()),
    ("member_host", StringType()),
    ("member_port", IntegerType()),
    ("member_state", StringType()),
    ("connected", BooleanType()),
    ("sampled", BooleanType()),
    ("throttling", BooleanType()),
    *((name, _GAUGE_TYPES[name]) for name in GAUGES),
    ("held_s", DoubleType()),
    ("elapsed_s", DoubleType()),
    *((f"d_{name}", LongType()) for name in COUNTERS),
    ("first", BooleanType()),
    ("last", BooleanType()),
    ("changed", BooleanType()),
    ("segment", LongType()),
)


def member_partitioned(rows: DataFrame) -> DataFrame:
    """Return ``rows`` with a ``member_key`` column, hash-partitioned one member per partition.

    A member is a (group_label, member_id) pair: a fleet's groups are computed together, and
    nothing stops two groups' members from sharing an id (copies of one data directory).
    Each member gets an integer key chosen so that Spark's hash partitioning (Murmur3, as
    ``repartition`` uses) sends it to a partition of its own: members are spread evenly over
    the cores, where hashing the UUIDs into as many partitions as cores left one core with
    more members than the others, and spilling (docs/benchmarks.md, "Spark report"). A small
    integer is also far cheaper to sort on than a 36-character UUID whose first bytes repeat
    on every row of the member. Finding the members reads two columns; finding the keys is a
    tiny job.
    """
    ident = F.concat_ws("\u0000", F.coalesce(F.col("group_label"), F.lit("")), F.col("member_id"))
    found = rows.filter(F.col("member_id").isNotNull()).select(ident.alias("ident")).distinct()
    ids = sorted(r["ident"] for r in found.collect())
    if not ids:
        return rows.withColumn("member_key", F.lit(None).cast(IntegerType()))
    keys = partition_keys(rows.sparkSession, len(ids))
    pairs = [F.lit(value) for pair in zip(ids, keys, strict=True) for value in pair]
    keyed = rows.withColumn("member_key", F.create_map(*pairs)[ident])
    return keyed.repartition(len(ids), "member_key")


def partition_keys(spark: SparkSession, partitions: int) -> list[int]:
    """Return one integer per partition 0..``partitions``-1 that Spark hash-partitions there."""
    candidates = 64 * partitions
    while True:
        found = (
            spark.range(candidates)
            .select(F.col("id").cast(IntegerType()).alias("key"))
            .withColumn("partition", F.pmod(F.hash("key"), F.lit(partitions)))
            .groupBy("partition")
            .agg(F.min("key").alias("key"))
            .collect()
        )
        keys = {r["partition"]: r["key"] for r in found}
        if len(keys) == partitions:
            return [keys[p] for p in range(partitions)]
        candidates *= 4


def gauges(rows: DataFrame, flow_control_threshold: int) -> DataFrame:
    """Return GAUGES_SCHEMA rows: state, freshness, sampled gauges and raw counters.

    ``throttling`` is set when the member is sampled, ONLINE, and its certifier or applier
    queue is above ``flow_control_threshold``: flow control then throttles every writer of
    the group (pipeline_stats.cc, Flow_control_module::flow_control_step).
    """
    false = F.lit(False)  # noqa: FBT003 (a SQL literal)
    # An unknown state (null) is neither sampled nor throttling: false, not SQL's null, as
    # the rollups have it (grstats.spark.rollup).
    sampled = F.coalesce(F.col("connected"), false) & F.coalesce(
        F.col("member_state").isin(*SAMPLED_STATES), false
    )
    over = (F.col(GAUGES["cert_queue"]) > flow_control_threshold) | (
        F.col(GAUGES["applier_queue"]) > flow_control_threshold
    )
    online = F.coalesce(F.col("member_state") == "ONLINE", false)
    throttling = sampled & online & F.coalesce(over, false)
    frame = rows.select(
        "group_label",
        "member_id",
        "collected_at",
        "member_host",
        "member_port",
        "member_state",
        "connected",
        sampled.alias("sampled"),
        throttling.alias("throttling"),
        *(F.when(sampled, F.col(column)).alias(name) for name, column in GAUGES.items()),
        *(F.col(column).alias(name) for name, column in COUNTERS.items()),
    )
    return conform(frame, GAUGES_SCHEMA)


def member_steps(rows: DataFrame, flow_control_threshold: int, max_gap_s: float) -> DataFrame:
    """Return STEPS rows: each member's snapshots in time order with deltas, held time, segments.

    * ``held_s``: seconds until the member's next snapshot, at most ``max_gap_s``; 0 for its
      last snapshot in the range;
    * ``elapsed_s``: seconds since its previous snapshot, when both have counters;
    * ``d_*``: counter increase since the previous snapshot; a decrease is a reset, so the
      delta is the counter's new value (never negative);
    * ``first``/``last``: the member's first/last snapshot in the range;
    * ``changed``: the state, connectedness or throttling differs from the member's previous
      snapshot (always true on ``first``);
    * ``segment``: how many times ``changed`` was true so far: snapshots of one member with
      the same segment are one unbroken run of the same state, connectedness and throttling
      (the islands of gaps-and-islands).

    All window functions share one partitioning and order: Spark sorts the rows once.
    """
    # One shuffle partition per member, each with a small integer key (see member_partitioned).
    indexed = member_partitioned(gauges(rows, flow_control_threshold))
    by_member = Window.partitionBy("member_key").orderBy("collected_at")
    t = epoch_seconds("collected_at")
    prev_t = F.lag(t).over(by_member)
    next_t = F.lead(t).over(by_member)
    first = prev_t.isNull()

    def same(column: str) -> Column:
        return F.col(column).eqNullSafe(F.lag(column).over(by_member))

    def delta(name: str) -> Column:
        now, before = F.col(name), F.lag(name).over(by_member)
        return F.when(now >= before, now - before).when(now < before, now)

    has_counts = F.col("checked").isNotNull() & F.lag("checked").over(by_member).isNotNull()
    changed = first | ~(same("member_state") & same("connected") & same("throttling"))
    stepped = indexed.select(
        "*",
        # least() skips nulls: the last snapshot (no next one) must hold for 0, not max_gap_s.
        F.when(next_t.isNull(), 0.0)
        .otherwise(F.least(next_t - t, F.lit(float(max_gap_s))))
        .alias("held_s"),
        F.when(has_counts, t - prev_t).alias("elapsed_s"),
        *(delta(name).alias(f"d_{name}") for name in COUNTERS),
        first.alias("first"),
        next_t.isNull().alias("last"),
        changed.alias("changed"),
    )
    so_far = by_member.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    frame = stepped.withColumn("segment", F.sum(F.col("changed").cast("long")).over(so_far))
    return conform(frame, STEPS)
