"""Other tools read the table's datasets as they are: committed rows, never a crashed load's files.

One table is ingested (commit 1), then a second load dies just before its commit (its files
staged at their final names) and a third after its commit, before its files were put in place
(the states a kill leaves, tests/spark/test_ingest_crash.py). pyarrow, DuckDB and Spark SQL
then read ``data/``, ``rollups/members/`` and ``rollups/groups/`` without grstats' log, with
the commands docs/architecture.md gives, and must give exactly the rows of the published
commits: what grstats' own readers, which follow the log, give.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from grstats.spark.decode import ARROW_MEMBER_ROWS
from grstats.spark.ingest import run_ingest
from grstats.spark.rollup import ARROW_GROUP_ROLLUPS, ARROW_MEMBER_ROLLUPS
from grstats.spark.schema import PARTITION_COLUMN as PARTITION
from grstats.spark.table import (
    DATA_DIR,
    ROLLUPS_DIR,
    TableLog,
    data_files,
    read_member_rows,
    rollup_files,
)
from tests.spark.spool import make_record, write_spool

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

#: Each dataset: its directory in the table and the Arrow schema of its files.
DATASETS: dict[str, tuple[str, pa.Schema]] = {
    "rows": (DATA_DIR, ARROW_MEMBER_ROWS.remove(ARROW_MEMBER_ROWS.get_field_index(PARTITION))),
    "members": (f"{ROLLUPS_DIR}/members", ARROW_MEMBER_ROLLUPS),
    "groups": (f"{ROLLUPS_DIR}/groups", ARROW_GROUP_ROLLUPS),
}


class Died(Exception):
    """The simulated crash of a load."""


@pytest.fixture(name="table", scope="module")
def _table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A table with commit 1 published, a load dead before commit 2, and commit 2 unpublished."""
    root = tmp_path_factory.mktemp("readers")
    spool, table = root / "spool", root / "table"
    write_spool(spool, [[make_record(s) for s in span] for span in (range(40), range(40, 90))])
    assert run_ingest(spark, spool, table).commit == 1
    write_spool(spool, [[make_record(s) for s in range(90, 130)]])

    def die(*_args: Any) -> None:
        raise Died

    with pytest.MonkeyPatch.context() as patched:  # dies with its files staged, uncommitted
        patched.setattr(TableLog, "commit", die)
        with pytest.raises(Died):
            run_ingest(spark, spool, table)
    assert len(TableLog(table).commits) == 1
    return table


def committed(table: Path, dataset: str) -> pa.Table:
    """The rows grstats' log says the dataset holds, read file by file."""
    _, schema = DATASETS[dataset]
    files = data_files(table) if dataset == "rows" else rollup_files(table, dataset)
    assert files
    return pa.concat_tables(pq.read_table(path, schema=schema) for path in files)


def same_rows(got: pa.Table, want: pa.Table) -> bool:
    """Whether ``got`` holds ``want``'s rows (as a multiset), in its schema's columns and types."""
    names = want.schema.names
    cast = got.select(names).cast(want.schema)

    def rows(table: pa.Table) -> list[str]:
        return sorted(map(repr, table.to_pylist()))

    return rows(cast) == rows(want)


@pytest.mark.parametrize("dataset", list(DATASETS))
def test_pyarrow_reads_each_dataset_as_committed(table: Path, dataset: str) -> None:
    """pyarrow.dataset and pyarrow.parquet.read_table of a dataset's directory: committed rows."""
    directory = table / DATASETS[dataset][0]
    want = committed(table, dataset)
    found = ds.dataset(directory, format="parquet", partitioning="hive").to_table()
    assert same_rows(found, want)
    assert same_rows(pq.read_table(directory), want)
    assert set(found.column("commit").to_pylist()) == {1}


