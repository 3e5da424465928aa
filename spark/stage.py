"""The executor's part of ingest: decode one sealed segment and stage its Parquet files.

Runs inside Spark's Python workers (a task stages a few consecutive segments), so it imports
no pyspark. Each segment gives one Parquet file per UTC date it covers, under the batch's
staging directory::

    <staging>/collected_date=2026-01-05/segment-00000000000000000007.parquet

and its rollups (:mod:`grstats.spark.rollup`), one file of each kind per UTC date of their
minutes::

    <staging>/rollups/members/collected_date=2026-01-05/segment-00000000000000000007.parquet
    <staging>/rollups/groups/collected_date=2026-01-05/segment-00000000000000000007.parquet

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
from grstats.spark.decode import ARROW_MEMBER_ROWS, ColumnsUnusable, decode_segment, read_columns
from grstats.spark.rollup import (
    ARROW_GROUP_ROLLUPS,
    ARROW_MEMBER_ROLLUPS,
    DEFAULT_SETTINGS,
    ROLLUPS_DIR,
    RollupSettings,
    group_rollups,
    member_rollups,
)
from grstats.spark.schema import PARTITION_COLUMN

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

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
#: Rollup kind -> (what makes it from a segment's rows and the settings, its Parquet
#: settings: the data files' style).
ROLLUP_KINDS: dict[str, tuple[Callable[[pa.Table, RollupSettings], pa.Table], dict[str, Any]]] = {
    kind: (
        make,
        {
            "compression": "zstd",
            "compression_level": 1,
            "use_dictionary": [f.name for f in schema if f.type == pa.string()],
        },
    )
    for kind, make, schema in (
        ("members", member_rollups, ARROW_MEMBER_ROLLUPS),
        ("groups", group_rollups, ARROW_GROUP_ROLLUPS),
    )
}
_US_PER_DAY = pa.scalar(86_400_000_000, pa.int64())

#: What one Spark task stages: the rollup settings (:meth:`RollupSettings.to_json`: plain
#: values travel to the executors), whether to read columns files, and its consecutive
#: ``(segment path, staging dir)`` pairs.
StageTask = tuple[dict[str, Any], bool, list[tuple[str, str]]]


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
        rollups: the staged rollup files (both kinds), relative to the staging directory,
            with their row counts.
        offset: the bad frame's byte offset (CORRUPT, UNKNOWN_SCHEMA).
        reason: what is wrong (CORRUPT), or the error's message (UNKNOWN_SCHEMA).
        from_columns: whether its rows were read from its columns file (else its records
            were decoded).
        events: its records' events as plain rows (group label, group name, then the cells
            of ``replication_group_events``), for the driver to deduplicate
            (:mod:`grstats.spark.events`); events are few, so they travel back whole.
        log_lines: its records' GR log lines likewise (the cells of
            ``replication_group_member_log``; :mod:`grstats.spark.member_log`).
    """

    name: str
    bytes: int
    status: str
    records: int = 0
    rows: int = 0
    files: list[tuple[str, int]] = field(default_factory=list)
    offset: int | None = None
    reason: str | None = None
    rollups: list[tuple[str, int]] = field(default_factory=list)
    from_columns: bool = False
    events: list[list[Any]] = field(default_factory=list)
    log_lines: list[list[Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Return a plain dict (what travels back from the executors)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StagedSegment:
        """Return the result :meth:`to_dict` gave."""
        return cls(
            **{
                **data,
                "files": [tuple(pair) for pair in data["files"]],
                "rollups": [tuple(pair) for pair in data.get("rollups", ())],
            }
        )


def stage_segment(
    path: Path | str,
    staging: Path | str,
    settings: RollupSettings = DEFAULT_SETTINGS,
    *,
    use_columns: bool = True,
) -> StagedSegment:
    """Read the segment at ``path`` and write its rows under ``staging``, one file per date.

    The rows come from the segment's columns file where it has a good one (and
    ``use_columns``), else from decoding its records. Its rollups, made with ``settings``,
    go under ``staging``'s ROLLUPS_DIR. A corrupt segment or one with a record of an unknown
    schema version writes nothing and is reported, not raised, so that the driver sees every
    segment's outcome.
    """
    path, staging = Path(path), Path(staging)
    size = path.stat().st_size
    from_columns = use_columns
    try:
        try:
            if not use_columns:
                raise ColumnsUnusable("not asked to")  # noqa: TRY301 (one fallback for all)
            decoded = read_columns(path, size)
        except ColumnsUnusable:  # none, or not this segment's: the records say
            from_columns = False
            decoded = decode_segment(path)
    except SegmentCorrupt as exc:
        return StagedSegment(path.name, size, CORRUPT, offset=exc.offset, reason=exc.reason)
    except UnknownSchema as exc:
        return StagedSegment(path.name, size, UNKNOWN_SCHEMA, reason=str(exc))
    stem = path.name.rsplit(".", 1)[0]
    rows = decoded.rows
    files = [
        (str(target.relative_to(staging)), count)
        for target, count in write_by_date(
            rows.drop_columns([PARTITION_COLUMN]),
            rows.column(PARTITION_COLUMN),
            staging,
            stem,
            PARQUET_OPTIONS,
        )
    ]
    rollups = []
    if rows.num_rows:
        for kind, (make, options) in ROLLUP_KINDS.items():
            rolled = make(rows, settings)
            rollups += [
                (str(target.relative_to(staging)), count)
                for target, count in write_by_date(
                    rolled,
                    _utc_dates(rolled.column("minute")),
                    staging / ROLLUPS_DIR / kind,
                    stem,
                    options,
                )
            ]
    return StagedSegment(
        path.name,
        size,
        LOADED,
        records=decoded.records,
        rows=rows.num_rows,
        files=files,
        rollups=rollups,
        from_columns=from_columns,
        events=decoded.events,
        log_lines=decoded.log_lines,
    )


def _utc_dates(times: pa.ChunkedArray) -> pa.Array:
    """The UTC date of each timestamp (date32), as the decoder dates ``collected_at``."""
    micros = times.combine_chunks().cast(pa.int64())
    return pc.divide(micros, _US_PER_DAY).cast(pa.int32()).cast(pa.date32())


def write_by_date(
    rows: pa.Table,
    dates: pa.Array | pa.ChunkedArray,
    directory: Path,
    stem: str,
    options: dict[str, Any],
) -> Iterator[tuple[Path, int]]:
    """Write ``rows`` as one file per date of ``dates`` (one per row) under ``directory``.

    Each file is written under a hidden temporary name (no reader lists it), fsynced and
    renamed to ``<directory>/collected_date=D/<stem>.parquet``; yields each file and its rows.
    """
    if not rows.num_rows:
        return
    days = sorted(pc.unique(dates).to_pylist())
    for day in days:
        part = rows if len(days) == 1 else rows.filter(pc.equal(dates, pa.scalar(day, pa.date32())))
        target = directory / f"{PARTITION_COLUMN}={day.isoformat()}" / f"{stem}.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
        with temporary.open("wb") as file:
            pq.write_table(part, file, **options)
            file.flush()
            os.fsync(file.fileno())  # the commit may make it visible: it must be on disk
        temporary.replace(target)
        yield target, part.num_rows


def stage_partition(tasks: Iterable[StageTask]) -> Iterator[dict[str, Any]]:
    """Spark's mapPartitions function: stage each task's ``(segment path, staging dir)``.

    A partition holds one task: the rollup settings (:meth:`RollupSettings.to_json`),
    whether to read columns files, and a list of consecutive segments (see
    :func:`grstats.spark.ingest`).
    """
    _freeze_imported_objects()
    for settings, use_columns, segments in tasks:
        rollups = RollupSettings.from_json(settings)
        for path, staging in segments:
            yield stage_segment(path, staging, rollups, use_columns=use_columns).to_dict()


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
