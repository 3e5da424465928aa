"""``grstats spark ingest``: arguments, exit statuses and the JSON summary scripts read."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from grstats.cli import main
from tests.spark.spool import make_record, write_spool

if TYPE_CHECKING:
    from pathlib import Path


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


def test_a_missing_spool_is_an_invalid_argument(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --spool that is not a directory exits 2 naming the argument and the value."""
    missing = tmp_path / "nowhere"
    status = main(["spark", "ingest", "--spool", str(missing), "--table", str(tmp_path / "t")])
    assert status == 2
    assert f"--spool: {str(missing)!r} is not a directory" in capsys.readouterr().err


class _Started(Exception):
    """Raised by the recording build_session so that no JVM starts."""


def test_ingest_asks_for_a_session_whose_work_runs_in_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ingest's session is built with python_work (C1-only JVM in local mode)."""
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
    assert asked == [{"args": (None, "grstats-ingest"), "python_work": True}]


@pytest.mark.spark
@pytest.mark.slow
def test_json_summary_then_unknown_schema_exits_1(tmp_path: Path) -> None:
    """A run prints its JSON summary; a newer record schema later exits 1 naming it."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    write_spool(spool, [[make_record(s) for s in range(4)]])
    done = grstats(
        "spark", "ingest", "--spool", str(spool), "--table", str(table), "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["commit"], summary["rows"], summary["segments"]["loaded"]) == (1, 12, 1)
    assert "staged 1/1 segments, 12 rows" in done.stderr  # progress goes to stderr
    (newer,) = write_spool(spool, [[make_record(9) | {"schema": 3}]])[1:]
    done = grstats("spark", "ingest", "--spool", str(spool), "--table", str(table))
    assert done.returncode == 1
    assert "record schema 3 is not a known version" in done.stderr
    assert newer.name in done.stderr
