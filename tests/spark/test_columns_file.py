"""spark.decode.read_columns: a segment's columns file gives exactly the decoder's rows, or is refused."""

from __future__ import annotations

import copy
import zlib
from typing import TYPE_CHECKING, Any

import msgpack  # type: ignore[import-untyped]
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grstats.collector import columns as columns_file
from grstats.collector.columns import columns_path
from grstats.collector.compression import Compression
from grstats.collector.errors import SegmentCorrupt
from grstats.collector.records import TABLE_NAMES, encode
from grstats.collector.spool import SpoolSettings, SpoolWriter, SyncPolicy, sealed_segments
from grstats.spark.decode import ColumnsUnusable, decode_segment, read_columns
from grstats.spark.stage import CORRUPT, LOADED, stage_segment
from tests.spark.spool import COLUMNS, MEMBER_IDS, expected_rows, make_record, write_spool

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

MEMBERS, STATS, LAG, GTIDS = TABLE_NAMES


def read(segment: Path) -> Any:
    """The columns file's rows of ``segment`` (a sealed segment of this spool)."""
    return read_columns(segment, segment.stat().st_size)


def without_column(record: dict[str, Any], table: str, column: str) -> dict[str, Any]:
    """``record`` as an agent whose ``table`` lacks ``column`` would have served it."""
    record = copy.deepcopy(record)
    part = record["tables"][table]
    keep = [i for i, name in enumerate(part["columns"]) if name != column]
    part["columns"] = [part["columns"][i] for i in keep]
    part["rows"] = [[row[i] for i in keep] for row in part["rows"]]
    return record


def rows_of(
    record: dict[str, Any], table: str, change: Callable[[list[Any]], list[Any]]
) -> dict[str, Any]:
    """``record`` with ``change`` applied to the rows of ``table``."""
    record = copy.deepcopy(record)
    record["tables"][table]["rows"] = change(record["tables"][table]["rows"])
    return record


def set_cell(
    record: dict[str, Any], table: str, row: int, column: str, value: object
) -> dict[str, Any]:
    """``record`` with one cell of ``table`` set to ``value``."""
    record = copy.deepcopy(record)
    part = record["tables"][table]
    part["rows"][row][part["columns"].index(column)] = value
    return record


#: Segments of records the decoder reads, each a case its join or its types must get right.
SEGMENTS: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "a steady group": lambda: [make_record(s) for s in range(700)],
    "the stable set not known yet": lambda: [make_record(0), make_record(1)],
    "a member missing from the stats table, lag rows reversed": lambda: [
        make_record(4),
        rows_of(rows_of(make_record(5), STATS, lambda r: r[:1]), LAG, lambda r: r[::-1]),
    ],
    "an older agent without CONNECTED, mid-segment": lambda: [
        make_record(1),
        without_column(make_record(2), MEMBERS, "CONNECTED"),
        make_record(3),
    ],
    "a gtid table of MEMBER_ID alone": lambda: [
        without_column(make_record(2), GTIDS, "GTID_EXECUTED"),
        make_record(3),
    ],
    "a member listed twice in the lag table": lambda: [
        rows_of(
            make_record(6), LAG, lambda r: [*r, set_cell_row(r[0], LAG, "APPLIER_LAG_SECONDS", 9.5)]
        )
    ],
    "a record of no members between two": lambda: [
        make_record(1),
        make_record(2, members=[]),
        make_record(3),
    ],
    "one member then three": lambda: [make_record(1, members=MEMBER_IDS[:1]), make_record(2)],
    "groups named, unnamed and of another label": lambda: [
        make_record(1, group=("east", "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa")),
        make_record(1),
        make_record(2, group=("west", "")),
    ],
    "agents that name their group, and records from before they did": lambda: [
        make_record(
            1, group=("orders", "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"), agent_label="orders"
        ),
        make_record(2, group=("sales", ""), agent_label="Orders EU"),
        make_record(3, group=("default", ""), agent_label=""),
        make_record(4),
    ],
    "nulls where cells are often set": lambda: [
        set_cell(
            set_cell(make_record(7), MEMBERS, 0, "MEMBER_PORT", None), STATS, 1, "VIEW_ID", None
        ),
        {k: v for k, v in make_record(8).items() if k != "served_at_us"},
        set_cell(make_record(9), MEMBERS, 1, "MEMBER_ID", None),
    ],
    "a DECIMAL given as an integer and big counters": lambda: [
        set_cell(
            set_cell(make_record(10), LAG, 0, "APPLIER_LAG_SECONDS", 3),
            STATS,
            1,
            "COUNT_TRANSACTIONS_CHECKED",
            2**63 - 1,
        )
    ],
}


