"""What one report run covers: the table, the output directory, the time range, the threshold.

Nothing here imports pyspark, so the command line can validate its arguments (and
``--help`` can print) without starting a JVM.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from typing import TYPE_CHECKING

from grstats.core.model import LABEL_RULE, is_group_label
from grstats.spark.rollup_settings import (
    ROLLUP_FLOW_CONTROL_THRESHOLD,
    ROLLUP_MAX_GAP_S,
    RollupSettings,
    RollupSettingsError,
)

if TYPE_CHECKING:
    from pathlib import Path

#: The points one chart series keeps at most; longer series are downsampled.
DEFAULT_CHART_POINTS = 2_000
#: How many worst intervals each ranking keeps.
DEFAULT_WORST_INTERVALS = 10
#: Where a report reads its figures (``--source``): see grstats.spark.report.inputs.
SOURCES = ("auto", "rollups", "rows")
#: ``group_replication_flow_control_certifier_threshold`` and ``..._applier_threshold`` default:
#: the rollups' (one definition, :mod:`grstats.spark.rollup_settings`).
DEFAULT_FLOW_CONTROL_THRESHOLD = ROLLUP_FLOW_CONTROL_THRESHOLD
#: A snapshot's state counts until the member's next snapshot, at most this long: a longer
#: silence (the collector was stopped) is time the report knows nothing about. The rollups'.
DEFAULT_MAX_GAP_S = ROLLUP_MAX_GAP_S


class ReportConfigError(ValueError):
    """A report argument is invalid; the message names the field and the value."""


def parse_time(field: str, text: str) -> dt.datetime:
    """Return ``text`` (ISO 8601 or unix seconds) as an aware UTC datetime.

    An ISO 8601 time without an offset is read as UTC. Raises ReportConfigError naming
    ``field`` and ``text`` when it is neither form.
    """
    stripped = text.strip()
    try:
        seconds = float(stripped)
    except ValueError:
        pass
    else:
        if not math.isfinite(seconds):
            raise ReportConfigError(f"{field}: {text!r} is not a finite number of unix seconds")
        try:
            return dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
        except (OverflowError, OSError, ValueError) as exc:
            raise ReportConfigError(f"{field}: {text!r} is out of range for a time") from exc
    try:
        moment = dt.datetime.fromisoformat(stripped)
    except ValueError as exc:
        raise ReportConfigError(
            f"{field}: {text!r} is neither an ISO 8601 time (2026-01-31T12:00:00Z) "
            "nor unix seconds (1769860800)"
        ) from exc
    if moment.tzinfo is None:
        return moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC)


@dataclasses.dataclass(frozen=True)
class ReportConfig:
    """One report run.

    Attributes:
        table_dir: the ingested Parquet dataset (``grstats spark ingest --table``).
        out_dir: where report.html, summary.json and the tables go (created if missing).
        start: include snapshots collected at or after this time (None: from the first).
        end: include snapshots collected before this time (None: up to the last).
        flow_control_threshold: the certifier and applier queue size above which flow
            control throttles writers (MySQL's default 25000).
        chart_points: at most this many points per series in a chart.
        worst_intervals: how many minutes each "worst intervals" ranking keeps.
        max_gap_s: the longest time one snapshot's state counts for, in seconds (a longer
            gap between two snapshots of a member is time without data).
        group: report only the group of this ``group_label`` (None: every group in range).
        source: "rollups" (the per-minute rollups ingest wrote), "rows" (every member row),
            or "auto": the rollups when they answer this report exactly, else the rows.
    """

    table_dir: Path
    out_dir: Path
    start: dt.datetime | None = None
    end: dt.datetime | None = None
    flow_control_threshold: int = DEFAULT_FLOW_CONTROL_THRESHOLD
    chart_points: int = DEFAULT_CHART_POINTS
    worst_intervals: int = DEFAULT_WORST_INTERVALS
    max_gap_s: float = DEFAULT_MAX_GAP_S
    group: str | None = None
    source: str = "auto"

    def __post_init__(self) -> None:
        for name in ("start", "end"):
            value = getattr(self, name)
            if value is not None and value.tzinfo is None:
                raise ReportConfigError(f"{name}: {value.isoformat()} has no time zone")
        if self.start is not None and self.end is not None and self.start >= self.end:
            raise ReportConfigError(
                f"end: {self.end.isoformat()} is not after start {self.start.isoformat()}"
            )
        try:
            self.rollup_settings  # noqa: B018  (the threshold and max gap are the rollups' rule)
        except RollupSettingsError as exc:
            raise ReportConfigError(str(exc)) from exc
        if self.chart_points < 10:
            raise ReportConfigError(f"chart_points: {self.chart_points} is below 10")
        if self.group is not None and not is_group_label(self.group):
            raise ReportConfigError(f"group: {self.group!r} is not a group label ({LABEL_RULE})")
        if self.source not in SOURCES:
            raise ReportConfigError(f"source: {self.source!r} is not one of {', '.join(SOURCES)}")
        if self.worst_intervals < 1:
            raise ReportConfigError(f"worst_intervals: {self.worst_intervals} is below 1")

    @property
    def rollup_settings(self) -> RollupSettings:
        """The rollup settings of this report's threshold and max gap (what it reads them with)."""
        return RollupSettings(self.flow_control_threshold, self.max_gap_s)
