"""Read one spool segment's Arrow member rows (the MEMBER_ROWS columns), fast.

Two ways to the same rows: :func:`read_columns` takes the segment's columns file, which the
collector's spool writer left beside it (:mod:`grstats.collector.columns`), and wraps its
bytes in Arrow arrays; :func:`decode_segment` decodes the segment's records, for a segment
without a good columns file. Both derive the same columns with :func:`_assemble`. The files
themselves are read and checked by the collector, which owns their format
(:mod:`grstats.collector.segment_reader`: the frames and their CRC-32s, and whether a columns
file belongs to its segment); this module only turns what it gives into Arrow.

This is the ingest's hot path and runs on Spark's executors, so it imports neither pyspark nor
anything that starts a JVM: only the collector's segment reader and record constants, msgpack,
pyarrow and :mod:`grstats.core.gtid`.

Each record (snapshot) becomes one row per member of its ``replication_group_members`` table,
joined with the member's rows of the other three tables on MEMBER_ID (a member missing from a
table gets nulls there). Decoding works a column at a time: rows of records whose tables share a
column layout are buffered, transposed with ``zip`` and handed to pyarrow as whole columns, so
no Python code runs per cell. The GTID counts are computed once per distinct text (the texts
change far less often than the counters, so a segment holds few of them), and cached across
segments in the same worker.
"""

from __future__ import annotations

import functools
import gc
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgpack  # type: ignore[import-untyped]
import pyarrow as pa
import pyarrow.compute as pc

from grstats.collector import segment_reader
from grstats.collector.columns import LATER_RECORD_COLUMNS, TAKEN, tuple_getter
from grstats.collector.errors import RecordError, SegmentCorrupt
from grstats.collector.records import (
    DEFAULT_GROUP_LABEL,
    KNOWN_SCHEMAS,
    TABLE_NAMES,
    RecordKey,
    check_schema,
    record_events,
    record_log,
)
from grstats.collector.segment_reader import ColumnsUnusable, StoredColumns
from grstats.core.gtid import GtidError, GtidSet

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path

# ColumnsUnusable is the collector's (its segment reader raises it); ingest catches it here.
__all__ = [
    "ARROW_MEMBER_ROWS",
    "BATCH_RECORDS",
    "DEFAULT_GROUP_LABEL",
    "ColumnsUnusable",
    "DecodedSegment",
    "decode_segment",
    "gtid_counts",
    "read_columns",
]

MEMBERS, STATS, LAG, GTIDS = TABLE_NAMES
_TABLE_KEYS = tuple(name.encode() for name in TABLE_NAMES)
_four_tables = operator.itemgetter(*_TABLE_KEYS)

_TS = pa.timestamp("us", tz="UTC")
# Constants as Arrow scalars: a Python number given to a compute function is converted on
# each call, and that conversion tries to import dateutil, which fails (a search of sys.path)
# where it is not installed (docs/benchmarks.md, "Spark ingest", has the cost).
_US_PER_DAY = pa.scalar(86_400_000_000, pa.int64())
_ZERO = pa.scalar(0, pa.int64())
_NULL_INT = pa.scalar(None, pa.int64())
_YES = pa.scalar("YES", pa.string())

#: MEMBER_ROWS as an Arrow schema (what Spark's mapInArrow and the Parquet files hold).
ARROW_MEMBER_ROWS = pa.schema(
    [
        ("collected_at", _TS),
        ("collected_date", pa.date32()),
        ("agent", pa.string()),
        ("served_at", _TS),
        ("member_id", pa.string()),
        ("member_host", pa.string()),
        ("member_port", pa.int32()),
        ("member_state", pa.string()),
        ("member_role", pa.string()),
        ("member_version", pa.string()),
        ("view_id", pa.string()),
        ("count_transactions_in_queue", pa.int64()),
        ("count_transactions_checked", pa.int64()),
        ("count_conflicts_detected", pa.int64()),
        ("count_transactions_rows_validating", pa.int64()),
        ("count_transactions_remote_in_applier_queue", pa.int64()),
        ("count_transactions_remote_applied", pa.int64()),
        ("count_transactions_local_proposed", pa.int64()),
        ("count_transactions_local_rollback", pa.int64()),
        ("transactions_committed_all_members", pa.string()),
        ("last_conflict_free_transaction", pa.string()),
        ("last_applied_transaction", pa.string()),
        ("last_applied_original_commit", _TS),
        ("last_applied_end_apply", _TS),
        ("applying_transaction", pa.string()),
        ("applying_original_commit", _TS),
        ("applier_lag_seconds", pa.float64()),
        ("gtid_executed", pa.string()),
        ("gtid_executed_count", pa.int64()),
        ("gtids_ahead_of_committed_all", pa.int64()),
        ("connected", pa.bool_()),
        ("in_view", pa.bool_()),
        ("last_seen", _TS),
        ("age_ms", pa.int64()),
        ("segment", pa.string()),
        ("record_offset", pa.int64()),
        ("group_label", pa.string()),
        ("group_name", pa.string()),
        ("agent_group_label", pa.string()),
        ("transport_seconds", pa.float64()),
        ("waiting_seconds", pa.float64()),
        ("apply_seconds", pa.float64()),
    ]
)

