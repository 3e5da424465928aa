"""The one pass over every snapshot: each member's runs, folded into minutes.

A 30-day table of 9 members at one snapshot a second holds 23 million member rows but only
389,000 member-minutes. :func:`member_runs` sorts the rows once (the window functions of
:func:`grstats.spark.report.steps.member_steps`) and folds them by member, minute and segment: a run
is a part of one minute in which the member's state, connectedness and throttling stayed the
same, so a minute usually is one run and an episode's edge starts a new one. Runs hold sums,
counts and maxima only (fixed-width aggregation buffers, so Spark aggregates them in its
fast hash aggregation); every other table is built from the small runs table:
:func:`member_minutes` here, the episodes in :mod:`grstats.spark.report.episodes`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
)

from grstats.spark.report.frame import conform, schema
from grstats.spark.rollup import COUNTERS, GAUGES, STATES

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def _gauge_columns() -> list[tuple[str, DataType]]:
    return [
        column
        for name in GAUGES
        for column in (
            (f"{name}_max", DoubleType() if name == "lag_seconds" else LongType()),
            (f"{name}_sum", DoubleType()),
            (f"{name}_n", LongType()),
        )
    ]


#: One row per member, minute (UTC) and segment: a run of snapshots with one state,
#: connectedness and throttling within one minute.
RUNS = schema(
    ("group_label", StringType()),
    ("member_id", StringType()),
    ("minute", TimestampType()),
    ("segment", LongType()),
    ("member_state", StringType()),
    ("connected", BooleanType()),
    ("throttling", BooleanType()),
    ("member_host", StringType()),
    ("member_port", IntegerType()),
    ("snapshots", LongType()),
    ("first_at", TimestampType()),
    ("last_at", TimestampType()),
    ("first", BooleanType()),
    ("last", BooleanType()),
    ("held_s", DoubleType()),
    ("elapsed_s", DoubleType()),
    *((name, LongType()) for name in COUNTERS),
    *_gauge_columns(),
)

#: One row per member and minute (UTC) with at least one snapshot.
MINUTES = schema(
    ("group_label", StringType()),
    ("member_id", StringType()),
    ("minute", TimestampType()),
    ("member_host", StringType()),
    ("member_port", IntegerType()),
    ("snapshots", LongType()),
    ("first_at", TimestampType()),
    ("last_at", TimestampType()),
    ("held_s", DoubleType()),
    *((f"{state.lower()}_s", DoubleType()) for state in STATES),
    ("not_connected_s", DoubleType()),
    ("throttling_s", DoubleType()),
    ("elapsed_s", DoubleType()),
    *((name, LongType()) for name in COUNTERS),
    *_gauge_columns(),
)


def member_runs(steps: DataFrame) -> DataFrame:
    """Return RUNS rows from STEPS rows (:func:`grstats.spark.report.steps.member_steps`).

    The run's values are grouping keys, not aggregates, so that every aggregation buffer
    is a number and the aggregation stays in Spark's hash aggregation.
    """
    frame = steps.groupBy(
        "group_label",
        "member_id",
        F.date_trunc("minute", "collected_at").alias("minute"),
        "segment",
        "member_state",
        "connected",
        "throttling",
        "member_host",
        "member_port",
    ).agg(
        F.count(F.lit(1)).alias("snapshots"),
        F.min("collected_at").alias("first_at"),
        F.max("collected_at").alias("last_at"),
        F.max("first").alias("first"),
        F.max("last").alias("last"),
        F.sum("held_s").alias("held_s"),
        F.sum("elapsed_s").alias("elapsed_s"),
        *(F.sum(f"d_{name}").alias(name) for name in COUNTERS),
        *(
            aggregate
            for name in GAUGES
            for aggregate in (
                F.max(name).alias(f"{name}_max"),
                F.sum(name).alias(f"{name}_sum"),
                F.count(name).alias(f"{name}_n"),
            )
        ),
    )
    return conform(frame, RUNS)


def member_minutes(runs: DataFrame) -> DataFrame:
    """Return MINUTES rows from RUNS rows: each member's runs of a minute added up."""
    held = F.col("held_s")
    frame = runs.groupBy("group_label", "member_id", "minute").agg(
        F.max_by("member_host", "last_at").alias("member_host"),
        F.max_by("member_port", "last_at").alias("member_port"),
        F.sum("snapshots").alias("snapshots"),
        F.min("first_at").alias("first_at"),
        F.max("last_at").alias("last_at"),
        F.sum(held).alias("held_s"),
        *(
            F.sum(F.when(F.col("member_state") == state, held).otherwise(0.0)).alias(
                f"{state.lower()}_s"
            )
            for state in STATES
        ),
        F.sum(F.when(~F.col("connected"), held).otherwise(0.0)).alias("not_connected_s"),
        F.sum(F.when(F.col("throttling"), held).otherwise(0.0)).alias("throttling_s"),
        *partial_sums(),
    )
    return conform(frame, MINUTES)


def partial_sums() -> list[Column]:
    """The aggregates that add up parts of a minute (runs, or rollup partials) into MINUTES.

    Elapsed time and counter deltas are summed; each gauge's max, sum and count are merged.
    """
    return [
        F.sum("elapsed_s").alias("elapsed_s"),
        *(F.sum(name).alias(name) for name in COUNTERS),
        *(
            aggregate
            for name in GAUGES
            for aggregate in (
                F.max(f"{name}_max").alias(f"{name}_max"),
                F.sum(f"{name}_sum").alias(f"{name}_sum"),
                F.sum(f"{name}_n").alias(f"{name}_n"),
            )
        ),
    ]
