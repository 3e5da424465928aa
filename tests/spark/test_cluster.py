"""The same ingest on a real Spark standalone cluster (master and worker on 127.0.0.1) as locally."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from grstats.spark.ingest import run_ingest
from grstats.spark.table import TableLog, read_member_rows
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
    """Ingest with --master spark://... loads the same rows and commits as local mode."""
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
    assert TableLog(cluster_table).known_segments().keys() == {s.name for s in segments}
    executors = list((spark_cluster.logs.parent / "work").rglob("stderr"))
    assert executors, "no executor ran on the worker"
