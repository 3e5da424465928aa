"""spark.stage: what runs in Spark's Python workers, checked in a process of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from grstats.spark.decode import decode_segment
from grstats.spark.rollup import RollupSettings, group_rollups, member_rollups
from grstats.spark.stage import LOADED, StagedSegment, stage_partition, stage_segment
from tests.spark.spool import make_record, write_spool

# Runs two tasks the way a reused worker does, reporting gc's frozen count after each.
_TWO_TASKS = """
import gc, json, sys
from grstats.spark.rollup import DEFAULT_SETTINGS
from grstats.spark.stage import stage_partition
first, second, staging = sys.argv[1:]
counts = []
for segment in (first, second):
    results = list(stage_partition([(DEFAULT_SETTINGS.to_json(), True, [(segment, staging)])]))
    counts.append((gc.get_freeze_count(), results[0]["status"]))
print(json.dumps(counts))
"""


def test_a_worker_freezes_its_imported_objects_once(tmp_path: Path) -> None:
    """The first task moves the worker's objects out of gc's scans; the second adds none."""
    first, second = write_spool(tmp_path / "spool", [[make_record(1)], [make_record(2)]])
    staging = tmp_path / "staging"
    staging.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _TWO_TASKS, str(first), str(second), str(staging)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    (after_first, first_status), (after_second, second_status) = json.loads(done.stdout)
    assert (first_status, second_status) == ("loaded", "loaded")
    assert after_first > 10_000  # pyarrow, msgpack and grstats's modules
    assert after_second <= after_first  # not frozen again (a frozen object may be freed)


class TestStageRollups:
    def test_a_segment_stages_its_rollups_beside_its_rows(self, tmp_path: Path) -> None:
        """Member and group rollups of the decoded rows are staged per date, named like the data file."""
        (segment,) = write_spool(tmp_path / "spool", [[make_record(s) for s in range(130)]])
        staging = tmp_path / "staging"
        staged = stage_segment(segment, staging)
        stem = segment.name.rsplit(".", 1)[0]
        assert staged.rollups == [
            (f"rollups/members/collected_date=2026-01-05/{stem}.parquet", 3 * 3),
            (f"rollups/groups/collected_date=2026-01-05/{stem}.parquet", 3),
        ]
        rows = decode_segment(segment).rows
        for (relative, _), want in zip(
            staged.rollups, (member_rollups(rows), group_rollups(rows)), strict=True
        ):
            assert pq.read_table(staging / relative, partitioning=None).equals(want)
        assert sorted(p.name for p in staging.rglob("*") if p.is_file()) == [f"{stem}.parquet"] * 3

    def test_rollups_of_a_segment_over_midnight_go_to_both_dates(self, tmp_path: Path) -> None:
        """Each kind gets one file per UTC date of its minutes, rows split by the minute's date."""
        (segment,) = write_spool(
            tmp_path / "spool", [[make_record(s) for s in range(86_390, 86_410)]]
        )
        staged = stage_segment(segment, tmp_path / "staging")
        dates = [
            (Path(relative).parts[1], Path(relative).parent.name, rows)
            for relative, rows in staged.rollups
        ]
        assert dates == [
            ("members", "collected_date=2026-01-05", 3),
            ("members", "collected_date=2026-01-06", 3),
            ("groups", "collected_date=2026-01-05", 1),
            ("groups", "collected_date=2026-01-06", 1),
        ]
        for relative, _ in staged.rollups:
            table = pq.read_table(tmp_path / "staging" / relative, partitioning=None)
            day = Path(relative).parent.name.split("=")[1]
            assert {m.date().isoformat() for m in table.column("minute").to_pylist()} == {day}

    def test_a_segment_of_no_rows_stages_no_rollups(self, tmp_path: Path) -> None:
        """Records without members make neither data files nor rollup files."""
        (segment,) = write_spool(tmp_path / "spool", [[make_record(1, members=[])]])
        staged = stage_segment(segment, tmp_path / "staging")
        assert (staged.status, staged.records, staged.files, staged.rollups) == (LOADED, 1, [], [])

    def test_the_outcome_travels_as_a_dict_with_its_rollups(self, tmp_path: Path) -> None:
        """to_dict and from_dict keep the rollups; a dict of an older worker without them reads as none."""
        (segment,) = write_spool(tmp_path / "spool", [[make_record(1)]])
        staged = stage_segment(segment, tmp_path / "staging")
        assert StagedSegment.from_dict(json.loads(json.dumps(staged.to_dict()))) == staged
        older = {k: v for k, v in staged.to_dict().items() if k != "rollups"}
        assert StagedSegment.from_dict(older).rollups == []

    def test_the_task_s_settings_make_its_rollups(self, tmp_path: Path) -> None:
        """A task's settings (threshold 1, max gap 10 s) reach stage_segment: its rollups are theirs."""
        (segment,) = write_spool(tmp_path / "spool", [[make_record(s) for s in range(0, 60, 15)]])
        staging = tmp_path / "staging"
        settings = RollupSettings(flow_control_threshold=1, max_gap_s=10.0)
        (result,) = stage_partition([(settings.to_json(), True, [(str(segment), str(staging))])])
        staged = StagedSegment.from_dict(result)
        rows = decode_segment(segment).rows
        for (relative, _), make in zip(
            staged.rollups, (member_rollups, group_rollups), strict=True
        ):
            got = pq.read_table(staging / relative, partitioning=None)
            assert got.equals(make(rows, settings))
            assert not got.equals(make(rows))
        members = pq.read_table(staging / staged.rollups[0][0], partitioning=None).to_pylist()
        assert [r["held_s"] for r in members] == [30.0] * 3  # three gaps of 15 s, 10 s each
        assert [r["throttling_s"] for r in members] == [0.0, 0.0, 30.0]  # its queue of 2 is above 1
