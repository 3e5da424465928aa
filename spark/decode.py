"""Decode one spool segment into Arrow member rows (the MEMBER_ROWS columns), fast.

This is the ingest's hot path and runs on Spark's executors, so it imports neither pyspark nor
anything that starts a JVM: only the spool reader, msgpack, pyarrow and :mod:`grstats.agent.gtid`.

Each record (snapshot) becomes one row per member of its ``replication_group_members`` table,
joined with the member's rows of the other three tables on MEMBER_ID (a member missing from a
table gets nulls there). Work is done a column at a time: rows of records whose tables share a
column layout are buffered, transposed with ``zip`` and handed to pyarrow as whole columns, so
no Python code runs per cell. The GTID counts are computed once per distinct text (the texts
change far less often than the counters, so a segment holds few of them), and cached across
segments in the same worker.
"""

from __future__ import annotations

import functools
import gc
import operator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgpack  # type: ignore[import-untyped]
import pyarrow as pa
import pyarrow.compute as pc

from grstats.agent.gtid import GtidError, GtidSet
from grstats.collector.errors import SegmentCorrupt
from grstats.collector.records import KNOWN_SCHEMAS, TABLE_NAMES, check_schema
from grstats.collector.spool import iter_frames

if TYPE_CHECKING:
    from collections.abc import Sequence

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
    ]
)

#: The label of records written before records carried one: the collector's label of its one
#: group of ``--node`` (``grstats.collector.poller.DEFAULT_GROUP_LABEL``, held equal by a test;
#: not imported, so that the executors do not load the collector's gRPC client).
DEFAULT_GROUP_LABEL = "default"
_DEFAULT_LABEL = DEFAULT_GROUP_LABEL.encode()

# Output column <- (table, MySQL column), in the order each table's columns are taken.
_TAKEN: dict[str, tuple[tuple[str, str], ...]] = {
    MEMBERS: (
        ("member_id", "MEMBER_ID"),
        ("member_host", "MEMBER_HOST"),
        ("member_port", "MEMBER_PORT"),
        ("member_state", "MEMBER_STATE"),
        ("member_role", "MEMBER_ROLE"),
        ("member_version", "MEMBER_VERSION"),
        ("connected", "CONNECTED"),
        ("in_view", "IN_VIEW"),
        ("last_seen", "LAST_SEEN"),
        ("age_ms", "AGE_MS"),
    ),
    STATS: (
        ("view_id", "VIEW_ID"),
        ("count_transactions_in_queue", "COUNT_TRANSACTIONS_IN_QUEUE"),
        ("count_transactions_checked", "COUNT_TRANSACTIONS_CHECKED"),
        ("count_conflicts_detected", "COUNT_CONFLICTS_DETECTED"),
        ("count_transactions_rows_validating", "COUNT_TRANSACTIONS_ROWS_VALIDATING"),
        ("transactions_committed_all_members", "TRANSACTIONS_COMMITTED_ALL_MEMBERS"),
        ("last_conflict_free_transaction", "LAST_CONFLICT_FREE_TRANSACTION"),
        (
            "count_transactions_remote_in_applier_queue",
            "COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE",
        ),
        ("count_transactions_remote_applied", "COUNT_TRANSACTIONS_REMOTE_APPLIED"),
        ("count_transactions_local_proposed", "COUNT_TRANSACTIONS_LOCAL_PROPOSED"),
        ("count_transactions_local_rollback", "COUNT_TRANSACTIONS_LOCAL_ROLLBACK"),
    ),
    LAG: (
        ("last_applied_transaction", "LAST_APPLIED_TRANSACTION"),
        ("last_applied_original_commit", "LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"),
        ("last_applied_end_apply", "LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP"),
        ("applying_transaction", "APPLYING_TRANSACTION"),
        ("applying_original_commit", "APPLYING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"),
        ("applier_lag_seconds", "APPLIER_LAG_SECONDS"),
    ),
    GTIDS: (("gtid_executed", "GTID_EXECUTED"),),
}
_YES_NO = frozenset({"connected", "in_view"})


@dataclass(frozen=True, slots=True)
class DecodedSegment:
    """One segment's member rows and what it held.

    Attributes:
        name: the segment's file name.
        rows: the member rows, ARROW_MEMBER_ROWS, in record order.
        records: how many records (snapshots) it held.
    """

    name: str
    rows: pa.Table
    records: int


