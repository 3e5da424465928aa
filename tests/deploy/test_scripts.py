"""The shell scripts of deploy/: they parse, and submit.sh submits ingest then report.

submit.sh runs against a stand-in spark-submit (``$SPARK_HOME/bin/spark-submit``) that
records its arguments; the jobs' arguments are then parsed by grstats's own parser, so a
renamed flag of ``grstats spark ingest`` or ``report`` breaks this test. The environment it
ships to the executors is packed by stand-ins of python3, pip and venv-pack that record what
they were asked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from grstats.cli.ingest import run as run_ingest
from grstats.cli.report import run as run_report
from tests.deploy.files import DEPLOY, parse_grstats

if TYPE_CHECKING:
    from pathlib import Path

SCRIPTS = sorted(DEPLOY.rglob("*.sh"))
SUBMIT = DEPLOY / "spark" / "submit.sh"
#: What the stand-in spark-submit writes: one line per argument, a blank line after each run.
FAKE_SPARK_SUBMIT = """#!/bin/sh
for arg in "$@"; do printf '%s\\n' "$arg"; done >> "$RECORD"
echo >> "$RECORD"
"""
#: A stand-in python3 that only makes virtual environments: ``python3 -m venv DIR`` copies the
#: stand-ins of $STUBS (pip, venv-pack, python) into DIR/bin.
FAKE_PYTHON3 = """#!/bin/sh
[ "$1" = -m ] && [ "$2" = venv ] || { echo "python3 $*: not a stand-in" >&2; exit 3; }
mkdir -p "$3/bin" && cp "$STUBS"/* "$3/bin/"
"""
#: Records its arguments in $RECORD.NAME, one a line (NAME: the stand-in's file name).
FAKE_TOOL = """#!/bin/sh
for arg in "$@"; do printf '%s\\n' "$arg"; done > "$RECORD.${0##*/}"
"""
#: venv-pack's stand-in: records its arguments and writes an empty archive where -o says.
FAKE_VENV_PACK = (
    FAKE_TOOL
    + """while [ $# -gt 0 ]; do [ "$1" = -o ] && : > "$2"; shift; done
"""
)


def bash() -> str:
    """The path of bash."""
    found = shutil.which("bash")
    assert found is not None
    return found


def test_the_scripts_are_there() -> None:
    """deploy/ has the certificate script and the spark-submit script."""
    assert {path.name for path in SCRIPTS} == {
        "make-certs.sh",
        "submit.sh",
        "build-binary.sh",
        "build-deb.sh",
        "release.sh",
        "proxysql-grstats-check.sh",
    }


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_script_passes_bash_n(script: Path) -> None:
    """The script parses (bash -n) and is executable."""
    done = subprocess.run(
        [bash(), "-n", str(script)], capture_output=True, text=True, check=False, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert os.access(script, os.X_OK)


def run_submit(
    environment: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run submit.sh with only ``environment`` (and PATH, HOME) set."""
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")}
    return subprocess.run(
        [bash(), str(SUBMIT), *args],
        env=base | environment,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        cwd=cwd,
    )


def test_submit_help() -> None:
    """submit.sh --help prints its usage, naming every setting, and exits 0."""
    done = run_submit({}, "--help")
    assert done.returncode == 0, done.stderr
    for setting in ("MASTER", "SPOOL", "TABLE", "OUT", "GRSTATS_PYTHON", "REPORT_ARGS"):
        assert setting in done.stdout
    assert done.stdout.startswith("grstats's Spark jobs on a real cluster")


@pytest.mark.parametrize("unset", ["MASTER", "SPOOL", "TABLE", "OUT"])
def test_submit_names_a_missing_setting(unset: str) -> None:
    """Without one of its settings submit.sh exits non-zero and names it."""
    environment = {"MASTER": "spark://m:7077", "SPOOL": "/s", "TABLE": "/t", "OUT": "/o"}
    del environment[unset]
    done = run_submit(environment)
    assert done.returncode != 0
    assert f"{unset}: set {unset}" in done.stderr


def test_submit_refuses_arguments() -> None:
    """submit.sh takes its settings from the environment: an argument is an error (exit 2)."""
    done = run_submit({}, "--master")
    assert done.returncode == 2
    assert "takes no arguments but --help" in done.stderr


def executable(path: Path, text: str) -> None:
    """Write an executable script."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)


def test_submit_runs_ingest_then_report(tmp_path: Path) -> None:
    """submit.sh submits grstats spark ingest, then report, each parsing with grstats's parser."""
    spark_home = tmp_path / "spark"
    (spark_home / "bin").mkdir(parents=True)
    fake = spark_home / "bin" / "spark-submit"
    fake.write_text(FAKE_SPARK_SUBMIT, encoding="utf-8")
    fake.chmod(0o755)
    record = tmp_path / "record"
    done = run_submit(
        {
            "SPARK_HOME": str(spark_home),
            "RECORD": str(record),
            "MASTER": "spark://spark-master:7077",
            "SPOOL": "/mnt/shared/grstats/spool",
            "TABLE": "/mnt/shared/grstats/table",
            "OUT": "/srv/report",
            "GRSTATS_PYTHON": sys.executable,
            "REPORT_ARGS": "--from 2026-01-31T00:00Z --to 2026-02-01T00:00Z",
            "SUBMIT_ARGS": "--executor-memory 2g",
        },
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    runs = [run.splitlines() for run in record.read_text(encoding="utf-8").split("\n\n") if run]
    assert len(runs) == 2
    driver = str(DEPLOY / "spark" / "grstats_driver.py")
    jobs = []
    for run in runs:
        assert run[:4] == ["--master", "spark://spark-master:7077", "--deploy-mode", "client"]
        assert f"spark.pyspark.python={sys.executable}" in run
        assert "--executor-memory" in run
        assert "--archives" not in run  # GRSTATS_PYTHON: nothing shipped
        jobs.append(parse_grstats(run[run.index(driver) + 1 :]))
    ingest, report = jobs
    assert ingest.handler is run_ingest
    assert (str(ingest.spool), str(ingest.table), ingest.master) == (
        "/mnt/shared/grstats/spool",
        "/mnt/shared/grstats/table",
        "spark://spark-master:7077",
    )
    assert report.handler is run_report
    assert (str(report.table), str(report.out)) == ("/mnt/shared/grstats/table", "/srv/report")
    assert not list(tmp_path.glob("grstats-env*"))


def test_submit_ships_the_wheel_with_the_spark_extra(tmp_path: Path) -> None:
    """Without GRSTATS_PYTHON, submit.sh packs a venv of grstats[spark] and ships it to both jobs."""
    executable(tmp_path / "spark" / "bin" / "spark-submit", FAKE_SPARK_SUBMIT)
    executable(tmp_path / "path" / "python3", FAKE_PYTHON3)
    for tool in ("pip", "python"):
        executable(tmp_path / "stubs" / tool, FAKE_TOOL)
    executable(tmp_path / "stubs" / "venv-pack", FAKE_VENV_PACK)
    wheel = tmp_path / "grstats-0.1.0-py3-none-any.whl"
    wheel.touch()
    record = tmp_path / "record"
    done = run_submit(
        {
            "PATH": f"{tmp_path / 'path'}:{os.environ['PATH']}",
            "SPARK_HOME": str(tmp_path / "spark"),
            "STUBS": str(tmp_path / "stubs"),
            "RECORD": str(record),
            "WHEEL": str(wheel),
            "MASTER": "spark://spark-master:7077",
            "SPOOL": "/mnt/shared/grstats/spool",
            "TABLE": "/mnt/shared/grstats/table",
            "OUT": "/srv/report",
        },
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    pip = (tmp_path / "record.pip").read_text(encoding="utf-8").splitlines()
    assert pip == ["install", "--quiet", f"{wheel}[spark]", "venv-pack"]
    archive, env_dir = tmp_path / "grstats-env.tar.gz", tmp_path / "grstats-env"
    pack = (tmp_path / "record.venv-pack").read_text(encoding="utf-8").splitlines()
    assert pack == [
        "--quiet",
        "--python-prefix",
        "./environment",
        "-p",
        str(env_dir),
        "-o",
        str(archive),
    ]
    assert archive.exists()
    runs = [run.splitlines() for run in record.read_text(encoding="utf-8").split("\n\n") if run]
    assert [run[run.index("--archives") + 1] for run in runs] == [f"{archive}#environment"] * 2
    for run in runs:
        assert "spark.pyspark.python=./environment/bin/python" in run
        assert f"spark.pyspark.driver.python={env_dir}/bin/python" in run