def set_cell_row(row: list[Any], table: str, column: str, value: object) -> list[Any]:
    """A copy of ``row`` of ``table`` with ``column`` set to ``value``."""
    row = list(row)
    row[COLUMNS[table].index(column)] = value
    return row


class TestSameRowsAsTheDecoder:
    @pytest.mark.parametrize("compression", [Compression.NONE, Compression.XZ])
    @pytest.mark.parametrize("case", list(SEGMENTS))
    def test_written_through_append(
        self, tmp_path: Path, case: str, compression: Compression
    ) -> None:
        """Records appended as the collector appends them: the columns' rows are the decoder's.

        Compressed, the file's integers are stored as differences (the counters' encoding).
        """
        (segment,) = write_spool(tmp_path, [SEGMENTS[case]()], compression)
        assert columns_path(segment).exists()
        from_columns, decoded = read(segment), decode_segment(segment)
        assert from_columns.rows.equals(decoded.rows)
        assert from_columns.records == decoded.records
        assert from_columns.rows.to_pylist() == expected_rows([segment])

    @pytest.mark.parametrize("case", list(SEGMENTS))
    def test_written_as_payloads(self, tmp_path: Path, case: str) -> None:
        """Records appended already encoded (as the dataset generator does) give the same file."""
        records = SEGMENTS[case]()
        (through_records,) = write_spool(tmp_path / "records", [records], Compression.XZ)
        settings = SpoolSettings(sync=SyncPolicy.SEAL, compression=Compression.XZ)
        with SpoolWriter(tmp_path / "payloads", settings) as writer:
            writer.append_payloads([encode(record) for record in records])
        (through_payloads,) = sealed_segments(tmp_path / "payloads")
        assert (
            columns_path(through_payloads).read_bytes()
            == columns_path(through_records).read_bytes()
        )

    def test_a_layout_change_every_record(self, tmp_path: Path) -> None:
        """Layouts alternating record by record are each taken with their own columns."""
        records = [
            make_record(s) if s % 2 else without_column(make_record(s), LAG, "APPLYING_TRANSACTION")
            for s in range(20)
        ]
        (segment,) = write_spool(tmp_path, [records])
        assert read(segment).rows.equals(decode_segment(segment).rows)


#: Cells that fit each kind of column, and some that do not.
_TEXT = st.one_of(st.none(), st.sampled_from(["", "ONLINE", "YES", "NO", "x" * 300, "é:1-3"]))
_INT = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.just(0))
_FLOAT = st.one_of(st.none(), st.floats(allow_nan=False), st.integers(-(2**53), 2**53))
_PORT = st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1))  # MEMBER_PORT is an int32
_CELLS = {"text": _TEXT, "int": _INT, "float": _FLOAT, "port": _PORT}
#: (table, MySQL column) -> the kind of cell the decoder reads there.
_KINDS = {
    (table, source): "int"
    if out in columns_file.INT_COLUMNS
    else "float"
    if out in columns_file.FLOAT_COLUMNS
    else "text"
    for table, taken in columns_file.TAKEN.items()
    for out, source in taken
} | {(MEMBERS, "MEMBER_PORT"): "port"}
_WRONG = st.one_of(
    st.booleans(),
    st.floats(allow_nan=False),
    st.integers(2**63, 2**64 - 1),
    st.integers(2**31, 2**40),  # an int64, but no MEMBER_PORT
    st.binary(max_size=3),
)


@st.composite
def odd_records(draw: st.DrawFn, *, wrong: bool) -> dict[str, Any]:
    """A record of shuffled, dropped, doubled rows of random cells (some of a wrong type)."""
    second = draw(st.integers(0, 10_000))
    members = draw(st.lists(st.sampled_from(MEMBER_IDS), max_size=4))
    record = make_record(second, members=members)
    for table in TABLE_NAMES:
        part = record["tables"][table]
        rows = part["rows"]
        rows = draw(st.permutations(rows)) if rows else rows
        if rows and draw(st.booleans()):
            rows = rows[: draw(st.integers(0, len(rows)))]
        if rows and draw(st.booleans()):
            rows = [*rows, list(rows[0])]
        for row in rows:
            for index, column in enumerate(part["columns"]):
                if column == "MEMBER_ID" or draw(st.integers(0, 4)) != 0:
                    continue
                row[index] = draw(_CELLS[_KINDS.get((table, column), "text")])
        part["rows"] = rows
    if wrong:
        table = draw(st.sampled_from(TABLE_NAMES))
        part = record["tables"][table]
        if part["rows"]:
            row = draw(st.sampled_from(part["rows"]))
            row[draw(st.integers(0, len(row) - 1))] = draw(_WRONG)
    return record


