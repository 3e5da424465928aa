"""``grstats spark`` without the spark extra: one line saying what to install, and --help works.

Each test runs grstats in a process where some modules cannot be imported, as if not installed
(``sys.modules[name] = None`` makes ``import name`` raise ModuleNotFoundError). Nothing here
imports pyspark or pyarrow, so these tests also run where the extra is not installed.
"""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pathlib import Path

#: grstats with the modules named in argv[1] (comma-separated) made unimportable.
WITHOUT = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None
from grstats.cli import main
sys.exit(main(sys.argv[2:]))
"""
MESSAGE = "grstats: error: grstats spark needs pyspark, pyarrow and deltalake: pip install 'grstats[spark]'"


def grstats_without(modules: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``grstats ARGS`` where the comma-separated ``modules`` cannot be imported."""
    return subprocess.run(
        [sys.executable, "-c", WITHOUT, modules, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def job_args(job: str, tmp_path: Path) -> list[str]:
    """Valid arguments of ``grstats spark JOB``: directories that exist."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    spool.mkdir()
    table.mkdir()
    if job == "ingest":
        return ["spark", "ingest", "--spool", str(spool), "--table", str(table)]
    return ["spark", "report", "--table", str(table), "--out", str(tmp_path / "out")]


@pytest.mark.parametrize("job", ["ingest", "report"])
@pytest.mark.parametrize("missing", ["pyspark", "pyarrow", "pyspark,pyarrow"])
def test_a_job_without_the_extra_says_what_to_install(
    job: str, missing: str, tmp_path: Path
) -> None:
    """Without pyspark or pyarrow a job exits 1 with one line naming the extra, no traceback."""
    done = grstats_without(missing, *job_args(job, tmp_path))
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [MESSAGE]
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "out").exists()


def test_a_broken_pyspark_says_what_to_install_and_why(tmp_path: Path) -> None:
    """A pyspark without a module it needs (py4j): the same line, with the import's error."""
    done = grstats_without("py4j", *job_args("ingest", tmp_path))
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"{MESSAGE} (")
    assert "py4j" in line
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "args",
    [["--help"], ["spark", "--help"], ["spark", "ingest", "--help"], ["spark", "report", "--help"]],
    ids=" ".join,
)
def test_help_needs_no_extra(args: list[str]) -> None:
    """The help of grstats, of its spark command and of both jobs needs no pyspark or pyarrow."""
    done = grstats_without("pyspark,pyarrow", *args)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "usage: grstats" in done.stdout


def test_an_invalid_argument_needs_no_extra() -> None:
    """Argument errors come from the parser, before anything needs Spark (exit 2)."""
    done = grstats_without("pyspark,pyarrow", "spark", "ingest", "--spool")
    assert done.returncode == 2
    assert "--spool: expected one argument" in done.stderr
    assert "pip install" not in done.stderr
