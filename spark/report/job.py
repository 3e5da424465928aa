"""The report job: read the member rows of a time range, compute every figure, write them."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from spark.report.config import ReportConfig


@dataclasses.dataclass(frozen=True)
class ReportResult:
    """What a report run wrote.

    Attributes:
        html_path: the report for people.
        summary_path: summary.json.
        summary: the content of summary.json.
        empty: True when the range held no snapshots.
        range_text: the range, as people read it.
    """

    html_path: Path
    summary_path: Path
    summary: dict[str, Any]
    empty: bool
    range_text: str


def run_report(
    config: ReportConfig, *, master: str | None, progress: Callable[[str], None]
) -> ReportResult:
    """Compute and write the report ``config`` describes (in progress: not wired yet)."""
    raise NotImplementedError(f"report over {config.table_dir} on {master}: in progress {progress}")
