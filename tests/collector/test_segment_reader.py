"""collector.segment_reader: a sealed segment as its columns file when usable, else its frames."""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

import msgpack  # type: ignore[import-untyped]
import pytest

from grstats.collector import columns as columns_file
from grstats.collector.columns import columns_path
from grstats.collector.errors import SegmentCorrupt
from grstats.collector.segment_reader import (
    LATER_COLUMNS,
    STORED_COLUMNS,
    ColumnsUnusable,
    SegmentFrames,
    StoredColumns,
    read_columns,
    read_frames,
    read_segment,
)
from grstats.collector.spool import MAGIC
from tests.spark.spool import make_record, write_spool

if TYPE_CHECKING:
    from pathlib import Path


def test_a_sealed_segment_gives_its_columns(tmp_path: Path) -> None:
    """A segment the writer sealed with a columns file reads as that file's columns."""
    (segment,) = write_spool(tmp_path, [[make_record(s) for s in range(5)]])
    stored = read_segment(segment)
    assert isinstance(stored, StoredColumns)
    assert (stored.name, stored.records, stored.rows) == (segment.name, 5, 15)
    assert set(stored.columns) == STORED_COLUMNS


def test_a_columns_file_from_before_a_later_column_is_used(tmp_path: Path) -> None:
    """A file written before agent_group_label existed still gives its columns, without it."""
    (segment,) = write_spool(tmp_path, [[make_record(s) for s in range(2)]])
    path = columns_path(segment)
    body = columns_file.parse(path.read_bytes())
    del body["columns"]["agent_group_label"]
    packed = msgpack.packb(body, use_bin_type=True)
    path.write_bytes(columns_file.MAGIC + columns_file.HEADER.pack(zlib.crc32(packed)) + packed)
    stored = read_segment(segment)
    assert isinstance(stored, StoredColumns)
    assert (
        set(stored.columns)
        == STORED_COLUMNS - LATER_COLUMNS
        == STORED_COLUMNS - {"agent_group_label"}
    )


def test_without_a_usable_columns_file_it_gives_the_frames(tmp_path: Path) -> None:
    """No columns file, or use_columns=False: the frames, in order, with their offsets."""
    (segment,) = write_spool(tmp_path, [[make_record(s) for s in range(3)]])
    asked = read_segment(segment, use_columns=False)
    assert isinstance(asked, SegmentFrames)
    assert asked.columns_problem is None
    columns_path(segment).unlink()
    frames = read_segment(segment)
    assert isinstance(frames, SegmentFrames)
    assert frames.columns_problem == "no columns file"
    offsets = [offset for offset, _ in frames]
    assert offsets[0] == len(MAGIC)
    assert [msgpack.unpackb(payload)["collected_at_us"] for _, payload in frames] == [
        make_record(s)["collected_at_us"] for s in range(3)
    ]
    assert offsets == [offset for offset, _ in asked]


def test_a_columns_file_of_another_segment_is_unusable(tmp_path: Path) -> None:
    """A columns file made for a segment of another size is refused, naming both sizes."""
    first, second = write_spool(tmp_path, [[make_record(0)], [make_record(1), make_record(2)]])
    columns_path(first).write_bytes(columns_path(second).read_bytes())
    size = first.stat().st_size
    with pytest.raises(ColumnsUnusable, match=f"made for a segment of \\d+ bytes, not {size}"):
        read_columns(first, size)
    frames = read_segment(first)
    assert isinstance(frames, SegmentFrames)
    assert frames.columns_problem is not None
    assert frames.columns_problem.startswith("made for a segment of")


def test_a_bad_frame_is_reported_when_reached(tmp_path: Path) -> None:
    """A CRC-failing frame raises SegmentCorrupt naming the file and offset, after the good ones."""
    (segment,) = write_spool(tmp_path, [[make_record(0), make_record(1)]])
    second = [offset for offset, _ in read_frames(segment)][1]
    data = bytearray(segment.read_bytes())
    data[-1] ^= 0xFF
    segment.write_bytes(bytes(data))
    seen: list[int] = []
    with pytest.raises(SegmentCorrupt, match="CRC mismatch") as caught:
        seen.extend(offset for offset, _ in read_frames(segment))
    assert seen == [len(MAGIC)]
    assert caught.value.offset == second
    assert segment.name in str(caught.value)
