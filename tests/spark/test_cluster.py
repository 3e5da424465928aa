"""The same ingest on a real Spark standalone cluster (master and worker on 127.0.0.1) as locally."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from grstats.spark.ingest import run_ingest
from grstats.spark.table import (
    TableLog,
    read_group_rollups,
    read_member_rollups,
    read_member_rows,
)
from tests.spark.cluster import run_on_cluster
from tests.spark.spool import expected_rows, make_record, row_key, write_spool

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

    from tests.spark.cluster import StandaloneCluster

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_ingest_on_a_standalone_cluster_equals_local_mode(
    spark: SparkSession, spark_cluster: StandaloneCluster, tmp_path: Path
) -> None:
    """Ingest with --master spark://... loads the same rows, rollups and commits as local mode."""
    spool = tmp_path / "spool"
    spans = [range(30), range(30, 70), range(86_390, 86_410)]  # the last spans midnight
    segments = write_spool(spool, [[make_record(second) for second in span] for span in spans])
    cluster_table, local_table = tmp_path / "on-cluster", tmp_path / "local"
    done = run_on_cluster(
        spark_cluster, "ingest", "--spool", str(spool), "--table", str(cluster_table)
    )
    assert '"loaded": 3' in done.stdout
    run_ingest(spark, spool, local_table)
    on_cluster = sorted(read_member_rows(spark, cluster_table).toArrow().to_pylist(), key=row_key)
    local = sorted(read_member_rows(spark, local_table).toArrow().to_pylist(), key=row_key)
    assert on_cluster == local == expected_rows(segments)
    for read, key in ((read_member_rollups, _member_key), (read_group_rollups, _group_key)):
        cluster_rollups = sorted(read(spark, cluster_table).toArrow().to_pylist(), key=key)
        local_rollups = sorted(read(spark, local_table).toArrow().to_pylist(), key=key)
        assert cluster_rollups == local_rollups
        assert len(local_rollups) >= 3  # a partial per minute and segment at least
    assert TableLog(cluster_table).known_segments().keys() == {s.name for s in segments}
    executors = list((spark_cluster.logs.parent / "work").rglob("stderr"))
    assert executors, "no executor ran on the worker"


def _member_key(row: dict[str, object]) -> tuple[str, ...]:
    return tuple(str(row[name]) for name in ("group_label", "member_id", "minute", "first_at"))


def _group_key(row: dict[str, object]) -> tuple[str, ...]:
    return tuple(str(row[name]) for name in ("group_label", "minute", "first_at"))
