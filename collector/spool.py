"""The spool: a directory of append-only segment files of checksummed msgpack records.

Layout (the contract with Spark ingest)::

    segment-00000000000000000001.sealed   sealed: complete, fsynced, never written again
    segment-00000000000000000002.sealed
    segment-00000000000000000003.open     being written (at most one); readers skip it

A segment starts with the 8-byte magic ``b"GRSPOOL1"``, then frames: the payload's length
(4 bytes, big-endian), ``zlib.crc32`` of the payload (4 bytes, big-endian), the payload (one
msgpack record, see :mod:`grstats.collector.records`). A frame that runs past the end of the file or
whose CRC does not match is torn or corrupt.

A sealed segment is stored compressed (:attr:`SpoolSettings.compression`, xz by default,
:mod:`grstats.collector.compression`): its magic names the codec (:data:`PACKED_MAGICS`), then
:data:`PACKED_HEADER` (the plain segment's size, its last frame's offset and CRC-32, and the
CRC-32 of the magic and these three), then one compressed stream of the plain segment, magic
``GRSPOOL1`` included, so that offsets are the same in both. Readers take either kind alike
(:func:`iter_frames`); a segment written plain, as every collector before compression did,
stays readable. The open segment is always plain: each record reaches the disk on its own.

Sealing is: write out, fsync the file; if compressing, write the compressed segment under a
temporary name, fsync it and rename it over the ``.open`` one (the ``.open`` name holds either
the plain segment or the whole compressed one, never a part), fsync the directory; write the
columns file; rename ``.open`` to ``.sealed``, fsync the directory. So a reader of ``*.sealed``
never sees a torn frame, whatever moment the writer was killed at.

On start, :class:`SpoolWriter` takes the spool's lock (``.lock``: one writer per spool), then
recovers a ``.open`` segment a killed writer left: it keeps the frames up to the first bad one,
truncates the torn tail (and logs how many bytes), seals what is left and goes on with the
next sequence number (a compressed ``.open`` is a seal that was killed after its rename: it
is checked whole and sealed as it is). Sequence numbers only ever increase: the highest one
used is also kept in ``.last-segment``, so a sealed segment that ingest moved away is never
written again.

Beside each sealed segment the writer also leaves ``segment-<sequence>.columns``: the same
records' member rows a column at a time (:mod:`grstats.collector.columns`), written and
fsynced before the segment is renamed ``.sealed``, so that ingest need not decode the records.
It is a copy for speed: readers that find none, or one that does not match, read the records.

Readers: :func:`sealed_segments`, :func:`read_segment` (the contract), plus
:func:`read_records` and :func:`iter_frames` that also give each frame's byte offset;
:func:`usage` measures the segments for the collector's ``/metrics``.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import os
import re
import struct
import time
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

from grstats.collector.columns import SUFFIX as COLUMNS_SUFFIX
from grstats.collector.columns import SegmentColumns, columns_path, is_temporary
from grstats.collector.compression import (
    Compression,
    Compressor,
    compress,
    compressor,
    decompress_prefix,
)
from grstats.collector.errors import RecordError, SegmentCorrupt, SpoolError, SpoolLocked
from grstats.collector.records import decode, encode
from grstats.core.checks import check_int, check_number
from grstats.core.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence
    from types import TracebackType

    from structlog.typing import FilteringBoundLogger

    from grstats.collector.records import Record

#: The first 8 bytes of every segment.
MAGIC = b"GRSPOOL1"
#: A frame's header: payload length and CRC-32, both unsigned 32-bit big-endian.
FRAME_HEADER = struct.Struct(">II")
#: The first 8 bytes of a compressed sealed segment, by codec.
PACKED_MAGICS: dict[Compression, bytes] = {
    Compression.ZLIB: b"GRSPOOZ1",
    Compression.XZ: b"GRSPOOX1",
}
_CODEC_OF = {magic: compression for compression, magic in PACKED_MAGICS.items()}
#: After a compressed segment's magic: the plain segment's size, its last frame's offset and
#: CRC-32, and the CRC-32 of the magic and these three (big-endian).
PACKED_HEADER = struct.Struct(">QQII")
#: The largest payload a frame can hold.
MAX_PAYLOAD = 2**32 - 1
#: The lock file that keeps a second writer out.
LOCK_NAME = ".lock"
#: The file holding the highest sequence number ever used.
LAST_SEGMENT_NAME = ".last-segment"

#: A segment's bytes: read (bytes) or mapped (memoryview).
_Data = TypeVar("_Data", bytes, memoryview)
_NAME = re.compile(r"segment-(\d{20})\.(open|sealed)")
#: A compressed segment being written, beside its ``.open`` segment.
_PACKING = re.compile(r"\.segment-\d{20}\.packed\.[0-9a-f]{32}\.tmp")
_MIB = 1024 * 1024
_BUFFER_BYTES = 1 * _MIB  # SEAL policy: write out once this much is buffered
_USAGE_ATTEMPTS = 5  # listings of a spool that changed under usage() before it gives up


def segment_name(sequence: int, *, sealed: bool) -> str:
    """Return the file name of segment ``sequence``, open or sealed."""
    return f"segment-{sequence:020d}.{'sealed' if sealed else 'open'}"


def parse_segment_name(name: str) -> tuple[int, bool] | None:
    """Return ``(sequence, sealed)`` of a segment's file name, or None for any other name."""
    match = _NAME.fullmatch(name)
    if match is None:
        return None
    return int(match.group(1)), match.group(2) == "sealed"


