"""The report job: read the member rows of a range, compute every figure, write them out.

Passes over the member rows (the rest works on small tables):

1. sort each member's snapshots once and fold them into runs (cached; minutes and episodes
   come from the runs);
2. the group at each snapshot (no sort; cached);
3. percentiles of each member's gauges (no sort);
4. chart points (no sort).
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import TYPE_CHECKING, Any

from pyspark import StorageLevel
from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)

from grstats.spark.report.episodes import episodes, segments
from grstats.spark.report.figures import group_figures, member_figures
from grstats.spark.report.fleet import (
    GROUPS_DIR,
    fleet_summary,
    group_dirs,
    group_entry,
    render_fleet,
)
from grstats.spark.report.hourly import member_hours
from grstats.spark.report.minutes import member_minutes, member_runs
from grstats.spark.report.output import collect_rows, iso, write_table
from grstats.spark.report.page import PageData, render, render_empty
from grstats.spark.report.percentiles import group_percentiles, member_percentiles
from grstats.spark.report.series import MINUTE, bucket_seconds, member_series, minute_series
from grstats.spark.report.snapshots import group_snapshots
from grstats.spark.report.source import select_range
from grstats.spark.report.steps import gauges, member_steps
from grstats.spark.report.summary import (
    FORMAT,
    PERCENTILE_METHOD,
    build_summary,
    empty_summary,
    range_summary,
    settings_summary,
)
from grstats.spark.report.worst import worst_minutes
from grstats.spark.table import META_DIR, TableError, read_member_rows

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from pyspark.sql import DataFrame, SparkSession

    from grstats.spark.report.config import ReportConfig

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


class ReportInputError(Exception):
    """The table cannot be read; the message names the path."""


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


def check_table(table_dir: Path) -> None:
    """Raise ReportInputError unless ``table_dir`` is a table that ingest wrote."""
    if not (table_dir / META_DIR).is_dir():
        raise ReportInputError(
            f"--table: {str(table_dir)!r} is not a table that 'grstats spark ingest' wrote "
            f"(it has no {META_DIR}/ directory)"
        )


def load_rows(spark: SparkSession, table_dir: Path) -> DataFrame:
    """Return the committed member rows of the table in ``table_dir``.

    Raises:
        ReportInputError: ``table_dir`` is not a table that ingest wrote, or its log is broken.
    """
    check_table(table_dir)
    try:
        return read_member_rows(spark, table_dir)
    except TableError as exc:
        raise ReportInputError(f"--table: {str(table_dir)!r}: {exc}") from exc


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
    rows: DataFrame | None = None,
) -> ReportResult:
    """Compute and write the report ``config`` describes.

    ``rows`` (MEMBER_ROWS) replaces reading ``config.table_dir``, for callers that have the
    rows already.
    """
    step = _Progress(progress)

    source = rows if rows is not None else load_rows(spark, config.table_dir)
    selected = select_range(source, config.start, config.end)
    out = config.out_dir
    out.mkdir(parents=True, exist_ok=True)
    groups = _groups(selected)
    if config.group is not None:
        if config.group not in groups:
            known = ", ".join(repr(label) for label in groups) or "none"
            raise ReportInputError(
                f"--group: {config.group!r} is not a group label in the range "
                f"(the range's groups: {known})"
            )
        selected = selected.filter(F.col("group_label") == config.group)
        groups = {config.group: groups[config.group]}
    if len(groups) <= 1:
        result, _ = _report_one(config, selected, out, step)
        return result
    return _report_fleet(config, selected, groups, step)


def _groups(rows: DataFrame) -> dict[str, str]:
    """The group labels in ``rows``, sorted, each with its latest non-empty group name."""
    found = rows.groupBy("group_label").agg(
        F.max_by(
            F.when(F.col("group_name") != "", F.col("group_name")),
            F.when(F.col("group_name") != "", F.col("collected_at")),
        ).alias("group_name")
    )
    return {
        row["group_label"]: row["group_name"] or ""
        for row in sorted(collect_rows(found), key=lambda row: row["group_label"])
    }


def _report_one(
    config: ReportConfig,
    selected: DataFrame,
    out: Path,
    step: _Progress,
    tables_dir: str = "tables",
) -> tuple[ReportResult, PageData | None]:
    """Write the report of one group's rows into ``out``; return it and its page's data."""
    html_path, summary_path = out / "report.html", out / "summary.json"
    text = range_text(config)
    if selected.isEmpty():
        summary = empty_summary(config)
        html_path.write_text(render_empty(TITLE, text), encoding="utf-8")
        summary_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        step("the range holds no snapshots")
        return ReportResult(
            html_path, summary_path, summary, empty=True, range_text=text, seconds=step.elapsed()
        ), None
    tables, bucket_s, cached = _compute(selected, config, step)
    try:
        tables_path = out / "tables"
        tables_path.mkdir(exist_ok=True)
        collected: dict[str, list[dict[str, Any]]] = {}
        for name in TABLE_NAMES:
            collected[name] = write_table(tables[name], tables_path, name)
            step(f"wrote {tables_dir}/{name} ({len(collected[name])} rows)")
    finally:
        for frame in cached:
            frame.unpersist()
    summary = build_summary(config, collected, bucket_s)
    summary_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    settings = (
        f"flow-control threshold {config.flow_control_threshold}; a snapshot counts for at "
        f"most {config.max_gap_s:g} s; percentiles: {PERCENTILE_METHOD}"
    )
    page = PageData(
        title=TITLE,
        range_text=f"{text}: {summary['range']['snapshots']:,} snapshots from "
        f"{summary['range']['first_snapshot']} to {summary['range']['last_snapshot']}, "
        f"{len(summary['members'])} members",
        settings_text=settings,
        figures=collected["figures"],
        episodes=collected["episodes"],
        worst=collected["worst_minutes"],
        series=collected["chart_series"],
        bucket_s=bucket_s,
        files=TABLE_NAMES,
    )
    html_path.write_text(render(page), encoding="utf-8")
    step("wrote report.html and summary.json")
    return ReportResult(
        html_path, summary_path, summary, empty=False, range_text=text, seconds=step.elapsed()
    ), dataclasses.replace(page, tables_dir=tables_dir)


def _report_fleet(
    config: ReportConfig,
    selected: DataFrame,
    groups: dict[str, str],
    step: _Progress,
) -> ReportResult:
    """Write each group's own report under groups/, then the fleet's page and summary.json."""
    out = config.out_dir
    dirs = group_dirs(groups)
    entries, pages = [], {}
    for label, name in groups.items():
        step(f"group {label!r}")
        directory = out / GROUPS_DIR / dirs[label]
        directory.mkdir(parents=True, exist_ok=True)
        rows = selected.filter(F.col("group_label") == label)
        result, page = _report_one(
            config, rows, directory, step, f"{GROUPS_DIR}/{dirs[label]}/tables"
        )
        assert page is not None  # the group has rows in the range
        entries.append(group_entry(label, name, dirs[label], result.summary))
        pages[label] = dataclasses.replace(
            page, title=f"Group {label}" + (f" ({name})" if name else "")
        )
    top = {
        "format": FORMAT,
        "empty": False,
        "table": str(config.table_dir),
        "range": range_summary(config),
        "settings": settings_summary(config),
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


class _Progress:
    """Reports each step with the seconds since the run started."""

    def __init__(self, progress: Callable[[str], None]) -> None:
        self._progress = progress
        self._started = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def __call__(self, message: str) -> None:
        self._progress(f"{message} ({self.elapsed():.1f} s)")


def _compute(
    rows: DataFrame, config: ReportConfig, step: Callable[[str], None]
) -> tuple[dict[str, DataFrame], int, list[DataFrame]]:
    """Return the result tables (lazy, over cached intermediates), the chart bucket, the caches."""
    threshold = config.flow_control_threshold
    gauge_rows = gauges(rows, threshold)
    runs = member_runs(member_steps(rows, threshold, config.max_gap_s))
    runs = runs.persist(StorageLevel.MEMORY_AND_DISK)
    count = runs.count()
    step(f"sorted each member's snapshots into {count:,} runs")
    snapshots = group_snapshots(gauge_rows, config.max_gap_s)
    snapshots = snapshots.persist(StorageLevel.MEMORY_AND_DISK)
    count = snapshots.count()
    step(f"the group at each of {count:,} snapshots")
    minutes = member_minutes(runs).persist(StorageLevel.MEMORY_AND_DISK)
    segment_rows = segments(runs)
    all_episodes = (
        episodes(segment_rows, "state")
        .unionByName(episodes(segment_rows, "connected"))
        .unionByName(episodes(segment_rows, "throttling"))
        .orderBy("member_id", "kind", "start")
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    members = member_figures(minutes, member_percentiles(gauge_rows), all_episodes).persist(
        StorageLevel.MEMORY_AND_DISK
    )
    group = group_figures(members, snapshots, group_percentiles(snapshots))
    group = group.persist(StorageLevel.MEMORY_AND_DISK)  # read twice: first/last, the table
    figures = group.unionByName(members)
    first_last = collect_rows(group.select("first_at", "last_at"))[0]
    step("percentiles and figures of every member and the group")
    bucket_s = bucket_seconds(first_last["first_at"], first_last["last_at"], config.chart_points)

    def kind(name: str, value: str) -> DataFrame:
        return all_episodes.filter((all_episodes.kind == name) & (all_episodes.value == value))

    tables = {
        "figures": figures,
        "episodes": all_episodes,
        "unreachable_episodes": kind("state", "UNREACHABLE"),
        "not_connected_episodes": kind("connected", "NO"),
        "throttling_episodes": kind("throttling", "YES"),
        "hourly": member_hours(minutes),
        "worst_minutes": worst_minutes(minutes, config.worst_intervals),
        "chart_series": (
            minute_series(minutes, first_last["first_at"], bucket_s)
            if bucket_s % MINUTE == 0
            else member_series(gauge_rows, first_last["first_at"], bucket_s)
        ),
    }
    return tables, bucket_s, [runs, snapshots, minutes, all_episodes, members, group]
