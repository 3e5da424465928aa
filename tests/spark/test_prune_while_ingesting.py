"""``grstats spool prune`` beside a real ingest: a segment not yet loaded is never removed."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import pytest

from grstats.collector.columns import columns_path
from grstats.collector.retention import prune
from grstats.spark.ingest import run_ingest
from grstats.spark.table import TableLog
from tests.spark.spool import make_record, write_spool

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def test_prune_beside_an_ingest_removes_only_what_a_commit_names(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Pruning in a loop while an ingest loads new segments never removes one before its commit."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    first = write_spool(spool, [[make_record(s) for s in range(5)]])
    run_ingest(spark, spool, table)
    later = [
        path
        for path in write_spool(
            spool, [[make_record(s) for s in range(k, k + 5)] for k in (5, 10, 15)]
        )
        if path not in first
    ]
    assert len(later) == 3
    failures: list[BaseException] = []
    done = threading.Event()

    def ingest() -> None:
        try:
            run_ingest(spark, spool, table)
        except BaseException as exc:  # noqa: BLE001 (reported by the test below)
            failures.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=ingest)
    thread.start()
    rounds = 0
    while not done.is_set() or rounds == 0:
        result = prune(spool, table)
        rounds += 1
        removed = {removal.name for removal in result.removed}
        # Read after the prune: whatever it removed, a commit named first.
        committed_now = {
            segment["name"] for commit in TableLog(table).commits for segment in commit.segments
        }
        assert removed <= committed_now, removed - committed_now
        for path in later:
            if path.name not in committed_now:
                assert path.exists(), f"{path.name} removed before its commit"
                assert columns_path(path).exists()
    thread.join()
    assert not failures, failures
    assert rounds > 1  # prune ran while the ingest did
    prune(spool, table)
    assert not [path for path in (*first, *later) if path.exists()]
    assert not [path for path in (*first, *later) if columns_path(path).exists()]