# -- reading ------------------------------------------------------------------------------


def sealed_segments(spool_dir: Path | str) -> list[Path]:
    """Return the sealed segments of ``spool_dir``, by sequence number.

    Raises:
        SpoolError: ``spool_dir`` is not a directory.
    """
    directory = Path(spool_dir)
    if not directory.is_dir():
        raise SpoolError(f"spool: {str(directory)!r} is not a directory")
    found = []
    for path in directory.iterdir():
        parsed = parse_segment_name(path.name)
        if parsed is not None and parsed[1]:
            found.append((parsed[0], path))
    return [path for _, path in sorted(found)]


@dataclass(frozen=True, slots=True)
class Usage:
    """What the segments of a spool take: how many, open and sealed, and their bytes.

    ``bytes`` includes the sealed segments' columns files.
    """

    segments: int
    bytes: int


def usage(spool_dir: Path | str) -> Usage:
    """Return the segments in ``spool_dir`` now and their total size, with their columns files.

    No other file counts.

    Safe while a writer works: a segment renamed from ``.open`` to ``.sealed`` between the
    listing and its ``stat`` makes the listing start again. A missing directory holds nothing.

    Raises:
        OSError: the directory cannot be listed (other than missing), or kept changing.
    """
    for _ in range(_USAGE_ATTEMPTS):
        segments = size = 0
        try:
            with os.scandir(spool_dir) as entries:
                for entry in entries:
                    if parse_segment_name(entry.name) is not None:
                        size += entry.stat(follow_symlinks=False).st_size
                        segments += 1
                    elif entry.name.endswith(COLUMNS_SUFFIX):
                        size += entry.stat(follow_symlinks=False).st_size
        except FileNotFoundError:
            if not Path(spool_dir).exists():
                return Usage(0, 0)
            continue  # a segment was renamed (sealed) or moved away meanwhile: list again
        return Usage(segments, size)
    raise OSError(f"spool: {spool_dir} kept changing while its segments were measured")


def read_segment(path: Path | str) -> Iterator[Record]:
    """Yield the records (payload maps) of the segment at ``path``, in order.

    Raises:
        SegmentCorrupt: bad magic, a torn frame, a CRC mismatch or a payload that is not a
            msgpack map; the message names the file, the frame's byte offset and the reason.
            Records before the bad frame have been yielded by then.
    """
    for _, record in read_records(path):
        yield record


def read_records(path: Path | str) -> Iterator[tuple[int, Record]]:
    """Yield ``(frame offset, record)`` for each frame of the segment at ``path``.

    Raises:
        SegmentCorrupt: as :func:`read_segment`.
    """
    data = Path(path).read_bytes()
    for offset, payload in iter_frames(data, path):
        try:
            record = decode(payload)
        except RecordError as exc:
            raise SegmentCorrupt(path, offset, str(exc)) from exc
        yield offset, record


def frame_at(path: Path | str, offset: int) -> tuple[int, bytes]:
    """Return ``(CRC-32, payload)`` of the one frame at ``offset`` of the plain segment ``path``.

    Reads only the magic and that frame (ingest checks that a columns file belongs to its
    segment this way) and checks them as :func:`iter_frames` does. A compressed segment says
    what its last frame is in its header instead (:func:`packed_header`).

    Raises:
        SegmentCorrupt: bad magic (a compressed segment's included), or the frame is torn or
            fails its CRC.
        OSError: the file cannot be read.
    """
    with Path(path).open("rb") as file:
        fd = file.fileno()
        magic = os.pread(fd, len(MAGIC), 0)
        if magic != MAGIC:
            raise SegmentCorrupt(path, 0, f"does not start with the magic {MAGIC!r}")
        header = os.pread(fd, FRAME_HEADER.size, offset)
        if len(header) < FRAME_HEADER.size:
            raise SegmentCorrupt(path, offset, "torn frame: header cut short")
        length, crc = FRAME_HEADER.unpack(header)
        payload = os.pread(fd, length, offset + FRAME_HEADER.size)
    if len(payload) < length:
        raise SegmentCorrupt(path, offset, f"torn frame: its {length}-byte payload is cut short")
    _check_crc(payload, crc, path, offset)
    return crc, payload


