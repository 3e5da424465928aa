"""``grstats spark compact``: each dataset's small files become one a date, the replaced ones vacuumed.

Five ingests of one segment each leave five data files (and five of each rollup kind) on one
date; compaction (Delta's OPTIMIZE through delta-rs) must leave one file a dataset and date
with the same rows for grstats' readers and DuckDB's ``delta_scan``, VACUUM must delete the
replaced files, and the next ingest must keep the compacted files (they are no commit's).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from grstats.spark.delta import dataset_files
from grstats.spark.ingest import run_ingest
from grstats.spark.table import read_member_rollups, read_member_rows
from tests.inprocess import run_main
from tests.spark.spool import make_record, write_spool
from tests.spark.test_table_readers import delta_duckdb

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def parquet_files(directory: Path) -> set[Path]:
    """The Parquet files under a dataset directory, Delta's log aside."""
    return {path for path in directory.rglob("*.parquet") if "_delta_log" not in path.parts}


def test_compaction_leaves_one_file_a_date_the_same_rows_and_vacuum_drops_the_rest(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """5 small files a dataset become 1; rows agree everywhere; vacuum and the next ingest keep it so."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    for first in range(0, 50, 10):
        write_spool(spool, [[make_record(s) for s in range(first, first + 10)]])
        run_ingest(spark, spool, table)
    small = dataset_files(table, "data")
    assert len(small) == 5
    rows, rollups = (
        read_member_rows(spark, table).count(),
        read_member_rollups(spark, table).count(),
    )

    done = run_main(
        ["spark", "compact", "--table", str(table), "--vacuum-hours", "0", "--format", "json"],
        capsys,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["removed"]["data"] == 5
    assert summary["added"]["data"] == 1
    assert summary["vacuumed"]["data"] == 5
    (compacted,) = dataset_files(table, "data")
    assert parquet_files(table / "data") == {compacted}  # the replaced files are gone
    assert len(dataset_files(table, "rollups/members")) == 1
    assert read_member_rows(spark, table).count() == rows == 50 * 3
    assert read_member_rollups(spark, table).count() == rollups
    with delta_duckdb() as connection:
        ((scanned,),) = connection.execute(
            "SELECT count(*) FROM delta_scan(?)", [str(table / "data")]
        ).fetchall()
    assert scanned == rows

    write_spool(spool, [[make_record(s) for s in range(50, 60)]])
    run_ingest(spark, spool, table)  # its clean() must leave the compacted file alone
    assert compacted.exists()
    assert read_member_rows(spark, table).count() == 60 * 3


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--target-mib", "0", "--target-mib: 0 is not from 1 to 4096"),
        ("--vacuum-hours", "-1", "--vacuum-hours: -1 is not from 0 to 87600"),
        ("--vacuum-hours", "1", "is not a grstats table (no _grstats/)"),  # an empty directory
    ],
)
def test_bad_settings_are_invalid_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, message: str
) -> None:
    """An out-of-range setting exits 2 naming the flag and its value, and touches nothing."""
    done = run_main(["spark", "compact", "--table", str(tmp_path), flag, value], capsys)
    assert done.returncode == 2
    assert message in done.stderr
    assert not any(tmp_path.iterdir())


def test_ingest_compacts_a_date_once_it_holds_more_than_compact_over_files(
    spark: SparkSession, tmp_path: Path
) -> None:
    """With compact_over 3, five ingests never leave more than 4 files a dataset and date, rows intact."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    counts, compacted = [], []
    for first in range(0, 50, 10):
        write_spool(spool, [[make_record(s) for s in range(first, first + 10)]])
        result = run_ingest(spark, spool, table, compact_over=3)
        counts.append(len(dataset_files(table, "data")))
        compacted.append(result.compacted)
        assert result.to_json()["compacted"] == result.compacted
    assert counts == [1, 2, 3, 1, 2]
    assert compacted[:3] == [0, 0, 0]
    assert compacted[3] >= 4  # data/'s 4 files (and each rollup kind's)
    assert len(dataset_files(table, "rollups/groups")) == 2
    assert read_member_rows(spark, table).count() == 50 * 3
