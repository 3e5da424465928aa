"""A sealed segment's member rows, a column at a time: the file ingest reads instead of records.

Decoding a segment's records is most of what ingest costs: every cell of every snapshot
becomes a Python object before Arrow sees it. The spool writer already holds each record as
it appends it, so it also keeps the record's member rows in columns (:class:`SegmentColumns`)
and writes them at the seal, beside the segment::

    segment-00000000000000000007.sealed    the records (the contract; unchanged)
    segment-00000000000000000007.columns   the same member rows, as columns

Ingest (``grstats.spark.decode.read_columns``) wraps the columns' bytes in Arrow arrays
without unpacking a record. The sealed segment stays the record: a columns file that is
missing, torn, of another version or not made for this segment (its size and its last
frame's offset and CRC-32) is ignored, and the segment's records are decoded as before.

The rows are exactly the decoder's (``grstats.spark.decode``): one per member of the record's
``replication_group_members`` table, joined on MEMBER_ID with the member's row of each other
table of :data:`TAKEN` (a member missing from a table gets nulls there, and so does a column
a record's table lacks). Only cells the decoder takes the same way are kept: a record of
another schema, a cell of an unexpected type, a table without MEMBER_ID, a number that does
not fit 64 bits make the whole segment's columns unusable (:attr:`SegmentColumns.usable`),
so that no columns file is written and ingest decodes the records, which report the fault.

File layout: a magic (8 bytes), the CRC-32 of the stored body (4 bytes, big-endian), the body:
one msgpack map, stored as it is after :data:`MAGIC`, or compressed whole after the magic of
its codec (:data:`MAGICS`: zlib or xz, :mod:`grstats.collector.compression`; the CRC-32 is the
compressed bytes', checked before they are decompressed)::

    {"segment_size": int,    # the sealed segment's size in bytes
     "last_frame": [int, int],  # the segment's last frame: its offset and CRC-32
     "records": int,         # records (snapshots) in the segment
     "rows": int,            # member rows
     "columns": {name: column},
     "events": [[group_label, group_name, cell, ...], ...],
     "log": [[group_label, group_name, cell, ...], ...]}

Each column holds one cell per row: ``["int", data, nulls]`` (data: signed 64-bit
little-endian integers; nulls: an Arrow validity bitmap, LSB first, or empty when no cell is
null), ``["float", data, nulls]`` (64-bit IEEE floats, little-endian) or
``["text", texts, codes]`` (texts: the distinct UTF-8 texts, the first being null; codes: a
signed 32-bit little-endian index into them per row). In a compressed file an integer column
is stored as ``["delta", data, nulls, lag]`` instead, its data each cell less the cell ``lag``
rows before (the first ``lag`` as they are; ``lag`` is the rows of a record, so that each
member's counter is taken from its own previous value): counters then differ by small,
repeating numbers, which compress about a fifth smaller. :func:`parse` gives them back as
``"int"`` columns. Names are the decoder's output columns
(:data:`TAKEN`) plus :data:`RECORD_COLUMNS`. ONLY APPEND columns: a file written before a
column of :data:`LATER_RECORD_COLUMNS` existed lacks it, and readers take every one of its rows
as that column's value there (the file stays usable; the magic is unchanged). A file written
before a column of :data:`TAKEN` existed (TRANSPORT_SECONDS, WAITING_SECONDS and
APPLY_SECONDS were appended) is unusable instead, and its segment's records are decoded: the
records hold the column wherever the agent served it, which the file cannot say. ``events`` was
appended after them: the events of the segment's records (``grstats.collector.records``,
``record_events``), each its record's group label and name then its cells in EVENT_COLUMNS
order; a file without the key was written by a collector that spooled no events. ``log`` was
appended after it: the GR log lines of the segment's records (``record_log``), each its
record's group label and name then its cells in LOG_COLUMNS order; a file without the key was
written by a collector that spooled no lines.

Imports only the standard library and msgpack: the collector runs without pyarrow.
"""