#: The label of records written before records carried one (the collector's label of its one
#: group of ``--node``), as msgpack gives it back.
_DEFAULT_LABEL = DEFAULT_GROUP_LABEL.encode()
#: The record's keys (:class:`grstats.collector.records.RecordKey`) as msgpack gives them back:
#: records are unpacked raw, their texts as bytes.
_SCHEMA = RecordKey.SCHEMA.encode()
_COLLECTED_AT_US = RecordKey.COLLECTED_AT_US.encode()
_AGENT = RecordKey.AGENT.encode()
_SERVED_AT_US = RecordKey.SERVED_AT_US.encode()
_TABLES = RecordKey.TABLES.encode()
_GROUP_LABEL = RecordKey.GROUP_LABEL.encode()
_GROUP_NAME = RecordKey.GROUP_NAME.encode()
_AGENT_GROUP_LABEL = RecordKey.AGENT_GROUP_LABEL.encode()
_EVENTS = RecordKey.EVENTS.encode()
_LOG = RecordKey.LOG.encode()
_COLUMNS = RecordKey.COLUMNS.encode()
_ROWS = RecordKey.ROWS.encode()

#: The output columns taken from the four tables' cells.
_CELL_OUTPUTS = tuple(out for table in TAKEN.values() for out, _ in table)
_YES_NO = frozenset({"connected", "in_view"})


@dataclass(frozen=True, slots=True)
class DecodedSegment:
    """One segment's member rows and what it held.

    Attributes:
        name: the segment's file name.
        rows: the member rows, ARROW_MEMBER_ROWS, in record order.
        records: how many records (snapshots) it held.
        events: the records' events, in record order, each its record's group label and
            group name, then its cells in ``EVENT_COLUMNS`` order (plain values: they travel
            back to the driver, which deduplicates them; :mod:`grstats.spark.events`).
        log_lines: the records' GR log lines likewise, each its cells in ``LOG_COLUMNS``
            order after the group's (:mod:`grstats.spark.member_log`).
    """

    name: str
    rows: pa.Table
    records: int
    events: list[list[Any]] = field(default_factory=list)
    log_lines: list[list[Any]] = field(default_factory=list)


def decode_segment(path: Path | str) -> DecodedSegment:
    """Return the member rows of the sealed segment at ``path``.

    Raises:
        SegmentCorrupt: bad magic, a torn or CRC-failing frame, or a payload that is not a
            record (names the file, the frame's offset and the reason).
        UnknownSchema: a record of a schema version this code does not read (names the file,
            the frame's offset and the version).
    """
    frames = segment_reader.read_frames(path)
    path = frames.path
    builder = _Builder(path.name)
    records = 0
    # The records hold no reference cycles; the cyclic collector would scan again and again
    # while millions of short-lived objects come and go, so it is paused (msgpack's
    # documentation advises it; docs/benchmarks.md, "Spark ingest", has the figures).
    collecting = gc.isenabled()
    gc.disable()
    try:
        add = builder.add
        for offset, payload in frames:
            record = _unpack(payload, path, offset)
            version = record.get(_SCHEMA)
            if version.__class__ is not int or version not in KNOWN_SCHEMAS:
                check_schema({RecordKey.SCHEMA: version}, f"{path} at offset {offset}")  # raises
            try:
                add(record, offset)
                if _EVENTS in record:
                    builder.events += _events(record, f"record at offset {offset}")
                if _LOG in record:
                    builder.log_lines += _log_lines(record, f"record at offset {offset}")
            except RecordError as exc:
                raise SegmentCorrupt(path, offset, str(exc)) from exc
            except (KeyError, TypeError, IndexError, ValueError, AttributeError) as exc:
                raise SegmentCorrupt(path, offset, f"not a schema-1 record: {exc!r}") from exc
            records += 1
        rows = builder.finish()
    except _BadBatch as exc:
        raise SegmentCorrupt(
            path, exc.offset, f"a record from this frame on holds a cell of the wrong type: {exc}"
        ) from exc
    finally:
        if collecting:
            gc.enable()
    return DecodedSegment(path.name, rows, records, builder.events, builder.log_lines)


