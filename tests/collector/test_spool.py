"""The spool: framing, corruption detection, rolling, sealing, recovery, locking, sequence numbers."""

from __future__ import annotations

import errno
import os
import threading
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from structlog.testing import capture_logs

from grstats.collector import spool
from grstats.collector.compression import Compression
from grstats.collector.errors import SegmentCorrupt, SpoolError, SpoolLocked
from grstats.collector.records import encode
from grstats.collector.spool import (
    FRAME_HEADER,
    MAGIC,
    PACKED_MAGICS,
    Packed,
    SpoolSettings,
    SpoolWriter,
    SyncPolicy,
    encode_frame,
    iter_frames,
    parse_segment_name,
    plain_bytes,
    read_packed_header,
    read_records,
    read_segment,
    scan,
    sealed_segments,
    segment_name,
)
from grstats.core.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable

#: Sealed segments stored as they were written (the layout tests read their bytes).
PLAIN = SpoolSettings(compression=Compression.NONE)


def record(index: int, pad: int = 100) -> dict[str, Any]:
    """A small record numbered ``index``."""
    return {"schema": 1, "index": index, "pad": "x" * pad, "lag": 0.25, "gone": None}


class FakeClock:
    """Monotonic seconds the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def all_records(spool: Path) -> list[dict[str, Any]]:
    """Every record of every sealed segment, in order."""
    return [r for path in sealed_segments(spool) for r in read_segment(path)]


def open_segments(spool: Path) -> list[Path]:
    """The .open segments of ``spool``."""
    return sorted(spool.glob("segment-*.open"))


def write_segment(path: Path, records: list[dict[str, Any]], tail: bytes = b"") -> list[int]:
    """Write a segment by hand (magic, frames, then ``tail``); return the frame offsets."""
    offsets, data = [], bytearray(MAGIC)
    for item in records:
        offsets.append(len(data))
        data += encode_frame(encode(item))
    path.write_bytes(bytes(data) + tail)
    return offsets


def segment_fsyncs(monkeypatch: pytest.MonkeyPatch, delay_s: float = 0.0) -> list[int]:
    """Note the thread of each fsync of a segment file from now on; make each ``delay_s`` slower.

    The real fsync still runs.
    """
    synced: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        real(fd)
        if ".open" in str(Path(f"/proc/self/fd/{fd}").readlink()):
            time.sleep(delay_s)
            synced.append(threading.get_ident())

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


class TestFraming:
    def test_round_trip_with_offsets(self, tmp_path: Path) -> None:
        """Appended records read back equal, at the offsets append returned, in order."""
        with SpoolWriter(tmp_path) as writer:
            positions = [writer.append(record(i)) for i in range(5)]
        (segment,) = sealed_segments(tmp_path)
        assert [p.sequence for p in positions] == [1] * 5
        assert positions[0].offset == len(MAGIC)
        assert list(read_records(segment)) == [
            (p.offset, record(i)) for i, p in enumerate(positions)
        ]

    def test_frame_layout_is_length_crc_payload(self, tmp_path: Path) -> None:
        """A plain segment is the magic, then big-endian length and CRC-32 before each payload."""
        with SpoolWriter(tmp_path, PLAIN) as writer:
            writer.append(record(7))
        data = sealed_segments(tmp_path)[0].read_bytes()
        payload = encode(record(7))
        assert data[:8] == b"GRSPOOL1"
        assert data[8:12] == len(payload).to_bytes(4, "big")
        assert data[16:] == payload
        assert list(iter_frames(data, "x")) == [(8, payload)]

    def test_segment_names(self) -> None:
        """Names carry a 20-digit sequence and parse back; other names are not segments."""
        assert segment_name(42, sealed=True) == "segment-00000000000000000042.sealed"
        assert parse_segment_name(segment_name(42, sealed=False)) == (42, False)
        assert parse_segment_name("segment-42.sealed") is None
        assert parse_segment_name(".last-segment") is None

    def test_sealed_segments_lists_only_sealed_in_order(self, tmp_path: Path) -> None:
        """Only *.sealed files are listed, by sequence; .open and other files are not."""
        for sequence in (3, 1, 2):
            write_segment(tmp_path / segment_name(sequence, sealed=True), [record(sequence)])
        write_segment(tmp_path / segment_name(4, sealed=False), [record(4)])
        (tmp_path / "notes.txt").write_text("hello")
        assert [p.name for p in sealed_segments(tmp_path)] == [
            segment_name(n, sealed=True) for n in (1, 2, 3)
        ]

    def test_sealed_segments_of_a_missing_directory(self, tmp_path: Path) -> None:
        """A spool path that is not a directory is an error naming it."""
        with pytest.raises(SpoolError, match="nowhere"):
            sealed_segments(tmp_path / "nowhere")


class TestCorruption:
    def test_bad_magic_names_file_and_offset_zero(self, tmp_path: Path) -> None:
        """A file without the magic is corrupt at offset 0."""
        path = tmp_path / segment_name(1, sealed=True)
        path.write_bytes(b"NOTASPOOL" + encode_frame(encode(record(1))))
        with pytest.raises(SegmentCorrupt) as caught:
            list(read_segment(path))
        assert (caught.value.path, caught.value.offset) == (str(path), 0)
        assert f"{path}: offset 0: does not start with the magic" in str(caught.value)

    def test_crc_mismatch_names_the_frame(self, tmp_path: Path) -> None:
        """A flipped payload byte fails the CRC of its frame; earlier records were yielded."""
        path = tmp_path / segment_name(1, sealed=True)
        offsets = write_segment(path, [record(0), record(1), record(2)])
        data = bytearray(path.read_bytes())
        data[offsets[1] + FRAME_HEADER.size + 20] ^= 0x01
        path.write_bytes(bytes(data))
        seen: list[dict[str, Any]] = []
        with pytest.raises(SegmentCorrupt) as caught:
            seen.extend(read_segment(path))
        assert seen == [record(0)]
        assert caught.value.offset == offsets[1]
        assert str(caught.value).startswith(f"{path}: offset {offsets[1]}: CRC mismatch")

    def test_torn_payload(self, tmp_path: Path) -> None:
        """A frame whose payload runs past the end of the file is torn, at that frame's offset."""
        path = tmp_path / segment_name(1, sealed=True)
        offsets = write_segment(path, [record(0), record(1)])
        path.write_bytes(path.read_bytes()[:-5])
        with pytest.raises(SegmentCorrupt, match=rf"offset {offsets[1]}: torn frame: its \d+-byte"):
            list(read_segment(path))

    def test_torn_header(self, tmp_path: Path) -> None:
        """Fewer than 8 bytes after the last frame are a torn header."""
        path = tmp_path / segment_name(1, sealed=True)
        write_segment(path, [record(0)], tail=b"\x00\x00\x01")
        size = path.stat().st_size
        with pytest.raises(SegmentCorrupt, match=rf"offset {size - 3}: .*header cut short at 3"):
            list(read_segment(path))

    def test_valid_crc_but_not_a_record(self, tmp_path: Path) -> None:
        """A frame whose payload is not a msgpack map is corrupt even with a good CRC."""
        path = tmp_path / segment_name(1, sealed=True)
        path.write_bytes(MAGIC + encode_frame(b"\x93\x01\x02\x03"))
        with pytest.raises(SegmentCorrupt, match="offset 8: payload is a msgpack list, not a map"):
            list(read_segment(path))

    def test_scan_reports_the_valid_prefix(self, tmp_path: Path) -> None:
        """A scan counts the records before the first bad frame and where they end."""
        path = tmp_path / segment_name(1, sealed=False)
        offsets = write_segment(path, [record(0), record(1)], tail=b"\x00\x00\x00\x09abc")
        found = scan(path)
        assert (found.records, found.size) == (2, path.stat().st_size)
        assert found.valid_bytes == found.size - 7
        assert found.problem is not None
        assert found.problem.offset == found.valid_bytes > offsets[1]