@pytest.mark.parametrize("dataset", list(DATASETS))
def test_duckdb_reads_each_dataset_as_committed(table: Path, dataset: str) -> None:
    """DuckDB's read_parquet of the dataset's files, Hive-partitioned: committed rows."""
    directory = table / DATASETS[dataset][0]
    with duckdb.connect() as connection:
        query = "SELECT * FROM read_parquet(?, hive_partitioning = true)"
        found = connection.sql(query, params=[f"{directory}/**/*.parquet"]).to_arrow_table()
    assert same_rows(found, committed(table, dataset))
    assert set(found.column("commit").to_pylist()) == {1}


def delta_duckdb() -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the ``delta`` extension of the ``duckdb-ext-delta`` package, offline."""
    locations = importlib.util.find_spec("duckdb_ext")
    assert locations is not None
    assert locations.submodule_search_locations is not None
    (root,) = locations.submodule_search_locations
    connection = duckdb.connect(
        config={
            "extension_directory": str(Path(root) / "extensions"),
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        }
    )
    connection.execute("LOAD delta")
    return connection


@pytest.mark.parametrize("dataset", list(DATASETS))
def test_duckdb_delta_scan_reads_each_dataset_as_committed(table: Path, dataset: str) -> None:
    """DuckDB's delta_scan of a dataset's Delta table: the committed rows, with their dates."""
    directory = table / DATASETS[dataset][0]
    with delta_duckdb() as connection:
        found = connection.sql("SELECT * FROM delta_scan(?)", params=[str(directory)])
        arrow = found.to_arrow_table()
    want = committed(table, dataset)
    assert same_rows(arrow, want)
    assert arrow.column(PARTITION).type == pa.date32()


@pytest.mark.parametrize("dataset", list(DATASETS))
def test_deltalake_reads_each_dataset_as_committed(table: Path, dataset: str) -> None:
    """delta-rs (the ``deltalake`` package) reads each dataset to pyarrow: the committed rows."""
    found = DeltaTable(str(table / DATASETS[dataset][0])).to_pyarrow_table()
    assert same_rows(found, committed(table, dataset))


def test_spark_sql_reads_each_dataset_as_committed(spark: SparkSession, table: Path) -> None:
    """Spark SQL's CREATE TABLE ... USING parquet LOCATION of each dataset: committed rows."""
    for dataset, (directory, _) in DATASETS.items():
        name = f"grstats_readers_{dataset}"
        spark.sql(f"CREATE TABLE {name} USING parquet LOCATION '{table / directory}'")
        try:
            # The catalog learns the table's partitions (and later commits' ones) from this.
            spark.sql(f"MSCK REPAIR TABLE {name}")
            found = spark.table(name).toArrow()
        finally:
            spark.sql(f"DROP TABLE {name}")  # an external table: its files stay
        assert same_rows(found, committed(table, dataset)), dataset
    rows = read_member_rows(spark, table).toArrow()  # grstats' reader, through the log
    assert same_rows(rows, committed(table, "rows"))


def test_a_commit_whose_files_were_not_put_in_place_shows_after_the_next_ingest(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Killed after its commit, a load is in no dataset yet; the next ingest puts it in place whole."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    write_spool(spool, [[make_record(s) for s in range(20)]])

    def die(*_args: Any) -> None:
        raise Died

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(TableLog, "publish", die)
        with pytest.raises(Died):
            run_ingest(spark, spool, table)
    assert len(TableLog(table).commits) == 1
    for directory, _ in DATASETS.values():
        assert not (table / directory).exists()
    assert read_member_rows(spark, table).count() == 0  # grstats' readers agree
    result = run_ingest(spark, spool, table)
    assert (result.commit, result.finished, result.cleaned) == (None, 1, 0)
    with duckdb.connect() as connection:
        query = "SELECT count(*) FROM read_parquet(?, hive_partitioning = true)"
        ((count,),) = connection.execute(query, [f"{table / DATA_DIR}/**/*.parquet"]).fetchall()
    assert count == 20 * 3 == read_member_rows(spark, table).count()
