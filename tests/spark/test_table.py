"""spark.table: the commit log is the table's truth; what no commit names is deleted, never read."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

from grstats.collector.table_log import LOG_DIR, Commit, entry_name
from grstats.spark.decode import decode_segment
from grstats.spark.rollup import DEFAULT_SETTINGS
from grstats.spark.schema import GROUP_ROLLUPS, MEMBER_ROLLUPS, MEMBER_ROWS
from grstats.spark.table import (
    TableError,
    TableLock,
    TableLog,
    read_group_rollups,
    read_member_rollups,
    read_member_rows,
)
from tests.spark.spool import MEMBER_IDS, make_record, write_spool

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

SETTINGS = DEFAULT_SETTINGS.to_json()
#: When the hand-made commits were committed.
AT = "2026-01-05T00:00:00+00:00"
#: A segment commit 2 quarantined.
QUARANTINED_2 = {"name": "s-2.sealed", "bytes": 10}


def commit(number: int, files: list[str], segment: str = "segment-1.sealed") -> Commit:
    """A commit of one segment with ``files``."""
    entry = {"name": segment, "bytes": 10, "records": 1, "rows": 3 * len(files)}
    return Commit(
        number,
        "2026-01-05T00:00:00+00:00",
        "/spool",
        ({**entry, "files": [[f, 3] for f in files]},),
        (),
    )


class TestTableLog:
    def test_commits_are_read_back_in_order(self, tmp_path: Path) -> None:
        """Entries written by commit() are what a new TableLog reads, numbered from 1."""
        log = TableLog(tmp_path)
        assert log.next_number == 1
        log.commit(commit(1, ["data/collected_date=2026-01-05/a.parquet"], "segment-1.sealed"))
        log.commit(commit(2, ["data/collected_date=2026-01-06/b.parquet"], "segment-2.sealed"))
        again = TableLog(tmp_path)
        assert [c.number for c in again.commits] == [1, 2]
        assert again.committed_files() == [
            tmp_path / "data/collected_date=2026-01-05/a.parquet",
            tmp_path / "data/collected_date=2026-01-06/b.parquet",
        ]
        assert set(again.known_segments()) == {"segment-1.sealed", "segment-2.sealed"}
        assert again.known_segments()["segment-2.sealed"]["commit"] == 2

    def test_a_commit_out_of_turn_is_refused(self, tmp_path: Path) -> None:
        """Commit numbers follow each other; a skipped number is an error naming both."""
        with pytest.raises(TableError, match="commit 2 is not the next one"):
            TableLog(tmp_path).commit(commit(2, []))

    def test_a_missing_entry_is_reported(self, tmp_path: Path) -> None:
        """A log with commit 2 but no commit 1 is broken, and the message says which is missing."""
        TableLog(tmp_path).commit(commit(1, []))
        (tmp_path / LOG_DIR / entry_name(1)).rename(tmp_path / LOG_DIR / entry_name(2))
        with pytest.raises(TableError, match="misses commit 1"):
            TableLog(tmp_path)

    def test_an_unreadable_entry_is_reported(self, tmp_path: Path) -> None:
        """An entry that is not JSON names its file."""
        TableLog(tmp_path).commit(commit(1, []))
        (tmp_path / LOG_DIR / entry_name(1)).write_text("{")
        with pytest.raises(TableError, match="not a commit entry"):
            TableLog(tmp_path)

    def test_clean_deletes_only_what_no_commit_names(self, tmp_path: Path) -> None:
        """Staging, strays in commit directories and a half-written entry go; committed and Delta's files stay."""
        kept = tmp_path / "data/commit=1/collected_date=2026-01-05/kept.parquet"
        stray = tmp_path / "data/commit=1/collected_date=2026-01-05/stray.parquet"
        compacted = tmp_path / "data/collected_date=2026-01-05/part-00001-c000.zstd.parquet"
        delta_entry = tmp_path / "data/_delta_log/00000000000000000000.json"
        staged = tmp_path / "_grstats/staging/commit-2/x.parquet"
        half = tmp_path / LOG_DIR / f"{entry_name(2)}.tmp"
        for path in (kept, stray, compacted, delta_entry, staged):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"x")
        log = TableLog(tmp_path)
        log.commit(commit(1, [str(kept.relative_to(tmp_path))]))
        half.write_text("{")
        removed = log.clean()
        assert kept.exists()
        assert compacted.exists()  # Delta's: vacuum drops it once no version reads it
        assert delta_entry.exists()
        assert not stray.exists()
        assert not staged.exists()
        assert not half.exists()
        assert stray in removed