def numbered(count: int) -> list[dict[str, Any]]:
    """``count`` records that compress as a spool's do: mostly alike, numbers changing."""
    return [record(index, pad=50 + index % 7) | {"lag": index * 0.001} for index in range(count)]


def sealed_pair(
    tmp_path: Path, compression: Compression, records: list[dict[str, Any]]
) -> tuple[Path, Path]:
    """One segment of ``records`` written plain and one written with ``compression``."""
    segments = []
    for name, codec in (("plain", Compression.NONE), ("packed", compression)):
        with SpoolWriter(tmp_path / name, SpoolSettings(compression=codec)) as writer:
            writer.append_all(records)
        (segment,) = sealed_segments(tmp_path / name)
        segments.append(segment)
    return segments[0], segments[1]


PACKED = [Compression.ZLIB, Compression.XZ]


class TestCompression:
    def test_xz_is_the_default(self) -> None:
        """The collector seals segments with xz unless told otherwise."""
        assert SpoolSettings().compression is Compression.XZ

    @pytest.mark.parametrize("compression", PACKED)
    def test_a_compressed_segment_reads_as_the_plain_one(
        self, tmp_path: Path, compression: Compression
    ) -> None:
        """Same records at the same offsets; decompressed, the very bytes of the plain one."""
        records = numbered(300)
        plain, packed = sealed_pair(tmp_path, compression, records)
        assert packed.read_bytes()[:8] == PACKED_MAGICS[compression]
        assert packed.stat().st_size * 5 < plain.stat().st_size
        assert list(read_records(packed)) == list(read_records(plain))
        assert [r for _, r in read_records(packed)] == records
        assert plain_bytes(packed.read_bytes(), packed) == plain.read_bytes()

    @pytest.mark.parametrize("compression", PACKED)
    def test_the_header_names_the_plain_size_and_last_frame(
        self, tmp_path: Path, compression: Compression
    ) -> None:
        """The header holds what a columns file is checked against, read without the stream."""
        plain, packed = sealed_pair(tmp_path, compression, numbered(20))
        last, payload = list(iter_frames(plain.read_bytes(), plain))[-1]
        assert read_packed_header(packed) == Packed(
            compression, plain.stat().st_size, last, zlib.crc32(payload)
        )
        assert read_packed_header(plain) is None

    @pytest.mark.parametrize("compression", PACKED)
    def test_a_damaged_stream_is_corrupt_at_a_frame_after_the_good_ones(
        self, tmp_path: Path, compression: Compression
    ) -> None:
        """A flipped byte mid-stream stops reading at a real frame; the records before it came."""
        records = numbered(2000)
        plain, packed = sealed_pair(tmp_path, compression, records)
        offsets = [offset for offset, _ in read_records(plain)]
        data = bytearray(packed.read_bytes())
        data[len(data) // 2] ^= 0xFF
        packed.write_bytes(bytes(data))
        seen: list[dict[str, Any]] = []
        with pytest.raises(SegmentCorrupt) as caught:
            seen.extend(read_segment(packed))
        assert caught.value.offset in offsets
        assert seen == records[: offsets.index(caught.value.offset)]
        assert len(seen) > 100  # the first half's frames, within a piece of the damage
        reason = caught.value.reason
        assert reason.startswith(f"{compression.value} segment: ") or "CRC mismatch" in reason

    @pytest.mark.parametrize(
        ("damage", "offset", "reason"),
        [
            (lambda data: data[:-9], None, "xz segment: the compressed stream is cut short"),
            (lambda data: data + b"\x00", None, "xz segment: 1 bytes follow the compressed stream"),
            (lambda data: data[:40], None, "xz segment: the compressed stream is cut short"),
            (lambda data: data[:8] + b"\xff" + data[9:], 0, "xz segment's header: CRC mismatch"),
            (lambda data: data[:30], 0, "torn xz segment: header cut short"),
        ],
    )
    def test_a_cut_or_padded_segment_says_so(
        self,
        tmp_path: Path,
        damage: Callable[[bytes], bytes],
        offset: int | None,
        reason: str,
    ) -> None:
        """A torn stream, bytes after it or a bad header are corrupt, with what is wrong."""
        _, packed = sealed_pair(tmp_path, Compression.XZ, numbered(50))
        packed.write_bytes(damage(packed.read_bytes()))
        with pytest.raises(SegmentCorrupt) as caught:
            list(read_segment(packed))
        assert caught.value.reason.startswith(reason)
        if offset is not None:
            assert caught.value.offset == offset
        else:
            assert caught.value.offset >= len(MAGIC)

    def test_a_seal_killed_before_its_rename_is_done_again(self, tmp_path: Path) -> None:
        """A plain .open and a half-written compressed copy: the copy goes, the seal is redone."""
        path = tmp_path / segment_name(1, sealed=False)
        write_segment(path, numbered(40))
        stale = tmp_path / f".segment-{1:020d}.packed.{'ab' * 16}.tmp"
        stale.write_bytes(PACKED_MAGICS[Compression.XZ] + b"half")
        with capture_logs() as logs:
            SpoolWriter(tmp_path).close()
        assert not stale.exists()
        (segment,) = sealed_segments(tmp_path)
        assert segment.read_bytes()[:8] == PACKED_MAGICS[Compression.XZ]
        assert list(read_segment(segment)) == numbered(40)
        assert [e["reason"] for e in logs if e["event"] == "segment_sealed"] == ["recovered"]

    def test_a_seal_killed_after_its_rename_is_sealed_as_it_is(self, tmp_path: Path) -> None:
        """A compressed .open is a whole segment (fsynced before its rename): sealed unchanged."""
        _, packed = sealed_pair(tmp_path, Compression.XZ, numbered(40))
        spool = packed.parent
        data = packed.read_bytes()
        packed.rename(spool / segment_name(1, sealed=False))  # killed before the last rename
        SpoolWriter(spool).close()
        (segment,) = sealed_segments(spool)
        assert segment.read_bytes() == data
        assert list(read_segment(segment)) == numbered(40)

    def test_a_damaged_compressed_open_segment_is_left_to_a_person(self, tmp_path: Path) -> None:
        """A compressed .open that does not read whole is never truncated nor sealed."""
        _, packed = sealed_pair(tmp_path, Compression.XZ, numbered(40))
        spool = packed.parent
        path = spool / segment_name(1, sealed=False)
        packed.rename(path)
        path.write_bytes(path.read_bytes()[:-9])
        before = path.read_bytes()
        with pytest.raises(SegmentCorrupt, match="cut short"):
            SpoolWriter(spool)
        assert path.read_bytes() == before
        assert sealed_segments(spool) == []

    def test_scan_of_a_compressed_segment_counts_its_records(self, tmp_path: Path) -> None:
        """Scan reads a compressed segment decompressed: its records and plain size."""
        plain, packed = sealed_pair(tmp_path, Compression.XZ, numbered(30))
        found = scan(packed)
        assert (found.records, found.valid_bytes, found.size, found.problem) == (
            30,
            plain.stat().st_size,
            plain.stat().st_size,
            None,
        )

    def test_an_unknown_compression_is_refused(self) -> None:
        """A setting that is not a Compression is refused, naming the choices."""
        with pytest.raises(ConfigError, match="compression: 'gzip' is not one of none, zlib, xz"):
            SpoolSettings(compression="gzip")  # type: ignore[arg-type]


class TestRolling:
    def test_roll_by_size(self, tmp_path: Path) -> None:
        """Segments never outgrow segment_bytes; records stay in order over consecutive sequences."""
        with SpoolWriter(tmp_path, SpoolSettings(segment_bytes=1024)) as writer:
            for i in range(40):
                writer.append(record(i))
        segments = sealed_segments(tmp_path)
        assert len(segments) > 3
        assert all(path.stat().st_size <= 1024 for path in segments)
        assert [parse_segment_name(p.name) for p in segments] == [
            (n, True) for n in range(1, len(segments) + 1)
        ]
        assert all_records(tmp_path) == [record(i) for i in range(40)]
        assert open_segments(tmp_path) == []

    def test_record_larger_than_a_segment_gets_its_own(self, tmp_path: Path) -> None:
        """A record bigger than segment_bytes is written whole, alone in a sealed segment."""
        with SpoolWriter(tmp_path, SpoolSettings(segment_bytes=1024)) as writer:
            writer.append(record(0))
            writer.append(record(1, pad=5000))
            assert writer.current is None  # sealed at once: it is full
            writer.append(record(2))
        counts = [len(list(read_segment(p))) for p in sealed_segments(tmp_path)]
        assert counts == [1, 1, 1]

    def test_roll_by_age(self, tmp_path: Path) -> None:
        """A segment is sealed once segment_age_s has passed, by roll_if_due or the next append."""
        clock = FakeClock()
        settings = SpoolSettings(segment_age_s=60)
        with capture_logs() as logs, SpoolWriter(tmp_path, settings, clock=clock) as writer:
            writer.append(record(0))
            clock.now += 59.9
            assert not writer.roll_if_due()
            writer.append(record(1))
            clock.now += 0.1
            assert writer.roll_if_due()
            assert writer.current is None
            assert not writer.roll_if_due()  # nothing open: nothing to seal
            writer.append(record(2))
            clock.now += 60
            position = writer.append(record(3))
        assert position.sequence == 3
        assert [len(list(read_segment(p))) for p in sealed_segments(tmp_path)] == [2, 1, 1]
        sealed = [e for e in logs if e["event"] == "segment_sealed"]
        assert [(e["records"], e["reason"]) for e in sealed] == [
            (2, "age"),
            (1, "age"),
            (1, "closed"),
        ]

    def test_no_empty_segments(self, tmp_path: Path) -> None:
        """A writer that appends nothing leaves no segment behind."""
        SpoolWriter(tmp_path).close()
        assert list(tmp_path.glob("segment-*")) == []

    @pytest.mark.parametrize("sync", list(SyncPolicy))
    def test_every_sync_policy_round_trips(self, tmp_path: Path, sync: SyncPolicy) -> None:
        """Whatever the sync policy, closing seals every record appended."""
        with SpoolWriter(tmp_path, SpoolSettings(segment_bytes=4096, sync=sync)) as writer:
            for i in range(100):
                writer.append(record(i))
        assert all_records(tmp_path) == [record(i) for i in range(100)]

    def test_write_policy_reaches_the_os_per_record(self, tmp_path: Path) -> None:
        """With the WRITE policy each record is in the file when append returns."""
        with SpoolWriter(tmp_path, SpoolSettings(sync=SyncPolicy.WRITE)) as writer:
            position = writer.append(record(0))
            assert writer.current is not None
            assert writer.current.stat().st_size == position.offset + len(
                encode_frame(encode(record(0)))
            )

    def test_closed_writer_refuses_records(self, tmp_path: Path) -> None:
        """Appending after close is an error; closing twice is harmless."""
        writer = SpoolWriter(tmp_path)
        writer.close()
        writer.close()
        with pytest.raises(SpoolError, match="closed"):
            writer.append(record(0))


class TestBatch:
    def test_a_batch_is_one_fsync(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """With RECORD, a batch of 50 records costs one fsync of the segment, not 50."""
        synced = segment_fsyncs(monkeypatch)
        with SpoolWriter(tmp_path) as writer:
            writer.append(record(0))
            assert len(synced) == 1
            positions = writer.append_all([record(i) for i in range(1, 51)])
            assert len(synced) == 2  # group commit: the whole batch in one fsync
            assert writer.appended == 51
        assert [p.offset for p in positions] == [
            positions[0].offset + i * len(encode_frame(encode(record(1)))) for i in range(50)
        ]
        assert all_records(tmp_path) == [record(i) for i in range(51)]

    def test_a_batch_rolls_between_its_records(self, tmp_path: Path) -> None:
        """A batch larger than a segment fills segments in order, each sealed whole."""
        with SpoolWriter(tmp_path, SpoolSettings(segment_bytes=1024)) as writer:
            positions = writer.append_all([record(i) for i in range(40)])
            assert writer.appended == 40
        segments = sealed_segments(tmp_path)
        assert len(segments) > 3
        assert all(path.stat().st_size <= 1024 for path in segments)
        assert all_records(tmp_path) == [record(i) for i in range(40)]
        offsets = {
            (parse_segment_name(path.name) or (0, True))[0]: [o for o, _ in read_records(path)]
            for path in segments
        }
        assert [(p.sequence, p.offset) for p in positions] == [
            (sequence, offset) for sequence in sorted(offsets) for offset in offsets[sequence]
        ]

    def test_an_empty_batch_writes_nothing(self, tmp_path: Path) -> None:
        """Appending no record opens no segment."""
        with SpoolWriter(tmp_path) as writer:
            assert writer.append_payloads([]) == []
            assert writer.current is None
        assert list(tmp_path.glob("segment-*")) == []


class TestRecovery:
    def test_torn_tail_is_truncated_and_sealed(self, tmp_path: Path) -> None:
        """A killed writer's open segment keeps its valid frames, loses the torn tail, is sealed."""
        for sequence in (1, 2):
            write_segment(tmp_path / segment_name(sequence, sealed=True), [record(sequence)])
        path = tmp_path / segment_name(3, sealed=False)
        write_segment(path, [record(10), record(11)], tail=encode_frame(encode(record(12)))[:-9])
        size = path.stat().st_size
        with capture_logs() as logs, SpoolWriter(tmp_path) as writer:
            assert not path.exists()
            truncated = [e for e in logs if e["event"] == "segment_truncated"]
            assert len(truncated) == 1
            assert (
                truncated[0]["truncated_bytes"]
                == size - scan(tmp_path / segment_name(3, sealed=True)).size
            )
            assert truncated[0]["kept_records"] == 2
            assert writer.append(record(13)).sequence == 4
        assert all_records(tmp_path) == [record(1), record(2), record(10), record(11), record(13)]

    def test_corrupt_frame_in_the_middle_drops_the_rest(self, tmp_path: Path) -> None:
        """Recovery keeps only the frames before the first bad one."""
        path = tmp_path / segment_name(1, sealed=False)
        offsets = write_segment(path, [record(0), record(1), record(2)])
        data = bytearray(path.read_bytes())
        data[offsets[1] + FRAME_HEADER.size + 3] ^= 0xFF
        path.write_bytes(bytes(data))
        SpoolWriter(tmp_path, PLAIN).close()
        (segment,) = sealed_segments(tmp_path)
        assert segment.stat().st_size == offsets[1]
        assert list(read_segment(segment)) == [record(0)]

    @pytest.mark.parametrize("content", [b"", b"GRSP", MAGIC, MAGIC + b"\x00\x00"])
    def test_open_segment_without_records_is_discarded(
        self, tmp_path: Path, content: bytes
    ) -> None:
        """An open segment holding no whole record is removed, and its number is not reused."""
        (tmp_path / segment_name(5, sealed=False)).write_bytes(content)
        with SpoolWriter(tmp_path) as writer:
            assert writer.append(record(0)).sequence == 6
        assert [p.name for p in tmp_path.glob("segment-*")] == [segment_name(6, sealed=True)]

    def test_foreign_open_file_is_left_alone(self, tmp_path: Path) -> None:
        """An open segment with a wrong magic stops the writer and is not touched."""
        path = tmp_path / segment_name(1, sealed=False)
        path.write_bytes(b"something else entirely")
        with pytest.raises(SegmentCorrupt, match="offset 0"):
            SpoolWriter(tmp_path)
        assert path.read_bytes() == b"something else entirely"
        SpoolWriter(tmp_path / "other").close()  # and the lock was released: no leak

    def test_never_overwrites_a_sealed_twin(self, tmp_path: Path) -> None:
        """An open segment whose sealed twin exists is an error; both files stay."""
        write_segment(tmp_path / segment_name(1, sealed=True), [record(0)])
        write_segment(tmp_path / segment_name(1, sealed=False), [record(1)])
        with pytest.raises(SpoolError, match="sealed twin"):
            SpoolWriter(tmp_path)
        assert list(read_segment(tmp_path / segment_name(1, sealed=True))) == [record(0)]

    def test_sequence_numbers_survive_removed_segments(self, tmp_path: Path) -> None:
        """After every sealed segment was moved away, the next segment still gets a new number."""
        with SpoolWriter(tmp_path, SpoolSettings(segment_bytes=1024)) as writer:
            for i in range(20):
                writer.append(record(i))
            last = writer.last_sequence
        for path in sealed_segments(tmp_path):
            path.unlink()
        with SpoolWriter(tmp_path) as writer:
            assert writer.append(record(0)).sequence == last + 1

    def test_failed_write_is_never_sealed(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A write that fails halfway (disk full) leaves the segment open; recovery cuts it."""
        writer = SpoolWriter(tmp_path)
        writer.append(record(0))
        real = spool._write_all

        def disk_full(fd: int, data: bytes) -> None:
            real(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(spool, "_write_all", disk_full)
        with capture_logs() as logs, pytest.raises(OSError, match="No space"):
            writer.append(record(1))
        monkeypatch.undo()
        assert writer.current is None
        writer.close()
        assert sealed_segments(tmp_path) == []  # the half-written segment was not sealed
        assert [e["event"] for e in logs] == ["segment_abandoned"]
        with capture_logs() as logs:
            SpoolWriter(tmp_path).close()
        assert [e["event"] for e in logs][:1] == ["segment_truncated"]
        assert all_records(tmp_path) == [record(0)]


class TestLock:
    def test_second_writer_is_refused(self, tmp_path: Path) -> None:
        """While one writer holds the spool another is refused, naming the directory."""
        first = SpoolWriter(tmp_path)
        with pytest.raises(SpoolLocked, match=str(tmp_path)):
            SpoolWriter(tmp_path)
        first.close()
        SpoolWriter(tmp_path).close()

    def test_unusable_directory(self, tmp_path: Path) -> None:
        """A spool path under a file is an error naming the path."""
        (tmp_path / "file").write_text("")
        with pytest.raises(SpoolError, match="file/spool"):
            SpoolWriter(tmp_path / "file" / "spool")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"segment_bytes": 100}, "segment_bytes: 100"),
        ({"segment_bytes": 2**41}, "segment_bytes: 2199023255552"),
        ({"segment_bytes": 1.5}, "segment_bytes: 1.5"),
        ({"segment_age_s": 0}, "segment_age_s: 0"),
        ({"segment_age_s": 10**7}, "segment_age_s: 10000000"),
        ({"sync": "always"}, "sync: 'always'"),
    ],
)
def test_settings_name_the_bad_field(kwargs: dict[str, Any], field: str) -> None:
    """Invalid spool settings are refused with the field and its value."""
    with pytest.raises(ConfigError, match=field):
        SpoolSettings(**kwargs)


def test_segments_are_private_to_the_writer_until_sealed(tmp_path: Path) -> None:
    """While a segment is open, readers of sealed segments see none of its records."""
    writer = SpoolWriter(tmp_path)
    writer.append(record(0))
    assert sealed_segments(tmp_path) == []
    writer.close()
    assert all_records(tmp_path) == [record(0)]
    assert [p.name for p in tmp_path.glob("segment-*")] == [segment_name(1, sealed=True)]
