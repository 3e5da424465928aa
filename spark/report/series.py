"""Chart series: each member's applier queue and lag over time, at most a few thousand points."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)
from pyspark.sql.types import DoubleType, LongType, StringType, TimestampType

from grstats.spark.report.frame import conform, epoch_seconds, schema

if TYPE_CHECKING:
    import datetime as dt

    from pyspark.sql import DataFrame

#: Buckets of at least this many seconds are whole minutes, made from the minutes table.
MINUTE = 60

#: One point per member and bucket with at least one sampled snapshot; ``samples`` counts
#: the snapshots with an applier queue.
SERIES = schema(
    ("group_label", StringType()),
    ("member_id", StringType()),
    ("bucket_start", TimestampType()),
    ("samples", LongType()),
    ("applier_queue_max", LongType()),
    ("lag_seconds_max", DoubleType()),
)


def bucket_seconds(first: dt.datetime, last: dt.datetime, points: int) -> int:
    """Return the bucket width that gives at most ``points`` buckets over [first, last].

    Whole seconds, at least 1; from a minute up, whole minutes, so that long ranges are
    drawn from the minutes table instead of every snapshot again.
    """
    # Buckets cover [first, last]: floor(span / width) + 1 of them, at most ``points``.
    span = max(0.0, (last - first).total_seconds())
    width = math.floor(span / points) + 1
    return width if width < MINUTE else -(-width // MINUTE) * MINUTE


def member_series(gauge_rows: DataFrame, origin: dt.datetime, bucket_s: int) -> DataFrame:
    """Return SERIES rows: each member's largest sampled values per ``bucket_s`` bucket.

    Buckets start at ``origin``; keeping each bucket's maximum keeps every peak visible
    however far the series is downsampled. ``gauge_rows`` are GAUGES_SCHEMA rows
    (:func:`grstats.spark.report.steps.gauges`).
    """
    offset = origin.timestamp()
    index = F.floor((epoch_seconds("collected_at") - F.lit(offset)) / bucket_s)
    start = F.timestamp_seconds(F.lit(offset) + index * bucket_s)
    frame = (
        gauge_rows.filter(F.col("sampled"))
        .groupBy("group_label", "member_id", start.alias("bucket_start"))
        .agg(
            F.count("applier_queue").alias("samples"),
            F.max("applier_queue").alias("applier_queue_max"),
            F.max("lag_seconds").alias("lag_seconds_max"),
        )
    )
    return conform(frame, SERIES).orderBy("group_label", "member_id", "bucket_start")


def minute_series(minutes: DataFrame, origin: dt.datetime, bucket_s: int) -> DataFrame:
    """Return SERIES rows from MINUTES rows, for a ``bucket_s`` that is whole minutes.

    The same points as :func:`member_series` with buckets starting at ``origin``'s minute,
    without reading every snapshot again.
    """
    if bucket_s % MINUTE:
        raise ValueError(f"bucket_s: {bucket_s} is not whole minutes")
    offset = origin.replace(second=0, microsecond=0).timestamp()
    index = F.floor((epoch_seconds("minute") - F.lit(offset)) / bucket_s)
    start = F.timestamp_seconds(F.lit(offset) + index * bucket_s)
    frame = (
        minutes.filter((F.col("applier_queue_n") > 0) | (F.col("lag_seconds_n") > 0))
        .groupBy("group_label", "member_id", start.alias("bucket_start"))
        .agg(
            F.sum("applier_queue_n").alias("samples"),
            F.max("applier_queue_max").alias("applier_queue_max"),
            F.max("lag_seconds_max").alias("lag_seconds_max"),
        )
    )
    return conform(frame, SERIES).orderBy("group_label", "member_id", "bucket_start")
