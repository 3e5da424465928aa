"""spark.table: the commit log is the table's truth; what no commit names is deleted, never read."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow.parquet as pq
import pytest

from grstats.spark.decode import decode_segment
from grstats.spark.schema import MEMBER_ROWS
from grstats.spark.table import (
    LOG_DIR,
    Commit,
    TableError,
    TableLock,
    TableLog,
    entry_name,
    read_member_rows,
)
from tests.spark.spool import MEMBER_IDS, make_record, write_spool

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession


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
        """Staging, stray data files and a half-written entry go; committed files stay."""
        kept = tmp_path / "data/collected_date=2026-01-05/kept.parquet"
        stray = tmp_path / "data/collected_date=2026-01-05/stray.parquet"
        staged = tmp_path / "_grstats/staging/commit-2/x.parquet"
        half = tmp_path / LOG_DIR / f"{entry_name(2)}.tmp"
        for path in (kept, stray, staged):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"x")
        log = TableLog(tmp_path)
        log.commit(commit(1, [str(kept.relative_to(tmp_path))]))
        half.write_text("{")
        removed = log.clean()
        assert kept.exists()
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
    """Data files without group_label and group_name read as 'default' and "" beside newer ones."""
    older = tmp_path / "older"
    (segment,) = write_spool(older, [[make_record(1)]])
    new_spool = tmp_path / "newer"
    (new_segment,) = write_spool(new_spool, [[make_record(2, group=("east", "g-1"))]])
    table = tmp_path / "table"
    files = []
    for number, (path, rows) in enumerate(
        [
            (segment, decode_segment(segment).rows.drop_columns(["group_label", "group_name"])),
            (new_segment, decode_segment(new_segment).rows),
        ],
        start=1,
    ):
        relative = f"data/collected_date=2026-01-05/{number}.parquet"
        (table / relative).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(rows.drop_columns(["collected_date"]), table / relative)
        files.append(relative)
        TableLog(table).commit(commit(number, [relative], path.name))
    frame = read_member_rows(spark, table)
    assert frame.schema == MEMBER_ROWS
    got = sorted((r.group_label, r.group_name, r.member_id) for r in frame.collect())
    assert got == sorted(
        [("default", "", member) for member in MEMBER_IDS]
        + [("east", "g-1", member) for member in MEMBER_IDS]
    )
