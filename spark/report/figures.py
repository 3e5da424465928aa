"""The headline figures: one row per member and one for the whole group.

Per member, over the range:

* throughput: counter increases (resets counted from 0, see :mod:`grstats.spark.report.steps`)
  divided by the seconds between the snapshots they span, so a member's rate is its mean
  rate over the time it was collected;
* conflict rate (conflicts detected / transactions checked) and local rollback ratio
  (local rollback / local proposed);
* queues, lag and GTIDs ahead: percentiles (:mod:`grstats.spark.report.percentiles`) and the maximum
  over sampled snapshots; COUNT_TRANSACTIONS_ROWS_VALIDATING mean, maximum and slope (least
  squares over the minutes' means, in rows per hour);
* seconds in each MEMBER_STATE and not connected, seconds it throttled the group's writers,
  and how many UNREACHABLE and not-connected episodes it had.

For the group: applied and proposed per second add up over members (each transaction is
proposed by one member and applied by each of the others); checked per second, checked and
conflicts are the largest of any member (every ONLINE member certifies every transaction);
the conflict rate and rollback ratio are ratios of the members' sums; gauges are taken over
the per-snapshot largest value of any member (:mod:`grstats.spark.report.snapshots`); throttled
seconds count each moment any member throttled once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)
from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, TimestampType

from grstats.spark.report.frame import conform, epoch_seconds, ratio, schema
from grstats.spark.report.percentiles import MEMBER_PERCENTILES
from grstats.spark.rollup import STATES

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

_STATE_SECONDS = tuple(f"{state.lower()}_s" for state in STATES)
_RATES = ("applied", "proposed", "checked")

#: One row per member (scope "member") and one for the group (scope "group").
FIGURES = schema(
    ("group_label", StringType()),
    ("scope", StringType()),
    ("member_id", StringType()),
    ("member_host", StringType()),
    ("member_port", IntegerType()),
    ("first_at", TimestampType()),
    ("last_at", TimestampType()),
    ("snapshots", LongType()),
    ("observed_s", DoubleType()),
    *((name, DoubleType()) for name in _STATE_SECONDS),
    ("not_connected_s", DoubleType()),
    *((f"{name}_per_s", DoubleType()) for name in _RATES),
    ("applied", LongType()),
    ("proposed", LongType()),
    ("checked", LongType()),
    ("conflicts", LongType()),
    ("rollback", LongType()),
    ("conflict_rate", DoubleType()),
    ("rollback_ratio", DoubleType()),
    ("cert_queue_p50", LongType()),
    ("cert_queue_p95", LongType()),
    ("cert_queue_max", LongType()),
    ("applier_queue_p50", LongType()),
    ("applier_queue_p95", LongType()),
    ("applier_queue_max", LongType()),
    ("rows_validating_mean", DoubleType()),
    ("rows_validating_max", LongType()),
    ("rows_validating_slope_per_h", DoubleType()),
    ("lag_seconds_p50", DoubleType()),
    ("lag_seconds_p95", DoubleType()),
    ("lag_seconds_p99", DoubleType()),
    ("lag_seconds_max", DoubleType()),
    ("gtids_ahead_p50", LongType()),
    ("gtids_ahead_max", LongType()),
    ("throttling_s", DoubleType()),
    ("unreachable_episodes", LongType()),
    ("not_connected_episodes", LongType()),
)


def _hours(column: str) -> Column:
    return epoch_seconds(column) / 3600


def member_figures(minutes: DataFrame, percentiles: DataFrame, episodes: DataFrame) -> DataFrame:
    """Return FIGURES rows of scope "member".

    Args:
        minutes: MINUTES rows (:func:`grstats.spark.report.minutes.member_minutes`).
        percentiles: MEMBER_PERCENTILES rows
            (:func:`grstats.spark.report.percentiles.member_percentiles`).
        episodes: EPISODES rows of kinds "state" and "connected".
    """
    assert [f.name for f in percentiles.schema.fields] == MEMBER_PERCENTILES.fieldNames()
    rows_validating_mean = F.col("rows_validating_sum") / F.col("rows_validating_n")
    totals = minutes.groupBy("group_label", "member_id").agg(
        F.max_by("member_host", "last_at").alias("member_host"),
        F.max_by("member_port", "last_at").alias("member_port"),
        F.min("first_at").alias("first_at"),
        F.max("last_at").alias("last_at"),
        F.sum("snapshots").alias("snapshots"),
        F.sum("held_s").alias("observed_s"),
        *(F.sum(name).alias(name) for name in (*_STATE_SECONDS, "not_connected_s")),
        F.sum("elapsed_s").alias("elapsed_s"),
        *(F.sum(name).alias(name) for name in ("applied", "proposed", "checked")),
        F.sum("conflicts").alias("conflicts"),
        F.sum("rollback").alias("rollback"),
        *(F.max(f"{name}_max").alias(f"{name}_max") for name in ("cert_queue", "applier_queue")),
        (F.sum("rows_validating_sum") / F.sum("rows_validating_n")).alias("rows_validating_mean"),
        F.max("rows_validating_max").alias("rows_validating_max"),
        F.regr_slope(rows_validating_mean, _hours("minute")).alias("rows_validating_slope_per_h"),
        F.max("lag_seconds_max").alias("lag_seconds_max"),
        F.max("gtids_ahead_max").alias("gtids_ahead_max"),
        F.sum("throttling_s").alias("throttling_s"),
    )
    counts = episodes.groupBy("group_label", "member_id").agg(
        F.count(F.when((F.col("kind") == "state") & (F.col("value") == "UNREACHABLE"), 1)).alias(
            "unreachable_episodes"
        ),
        F.count(F.when((F.col("kind") == "connected") & (F.col("value") == "NO"), 1)).alias(
            "not_connected_episodes"
        ),
    )
    frame = (
        totals.join(percentiles, ["group_label", "member_id"], "left")
        .join(counts, ["group_label", "member_id"], "left")
        .select(
            "*",
            F.lit("member").alias("scope"),
            *(ratio(F.col(name), F.col("elapsed_s")).alias(f"{name}_per_s") for name in _RATES),
            ratio(F.col("conflicts"), F.col("checked")).alias("conflict_rate"),
            ratio(F.col("rollback"), F.col("proposed")).alias("rollback_ratio"),
        )
        .fillna(0, subset=["unreachable_episodes", "not_connected_episodes"])
    )
    return conform(frame, FIGURES).orderBy("group_label", "member_id")


def group_figures(members: DataFrame, totals: DataFrame, percentiles: DataFrame) -> DataFrame:
    """Return the FIGURES rows of scope "group", one per group.

    Args:
        members: FIGURES rows of scope "member" (:func:`member_figures`).
        totals: GROUP_TOTALS rows (:func:`grstats.spark.report.snapshots.group_totals`, or
            the rollups' equivalent).
        percentiles: GROUP_PERCENTILES rows
            (:func:`grstats.spark.report.percentiles.group_percentiles`, or the rollups').
    """
    from_members = members.groupBy("group_label").agg(
        F.min("first_at").alias("first_at"),
        F.max("last_at").alias("last_at"),
        F.sum("applied_per_s").alias("applied_per_s"),
        F.sum("proposed_per_s").alias("proposed_per_s"),
        F.max("checked_per_s").alias("checked_per_s"),
        F.sum("applied").alias("applied"),
        F.sum("proposed").alias("proposed"),
        F.max("checked").alias("checked"),
        F.max("conflicts").alias("conflicts"),
        F.sum("rollback").alias("rollback"),
        ratio(F.sum("conflicts"), F.sum("checked")).alias("conflict_rate"),
        ratio(F.sum("rollback"), F.sum("proposed")).alias("rollback_ratio"),
        F.max("cert_queue_max").alias("cert_queue_max"),
        F.max("applier_queue_max").alias("applier_queue_max"),
        F.max("lag_seconds_max").alias("lag_seconds_max"),
        F.max("gtids_ahead_max").alias("gtids_ahead_max"),
        F.sum("unreachable_episodes").alias("unreachable_episodes"),
        F.sum("not_connected_episodes").alias("not_connected_episodes"),
    )
    frame = (
        from_members.join(totals, "group_label", "left")
        .join(percentiles, "group_label", "left")
        .select(
            "*",
            F.lit("group").alias("scope"),
            *(
                F.lit(None).alias(name)
                for name in ("member_id", "member_host", "member_port", *_STATE_SECONDS)
            ),
            F.lit(None).alias("not_connected_s"),
        )
    )
    return conform(frame, FIGURES).orderBy("group_label")
