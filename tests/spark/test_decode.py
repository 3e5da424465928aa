"""spark.decode: a segment's records become member rows, equal to the slow, obvious reading."""

from __future__ import annotations

import datetime as dt
import sys
from typing import TYPE_CHECKING

import pytest
from pyspark.sql.types import ArrayType, DataType, MapType, StructType

from grstats.collector.compression import Compression
from grstats.collector.errors import SegmentCorrupt, UnknownSchema
from grstats.spark import schema as spark_schema
from grstats.spark.decode import decode_segment, read_columns
from tests.spark.spool import COLUMNS, MEMBER_IDS, expected_rows, make_record, write_spool

if TYPE_CHECKING:
    from pathlib import Path


def _nullable_everywhere(data_type: DataType) -> bool:
    """Whether every field, element and value inside ``data_type`` may be null."""
    if isinstance(data_type, StructType):
        return all(f.nullable and _nullable_everywhere(f.dataType) for f in data_type.fields)
    if isinstance(data_type, ArrayType):
        return data_type.containsNull and _nullable_everywhere(data_type.elementType)
    if isinstance(data_type, MapType):
        return data_type.valueContainsNull and _nullable_everywhere(data_type.valueType)
    return True


@pytest.mark.parametrize("schema", ["MEMBER_ROWS", "MEMBER_ROLLUPS", "GROUP_ROLLUPS"])
def test_the_spark_schemas_are_what_spark_reads_back(schema: str) -> None:
    """Derived from Arrow, each Spark schema is nullable throughout, its timestamps zoned (UTC)."""
    derived = getattr(spark_schema, schema)
    assert _nullable_everywhere(derived)
    text = derived.simpleString()
    assert "timestamp" in text
    assert "timestamp_ntz" not in text  # the Arrow timestamps are UTC, Spark's TimestampType


