"""The report's one model: partials, stitched into pieces, then every result table.

Every figure of a report comes from **partials** (:mod:`grstats.spark.rollup`): one member
(or group) over one stretch of time, everything inside it added up, its edges kept. Ingest
writes them per minute beside the data (the rollups). When those cannot answer a report
(another flow-control threshold or max gap, a range that is not whole minutes, or a chart
finer than a minute for a short range), the report makes partials from the member rows
with the same code, in Spark's Python tasks (:mod:`grstats.spark.report.rollup_job`), at
the grain the chart needs. Either way:

1. :func:`stitch` adds what crosses the partials' edges (:mod:`grstats.spark.report.stitch`)
   into the pieces: each member's buckets, its segments, the percentiles, the groups' totals,
   and each member's lag by stage (:mod:`grstats.spark.report.stages`);
2. :func:`result_tables` computes the result tables from the pieces
   (:mod:`grstats.spark.report.arrow_tables`), after adding buckets narrower than a minute
   up into minutes, so that the figures do not depend on the grain.

One percentile method: the partials' log-bucket sketches (:mod:`grstats.spark.sketch`),
merged; each percentile is within the sketch's relative accuracy of the value at its rank.
No pyspark here: the tests run the whole model on Arrow tables in-process.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from grstats.spark.report import arrow_tables, stages
from grstats.spark.report.stitch import (
    group_names,
    sketch_percentiles,
    stitch_group_totals,
    stitch_minutes,
    stitch_segments,
    to_minutes,
)
from grstats.spark.report.tables import MIN_CHECKED_PER_MINUTE
from grstats.spark.rollup import GRAIN_S, group_rollups, member_rollups

if TYPE_CHECKING:
    import datetime as dt

    from grstats.spark.rollup_settings import RollupSettings

__all__ = [
    "GRAINS",
    "MINUTE",
    "MIN_POINTS",
    "PIECES",
    "Pieces",
    "bucket_seconds",
    "chart_bucket_s",
    "partials_of_rows",
    "result_tables",
    "stitch",
]

#: A minute, in seconds: chart buckets from a minute up are whole minutes.
MINUTE = GRAIN_S
#: The grains a report makes partials at: the divisors of a minute, so that a member's
#: buckets add up into its minutes.
GRAINS = tuple(width for width in range(1, MINUTE + 1) if MINUTE % width == 0)
#: A chart gets at least this many points across its range where the data has them.
MIN_POINTS = 100
_MEMBER = ("group_label", "member_id")
#: The pieces, by name (Pieces' tables).
PIECES = (
    "minutes",
    "segments",
    "member_percentiles",
    "group_totals",
    "group_percentiles",
    "member_stages",
)


@dataclasses.dataclass(frozen=True)
class Pieces:
    """The intermediate tables stitched from partials, and each group's name.

    Attributes:
        minutes, segments, member_percentiles, group_totals, group_percentiles: Arrow tables
            (:mod:`grstats.spark.report.stitch`'s). ``minutes`` has one row per member and
            bucket of ``grain_s`` seconds (its ``minute`` column is the bucket's start).
        member_stages: LAG_STAGES rows, each member's lag by stage
            (:mod:`grstats.spark.report.stages`).
        names: each group label in range, sorted, with its latest GR group name ("" unknown).
        grain_s: the partials' width in seconds (a divisor of a minute).
    """

    minutes: pa.Table
    segments: pa.Table
    member_percentiles: pa.Table
    group_totals: pa.Table
    group_percentiles: pa.Table
    member_stages: pa.Table
    names: dict[str, str]
    grain_s: int = MINUTE

    def only(self, label: str) -> Pieces:
        """The pieces of the group ``label`` alone."""
        wanted = pa.scalar(label, pa.string())
        tables = {
            name: getattr(self, name).filter(
                pc.equal(getattr(self, name).column("group_label"), wanted)
            )
            for name in PIECES
        }
        names = {label: self.names[label]} if label in self.names else {}
        return Pieces(**tables, names=names, grain_s=self.grain_s)


def bucket_seconds(first: dt.datetime, last: dt.datetime, points: int) -> int:
    """Return the bucket width that gives at most ``points`` buckets over [first, last].

    Whole seconds, at least 1; from a minute up, whole minutes.
    """
    # Buckets cover [first, last]: floor(span / width) + 1 of them, at most ``points``.
    span = max(0.0, (last - first).total_seconds())
    width = math.floor(span / points) + 1
    return width if width < MINUTE else -(-width // MINUTE) * MINUTE


def chart_bucket_s(first: dt.datetime, last: dt.datetime, points: int) -> int:
    """Return the charts' bucket width over [first, last]: readable at any range.

    At most ``points`` buckets; below a minute, a grain of :data:`GRAINS` that still gives
    at least :data:`MIN_POINTS` of them where it can (a 60 s range: one a second), so a
    short range is drawn from its snapshots, not from two minutes.
    """
    width = bucket_seconds(first, last, points)
    if width >= MINUTE:
        return width
    span = max(0.0, (last - first).total_seconds())
    fine = max(grain for grain in GRAINS if grain <= max(1.0, span / MIN_POINTS))
    return max(fine, min(grain for grain in GRAINS if grain >= width))


def partials_of_rows(
    rows: pa.Table, settings: RollupSettings, grain_s: int
) -> tuple[pa.Table, pa.Table]:
    """Return the member and group partials of member rows (``ARROW_MEMBER_ROWS``).

    The rows of one group snapshot (one group_label and collected_at) must be in ``rows``
    together, as they are in one data file (one spool segment's rows of one date).
    """
    return member_rollups(rows, settings, grain_s), group_rollups(rows, settings, grain_s)


def stitch(members: pa.Table, groups: pa.Table, max_gap_s: float, grain_s: int) -> Pieces:
    """Stitch member and group partials of one range into its pieces."""
    return Pieces(
        **stitch_tables(members, groups, max_gap_s),
        names=group_names(members),
        grain_s=grain_s,
    )


def stitch_tables(members: pa.Table, groups: pa.Table, max_gap_s: float) -> dict[str, pa.Table]:
    """The pieces' tables (PIECES) of member and group partials, by name."""
    return {
        "minutes": stitch_minutes(members, max_gap_s),
        "segments": stitch_segments(members),
        "member_percentiles": sketch_percentiles(members, _MEMBER),
        "group_totals": stitch_group_totals(groups, max_gap_s),
        "group_percentiles": sketch_percentiles(groups, ("group_label",)),
        "member_stages": stages.member_stages(members),
    }


@dataclasses.dataclass(frozen=True)
class Results:
    """Every result table but the episode kinds' (cut from ``episodes``), and the charts' bucket."""

    tables: dict[str, pa.Table]
    bucket_s: int


def span(pieces: Pieces) -> tuple[dt.datetime, dt.datetime] | None:
    """The first and last snapshot of the pieces (None when they hold none)."""
    minutes = pieces.minutes
    if not minutes.num_rows:
        return None
    return pc.min(minutes.column("first_at")).as_py(), pc.max(minutes.column("last_at")).as_py()


def result_tables(pieces: Pieces, *, chart_points: int, worst_intervals: int) -> Results:
    """Compute the result tables of ``pieces``: figures, episodes, hours, worst minutes, chart."""
    buckets = pieces.minutes
    minutes = buckets if pieces.grain_s == MINUTE else to_minutes(buckets)
    all_episodes = arrow_tables.episodes(pieces.segments)
    members = arrow_tables.member_figures(minutes, pieces.member_percentiles, all_episodes)
    group = arrow_tables.group_figures(members, pieces.group_totals, pieces.group_percentiles)
    first_at = pc.min(group.column("first_at")).as_py()
    last_at = pc.max(group.column("last_at")).as_py()
    bucket_s = max(chart_bucket_s(first_at, last_at, chart_points), pieces.grain_s)
    tables = {
        "figures": pa.concat_tables([group, members]),
        "episodes": all_episodes,
        "hourly": arrow_tables.member_hours(minutes),
        "worst_minutes": arrow_tables.worst_minutes(
            minutes, worst_intervals, MIN_CHECKED_PER_MINUTE
        ),
        "chart_series": arrow_tables.series(buckets, first_at, bucket_s),
        "lag_stages": stages.lag_stages(pieces.member_stages),
    }
    return Results(tables, bucket_s)