class TestAnyRecords:
    @settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(records=st.lists(odd_records(wrong=False), min_size=1, max_size=6))
    def test_cells_of_the_right_kinds_always_give_the_decoders_rows(
        self, tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]
    ) -> None:
        """Shuffled, missing and doubled rows and random cells of the right kinds: same rows."""
        (segment,) = write_spool(tmp_path_factory.mktemp("spool"), [records])
        decoded = decode_segment(segment)
        assert read(segment).rows.equals(decoded.rows)

    @settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(records=st.lists(odd_records(wrong=True), min_size=1, max_size=4))
    def test_a_cell_of_another_kind_gives_the_same_rows_or_no_file(
        self, tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]
    ) -> None:
        """With a cell of an odd type the columns file is the decoder's rows, or not written."""
        (segment,) = write_spool(tmp_path_factory.mktemp("spool"), [records])
        if columns_path(segment).exists():
            assert read(segment).rows.equals(decode_segment(segment).rows)
        else:
            with pytest.raises(ColumnsUnusable, match="no columns file"):
                read(segment)


class TestRefused:
    def test_no_columns_file(self, tmp_path: Path) -> None:
        """A segment sealed without one (an older collector) is refused, and the stage decodes it."""
        (segment,) = write_spool(tmp_path / "spool", [[make_record(1)]])
        columns_path(segment).unlink()
        with pytest.raises(ColumnsUnusable, match="no columns file"):
            read(segment)
        staged = stage_segment(segment, tmp_path / "staging")
        assert (staged.status, staged.from_columns, staged.rows) == (LOADED, False, 3)

    def test_made_for_a_segment_of_another_size(self, tmp_path: Path) -> None:
        """Another segment's columns file is refused: it names both sizes."""
        first, second = write_spool(tmp_path, [[make_record(1)], [make_record(2), make_record(3)]])
        columns_path(first).write_bytes(columns_path(second).read_bytes())
        with pytest.raises(ColumnsUnusable, match=f"not {first.stat().st_size}"):
            read(first)

    @pytest.mark.parametrize(
        ("damage", "reason"),
        [
            (lambda data: data[:-7], "CRC mismatch"),
            (lambda data: data[:5], "bad magic"),
            (lambda data: data[:40] + bytes([data[40] ^ 0xFF]) + data[41:], "CRC mismatch"),
            (lambda data: b"GRCOLS02" + data[8:], "bad magic"),
        ],
        ids=["torn", "cut in its magic", "a flipped byte", "another version"],
    )
    def test_a_damaged_file(
        self, tmp_path: Path, damage: Callable[[bytes], bytes], reason: str
    ) -> None:
        """A torn, flipped or foreign columns file is refused; the stage still loads the rows."""
        (segment,) = write_spool(tmp_path / "spool", [[make_record(s) for s in range(5)]])
        path = columns_path(segment)
        path.write_bytes(damage(path.read_bytes()))
        with pytest.raises(ColumnsUnusable, match=reason):
            read(segment)
        staged = stage_segment(segment, tmp_path / "staging")
        assert (staged.status, staged.from_columns, staged.rows) == (LOADED, False, 15)

    @pytest.mark.parametrize(
        ("edit", "reason"),
        [
            (lambda body: body["columns"].pop("agent"), "are not the member rows'"),
            (
                lambda body: body["last_frame"].__setitem__(1, body["last_frame"][1] ^ 1),
                "last frame, at offset",
            ),
            (lambda body: body["columns"]["age_ms"].__setitem__(1, b"\0" * 8), "a column of 8"),
            (lambda body: body["columns"]["agent"].__setitem__(0, "blob"), "kind 'blob'"),
            (lambda body: body["columns"]["agent"][1].__setitem__(0, b"x"), "bytes of codes"),
        ],
        ids=["a column missing", "another last frame", "a short column", "a kind", "no null"],
    )
    def test_a_file_of_the_wrong_contents(
        self, tmp_path: Path, edit: Callable[[dict[str, Any]], object], reason: str
    ) -> None:
        """A well-formed file whose contents do not fit the segment is refused, naming why."""
        (segment,) = write_spool(tmp_path, [[make_record(s) for s in range(2)]])
        path = columns_path(segment)
        body = columns_file.parse(path.read_bytes())
        edit(body)
        packed = msgpack.packb(body, use_bin_type=True)
        path.write_bytes(columns_file.MAGIC + columns_file.HEADER.pack(zlib.crc32(packed)) + packed)
        with pytest.raises(ColumnsUnusable, match=reason):
            read(segment)

    def test_a_file_from_before_agent_group_label(self, tmp_path: Path) -> None:
        """A file without the later agent_group_label column is used: its rows read it as ""."""
        (segment,) = write_spool(tmp_path, [[make_record(s, group=("east", "")) for s in range(3)]])
        path = columns_path(segment)
        body = columns_file.parse(path.read_bytes())
        del body["columns"]["agent_group_label"]
        packed = msgpack.packb(body, use_bin_type=True)
        path.write_bytes(columns_file.MAGIC + columns_file.HEADER.pack(zlib.crc32(packed)) + packed)
        rows = read(segment).rows
        assert rows.equals(decode_segment(segment).rows)
        assert set(rows.column("agent_group_label").to_pylist()) == {""}
        assert rows.to_pylist() == expected_rows([segment])

    def test_a_file_from_before_the_lag_by_stage(self, tmp_path: Path) -> None:
        """A file without the later stage columns is refused; the records give their values."""
        (segment,) = write_spool(tmp_path, [[make_record(s) for s in range(3)]])
        path = columns_path(segment)
        body = columns_file.parse(path.read_bytes())
        for name in ("transport_seconds", "waiting_seconds", "apply_seconds"):
            del body["columns"][name]
        packed = msgpack.packb(body, use_bin_type=True)
        path.write_bytes(columns_file.MAGIC + columns_file.HEADER.pack(zlib.crc32(packed)) + packed)
        with pytest.raises(ColumnsUnusable, match="are not the member rows'"):
            read(segment)
        staged = stage_segment(segment, tmp_path / "staging")
        assert (staged.status, staged.from_columns) == (LOADED, False)
        rows = decode_segment(segment).rows
        assert rows.column("transport_seconds").to_pylist()[:3] == [0.002, 0.004, 0.006]
        assert rows.column("apply_seconds").to_pylist()[:3] == [0.001, 0.001, None]

    def test_a_code_past_the_texts(self, tmp_path: Path) -> None:
        """A text code that points past the file's texts is refused, not read as garbage."""
        (segment,) = write_spool(tmp_path, [[make_record(1)]])
        path = columns_path(segment)
        body = columns_file.parse(path.read_bytes())
        body["columns"]["member_host"][2] = (1000).to_bytes(4, "little") * 3
        packed = msgpack.packb(body, use_bin_type=True)
        path.write_bytes(columns_file.MAGIC + columns_file.HEADER.pack(zlib.crc32(packed)) + packed)
        with pytest.raises(ColumnsUnusable, match="out of bounds"):
            read(segment)