class TestDecodeSegment:
    def test_rows_equal_the_obvious_reading(self, tmp_path: Path) -> None:
        """Every cell of every member row equals what a dict-by-dict join of the record gives."""
        (segment,) = write_spool(tmp_path, [[make_record(s) for s in range(700)]])
        decoded = decode_segment(segment)
        assert decoded.records == 700
        assert decoded.rows.num_rows == 700 * len(MEMBER_IDS)
        assert decoded.rows.to_pylist() == expected_rows([segment])

    @pytest.mark.parametrize("compression", [Compression.ZLIB, Compression.XZ])
    def test_a_compressed_segment_gives_the_plain_ones_rows(
        self, tmp_path: Path, compression: Compression
    ) -> None:
        """Decoded or read from its columns file, a compressed segment gives the plain one's rows."""
        records = [make_record(s, group=("east", "g-e")) for s in range(300)]
        records[7] = make_record(7, members=MEMBER_IDS[:2], APPLIER_LAG_SECONDS=None)
        (plain,) = write_spool(tmp_path / "plain", [records])
        (packed,) = write_spool(tmp_path / "packed", [records], compression)
        assert packed.stat().st_size * 4 < plain.stat().st_size
        expected = expected_rows([plain])
        assert expected_rows([packed]) == expected
        assert decode_segment(packed).rows.to_pylist() == expected
        assert read_columns(packed, packed.stat().st_size).rows.to_pylist() == expected

    def test_types_nulls_and_derived_columns(self, tmp_path: Path) -> None:
        """Zero timestamps are null, YES/NO are booleans, GTID counts are MySQL's GTID_COUNT."""
        (segment,) = write_spool(tmp_path, [[make_record(3)]])
        first, second, third = decode_segment(segment).rows.to_pylist()
        assert first["applying_original_commit"] is None  # 0 is MySQL's zero timestamp
        assert first["collected_at"] == dt.datetime(2026, 1, 5, 0, 0, 3, tzinfo=dt.UTC)
        assert first["collected_date"] == dt.date(2026, 1, 5)
        assert (first["connected"], second["connected"]) == (True, False)
        assert first["gtid_executed_count"] == 3000  # ...:1-3000
        assert second["gtids_ahead_of_committed_all"] == 1  # 1-3001 minus 1-3000
        assert third["applier_lag_seconds"] is None
        assert third["age_ms"] is None

    def test_empty_committed_set_gives_no_ahead_count(self, tmp_path: Path) -> None:
        """gtids_ahead_of_committed_all is null while the stable set is not known yet."""
        (segment,) = write_spool(tmp_path, [[make_record(0)]])
        rows = decode_segment(segment).rows.to_pylist()
        assert [row["gtids_ahead_of_committed_all"] for row in rows] == [None] * 3
        assert [row["gtid_executed_count"] for row in rows] == [0, 1, 2]

    def test_tables_in_another_order_or_missing_a_member_are_joined(self, tmp_path: Path) -> None:
        """A member missing from the stats table gets nulls; rows are matched by MEMBER_ID."""
        record = make_record(5)
        stats = record["tables"]["replication_group_member_stats"]
        stats["rows"] = stats["rows"][:1]  # only the first member has a stats row
        lag = record["tables"]["replication_group_member_lag"]
        lag["rows"].reverse()
        (segment,) = write_spool(tmp_path, [[make_record(4), record]])
        rows = decode_segment(segment).rows.to_pylist()
        assert rows == expected_rows([segment])
        assert rows[4]["count_transactions_checked"] is None
        assert rows[4]["view_id"] is None
        assert rows[5]["last_applied_transaction"].endswith(":5002")

    def test_an_older_agent_without_extended_columns(self, tmp_path: Path) -> None:
        """Records whose tables lack columns give nulls there; the layout may change mid-segment."""
        old = make_record(2)
        members = old["tables"]["replication_group_members"]
        keep = [i for i, c in enumerate(COLUMNS["replication_group_members"]) if c != "CONNECTED"]
        members["columns"] = [members["columns"][i] for i in keep]
        members["rows"] = [[row[i] for i in keep] for row in members["rows"]]
        (segment,) = write_spool(tmp_path, [[make_record(1), old, make_record(3)]])
        rows = decode_segment(segment).rows.to_pylist()
        assert [row["connected"] for row in rows[3:6]] == [None, None, None]
        assert [row["connected"] for row in rows[6:]] == [True, False, True]
        assert rows == expected_rows([segment])

    def test_records_name_their_group_or_get_the_default(self, tmp_path: Path) -> None:
        """group_label and group_name come from the record; older records get default and ""."""
        records = [
            make_record(1, group=("east", "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa")),
            make_record(1),
            make_record(2, group=("west", "")),
        ]
        (segment,) = write_spool(tmp_path, [records])
        rows = decode_segment(segment).rows.to_pylist()
        assert [(row["group_label"], row["group_name"]) for row in rows[::3]] == [
            ("east", "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"),
            ("default", ""),
            ("west", ""),
        ]
        assert rows == expected_rows([segment])

    def test_records_carry_the_agents_label_or_none(self, tmp_path: Path) -> None:
        """agent_group_label comes from the record; records from before the key get ""."""
        records = [
            make_record(1, group=("sales", ""), agent_label="orders"),
            make_record(2, group=("default", "")),
        ]
        (segment,) = write_spool(tmp_path, [records])
        rows = decode_segment(segment).rows.to_pylist()
        assert [(row["group_label"], row["agent_group_label"]) for row in rows[::3]] == [
            ("sales", "orders"),
            ("default", ""),
        ]
        assert rows == expected_rows([segment])

    def test_a_group_label_that_is_not_text(self, tmp_path: Path) -> None:
        """A group_label of the wrong type makes the segment corrupt, naming the frame."""
        record = make_record(1) | {"group_label": 7}
        (segment,) = write_spool(tmp_path, [[make_record(0), record]])
        with pytest.raises(SegmentCorrupt, match="offset"):
            decode_segment(segment)