class TestTableLock:
    def test_one_ingest_at_a_time(self, tmp_path: Path) -> None:
        """A second holder of the lock is refused with a message naming the lock file."""
        with (
            TableLock(tmp_path),
            pytest.raises(TableError, match="another ingest"),
            TableLock(tmp_path),
        ):
            pass
        with TableLock(tmp_path):  # released: it can be taken again
            pass


@pytest.mark.spark
def test_a_table_without_commits_reads_as_empty(spark: SparkSession, tmp_path: Path) -> None:
    """read_member_rows of a new directory is an empty DataFrame with the MEMBER_ROWS schema."""
    rows = read_member_rows(spark, tmp_path)
    assert rows.schema == MEMBER_ROWS
    assert rows.count() == 0


@pytest.mark.spark
def test_a_table_written_before_the_group_columns_still_reads(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Converted to Delta, files without the group columns read 'default', "" and "" beside newer ones."""
    older = tmp_path / "older"
    (segment,) = write_spool(older, [[make_record(1)]])
    new_spool = tmp_path / "newer"
    (new_segment,) = write_spool(
        new_spool, [[make_record(2, group=("east", "g-1"), agent_label="orders")]]
    )
    table = tmp_path / "table"
    files = []
    for number, (path, rows) in enumerate(
        [
            (
                segment,
                decode_segment(segment).rows.drop_columns(
                    ["group_label", "group_name", "agent_group_label"]
                ),
            ),
            (new_segment, decode_segment(new_segment).rows),
        ],
        start=1,
    ):
        relative = f"data/collected_date=2026-01-05/{number}.parquet"
        (table / relative).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(rows.drop_columns(["collected_date"]), table / relative)
        files.append(relative)
        TableLog(table).commit(commit(number, [relative], path.name))
    with pytest.raises(TableError, match=r"data/ lacks the Delta log of commit 2 .*spark convert"):
        read_member_rows(spark, table)  # a table of an earlier grstats: no Delta log yet
    assert TableLog(table).catch_up() == {"data": 2}
    frame = read_member_rows(spark, table)
    assert frame.schema == MEMBER_ROWS
    got = sorted(
        (r.group_label, r.group_name, r.agent_group_label, r.member_id) for r in frame.collect()
    )
    assert got == sorted(
        [("default", "", "", member) for member in MEMBER_IDS]
        + [("east", "g-1", "orders", member) for member in MEMBER_IDS]
    )


def rolled(number: int, segment: str, settings: dict[str, Any] | None = SETTINGS) -> Commit:
    """A commit of one segment with a data file and both rollup files, made with ``settings``."""
    name = f"c{number:020d}-{segment.rsplit('.', 1)[0]}.parquet"
    entry = {
        "name": segment,
        "bytes": 10,
        "records": 1,
        "rows": 3,
        "files": [[f"data/collected_date=2026-01-05/{name}", 3]],
        "rollups": [
            [f"rollups/members/collected_date=2026-01-05/{name}", 3],
            [f"rollups/groups/collected_date=2026-01-05/{name}", 1],
        ],
    }
    return Commit(number, "2026-01-05T00:00:00+00:00", "/spool", (entry,), (), settings)


class TestRollupsInTheLog:
    def test_rollup_files_and_settings_are_read_back(self, tmp_path: Path) -> None:
        """The entry's rollups and settings survive the JSON; files are listed per kind."""
        log = TableLog(tmp_path)
        log.commit(rolled(1, "segment-1.sealed"))
        log.commit(rolled(2, "segment-2.sealed"))
        again = TableLog(tmp_path)
        assert again.commits == log.commits
        assert again.rollup_settings() == SETTINGS
        assert [
            p.relative_to(tmp_path).parts[:2] for p in again.committed_rollup_files("groups")
        ] == [
            ("rollups", "groups"),
            ("rollups", "groups"),
        ]
        assert [p.name for p in again.committed_rollup_files("members")] == [
            "c00000000000000000001-segment-1.parquet",
            "c00000000000000000002-segment-2.parquet",
        ]
        with pytest.raises(ValueError, match="kind: 'minutes' is not one of members, groups"):
            again.committed_rollup_files("minutes")

    @pytest.mark.parametrize(
        ("commits", "settings"),
        [
            ([], None),
            ([rolled(1, "s-1.sealed", None)], None),
            ([commit(1, ["data/a.parquet"])], None),  # an entry of a grstats before rollups
            ([commit(1, ["data/a.parquet"]), rolled(2, "s-2.sealed")], None),
            ([rolled(1, "s-1.sealed"), commit(2, ["data/b.parquet"])], None),
            (
                [rolled(1, "s-1.sealed"), rolled(2, "s-2.sealed", {**SETTINGS, "max_gap_s": 60.0})],
                None,
            ),
            ([rolled(1, "s-1.sealed"), rolled(2, "s-2.sealed")], SETTINGS),
            # a commit that only quarantined a segment made no rollups and spoils nothing
            (
                [rolled(1, "s-1.sealed"), Commit(2, AT, "/spool", (), (QUARANTINED_2,))],
                SETTINGS,
            ),
            # ... even when it recorded other settings (the run's, which made nothing)
            (
                [
                    Commit(
                        1,
                        AT,
                        "/spool",
                        (),
                        ({"name": "s-1.sealed", "bytes": 10},),
                        {**SETTINGS, "flow_control_threshold": 1500},
                    ),
                    rolled(2, "s-2.sealed"),
                ],
                SETTINGS,
            ),
        ],
    )
    def test_settings_only_when_every_loaded_segment_has_rollups_of_one_setting(
        self, tmp_path: Path, commits: list[Commit], settings: dict[str, Any] | None
    ) -> None:
        """rollup_settings() is None for a table loaded in part before rollups, or with two settings."""
        log = TableLog(tmp_path)
        for entry in commits:
            log.commit(entry)
        assert TableLog(tmp_path).rollup_settings() == settings

    def test_clean_deletes_rollup_files_no_commit_names(self, tmp_path: Path) -> None:
        """A rollup file of an unfinished load goes; committed ones stay."""
        log = TableLog(tmp_path)
        log.commit(rolled(1, "segment-1.sealed"))
        named = [tmp_path / path for path, _ in log.commits[0].segments[0]["rollups"]]
        stray = (
            tmp_path
            / "rollups/members/commit=2/collected_date=2026-01-05/c00000000000000000002-segment-2.parquet"
        )
        for path in (*named, stray):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"x")
        assert log.clean() == [stray]
        assert all(path.exists() for path in named)

    def test_a_bad_rollup_settings_value_is_reported(self, tmp_path: Path) -> None:
        """rollup_settings that is not an object names the file and the value."""
        TableLog(tmp_path).commit(rolled(1, "segment-1.sealed"))
        path = tmp_path / LOG_DIR / entry_name(1)
        entry = json.loads(path.read_text())
        entry["rollup_settings"] = [entry["rollup_settings"]]
        path.write_text(json.dumps(entry))
        with pytest.raises(TableError, match=r"rollup_settings: \[\{.*\}\] is not an object"):
            TableLog(tmp_path)


@pytest.mark.spark
def test_a_table_without_rollups_reads_them_as_empty(spark: SparkSession, tmp_path: Path) -> None:
    """read_member_rollups and read_group_rollups of a new directory are empty, with their schemas."""
    members, groups = read_member_rollups(spark, tmp_path), read_group_rollups(spark, tmp_path)
    assert (members.schema, groups.schema) == (MEMBER_ROLLUPS, GROUP_ROLLUPS)
    assert members.count() == groups.count() == 0
