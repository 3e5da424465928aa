"""The report job: read a range (member rows or rollups), compute every figure, write it out.

Every intermediate table is keyed by ``group_label``, so a fleet's groups are computed in one
pass (one set of Spark jobs, whatever the number of groups); the driver then splits the
collected result tables by group. With the member rows
(:class:`grstats.spark.report.inputs.RowsSource`) the passes over them are:

1. sort each member's snapshots once and fold them into runs (cached; minutes and episodes
   come from the runs);
2. the group at each snapshot (no sort; cached);
3. percentiles of each member's gauges (no sort);
4. chart points, when buckets are shorter than a minute (no sort).

With the rollups (:class:`grstats.spark.report.inputs.RollupsSource`) no member row is read,
and the result tables are computed from the stitched pieces with pyarrow on the driver
(:mod:`grstats.spark.report.arrow_tables`): at most one row per member-minute, which Arrow
goes through in about a second where a cold JVM's queries took most of the report.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)

from grstats.spark.report import arrow_tables
from grstats.spark.report.episodes import EPISODES, episodes
from grstats.spark.report.figures import FIGURES, group_figures, member_figures
from grstats.spark.report.fleet import (
    GROUPS_DIR,
    fleet_summary,
    group_dirs,
    group_entry,
    render_fleet,
)
from grstats.spark.report.hourly import HOURLY, member_hours
from grstats.spark.report.inputs import (
    ReportInputError,
    RollupsSource,
    RowsSource,
    Source,
    check_table,
    open_source,
)
from grstats.spark.report.output import collect_rows, iso, write_csv, write_parquet
from grstats.spark.report.page import PageData, render, render_empty
from grstats.spark.report.series import MINUTE, SERIES, bucket_seconds, minute_series
from grstats.spark.report.summary import (
    FORMAT,
    build_summary,
    empty_summary,
    range_summary,
    settings_summary,
)
from grstats.spark.report.worst import MIN_CHECKED_PER_MINUTE, WORST, worst_minutes

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from grstats.spark.report.config import ReportConfig

__all__ = ["TABLE_NAMES", "TITLE", "ReportInputError", "ReportResult", "check_table", "run_report"]

_T = TypeVar("_T")

TITLE = "Group Replication report"
#: The result tables, in the order they are written.
TABLE_NAMES = (
    "figures",
    "episodes",
    "unreachable_episodes",
    "not_connected_episodes",
    "throttling_episodes",
    "hourly",
    "worst_minutes",
    "chart_series",
)

#: The result tables that are the episodes of one kind and value: name -> (kind, value).
EPISODE_KINDS = {
    "unreachable_episodes": ("state", "UNREACHABLE"),
    "not_connected_episodes": ("connected", "NO"),
    "throttling_episodes": ("throttling", "YES"),
}


@dataclasses.dataclass(frozen=True)
class ReportResult:
    """What a report run wrote.

    Attributes:
        html_path: the report for people.
        summary_path: summary.json.
        summary: the content of summary.json.
        empty: True when the range held no snapshots.
        range_text: the range, as people read it.
        seconds: how long the run took.
    """

    html_path: Path
    summary_path: Path
    summary: dict[str, Any]
    empty: bool
    range_text: str
    seconds: float


@dataclasses.dataclass(frozen=True)
class _Collected:
    """Every result table of every group, collected: rows, schemas, the chart bucket."""

    rows: dict[str, list[dict[str, Any]]]
    schemas: dict[str, StructType]
    bucket_s: int
    source: Source

    def of_group(self, label: str) -> _Collected:
        """The tables of the group ``label`` alone."""
        rows = {
            name: [row for row in rows if row["group_label"] == label]
            for name, rows in self.rows.items()
        }
        return dataclasses.replace(self, rows=rows)


def range_text(config: ReportConfig) -> str:
    """The range as people read it."""
    start = "the first snapshot" if config.start is None else iso(config.start)
    end = "the last snapshot" if config.end is None else iso(config.end)
    return f"from {start} to {end}"


def run_report(
    config: ReportConfig,
    *,
    spark: SparkSession,
    progress: Callable[[str], None] = lambda _: None,
) -> ReportResult:
    """Compute and write the report ``config`` describes.

    Raises:
        ReportInputError: the table cannot be read, ``--group`` names no group in range, or
            ``--source rollups`` cannot answer this report exactly.
    """
    step = _Progress(progress)
    source = open_source(spark, config, step)
    out = config.out_dir
    out.mkdir(parents=True, exist_ok=True)
    groups = source.groups()
    if config.group is not None:
        if config.group not in groups:
            known = ", ".join(repr(label) for label in groups) or "none"
            raise ReportInputError(
                f"--group: {config.group!r} is not a group label in the range "
                f"(the range's groups: {known})"
            )
        source = source.only(config.group)
        groups = {config.group: groups[config.group]}
    if not groups:
        return _write_empty(config, source, out, step)
    collected = _compute(source, config, step)
    if len(groups) == 1:
        (label,) = groups
        result, _ = _write_group(config, collected.of_group(label), out, step)
        return result
    return _write_fleet(config, collected, groups, step)


def _write_empty(config: ReportConfig, source: Source, out: Path, step: _Progress) -> ReportResult:
    """Write the report of a range without snapshots."""
    html_path, summary_path = out / "report.html", out / "summary.json"
    text = range_text(config)
    summary = empty_summary(config, source.name, source.percentile_method)
    html_path.write_text(render_empty(TITLE, text), encoding="utf-8")
    summary_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    step("the range holds no snapshots")
    return ReportResult(
        html_path, summary_path, summary, empty=True, range_text=text, seconds=step.elapsed()
    )


def _write_group(
    config: ReportConfig,
    collected: _Collected,
    out: Path,
    step: _Progress,
    tables_dir: str = "tables",
) -> tuple[ReportResult, PageData]:
    """Write the report of one group's ``collected`` tables into ``out``; return it and its page."""
    html_path, summary_path = out / "report.html", out / "summary.json"
    text = range_text(config)
    tables = collected.rows
    tables_path = out / "tables"
    tables_path.mkdir(exist_ok=True)
    for name in TABLE_NAMES:
        schema = collected.schemas[name]
        write_csv(tables_path / f"{name}.csv", schema.fieldNames(), tables[name])
        write_parquet(tables_path / name, schema, tables[name])
    step(f"wrote {tables_dir}/ ({sum(len(rows) for rows in tables.values()):,} rows)")
    source = collected.source
    summary = build_summary(
        config, tables, collected.bucket_s, source.name, source.percentile_method
    )
    summary_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    settings = (
        f"flow-control threshold {config.flow_control_threshold}; a snapshot counts for at "
        f"most {config.max_gap_s:g} s; read from the {source.name}; percentiles: "
        f"{source.percentile_method}"
    )
    page = PageData(
        title=TITLE,
        range_text=f"{text}: {summary['range']['snapshots']:,} snapshots from "
        f"{summary['range']['first_snapshot']} to {summary['range']['last_snapshot']}, "
        f"{len(summary['members'])} members",
        settings_text=settings,
        figures=tables["figures"],
        episodes=tables["episodes"],
        worst=tables["worst_minutes"],
        series=tables["chart_series"],
        bucket_s=collected.bucket_s,
        files=TABLE_NAMES,
    )
    html_path.write_text(render(page), encoding="utf-8")
    step("wrote report.html and summary.json")
    return ReportResult(
        html_path, summary_path, summary, empty=False, range_text=text, seconds=step.elapsed()
    ), dataclasses.replace(page, tables_dir=tables_dir)


