"""The worst minutes of the range: by lag, by applier queue, by conflict rate."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)
from pyspark.sql.types import DoubleType, IntegerType, StringType, TimestampType

from grstats.spark.report.frame import conform, ratio, schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: A minute's conflict rate is ranked only when the group checked at least this many
#: transactions in it: 1 conflict out of 2 is not a bad minute.
MIN_CHECKED_PER_MINUTE = 100

#: The rankings, in the order reports show them.
RANKINGS = ("lag_seconds", "applier_queue", "conflict_rate")

#: One row per ranked minute: ``rank`` 1 is the worst.
WORST = schema(
    ("group_label", StringType()),
    ("ranking", StringType()),
    ("rank", IntegerType()),
    ("minute", TimestampType()),
    ("member_id", StringType()),
    ("value", DoubleType()),
)


def worst_minutes(minutes: DataFrame, count: int) -> DataFrame:
    """Return WORST rows: the ``count`` worst minutes of each ranking, per group.

    * ``lag_seconds``: member-minutes by their largest APPLIER_LAG_SECONDS;
    * ``applier_queue``: member-minutes by their largest applier queue;
    * ``conflict_rate``: the group's minutes by conflicts detected / transactions checked
      over all members (member_id is null), among minutes with at least
      MIN_CHECKED_PER_MINUTE transactions checked.

    Ties go to the earlier minute, then the lower member_id, so the ranking is the same on
    any cluster.
    """
    lag = minutes.select(
        "group_label",
        F.lit("lag_seconds").alias("ranking"),
        "minute",
        "member_id",
        F.col("lag_seconds_max").cast("double").alias("value"),
    )
    queue = minutes.select(
        "group_label",
        F.lit("applier_queue").alias("ranking"),
        "minute",
        "member_id",
        F.col("applier_queue_max").cast("double").alias("value"),
    )
    group_minutes = minutes.groupBy("group_label", "minute").agg(
        F.sum("conflicts").alias("conflicts"), F.sum("checked").alias("checked")
    )
    conflicts = group_minutes.filter(F.col("checked") >= MIN_CHECKED_PER_MINUTE).select(
        "group_label",
        F.lit("conflict_rate").alias("ranking"),
        "minute",
        F.lit(None).cast("string").alias("member_id"),
        ratio(F.col("conflicts"), F.col("checked")).alias("value"),
    )
    ranked = Window.partitionBy("group_label", "ranking").orderBy(
        F.col("value").desc(), F.col("minute").asc(), F.col("member_id").asc_nulls_first()
    )
    frame = (
        lag.unionByName(queue)
        .unionByName(conflicts)
        .filter(F.col("value").isNotNull() & (F.col("value") > 0))
        .withColumn("rank", F.row_number().over(ranked))
        .filter(F.col("rank") <= count)
    )
    return conform(frame, WORST).orderBy("group_label", "ranking", "rank")
