"""Exactly once: ingest killed with SIGKILL anywhere, then run again, loses and duplicates nothing.

Each test runs the real command as a process that kills itself at one point of the load (the
GRSTATS_TEST_CRASH_AT hook), then kills what is left of it (Spark's JVM and Python workers, as a
crash of the machine would), runs ingest again and checks the table against the spool row by row.
One more test kills the process from outside at a random moment.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest

from grstats.spark.ingest import run_ingest
from grstats.spark.stage import CRASH_ENV
from grstats.spark.table import LOG_DIR, QUARANTINE_DIR, TableLog, read_member_rows
from tests.spark.spool import expected_rows, make_record, row_key, write_spool

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: Every point of a load the hook can stop at (see spark.ingest's docstring).
CRASH_POINTS = ["job:2", "staged", "quarantined", "moving:2", "moved", "committed"]


def spool_with_a_corrupt_segment(spool: Path) -> tuple[list[Path], Path]:
    """Five sealed segments, the fourth torn; return the good ones and the corrupt one."""
    spans = [range(40), range(40, 90), range(90, 100), range(100, 130), range(130, 131)]
    segments = write_spool(spool, [[make_record(second) for second in span] for span in spans])
    corrupt = segments[3]
    corrupt.write_bytes(corrupt.read_bytes()[:-5])
    return [s for s in segments if s != corrupt], corrupt


def ingest_process(spool: Path, table: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start ``grstats spark ingest`` (as python -m agent) in a process group of its own."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent",
            "spark",
            "ingest",
            "--spool",
            str(spool),
            "--table",
            str(table),
        ],
        env={**os.environ, "PYSPARK_PYTHON": sys.executable, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def kill_what_is_left(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the whole process group (Spark's JVM and workers) and wait until it is gone."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    if process.stderr is not None:
        process.stderr.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    pytest.fail(f"process group {process.pid} still runs 30 s after SIGKILL")


def assert_loaded_exactly_once(
    spark: SparkSession, table: Path, good: list[Path], corrupt: Path
) -> None:
    """The table holds each row of the good segments once, and the corrupt one is quarantined."""
    rows = sorted(read_member_rows(spark, table).toArrow().to_pylist(), key=row_key)
    assert rows == expected_rows(good)
    known = TableLog(table).known_segments()
    assert set(known) == {s.name for s in good} | {corrupt.name}
    assert "copy" in known[corrupt.name]
    assert (table / QUARANTINE_DIR / corrupt.name).exists()
    assert not list((table / "_grstats" / "staging").glob("*"))


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_killed_at_a_point_then_run_again(spark: SparkSession, tmp_path: Path, point: str) -> None:
    """Killed at ``point``, the next run completes the load: every row once, no leftovers."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    good, corrupt = spool_with_a_corrupt_segment(spool)
    expected = expected_rows(good)  # before the first run moves the corrupt segment away
    process = ingest_process(spool, table, {CRASH_ENV: point})
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == -signal.SIGKILL, stderr.decode()
    kill_what_is_left(process)
    committed_before = len(TableLog(table).commits)
    assert committed_before == (1 if point == "committed" else 0)
    result = run_ingest(spark, spool, table)
    if point == "committed":
        assert result.commit is None  # the killed run had committed everything
    else:
        assert (result.commit, result.segments_loaded) == (1, len(good))
    assert sorted(read_member_rows(spark, table).toArrow().to_pylist(), key=row_key) == expected
    assert_loaded_exactly_once(spark, table, good, corrupt)
    assert len(list((table / LOG_DIR).glob("*.json"))) == 1


def test_killed_at_a_random_moment_then_run_again(spark: SparkSession, tmp_path: Path) -> None:
    """Killed from outside after a random delay (seeded), the next run still loads each row once."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    good, corrupt = spool_with_a_corrupt_segment(spool)
    delay = random.Random(5).uniform(2.0, 8.0)  # noqa: S311 (a seeded delay, no secret)
    process = ingest_process(spool, table, {})
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=delay)
    kill_what_is_left(process)
    run_ingest(spark, spool, table)
    assert_loaded_exactly_once(spark, table, good, corrupt)
