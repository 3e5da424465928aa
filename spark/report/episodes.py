"""Episodes (gaps and islands): every run of one state, connectedness or throttling per member.

:func:`grstats.spark.report.steps.member_steps` numbers each member's segments: unbroken runs of
snapshots with the same state, connectedness and throttling. An episode of one kind is a
run of consecutive segments with the same value of that kind (an UNREACHABLE episode may
span segments where the connectedness changed). It starts at its first snapshot and ends at
the next episode's first snapshot: the first one seen with another value. An episode still
running at the member's last snapshot in the range ends there and is ``open_end``; one that
was already running at its first snapshot is ``open_start``. Both times are snapshot times,
so with snapshots every second an episode's edges are within about a second (plus the
agents' one-period delay) of the true ones. Everything here works on the small runs table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)
from pyspark.sql.types import BooleanType, DoubleType, LongType, StringType, TimestampType

from grstats.spark.report.frame import conform, epoch_seconds, schema

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

#: Output of :func:`segments`: one row per member segment.
SEGMENTS = schema(
    ("group_label", StringType()),
    ("member_id", StringType()),
    ("segment", LongType()),
    ("member_state", StringType()),
    ("connected", BooleanType()),
    ("throttling", BooleanType()),
    ("start", TimestampType()),
    ("last_at", TimestampType()),
    ("first", BooleanType()),
    ("last", BooleanType()),
)

#: Output of :func:`episodes`: one row per episode.
EPISODES = schema(
    ("group_label", StringType()),
    ("member_id", StringType()),
    ("kind", StringType()),
    ("value", StringType()),
    ("start", TimestampType()),
    ("end", TimestampType()),
    ("duration_s", DoubleType()),
    ("open_start", BooleanType()),
    ("open_end", BooleanType()),
)

#: The kinds of episode: kind -> the segment column whose value it follows.
KINDS = {"state": "member_state", "connected": "connected", "throttling": "throttling"}


def _as_text(column: str) -> Column:
    """The value as text: states as they are, booleans as YES/NO (MySQL's CONNECTED style)."""
    if column == "member_state":
        return F.col(column)
    return F.when(F.col(column), "YES").when(~F.col(column), "NO")


def segments(runs: DataFrame) -> DataFrame:
    """Return SEGMENTS rows from RUNS rows (:func:`grstats.spark.report.minutes.member_runs`)."""
    frame = runs.groupBy(
        "group_label", "member_id", "segment", "member_state", "connected", "throttling"
    ).agg(
        F.min("first_at").alias("start"),
        F.max("last_at").alias("last_at"),
        F.max("first").alias("first"),
        F.max("last").alias("last"),
    )
    return conform(frame, SEGMENTS)


def episodes(segment_rows: DataFrame, kind: str) -> DataFrame:
    """Return EPISODES rows of ``kind`` (a key of KINDS) from SEGMENTS rows."""
    if kind not in KINDS:
        raise ValueError(f"kind: {kind!r} is not one of {', '.join(KINDS)}")
    by_member = Window.partitionBy("group_label", "member_id").orderBy("start")
    valued = segment_rows.withColumn("value", _as_text(KINDS[kind]))
    starts = ~F.col("value").eqNullSafe(F.lag("value").over(by_member)) | F.col("first")
    islands = valued.withColumn(
        "island",
        F.sum(starts.cast("long")).over(
            by_member.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        ),
    )
    merged = islands.groupBy("group_label", "member_id", "island", "value").agg(
        F.min("start").alias("start"),
        F.max("last_at").alias("last_at"),
        F.max("first").alias("open_start"),
        F.max("last").alias("open_end"),
    )
    end = F.coalesce(F.lead("start").over(by_member), F.col("last_at"))
    frame = merged.select(
        "group_label",
        "member_id",
        F.lit(kind).alias("kind"),
        "value",
        "start",
        end.alias("end"),
        "open_start",
        "open_end",
    ).withColumn("duration_s", epoch_seconds("end") - epoch_seconds("start"))
    return conform(frame, EPISODES)