@dataclass(frozen=True, slots=True)
class Packed:
    """The header of a compressed sealed segment.

    Attributes:
        compression: its codec.
        plain_size: the plain segment's size (magic included).
        last_offset: the offset of its last frame in the plain segment.
        last_crc: that frame's CRC-32.
    """

    compression: Compression
    plain_size: int
    last_offset: int
    last_crc: int

    #: The bytes before the compressed stream: magic and header.
    start = len(MAGIC) + PACKED_HEADER.size

    def to_bytes(self) -> bytes:
        """The magic and header these values make."""
        magic = PACKED_MAGICS[self.compression]
        fields = PACKED_HEADER.pack(self.plain_size, self.last_offset, self.last_crc, 0)[:-4]
        return magic + fields + struct.pack(">I", zlib.crc32(magic + fields))


def is_packed(data: bytes | memoryview) -> bool:
    """Whether the segment whose bytes start with ``data`` is a compressed one."""
    return bytes(data[: len(MAGIC)]) in _CODEC_OF


def packed_header(data: bytes | memoryview, path: Path | str) -> Packed | None:
    """Return the header at the start of a segment's bytes ``data``, or None for a plain one.

    ``path`` names the segment in errors.

    Raises:
        SegmentCorrupt: a compressed segment's header is cut short or fails its CRC-32
            (offset 0).
    """
    compression = _CODEC_OF.get(bytes(data[: len(MAGIC)]))
    if compression is None:
        return None
    if len(data) < Packed.start:
        raise SegmentCorrupt(path, 0, f"torn {compression.value} segment: header cut short")
    plain_size, last_offset, last_crc, crc = PACKED_HEADER.unpack_from(data, len(MAGIC))
    actual = zlib.crc32(data[: Packed.start - 4])
    if actual != crc:
        raise SegmentCorrupt(
            path,
            0,
            f"{compression.value} segment's header: CRC mismatch (it says {crc:#010x}, "
            f"it has {actual:#010x})",
        )
    return Packed(compression, plain_size, last_offset, last_crc)


def read_packed_header(path: Path | str) -> Packed | None:
    """Return the header of the segment at ``path`` (reads only it), or None for a plain one.

    Raises:
        SegmentCorrupt: as :func:`packed_header`.
        OSError: the file cannot be read.
    """
    with Path(path).open("rb") as file:
        return packed_header(os.pread(file.fileno(), Packed.start, 0), path)


def unpack(data: bytes | memoryview, path: Path | str) -> tuple[bytes, str | None]:
    """Return a compressed segment's plain bytes and what is wrong with them, if anything.

    When the stream is damaged, cut short or does not decompress to the size its header
    says, the bytes are those decompressed before the damage (whole frames among them are
    good: each checks its CRC-32) and the problem says what failed.

    Raises:
        SegmentCorrupt: not a compressed segment, or its header is bad (offset 0).
    """
    header = packed_header(data, path)
    if header is None:
        raise SegmentCorrupt(path, 0, "not a compressed segment")
    name = header.compression.value
    plain, problem = decompress_prefix(header.compression, bytes(data[Packed.start :]))
    if problem is not None:
        problem = f"{name} segment: {problem.removeprefix(name + ': ')}"
    elif len(plain) != header.plain_size:
        problem = (
            f"{name} segment: decompressed to {len(plain)} bytes, its header says "
            f"{header.plain_size}"
        )
    return plain, problem


def plain_bytes(data: bytes, path: Path | str) -> bytes:
    """Return the plain segment of a segment's bytes ``data``: as they are, or decompressed.

    Raises:
        SegmentCorrupt: a compressed segment that does not decompress whole (the offset is
            where its good frames end).
    """
    if not is_packed(data):
        return data
    plain, problem = unpack(data, path)
    if problem is not None:
        for _ in iter_frames(plain, path, problem):
            pass  # raises at the first bad frame, or where the good bytes end
    return plain


def _check_crc(payload: bytes | memoryview, crc: int, path: Path | str, offset: int) -> None:
    """Raise SegmentCorrupt naming the frame at ``offset`` if ``payload``'s CRC is not ``crc``."""
    actual = zlib.crc32(payload)
    if actual != crc:
        raise SegmentCorrupt(
            path,
            offset,
            f"CRC mismatch: the frame says {crc:#010x}, the payload has {actual:#010x}",
        )


