"""The table's events dataset: each group's events, each exactly once.

The collector spools the agents' ``replication_group_events`` rows with its snapshots
(:mod:`grstats.collector.events`), and may spool one event several times (after a restart,
or a failover between agents). Ingest's executors hand each segment's events back to the
driver as plain rows (:class:`grstats.spark.decode.DecodedSegment`); the driver keeps those
that no earlier commit holds (:func:`new_events`) and writes them in the commit's one events
file, ``events/commit=N/c<N>-events.parquet``, committed with the segments' data files
(:mod:`grstats.spark.table`). The table holds each event once, however often it was
spooled: an event is its whole row (:data:`IDENTITY`: its group's label and every column of
``replication_group_events``; agents serve the same rows, so a row spooled twice is the same
event), and a load is committed whole or not at all. GR's group name is not part of it: an
agent answers "" until it knows the group, so the same event may be spooled with and
without; the name kept is the one known.

The schema is derived from the agents' table (:data:`grstats.core.rows.REPLICATION_GROUP_EVENTS`):
its columns in lower case, EVENT_TIME a UTC timestamp, after the group's ``group_label`` and
``group_name`` as the records name it. Events are few (at most 500 per member in an agent,
about 50 a failover), so the driver reads the committed ones whole with pyarrow. No pyspark
here (the table's log is imported where it is read): the report's tables derive from
:data:`ARROW_EVENTS` and are computed in-process.
"""

from __future__ import annotations

import os
import uuid
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from grstats.core.rows import REPLICATION_GROUP_EVENTS, Kind

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from pathlib import Path

_TS = pa.timestamp("us", tz="UTC")

#: The events dataset's schema: the group, then replication_group_events' columns.
ARROW_EVENTS = pa.schema(
    [
        ("group_label", pa.string()),
        ("group_name", pa.string()),
        *(
            (column.name.lower(), _TS if column.kind is Kind.TIMESTAMP else pa.string())
            for column in REPLICATION_GROUP_EVENTS.columns
        ),
    ]
)
#: What makes an event itself: every column but ``group_name``.
IDENTITY = tuple(name for name in ARROW_EVENTS.names if name != "group_name")
#: The order events are kept and shown in: per group, by time, then reporter, member, type
#: (the agents' own order, ``grstats.agent.served.group_events``).
ORDER = ("group_label", "event_time", "reported_by", "member_id", "event_type")
_PARQUET = {"compression": "zstd", "compression_level": 1}


def events_table(rows: Iterable[Sequence[Any]]) -> pa.Table:
    """The ARROW_EVENTS table of plain event rows (group label, group name, then the cells)."""
    return rows_table(rows, ARROW_EVENTS)


def rows_table(rows: Iterable[Sequence[Any]], schema: pa.Schema) -> pa.Table:
    """The ``schema`` table of plain rows, a cell per field; timestamps given as µs (int)."""
    columns: list[Sequence[Any]] = list(zip(*rows, strict=True)) or [[] for _ in schema]
    arrays = [
        pa.array(cells, pa.int64()).cast(field.type)
        if pa.types.is_timestamp(field.type)
        else pa.array(cells, field.type)
        for field, cells in zip(schema, columns, strict=True)
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def ordered(events: pa.Table) -> pa.Table:
    """``events`` in :data:`ORDER`."""
    return events.sort_by([(name, "ascending") for name in ORDER])


def new_events(found: pa.Table, committed: pa.Table) -> pa.Table:
    """The events of ``found`` that ``committed`` lacks, each once, in :data:`ORDER`."""
    keys = list(IDENTITY)
    distinct = found.group_by(keys, use_threads=False).aggregate([("group_name", "max")])
    distinct = distinct.rename_columns([*keys, "group_name"])
    if committed.num_rows:
        distinct = distinct.join(committed.select(keys), keys=keys, join_type="left anti")
    return ordered(distinct.select(ARROW_EVENTS.names).cast(ARROW_EVENTS))


def read_event_files(files: Sequence[Path]) -> pa.Table:
    """The events of ``files`` (ARROW_EVENTS; none: empty).

    :func:`grstats.spark.table.read_events` gives it the files of the table's events dataset.
    """
    if not files:
        return ARROW_EVENTS.empty_table()
    return pa.concat_tables(pq.read_table(path, schema=ARROW_EVENTS) for path in files)


def write_events(publish: Path, relative: str, events: pa.Table) -> tuple[str, int] | None:
    """Write a commit's events at ``relative`` under ``publish`` (fsynced); the path and count.

    ``relative`` is the path the commit names relative to the table
    (:func:`grstats.spark.table.events_file_name`). No events: no file, None.
    """
    if not events.num_rows:
        return None
    target = publish / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    with temporary.open("wb") as file:
        pq.write_table(events, file, **_PARQUET)
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(target)
    return relative, events.num_rows


def in_range(events: pa.Table, start: Any, end: Any) -> pa.Table:
    """The events whose EVENT_TIME is in [``start``, ``end``) (None: unbounded)."""
    times = events.column("event_time")
    keep = pa.array([True] * events.num_rows, pa.bool_())
    if start is not None:
        keep = pc.and_(keep, pc.greater_equal(times, pa.scalar(start, _TS)))
    if end is not None:
        keep = pc.and_(keep, pc.less(times, pa.scalar(end, _TS)))
    return events.filter(keep)
