"""The report's intermediate tables from the per-minute rollups ingest wrote, not the member rows.

A rollup row is a *partial* (:mod:`grstats.spark.rollup`): one member (or group), one UTC minute,
one spool segment, with everything inside it already added up. What a partial cannot see is
what crosses its edges, and this module adds it by stitching each member's partials in time
order (they do not overlap when one collector collects the member):

* the partial's last snapshot holds until the member's next snapshot, the next partial's
  first one, at most ``max_gap_s`` (0 for the member's last partial in the range); that time
  counts in the last snapshot's state, connectedness and throttling;
* the partial's first snapshot gets the counter deltas and elapsed time since the previous
  partial's last snapshot (the same reset rule as :func:`grstats.spark.report.steps.member_steps`);
* a segment (a run of one state, connectedness and throttling) starts at a partial's first
  snapshot when it differs from the previous partial's last one, and at each of the
  partial's recorded changes.

So minutes, segments (hence episodes) and the groups' totals are what the member rows give,
up to the order in which floating-point sums are added. One difference the episodes do not
see: a segment's ``last_at`` is its own start except for the member's last segment (a
partial records when a run starts, not the time of its last snapshot). Percentiles come from
the partials' log-bucket sketches (:mod:`grstats.spark.sketch`), merged per member or group,
and are within the sketch's relative accuracy of the value at their rank.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)

from grstats.spark.report.episodes import SEGMENTS
from grstats.spark.report.frame import conform, epoch_seconds, ratio
from grstats.spark.report.minutes import MINUTES, partial_sums
from grstats.spark.report.percentiles import (
    GROUP_PERCENTILES,
    MEMBER_PERCENTILES,
    PERCENTILES,
    percentile_name,
)
from grstats.spark.report.snapshots import GROUP_TOTALS
from grstats.spark.rollup import COUNTERS, GAUGES, STATES
from grstats.spark.sketch import quantile

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType
    from pyspark.sql.window import WindowSpec

_MEMBER = ("group_label", "member_id")
_GROUP = ("group_label",)


def rollup_range(frame: DataFrame, start: dt.datetime | None, end: dt.datetime | None) -> DataFrame:
    """Return the partials (member or group rollups) whose ``minute`` is in [``start``, ``end``).

    None leaves that side open. When ``frame`` has the partition column ``collected_date``
    (the minute's UTC date, as the rollup files' paths hold it), the filter on it comes
    first, so Spark reads only the days the range touches. A range that starts or ends inside
    a minute keeps or drops that minute whole.
    """
    dated = "collected_date" in frame.columns
    if start is not None:
        if dated:
            frame = frame.filter(F.col("collected_date") >= F.lit(start.astimezone(dt.UTC).date()))
        frame = frame.filter(F.col("minute") >= F.lit(start))
    if end is not None:
        if dated:
            frame = frame.filter(F.col("collected_date") <= F.lit(end.astimezone(dt.UTC).date()))
        frame = frame.filter(F.col("minute") < F.lit(end))
    return frame


def _plus(left: Column, right: Column) -> Column:
    """``left + right`` where either may be null: null only when both are (Spark's sum rule)."""
    return F.coalesce(left + right, left, right)


def _tail(by: WindowSpec, max_gap_s: float) -> Column:
    """Seconds the partial's last snapshot holds: to the next partial's first, capped; 0 if none."""
    next_first = F.lead("first_at").over(by)
    gap = epoch_seconds(next_first) - epoch_seconds("last_at")
    return F.when(next_first.isNull(), 0.0).otherwise(F.least(gap, F.lit(float(max_gap_s))))


def _delta(now: Column, before: Column) -> Column:
    """A counter's increase; a decrease is a reset, so the new value (steps.member_steps's rule)."""
    return F.when(now >= before, now - before).when(now < before, now)


def rollup_minutes(member_rollups: DataFrame, max_gap_s: float) -> DataFrame:
    """Return MINUTES rows (:mod:`grstats.spark.report.minutes`) from member rollups.

    Each partial gets what crosses its edges (see the module's docstring), then a member's
    partials of one minute are added up with :func:`grstats.spark.report.minutes.member_minutes`'s
    rules: a sum over nothing but nulls is null, host and port are the last snapshot's.
    """
    # A partial lies within its minute, so (minute, first_at) is first_at's order; it also
    # leaves the rows sorted as the aggregation by minute needs them, which saves a sort.
    by_member = Window.partitionBy(*_MEMBER).orderBy("minute", "first_at")
    tail = F.col("tail")
    before_checked = F.lag("last_checked").over(by_member)
    has_counts = F.col("first_checked").isNotNull() & before_checked.isNotNull()
    edge_elapsed = epoch_seconds("first_at") - epoch_seconds(F.lag("last_at").over(by_member))
    stitched = member_rollups.withColumn("tail", _tail(by_member, max_gap_s)).select(
        *_MEMBER,
        "minute",
        "member_host",
        "member_port",
        "snapshots",
        "first_at",
        "last_at",
        (F.col("held_s") + tail).alias("held_s"),
        *(
            (
                F.col(f"{state.lower()}_s")
                + F.when(F.col("last_state") == state, tail).otherwise(0.0)
            ).alias(f"{state.lower()}_s")
            for state in STATES
        ),
        (F.col("not_connected_s") + F.when(~F.col("last_connected"), tail).otherwise(0.0)).alias(
            "not_connected_s"
        ),
        (F.col("throttling_s") + F.when(F.col("last_throttling"), tail).otherwise(0.0)).alias(
            "throttling_s"
        ),
        _plus(F.col("elapsed_s"), F.when(has_counts, edge_elapsed)).alias("elapsed_s"),
        *(
            _plus(
                F.col(name),
                _delta(F.col(f"first_{name}"), F.lag(f"last_{name}").over(by_member)),
            ).alias(name)
            for name in COUNTERS
        ),
        *(f"{name}_{part}" for name in GAUGES for part in ("max", "sum", "n")),
    )
    frame = stitched.groupBy(*_MEMBER, "minute").agg(
        F.max_by("member_host", "last_at").alias("member_host"),
        F.max_by("member_port", "last_at").alias("member_port"),
        F.sum("snapshots").alias("snapshots"),
        F.min("first_at").alias("first_at"),
        F.max("last_at").alias("last_at"),
        F.sum("held_s").alias("held_s"),
        *(F.sum(f"{state.lower()}_s").alias(f"{state.lower()}_s") for state in STATES),
        F.sum("not_connected_s").alias("not_connected_s"),
        F.sum("throttling_s").alias("throttling_s"),
        *partial_sums(),
    )
    return conform(frame, MINUTES)


def _point(at: str, state: str, connected: str, throttling: str) -> Column:
    """A change point as the rollups' ``changes`` hold one."""
    return F.struct(
        F.col(at).alias("at"),
        F.col(state).alias("member_state"),
        F.col(connected).alias("connected"),
        F.col(throttling).alias("throttling"),
    )


def rollup_segments(member_rollups: DataFrame) -> DataFrame:
    """Return SEGMENTS rows (:mod:`grstats.spark.report.episodes`) from member rollups.

    A segment starts at each change point: a partial's first snapshot when it differs
    (null-safely) from the previous partial's last one or starts the member's range, and each
    of the partial's ``changes``. Segments are numbered per member from 1 in time order, as
    :func:`grstats.spark.report.steps.member_steps` numbers them. ``last_at`` is the segment's
    start, except for the member's last segment, whose ``last_at`` is the member's last
    snapshot: :func:`grstats.spark.report.episodes.episodes` reads ``last_at`` only there.
    """
    by_member = Window.partitionBy(*_MEMBER).orderBy("first_at")

    def same(first: str, last: str) -> Column:
        return F.col(first).eqNullSafe(F.lag(last).over(by_member))

    opens = F.lag("last_at").over(by_member).isNull()
    starts = opens | ~(
        same("first_state", "last_state")
        & same("first_connected", "last_connected")
        & same("first_throttling", "last_throttling")
    )
    points_type = member_rollups.schema["changes"].dataType
    none = F.array().cast(points_type)
    edge = F.array(_point("first_at", "first_state", "first_connected", "first_throttling"))
    changes = F.coalesce(F.col("changes"), none)
    # Window functions first: Spark evaluates none inside explode().
    marked = member_rollups.select(
        *_MEMBER,
        F.max("last_at").over(Window.partitionBy(*_MEMBER)).alias("member_last_at"),
        F.concat(F.when(starts, edge.cast(points_type)).otherwise(none), changes).alias("points"),
    )
    points = marked.select(*_MEMBER, "member_last_at", F.explode("points").alias("point"))
    by_time = Window.partitionBy(*_MEMBER).orderBy("start")
    numbered = points.select(
        *_MEMBER,
        "member_last_at",
        F.col("point.at").alias("start"),
        F.col("point.member_state").alias("member_state"),
        F.col("point.connected").alias("connected"),
        F.col("point.throttling").alias("throttling"),
    ).select(
        "*",
        F.row_number().over(by_time).alias("segment"),
        F.lead("start").over(by_time).isNull().alias("last"),
    )
    frame = numbered.select(
        "*",
        F.when(F.col("last"), F.col("member_last_at")).otherwise(F.col("start")).alias("last_at"),
        (F.col("segment") == 1).alias("first"),
    )
    return conform(frame, SEGMENTS)


def rollup_group_totals(group_rollups: DataFrame, max_gap_s: float) -> DataFrame:
    """Return GROUP_TOTALS rows (:mod:`grstats.spark.report.snapshots`) from group rollups.

    Held and throttling time are stitched like a member's (each group's partials in time
    order). The ROWS_VALIDATING slope merges the partials' means and co-moments with Chan et
    al.'s pairwise formulas ("Algorithms for computing the sample variance", 1979), as Spark's
    own ``regr_slope`` merges its partitions' buffers: with N values, means X and Y,
    Cxy = sum(cxy + n (x - X)(y - Y)) and M2 = sum(m2x + n (x - X)^2), the slope is Cxy / M2,
    null when M2 is 0 (fewer than two distinct times), as ``regr_slope`` gives.
    """
    by_time = Window.partitionBy(*_GROUP).orderBy("first_at")
    whole = Window.partitionBy(*_GROUP)
    n = F.col("rows_validating_n")
    has = n > 0
    total_n = F.sum(F.when(has, n)).over(whole)
    mean_x = F.sum(F.when(has, n * F.col("rows_validating_x_mean"))).over(whole) / total_n
    mean_y = F.sum(F.when(has, n * F.col("rows_validating_y_mean"))).over(whole) / total_n
    dx = F.col("rows_validating_x_mean") - F.col("mean_x")
    dy = F.col("rows_validating_y_mean") - F.col("mean_y")
    tail = F.col("tail")
    stitched = (
        group_rollups.withColumn("tail", _tail(by_time, max_gap_s))
        .withColumn("mean_x", mean_x)
        .withColumn("mean_y", mean_y)
        .select(
            *_GROUP,
            "snapshots",
            (F.col("held_s") + tail).alias("held_s"),
            (F.col("throttling_s") + F.when(F.col("last_throttling"), tail).otherwise(0.0)).alias(
                "throttling_s"
            ),
            "rows_validating_sum",
            "rows_validating_n",
            "rows_validating_max",
            F.when(has, F.col("rows_validating_cxy") + n * dx * dy).alias("cxy"),
            F.when(has, F.col("rows_validating_m2x") + n * dx * dx).alias("m2x"),
        )
    )
    totals = stitched.groupBy(*_GROUP).agg(
        F.sum("snapshots").alias("snapshots"),
        F.sum("held_s").alias("observed_s"),
        ratio(F.sum("rows_validating_sum"), F.sum("rows_validating_n")).alias(
            "rows_validating_mean"
        ),
        F.max("rows_validating_max").alias("rows_validating_max"),
        F.sum("cxy").alias("cxy"),
        F.sum("m2x").alias("m2x"),
        F.sum("throttling_s").alias("throttling_s"),
    )
    frame = totals.withColumn(
        "rows_validating_slope_per_h",
        F.when(F.col("m2x") != 0.0, F.col("cxy") / F.col("m2x")),
    )
    return conform(frame, GROUP_TOTALS)


def _sketch_percentiles(rollups: DataFrame, keys: tuple[str, ...], target: StructType) -> DataFrame:
    """Merge each key's sketches in Spark, then read the percentiles from them on the driver."""
    gauges = list(PERCENTILES)
    # One scan: each partial's sketches as (gauge, sketch) pairs, then their buckets;
    # explode_outer keeps a key whose sketches are all empty: its percentiles are null.
    pairs = F.array(
        *(F.struct(F.lit(g).alias("gauge"), F.col(f"{g}_sketch").alias("sketch")) for g in gauges)
    )
    buckets = rollups.select(*keys, F.explode(pairs).alias("pair")).select(
        *keys, "pair.gauge", F.explode_outer("pair.sketch").alias("bucket", "count")
    )
    merged = buckets.groupBy(*keys, "gauge", "bucket").agg(F.sum("count").alias("count"))
    found: dict[tuple[Any, ...], dict[str, list[tuple[int, int]]]] = defaultdict(
        lambda: {gauge: [] for gauge in gauges}
    )
    for row in merged.collect():
        held = found[tuple(row[key] for key in keys)][row["gauge"]]
        if row["bucket"] is not None and row["count"]:
            held.append((row["bucket"], row["count"]))
    rows = []
    for key in sorted(found, key=lambda k: tuple("" if v is None else v for v in k)):
        values = dict(zip(keys, key, strict=True))
        for gauge, quantiles in PERCENTILES.items():
            for q in quantiles:
                values[percentile_name(gauge, q)] = quantile(
                    found[key][gauge], q, integer=gauge != "lag_seconds"
                )
        rows.append(tuple(values[name] for name in target.fieldNames()))
    return rollups.sparkSession.createDataFrame(rows, target)


def sketch_percentiles(member_rollups: DataFrame) -> DataFrame:
    """Return MEMBER_PERCENTILES rows (:mod:`grstats.spark.report.percentiles`) from the sketches.

    Each percentile is the representative value of the sketch bucket that holds the value at
    its rank (rank = ceil(q * n), as ``percentile_approx``'s), so within the sketch's relative
    accuracy of that value; whole-number gauges are rounded, which makes small ones exact.
    """
    return _sketch_percentiles(member_rollups, _MEMBER, MEMBER_PERCENTILES)


def group_sketch_percentiles(group_rollups: DataFrame) -> DataFrame:
    """Return GROUP_PERCENTILES rows from the group rollups' sketches of each snapshot's maximum."""
    return _sketch_percentiles(group_rollups, _GROUP, GROUP_PERCENTILES)


def rollup_groups(member_rollups: DataFrame) -> dict[str, str]:
    """Return the group labels of the rollups, sorted, each with its latest non-empty group name.

    "" when a group never named itself; the same as the member rows give (the partials'
    ``group_name`` is their last non-empty one, at ``group_name_at``).
    """
    named = F.col("group_name").isNotNull() & (F.col("group_name") != "")
    found = member_rollups.groupBy("group_label").agg(
        F.max_by(F.when(named, F.col("group_name")), F.when(named, F.col("group_name_at"))).alias(
            "group_name"
        )
    )
    return {
        row["group_label"]: row["group_name"] or ""
        for row in sorted(found.collect(), key=lambda row: row["group_label"])
    }
