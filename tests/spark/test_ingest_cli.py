"""``grstats spark ingest``: arguments, exit statuses and the JSON summary scripts read.

One run starts ``python -m grstats`` as a process (the command's smoke test, with its own JVM);
the others call ``grstats.cli.main`` in-process on the test run's shared Spark session.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import TYPE_CHECKING

import pytest

from grstats.cli import main
from grstats.collector.table_log import LOG_DIR, entry_name
from grstats.spark.table import TableLog
from tests.inprocess import run_main
from tests.spark.spool import make_record, write_spool
from tests.waiting import wait_until

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession


def grstats(*args: str) -> subprocess.CompletedProcess[str]:
    """Run grstats (as python -m grstats) and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "grstats", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_help_explains_the_table_and_exactly_once(capsys: pytest.CaptureFixture[str]) -> None:
    """--help says what the table holds and that a killed run can simply be run again."""
    with pytest.raises(SystemExit) as caught:
        main(["spark", "ingest", "--help"])
    assert caught.value.code == 0
    text = capsys.readouterr().out
    assert "_grstats/quarantine/" in text
    assert "loses nothing and duplicates nothing" in text
    assert "a report reads the rollups only when its own --flow-control-threshold is the same" in (
        " ".join(text.split())
    )


def test_a_missing_spool_is_an_invalid_argument(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --spool that is not a directory exits 2 naming the argument and the value."""
    missing = tmp_path / "nowhere"
    status = main(["spark", "ingest", "--spool", str(missing), "--table", str(tmp_path / "t")])
    assert status == 2
    assert f"--spool: {str(missing)!r} is not a directory" in capsys.readouterr().err


@pytest.fixture(name="shared_session")
def _shared_session(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> SparkSession:
    """The ingest command's session is the run's shared one, and its stop() leaves it running."""
    monkeypatch.setattr("grstats.spark.session.build_session", lambda *_a, **_k: spark)
    monkeypatch.setattr(spark, "stop", lambda: None)
    return spark


class _Started(Exception):
    """Raised by the recording build_session so that no JVM starts."""


def test_ingest_asks_for_a_session_whose_work_runs_in_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ingest's session is built with python_work (C1-only JVM) and the class archive."""
    asked: list[dict[str, object]] = []

    def record(*args: object, **kwargs: object) -> None:
        asked.append({"args": args, **kwargs})
        raise _Started

    monkeypatch.setattr("grstats.spark.session.build_session", record)
    (tmp_path / "spool").mkdir()
    with pytest.raises(_Started):
        main(
            ["spark", "ingest", "--spool", str(tmp_path / "spool"), "--table", str(tmp_path / "t")]
        )
    assert asked == [{"args": (None, "grstats-ingest"), "python_work": True, "class_archive": True}]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--flow-control-threshold", "0"],
            "--flow-control-threshold: 0 is not in [1, 2147483647]",
        ),
        (
            ["--flow-control-threshold", "2147483648"],
            "--flow-control-threshold: 2147483648 is not in [1, 2147483647]",
        ),
        (["--max-gap", "0"], "--max-gap: 0.0 is not a number of seconds > 0"),
        (["--max-gap", "-5"], "--max-gap: -5.0 is not a number of seconds > 0"),
        (["--max-gap", "nan"], "--max-gap: nan is not a number of seconds > 0"),
    ],
)
def test_bad_rollup_settings_exit_2_naming_the_flag(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    message: str,
) -> None:
    """A threshold or max gap out of range exits 2 naming the flag and the value; no Spark starts."""

    def record(*args: object, **kwargs: object) -> None:
        raise _Started

    monkeypatch.setattr("grstats.spark.session.build_session", record)
    (tmp_path / "spool").mkdir()
    args = ["spark", "ingest", "--spool", str(tmp_path / "spool"), "--table", str(tmp_path / "t")]
    assert main([*args, *flags]) == 2
    assert capsys.readouterr().err.splitlines() == [f"grstats: error: {message}"]


