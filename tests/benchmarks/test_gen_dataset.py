"""The dataset generator's fleet spool: one record per group a second, each group its own.

Not part of the normal suite; run with ``pytest tests/benchmarks -p no:cacheprovider``.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import TYPE_CHECKING

import pytest

from grstats.collector.records import TABLE_NAMES
from grstats.collector.spool import read_records, sealed_segments
from tests.benchmarks.gen_dataset import (
    CAPACITY_TPS,
    MEMBERS,
    SLOW_CAPACITY_TPS,
    fleet_profiles,
    generate,
    main,
)

if TYPE_CHECKING:
    from pathlib import Path

    from grstats.collector.records import Record

START = dt.date(2026, 1, 5)
START_US = 1_767_571_200 * 1_000_000  # 2026-01-05T00:00:00Z


def records_of(spool: Path) -> list[Record]:
    """Every record of the spool's sealed segments, in spool order."""
    return [record for path in sealed_segments(spool) for _, record in read_records(path)]


def segment_bytes(spool: Path) -> list[bytes]:
    """The content of each sealed segment, in order."""
    return [path.read_bytes() for path in sealed_segments(spool)]


class TestFleet:
    def test_each_second_holds_one_record_per_group(self, tmp_path: Path) -> None:
        """A fleet of 3 groups of 4 writes one record per group and second, labelled g01..g03."""
        summary = generate(tmp_path, 0.001, 1, START, progress=False, groups=3, members=4)
        records = records_of(tmp_path)
        assert (summary["groups"], summary["members"]) == (3, 4)
        assert summary["records"] == len(records) == 86 * 3
        assert summary["member_rows"] == 86 * 3 * 4
        seconds = Counter((record["collected_at_us"] - START_US) // 1_000_000 for record in records)
        assert set(seconds.values()) == {3}
        assert len(seconds) == 86
        labels = Counter(record["group_label"] for record in records)
        assert labels == {"g01": 86, "g02": 86, "g03": 86}
        for record in records:
            for name in TABLE_NAMES:
                assert len(record["tables"][name]["rows"]) == 4

    def test_groups_have_their_own_names_members_and_hosts(self, tmp_path: Path) -> None:
        """Each group has one GR group name, its own member UUIDs and hosts, none shared."""
        generate(tmp_path, 0.001, 1, START, progress=False, groups=3, members=5)
        names: dict[str, set[str]] = {}
        members: dict[str, set[str]] = {}
        hosts: dict[str, set[str]] = {}
        for record in records_of(tmp_path):
            label = record["group_label"]
            names.setdefault(label, set()).add(record["group_name"])
            rows = record["tables"]["replication_group_members"]["rows"]
            members.setdefault(label, set()).update(row[1] for row in rows)
            hosts.setdefault(label, set()).update(row[2] for row in rows)
            assert record["agent"] == f"db1.{label}.example.net:7400"
        assert all(len(name) == 1 for name in names.values())
        assert len(set.union(*names.values())) == 3
        assert all(len(ids) == 5 for ids in members.values())
        assert len(set.union(*members.values())) == 15
        assert len(set.union(*hosts.values())) == 15

    def test_a_second_is_appended_in_answer_order(self, tmp_path: Path) -> None:
        """Within a second the records are in the order their agents answered, as collected."""
        generate(tmp_path, 0.001, 1, START, progress=False, groups=5, members=3)
        records = records_of(tmp_path)
        for second in range(0, len(records), 5):
            served = [record["served_at_us"] for record in records[second : second + 5]]
            assert served == sorted(served)

    def test_one_group_is_cut_off_and_one_throttled(self) -> None:
        """The fleet's profiles set one group apart by a nightly cut-off, one by a slow member."""
        profiles = fleet_profiles(1, 50)
        cut_off = [index for index, profile in enumerate(profiles) if profile.cut_off_s]
        slowest = min(profiles, key=lambda profile: profile.slow_capacity_tps / profile.load)
        assert len(cut_off) == 1
        assert profiles[cut_off[0]].cut_off_s >= 600
        assert profiles.index(slowest) not in cut_off
        assert slowest.slow_capacity_tps < 0.6 * SLOW_CAPACITY_TPS * slowest.load < CAPACITY_TPS

    def test_the_cut_off_member_is_unreachable_for_minutes(self, tmp_path: Path) -> None:
        """In the cut-off group a member is UNREACHABLE for over 5 minutes of the first 15."""
        generate(tmp_path, 0.01, 1, START, progress=False, groups=3, members=3)
        unreachable: Counter[str] = Counter()
        for record in records_of(tmp_path):
            rows = record["tables"]["replication_group_members"]["rows"]
            if any(row[4] == "UNREACHABLE" for row in rows):
                unreachable[record["group_label"]] += 1
        (label, seconds), *others = unreachable.most_common()
        assert seconds > 300
        assert all(count < 31 for _, count in others)
        assert label

    def test_the_same_seed_writes_the_same_bytes(self, tmp_path: Path) -> None:
        """Two fleets of one seed are byte for byte the same; another seed differs."""
        for name, seed in (("a", 7), ("b", 7), ("c", 8)):
            generate(tmp_path / name, 0.001, seed, START, progress=False, groups=2, members=3)
        assert segment_bytes(tmp_path / "a") == segment_bytes(tmp_path / "b")
        assert segment_bytes(tmp_path / "a") != segment_bytes(tmp_path / "c")


class TestSingleGroup:
    def test_records_carry_no_group_keys(self, tmp_path: Path) -> None:
        """The single group's records are as before group keys existed: 9 members, no labels."""
        summary = generate(tmp_path, 0.001, 1, START, progress=False)
        records = records_of(tmp_path)
        assert (summary["groups"], summary["members"]) == (1, MEMBERS)
        assert all("group_label" not in record for record in records)
        assert all("group_name" not in record for record in records)
        assert {len(r["tables"][TABLE_NAMES[0]]["rows"]) for r in records} == {MEMBERS}
        assert records[0]["agent"] == "db1.example.net:7400"


class TestArguments:
    @pytest.mark.parametrize(
        ("flag", "value", "message"),
        [
            ("--members", "2", "--members: 2 is not a number of members from 3 to 9"),
            ("--members", "10", "--members: 10 is not a number of members from 3 to 9"),
            ("--groups", "0", "--groups: 0 is not a number of groups from 1 to 999"),
        ],
    )
    def test_out_of_range_is_refused(
        self,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        flag: str,
        value: str,
        message: str,
    ) -> None:
        """A count out of range exits 2 with a message naming the flag and the value."""
        with pytest.raises(SystemExit) as exited:
            main(["--out", str(tmp_path / "spool"), flag, value])
        assert exited.value.code == 2
        assert message in capsys.readouterr().err


def test_a_generated_spool_decodes_as_the_collector_s(tmp_path: Path) -> None:
    """Every record decodes with the table's columns: the generator's tables match the agents' (MEMBER_ROWS)."""
    from grstats.spark.decode import decode_segment  # noqa: PLC0415 (pyarrow, the spark extra)

    generate(tmp_path / "spool", 0.001, 1, START, progress=False, groups=1, members=3)
    records = records_of(tmp_path / "spool")
    decoded = [decode_segment(path) for path in sealed_segments(tmp_path / "spool")]
    assert sum(segment.rows.num_rows for segment in decoded) == len(records) * 3
    for segment in decoded:
        assert segment.rows.column("transport_seconds").null_count == 0