from __future__ import annotations

import itertools
import operator
import os
import struct
import sys
import uuid
import zlib
from array import array
from typing import TYPE_CHECKING, Any

import msgpack  # type: ignore[import-untyped]

from grstats.collector.compression import Compression, compress, decompress
from grstats.collector.records import (
    COLUMN_KINDS,
    DEFAULT_GROUP_LABEL,
    KNOWN_SCHEMAS,
    TABLE_NAMES,
    RecordKey,
    record_events,
    record_log,
)
from grstats.core.rows import Kind

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path

#: The first 8 bytes of a columns file whose body is stored as it is.
MAGIC = b"GRCOLS01"
#: The first 8 bytes of a columns file, by how its body is stored.
MAGICS: dict[Compression, bytes] = {
    Compression.NONE: MAGIC,
    Compression.ZLIB: b"GRCOLZ01",
    Compression.XZ: b"GRCOLX01",
}
_CODEC_OF = {magic: compression for compression, magic in MAGICS.items()}
#: After the magic: the CRC-32 of the body, unsigned 32-bit big-endian.
HEADER = struct.Struct(">I")
#: The suffix of a segment's columns file (``segment-<sequence>.columns``).
SUFFIX = ".columns"
#: The suffix of a columns file being written (``.segment-<sequence>.columns.<hex>.tmp``).
TEMPORARY_SUFFIX = ".tmp"


def is_temporary(name: str) -> bool:
    """Whether ``name`` is a columns file being written (one a killed writer left)."""
    return name.startswith(".segment-") and name.endswith(TEMPORARY_SUFFIX) and SUFFIX in name


MEMBERS, STATS, LAG, GTIDS = TABLE_NAMES

#: Output column <- (table, MySQL column), in the order each table's columns are taken (the
#: decoder's MEMBER_ROWS cells; ``grstats.spark.decode`` reads the same mapping).
TAKEN: dict[str, tuple[tuple[str, str], ...]] = {
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
        # appended: the lag by stage (a columns file without them is decoded instead)
        ("transport_seconds", "TRANSPORT_SECONDS"),
        ("waiting_seconds", "WAITING_SECONDS"),
        ("apply_seconds", "APPLY_SECONDS"),
    ),
    GTIDS: (("gtid_executed", "GTID_EXECUTED"),),
}

_KIND_OF = {
    out: COLUMN_KINDS[table][source] for table, pairs in TAKEN.items() for out, source in pairs
}
#: Output columns of TAKEN held as numbers (the rest are texts), by the kinds of the record's
#: cells: integers and TIMESTAMP µs since the epoch (0 is MySQL's zero timestamp, made null by
#: the reader), and DECIMAL.
INT_COLUMNS = frozenset(
    out for out, kind in _KIND_OF.items() if kind in (Kind.INTEGER, Kind.TIMESTAMP)
)
FLOAT_COLUMNS = frozenset(out for out, kind in _KIND_OF.items() if kind is Kind.DECIMAL)
#: Columns of INT_COLUMNS that hold 32-bit integers.
INT32_COLUMNS = frozenset({"member_port"})
#: Columns of the record itself, repeated on each of its member rows, and their kinds.
RECORD_COLUMNS: dict[str, str] = {
    "collected_at": "int",  # collected_at_us
    "served_at": "int",  # served_at_us (null where missing)
    "agent": "text",
    "record_offset": "int",  # the record's frame offset in the segment
    "group_label": "text",  # DEFAULT_GROUP_LABEL where missing
    "group_name": "text",  # "" where missing
    "agent_group_label": "text",  # "" where missing
}
#: Columns of RECORD_COLUMNS appended after columns files were first written, and the value of
#: each row of a file without one (the value a record without the key has).
LATER_RECORD_COLUMNS: dict[str, str] = {"agent_group_label": ""}


