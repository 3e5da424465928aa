"""collector.columns: the spool writer leaves each sealed segment's member rows as columns."""

from __future__ import annotations

import copy
import zlib
from array import array
from typing import TYPE_CHECKING, Any

import pytest
from structlog.testing import capture_logs

from grstats.collector import columns as columns_file
from grstats.collector.columns import SegmentColumns, columns_path, is_temporary
from grstats.collector.compression import Compression
from grstats.collector.errors import SegmentCorrupt
from grstats.collector.records import TABLE_NAMES, encode
from grstats.collector.spool import (
    MAGIC,
    SpoolSettings,
    SpoolWriter,
    encode_frame,
    frame_at,
    iter_frames,
    read_records,
    sealed_segments,
    segment_name,
)
from tests.spark.spool import MEMBER_IDS, make_record

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

MEMBERS, STATS, LAG, GTIDS = TABLE_NAMES


def last_frame(segment: Path) -> list[int]:
    """The offset and CRC-32 of the last frame of ``segment`` (plain or compressed)."""
    offset, payload = list(iter_frames(segment.read_bytes(), segment))[-1]
    return [offset, zlib.crc32(payload)]


def body(segment: Path) -> dict[str, Any]:
    """The parsed columns file of ``segment``."""
    return columns_file.parse(columns_path(segment).read_bytes())


def with_cell(table: str, column: str, value: object) -> dict[str, Any]:
    """A record whose first row of ``table`` holds ``value`` in ``column``."""
    record = make_record(1)
    part = record["tables"][table]
    part["rows"][0][part["columns"].index(column)] = value
    return record