def iter_frames(
    data: _Data, path: Path | str, problem: str | None = None
) -> Iterator[tuple[int, _Data]]:
    """Yield ``(frame offset, payload)`` of a whole segment's bytes; ``path`` names it in errors.

    A compressed segment is decompressed first (a memoryview's payloads are then views of
    the plain bytes); its offsets are the plain segment's. Checks the magic, each frame's
    length against the end of the plain bytes and each CRC. ``problem`` says why the plain
    bytes ``data`` end early, if they do (:func:`unpack`'s).

    Raises:
        SegmentCorrupt: naming ``path``, the byte offset and the reason: for a compressed
            segment whose stream is damaged, at the frame the good bytes end in (the reason
            says what failed).
    """
    if is_packed(data):
        plain, problem = unpack(data, path)
        view = memoryview(plain) if isinstance(data, memoryview) else plain
        yield from iter_frames(view, path, problem)
        return
    if problem is not None and len(data) < len(MAGIC):  # nothing came out: not even the magic
        raise SegmentCorrupt(path, len(MAGIC), problem)
    if data[: len(MAGIC)] != MAGIC:
        raise SegmentCorrupt(
            path,
            0,
            f"does not start with the magic {MAGIC!r} (found {bytes(data[: len(MAGIC)])!r})",
        )
    offset = len(MAGIC)
    end = len(data)
    while offset < end:
        if end - offset < FRAME_HEADER.size:
            raise SegmentCorrupt(
                path,
                offset,
                problem or f"torn frame: header cut short at {end - offset} of 8 bytes",
            )
        length, crc = FRAME_HEADER.unpack_from(data, offset)
        start = offset + FRAME_HEADER.size
        if start + length > end:
            raise SegmentCorrupt(
                path,
                offset,
                problem
                or f"torn frame: its {length}-byte payload runs past the end of the file "
                f"({end} bytes)",
            )
        payload = data[start : start + length]
        _check_crc(payload, crc, path, offset)
        yield offset, payload
        offset = start + length
    if problem is not None:
        raise SegmentCorrupt(path, offset, problem)


def encode_frame(payload: bytes) -> bytes:
    """Return one frame: header (length, CRC-32) and ``payload``."""
    if len(payload) > MAX_PAYLOAD:
        raise SpoolError(f"record: {len(payload)} bytes is more than a frame holds")
    return FRAME_HEADER.pack(len(payload), zlib.crc32(payload)) + payload


@dataclass(frozen=True, slots=True)
class Scan:
    """What a segment holds: its valid records, up to the first bad frame.

    Attributes:
        records: how many valid records precede the first bad frame (all, if none is bad).
        valid_bytes: the length of the valid prefix (magic included).
        size: the file's length (the plain segment's, for a compressed one).
        problem: the first bad frame, or None when the whole file is valid.
    """

    records: int
    valid_bytes: int
    size: int
    problem: SegmentCorrupt | None


def scan(path: Path | str) -> Scan:
    """Return how much of the segment at ``path`` is valid (an open one may have a torn tail).

    A bad magic is reported as a problem at offset 0 with no valid bytes. A compressed
    segment is scanned decompressed: offsets and sizes are the plain segment's.
    """
    data = Path(path).read_bytes()
    problem = None
    if is_packed(data):
        try:
            data, problem = unpack(data, path)
        except SegmentCorrupt as exc:
            return Scan(0, 0, len(data), exc)
    records, valid = 0, len(MAGIC)
    try:
        for offset, payload in iter_frames(data, path, problem):
            try:
                decode(payload)
            except RecordError as exc:
                raise SegmentCorrupt(path, offset, str(exc)) from exc
            records += 1
            valid = offset + FRAME_HEADER.size + len(payload)
    except SegmentCorrupt as exc:
        return Scan(records, exc.offset, len(data), exc)
    return Scan(records, valid, len(data), None)


# -- writing ------------------------------------------------------------------------------


class SyncPolicy(enum.Enum):
    """When appended records reach the disk."""

    #: Each append (one record, or a batch of them) is written and fsynced before it returns
    #: (the default: nothing acknowledged is lost even on a power cut; a batch costs one
    #: fsync, which is how the collector commits the snapshots of many groups).
    RECORD = "record"
    #: Each record is written to the OS before append returns, fsynced when the segment seals:
    #: a killed collector loses nothing, a power cut loses the open segment's unsynced tail.
    WRITE = "write"
    #: Records are buffered in memory, written out at 1 MiB and fsynced when the segment
    #: seals: for bulk writers (dataset generators); a kill loses the buffered tail.
    SEAL = "seal"


#: A segment's default age at its seal: 60 s, so that an ingest every minute has the newest
#: snapshots in the table within about 2 minutes (issue 44); an ingest compacts the small
#: files that makes (``grstats.spark.compact_settings.COMPACT_OVER``). It was an hour.
DEFAULT_SEGMENT_AGE_S = 60.0


