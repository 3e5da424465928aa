"""The table's copy on S3-compatible storage: what ``deltalake`` reads there is the local table.

A real S3-compatible server, moto's server mode on 127.0.0.1 (port 0), started by the test;
the AWS SDK's environment variables point at it, as they would at MinIO or S3. Ingest and
compaction publish through ``pyarrow``'s S3 file system, and ``deltalake`` reads the copy back
through its own (object_store), with the storage options a reader passes.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs
import pytest
from deltalake import DeltaTable
from moto.server import ThreadedMotoServer

from grstats.spark import publish as publishing
from grstats.spark.delta import DELTA_LOG, datasets_present
from grstats.spark.ingest import IngestError, run_ingest
from grstats.spark.publish import PublishError, remote_filesystem, storage_options
from tests.inprocess import run_main
from tests.spark.spool import make_record, write_spool

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@dataclass(frozen=True)
class Store:
    """The test's S3 server: the AWS SDK's environment for it, and the table copy's URI."""

    environ: dict[str, str]
    uri: str


@pytest.fixture(name="s3")
def _s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """A moto S3 server with a bucket; the environment names it as the AWS SDKs read it.

    moto keeps one store for all its servers in a process: each test has a bucket of its own.
    """
    bucket = f"fleet-{uuid.uuid4().hex[:12]}"
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    environ = {
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ACCESS_KEY_ID": "grstats-test",
        "AWS_SECRET_ACCESS_KEY": "grstats-test-secret",
        "AWS_REGION": "us-east-1",
    }
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    uri = f"s3://{bucket}/grstats"
    system, _ = remote_filesystem(uri, environ)
    pafs.S3FileSystem(
        endpoint_override=f"{host}:{port}", scheme="http", allow_bucket_creation=True
    ).create_dir(bucket)
    assert system.get_file_info(bucket).type == pafs.FileType.Directory
    try:
        yield Store(environ, uri)
    finally:
        server.stop()


def remote(dataset: str, s3: Store) -> DeltaTable:
    """``dataset``'s Delta table on the server, as a reader opens it."""
    return DeltaTable(f"{s3.uri}/{dataset}", storage_options=storage_options(s3.environ))


def rows(table: DeltaTable) -> list[dict[str, Any]]:
    """The table's rows, sorted, for comparing a copy with its original."""
    found = table.to_pyarrow_table().to_pylist()
    return sorted(found, key=lambda row: json.dumps(row, sort_keys=True, default=str))


def same_as_local(table: Path, s3: Store) -> None:
    """Every dataset's copy has the local table's version and rows."""
    present = list(datasets_present(table))
    assert present
    for dataset in present:
        mine, copy = DeltaTable(str(table / dataset)), remote(dataset, s3)
        assert copy.version() == mine.version(), dataset
        assert rows(copy) == rows(mine), dataset


def remote_data_files(dataset: str, s3: Store) -> set[str]:
    """The Parquet files of ``dataset``'s copy, relative to it (its log aside)."""
    system, root = remote_filesystem(s3.uri, s3.environ)
    base = f"{root}/{dataset}"
    infos = system.get_file_info(pafs.FileSelector(base, recursive=True))
    return {
        info.path[len(base) + 1 :]
        for info in infos
        if info.type == pafs.FileType.File and f"/{DELTA_LOG}/" not in f"/{info.path}"
    }


def test_ingest_and_compaction_publish_the_table_to_s3(
    spark: SparkSession, tmp_path: Path, s3: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each ingest's versions reach the copy; compaction's too; a vacuum prunes the copy."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    for first in range(0, 30, 10):
        write_spool(spool, [[make_record(s) for s in range(first, first + 10)]])
        result = run_ingest(spark, spool, table, compact_over=None, publish_to=s3.uri)
        assert result.published >= 1
        same_as_local(table, s3)
    assert remote("data", s3).to_pyarrow_table().num_rows == 30 * 3

    done = run_main(
        [
            *("spark", "compact", "--table", str(table), "--vacuum-hours", "0"),
            *("--publish", s3.uri, "--format", "json"),
        ],
        capsys,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["removed"]["data"] == 3
    assert summary["published"] >= 1
    assert summary["pruned"] >= 3  # the vacuumed files, of data/ and the rollups
    same_as_local(table, s3)
    assert len(remote_data_files("data", s3)) == 1  # the compacted file alone, as here
    assert {f"{path}" for path in remote_data_files("data", s3)} == {
        str(path.relative_to(table / "data"))
        for path in (table / "data").rglob("*.parquet")
        if DELTA_LOG not in path.parts
    }


def test_a_publish_stopped_before_its_entry_leaves_the_copy_at_its_last_version(
    spark: SparkSession, tmp_path: Path, s3: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files copied, entry not: readers keep the old version; the next run completes the copy."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    write_spool(spool, [[make_record(s) for s in range(10)]])
    run_ingest(spark, spool, table, publish_to=s3.uri)
    before = remote("data", s3).version()
    write_spool(spool, [[make_record(s) for s in range(10, 20)]])
    copy = publishing._copy

    def no_entries(system: pafs.FileSystem, local: Path, path: str) -> int:
        if f"/{DELTA_LOG}/" in path:
            raise OSError("the network went away")
        return copy(system, local, path)

    monkeypatch.setattr(publishing, "_copy", no_entries)
    with pytest.raises(IngestError, match=r"commit 2 is in the table; the next run publishes"):
        run_ingest(spark, spool, table, publish_to=s3.uri)
    assert remote("data", s3).version() == before  # the new files are there, no entry names them
    assert remote("data", s3).to_pyarrow_table().num_rows == 10 * 3
    monkeypatch.setattr(publishing, "_copy", copy)
    assert run_ingest(spark, spool, table, publish_to=s3.uri).published >= 1  # nothing to load
    same_as_local(table, s3)
    assert remote("data", s3).to_pyarrow_table().num_rows == 20 * 3


def test_a_publish_uri_that_is_not_s3_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--publish`` names a bucket: anything else exits 2 before Spark starts, naming it."""
    with pytest.raises(PublishError, match="is not an s3://bucket/prefix URI"):
        remote_filesystem("file:///srv/elsewhere")
    spool = tmp_path / "spool"
    spool.mkdir()
    done = run_main(
        [
            *("spark", "ingest", "--spool", str(spool), "--table", str(tmp_path / "t")),
            *("--publish", "gs://bucket/x"),
        ],
        capsys,
    )
    assert done.returncode == 2
    assert "--publish: 'gs://bucket/x' is not an s3://bucket/prefix URI" in done.stderr


def test_a_prefix_holding_another_tables_copy_is_refused(
    spark: SparkSession, tmp_path: Path, s3: Store
) -> None:
    """Publishing a second table where the first's copy is fails, and writes nothing over it."""
    for name in ("first", "second"):
        write_spool(tmp_path / name / "spool", [[make_record(s) for s in range(5)]])
    run_ingest(spark, tmp_path / "first" / "spool", tmp_path / "first" / "table", publish_to=s3.uri)
    version = remote("data", s3).version()
    with pytest.raises(IngestError, match="holds another table's copy"):
        run_ingest(
            spark, tmp_path / "second" / "spool", tmp_path / "second" / "table", publish_to=s3.uri
        )
    assert remote("data", s3).version() == version
    same_as_local(tmp_path / "first" / "table", s3)