class TestTheWriter:
    @pytest.mark.parametrize("compression", list(Compression))
    def test_each_sealed_segment_has_its_columns_file(
        self, compression: Compression, tmp_path: Path
    ) -> None:
        """Sealing writes segment-N.columns: its size, records and rows are the segment's."""
        settings = SpoolSettings(segment_bytes=8192, compression=compression)
        with SpoolWriter(tmp_path, settings) as writer:
            for second in range(9):
                writer.append(make_record(second))
            assert writer.current is not None
            assert not columns_path(writer.current).exists()  # none while the segment is open
        segments = sealed_segments(tmp_path)
        assert len(segments) >= 3
        for segment in segments:
            found = body(segment)
            assert found["segment_size"] == segment.stat().st_size
            offsets = [offset for offset, _ in read_records(segment)]
            assert found["records"] == len(offsets)
            assert found["last_frame"] == last_frame(segment)
            assert found["last_frame"][0] == offsets[-1]
            assert found["rows"] == found["records"] * len(MEMBER_IDS)
        assert sum(body(segment)["records"] for segment in segments) == 9

    def test_the_columns_hold_the_cells(self, tmp_path: Path) -> None:
        """Integers are little-endian int64 with a validity bitmap; texts are codes into texts."""
        with SpoolWriter(tmp_path) as writer:
            first = writer.append(make_record(1)).offset
            writer.append(make_record(2))
        (segment,) = sealed_segments(tmp_path)
        stored = body(segment)["columns"]
        kind, data, validity = stored["age_ms"]  # 0, 1, None for each record's three members
        assert (kind, array("q", data).tolist()) == ("int", [0, 1, 0, 0, 1, 0])
        assert len(validity) == 1
        assert validity[0] & 0b111111 == 0b011011  # rows 2 and 5 null (bits past 6: padding)
        kind, texts, codes = stored["member_host"]
        assert (kind, texts) == ("text", [None, b"db1", b"db2", b"db3"])
        assert array("i", codes).tolist() == [1, 2, 3, 1, 2, 3]
        kind, data, validity = stored["record_offset"]
        assert array("q", data).tolist()[:3] == [first] * 3
        assert validity == b""  # no null: no bitmap
        assert stored["applier_lag_seconds"][0] == "float"

    def test_none_when_turned_off(self, tmp_path: Path) -> None:
        """SpoolSettings(columns=False) seals segments without columns files."""
        with SpoolWriter(tmp_path, SpoolSettings(columns=False)) as writer:
            writer.append(make_record(1))
        (segment,) = sealed_segments(tmp_path)
        assert not columns_path(segment).exists()

    @pytest.mark.parametrize(
        ("record", "reason"),
        [
            (make_record(1) | {"schema": 2}, "schema 2"),
            ({"schema": 1, "n": 1}, "KeyError('tables')"),
            (with_cell(STATS, "COUNT_TRANSACTIONS_CHECKED", "many"), "column of integers"),
            (with_cell(STATS, "COUNT_TRANSACTIONS_CHECKED", value=True), "column of integers"),
            (with_cell(STATS, "COUNT_TRANSACTIONS_CHECKED", 2.0), "column of integers"),
            (with_cell(STATS, "COUNT_TRANSACTIONS_CHECKED", 2**63), "OverflowError"),
            (with_cell(MEMBERS, "MEMBER_PORT", 2**31), "32-bit integers"),
            (with_cell(LAG, "APPLIER_LAG_SECONDS", 2**53 + 1), "column of numbers"),
            (with_cell(MEMBERS, "MEMBER_STATE", 7), "column of texts"),
            (with_cell(GTIDS, "MEMBER_ID", 7), "MEMBER_ID 7"),
        ],
        ids=[
            "schema 2",
            "no tables",
            "text for a counter",
            "a boolean",
            "a float for an integer",
            "past 64 bits",
            "a port past 32 bits",
            "an integer no double holds",
            "a number for a text",
            "a numeric MEMBER_ID",
        ],
    )
    def test_a_record_it_cannot_take_leaves_no_file(
        self, tmp_path: Path, record: dict[str, Any], reason: str
    ) -> None:
        """A record the decoder might read otherwise: no columns file for its segment, logged."""
        with capture_logs() as logs, SpoolWriter(tmp_path) as writer:
            writer.append(make_record(0))
            writer.append(record)
            writer.roll()
            writer.append(make_record(2))  # the next segment is taken again
        first, second = sealed_segments(tmp_path)
        assert not columns_path(first).exists()
        assert columns_path(second).exists()
        (skipped,) = [event for event in logs if event["event"] == "columns_skipped"]
        assert skipped["segment"] == first.name.replace(".sealed", ".open")
        assert reason in skipped["reason"]
        assert "offset" in skipped["reason"]

    @pytest.mark.parametrize(
        "payload", [b"\xc1", b"\x92\x01\x02", encode({"schema": 1, "tables": []})]
    )
    def test_a_payload_that_is_not_a_record(self, tmp_path: Path, payload: bytes) -> None:
        """A frame that is not msgpack, or not a record's map: appended, but no columns file."""
        with SpoolWriter(tmp_path) as writer:
            writer.append_payloads([encode(make_record(1)), payload])
        (segment,) = sealed_segments(tmp_path)
        assert not columns_path(segment).exists()

    def test_a_failed_write_still_seals(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A columns file that cannot be written is logged; the segment is sealed all the same."""

        def refuse(*_: object) -> int:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(SegmentColumns, "write", refuse)
        with capture_logs() as logs, SpoolWriter(tmp_path) as writer:
            writer.append(make_record(1))
        (segment,) = sealed_segments(tmp_path)
        assert not columns_path(segment).exists()
        (warning,) = [event for event in logs if event["event"] == "columns_not_written"]
        assert "No space left" in warning["error"]

    def test_a_kept_file_is_never_torn(self, tmp_path: Path) -> None:
        """The file is written under a temporary name and renamed: none is left behind."""
        with SpoolWriter(tmp_path) as writer:
            writer.append(make_record(1))
        assert not [path for path in tmp_path.iterdir() if is_temporary(path.name)]


class TestRecovery:
    def _left_open(self, spool: Path, records: list[dict[str, Any]], tail: bytes = b"") -> Path:
        """A segment a killed writer left open: its frames, then ``tail``."""
        spool.mkdir(exist_ok=True)
        path = spool / segment_name(1, sealed=False)
        path.write_bytes(
            MAGIC + b"".join(encode_frame(encode(record)) for record in records) + tail
        )
        return path

    def test_a_recovered_segment_gets_its_columns(self, tmp_path: Path) -> None:
        """The killed writer's columns were in memory: recovery makes them from the frames."""
        records = [make_record(s) for s in range(4)]
        self._left_open(tmp_path, records, tail=encode_frame(encode(make_record(9)))[:-5])
        with SpoolWriter(tmp_path):
            pass
        (segment,) = sealed_segments(tmp_path)
        found = body(segment)
        assert (found["segment_size"], found["records"]) == (segment.stat().st_size, 4)
        last = [offset for offset, _ in read_records(segment)][-1]
        assert found["last_frame"] == [last, last_frame(segment)[1]]

        with SpoolWriter(tmp_path / "twin", SpoolSettings()) as writer:
            writer.append_all(records)
        (twin,) = sealed_segments(tmp_path / "twin")
        assert columns_path(segment).read_bytes() == columns_path(twin).read_bytes()

    def test_a_stale_columns_file_is_replaced(self, tmp_path: Path) -> None:
        """A columns file left beside an open segment (killed before the rename) is made again."""
        path = self._left_open(tmp_path, [make_record(1)])
        columns_path(path).write_bytes(b"stale")
        (tmp_path / f".{columns_path(path).name}.0123.tmp").write_bytes(b"half")
        with SpoolWriter(tmp_path):
            pass
        (segment,) = sealed_segments(tmp_path)
        assert body(segment)["records"] == 1
        assert not [p for p in tmp_path.iterdir() if is_temporary(p.name)]


def test_frame_at_reads_one_frame_and_checks_it(tmp_path: Path) -> None:
    """frame_at gives one frame's CRC and payload, and reports a torn or damaged one."""
    with SpoolWriter(tmp_path, SpoolSettings(compression=Compression.NONE)) as writer:
        offsets = [writer.append(make_record(second)).offset for second in range(3)]
    (segment,) = sealed_segments(tmp_path)
    crc, payload = frame_at(segment, offsets[1])
    assert payload == encode(make_record(1))
    assert crc == zlib.crc32(payload)
    data = bytearray(segment.read_bytes())
    data[-3] ^= 0xFF
    segment.write_bytes(bytes(data))
    with pytest.raises(SegmentCorrupt, match="CRC mismatch"):
        frame_at(segment, offsets[2])
    segment.write_bytes(bytes(data[:-3]))
    with pytest.raises(SegmentCorrupt, match="cut short"):
        frame_at(segment, offsets[2])
    segment.write_bytes(b"PAR1" + bytes(data[4:]))
    with pytest.raises(SegmentCorrupt, match="magic"):
        frame_at(segment, offsets[0])


@pytest.mark.parametrize(
    "change",
    [
        lambda record: record,
        lambda record: {k: v for k, v in record.items() if k != "group_label"},
    ],
    ids=["as it is", "without its label"],
)
def test_the_builder_counts_every_record(
    change: Callable[[dict[str, Any]], dict[str, Any]],
) -> None:
    """Records with no member add no rows but count; the label defaults as the decoder's."""
    columns = SegmentColumns()
    columns.add(change(make_record(1, group=("east", "x"))), 8)
    columns.add(make_record(2, members=[]), 100)
    assert (columns.records, columns.rows, columns.usable) == (2, 3, True)
    texts = columns.columns["group_label"].encode()[1]
    assert texts[1] in (b"east", b"default")


def test_the_builder_keeps_the_agents_label() -> None:
    """agent_group_label is kept per row; a record from before the key gives ""."""
    columns = SegmentColumns()
    columns.add(make_record(1, group=("sales", "x"), agent_label="orders"), 8)
    columns.add(make_record(2, group=("sales", "x")), 100)
    texts, codes = columns.columns["agent_group_label"].encode()[1:]
    assert [texts[code] for code in array("i", codes)] == [b"orders"] * 3 + [b""] * 3


def test_a_record_is_not_changed_by_the_builder() -> None:
    """The builder only reads the records it is given (the writer encodes them after)."""
    record = make_record(3)
    before = copy.deepcopy(record)
    SegmentColumns().add(record, 8)
    assert record == before


@pytest.mark.parametrize(
    ("values", "lag", "kind"),
    [
        ([], 3, "delta"),
        ([5], 3, "delta"),
        ([10, 20, 30, 11, 21, 31, 13, 0, -7], 3, "delta"),
        ([2**63 - 1, -(2**63), 0], 1, "int"),  # a difference past 64 bits: kept as it is
    ],
)
def test_integers_stored_as_differences_read_back_as_they_were(
    values: list[int], lag: int, kind: str
) -> None:
    """A compressed file's integer columns are differences of ``lag`` rows; parse undoes them."""
    spec = ["int", array("q", values).tobytes(), b""]
    coded = columns_file.delta_coded(spec, lag)
    assert coded[0] == kind
    if kind == "delta":
        assert array("q", coded[1]).tolist() == values[:lag] + [
            now - before for before, now in zip(values, values[lag:], strict=False)
        ]
        assert columns_file.delta_decoded(coded) == spec


@pytest.mark.parametrize("compression", [Compression.ZLIB, Compression.XZ])
def test_a_compressed_columns_file_checks_its_crc_first(
    tmp_path: Path, compression: Compression
) -> None:
    """A compressed columns file names its codec, parses as the plain one, and fails its CRC."""
    columns = SegmentColumns()
    for second in range(30):
        columns.note_frame(8 + second, second)
        columns.add(make_record(second), 8 + second)
    plain, packed = columns.to_bytes(100), columns.to_bytes(100, compression)
    assert packed[:8] == columns_file.MAGICS[compression]
    assert len(packed) * 3 < len(plain)
    assert columns_file.parse(packed) == columns_file.parse(plain)
    damaged = bytearray(packed)
    damaged[len(damaged) // 2] ^= 0xFF
    with pytest.raises(ValueError, match="CRC mismatch"):
        columns_file.parse(bytes(damaged))