def columns_path(segment: Path) -> Path:
    """Return the columns file of the segment at ``segment`` (open or sealed)."""
    return segment.with_name(segment.name.rsplit(".", 1)[0] + SUFFIX)


class Unusable(Exception):
    """A record this module does not take exactly as the decoder does (the reason)."""


class _Ints:
    """A column of 64-bit integers, null allowed."""

    kind = "int"

    def __init__(self) -> None:
        self.data: array[Any] = array("q")
        self.nulls: list[int] = []

    def add(self, value: object) -> None:
        if value.__class__ is int:
            self.data.append(value)  # OverflowError past 64 bits
        elif value is None:
            self.nulls.append(len(self.data))
            self.data.append(0)
        else:
            raise Unusable(f"{value!r} in a column of integers")

    def add_many(self, value: object, count: int) -> None:
        for _ in range(count):
            self.add(value)

    def encode(self) -> list[Any]:
        return [self.kind, _little_endian(self.data), _validity(len(self.data), self.nulls)]


#: The largest integer a double holds exactly: Arrow refuses larger ones for a float column.
_EXACT = 2**53


class _Floats(_Ints):
    """A column of 64-bit floats (ints are taken as floats, as Arrow takes them), null allowed."""

    kind = "float"

    def __init__(self) -> None:
        self.data = array("d")
        self.nulls = []

    def add(self, value: object) -> None:
        if value.__class__ is float or (value.__class__ is int and -_EXACT <= value <= _EXACT):
            self.data.append(value)
        elif value is None:
            self.nulls.append(len(self.data))
            self.data.append(0.0)
        else:
            raise Unusable(f"{value!r} in a column of numbers")


class _Texts:
    """A column of texts, dictionary-coded; code 0 is null."""

    kind = "text"

    def __init__(self) -> None:
        self.codes = array("i")
        self.known: dict[str | None, int] = {None: 0}

    def add(self, value: object) -> None:
        code = self.known.get(value)  # type: ignore[call-overload]  # TypeError if unhashable
        if code is None:
            if value.__class__ is not str:
                raise Unusable(f"{value!r} in a column of texts")
            code = self.known[value] = len(self.known)
        self.codes.append(code)

    def add_many(self, value: object, count: int) -> None:
        self.add(value)
        if count > 1:
            self.codes.extend(self.codes[-1:] * (count - 1))

    def encode(self) -> list[Any]:
        texts: list[bytes | None] = [None]
        texts += [text.encode() for text in self.known if text is not None]
        return [self.kind, texts, _little_endian(self.codes)]


_Column = _Ints | _Floats | _Texts