@pytest.mark.spark
@pytest.mark.slow
def test_json_summary_then_other_settings_exit_2_then_unknown_schema_exits_1(
    tmp_path: Path, shared_session: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run (a process) prints its JSON summary; other rollup settings exit 2; a newer schema 1."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    write_spool(spool, [[make_record(s) for s in range(4)]])
    chosen = ["--flow-control-threshold", "10000", "--max-gap", "10"]
    ingest = ("spark", "ingest", "--spool", str(spool), "--table", str(table))
    done = grstats(*ingest, *chosen, "--format", "json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["commit"], summary["rows"], summary["segments"]["loaded"]) == (1, 12, 1)
    assert summary["segments"]["from_columns"] == 1  # the collector's writer left one
    # The rate is the Spark job's, and says so; starting Spark is counted apart.
    assert 0 < summary["job_seconds"] <= summary["seconds"]
    assert summary["startup_seconds"] > 0
    assert summary["rows_per_second"] == round(12 / summary["job_seconds"])
    assert summary["rows_per_second_of"].startswith("job_seconds: the Spark job")
    assert "staged 1/1 segments, 12 rows" in done.stderr  # progress goes to stderr
    entry = json.loads((table / LOG_DIR / entry_name(1)).read_text())
    assert entry["rollup_settings"] == {
        "version": 1,
        "flow_control_threshold": 10000,
        "max_gap_s": 10.0,
    }
    (newer,) = write_spool(spool, [[make_record(9) | {"schema": 3}]])[1:]
    done = run_main(ingest, capsys)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "grstats: error: --flow-control-threshold: 25000 differs from the 10000 this table's "
        "rollups were made with; --max-gap: 30 differs from the 10 this table's rollups were "
        "made with; a table keeps one setting: load into a new table"
    )
    assert newer.exists()
    done = run_main([*ingest, *chosen], capsys)
    assert done.returncode == 1
    assert "record schema 3 is not a known version" in done.stderr
    assert newer.name in done.stderr


@pytest.mark.spark
def test_ignore_columns_decodes_the_records(
    tmp_path: Path, shared_session: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    """--ignore-columns loads the same rows without reading the columns files; says so."""
    spool = tmp_path / "spool"
    write_spool(spool, [[make_record(s) for s in range(3)], [make_record(3)]])
    done = run_main(
        [
            "spark",
            "ingest",
            *("--spool", str(spool), "--table", str(tmp_path / "table")),
            "--ignore-columns",
        ],
        capsys,
    )
    assert done.returncode == 0, done.stderr
    assert "loaded 2 segments (0 from their columns files), 4 snapshots, 12 member rows" in (
        done.stdout
    )
    assert " rows/s, over the " in done.stdout
    assert " s of the Spark job alone: not the log and the commit, not starting Spark (" in (
        done.stdout
    )


@pytest.mark.spark
def test_every_runs_again_with_one_session_and_loads_what_was_sealed_meanwhile(
    tmp_path: Path, shared_session: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    """--every 1 --runs 3: one JSON line a run, and a segment sealed after run 1 is loaded by a later run."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    write_spool(spool, [[make_record(s) for s in range(3)]])

    def seal_after_the_first_commit() -> None:
        wait_until(lambda: len(TableLog(table).commits) >= 1, 60, "the first run's commit")
        write_spool(spool, [[make_record(s) for s in range(3, 5)]])

    sealer = threading.Thread(target=seal_after_the_first_commit)
    sealer.start()
    done = run_main(
        [
            "spark",
            "ingest",
            *("--spool", str(spool), "--table", str(table)),
            *("--every", "1", "--runs", "3", "--format", "json"),
        ],
        capsys,
    )
    sealer.join()
    assert done.returncode == 0, done.stderr
    # (the spool writer of this test's thread logs to stdout too)
    summaries = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(summaries) == 3
    assert [s["rows"] for s in summaries if s["commit"] is not None] == [9, 6]
    assert "startup_seconds" in summaries[0]
    assert all("startup_seconds" not in s for s in summaries[1:])


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--every", "0.5"], "--every: 0.5 is not a number of seconds from 1 to 86400"),
        (["--runs", "2"], "--runs: 2 needs --every and is a count from 1"),
        (["--every", "5", "--runs", "0"], "--runs: 0 is not a count from 1"),
        (["--compact-over", "-1"], "--compact-over: -1 is not 0 or more"),
    ],
)
def test_bad_schedules_are_invalid_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    """An out-of-range --every, --runs or --compact-over exits 2 naming the flag and value."""
    spool = tmp_path / "spool"
    spool.mkdir()
    done = run_main(
        ["spark", "ingest", "--spool", str(spool), "--table", str(tmp_path / "t"), *flags], capsys
    )
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == f"grstats: error: {message}"
    assert not (tmp_path / "t").exists()
