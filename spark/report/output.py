"""Writing result tables: Parquet, CSV and JSON values, all from the driver.

Result tables are small (figures, episodes, hours, chart points), so the driver collects
each one once (one Spark job per table), writes its CSV and its Parquet file (pyarrow, with
the frame's own schema) and hands the rows to summary.json and report.html. Asking Spark to
write the Parquet would compute each table a second time, and on a cluster would need
``--out`` to be reachable from the executors. Timestamps leave Spark as microseconds and
become aware UTC datetimes here, whatever the driver machine's time zone.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructType,
    TimestampType,
)

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
    write_parquet(tables_dir / name, frame.schema, rows)
    return rows


#: Arrow types of the Spark types result tables use (timestamps are UTC microseconds).
_ARROW_TYPES: dict[type[DataType], pa.DataType] = {
    StringType: pa.string(),
    LongType: pa.int64(),
    IntegerType: pa.int32(),
    DoubleType: pa.float64(),
    BooleanType: pa.bool_(),
    TimestampType: pa.timestamp("us", tz="UTC"),
    DateType: pa.date32(),
}


def arrow_schema(schema: StructType) -> pa.Schema:
    """Return the Arrow schema of a result table's Spark ``schema``."""
    fields = []
    for field in schema.fields:
        arrow_type = _ARROW_TYPES.get(type(field.dataType))
        if arrow_type is None:
            raise TypeError(f"column {field.name!r}: no Arrow type for {field.dataType}")
        fields.append(pa.field(field.name, arrow_type, nullable=field.nullable))
    return pa.schema(fields)


def write_parquet(directory: Path, schema: StructType, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` as ``directory/part-00000.parquet``, replacing what was there."""
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.iterdir():
        if old.is_file():
            old.unlink()
    arrow = arrow_schema(schema)
    table = pa.Table.from_pylist(rows, schema=arrow)
    pq.write_table(table, directory / "part-00000.parquet", compression="zstd")