class TestBadSegments:
    def test_crc_mismatch_names_file_and_offset(self, tmp_path: Path) -> None:
        """A flipped byte fails the frame's CRC; the error names the file and the frame."""
        (segment,) = write_spool(tmp_path, [[make_record(s) for s in range(3)]])
        data = bytearray(segment.read_bytes())
        first_length = int.from_bytes(data[8:12], "big")
        second = 8 + 8 + first_length
        data[second + 20] ^= 0xFF
        segment.write_bytes(bytes(data))
        with pytest.raises(SegmentCorrupt, match="CRC mismatch") as caught:
            decode_segment(segment)
        assert caught.value.offset == second
        assert str(segment) in str(caught.value)

    def test_truncated_segment(self, tmp_path: Path) -> None:
        """A segment cut short in its last frame is torn at that frame's offset."""
        (segment,) = write_spool(tmp_path, [[make_record(s) for s in range(2)]])
        data = segment.read_bytes()
        segment.write_bytes(data[:-10])
        first_length = int.from_bytes(data[8:12], "big")
        with pytest.raises(SegmentCorrupt, match="torn frame") as caught:
            decode_segment(segment)
        assert caught.value.offset == 8 + 8 + first_length

    def test_a_damaged_compressed_segment_names_the_frame_and_the_stream(
        self, tmp_path: Path
    ) -> None:
        """Cut short, a compressed segment is corrupt where its good frames end, saying why."""
        (segment,) = write_spool(tmp_path, [[make_record(s) for s in range(200)]], Compression.XZ)
        segment.write_bytes(segment.read_bytes()[:-100])
        with pytest.raises(SegmentCorrupt, match="xz segment: the compressed stream") as caught:
            decode_segment(segment)
        assert caught.value.offset > 8
        assert str(segment) in str(caught.value)

    def test_not_a_segment(self, tmp_path: Path) -> None:
        """A file without the magic is corrupt at offset 0."""
        path = tmp_path / "segment-00000000000000000001.sealed"
        path.write_bytes(b"PAR1 not a spool")
        with pytest.raises(SegmentCorrupt, match="magic") as caught:
            decode_segment(path)
        assert caught.value.offset == 0

    def test_a_frame_that_is_not_a_record(self, tmp_path: Path) -> None:
        """A valid frame holding a map without tables is corrupt at its offset."""
        (segment,) = write_spool(tmp_path, [[make_record(1), {"schema": 1, "tables": {}}]])
        with pytest.raises(SegmentCorrupt, match="not a schema-1 record") as caught:
            decode_segment(segment)
        assert caught.value.offset > 8

    def test_a_cell_of_the_wrong_type(self, tmp_path: Path) -> None:
        """A counter that is text makes the segment corrupt, named with a frame's offset."""
        bad = make_record(2, COUNT_TRANSACTIONS_CHECKED="many")
        (segment,) = write_spool(tmp_path, [[make_record(1), bad]])
        with pytest.raises(SegmentCorrupt, match="wrong type") as caught:
            decode_segment(segment)
        assert caught.value.offset == 8  # the batch's first frame
        assert str(segment) in str(caught.value)

    def test_a_member_id_that_is_not_text(self, tmp_path: Path) -> None:
        """MEMBER_ID is text; a member listed under a number makes the segment corrupt."""
        bad = make_record(2)
        for table in bad["tables"].values():
            index = table["columns"].index("MEMBER_ID")
            table["rows"][0][index] = 7
        (segment,) = write_spool(tmp_path, [[bad]])
        with pytest.raises(SegmentCorrupt, match="wrong type"):
            decode_segment(segment)

    @pytest.mark.parametrize("version", [True, "1", None])
    def test_a_schema_that_is_not_an_integer(self, tmp_path: Path, version: object) -> None:
        """A schema key that is not the integer 1 (true, text, missing) is an unknown schema."""
        odd = make_record(2) | {"schema": version}
        (segment,) = write_spool(tmp_path, [[make_record(1), odd]])
        with pytest.raises(UnknownSchema, match="is not a known version"):
            decode_segment(segment)

    def test_unknown_schema_names_version_file_and_offset(self, tmp_path: Path) -> None:
        """A record of schema 2 is refused with the version, the file and the frame's offset."""
        newer = make_record(2) | {"schema": 2}
        (segment,) = write_spool(tmp_path, [[make_record(1), newer]])
        with pytest.raises(UnknownSchema, match="record schema 2 is not a known version") as caught:
            decode_segment(segment)
        assert str(segment) in str(caught.value)
        assert "at offset" in str(caught.value)


class _CountingFinder:
    """A meta-path finder that counts the imports Python had to search for, finding none."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, name: str, *_: object) -> None:
        self.names.append(name)


def test_decoding_again_imports_nothing(tmp_path: Path) -> None:
    """Once loaded, decoding runs no import: a failed one (dateutil) searched sys.path each batch."""
    first, second = write_spool(tmp_path, [[make_record(1)], [make_record(s) for s in range(600)]])
    decode_segment(first)
    finder = _CountingFinder()
    sys.meta_path.insert(0, finder)
    try:
        decode_segment(second)
    finally:
        sys.meta_path.remove(finder)
    assert finder.names == []