def _little_endian(values: array[Any]) -> bytes:
    if sys.byteorder == "big":  # pragma: no cover - every machine this runs on is little-endian
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def _validity(count: int, nulls: Sequence[int]) -> bytes:
    """An Arrow validity bitmap of ``count`` rows (LSB first), ``nulls`` cleared; b"" if none."""
    if not nulls:
        return b""
    bitmap = bytearray(b"\xff" * ((count + 7) // 8))
    for row in nulls:
        bitmap[row >> 3] &= ~(1 << (row & 7)) & 0xFF
    return bytes(bitmap)


class _Int32s(_Ints):
    """A column of integers that fit 32 bits (MEMBER_PORT, an int32 in MEMBER_ROWS)."""

    def add(self, value: object) -> None:
        if value.__class__ is int and not -(2**31) <= value < 2**31:
            raise Unusable(f"{value!r} in a column of 32-bit integers")
        super().add(value)


def _new_column(name: str) -> _Column:
    kind = RECORD_COLUMNS.get(name)
    if name in INT32_COLUMNS:
        return _Int32s()
    if name in INT_COLUMNS or kind == "int":
        return _Ints()
    if name in FLOAT_COLUMNS:
        return _Floats()
    return _Texts()


class _Layout:
    """How to take the wanted cells of one column layout of the four tables.

    For each table: MEMBER_ID's position, a getter returning ``(MEMBER_ID, wanted cells...)``
    as a tuple, the columns those cells go to, and the cells of a member missing there.
    """

    def __init__(self, layouts: Sequence[Sequence[str]], columns: Mapping[str, _Column]) -> None:
        self.id_index: list[int] = []
        self.getters: list[Callable[[Sequence[Any]], tuple[Any, ...]]] = []
        self.sinks: list[tuple[_Column, ...]] = []
        self.empty: list[tuple[None, ...]] = []
        self.missing: list[_Column] = []
        for name, layout in zip(TABLE_NAMES, layouts, strict=True):
            position = {column: index for index, column in enumerate(layout)}
            if "MEMBER_ID" not in position:
                raise Unusable(f"{name} has no MEMBER_ID column")
            present = [(out, position[source]) for out, source in TAKEN[name] if source in position]
            self.missing += [columns[out] for out, source in TAKEN[name] if source not in position]
            indices = [position["MEMBER_ID"], *(index for _, index in present)]
            self.id_index.append(position["MEMBER_ID"])
            self.getters.append(tuple_getter(indices))
            self.sinks.append(tuple(columns[out] for out, _ in present))
            self.empty.append((None,) * len(indices))


def tuple_getter(indices: Sequence[int]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """A C-level getter of ``indices`` that returns a tuple, even of one index."""
    if len(indices) > 1:
        return operator.itemgetter(*indices)
    (only,) = indices

    def get(row: Sequence[Any]) -> tuple[Any, ...]:
        return (row[only],)

    return get


def _join(
    layout: _Layout, tables: Sequence[Sequence[Sequence[Any]]]
) -> list[list[tuple[Any, ...]]]:
    """Each table's taken cells, one tuple per member of the first table, as the decoder joins.

    A table whose MEMBER_IDs are the members' in order is taken row by row; any other is
    joined on MEMBER_ID (the last row of an id wins; a member missing there gets nulls).
    """
    members = tables[0]
    member_index = layout.id_index[0]
    ids = [row[member_index] for row in members]
    _check_ids(ids, TABLE_NAMES[0])
    taken = [list(map(layout.getters[0], members))]
    for table_index in (1, 2, 3):
        table_rows = tables[table_index]
        index, getter = layout.id_index[table_index], layout.getters[table_index]
        keys = [row[index] for row in table_rows]
        _check_ids(keys, TABLE_NAMES[table_index])
        if keys == ids:
            taken.append(list(map(getter, table_rows)))
        else:
            by_id = {row[index]: getter(row) for row in table_rows}
            empty = layout.empty[table_index]
            taken.append([by_id.get(member, empty) for member in ids])
    return taken


def _check_ids(ids: Sequence[object], table: str) -> None:
    for member in ids:
        if member is not None and member.__class__ is not str:
            raise Unusable(f"MEMBER_ID {member!r} in {table}")


class SegmentColumns:
    """The member rows of one segment's records, kept a column at a time as they are appended.

    The spool writer calls :meth:`note_frame` and :meth:`add` once per record it appends
    (from the one thread that appends) and :meth:`write` once, at the seal. A record it
    cannot take exactly as the decoder does makes it unusable for the rest of the segment
    (nothing is written); the reason is kept in :attr:`problem`.
    """

    def __init__(self) -> None:
        self.columns: dict[str, _Column] = {
            out: _new_column(out) for table in TABLE_NAMES for out, _ in TAKEN[table]
        }
        self.columns.update({name: _new_column(name) for name in RECORD_COLUMNS})
        self.records = 0
        self.rows = 0
        #: the records' events: group label, group name, then the event's cells
        self.events: list[list[Any]] = []
        #: the records' GR log lines: group label, group name, then the line's cells
        self.log_lines: list[list[Any]] = []
        self.last_frame: tuple[int, int] | None = None  #: (offset, CRC-32) of the last frame
        self.problem: str | None = None
        self._layouts: list[Sequence[str]] | None = None
        self._layout: _Layout | None = None

    @property
    def usable(self) -> bool:
        """Whether every record so far was taken (a columns file can be written)."""
        return self.problem is None

    def note_frame(self, offset: int, crc: int) -> None:
        """Note the segment's latest frame: its ``offset`` and the CRC-32 its header holds."""
        self.last_frame = (offset, crc)

    def add_payload(self, payload: bytes, offset: int) -> None:
        """Keep the member rows of the msgpack record ``payload``, the frame at ``offset``."""
        if self.problem is not None:
            return
        try:
            record = msgpack.unpackb(payload, raw=False, strict_map_key=False)
        except (ValueError, TypeError, msgpack.UnpackException) as exc:
            self.problem = f"frame at offset {offset} is not msgpack ({exc!r})"
            return
        self.add(record, offset)

    def add(self, record: Mapping[str, Any], offset: int) -> None:
        """Keep the member rows of ``record``, the frame at ``offset``."""
        if self.problem is not None:
            return
        try:
            self._add(record, offset)
        except Exception as exc:  # noqa: BLE001 (any odd record: no file, never a failed append)
            # Columns may hold part of this record now: nothing of this segment is written.
            self.problem = f"record at offset {offset}: {exc!r}"

    def _add(self, record: Mapping[str, Any], offset: int) -> None:
        version = record.get(RecordKey.SCHEMA)
        if version.__class__ is not int or version not in KNOWN_SCHEMAS:
            raise Unusable(f"schema {version!r}")
        tables = record[RecordKey.TABLES]
        four = [tables[name] for name in TABLE_NAMES]
        layouts = [table[RecordKey.COLUMNS] for table in four]
        if layouts != self._layouts:
            self._layout = _Layout(layouts, self.columns)
            self._layouts = layouts
        layout = self._layout
        assert layout is not None
        taken = _join(layout, [table[RecordKey.ROWS] for table in four])
        count = len(taken[0])
        collected = record[RecordKey.COLLECTED_AT_US]
        served = record.get(RecordKey.SERVED_AT_US)
        agent = record[RecordKey.AGENT]
        label = record.get(RecordKey.GROUP_LABEL, DEFAULT_GROUP_LABEL)
        group = record.get(RecordKey.GROUP_NAME, "")
        agent_label = record.get(RecordKey.AGENT_GROUP_LABEL, "")
        events = record_events(record)  # RecordError: no file; the decoder names the cell
        lines = record_log(record)
        if count:
            for sinks, cells in zip(layout.sinks, taken, strict=True):
                for row in cells:
                    for sink, cell in zip(sinks, row[1:], strict=True):
                        sink.add(cell)
            for column in layout.missing:
                column.add_many(None, count)
            self.columns["collected_at"].add_many(collected, count)
            self.columns["served_at"].add_many(served, count)
            self.columns["agent"].add_many(agent, count)
            self.columns["record_offset"].add_many(offset, count)
            self.columns["group_label"].add_many(label, count)
            self.columns["group_name"].add_many(group, count)
            self.columns["agent_group_label"].add_many(agent_label, count)
        self.events += [[label, group, *event] for event in events]
        self.log_lines += [[label, group, *line] for line in lines]
        self.records += 1
        self.rows += count

    def to_bytes(self, segment_size: int, compression: Compression = Compression.NONE) -> bytes:
        """The columns file's bytes, for a sealed segment of ``segment_size`` bytes.

        Its body is compressed with ``compression`` (none by default).
        """
        if self.problem is not None:
            raise Unusable(self.problem)
        if self.last_frame is None:
            raise Unusable("no frame was noted")
        columns = {name: column.encode() for name, column in self.columns.items()}
        if compression is not Compression.NONE:
            lag = max(1, self.rows // max(1, self.records))
            columns = {name: delta_coded(spec, lag) for name, spec in columns.items()}
        body: bytes = msgpack.packb(
            {
                "segment_size": segment_size,
                "last_frame": list(self.last_frame),
                "records": self.records,
                "rows": self.rows,
                "columns": columns,
                "events": self.events,
                "log": self.log_lines,
            },
            use_bin_type=True,
        )
        if compression is not Compression.NONE:
            body = compress(compression, body)
        return MAGICS[compression] + HEADER.pack(zlib.crc32(body)) + body

    def write(
        self, target: Path, segment_size: int, compression: Compression = Compression.NONE
    ) -> int:
        """Write the columns file ``target`` durably (temporary file, fsync, rename); its size.

        Its body is compressed with ``compression``. The caller fsyncs the directory (the seal
        does).
        """
        data = self.to_bytes(segment_size, compression)
        temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}{TEMPORARY_SUFFIX}")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            temporary.replace(target)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        return len(data)


def parse(data: bytes) -> dict[str, Any]:
    """Return the body of a columns file's bytes.

    Raises:
        ValueError: not a columns file of this version, torn, its CRC does not match, or its
            compressed body does not decompress.
        TypeError: its body is not a map.
    """
    start = len(MAGIC) + HEADER.size
    compression = _CODEC_OF.get(bytes(data[: len(MAGIC)]))
    if len(data) < start or compression is None:
        raise ValueError("not a columns file (bad magic)")
    (crc,) = HEADER.unpack_from(data, len(MAGIC))
    body: bytes | memoryview = memoryview(data)[start:]
    if zlib.crc32(body) != crc:
        raise ValueError("CRC mismatch: the file is torn or corrupt")
    if compression is not Compression.NONE:
        body = decompress(compression, bytes(body))
    value = msgpack.unpackb(body, raw=False, strict_map_key=False)
    if not isinstance(value, dict):
        raise TypeError("the body is not a map")
    stored = value.get("columns")
    if isinstance(stored, dict):
        value["columns"] = {
            name: delta_decoded(spec) if spec and spec[0] == DELTA else spec
            for name, spec in stored.items()
        }
    return value


#: The kind of an integer column stored as differences (see the module's docstring).
DELTA = "delta"


def delta_coded(spec: list[Any], lag: int) -> list[Any]:
    """An ``"int"`` column as a ``"delta"`` one of ``lag``; any other as it is.

    A column whose differences do not all fit 64 bits stays as it is.
    """
    if spec[0] != "int":
        return spec
    _, data, nulls = spec
    values = _native(data)
    try:
        deltas = array("q", values[:lag])
        deltas.extend([now - before for before, now in zip(values, values[lag:], strict=False)])
    except OverflowError:
        return spec
    return [DELTA, _little_endian(deltas), nulls, lag]


def delta_decoded(spec: Sequence[Any]) -> list[Any]:
    """A ``"delta"`` column as the ``"int"`` column it was made from.

    Raises:
        ValueError: the data is not whole 64-bit integers, the lag not a positive integer, or
            a sum does not fit 64 bits (not a column this code wrote).
    """
    _, data, nulls, lag = spec
    if lag.__class__ is not int or lag < 1 or len(data) % 8:
        raise ValueError(f"a delta column of {len(data)} bytes and lag {lag!r}")
    values = _native(data)
    try:
        for start in range(min(lag, len(values))):
            values[start::lag] = array("q", itertools.accumulate(values[start::lag]))
    except OverflowError as exc:
        raise ValueError(f"a delta column whose sums do not fit 64 bits: {exc}") from exc
    return ["int", _little_endian(values), nulls]


def _native(data: bytes) -> array[int]:
    """Little-endian 64-bit integers as an array of this machine's."""
    values = array("q", data)
    if sys.byteorder == "big":  # pragma: no cover - every machine this runs on is little-endian
        values.byteswap()
    return values
