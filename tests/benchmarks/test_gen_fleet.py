"""The fast fleet generator: the template group's records under each group's own identity.

Not part of the normal suite; run with ``pytest tests/benchmarks -p no:cacheprovider``.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import msgpack  # type: ignore[import-untyped]

from grstats.collector.columns import columns_path
from grstats.collector.records import TABLE_NAMES
from grstats.collector.spool import read_records, sealed_segments
from grstats.spark.decode import decode_segment, read_columns
from tests.benchmarks.gen_dataset import Group
from tests.benchmarks.gen_fleet import generate, identity_of, label_of, swapped, swaps

if TYPE_CHECKING:
    from pathlib import Path

    from grstats.collector.records import Record

START_S = 1_767_571_200  # 2026-01-05T00:00:00Z


def records_of(spool: Path) -> list[Record]:
    """Every record of the spool's sealed segments, in spool order."""
    return [record for path in sealed_segments(spool) for _, record in read_records(path)]


def test_each_collector_spools_its_groups_each_second(tmp_path: Path) -> None:
    """3 groups of 4 over 2 collectors: one record per group a second, in its collector's spool."""
    summary = generate(tmp_path, members=12, group_size=4, hours=0.02, collectors=2)
    first, second = records_of(tmp_path / "collector-01"), records_of(tmp_path / "collector-02")
    assert summary["member_rows"] == 72 * 3 * 4 == 864
    assert Counter(record["group_label"] for record in first) == {"g0000": 72, "g0002": 72}
    assert Counter(record["group_label"] for record in second) == {"g0001": 72}
    seconds = Counter(record["collected_at_us"] // 1_000_000 - START_S for record in first)
    assert set(seconds) == set(range(72))
    assert set(seconds.values()) == {2}
    for record in first + second:
        for name in TABLE_NAMES:
            assert len(record["tables"][name]["rows"]) == 4


def test_a_group_is_the_template_under_its_own_identity(tmp_path: Path) -> None:
    """Group g0001's records are the simulated group's but for its group name, members, label."""
    generate(tmp_path, members=6, group_size=3, hours=0.01, collectors=2)
    records = records_of(tmp_path / "collector-02")
    template = Group(1, START_S, members=3, label=label_of(0))
    own = identity_of(1, 1, 3)
    replacements = swaps(identity_of(1, 0, 3), own)
    pack = msgpack.Packer(use_bin_type=True).pack
    for t, record in enumerate(records):
        template.step(t)
        expected = msgpack.unpackb(swapped(pack(template.record(t, 0)), replacements))
        assert record == expected
    assert {record["group_name"] for record in records} == {own.group_uuid}
    members = records[0]["tables"]["replication_group_members"]["rows"]
    assert [row[1] for row in members] == list(own.member_ids)
    assert records[0]["agent"] == "db1.g0001.example.net:7400"


def test_identities_are_unique_and_keep_the_template_lengths() -> None:
    """No two groups share a group name or a member, and every swap keeps the byte length."""
    identities = [identity_of(1, index, 5) for index in range(50)]
    assert len({identity.group_uuid for identity in identities}) == 50
    assert len({member for identity in identities for member in identity.member_ids}) == 250
    for identity in identities[1:]:
        for old, new in swaps(identities[0], identity):
            assert len(old) == len(new)


def test_the_columns_files_hold_the_records_rows(tmp_path: Path) -> None:
    """Each sealed segment's columns file holds the rows its records decode to."""
    generate(tmp_path, members=6, group_size=3, hours=0.02)
    spool = tmp_path / "collector-01"
    segments = sealed_segments(spool)
    assert len(segments) == 2  # 72 s at the default 60 s a segment
    rows = 0
    for segment in segments:
        assert columns_path(segment).exists()
        stored = read_columns(segment, segment.stat().st_size).rows
        assert stored.equals(decode_segment(segment).rows)
        rows += stored.num_rows
    assert rows == 72 * 2 * 3
