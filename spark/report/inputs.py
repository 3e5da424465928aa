"""Where a report's figures come from: the member rows, or the per-minute rollups ingest wrote.

Both sources give the same intermediate tables (:class:`Pieces`): each member's minutes, its
segments (for the episodes), the members' and groups' percentiles and the groups' totals over
their snapshots. Everything after them is shared, so the two sources differ only where a
rollup cannot be exact:

* percentiles: the rows use ``percentile_approx`` (rank within 1/10,000 of the samples); the
  rollups merge per-minute log-bucket sketches (each percentile within 1% of the value at
  its rank, whole numbers below 50 exact; :mod:`grstats.spark.sketch`);
* chart buckets: from the rollups at least a minute wide.

``--source auto`` (the default) reads the rollups when they can answer the report exactly as
the rows would (:func:`rollups_refusal` says why not otherwise): every commit of the table
wrote them, with this report's flow-control threshold and longest gap, and the range starts
and ends on whole minutes. Otherwise it reads the rows, as ``--source rows`` always does.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import TYPE_CHECKING, Any

from pyspark import StorageLevel
from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)

from grstats.spark.report.episodes import segments
from grstats.spark.report.minutes import member_minutes, member_runs
from grstats.spark.report.output import collect_rows
from grstats.spark.report.percentiles import (
    group_percentiles,
    member_percentiles,
)
from grstats.spark.report.rollup_job import RollupPieces, stitch_rollups
from grstats.spark.report.series import MINUTE, member_series
from grstats.spark.report.snapshots import group_snapshots, group_totals
from grstats.spark.report.source import select_range
from grstats.spark.report.steps import gauges, member_steps
from grstats.spark.report.summary import PERCENTILE_METHOD
from grstats.spark.sketch import ACCURACY_TEXT
from grstats.spark.table import (
    META_DIR,
    TableError,
    TableLog,
    read_member_rows,
    rollup_files,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from pyspark.sql import DataFrame, SparkSession

    from grstats.spark.report.config import ReportConfig


class ReportInputError(Exception):
    """The table cannot be read as asked; the message names the path or the option."""


@dataclasses.dataclass(frozen=True)
class Pieces:
    """The intermediate tables every result table is made of (lazy, some cached).

    Attributes:
        minutes: MINUTES rows (:mod:`grstats.spark.report.minutes`).
        segments: SEGMENTS rows (:mod:`grstats.spark.report.episodes`).
        member_percentiles: MEMBER_PERCENTILES rows.
        group_totals: GROUP_TOTALS rows (:mod:`grstats.spark.report.snapshots`).
        group_percentiles: GROUP_PERCENTILES rows.
        series: each member's chart points for buckets shorter than a minute (None: the
            source has no finer grain than a minute).
        cached: the frames to unpersist when the report is written.
    """

    minutes: DataFrame
    segments: DataFrame
    member_percentiles: DataFrame
    group_totals: DataFrame
    group_percentiles: DataFrame
    series: Callable[[dt.datetime, int], DataFrame] | None
    cached: tuple[DataFrame, ...]


class Source:
    """One report's input: which groups it holds.

    The member rows (:class:`RowsSource`) give their intermediate tables as Spark DataFrames
    (``pieces``); the rollups (:class:`RollupsSource`) give theirs as Arrow tables
    (``stitched``).
    """

    #: "rows" or "rollups", as summary.json's settings say.
    name: str
    #: How the percentiles are computed, in a sentence.
    percentile_method: str
    #: The narrowest chart bucket, in seconds.
    min_bucket_s: int

    def groups(self) -> dict[str, str]:
        """Return the group labels in range, sorted, each with its GR group name ("" unknown)."""
        raise NotImplementedError

    def only(self, label: str) -> Source:
        """Return this source cut to the group ``label``."""
        raise NotImplementedError


class RowsSource(Source):
    """The member rows of the range: every figure from every snapshot."""

    name = "rows"
    percentile_method = PERCENTILE_METHOD
    min_bucket_s = 1

    def __init__(self, rows: DataFrame) -> None:
        self.rows = rows

    def groups(self) -> dict[str, str]:
        """Return the group labels of the rows, each with its latest non-empty group name."""
        found = self.rows.groupBy("group_label").agg(
            F.max_by(
                F.when(F.col("group_name") != "", F.col("group_name")),
                F.when(F.col("group_name") != "", F.col("collected_at")),
            ).alias("group_name")
        )
        return {
            row["group_label"]: row["group_name"] or ""
            for row in sorted(collect_rows(found), key=lambda row: row["group_label"])
        }

    def only(self, label: str) -> RowsSource:
        """Return the rows of the group ``label``."""
        return RowsSource(self.rows.filter(F.col("group_label") == label))

    def pieces(self, config: ReportConfig, step: Callable[[str], None]) -> Pieces:
        """Sort each member's rows once into runs; the rest comes from the runs and the rows."""
        threshold = config.flow_control_threshold
        gauge_rows = gauges(self.rows, threshold)
        runs = member_runs(member_steps(self.rows, threshold, config.max_gap_s))
        runs = runs.persist(StorageLevel.MEMORY_AND_DISK)
        step(f"sorted each member's snapshots into {runs.count():,} runs")
        snapshots = group_snapshots(gauge_rows, config.max_gap_s)
        snapshots = snapshots.persist(StorageLevel.MEMORY_AND_DISK)
        step(f"the group at each of {snapshots.count():,} snapshots")
        minutes = member_minutes(runs).persist(StorageLevel.MEMORY_AND_DISK)

        def series(origin: dt.datetime, bucket_s: int) -> DataFrame:
            return member_series(gauge_rows, origin, bucket_s)

        return Pieces(
            minutes=minutes,
            segments=segments(runs),
            member_percentiles=member_percentiles(gauge_rows),
            group_totals=group_totals(snapshots),
            group_percentiles=group_percentiles(snapshots),
            series=series,
            cached=(runs, snapshots, minutes),
        )


