"""The executor's part of ingest: decode one sealed segment and stage its Parquet files.

Runs inside Spark's Python workers (a task stages a few consecutive segments), so it imports
no pyspark. Each segment gives one Parquet file per UTC date it covers, under the batch's
staging directory::

    <staging>/collected_date=2026-01-05/segment-00000000000000000007.parquet

File names depend only on the segment and the date, and each file is written under a name
unique to the attempt and then renamed, so a retried or speculative attempt replaces a file
whole and never leaves a mixture. Nothing here makes data visible: only the driver's commit
does (see :mod:`grstats.spark.table`).
"""

from __future__ import annotations

import functools
import gc
import os
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from grstats.collector.errors import SegmentCorrupt, UnknownSchema
from grstats.spark.decode import ARROW_MEMBER_ROWS, decode_segment
from grstats.spark.schema import PARTITION_COLUMN

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

#: What a task reports for one segment (``status``).
LOADED, CORRUPT, UNKNOWN_SCHEMA = "loaded", "corrupt", "unknown_schema"

#: Parquet settings of the data files: zstd level 1 with dictionaries for the text columns only
#: writes fewer bytes than Spark's default (Snappy, dictionaries everywhere), and no slower
#: (docs/benchmarks.md, "Spark ingest", has the figures).
PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 1,
    "use_dictionary": [f.name for f in ARROW_MEMBER_ROWS if f.type == pa.string()],
}


@dataclass(frozen=True, slots=True)
class StagedSegment:
    """What one task did with one segment.

    Attributes:
        name: the segment's file name.
        bytes: its size when read.
        status: LOADED, CORRUPT or UNKNOWN_SCHEMA.
        records: records (snapshots) decoded (0 unless LOADED).
        rows: member rows written (0 unless LOADED).
        files: the staged files, relative to the staging directory, with their row counts.
        offset: the bad frame's byte offset (CORRUPT, UNKNOWN_SCHEMA).
        reason: what is wrong (CORRUPT), or the error's message (UNKNOWN_SCHEMA).
    """

    name: str
    bytes: int
    status: str
    records: int = 0
    rows: int = 0
    files: list[tuple[str, int]] = field(default_factory=list)
    offset: int | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return a plain dict (what travels back from the executors)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StagedSegment:
        """Return the result :meth:`to_dict` gave."""
        return cls(**{**data, "files": [tuple(pair) for pair in data["files"]]})


def stage_segment(path: Path | str, staging: Path | str) -> StagedSegment:
    """Decode the segment at ``path`` and write its rows under ``staging``, one file per date.

    A corrupt segment or one with a record of an unknown schema version writes nothing and is
    reported, not raised, so that the driver sees every segment's outcome.
    """
    path, staging = Path(path), Path(staging)
    size = path.stat().st_size
    try:
        decoded = decode_segment(path)
    except SegmentCorrupt as exc:
        return StagedSegment(path.name, size, CORRUPT, offset=exc.offset, reason=exc.reason)
    except UnknownSchema as exc:
        return StagedSegment(path.name, size, UNKNOWN_SCHEMA, reason=str(exc))
    files = [
        (str(target.relative_to(staging)), rows)
        for target, rows in _write_by_date(decoded.rows, staging, path.name)
    ]
    return StagedSegment(
        path.name, size, LOADED, records=decoded.records, rows=decoded.rows.num_rows, files=files
    )


def _write_by_date(rows: pa.Table, staging: Path, segment: str) -> Iterator[tuple[Path, int]]:
    if not rows.num_rows:
        return
    stem = segment.rsplit(".", 1)[0]
    dates = rows.column(PARTITION_COLUMN)
    days = sorted(pc.unique(dates).to_pylist())
    for day in days:
        part = rows if len(days) == 1 else rows.filter(pc.equal(dates, pa.scalar(day, pa.date32())))
        target = staging / f"{PARTITION_COLUMN}={day.isoformat()}" / f"{stem}.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
        with temporary.open("wb") as file:
            pq.write_table(part.drop_columns([PARTITION_COLUMN]), file, **PARQUET_OPTIONS)
            file.flush()
            os.fsync(file.fileno())  # the commit may make it visible: it must be on disk
        temporary.replace(target)
        yield target, part.num_rows


def stage_partition(tasks: Iterable[Sequence[tuple[str, str]]]) -> Iterator[dict[str, Any]]:
    """Spark's mapPartitions function: stage each ``(segment path, staging dir)``.

    A partition holds one task: a list of consecutive segments (see :func:`grstats.spark.ingest`).
    """
    _freeze_imported_objects()
    for task in tasks:
        for path, staging in task:
            yield stage_segment(path, staging).to_dict()


@functools.cache
def _freeze_imported_objects() -> None:
    """Once per worker, exclude what the imports made from the collector's later scans.

    pyspark's daemon runs ``gc.collect()`` after every task of a reused worker; with pyspark,
    pyarrow and these modules loaded, that full scan of objects that live as long as the worker
    was a large part of the gap between two tasks (docs/benchmarks.md, "Spark ingest").
    Modules, classes and functions live as long as the worker; what is garbage already is
    collected first, so nothing collectable is kept.
    """
    gc.collect()
    gc.freeze()