def _events(record: dict[bytes, Any], where: str) -> list[list[Any]]:
    """The events of a record as :func:`_unpack` gives it: its group, then each event's cells.

    Raises:
        RecordError: a malformed events table or cell (named with its row, column and value),
            or a text that is not UTF-8.
    """
    label = _text(record.get(_GROUP_LABEL, _DEFAULT_LABEL))
    group = _text(record.get(_GROUP_NAME, b""))
    events = record_events({RecordKey.EVENTS: _texts(record[_EVENTS])}, where)
    return [[label, group, *event] for event in events]


def _log_lines(record: dict[bytes, Any], where: str) -> list[list[Any]]:
    """The GR log lines of a record as :func:`_unpack` gives it, as :func:`_events` its events.

    Raises:
        RecordError: a malformed log table or cell, or a text that is not UTF-8.
    """
    label = _text(record.get(_GROUP_LABEL, _DEFAULT_LABEL))
    group = _text(record.get(_GROUP_NAME, b""))
    lines = record_log({RecordKey.LOG: _texts(record[_LOG])}, where)
    return [[label, group, *line] for line in lines]


def _text(value: object) -> object:
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError as exc:
            raise RecordError(f"events: {value!r:.100} is not UTF-8 text") from exc
    return value


def _texts(value: object) -> object:
    """``value`` with every bytes in it (msgpack's raw texts) as str, tuples as lists."""
    if isinstance(value, dict):
        return {_text(key): _texts(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_texts(item) for item in value]
    return _text(value)


def read_columns(segment: Path | str, segment_size: int) -> DecodedSegment:
    """Return the member rows of the sealed segment at ``segment`` from its columns file.

    The rows equal :func:`decode_segment`'s (the spool writer kept them from the same records,
    :mod:`grstats.collector.columns`), without unpacking a record: each column's bytes become
    an Arrow array as they are. Whether the file is usable, and this segment's, is the
    collector's check (:func:`grstats.collector.segment_reader.read_columns`: its CRC-32, the
    segment's size and last frame), so a segment damaged after its seal still loads the rows
    the columns file holds, as they were sealed (``--ignore-columns`` decodes, and so
    verifies, every record).

    Raises:
        ColumnsUnusable: there is no columns file, or it is torn, corrupt, of another version,
            made for a segment of another size or content, or not the rows of a segment (the
            reason says which).
    """
    stored = segment_reader.read_columns(segment, segment_size)
    try:
        return _from_columns(stored)
    except ColumnsUnusable:
        raise
    except (ValueError, TypeError, KeyError, IndexError, pa.ArrowException) as exc:
        raise ColumnsUnusable(f"not a columns file this code reads: {exc!r}") from exc


def _from_columns(stored: StoredColumns) -> DecodedSegment:
    count = stored.rows
    read = {column: _stored_column(spec, count) for column, spec in stored.columns.items()}
    for column, value in LATER_RECORD_COLUMNS.items():  # a file written before the column
        if column not in read:
            read[column] = pa.array([value.encode()] * count, pa.binary())
    batch = _assemble(read, count, stored.name)
    return DecodedSegment(
        stored.name,
        pa.Table.from_batches([batch], ARROW_MEMBER_ROWS),
        stored.records,
        [list(event) for event in stored.events],
        [list(line) for line in stored.log_lines],
    )


def _stored_column(spec: Sequence[Any], count: int) -> pa.Array:
    """One column of a columns file as an Arrow array of ``count`` cells (int64/float64/binary)."""
    kind = spec[0]
    if kind in ("int", "float"):
        _, data, validity = spec
        if len(data) != 8 * count or len(validity) not in (0, (count + 7) // 8):
            raise ColumnsUnusable(f"a column of {len(data)} bytes for {count} rows")
        data_type = pa.int64() if kind == "int" else pa.float64()
        bitmap = pa.py_buffer(validity) if validity else None
        return pa.Array.from_buffers(data_type, count, [bitmap, pa.py_buffer(data)], null_count=-1)
    if kind == "text":
        _, texts, codes = spec
        if len(codes) != 4 * count or not texts or texts[0] is not None:
            raise ColumnsUnusable(f"a column of {len(codes)} bytes of codes for {count} rows")
        indices = pa.Array.from_buffers(pa.int32(), count, [None, pa.py_buffer(codes)])
        return pc.take(pa.array(texts, pa.binary()), indices)  # code 0 is null
    raise ColumnsUnusable(f"a column of kind {kind!r}")


def _unpack(payload: bytes, path: Path, offset: int) -> dict[bytes, Any]:
    """The record of one frame, as msgpack gives it with ``raw=True``: texts stay bytes.

    Bytes are decoded faster than str, and Arrow checks their UTF-8 a whole column at a time.
    """
    try:
        record = msgpack.unpackb(payload, raw=True, use_list=False, strict_map_key=False)
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise SegmentCorrupt(path, offset, f"payload is not msgpack ({exc!r})") from exc
    if not isinstance(record, dict):
        raise SegmentCorrupt(
            path, offset, f"payload is a msgpack {type(record).__name__}, not a map"
        )
    return record


class _BadBatch(Exception):
    """A batch holds a cell Arrow cannot take for its column; ``offset`` is its first frame."""

    def __init__(self, offset: int, message: str) -> None:
        super().__init__(message)
        self.offset = offset


#: Records per Arrow batch: the cells kept from them are turned into columns while they are
#: still in the CPU's caches, in calls few enough that Arrow's cost per call does not count.
BATCH_RECORDS = 512


@dataclass(frozen=True, slots=True)
class _Plan:
    """How to take the wanted cells out of one column layout of the four tables.

    For each table: MEMBER_ID's position, a getter returning ``(MEMBER_ID, wanted cells...)``
    of a row, the outputs those cells go to, the Arrow struct those tuples are read as, and
    the tuple of a member missing from the table (the outputs the layout lacks are null).
    """

    id_index: tuple[int, ...]
    getters: tuple[Callable[[Sequence[Any]], tuple[Any, ...]], ...]
    outputs: tuple[tuple[str, ...], ...]
    structs: tuple[pa.StructType, ...]
    empty: tuple[tuple[None, ...], ...]


def _plan(layouts: tuple[Sequence[bytes], ...]) -> _Plan:
    id_index, getters, outputs, structs, empty = [], [], [], [], []
    for name, layout in zip(TABLE_NAMES, layouts, strict=True):
        position = {column.decode(): index for index, column in enumerate(layout)}
        if "MEMBER_ID" not in position:
            raise ValueError(f"{name} has no MEMBER_ID column")
        present = [(out, position[source]) for out, source in TAKEN[name] if source in position]
        id_index.append(position["MEMBER_ID"])
        getters.append(tuple_getter([position["MEMBER_ID"], *(i for _, i in present)]))
        outputs.append(tuple(out for out, _ in present))
        structs.append(
            pa.struct(
                [pa.field("MEMBER_ID", pa.binary())]
                + [pa.field(out, _cell_type(out)) for out, _ in present]
            )
        )
        empty.append((None,) * (1 + len(present)))
    return _Plan(
        tuple(id_index),
        tuple(getters),
        tuple(outputs),
        tuple(structs),
        tuple(empty),
    )


def _cell_type(name: str) -> pa.DataType:
    """The Arrow type the spool's cells of output ``name`` are read as (see :func:`_column`)."""
    data_type = ARROW_MEMBER_ROWS.field(name).type
    if data_type == pa.string() or name in _YES_NO:
        return pa.binary()  # UTF-8 checked by the cast to string, a column at a time
    if data_type == _TS:
        return pa.int64()  # µs since the epoch; 0 becomes null
    return data_type


class _Builder:
    """Turns the records of one segment into Arrow batches of member rows.

    For each row only the wanted cells are kept (a C-level ``itemgetter``), so each record's
    other objects are freed at once, while they are still in the CPU's caches; the kept cells
    are transposed and handed to Arrow a whole column at a time when the segment ends or the
    column layout changes.
    """

    def __init__(self, segment: str) -> None:
        self.segment = segment
        self.batches: list[pa.RecordBatch] = []
        self.layouts: tuple[Sequence[bytes], ...] | None = None
        self.plan: _Plan | None = None
        self.events: list[list[Any]] = []  #: group label, group name, an event's cells
        self.log_lines: list[list[Any]] = []  #: group label, group name, a line's cells
        self._start_batch()

    def _start_batch(self) -> None:
        self.kept: tuple[list[tuple[Any, ...]], ...] = ([], [], [], [])
        self.collected: list[int] = []
        self.served: list[int | None] = []
        self.agent: list[bytes] = []
        self.offset: list[int] = []
        self.group_label: list[bytes] = []
        self.group_name: list[bytes] = []
        self.agent_group_label: list[bytes] = []
        self.records = 0

    def add(self, record: dict[bytes, Any], offset: int) -> None:
        """Keep the member rows of ``record``, the frame at ``offset``."""
        members, stats, lag, gtids = _four_tables(record[_TABLES])
        layouts = (members[_COLUMNS], stats[_COLUMNS], lag[_COLUMNS], gtids[_COLUMNS])
        if layouts != self.layouts:
            self._to_arrow()
            self.plan = _plan(layouts)
            self.layouts = layouts
        plan = self.plan
        assert plan is not None
        member_rows = members[_ROWS]
        count = len(member_rows)
        if not count:
            return
        kept = self.kept
        member_index = plan.id_index[0]
        ids = [row[member_index] for row in member_rows]
        kept[0].extend(map(plan.getters[0], member_rows))
        for table_index, table in ((1, stats), (2, lag), (3, gtids)):
            table_rows = table[_ROWS]
            index, getter = plan.id_index[table_index], plan.getters[table_index]
            if [row[index] for row in table_rows] == ids:
                kept[table_index].extend(map(getter, table_rows))
            else:  # a member missing from a table, or another order: join on MEMBER_ID
                by_id = {row[index]: getter(row) for row in table_rows}
                empty = plan.empty[table_index]
                kept[table_index].extend([by_id.get(member, empty) for member in ids])
        self.collected.extend([record[_COLLECTED_AT_US]] * count)
        self.served.extend([record.get(_SERVED_AT_US)] * count)
        self.agent.extend([record[_AGENT]] * count)
        self.offset.extend([offset] * count)
        # Records written before they named their group: the default label, no group name.
        self.group_label.extend([record.get(_GROUP_LABEL, _DEFAULT_LABEL)] * count)
        self.group_name.extend([record.get(_GROUP_NAME, b"")] * count)
        self.agent_group_label.extend([record.get(_AGENT_GROUP_LABEL, b"")] * count)
        self.records += 1
        if self.records >= BATCH_RECORDS:
            self._to_arrow()

    def _to_arrow(self) -> None:
        """Turn the kept cells into one Arrow batch."""
        if not self.offset:
            return
        try:
            self._convert()
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise _BadBatch(self.offset[0], str(exc)) from exc
        self._start_batch()

    def _convert(self) -> None:
        assert self.plan is not None
        read: dict[str, pa.Array] = {
            "collected_at": pa.array(self.collected, pa.int64()),
            "served_at": pa.array(self.served, pa.int64()),
            "agent": pa.array(self.agent, pa.binary()),
            "record_offset": pa.array(self.offset, pa.int64()),
            "group_label": pa.array(self.group_label, pa.binary()),
            "group_name": pa.array(self.group_name, pa.binary()),
            "agent_group_label": pa.array(self.agent_group_label, pa.binary()),
        }
        for kept, outputs, struct in zip(
            self.kept, self.plan.outputs, self.plan.structs, strict=True
        ):
            # Arrow reads the row tuples as structs in one pass of C++, faster than transposing
            # them in Python and converting each column (docs/benchmarks.md, "Spark ingest").
            cells = pa.array(kept, struct).flatten()
            kept.clear()
            read.update(zip(outputs, cells[1:], strict=True))
        self.batches.append(_assemble(read, len(self.offset), self.segment))

    def finish(self) -> pa.Table:
        """Return every row added, as one table."""
        self._to_arrow()
        return pa.Table.from_batches(self.batches, ARROW_MEMBER_ROWS)


def _assemble(read: Mapping[str, pa.Array], count: int, segment: str) -> pa.RecordBatch:
    """One batch of member rows from their columns as read, for the decoder and the columns file.

    ``read`` holds, for ``count`` rows: ``collected_at`` and ``served_at`` (int64 µs),
    ``agent``, ``group_label``, ``group_name`` and ``agent_group_label`` (UTF-8 as binary),
    ``record_offset``
    (int64), and each output column of :data:`TAKEN` as :func:`_cell_type` reads it (one a
    record layout lacks may be left out: it is null).
    """
    collected = read["collected_at"]
    columns: dict[str, pa.Array] = {
        "collected_at": collected.cast(_TS),
        "collected_date": pc.divide(collected, _US_PER_DAY).cast(pa.int32()).cast(pa.date32()),
        "agent": read["agent"].cast(pa.string()),
        "served_at": _zero_is_null(read["served_at"]),
    }
    for out in _CELL_OUTPUTS:
        cells = read.get(out)
        columns[out] = (
            pa.nulls(count, ARROW_MEMBER_ROWS.field(out).type)  # an older agent lacks it
            if cells is None
            else _column(out, cells)
        )
    executed_count, ahead = gtid_counts(
        columns["gtid_executed"], columns["transactions_committed_all_members"]
    )
    columns["gtid_executed_count"] = executed_count
    columns["gtids_ahead_of_committed_all"] = ahead
    columns["segment"] = pa.array([segment] * count, pa.string())
    columns["record_offset"] = read["record_offset"]
    columns["group_label"] = read["group_label"].cast(pa.string())
    columns["group_name"] = read["group_name"].cast(pa.string())
    columns["agent_group_label"] = read["agent_group_label"].cast(pa.string())
    return pa.record_batch([columns[field.name] for field in ARROW_MEMBER_ROWS], ARROW_MEMBER_ROWS)


def _column(name: str, cells: pa.Array) -> pa.Array:
    """The output column ``name`` of its cells as read (:func:`_cell_type`)."""
    if name in _YES_NO:
        return pc.equal(cells.cast(pa.string()), _YES)
    data_type = ARROW_MEMBER_ROWS.field(name).type
    if data_type == pa.string():
        return cells.cast(pa.string())
    if data_type == _TS:
        return _zero_is_null(cells)
    return cells if cells.type == data_type else cells.cast(data_type)  # int64 -> member_port


def _zero_is_null(values: pa.Array) -> pa.Array:
    """int64 µs since the epoch as UTC timestamps; 0 (MySQL's zero timestamp) becomes null."""
    zero = pc.equal(values, _ZERO)
    return pc.if_else(zero, _NULL_INT, values).cast(_TS)


def gtid_counts(executed: pa.Array, committed_all: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Return GTID_COUNT(executed) and GTID_COUNT(executed - committed_all) for each row.

    The first is null where ``executed`` is null; the second where either text is null or
    empty. A text that is not a GTID set gives nulls too. Each distinct text (and pair) is
    computed once.
    """
    executed_codes = pc.dictionary_encode(executed)
    committed_codes = pc.dictionary_encode(committed_all)
    executed_texts = executed_codes.dictionary.to_pylist()
    committed_texts = committed_codes.dictionary.to_pylist()
    counts = pa.array([_count(text) for text in executed_texts], pa.int64())
    executed_count = pc.take(counts, executed_codes.indices)
    # One code per (executed, committed) pair, then the difference once per distinct pair.
    width = max(len(committed_texts), 1)
    pair = pc.add(
        pc.multiply(executed_codes.indices.cast(pa.int64()), pa.scalar(width, pa.int64())),
        committed_codes.indices.cast(pa.int64()),
    )
    pair_codes = pc.dictionary_encode(pair)
    ahead_values: list[int | None] = []
    for code in pair_codes.dictionary.to_pylist():
        if code is None:
            ahead_values.append(None)
            continue
        text, base = executed_texts[code // width], committed_texts[code % width]
        ahead_values.append(_ahead(text, base))
    ahead = pc.take(pa.array(ahead_values, pa.int64()), pair_codes.indices)
    return executed_count, ahead


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> GtidSet | None:
    try:
        return GtidSet.parse(text)
    except GtidError:
        return None


@functools.lru_cache(maxsize=4096)
def _count(text: str | None) -> int | None:
    if text is None:
        return None
    parsed = _parse(text)
    return None if parsed is None else parsed.count()


@functools.lru_cache(maxsize=8192)
def _ahead(executed: str | None, committed: str | None) -> int | None:
    if not executed or not committed:
        return None
    have, base = _parse(executed), _parse(committed)
    if have is None or base is None:
        return None
    return (have - base).count()
