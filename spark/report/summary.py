"""summary.json: the report's figures for scripts.

Layout (``format`` 1; keys are only ever added)::

    {"format": 1, "empty": false, "table": "...",
     "group_label": "orders", "group_name": "8a84f397-...",  # "" when GR's name is unknown
     "range": {...},
     "settings": {..., "source": "rows" or "rollups", "percentiles": "how"},
     "group": {FIGURES columns}, "members": [{FIGURES columns}, ...],
     "lag_stages": [{LAG_STAGES columns}, ...],  # per member: transport, waiting, apply
     "unreachable_episodes": [...], "not_connected_episodes": [...],
     "throttling": {"group_s": ..., "episodes": n},
     "switchovers": [{SWITCHOVERS columns}, ...], "events": n,
     "event_log": [{"event": n, "event_time": ..., "member_id": ..., "event_type": ...,
                    "lines": [{"logged": ..., ..., "data": ..., "line_member_id": ...}]}],
     "worst_minutes": {"lag_seconds": [...], "applier_queue": [...], "conflict_rate": [...]},
     "tables": {"figures": {"csv": "tables/figures.csv", "parquet": "tables/figures", "rows": n}}}

Times are ISO 8601 UTC with a Z; durations and rates are numbers; unknown figures are null.
``group_label`` is the rows' (the collector's label of the group, or the label its agents
answered, else ``default``); it and ``group_name`` were added to format 1, and
``switchovers`` (the primary switchovers in range) and ``events`` (how many events the range
holds; the rows are in ``tables/events``) after them, then ``lag_stages`` (each member's lag
by stage, a stage without samples null with the reason in ``unknown``), then each switchover's
write outage (``writable_at``, ``write_outage_s``, ``write_outage_end``: until the new
primary's super_read_only turned OFF, or until the election when its events do not say),
then ``event_log``: for each event of ``tables/events`` (``event``: its number there, from 1)
that has any, the GR log lines around it (EVENT_LOG's, as ``tables/event_log`` holds them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grstats.spark.report.output import iso, json_value
from grstats.spark.report.tables import EVENT_LOG, RANKINGS
from grstats.spark.sketch import ACCURACY_TEXT

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from grstats.spark.report.config import ReportConfig

#: The summary's format version.
FORMAT = 1
#: How the percentiles are computed, as the summary and the page state it (one method).
PERCENTILE_METHOD = ACCURACY_TEXT


def _clean(row: Mapping[str, Any]) -> dict[str, Any]:
    return {key: json_value(value) for key, value in row.items()}


def range_summary(config: ReportConfig) -> dict[str, Any]:
    """The range as asked: ``from`` and ``to`` (null when open)."""
    return {
        "from": None if config.start is None else iso(config.start),
        "to": None if config.end is None else iso(config.end),
    }


def settings_summary(
    config: ReportConfig, source: str = "rows", percentiles: str = PERCENTILE_METHOD
) -> dict[str, Any]:
    """The settings that shape the figures: ``source`` is "rows" or "rollups"."""
    return {
        "flow_control_threshold": config.flow_control_threshold,
        "max_gap_s": config.max_gap_s,
        "source": source,
        "percentiles": percentiles,
    }


def empty_summary(
    config: ReportConfig, source: str = "rows", percentiles: str = PERCENTILE_METHOD
) -> dict[str, Any]:
    """The summary of a range without snapshots."""
    return {
        "format": FORMAT,
        "empty": True,
        "message": "the range holds no snapshots",
        "table": str(config.table_dir),
        "range": range_summary(config),
        "settings": settings_summary(config, source, percentiles),
    }


def named(summary: Mapping[str, Any], label: str, name: str) -> dict[str, Any]:
    """``summary`` naming its group: ``group_label`` and ``group_name`` after ``table``."""
    found: dict[str, Any] = {}
    for key, value in summary.items():
        found[key] = value
        if key == "table":
            found |= {"group_label": label, "group_name": name}
    return found


def _event_log(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """EVENT_LOG's rows per event: the event (its number, time, member, type) and its lines."""
    by_event: dict[int, dict[str, Any]] = {}
    for row in rows:
        clean = _clean(row)
        number = clean["event"]
        if number not in by_event:
            by_event[number] = {
                **{name: clean[name] for name in EVENT_LOG.names[1:5]},
                "lines": [],
            }
        by_event[number]["lines"].append({name: clean[name] for name in EVENT_LOG.names[5:]})
    return list(by_event.values())


def build_summary(
    config: ReportConfig,
    tables: Mapping[str, Sequence[Mapping[str, Any]]],
    bucket_s: int,
    source: str = "rows",
    percentiles: str = PERCENTILE_METHOD,
) -> dict[str, Any]:
    """Return summary.json's content from the collected result tables (by table name).

    The group's ``group_label`` and ``group_name`` are :func:`named`'s to add.
    """
    figures = tables["figures"]
    group = next(row for row in figures if row["scope"] == "group")
    throttling = tables["throttling_episodes"]
    worst = tables["worst_minutes"]
    return {
        "format": FORMAT,
        "empty": False,
        "table": str(config.table_dir),
        "range": {
            **range_summary(config),
            "first_snapshot": json_value(group["first_at"]),
            "last_snapshot": json_value(group["last_at"]),
            "snapshots": group["snapshots"],
        },
        "settings": {**settings_summary(config, source, percentiles), "chart_bucket_s": bucket_s},
        "group": _clean(group),
        "members": [_clean(row) for row in figures if row["scope"] == "member"],
        "lag_stages": [_clean(row) for row in tables["lag_stages"]],
        "unreachable_episodes": [_clean(row) for row in tables["unreachable_episodes"]],
        "not_connected_episodes": [_clean(row) for row in tables["not_connected_episodes"]],
        "throttling": {"group_s": group["throttling_s"], "episodes": len(throttling)},
        "switchovers": [_clean(row) for row in tables["switchovers"]],
        "events": len(tables["events"]),
        "event_log": _event_log(tables.get("event_log", ())),
        "worst_minutes": {
            ranking: [_clean(row) for row in worst if row["ranking"] == ranking]
            for ranking in RANKINGS
        },
        "tables": {
            name: {"csv": f"tables/{name}.csv", "parquet": f"tables/{name}", "rows": len(rows)}
            for name, rows in tables.items()
        },
    }
