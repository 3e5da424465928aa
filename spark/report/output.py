"""Writing result tables: Parquet, CSV and JSON values, all from the driver.

Result tables are small (figures, episodes, hours, chart points) and computed on the driver
(:mod:`grstats.spark.report.model`); each is written as CSV and as a Parquet file (pyarrow,
with its schema from :mod:`grstats.spark.report.tables`) and handed as rows to summary.json
and report.html. Times are aware UTC datetimes, whatever the driver machine's time zone.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from pathlib import Path


def text(value: object) -> str:
    """Return ``value`` as CSV text: ISO 8601 UTC times with Z, empty for null."""
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        return iso(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    return str(value)


def iso(moment: dt.datetime) -> str:
    """Return ``moment`` as ISO 8601 in UTC with a Z: ``2026-01-31T12:00:00.250000Z``."""
    text = moment.astimezone(dt.UTC).replace(tzinfo=None).isoformat()
    return f"{text}Z"


def json_value(value: object) -> Any:
    """Return ``value`` ready for json.dumps: times as ISO 8601 text, non-finite floats null."""
    if isinstance(value, dt.datetime):
        return iso(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_csv(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` to ``path`` as CSV with a header row."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        writer.writerows([text(row[name]) for name in columns] for row in rows)


def write_parquet(directory: Path, schema: pa.Schema, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` as ``directory/part-00000.parquet``, replacing what was there."""
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.iterdir():
        if old.is_file():
            old.unlink()
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(table, directory / "part-00000.parquet", compression="zstd")
