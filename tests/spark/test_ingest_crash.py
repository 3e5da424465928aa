"""Exactly once: ingest killed with SIGKILL anywhere, then run again, loses and duplicates nothing.

Each test kills a load at one point (tests/spark/crashing_ingest.py wraps the ingest's own
steps), runs ingest again and checks the table against the spool row by row. During the Spark
job (``job:2``) the real command runs as a process that kills itself
(``python -m tests.spark.crashing_ingest POINT spark ingest ...``), and then what is left of
it is killed too (Spark's JVM and Python workers, as a crash of the machine would). The points
after the job are the driver's own steps, file operations: there the load runs in the test's
process, its job on the run's Spark session, and goes on in a fork of the process that kills
itself at the point (SIGKILL: no ``finally``, no cleanup), without a JVM of its own to start
for each point. One more test kills ``python -m grstats spark ingest ...`` from outside at a
random moment.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from grstats.collector.table_log import LOG_DIR
from grstats.spark import ingest
from grstats.spark.ingest import run_ingest
from grstats.spark.table import (
    DATA_DIR,
    QUARANTINE_DIR,
    ROLLUPS_DIR,
    STAGING_DIR,
    TableLog,
    read_member_rows,
)
from tests.spark import crashing_ingest
from tests.spark.spool import expected_rows, make_record, row_key, write_spool

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: Every point of a load the process can kill itself at (see tests/spark/crashing_ingest.py).
CRASH_POINTS = ["job:2", "staged", "quarantined", "arranged", "committed", "publishing:1"]
#: What the kill at each point leaves of a load of 4 good segments (one file each) and a corrupt
#: one: (staged files, files in data/, the corrupt segment's copy in the quarantine). At job:2
#: some tasks staged their segments and the others staged nothing (checked apart).
LEFT_AT = {
    "staged": (4, 0, False),
    "quarantined": (4, 0, True),
    "arranged": (4, 0, True),
    "committed": (4, 0, True),
    "publishing:1": (0, 4, True),
}
#: The points after the commit: the next run puts the files in place and loads nothing.
AFTER_COMMIT = ("committed", "publishing:1")
#: The points after the Spark job: a fork of the test's process crashes there (crash_a_fork).
AFTER_JOB = ("staged", "quarantined", "arranged", *AFTER_COMMIT)
#: The repository's root: the crashing entry module runs from there (python -m tests.spark...).
ROOT = Path(__file__).resolve().parents[2]


def spool_with_a_corrupt_segment(spool: Path) -> tuple[list[Path], Path]:
    """Five sealed segments, the fourth torn; return the good ones and the corrupt one."""
    spans = [range(40), range(40, 90), range(90, 100), range(100, 130), range(130, 131)]
    segments = write_spool(spool, [[make_record(second) for second in span] for span in spans])
    corrupt = segments[3]
    corrupt.write_bytes(corrupt.read_bytes()[:-5])
    return [s for s in segments if s != corrupt], corrupt


def ingest_process(spool: Path, table: Path, point: str | None) -> subprocess.Popen[bytes]:
    """Start ``grstats spark ingest`` in a process group of its own, killing itself at ``point``.

    Without a point it is ``python -m grstats``; with one, ``python -m
    tests.spark.crashing_ingest POINT``. Both run from the repository's root.
    """
    program = ["grstats"] if point is None else ["tests.spark.crashing_ingest", point]
    return subprocess.Popen(
        [
            *(sys.executable, "-m", *program),
            *("spark", "ingest", "--spool", str(spool), "--table", str(table)),
        ],
        cwd=ROOT,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


class _Forked(Exception):
    """Ends the parent's load once the fork that went on with it has died."""


def crash_a_fork(
    spark: SparkSession, spool: Path, table: Path, point: str, patch: pytest.MonkeyPatch
) -> int:
    """Load here up to the end of the Spark job, crash a fork at ``point``; its wait status.

    ``point`` is one of :data:`AFTER_JOB`. The fork runs only the driver's steps after the job (no Spark, no gRPC), and never returns
    to pytest: whatever happens in it, it ends in SIGKILL or ``os._exit``. This process leaves
    the load as soon as the fork has died, taking nothing further.
    """
    parent = os.getpid()
    status: int | None = None
    stage = ingest._stage

    def stage_then_fork(*args: Any, **kwargs: Any) -> Any:
        nonlocal status
        staged = stage(*args, **kwargs)
        sys.stdout.flush()
        sys.stderr.flush()
        child = os.fork()
        if child == 0:  # the fork: crash at the point, or arm it and go on with the load
            if point == "staged":
                crashing_ingest.crash(point)
            crashing_ingest.arm(point)
            return staged
        _, status = os.waitpid(child, 0)
        raise _Forked

    with patch.context() as patched:
        patched.setattr(ingest, "_stage", stage_then_fork)
        try:
            run_ingest(spark, spool, table)
        except _Forked:
            pass
        finally:
            if os.getpid() != parent:
                os._exit(70)  # the fork did not crash at its point; never back into pytest
    assert status is not None, "the load ended before its Spark job"
    return status


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


