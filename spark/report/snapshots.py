"""The group at each snapshot: its worst member's gauges and whether flow control throttled it.

This works on the rows as they are, without sorting them by member: one hash aggregation
makes one row per snapshot (2.6 million for 30 days at one a second), and only that small
table is put in time order, a day at a time, to find when the next snapshot came.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)
from pyspark.sql.types import BooleanType, DoubleType, LongType, TimestampType

from grstats.spark.report.frame import conform, epoch_seconds, schema
from grstats.spark.report.steps import GAUGES

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Output of :func:`group_snapshots`: one row per snapshot (collection time).
SNAPSHOTS = schema(
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
    per_snapshot = gauge_rows.groupBy("collected_at").agg(
        F.count(F.lit(1)).alias("members"),
        F.max("throttling").alias("throttling"),
        F.count(F.when(F.col("throttling"), F.lit(1))).alias("throttling_members"),
        *(F.max(name).alias(name) for name in GAUGES),
    )
    day = F.to_date("collected_at")
    dated = per_snapshot.withColumn("day", day)
    # The next snapshot of the same day, else the first one of the next day that has any.
    firsts = dated.groupBy("day").agg(F.min("collected_at").alias("day_first"))
    later = firsts.alias("later")
    next_day_first = (
        firsts.alias("this")
        .join(later, F.col("later.day") > F.col("this.day"))
        .groupBy(F.col("this.day").alias("day"))
        .agg(F.min("later.day_first").alias("next_day_first"))
    )
    in_day = Window.partitionBy("day").orderBy("collected_at")
    following = F.coalesce(F.lead("collected_at").over(in_day), F.col("next_day_first"))
    t, next_t = epoch_seconds("collected_at"), epoch_seconds(following)
    frame = dated.join(F.broadcast(next_day_first), "day", "left").withColumn(
        "held_s",
        F.when(following.isNull(), 0.0).otherwise(F.least(next_t - t, F.lit(float(max_gap_s)))),
    )
    return conform(frame, SNAPSHOTS)
