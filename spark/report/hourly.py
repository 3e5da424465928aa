"""Each member hour by hour: throughput, queues, ROWS_VALIDATING, lag and GTIDs ahead over time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)
from pyspark.sql.types import DoubleType, LongType, StringType, TimestampType

from grstats.spark.report.frame import conform, ratio, schema
from grstats.spark.rollup import GAUGES

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: One row per member and UTC hour with at least one snapshot.
HOURLY = schema(
    ("group_label", StringType()),
    ("member_id", StringType()),
    ("hour", TimestampType()),
    ("snapshots", LongType()),
    ("applied_per_s", DoubleType()),
    ("proposed_per_s", DoubleType()),
    ("checked_per_s", DoubleType()),
    ("conflict_rate", DoubleType()),
    *(
        column
        for name in GAUGES
        for column in (
            (f"{name}_mean", DoubleType()),
            (f"{name}_max", DoubleType() if name == "lag_seconds" else LongType()),
        )
    ),
    ("throttling_s", DoubleType()),
    ("not_connected_s", DoubleType()),
)


def member_hours(minutes: DataFrame) -> DataFrame:
    """Return HOURLY rows from MINUTES rows (:func:`grstats.spark.report.minutes.member_minutes`).

    Rates are the hour's counter increases over the seconds they span; means are over the
    hour's sampled snapshots; maxima are the largest sampled value.
    """
    totals = minutes.groupBy(
        "group_label", "member_id", F.date_trunc("hour", "minute").alias("hour")
    ).agg(
        F.sum("snapshots").alias("snapshots"),
        F.sum("elapsed_s").alias("elapsed_s"),
        *(F.sum(name).alias(name) for name in ("applied", "proposed", "checked", "conflicts")),
        *(
            aggregate
            for name in GAUGES
            for aggregate in (
                (F.sum(f"{name}_sum") / F.sum(f"{name}_n")).alias(f"{name}_mean"),
                F.max(f"{name}_max").alias(f"{name}_max"),
            )
        ),
        F.sum("throttling_s").alias("throttling_s"),
        F.sum("not_connected_s").alias("not_connected_s"),
    )
    frame = totals.select(
        "*",
        *(
            ratio(F.col(name), F.col("elapsed_s")).alias(f"{name}_per_s")
            for name in ("applied", "proposed", "checked")
        ),
        ratio(F.col("conflicts"), F.col("checked")).alias("conflict_rate"),
    )
    return conform(frame, HOURLY).orderBy("group_label", "member_id", "hour")