@dataclass(frozen=True, slots=True)
class SpoolSettings:
    """How segments roll and how records reach the disk.

    Attributes:
        segment_bytes: seal a segment before it would grow past this many bytes (a single
            larger record gets a segment of its own); 1 KiB to 1 TiB, default 64 MiB.
        segment_age_s: seal a segment this many seconds after it was opened, so that ingest
            sees the newest snapshots within about a minute (``grstats spark ingest
            --every``); 1 s to 7 days, default :data:`DEFAULT_SEGMENT_AGE_S`.
        sync: when records reach the disk (:class:`SyncPolicy`), default every record.
        columns: write each sealed segment's columns file (:mod:`grstats.collector.columns`)
            for ingest, default True. It takes the writer's memory while the segment is
            open; without it, ingest decodes the records, about three times slower.
        compression: how sealed segments and their columns files are stored
            (:class:`~grstats.collector.compression.Compression`), default xz: about 17 times
            fewer bytes than NONE for about 30 ms of one core per MB of records. NONE
            writes what a collector before compression wrote (an older release's ingest
            reads only those: docs/upgrades.md).
    """

    segment_bytes: int = 64 * _MIB
    segment_age_s: float = DEFAULT_SEGMENT_AGE_S
    sync: SyncPolicy = SyncPolicy.RECORD
    columns: bool = True
    compression: Compression = Compression.XZ

    def __post_init__(self) -> None:
        check_int(
            "segment_bytes",
            self.segment_bytes,
            1024,
            2**40,
            accepted="a whole number of bytes from 1024 (1 KiB) to 1099511627776 (1 TiB)",
        )
        check_number(
            "segment_age_s",
            self.segment_age_s,
            1,
            7 * 86_400,
            accepted="a number of seconds from 1 to 604800 (7 days)",
        )
        sync: object = self.sync
        if not isinstance(sync, SyncPolicy):
            choices = ", ".join(policy.value for policy in SyncPolicy)
            raise ConfigError(f"sync: {self.sync!r} is not one of {choices}")
        compression: object = self.compression
        if not isinstance(compression, Compression):
            choices = ", ".join(codec.value for codec in Compression)
            raise ConfigError(f"compression: {self.compression!r} is not one of {choices}")


@dataclass(frozen=True, slots=True)
class Position:
    """Where a record was appended: its segment's sequence number and the frame's offset."""

    sequence: int
    offset: int


@dataclass(frozen=True, slots=True)
class _Closed:
    """A segment closed for its seal: what :meth:`SpoolWriter._seal` needs of it.

    Its sequence number, records, plain size, last frame (offset and CRC-32) and columns
    (None when not kept).
    """

    sequence: int
    records: int
    size: int
    last_frame: tuple[int, int]
    columns: SegmentColumns | None


