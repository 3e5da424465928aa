"""The report job: read a range's partials, compute every figure, write it out.

Every figure comes from one model (:mod:`grstats.spark.report.model`): partials (the
per-minute rollups ingest wrote, or partials made from the member rows at the grain the
charts need), stitched into pieces, from which pyarrow computes the result tables on the
driver. Every table is keyed by ``group_label``, so a fleet's groups are computed in one
pass; the driver then splits the result tables by group.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import TYPE_CHECKING, Any, TypeVar

from grstats.spark.report import arrow_tables, event_tables
from grstats.spark.report.fleet import (
    GROUPS_DIR,
    fleet_summary,
    group_dirs,
    group_entry,
    group_heading,
    render_fleet,
)
from grstats.spark.report.inputs import (
    ReportInputError,
    Source,
    check_table,
    open_source,
)
from grstats.spark.report.model import chart_bucket_s, result_tables, span
from grstats.spark.report.output import iso, write_csv, write_parquet
from grstats.spark.report.page import PageData, render, render_empty
from grstats.spark.report.summary import (
    FORMAT,
    build_summary,
    empty_summary,
    named,
    range_summary,
    settings_summary,
)
from grstats.spark.report.tables import (
    EPISODES,
    EVENT_LOG,
    EVENTS,
    FIGURES,
    HOURLY,
    LAG_STAGES,
    SERIES,
    SWITCHOVERS,
    WORST,
)
from grstats.spark.table import read_events, read_log

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    import pyarrow as pa
    from pyspark.sql import SparkSession

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
    "switchovers",
    "events",
    "event_log",
    "hourly",
    "worst_minutes",
    "chart_series",
    "lag_stages",
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
    schemas: dict[str, pa.Schema]
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
        ((label, name),) = groups.items()
        result, _ = _write_group(config, collected.of_group(label), out, step, group=(label, name))
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


def _write_group(  # noqa: PLR0913  (what one group's report needs, explicit)
    config: ReportConfig,
    collected: _Collected,
    out: Path,
    step: _Progress,
    tables_dir: str = "tables",
    *,
    group: tuple[str, str],
) -> tuple[ReportResult, PageData]:
    """Write the report of one group's ``collected`` tables into ``out``; return it and its page.

    ``group`` is the group's label and GR's group name ("" when unknown): the page's heading
    and summary.json name the group by them.
    """
    html_path, summary_path = out / "report.html", out / "summary.json"
    text = range_text(config)
    tables = collected.rows
    tables_path = out / "tables"
    tables_path.mkdir(exist_ok=True)
    for name in TABLE_NAMES:
        schema = collected.schemas[name]
        write_csv(tables_path / f"{name}.csv", schema.names, tables[name])
        write_parquet(tables_path / name, schema, tables[name])
    step(f"wrote {tables_dir}/ ({sum(len(rows) for rows in tables.values()):,} rows)")
    source = collected.source
    summary = named(
        build_summary(config, tables, collected.bucket_s, source.name, source.percentile_method),
        *group,
    )
    summary_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    settings = (
        f"flow-control threshold {config.flow_control_threshold}; a snapshot counts for at "
        f"most {config.max_gap_s:g} s; {_origin(source)}; percentiles: "
        f"{source.percentile_method}"
    )
    page = PageData(
        title=f"{TITLE}: group {group_heading(*group)}",
        range_text=f"{text}: {summary['range']['snapshots']:,} snapshots from "
        f"{summary['range']['first_snapshot']} to {summary['range']['last_snapshot']}, "
        f"{len(summary['members'])} members",
        settings_text=settings,
        figures=tables["figures"],
        lag_stages=tables["lag_stages"],
        episodes=tables["episodes"],
        switchovers=tables["switchovers"],
        events=tables["events"],
        event_log=tables["event_log"],
        worst=tables["worst_minutes"],
        series=tables["chart_series"],
        bucket_s=collected.bucket_s,
        files=TABLE_NAMES,
        flow_control_threshold=config.flow_control_threshold,
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
            group=(label, name),
        )
        entries.append(group_entry(label, name, dirs[label], result.summary))
        pages[label] = dataclasses.replace(page, title=f"Group {group_heading(label, name)}")
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
    "lag_stages": LAG_STAGES,
    "switchovers": SWITCHOVERS,
    "events": EVENTS,
    "event_log": EVENT_LOG,
}


def _addresses(figures: pa.Table) -> dict[str, str]:
    """Each member's ``host:port`` as its figures give it (GR's log lines name members so)."""
    return {
        row["member_id"]: f"{row['member_host']}:{row['member_port']}"
        for row in figures.select(["member_id", "member_host", "member_port"]).to_pylist()
        if row["member_id"] and row["member_host"] and row["member_port"]
    }


def _origin(source: Source) -> str:
    """Where the partials came from, as the page's settings line says it."""
    if source.name == "rollups":
        return "read from the per-minute rollups"
    return f"partials of {source.grain_s} s made from the member rows"


def _compute(source: Source, config: ReportConfig, step: _Progress) -> _Collected:
    """Compute every result table of every group in range, and collect them.

    When the range is too short for minute-wide chart buckets, the partials are made again
    from the member rows at the grain the charts need (``--source auto`` only).
    """
    pieces = source.pieces()
    step(f"stitched {pieces.minutes.num_rows:,} member pieces of {source.grain_s} s")
    found = span(pieces)
    if found is not None:
        wanted = chart_bucket_s(*found, config.chart_points)
        finer = source.finer(wanted) if wanted < source.grain_s else None
        if finer is not None:
            step(f"the range is short: chart points every {wanted} s, from the member rows")
            source, pieces = finer, finer.pieces()
            step(f"stitched {pieces.minutes.num_rows:,} member pieces of {source.grain_s} s")
    results = result_tables(
        pieces, chart_points=config.chart_points, worst_intervals=config.worst_intervals
    )
    step("percentiles and figures of every member and group")
    # The range's events: from --from, else from the first snapshot, to --to.
    start = config.start if config.start is not None or found is None else found[0]
    recorded = read_events(config.table_dir)
    shown = event_tables.events(recorded, start, config.end)
    tables = {
        **results.tables,
        "switchovers": event_tables.switchovers(recorded, start, config.end),
        "events": shown,
        "event_log": event_tables.event_log(
            shown, read_log(config.table_dir), _addresses(results.tables["figures"])
        ),
    }
    rows = _collect_tables(tables, arrow_tables.rows_of, step)
    return _Collected(rows, dict(SCHEMAS), results.bucket_s, source)
