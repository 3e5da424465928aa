"""Ingest's one way into a sealed segment: its columns file when usable, else its frames.

The collector owns the on-disk format (:mod:`grstats.collector.spool` for the frames,
:mod:`grstats.collector.columns` for the columns file), so the reading and every check of it
live here: walking the frames and their CRC-32s, and telling whether a columns file belongs
to its segment. :func:`read_segment` gives either:

* :class:`StoredColumns`: the member rows of the columns file, checked by its own CRC-32 and
  by the segment's size and last frame (offset and CRC-32, read alone, or for a compressed
  segment as its header names it: the rest of the segment is not read, so a segment damaged
  after its seal still gives the rows it was sealed with);
* :class:`SegmentFrames`: the segment's records as msgpack payloads, each with its frame's
  byte offset, every frame checked as it is reached (the payloads are left for the caller
  to unpack, as it prefers: ingest keeps their texts as bytes).

:func:`read_columns` and :func:`read_frames` are its two halves. Imports only the standard
library, msgpack and the collector's format modules: no pyarrow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grstats.collector import columns as columns_file
from grstats.collector.errors import SegmentCorrupt
from grstats.collector.spool import FRAME_HEADER, frame_at, iter_frames, read_packed_header

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

#: The columns a columns file holds: the member rows' cells and the record's own.
STORED_COLUMNS = frozenset(
    out for taken in columns_file.TAKEN.values() for out, _ in taken
) | frozenset(columns_file.RECORD_COLUMNS)
#: The columns of STORED_COLUMNS that a file written before they existed lacks.
LATER_COLUMNS = frozenset(columns_file.LATER_RECORD_COLUMNS)


class ColumnsUnusable(Exception):
    """A segment's columns file cannot be used (the reason); its records are decoded instead."""


@dataclass(frozen=True, slots=True)
class StoredColumns:
    """A sealed segment's member rows as its columns file holds them.

    Attributes:
        name: the segment's file name.
        records: records (snapshots) in the segment.
        rows: member rows (cells per column).
        columns: each column of :data:`STORED_COLUMNS` as the file stores it:
            ``["int", data, nulls]``, ``["float", data, nulls]`` or ``["text", texts, codes]``
            (:mod:`grstats.collector.columns` describes them); a column of
            :data:`LATER_COLUMNS` is missing from a file written before it existed (each row
            has its value of :data:`~grstats.collector.columns.LATER_RECORD_COLUMNS`).
        events: the records' events, each its group label, group name and cells in
            ``EVENT_COLUMNS`` order (none in a file of a collector that spooled no events).
        log_lines: the records' GR log lines, each its group label, group name and cells in
            ``LOG_COLUMNS`` order (none in a file of a collector that spooled no lines).
    """

    name: str
    records: int
    rows: int
    columns: Mapping[str, Sequence[Any]]
    events: Sequence[Sequence[Any]] = ()
    log_lines: Sequence[Sequence[Any]] = ()


@dataclass(frozen=True, slots=True)
class SegmentFrames:
    """A sealed segment's frames: iterate for ``(frame offset, msgpack payload)``, in order.

    A compressed segment is decompressed as iteration starts (its offsets are the plain
    segment's). Iterating checks the magic, each frame's length and CRC-32, and raises
    :class:`SegmentCorrupt` (naming the file, the frame's offset and the reason) at the first
    bad one, after the good frames before it.

    Attributes:
        path: the segment.
        data: its bytes (compressed, for a compressed segment).
        columns_problem: why its columns file was not read (None when it was not tried).
    """

    path: Path
    data: bytes = field(repr=False)
    columns_problem: str | None = None

    @property
    def name(self) -> str:
        """The segment's file name."""
        return self.path.name

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        return iter_frames(self.data, self.path)


def read_segment(path: Path | str, *, use_columns: bool = True) -> StoredColumns | SegmentFrames:
    """Return the sealed segment at ``path`` as its columns file, or, if unusable, its frames.

    With ``use_columns`` False the frames are given whatever the columns file holds.

    Raises:
        OSError: the segment cannot be read.
    """
    path = Path(path)
    if not use_columns:
        return read_frames(path)
    try:
        return read_columns(path, path.stat().st_size)
    except ColumnsUnusable as exc:
        return read_frames(path, columns_problem=str(exc))


def read_frames(path: Path | str, *, columns_problem: str | None = None) -> SegmentFrames:
    """Return the frames of the sealed segment at ``path`` (read whole, checked as iterated).

    Raises:
        OSError: the segment cannot be read.
    """
    path = Path(path)
    return SegmentFrames(path, path.read_bytes(), columns_problem)


def read_columns(segment: Path | str, segment_size: int) -> StoredColumns:
    """Return the columns file of the sealed segment at ``segment`` of ``segment_size`` bytes.

    Raises:
        ColumnsUnusable: there is no columns file, or it is torn, corrupt, of another version,
            made for a segment of another size or content, or not the member rows' columns
            (the reason says which).
    """
    segment = Path(segment)
    try:
        data = columns_file.columns_path(segment).read_bytes()
    except FileNotFoundError:
        raise ColumnsUnusable("no columns file") from None
    except OSError as exc:
        raise ColumnsUnusable(f"cannot read the columns file: {exc}") from exc
    try:
        return _checked(segment, data, segment_size)
    except ColumnsUnusable:
        raise
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise ColumnsUnusable(f"not a columns file this code reads: {exc!r}") from exc


def _checked(segment: Path, data: bytes, segment_size: int) -> StoredColumns:
    """The columns file ``data`` once it is found to be the one of ``segment``."""
    body = columns_file.parse(data)
    made_for = body["segment_size"]
    if made_for != segment_size:
        raise ColumnsUnusable(f"made for a segment of {made_for} bytes, not {segment_size}")
    offset, crc = body["last_frame"]
    try:
        packed = read_packed_header(segment)
        if packed is None:
            found, payload = frame_at(segment, offset)
            ends = offset + FRAME_HEADER.size + len(payload) == segment_size
        else:  # its header names its last frame
            found, ends = packed.last_crc, packed.last_offset == offset
    except (SegmentCorrupt, OSError) as exc:
        raise ColumnsUnusable(f"the segment's last frame does not match: {exc}") from exc
    if found != crc or not ends:
        raise ColumnsUnusable(
            f"made for a segment whose last frame, at offset {offset}, has CRC-32 {crc:#010x}"
        )
    count, stored = body["rows"], body["columns"]
    if not STORED_COLUMNS - LATER_COLUMNS <= set(stored) <= STORED_COLUMNS:
        raise ColumnsUnusable(f"columns {sorted(stored)} are not the member rows'")
    events = body.get("events", ())
    if not isinstance(events, list | tuple):
        raise ColumnsUnusable(f"events {events!r:.100} are not a list")
    log_lines = body.get("log", ())
    if not isinstance(log_lines, list | tuple):
        raise ColumnsUnusable(f"log {log_lines!r:.100} is not a list")
    return StoredColumns(segment.name, body["records"], count, stored, events, log_lines)