class RollupsSource(Source):
    """The per-minute rollups of the range (:mod:`grstats.spark.rollup`): no member row is read.

    The partials are stitched once, by Python tasks that read them with pyarrow
    (:mod:`grstats.spark.report.rollup_job`): a month of a group's rollups is a few hundred
    thousand rows, which Arrow's kernels stitch in less time than a cold JVM takes to plan
    and run the window queries that did it before (docs/benchmarks.md, "Spark report"). The
    groups' names come from the same pass, and ``only`` cuts its results. The report's result
    tables are computed from them on the driver (:mod:`grstats.spark.report.arrow_tables`).
    """

    name = "rollups"
    percentile_method = ACCURACY_TEXT
    min_bucket_s = MINUTE

    def __init__(self, spark: SparkSession, stitch: Callable[[], RollupPieces]) -> None:
        self.spark = spark
        self._stitch = stitch
        self._pieces: RollupPieces | None = None

    def stitched(self) -> RollupPieces:
        """The stitched partials (computed on the first call)."""
        if self._pieces is None:
            self._pieces = self._stitch()
        return self._pieces

    def groups(self) -> dict[str, str]:
        """Return the group labels of the rollups, each with its latest non-empty group name."""
        return self.stitched().names

    def only(self, label: str) -> RollupsSource:
        """Return the rollups of the group ``label``."""
        return RollupsSource(self.spark, lambda: self.stitched().only(label))


def _whole_minute(moment: dt.datetime | None) -> bool:
    return moment is None or (moment.second == 0 and moment.microsecond == 0)


def rollups_refusal(config: ReportConfig, settings: dict[str, Any] | None) -> str | None:
    """Return why the rollups cannot answer this report exactly, or None when they can.

    ``settings`` is the table's :meth:`grstats.spark.table.TableLog.rollup_settings`.
    """
    if settings is None:
        return (
            "the table has no rollups for some of its data (loaded by a grstats before "
            "rollups, or nothing loaded yet)"
        )
    if float(settings["flow_control_threshold"]) != config.flow_control_threshold:
        return (
            f"the rollups were made with flow-control threshold "
            f"{settings['flow_control_threshold']}, not {config.flow_control_threshold}"
        )
    if float(settings["max_gap_s"]) != config.max_gap_s:
        return (
            f"the rollups were made with max gap {settings['max_gap_s']} s, "
            f"not {config.max_gap_s:g} s"
        )
    for name, moment in (("--from", config.start), ("--to", config.end)):
        if not _whole_minute(moment):
            assert moment is not None
            return f"{name} {moment.isoformat()} is not a whole minute (rollups are per minute)"
    return None


def open_source(spark: SparkSession, config: ReportConfig, say: Callable[[str], None]) -> Source:
    """Return the source ``config.source`` asks for, cut to the report's range.

    Raises:
        ReportInputError: the table is not one ingest wrote, its log is broken, or
            ``--source rollups`` was asked where the rollups cannot answer exactly.
    """
    table_dir = config.table_dir
    check_table(table_dir)
    try:
        settings = TableLog(table_dir).rollup_settings()
        refusal = rollups_refusal(config, settings)
        if config.source == "rollups" and refusal is not None:
            raise ReportInputError(f"--source rollups: {refusal}")
        if config.source != "rows" and refusal is None:
            say("reading the per-minute rollups")
            # Only the files of the days in range are read (a date's minutes are in its files).
            days = (
                None if config.start is None else config.start.astimezone(dt.UTC).date(),
                None if config.end is None else config.end.astimezone(dt.UTC).date(),
            )
            member_files = rollup_files(table_dir, "members", *days)
            group_files = rollup_files(table_dir, "groups", *days)
            return RollupsSource(
                spark,
                lambda: stitch_rollups(spark, member_files, group_files, config),
            )
        if config.source == "auto":
            say(f"reading the member rows: {refusal}")
        rows = read_member_rows(spark, table_dir)
    except TableError as exc:
        raise ReportInputError(f"--table: {str(table_dir)!r}: {exc}") from exc
    return RowsSource(select_range(rows, config.start, config.end))


def check_table(table_dir: Path) -> None:
    """Raise ReportInputError unless ``table_dir`` is a table that ingest wrote."""
    if not (table_dir / META_DIR).is_dir():
        raise ReportInputError(
            f"--table: {str(table_dir)!r} is not a table that 'grstats spark ingest' wrote "
            f"(it has no {META_DIR}/ directory)"
        )
