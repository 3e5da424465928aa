"""The group at each snapshot: its worst member's gauges and whether flow control throttled it.

This works on the rows as they are, without sorting them by member: one hash aggregation
makes one row per snapshot (2.6 million for 30 days at one a second), and only that small
table is put in time order, a day at a time, to find when the next snapshot came.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)
from pyspark.sql.types import BooleanType, DoubleType, LongType, StringType, TimestampType

from grstats.spark.report.frame import conform, epoch_seconds, schema
from grstats.spark.rollup import GAUGES

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Output of :func:`group_snapshots`: one row per snapshot (collection time).
SNAPSHOTS = schema(
    ("group_label", StringType()),
    ("collected_at", TimestampType()),
    ("members", LongType()),
    ("held_s", DoubleType()),
    ("throttling", BooleanType()),
    ("throttling_members", LongType()),
    *((name, DoubleType() if name == "lag_seconds" else LongType()) for name in GAUGES),
)


def group_snapshots(gauge_rows: DataFrame, max_gap_s: float) -> DataFrame:
    """Return SNAPSHOTS rows from GAUGES_SCHEMA rows (:func:`grstats.spark.report.steps.gauges`).

    ``held_s`` runs to the next snapshot, at most ``max_gap_s`` (0 for the last one);
    ``throttling`` is set when any member was throttling, so the sum of ``held_s`` over
    throttling snapshots is the union of the members' throttling time, each moment counted
    once; each gauge is the largest of any sampled member.
    """
    per_snapshot = gauge_rows.groupBy("group_label", "collected_at").agg(
        F.count(F.lit(1)).alias("members"),
        F.max("throttling").alias("throttling"),
        F.count(F.when(F.col("throttling"), F.lit(1))).alias("throttling_members"),
        *(F.max(name).alias(name) for name in GAUGES),
    )
    day = F.to_date("collected_at")
    dated = per_snapshot.withColumn("day", day)
    # The next snapshot of the group on the same day, else its first one of the next day that
    # has any.
    firsts = dated.groupBy("group_label", "day").agg(F.min("collected_at").alias("day_first"))
    later = firsts.alias("later")
    next_day_first = (
        firsts.alias("this")
        .join(
            later,
            (F.col("later.group_label") == F.col("this.group_label"))
            & (F.col("later.day") > F.col("this.day")),
        )
        .groupBy(F.col("this.group_label").alias("group_label"), F.col("this.day").alias("day"))
        .agg(F.min("later.day_first").alias("next_day_first"))
    )
    in_day = Window.partitionBy("group_label", "day").orderBy("collected_at")
    following = F.coalesce(F.lead("collected_at").over(in_day), F.col("next_day_first"))
    t, next_t = epoch_seconds("collected_at"), epoch_seconds(following)
    frame = dated.join(F.broadcast(next_day_first), ["group_label", "day"], "left").withColumn(
        "held_s",
        F.when(following.isNull(), 0.0).otherwise(F.least(next_t - t, F.lit(float(max_gap_s)))),
    )
    return conform(frame, SNAPSHOTS)


#: Output of :func:`group_totals` (and of the rollups' equivalent): one row per group.
GROUP_TOTALS = schema(
    ("group_label", StringType()),
    ("snapshots", LongType()),
    ("observed_s", DoubleType()),
    ("rows_validating_mean", DoubleType()),
    ("rows_validating_max", LongType()),
    ("rows_validating_slope_per_h", DoubleType()),
    ("throttling_s", DoubleType()),
)


def group_totals(snapshot_rows: DataFrame) -> DataFrame:
    """Return GROUP_TOTALS rows from SNAPSHOTS rows: each group's figures over its snapshots.

    ``snapshots`` and ``observed_s`` count the group's snapshots and their held time; the
    ROWS_VALIDATING figures are over each snapshot's largest value (the slope by least squares
    against the time in hours); ``throttling_s`` is the time any member throttled, each moment
    once.
    """
    frame = snapshot_rows.groupBy("group_label").agg(
        F.count(F.lit(1)).alias("snapshots"),
        F.sum("held_s").alias("observed_s"),
        F.avg("rows_validating").alias("rows_validating_mean"),
        F.max("rows_validating").alias("rows_validating_max"),
        F.regr_slope("rows_validating", epoch_seconds("collected_at") / 3600).alias(
            "rows_validating_slope_per_h"
        ),
        F.sum(F.when(F.col("throttling"), F.col("held_s")).otherwise(0.0)).alias("throttling_s"),
    )
    return conform(frame, GROUP_TOTALS)