def decode_segment(path: Path | str) -> DecodedSegment:
    """Return the member rows of the sealed segment at ``path``.

    Raises:
        SegmentCorrupt: bad magic, a torn or CRC-failing frame, or a payload that is not a
            record (names the file, the frame's offset and the reason).
        UnknownSchema: a record of a schema version this code does not read (names the file,
            the frame's offset and the version).
    """
    path = Path(path)
    data = path.read_bytes()
    builder = _Builder(path.name)
    records = 0
    # The records hold no reference cycles; the cyclic collector would scan again and again
    # while millions of short-lived objects come and go, so it is paused (msgpack's
    # documentation advises it; docs/benchmarks.md, "Spark ingest", has the figures).
    collecting = gc.isenabled()
    gc.disable()
    try:
        add = builder.add
        for offset, payload in iter_frames(data, path):
            record = _unpack(payload, path, offset)
            version = record.get(b"schema")
            if version.__class__ is not int or version not in KNOWN_SCHEMAS:
                check_schema({"schema": version}, f"{path} at offset {offset}")  # raises
            try:
                add(record, offset)
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
    return DecodedSegment(path.name, rows, records)


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
    the outputs the layout lacks (null).
    """

    id_index: tuple[int, ...]
    getters: tuple[operator.itemgetter[Any], ...]
    outputs: tuple[tuple[str, ...], ...]
    structs: tuple[pa.StructType, ...]
    missing: tuple[str, ...]
    empty: tuple[tuple[None, ...], ...]


def _plan(layouts: tuple[Sequence[bytes], ...]) -> _Plan:
    id_index, getters, outputs, structs, missing, empty = [], [], [], [], [], []
    for name, layout in zip(TABLE_NAMES, layouts, strict=True):
        position = {column.decode(): index for index, column in enumerate(layout)}
        if "MEMBER_ID" not in position:
            raise ValueError(f"{name} has no MEMBER_ID column")
        present = [(out, position[source]) for out, source in _TAKEN[name] if source in position]
        missing += [out for out, source in _TAKEN[name] if source not in position]
        id_index.append(position["MEMBER_ID"])
        getters.append(operator.itemgetter(position["MEMBER_ID"], *(i for _, i in present)))
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
        tuple(missing),
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
        self._start_batch()

    def _start_batch(self) -> None:
        self.kept: tuple[list[tuple[Any, ...]], ...] = ([], [], [], [])
        self.collected: list[int] = []
        self.served: list[int | None] = []
        self.agent: list[bytes] = []
        self.offset: list[int] = []
        self.group_label: list[bytes] = []
        self.group_name: list[bytes] = []
        self.records = 0

    def add(self, record: dict[bytes, Any], offset: int) -> None:
        """Keep the member rows of ``record``, the frame at ``offset``."""
        members, stats, lag, gtids = _four_tables(record[b"tables"])
        layouts = (members[b"columns"], stats[b"columns"], lag[b"columns"], gtids[b"columns"])
        if layouts != self.layouts:
            self._to_arrow()
            self.plan = _plan(layouts)
            self.layouts = layouts
        plan = self.plan
        assert plan is not None
        member_rows = members[b"rows"]
        count = len(member_rows)
        if not count:
            return
        kept = self.kept
        member_index = plan.id_index[0]
        ids = [row[member_index] for row in member_rows]
        kept[0].extend(map(plan.getters[0], member_rows))
        for table_index, table in ((1, stats), (2, lag), (3, gtids)):
            table_rows = table[b"rows"]
            index, getter = plan.id_index[table_index], plan.getters[table_index]
            if [row[index] for row in table_rows] == ids:
                kept[table_index].extend(map(getter, table_rows))
            else:  # a member missing from a table, or another order: join on MEMBER_ID
                by_id = {row[index]: getter(row) for row in table_rows}
                empty = plan.empty[table_index]
                kept[table_index].extend([by_id.get(member, empty) for member in ids])
        self.collected.extend([record[b"collected_at_us"]] * count)
        self.served.extend([record.get(b"served_at_us")] * count)
        self.agent.extend([record[b"agent"]] * count)
        self.offset.extend([offset] * count)
        # Records written before they named their group: the default label, no group name.
        self.group_label.extend([record.get(b"group_label", _DEFAULT_LABEL)] * count)
        self.group_name.extend([record.get(b"group_name", b"")] * count)
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
        count = len(self.offset)
        columns: dict[str, pa.Array] = {}
        collected = pa.array(self.collected, pa.int64())
        columns["collected_at"] = collected.cast(_TS)
        columns["collected_date"] = (
            pc.divide(collected, _US_PER_DAY).cast(pa.int32()).cast(pa.date32())
        )
        columns["agent"] = _text(self.agent)
        columns["served_at"] = _timestamps(self.served)
        for kept, outputs, struct in zip(
            self.kept, self.plan.outputs, self.plan.structs, strict=True
        ):
            # Arrow reads the row tuples as structs in one pass of C++, faster than transposing
            # them in Python and converting each column (docs/benchmarks.md, "Spark ingest").
            cells = pa.array(kept, struct).flatten()
            kept.clear()
            for out, column in zip(outputs, cells[1:], strict=True):
                columns[out] = _column(out, column)
        for out in self.plan.missing:  # an older agent without this column
            columns[out] = pa.nulls(count, ARROW_MEMBER_ROWS.field(out).type)
        executed_count, ahead = gtid_counts(
            columns["gtid_executed"], columns["transactions_committed_all_members"]
        )
        columns["gtid_executed_count"] = executed_count
        columns["gtids_ahead_of_committed_all"] = ahead
        columns["segment"] = pa.array([self.segment] * count, pa.string())
        columns["record_offset"] = pa.array(self.offset, pa.int64())
        columns["group_label"] = _text(self.group_label)
        columns["group_name"] = _text(self.group_name)
        self.batches.append(
            pa.record_batch([columns[field.name] for field in ARROW_MEMBER_ROWS], ARROW_MEMBER_ROWS)
        )

    def finish(self) -> pa.Table:
        """Return every row added, as one table."""
        self._to_arrow()
        return pa.Table.from_batches(self.batches, ARROW_MEMBER_ROWS)


def _column(name: str, cells: pa.Array) -> pa.Array:
    """The output column ``name`` of its cells as read (:func:`_cell_type`)."""
    if name in _YES_NO:
        return pc.equal(cells.cast(pa.string()), _YES)
    data_type = ARROW_MEMBER_ROWS.field(name).type
    if data_type == pa.string():
        return cells.cast(pa.string())
    if data_type == _TS:
        return _zero_is_null(cells)
    return cells


def _text(cells: Sequence[bytes | None]) -> pa.Array:
    """UTF-8 bytes as strings (checked a column at a time)."""
    return pa.array(cells, pa.binary()).cast(pa.string())


def _timestamps(cells: Sequence[int | None]) -> pa.Array:
    """µs since the epoch as UTC timestamps; 0 (MySQL's zero timestamp) becomes null."""
    return _zero_is_null(pa.array(cells, pa.int64()))


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