def _write_fleet(
    config: ReportConfig,
    collected: _Collected,
    groups: dict[str, str],
    step: _Progress,
) -> ReportResult:
    """Write each group's own report under groups/, then the fleet's page and summary.json."""
    out = config.out_dir
    dirs = group_dirs(groups)
    entries, pages = [], {}
    for label, name in groups.items():
        directory = out / GROUPS_DIR / dirs[label]
        directory.mkdir(parents=True, exist_ok=True)
        result, page = _write_group(
            config,
            collected.of_group(label),
            directory,
            step.within(f"group {label!r}: "),
            f"{GROUPS_DIR}/{dirs[label]}/tables",
        )
        entries.append(group_entry(label, name, dirs[label], result.summary))
        pages[label] = dataclasses.replace(
            page, title=f"Group {label}" + (f" ({name})" if name else "")
        )
    source = collected.source
    top = {
        "format": FORMAT,
        "empty": False,
        "table": str(config.table_dir),
        "range": range_summary(config),
        "settings": settings_summary(config, source.name, source.percentile_method),
    }
    summary = fleet_summary(top, entries)
    html_path, summary_path = out / "report.html", out / "summary.json"
    summary_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    text = range_text(config)
    page_range = (
        f"{text}: {len(entries)} groups, {summary['range']['snapshots']:,} snapshots from "
        f"{summary['range']['first_snapshot']} to {summary['range']['last_snapshot']}"
    )
    html_path.write_text(render_fleet(TITLE, page_range, entries, pages), encoding="utf-8")
    step("wrote the fleet's report.html and summary.json")
    return ReportResult(
        html_path, summary_path, summary, empty=False, range_text=text, seconds=step.elapsed()
    )


def _collect_tables(
    tables: dict[str, _T], rows_of: Callable[[_T], list[dict[str, Any]]], step: _Progress
) -> dict[str, list[dict[str, Any]]]:
    """Every result table's rows, by name: ``rows_of`` each of ``tables``, in TABLE_NAMES order.

    The tables of EPISODE_KINDS are not in ``tables``: they are cut from the episodes' rows.
    """
    rows: dict[str, list[dict[str, Any]]] = {}
    for name in TABLE_NAMES:
        if name in EPISODE_KINDS:
            kind, value = EPISODE_KINDS[name]
            rows[name] = [r for r in rows["episodes"] if (r["kind"], r["value"]) == (kind, value)]
        else:
            rows[name] = rows_of(tables[name])
        step(f"computed {name} ({len(rows[name]):,} rows)")
    return rows