class SpoolWriter:
    """The one writer of a spool directory: appends records, rolls, seals, recovers.

    Creating a writer creates the directory if needed, takes its lock (raising
    :class:`SpoolLocked` if another writer holds it) and recovers a segment a killed writer
    left open (see the module docstring). A segment file is created at the first record
    appended after a seal, so no segment is ever empty. :meth:`close` (or leaving the ``with``
    block) seals the open segment. Not thread-safe: one thread at a time may call it (the
    collector's :class:`~grstats.collector.committer.SpoolCommitter` calls it from its own);
    one writer per spool.

    Args:
        directory: the spool directory.
        settings: rolling and sync settings.
        clock: seconds, monotonic; measures segment age (tests move it).
        logger: where ``segment_sealed`` and the recovery events go.
    """

    def __init__(
        self,
        directory: Path | str,
        settings: SpoolSettings | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        logger: FilteringBoundLogger | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.settings = settings or SpoolSettings()
        self._clock = clock
        if logger is None:
            # Imported here: ingest's executors read segments and need no logging library.
            import structlog  # noqa: PLC0415

            logger = structlog.get_logger()
        self._log: FilteringBoundLogger = logger
        self._fd: int | None = None
        self._sequence = 0
        self._size = 0
        self._records = 0
        self._opened_at = 0.0
        self._buffer = bytearray()
        self._columns: SegmentColumns | None = None
        self._packer: Compressor | None = None  # the open segment's compressed stream so far
        self._packed: list[bytes] = []
        self._last_frame = (0, 0)  # the open segment's last frame: offset and CRC-32
        self.sealed = 0  #: segments sealed by this writer (recovered ones included)
        self.appended = 0  #: records appended by this writer
        self.appended_bytes = 0  #: frame bytes appended by this writer
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SpoolError(f"spool: cannot create {str(self.directory)!r}: {exc}") from exc
        self._lock_fd: int | None = self._lock()
        try:
            self._last_sequence = self._recover()
        except BaseException:
            self._unlock()
            raise

    # -- public ------------------------------------------------------------------------

    @property
    def current(self) -> Path | None:
        """The open segment's path, or None between a seal and the next record."""
        if self._fd is None:
            return None
        return self.directory / segment_name(self._sequence, sealed=False)

    @property
    def last_sequence(self) -> int:
        """The highest sequence number used so far (0 for a new spool)."""
        return self._last_sequence

    def append(self, record: Mapping[str, Any]) -> Position:
        """Append one record (msgpack-encoded); return where it went. See :meth:`append_payload`."""
        return self.append_payload(encode(record))

    def append_all(self, records: Sequence[Mapping[str, Any]]) -> list[Position]:
        """Append records (msgpack-encoded) as one batch; see :meth:`append_payloads`."""
        return self._append([encode(record) for record in records], records)

    def append_payload(self, payload: bytes) -> Position:
        """Append one already-encoded record, rolling first if the open segment is due.

        With the RECORD policy the record is fsynced when this returns.
        """
        return self.append_payloads([payload])[0]

    def append_payloads(self, payloads: Sequence[bytes]) -> list[Position]:
        """Append already-encoded records in order as one batch; return where each went.

        The batch's frames reach the file in one write per segment, and with the RECORD
        policy in one fsync (group commit): every record of the batch is fsynced when this
        returns, none is acknowledged before. Rolls happen between records as for single
        appends (a segment due by size or age is sealed first). A failed write abandons the
        open segment (see :meth:`_abandon`) and raises; records of the batch sealed before
        it stay sealed.
        """
        return self._append(payloads, None)

    def _append(
        self, payloads: Sequence[bytes], records: Sequence[Mapping[str, Any]] | None
    ) -> list[Position]:
        """Append ``payloads``; ``records`` are the same records decoded, if the caller has them."""
        if self._lock_fd is None:
            raise SpoolError(f"spool: the writer of {self.directory} is closed")
        frames = [encode_frame(payload) for payload in payloads]
        positions: list[Position] = []
        pending: list[bytes] = []  # frames of the open segment not yet handed to the file
        try:
            for index, frame in enumerate(frames):
                self._roll_before(len(frame), pending)
                if self._fd is None:
                    self._open_next()
                positions.append(Position(self._sequence, self._size))
                self._last_frame = (self._size, FRAME_HEADER.unpack_from(frame)[1])
                if self._columns is not None:
                    self._columns.note_frame(*self._last_frame)
                    if records is None:
                        self._columns.add_payload(payloads[index], self._size)
                    else:
                        self._columns.add(records[index], self._size)
                pending.append(frame)
                self._size += len(frame)
                self._records += 1
                if self._size >= self.settings.segment_bytes:
                    self._write_out(pending)
                    self.roll("size")
            self._write_out(pending)
            if self._fd is not None and self.settings.sync is SyncPolicy.RECORD:
                os.fsync(self._fd)
        except BaseException:
            if self._fd is not None:
                self._abandon()
            raise
        return positions

    def _roll_before(self, frame_bytes: int, pending: list[bytes]) -> None:
        """Seal the open segment if the next frame would overfill it or it is due by age."""
        if self._fd is None:
            return
        if self._size + frame_bytes > self.settings.segment_bytes:
            self._write_out(pending)
            self.roll("size")
        elif self._age_due():
            self._write_out(pending)
            self.roll("age")

    def roll_if_due(self) -> bool:
        """Seal the open segment if it is older than ``segment_age_s``; return whether it did."""
        if self._fd is not None and self._age_due():
            self.roll("age")
            return True
        return False

    def roll(self, reason: str = "asked") -> None:
        """Seal the open segment now, if there is one; the next record opens the next.

        ``reason`` goes in the ``segment_sealed`` log event (size, age, closed, asked).
        """
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        columns, self._columns = self._columns, None
        packer, self._packer = self._packer, None
        packed, self._packed = self._packed, []
        try:
            self._flush_buffer(fd)
            os.fsync(fd)
        finally:
            os.close(fd)
        stream = None if packer is None else b"".join([*packed, packer.flush()])
        closed = _Closed(self._sequence, self._records, self._size, self._last_frame, columns)
        self._seal(closed, reason, stream)

    def close(self) -> None:
        """Seal the open segment and release the lock; a closed writer stays closed."""
        if self._lock_fd is None:
            return
        try:
            self.roll("closed")
        finally:
            self._unlock()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- segments ------------------------------------------------------------------------

    def _age_due(self) -> bool:
        return self._clock() - self._opened_at >= self.settings.segment_age_s

    def _open_next(self) -> None:
        sequence = self._last_sequence + 1
        self._save_last_sequence(sequence)
        self._last_sequence = sequence
        path = self.directory / segment_name(sequence, sealed=False)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        self._fd, self._sequence = fd, sequence
        self._size, self._records, self._opened_at = 0, 0, self._clock()
        self._columns = SegmentColumns() if self.settings.columns else None
        self._packed = []
        self._packer = None
        if self.settings.compression is not Compression.NONE:
            self._packer = compressor(self.settings.compression)
        self._write(MAGIC)
        self._size = len(MAGIC)
        self._fsync_directory()
        self._log.debug("segment_opened", segment=path.name)

    def _write(self, data: bytes) -> None:
        """Hand ``data`` to the open segment as the policy says (buffer or write; no fsync).

        When compressing, ``data`` is also compressed now, so that the seal has only the
        stream's end to compress.
        """
        assert self._fd is not None
        if self._packer is not None:
            piece = self._packer.compress(data)
            if piece:
                self._packed.append(piece)
        if self.settings.sync is SyncPolicy.SEAL:
            self._buffer += data
            if len(self._buffer) >= _BUFFER_BYTES:
                self._flush_buffer(self._fd)
            return
        _write_all(self._fd, data)

    def _write_out(self, pending: list[bytes]) -> None:
        """Write the batch's ``pending`` frames to the open segment and count them as appended."""
        if not pending:
            return
        data = b"".join(pending)
        self._write(data)
        self.appended += len(pending)
        self.appended_bytes += len(data)
        pending.clear()

    def _abandon(self) -> None:
        """Give up the open segment after a failed write: never seal what may be torn.

        It stays ``.open``; the next writer's recovery truncates it at its last whole frame.
        """
        fd, self._fd = self._fd, None
        self._buffer.clear()
        self._columns = None
        self._packer, self._packed = None, []
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._log.error(
            "segment_abandoned",
            segment=segment_name(self._sequence, sealed=False),
            reason="a write failed; the next start recovers it",
        )

    def _flush_buffer(self, fd: int) -> None:
        if self._buffer:
            _write_all(fd, bytes(self._buffer))
            self._buffer.clear()

    def _seal(self, closed: _Closed, why: str, stream: bytes | None) -> None:
        """Seal the ``closed`` segment, fsynced already.

        ``stream`` is the segment compressed with :attr:`SpoolSettings.compression`, to be
        put in its place first; None leaves the file as it is (plain, or compressed by a seal
        killed after that step).
        """
        sequence, records, size, columns = (
            closed.sequence,
            closed.records,
            closed.size,
            closed.columns,
        )
        source = self.directory / segment_name(sequence, sealed=False)
        target = self.directory / segment_name(sequence, sealed=True)
        if target.exists():
            raise SpoolError(f"spool: {target} exists already; {source.name} is left as it is")
        if stream is None:
            sealed_size = source.stat().st_size
        else:
            sealed_size = self._pack(source, size, stream, closed.last_frame)
        columns_bytes = self._write_columns(source, columns, sealed_size)
        source.rename(target)
        self._fsync_directory()
        self.sealed += 1
        self._log.info(
            "segment_sealed",
            segment=target.name,
            records=records,
            bytes=size,
            sealed_bytes=sealed_size,
            columns_bytes=columns_bytes,
            reason=why,
        )

    def _pack(self, segment: Path, size: int, stream: bytes, last_frame: tuple[int, int]) -> int:
        """Put the compressed ``stream`` of the plain ``segment`` in its place; its new size.

        Written under a temporary name, fsynced, then renamed over ``segment`` and the
        directory fsynced: a kill at any moment leaves the plain segment or the whole
        compressed one (a stale temporary file is removed at the next start).
        """
        header = Packed(self.settings.compression, size, *last_frame).to_bytes()
        temporary = segment.with_name(f".{segment.stem}.packed.{uuid.uuid4().hex}.tmp")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            try:
                _write_all(fd, header)
                _write_all(fd, stream)
                os.fsync(fd)
            finally:
                os.close(fd)
            temporary.replace(segment)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        self._fsync_directory()
        return len(header) + len(stream)

    def _write_columns(self, segment: Path, columns: SegmentColumns | None, size: int) -> int:
        """Write the columns file of ``segment`` (``size`` bytes) before its seal; its bytes.

        A segment whose records the columns could not take gets none (ingest decodes it);
        nor does one whose file cannot be written: the segment is sealed all the same.
        """
        target = columns_path(segment)
        if columns is None or not columns.usable:
            target.unlink(missing_ok=True)  # a stale one a killed writer left
            if columns is not None:
                self._log.info("columns_skipped", segment=segment.name, reason=columns.problem)
            return 0
        try:
            return columns.write(target, size, self.settings.compression)
        except OSError as exc:
            self._log.warning("columns_not_written", segment=segment.name, error=str(exc))
            target.unlink(missing_ok=True)
            return 0

    def _fsync_directory(self) -> None:
        fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _save_last_sequence(self, sequence: int) -> None:
        path = self.directory / LAST_SEGMENT_NAME
        temporary = path.with_name(path.name + ".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            _write_all(fd, f"{sequence}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        temporary.replace(path)
        # the directory is fsynced when the segment file is created, right after

    # -- lock and recovery ---------------------------------------------------------------

    def _lock(self) -> int:
        path = self.directory / LOCK_NAME
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise SpoolError(f"spool: cannot open {path}: {exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            os.close(fd)
            raise SpoolLocked(
                f"spool: {self.directory} is in use by another writer (it holds {path})"
            ) from exc
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return fd

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def _recover(self) -> int:
        """Seal or drop every ``.open`` segment; return the highest sequence number used."""
        highest = self._read_last_sequence()
        sealed, opened = set(), []
        for path in self.directory.iterdir():
            parsed = parse_segment_name(path.name)
            if parsed is None:
                if is_temporary(path.name) or _PACKING.fullmatch(path.name):
                    path.unlink()  # a columns file or compressed segment a killed writer left
                continue
            sequence, is_sealed = parsed
            highest = max(highest, sequence)
            if is_sealed:
                sealed.add(sequence)
            else:
                opened.append((sequence, path))
        for sequence, path in sorted(opened):
            if sequence in sealed:
                raise SpoolError(
                    f"spool: both {path.name} and its sealed twin exist; move one away"
                )
            self._recover_one(sequence, path)
        return highest

    def _recover_one(self, sequence: int, path: Path) -> None:
        size = path.stat().st_size
        if size < len(MAGIC) and MAGIC.startswith(path.read_bytes()):
            path.unlink()  # killed while creating it: nothing was ever written
            self._fsync_directory()
            self._log.info("segment_discarded", segment=path.name, bytes=size, reason="empty")
            return
        with path.open("rb") as file:
            if is_packed(file.read(len(MAGIC))):
                self._recover_packed(sequence, path)
                return
        found = scan(path)
        if found.problem is not None and found.problem.offset == 0:
            raise found.problem  # not a segment this code wrote: leave it to a person
        if found.problem is not None:
            with path.open("r+b") as file:
                file.truncate(found.valid_bytes)
                file.flush()
                os.fsync(file.fileno())
            self._log.warning(
                "segment_truncated",
                segment=path.name,
                truncated_bytes=found.size - found.valid_bytes,
                kept_records=found.records,
                reason=found.problem.reason,
            )
        if found.records == 0:
            path.unlink()
            self._fsync_directory()
            self._log.info("segment_discarded", segment=path.name, bytes=size, reason="no record")
            return
        if found.problem is None:
            with path.open("r+b") as file:
                os.fsync(file.fileno())
        self._log.info("segment_recovered", segment=path.name, records=found.records)
        data = path.read_bytes()
        columns, last_frame = self._columns_of(data, path)
        stream = None
        if self.settings.compression is not Compression.NONE:
            stream = compress(self.settings.compression, data)
        closed = _Closed(sequence, found.records, len(data), last_frame, columns)
        self._seal(closed, "recovered", stream)

    def _recover_packed(self, sequence: int, path: Path) -> None:
        """Seal a compressed ``.open`` segment: a seal killed after it was put in place.

        It was fsynced whole before its rename, so it is checked whole: a damaged one is left
        to a person (SegmentCorrupt), as a file this code did not write is.
        """
        plain = plain_bytes(path.read_bytes(), path)
        columns, last_frame = self._columns_of(plain, path)
        records = sum(1 for _ in iter_frames(plain, path))
        self._log.info("segment_recovered", segment=path.name, records=records)
        self._seal(_Closed(sequence, records, len(plain), last_frame, columns), "recovered", None)

    def _columns_of(
        self, plain: bytes, path: Path
    ) -> tuple[SegmentColumns | None, tuple[int, int]]:
        """The columns (if the settings want them) and last frame of a plain segment's bytes.

        What a killed writer held in memory, made again from its frames.
        """
        columns = SegmentColumns() if self.settings.columns else None
        last_frame = (0, 0)
        for offset, payload in iter_frames(plain, path):
            last_frame = (offset, FRAME_HEADER.unpack_from(plain, offset)[1])
            if columns is not None:
                columns.note_frame(*last_frame)
                columns.add_payload(payload, offset)
        return columns, last_frame

    def _read_last_sequence(self) -> int:
        path = self.directory / LAST_SEGMENT_NAME
        try:
            text = path.read_text().strip()
        except FileNotFoundError:
            return 0
        if not text.isdigit():
            raise SpoolError(f"spool: {path} holds {text[:40]!r}, not a sequence number")
        return int(text)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
