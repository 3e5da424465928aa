"""A real Spark standalone cluster on 127.0.0.1: one master and one worker from pyspark's own jars.

``standalone_cluster()`` starts ``org.apache.spark.deploy.master.Master`` and one ``Worker``
(1 core, 1 GiB) with pyspark's ``bin/spark-class``, waits until the worker has registered, and
on exit (also on failure or Ctrl-C) kills both JVMs and everything they started. The
``spark_cluster`` fixture (session-scoped, registered in ``tests/spark/conftest.py``) gives
tests one cluster to share; ``driver_env(cluster)`` is the environment a ``grstats spark ...
--master`` process needs to run its jobs there.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from grstats.cli.demo import free_ports
from tests.waiting import wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator

START_TIMEOUT_S = 120.0


def spark_home() -> Path:
    """The directory of pyspark, which holds Spark's jars and ``bin/spark-class``.

    pyspark is imported here, not when this module loads: tests/spark/conftest.py loads it for
    every test of the folder, and some of them run where the spark extra is not installed.
    """
    import pyspark  # noqa: PLC0415

    return Path(pyspark.__file__).parent


@dataclass(frozen=True)
class StandaloneCluster:
    """A running cluster: its master's URL and where its logs are."""

    master_url: str
    logs: Path


def cluster_env(base: Path) -> dict[str, str]:
    """The environment of the cluster's JVMs and of a driver using it: loopback only."""
    return {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(base / "logs"),
        "SPARK_WORKER_DIR": str(base / "work"),
        "PYSPARK_PYTHON": sys.executable,
    }


def driver_env(cluster: StandaloneCluster) -> dict[str, str]:
    """The environment of a ``grstats spark ... --master`` process using ``cluster``."""
    return cluster_env(cluster.logs.parent)


def run_on_cluster(cluster: StandaloneCluster, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``grstats spark ARGS --master <cluster> --format json``; assert it succeeded."""
    done = subprocess.run(
        [
            *(sys.executable, "-m", "grstats", "spark", *args),
            *("--master", cluster.master_url, "--format", "json"),
        ],
        env=driver_env(cluster),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def _start(name: str, args: list[str], base: Path) -> tuple[subprocess.Popen[bytes], Path]:
    log = base / "logs" / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), *args],
            env=cluster_env(base),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return process, log


def _tail(log: Path) -> str:
    """The end of a JVM's log, for a failure's message."""
    return "\n".join(log.read_text(errors="replace").splitlines()[-20:])


def _logged(log: Path, text: str, process: subprocess.Popen[bytes], what: str) -> bool:
    """Whether ``log`` has ``text``, a condition for wait_until; fails at once if ``process`` ended."""
    if text in log.read_text(errors="replace"):
        return True
    if process.poll() is not None:
        raise RuntimeError(f"the Spark {what} did not start (see {log}):\n{_tail(log)}")
    return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a JVM and its process group: SIGTERM, then SIGKILL after 10 s."""
    for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 30.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # anything it started
        return


@contextlib.contextmanager
def standalone_cluster(base: Path) -> Iterator[StandaloneCluster]:
    """Run a master and one worker on 127.0.0.1 until the block ends; files go under ``base``."""
    (port,) = free_ports(1)
    master_url = f"spark://127.0.0.1:{port}"
    started: list[subprocess.Popen[bytes]] = []
    try:
        master, master_log = _start(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                "0",
            ],
            base,
        )
        started.append(master)
        wait_until(
            functools.partial(_logged, master_log, "I have been elected leader", master, "master"),
            START_TIMEOUT_S,
            f"the Spark master is elected leader (see {master_log})",
            detail=functools.partial(_tail, master_log),
        )
        worker, _ = _start(
            "worker",
            [
                "org.apache.spark.deploy.worker.Worker",
                master_url,
                "--host",
                "127.0.0.1",
                "--cores",
                "1",
                "--memory",
                "1g",
                "--webui-port",
                "0",
                "--work-dir",
                str(base / "work"),
            ],
            base,
        )
        started.append(worker)
        wait_until(
            functools.partial(
                _logged, master_log, "Registering worker 127.0.0.1", worker, "worker"
            ),
            START_TIMEOUT_S,
            f"the Spark worker registers with the master (see {master_log})",
            detail=functools.partial(_tail, master_log),
        )
        yield StandaloneCluster(master_url, base / "logs")
    finally:
        for process in reversed(started):
            _stop(process)


@pytest.fixture(name="spark_cluster", scope="session")
def _spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with standalone_cluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster
