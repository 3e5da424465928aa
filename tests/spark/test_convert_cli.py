"""``grstats spark convert``: a table of an earlier grstats becomes Delta tables, in place.

An earlier grstats wrote the same datasets and commit log, and no ``_delta_log/``: the table
is made by today's ingest (two commits: rows, rollups and events), then its Delta logs are
removed. grstats' readers refuse it until it is converted; afterwards DuckDB's
``delta_scan`` and grstats' readers agree on every dataset's rows.
"""

from __future__ import annotations

import json
import shutil
from typing import TYPE_CHECKING

import pytest

from grstats.spark.delta import DELTA_LOG, SCHEMAS
from grstats.spark.ingest import run_ingest
from grstats.spark.table import TableError, read_member_rows
from tests.inprocess import run_main
from tests.spark.spool import make_record, write_spool
from tests.spark.test_table_readers import delta_duckdb

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def test_an_earlier_table_is_refused_then_converted_in_place(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without Delta logs the readers say to convert; convert writes them, moves no file, and DuckDB agrees."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    write_spool(spool, [[make_record(s) for s in range(30)]])
    assert run_ingest(spark, spool, table).commit == 1
    write_spool(spool, [[make_record(s) for s in range(30, 50)]])
    assert run_ingest(spark, spool, table).commit == 2
    before = sorted(
        p.relative_to(table) for p in table.rglob("*.parquet") if DELTA_LOG not in p.parts
    )
    for delta_log in table.rglob(DELTA_LOG):
        shutil.rmtree(delta_log)
    with pytest.raises(TableError, match=r"lacks the Delta log of commit 2.*grstats spark convert"):
        read_member_rows(spark, table)

    done = run_main(["spark", "convert", "--table", str(table), "--format", "json"], capsys)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["commits"] == 2
    assert summary["added"]["data"] == 2  # one data file a commit (one segment, one day)
    assert set(summary["added"]) <= set(SCHEMAS)
    after = sorted(
        p.relative_to(table) for p in table.rglob("*.parquet") if DELTA_LOG not in p.parts
    )
    assert after == before

    rows = read_member_rows(spark, table).count()
    assert rows == 50 * 3
    with delta_duckdb() as connection:
        ((scanned,),) = connection.execute(
            "SELECT count(*) FROM delta_scan(?)", [str(table / "data")]
        ).fetchall()
    assert scanned == rows

    again = run_main(["spark", "convert", "--table", str(table)], capsys)
    assert again.returncode == 0
    assert "nothing to convert" in again.stdout


def test_a_directory_that_is_no_table_is_an_invalid_argument(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Convert of a directory without grstats' log exits 2 naming --table and the path."""
    done = run_main(["spark", "convert", "--table", str(tmp_path)], capsys)
    assert done.returncode == 2
    assert f"--table: '{tmp_path}' is not a grstats table" in done.stderr
