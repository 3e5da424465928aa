"""spark.class_archive: the driver JVM's class-data sharing archive, written once and mapped after."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from typing import TYPE_CHECKING

import pytest

from grstats.cli.demo.pipeline import SPARK_ENV
from grstats.spark.class_archive import DUMP_TIMEOUT_S, ENV, LOG_OPTIONS, plan
from grstats.spark.session import session_conf
from tests.waiting import wait_until

if TYPE_CHECKING:
    from pathlib import Path


class TestPlan:
    def test_off_leaves_the_jvm_alone(self, tmp_path: Path) -> None:
        """GRSTATS_SPARK_CLASS_ARCHIVE=off gives no options and writes nothing."""
        found = plan({ENV: "off", "XDG_CACHE_HOME": str(tmp_path)})
        assert found.options == ""
        assert found.pending is None
        assert list(tmp_path.iterdir()) == []

    def test_without_an_archive_the_jvm_writes_one_at_exit(self, tmp_path: Path) -> None:
        """The first JVM dumps its classes to a temporary file beside the archive's name."""
        found = plan({ENV: str(tmp_path), "PATH": os.environ["PATH"]})
        assert found.pending is not None
        assert found.archive is not None
        assert found.pending.parent == found.archive.parent == tmp_path
        assert f"-XX:ArchiveClassesAtExit={found.pending}" in found.options
        assert found.options.startswith(LOG_OPTIONS)
        assert str(os.getpid()) in found.pending.name

    def test_an_archive_is_mapped(self, tmp_path: Path) -> None:
        """Once the archive exists, the JVM maps it and writes nothing."""
        first = plan({ENV: str(tmp_path), "PATH": os.environ["PATH"]})
        assert first.archive is not None
        first.archive.write_bytes(b"x")
        found = plan({ENV: str(tmp_path), "PATH": os.environ["PATH"]})
        assert found.pending is None
        assert f"-XX:SharedArchiveFile={first.archive}" in found.options

    def test_the_cache_home_is_the_default_place(self, tmp_path: Path) -> None:
        """Without a directory named, archives go under $XDG_CACHE_HOME/grstats."""
        found = plan({"XDG_CACHE_HOME": str(tmp_path), "PATH": os.environ["PATH"]})
        assert found.archive is not None
        assert found.archive.parent == tmp_path / "grstats"

    def test_a_dead_writers_temporary_file_is_removed(self, tmp_path: Path) -> None:
        """A temporary archive whose process is gone and that no dump changed for long is deleted."""
        done = subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"],
            check=True,
            capture_output=True,
            text=True,
        )
        dead = tmp_path / f".spark-classes-0123456789abcdef.jsa.{done.stdout.strip()}.tmp"
        live = tmp_path / f".spark-classes-0123456789abcdef.jsa.{os.getpid()}.tmp"
        dumping = tmp_path / f".spark-classes-fedcba9876543210.jsa.{done.stdout.strip()}.tmp"
        for path in (dead, live, dumping):
            path.write_bytes(b"half")
        long_ago = time.time() - DUMP_TIMEOUT_S - 60
        os.utime(dead, (long_ago, long_ago))
        os.utime(live, (long_ago, long_ago))
        plan({ENV: str(tmp_path), "PATH": os.environ["PATH"]})
        assert not dead.exists()
        assert live.exists()
        assert dumping.exists()  # a JVM may still be dumping it after its command returned

    def test_no_java_no_archive(self, tmp_path: Path) -> None:
        """Where no JDK can be found, the JVM gets no archive options."""
        assert plan({ENV: str(tmp_path), "PATH": str(tmp_path)}).options == ""


_JOB = textwrap.dedent(
    """
    import json, sys
    from grstats.spark.session import build_session
    spark = build_session("local[1]", "archive-test", class_archive=True)
    print(json.dumps({"app": spark.sparkContext.appName}))
    spark.stop()
    """
)


@pytest.mark.spark
@pytest.mark.slow
def test_the_first_command_writes_the_archive_and_the_next_maps_it(tmp_path: Path) -> None:
    """A real driver JVM dumps Spark's classes once; the next one loads them from the archive."""
    archives = tmp_path / "archives"
    env = os.environ | {ENV: str(archives)}
    tool_options = os.environ.get("JAVA_TOOL_OPTIONS", "")  # the tests' C1-only JVMs

    def run(extra: dict[str, str]) -> tuple[str, str]:
        done = subprocess.run(
            [sys.executable, "-c", _JOB],
            env=env | extra,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout, done.stderr

    out, err = run({})
    assert out.strip() == '{"app": "archive-test"}'  # stdout holds the job's output alone
    assert "grstats: writing Spark's class archive for later commands, once, in the" in err
    # The command returned; a detached process moves the archive into place after the dump.
    (archive,) = wait_until(
        lambda: list(archives.glob("spark-classes-*.jsa")), DUMP_TIMEOUT_S, "the archive"
    )
    assert archive.stat().st_size > 1_000_000
    assert not list(archives.glob(".*.tmp"))
    log = tmp_path / "classes.log"
    # The JVM reads JAVA_TOOL_OPTIONS itself: it logs where each class came from.
    out, err = run({"JAVA_TOOL_OPTIONS": f"{tool_options} -Xlog:class+load=info:file={log}"})
    assert out.strip() == '{"app": "archive-test"}'
    assert "class archive" not in err
    loaded = [
        line for line in log.read_text().splitlines() if "org.apache.spark.SparkContext " in line
    ]
    assert loaded
    assert all("source: shared objects file (top)" in line for line in loaded), loaded


def test_the_demo_writes_no_archive() -> None:
    """The demo's Spark jobs run with the archive off (its variable named as this module's)."""
    assert SPARK_ENV == {ENV: "off"}
    assert plan(SPARK_ENV).options == ""


def test_the_archive_options_are_not_in_the_shared_settings() -> None:
    """session_conf stays a pure function of its arguments: the archive is build_session's."""
    options = session_conf("local[2]", "app")["spark.driver.extraJavaOptions"]
    assert "SharedArchiveFile" not in options
    assert "ArchiveClassesAtExit" not in options
