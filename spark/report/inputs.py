"""Where a report's partials come from: the per-minute rollups ingest wrote, or the member rows.

Both give the same pieces (:class:`grstats.spark.report.model.Pieces`), stitched from
partials made by one code (:mod:`grstats.spark.rollup`), so the two differ only in what
the rollups cannot hold: a grain finer than a minute. One percentile method for both: the
partials' sketches (:data:`grstats.spark.sketch.ACCURACY_TEXT`).

``--source auto`` (the default) reads the rollups when they answer the report exactly
(:func:`rollups_refusal` says why not otherwise): every commit of the table wrote them,
with this report's flow-control threshold and longest gap, and the range starts and ends
on whole minutes; and the range is long enough for minute-wide chart buckets (at least
:data:`grstats.spark.report.model.MIN_POINTS` minutes). Otherwise the report makes partials
from the member rows, at the grain its charts need, as ``--source rows`` always does.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from grstats.collector.table_log import META_DIR
from grstats.spark.report.model import MINUTE, chart_bucket_s
from grstats.spark.report.rollup_job import partials_from_rows, stitch_rollups
from grstats.spark.sketch import ACCURACY_TEXT
from grstats.spark.table import TableError, TableLog, data_files, rollup_files

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from pyspark.sql import SparkSession

    from grstats.spark.report.config import ReportConfig
    from grstats.spark.report.model import Pieces


class ReportInputError(Exception):
    """The table cannot be read as asked; the message names the path or the option."""


class Source:
    """One report's input: its pieces, made on first use, and which groups they hold.

    Attributes:
        name: "rows" or "rollups", as summary.json's settings say.
        percentile_method: how the percentiles are computed, in a sentence.
        grain_s: the partials' width in seconds.
    """

    percentile_method = ACCURACY_TEXT

    def __init__(
        self,
        name: str,
        grain_s: int,
        make: Callable[[], Pieces],
        finer: Callable[[int], Source] | None = None,
    ) -> None:
        self.name = name
        self.grain_s = grain_s
        self._make = make
        self._finer = finer
        self._pieces: Pieces | None = None

    def pieces(self) -> Pieces:
        """The stitched pieces (made on the first call)."""
        if self._pieces is None:
            self._pieces = self._make()
        return self._pieces

    def groups(self) -> dict[str, str]:
        """Return the group labels in range, sorted, each with its latest GR group name."""
        return self.pieces().names

    def only(self, label: str) -> Source:
        """Return this source cut to the group ``label``."""
        finer = self._finer
        return Source(
            self.name,
            self.grain_s,
            lambda: self.pieces().only(label),
            None if finer is None else lambda grain_s: finer(grain_s).only(label),
        )

    def finer(self, grain_s: int) -> Source | None:
        """The same range made from the member rows at ``grain_s`` (None: not allowed)."""
        return None if self._finer is None else self._finer(grain_s)


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
    # Only the files of the days in range are read (a date's rows are in its files).
    days = (
        None if config.start is None else config.start.astimezone(dt.UTC).date(),
        None if config.end is None else config.end.astimezone(dt.UTC).date(),
    )
    try:
        settings = TableLog(table_dir).rollup_settings()
        refusal = rollups_refusal(config, settings)
        if config.source == "rollups" and refusal is not None:
            raise ReportInputError(f"--source rollups: {refusal}")
        rows = data_files(table_dir, *days)
        grain_s = _grain(config, rows)
        if config.source == "auto" and refusal is None and grain_s < MINUTE:
            refusal = f"the range is short: chart points every {grain_s} s need the member rows"
        if config.source != "rows" and refusal is None:
            say("reading the per-minute rollups")
            member_files = rollup_files(table_dir, "members", *days)
            group_files = rollup_files(table_dir, "groups", *days)
            return Source(
                "rollups",
                MINUTE,
                lambda: stitch_rollups(spark, member_files, group_files, config),
                None
                if config.source == "rollups"
                else lambda grain_s: _rows(spark, config, rows, grain_s),
            )
    except TableError as exc:
        raise ReportInputError(f"--table: {str(table_dir)!r}: {exc}") from exc
    if config.source == "auto":
        say(f"making partials from the member rows: {refusal}")
    return _rows(spark, config, rows, grain_s)


def _rows(spark: SparkSession, config: ReportConfig, files: Sequence[Path], grain_s: int) -> Source:
    """The source that makes partials of ``grain_s`` seconds from the member rows in ``files``."""
    return Source("rows", grain_s, lambda: partials_from_rows(spark, files, config, grain_s))


def _grain(config: ReportConfig, files: Sequence[Path]) -> int:
    """The partials' width the charts of the range need: the chart bucket, at most a minute.

    The range is the one asked, or where not given the first and last snapshot the data
    files' Parquet statistics name.
    """
    first, last = config.start, config.end
    if first is None or last is None:
        found = _span(files)
        if found is None:
            return MINUTE
        first = found[0] if first is None else max(first, found[0])
        last = found[1] if last is None else min(last, found[1])
    if last <= first:
        return MINUTE
    return min(MINUTE, chart_bucket_s(first, last, config.chart_points))


def _span(files: Sequence[Path]) -> tuple[dt.datetime, dt.datetime] | None:
    """The earliest and latest ``collected_at`` the files' row-group statistics hold.

    Only the files of the first and last date directories are opened (dates sort as text).
    """
    low: dt.datetime | None = None
    high: dt.datetime | None = None
    if not files:
        return None
    edges = {min(path.parent.name for path in files), max(path.parent.name for path in files)}
    for path in (path for path in files if path.parent.name in edges):
        metadata = pq.ParquetFile(path).metadata
        index = metadata.schema.names.index("collected_at")
        for group in range(metadata.num_row_groups):
            statistics = metadata.row_group(group).column(index).statistics
            if statistics is None or not statistics.has_min_max:
                continue
            first, last = _moment(statistics.min), _moment(statistics.max)
            low = first if low is None else min(low, first)
            high = last if high is None else max(high, last)
    return None if low is None or high is None else (low, high)


def _moment(value: Any) -> dt.datetime:
    """A timestamp statistic as an aware UTC datetime (pyarrow gives a datetime or µs)."""
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=int(value))


def check_table(table_dir: Path) -> None:
    """Raise ReportInputError unless ``table_dir`` is a table that ingest wrote."""
    if not (table_dir / META_DIR).is_dir():
        raise ReportInputError(
            f"--table: {str(table_dir)!r} is not a table that 'grstats spark ingest' wrote "
            f"(it has no {META_DIR}/ directory)"
        )