def left_behind(table: Path, corrupt: Path) -> tuple[int, int, bool]:
    """What a killed run left: (staged files, files in data/, the corrupt segment's copy)."""
    staging = table / STAGING_DIR
    staged = sum(
        ROLLUPS_DIR not in path.relative_to(staging).parts for path in staging.rglob("*.parquet")
    )
    data = len(list((table / DATA_DIR).rglob("*.parquet")))
    return staged, data, any((table / QUARANTINE_DIR).glob(f"c*-{corrupt.name}"))


def assert_loaded_exactly_once(
    spark: SparkSession, table: Path, good: list[Path], corrupt: Path
) -> None:
    """The table holds each row of the good segments once, and the corrupt one is quarantined."""
    rows = sorted(read_member_rows(spark, table).toArrow().to_pylist(), key=row_key)
    assert rows == expected_rows(good)
    known = TableLog(table).known_segments()
    assert set(known) == {s.name for s in good} | {corrupt.name}
    assert "copy" in known[corrupt.name]
    assert (table / known[corrupt.name]["copy"]).exists()
    assert not (table / STAGING_DIR).exists()


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_killed_at_a_point_then_run_again(
    spark: SparkSession, tmp_path: Path, point: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed at ``point``, the next run completes the load: every row once, no leftovers."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    good, corrupt = spool_with_a_corrupt_segment(spool)
    expected = expected_rows(good)  # before the first run moves the corrupt segment away
    if point in AFTER_JOB:
        status = crash_a_fork(spark, spool, table, point, monkeypatch)
        # SIGKILL comes only from crashing_ingest.crash: this kill, not another death
        assert os.WIFSIGNALED(status), f"the fork exited {os.waitstatus_to_exitcode(status)}"
        assert os.WTERMSIG(status) == signal.SIGKILL
    else:
        process = ingest_process(spool, table, point)
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == -signal.SIGKILL, stderr.decode()
        assert f"crashing at {point}\n" in stderr.decode()  # this kill, not another death
        kill_what_is_left(process)
    left = left_behind(table, corrupt)
    if point == "job:2":  # the held tasks staged nothing, nothing was moved or copied
        assert 0 < left[0] < len(good), left
        assert left[1:] == (0, False), left
    else:
        assert left == LEFT_AT[point]
    committed_before = len(TableLog(table).commits)
    assert committed_before == (1 if point in AFTER_COMMIT else 0)
    result = run_ingest(spark, spool, table)
    if point in AFTER_COMMIT:
        assert result.commit is None  # the killed run had committed everything
        assert (result.finished, result.cleaned) == (1, 0)  # completed, nothing thrown away
    else:
        assert (result.commit, result.segments_loaded) == (1, len(good))
        copied = point in {"quarantined", "arranged"}  # the corrupt segment's uncommitted copy
        assert (result.finished, result.cleaned) == (0, 1 + copied)  # and the staging directory
    assert sorted(read_member_rows(spark, table).toArrow().to_pylist(), key=row_key) == expected
    assert_loaded_exactly_once(spark, table, good, corrupt)
    assert len(list((table / LOG_DIR).glob("*.json"))) == 1


def test_killed_at_a_random_moment_then_run_again(spark: SparkSession, tmp_path: Path) -> None:
    """Killed from outside after a random delay (seeded), the next run still loads each row once."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    good, corrupt = spool_with_a_corrupt_segment(spool)
    delay = random.Random(5).uniform(2.0, 8.0)  # noqa: S311 (a seeded delay, no secret)
    process = ingest_process(spool, table, None)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=delay)
    kill_what_is_left(process)
    run_ingest(spark, spool, table)
    assert_loaded_exactly_once(spark, table, good, corrupt)
