"""Two shared ingests at once, either killed with SIGKILL anywhere: the re-run loses and doubles nothing.

Collector A's spool (seconds 0-59) and collector B's (30-89, the same group) are ingested at
the same time by two processes (``python -m tests.spark.crashing_shared_ingest POINT spark
ingest --shared ...``, spawned: delta-rs refuses a fork), two segments a commit; one of them
kills itself at POINT (tests/spark/crashing_shared_ingest.py), or is killed from outside at a
random moment. Both spools are then ingested again, and the table must hold every member row
of either spool exactly once, and each spool's mark its last segment.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from deltalake import DeltaTable

from grstats.collector.table_log import shared_marks, spool_app_id
from grstats.spark.delta import ROW_IDENTITY
from grstats.spark.shared_ingest import run_shared_ingest
from tests.spark.spool import expected_rows
from tests.spark.test_concurrent_ingest import SECONDS, write_collector
from tests.waiting import wait_until

pytestmark = pytest.mark.spark

#: The repository's root: the crashing entry module runs from there.
ROOT = Path(__file__).resolve().parents[2]
#: How long a process may take (each takes under a second here).
TIMEOUT_S = 60.0


def shared_process(point: str, spool: Path, table: Path) -> subprocess.Popen[bytes]:
    """Start a shared ingest of ``spool`` that kills itself at ``point`` (``none``: never)."""
    return subprocess.Popen(
        [
            *(sys.executable, "-m", "tests.spark.crashing_shared_ingest", point),
            *("spark", "ingest", "--shared", "--spool", str(spool), "--table", str(table)),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def spools(root: Path) -> dict[str, Path]:
    """Both collectors' spools under ``root``, six segments each."""
    for name, seconds in SECONDS.items():
        write_collector(root / name, seconds)
    return {name: root / name for name in SECONDS}


def check_every_row_once(root: Path, table: Path) -> None:
    """Ingest both spools again; the table then holds each spooled row once, each spool marked."""
    for name in SECONDS:
        run_shared_ingest(root / name, table, segments_per_commit=2)
    found = DeltaTable(str(table / "data")).to_pyarrow_table(columns=list(ROW_IDENTITY))
    identities = list(zip(*(found.column(name).to_pylist() for name in ROW_IDENTITY), strict=True))
    spooled = {
        tuple(row[name] for name in ROW_IDENTITY)
        for name in SECONDS
        for row in expected_rows(sorted((root / name).glob("segment-*.sealed")))
    }
    assert len(identities) == len(set(identities)), "a row was loaded twice"
    assert set(identities) == spooled, "a row was lost"
    marks = shared_marks(table)
    assert {name: marks[spool_app_id(root / name)].sequence for name in SECONDS} == {
        "a": 6,
        "b": 6,
    }


@pytest.mark.parametrize(
    ("point", "killed"),
    [("writing:1", "a"), ("read:2", "b"), ("writing:2", "a"), ("committed:2", "b")],
)
def test_a_killed_shared_ingest_loses_and_doubles_nothing(
    tmp_path: Path, point: str, killed: str
) -> None:
    """One ingest dies at ``point`` while the other runs; after a re-run every row is there once."""
    paths, table = spools(tmp_path), tmp_path / "table"
    processes = {
        name: shared_process(point if name == killed else "none", path, table)
        for name, path in paths.items()
    }
    outcomes = {name: process.communicate(timeout=TIMEOUT_S) for name, process in processes.items()}
    assert processes[killed].returncode == -signal.SIGKILL
    assert f"crashing at {point}".encode() in outcomes[killed][1]
    survivor = next(name for name in processes if name != killed)
    assert processes[survivor].returncode == 0, outcomes[survivor][1].decode()
    check_every_row_once(tmp_path, table)


def test_a_shared_ingest_killed_from_outside_loses_and_doubles_nothing(tmp_path: Path) -> None:
    """Both run at once; one is killed at a random moment of its load, then both run again."""
    paths, table = spools(tmp_path), tmp_path / "table"
    processes = {name: shared_process("none", path, table) for name, path in paths.items()}
    killed = random.choice(list(processes))  # noqa: S311  (not for security)
    wait_until((table / "data" / "_delta_log").is_dir, TIMEOUT_S, "the first Delta commit")
    os.killpg(processes[killed].pid, signal.SIGKILL)
    for process in processes.values():
        process.communicate(timeout=TIMEOUT_S)
    check_every_row_once(tmp_path, table)
