"""Chart series: each member's applier queue and lag over time, at most a few thousand points."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)
from pyspark.sql.types import DoubleType, LongType, StringType, TimestampType

from spark.report.frame import conform, epoch_seconds, schema

if TYPE_CHECKING:
    import datetime as dt

    from pyspark.sql import DataFrame

#: One point per member and bucket with at least one sampled snapshot.
SERIES = schema(
    ("member_id", StringType()),
    ("bucket_start", TimestampType()),
    ("samples", LongType()),
    ("applier_queue_max", LongType()),
    ("lag_seconds_max", DoubleType()),
)


def bucket_seconds(first: dt.datetime, last: dt.datetime, points: int) -> int:
    """Return the bucket width (whole seconds, at least 1) that gives at most ``points``."""
    # Buckets cover [first, last]: floor(span / width) + 1 of them, at most ``points``.
    span = max(0.0, (last - first).total_seconds())
    return math.floor(span / points) + 1


def member_series(gauge_rows: DataFrame, origin: dt.datetime, bucket_s: int) -> DataFrame:
    """Return SERIES rows: each member's largest sampled values per ``bucket_s`` bucket.

    Buckets start at ``origin``; keeping each bucket's maximum keeps every peak visible
    however far the series is downsampled. ``gauge_rows`` are GAUGES_SCHEMA rows
    (:func:`spark.report.steps.gauges`).
    """
    offset = origin.timestamp()
    index = F.floor((epoch_seconds("collected_at") - F.lit(offset)) / bucket_s)
    start = F.timestamp_seconds(F.lit(offset) + index * bucket_s)
    frame = (
        gauge_rows.filter(F.col("sampled"))
        .groupBy("member_id", start.alias("bucket_start"))
        .agg(
            F.count(F.lit(1)).alias("samples"),
            F.max("applier_queue").alias("applier_queue_max"),
            F.max("lag_seconds").alias("lag_seconds_max"),
        )
    )
    return conform(frame, SERIES).orderBy("member_id", "bucket_start")