def _compute_from_rollups(
    source: RollupsSource, config: ReportConfig, step: _Progress
) -> _Collected:
    """Compute every result table from the stitched rollups, with pyarrow on the driver."""
    stitched = source.stitched()
    step(f"stitched the rollups into {stitched.minutes.num_rows:,} member-minutes")
    all_episodes = arrow_tables.episodes(stitched.segments)
    members = arrow_tables.member_figures(
        stitched.minutes, stitched.member_percentiles, all_episodes
    )
    group = arrow_tables.group_figures(members, stitched.group_totals, stitched.group_percentiles)
    step("percentiles and figures of every member and group")
    first_at = pc.min(group.column("first_at")).as_py()
    last_at = pc.max(group.column("last_at")).as_py()
    bucket_s = max(bucket_seconds(first_at, last_at, config.chart_points), source.min_bucket_s)
    minutes = stitched.minutes
    tables = {
        "figures": pa.concat_tables([group, members]),
        "episodes": all_episodes,
        "hourly": arrow_tables.member_hours(minutes),
        "worst_minutes": arrow_tables.worst_minutes(
            minutes, config.worst_intervals, MIN_CHECKED_PER_MINUTE
        ),
        "chart_series": arrow_tables.minute_series(minutes, first_at, bucket_s),
    }
    rows = _collect_tables(tables, arrow_tables.rows_of, step)
    return _Collected(rows, dict(SCHEMAS), bucket_s, source)


class _Progress:
    """Reports each step with the seconds since the run started."""

    def __init__(self, progress: Callable[[str], None]) -> None:
        self._progress = progress
        self._started = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def within(self, prefix: str) -> _Progress:
        """The same clock, each message after ``prefix``."""
        inner = _Progress(lambda message: self._progress(prefix + message))
        inner._started = self._started
        return inner

    def __call__(self, message: str) -> None:
        self._progress(f"{message} ({self.elapsed():.1f} s)")


#: The result tables' schemas (the Spark functions' and :mod:`arrow_tables`' output).
SCHEMAS = {
    "figures": FIGURES,
    "episodes": EPISODES,
    **dict.fromkeys(EPISODE_KINDS, EPISODES),
    "hourly": HOURLY,
    "worst_minutes": WORST,
    "chart_series": SERIES,
}


def _compute(source: Source, config: ReportConfig, step: _Progress) -> _Collected:
    """Compute every result table of every group in range, and collect them."""
    if isinstance(source, RollupsSource):
        return _compute_from_rollups(source, config, step)
    assert isinstance(source, RowsSource)
    pieces = source.pieces(config, step)
    cached: list[DataFrame] = list(pieces.cached)
    try:
        minutes, segment_rows = pieces.minutes, pieces.segments
        all_episodes = (
            episodes(segment_rows, "state")
            .unionByName(episodes(segment_rows, "connected"))
            .unionByName(episodes(segment_rows, "throttling"))
            .orderBy("group_label", "member_id", "kind", "start")
            .persist(StorageLevel.MEMORY_AND_DISK)
        )
        members = member_figures(minutes, pieces.member_percentiles, all_episodes).persist(
            StorageLevel.MEMORY_AND_DISK
        )
        group = group_figures(members, pieces.group_totals, pieces.group_percentiles)
        group = group.persist(StorageLevel.MEMORY_AND_DISK)  # read twice: first/last, the table
        cached += [all_episodes, members, group]
        first_last = collect_rows(
            group.agg(F.min("first_at").alias("first_at"), F.max("last_at").alias("last_at"))
        )[0]
        step("percentiles and figures of every member and group")
        bucket_s = max(
            bucket_seconds(first_last["first_at"], first_last["last_at"], config.chart_points),
            source.min_bucket_s,
        )

        if bucket_s % MINUTE == 0 or pieces.series is None:
            series = minute_series(minutes, first_last["first_at"], bucket_s)
        else:
            series = pieces.series(first_last["first_at"], bucket_s)
        tables = {
            "figures": group.unionByName(members),
            "episodes": all_episodes,
            "hourly": member_hours(minutes),
            "worst_minutes": worst_minutes(minutes, config.worst_intervals),
            "chart_series": series,
        }
        rows = _collect_tables(tables, collect_rows, step)
        # The declared schemas, not the frames' (Spark marks literal columns non-nullable), so
        # that both sources write the same Parquet schema.
        return _Collected(rows, dict(SCHEMAS), bucket_s, source)
    finally:
        for frame in cached:
            frame.unpersist()
