"""Writing result tables: Parquet through Spark, CSV and JSON values through the driver.

Result tables are small (figures, episodes, hours, chart points), so the driver collects
each one once, writes its CSV and hands the rows to summary.json and report.html; Spark
writes the same rows as Parquet. Timestamps leave Spark as microseconds and become aware
UTC datetimes here, whatever the driver machine's time zone.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)
from pyspark.sql.types import TimestampType

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import DataFrame


def collect_rows(frame: DataFrame) -> list[dict[str, Any]]:
    """Return ``frame``'s rows as dicts, timestamps as aware UTC datetimes."""
    stamps = {f.name for f in frame.schema.fields if isinstance(f.dataType, TimestampType)}
    selected = frame.select(
        *(F.unix_micros(F.col(n)).alias(n) if n in stamps else F.col(n) for n in frame.columns)
    )
    rows = []
    for row in selected.collect():
        values = row.asDict()
        for name in stamps:
            micros = values[name]
            values[name] = None if micros is None else from_micros(micros)
        rows.append(values)
    return rows


def from_micros(micros: int) -> dt.datetime:
    """Return µs since the epoch as an aware UTC datetime."""
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=micros)


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


def write_table(frame: DataFrame, tables_dir: Path, name: str) -> list[dict[str, Any]]:
    """Write ``frame`` as ``tables_dir/name/`` (Parquet) and ``tables_dir/name.csv``.

    Returns the rows, for the summary and the HTML page.
    """
    rows = collect_rows(frame)
    write_csv(tables_dir / f"{name}.csv", frame.columns, rows)
    frame.coalesce(1).write.mode("overwrite").parquet(str(tables_dir / name))
    return rows