class TestTheSegmentStaysTheTruth:
    def test_a_segment_damaged_after_its_seal_loads_the_rows_it_was_sealed_with(
        self, tmp_path: Path
    ) -> None:
        """A byte flipped inside a sealed segment: the columns file's rows are loaded as sealed."""
        records = [make_record(s) for s in range(3)]
        (segment,) = write_spool(tmp_path / "spool", [records])
        sealed_rows = decode_segment(segment).rows
        data = bytearray(segment.read_bytes())
        second = 8 + 8 + int.from_bytes(data[8:12], "big")
        data[second + 20] ^= 0xFF
        segment.write_bytes(bytes(data))
        assert read(segment).rows.equals(sealed_rows)
        staged = stage_segment(segment, tmp_path / "staging")
        assert (staged.status, staged.from_columns, staged.rows) == (LOADED, True, 9)
        decoded = stage_segment(segment, tmp_path / "decoded", use_columns=False)
        assert (decoded.status, decoded.offset) == (CORRUPT, second)  # decoding verifies all

    def test_a_damaged_last_frame_makes_it_decode(self, tmp_path: Path) -> None:
        """The last frame is read with the columns: damaged, the records say where."""
        (segment,) = write_spool(tmp_path / "spool", [[make_record(s) for s in range(3)]])
        data = bytearray(segment.read_bytes())
        data[-5] ^= 0xFF
        segment.write_bytes(bytes(data))
        with pytest.raises(ColumnsUnusable, match="CRC mismatch"):
            read(segment)
        staged = stage_segment(segment, tmp_path / "staging")
        assert (staged.status, staged.from_columns) == (CORRUPT, False)
        with pytest.raises(SegmentCorrupt) as caught:
            decode_segment(segment)
        assert staged.offset == caught.value.offset

    def test_asked_not_to_use_it(self, tmp_path: Path) -> None:
        """use_columns=False decodes the records although a good columns file is there."""
        (segment,) = write_spool(tmp_path / "spool", [[make_record(1)]])
        staged = stage_segment(segment, tmp_path / "staging", use_columns=False)
        assert (staged.status, staged.from_columns) == (LOADED, False)
        assert stage_segment(segment, tmp_path / "again").from_columns
