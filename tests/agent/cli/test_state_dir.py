"""Agent processes and their state directory: the default by port, one agent per directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from grstats.agent.cli.agent import LOCK_FILENAME
from grstats.agent.cli.demo import free_ports
from grstats.agent.registry.sqlite import REGISTRY_FILENAME

if TYPE_CHECKING:
    from pathlib import Path

PYTHON = [sys.executable, "-m", "grstats"]


def start(
    log: Path, port: int, *flags: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """A ``grstats agent`` of a one-member simulated group on ``port``; stderr to ``log``."""
    with log.open("wb") as out:  # the child keeps its own copy
        return subprocess.Popen(
            [*PYTHON, "agent", "--source", "simulated", "--members", "1", "--member-index", "0",
             "--group-start", str(int(time.time())), "--listen", f"127.0.0.1:{port}",
             "--log-format", "json", *flags],
            stdout=subprocess.DEVNULL,
            stderr=out,
            env=env,
            cwd=cwd,
        )  # fmt: skip


def wait_for(path: Path, process: subprocess.Popen[bytes], timeout_s: float = 30) -> None:
    """Wait until ``path`` exists while ``process`` runs; fail otherwise."""
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert process.poll() is None, f"the agent stopped with {process.returncode}"
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)


def wait_started(log: Path, process: subprocess.Popen[bytes], timeout_s: float = 30) -> None:
    """Wait until the agent logs agent_started: from then on it handles SIGTERM.

    It locks its directory and makes its registry before; stopped then, it dies of the signal
    (as it once did here, under load).
    """
    deadline = time.monotonic() + timeout_s
    while '"agent_started"' not in log.read_text(encoding="utf-8"):
        assert process.poll() is None, log.read_text(encoding="utf-8")
        assert time.monotonic() < deadline, f"{log} never said agent_started"
        time.sleep(0.1)


def stop(process: subprocess.Popen[bytes]) -> int:
    """SIGTERM ``process`` (if it runs) and return its exit status."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    return process.wait(timeout=30)


def test_the_default_is_by_port_under_state_directory_not_the_cwd(tmp_path: Path) -> None:
    """Without --state-dir, systemd's $STATE_DIRECTORY/<listen port> holds the registry."""
    port, other = free_ports(2)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = {**os.environ, "STATE_DIRECTORY": str(tmp_path / "base")}
    first = start(tmp_path / "first.log", port, env=env, cwd=cwd)
    second = start(tmp_path / "second.log", other, env=env, cwd=cwd)
    try:
        wait_for(tmp_path / "base" / str(port) / REGISTRY_FILENAME, first)
        wait_for(tmp_path / "base" / str(other) / REGISTRY_FILENAME, second)
        wait_started(tmp_path / "first.log", first)
        wait_started(tmp_path / "second.log", second)
    finally:
        assert (stop(first), stop(second)) == (0, 0)
    assert list(cwd.iterdir()) == []


def test_a_second_agent_on_one_state_dir_is_refused(tmp_path: Path) -> None:
    """The second agent on a directory exits 1 naming it and the first's pid; after a kill it starts."""
    port, other = free_ports(2)
    state = tmp_path / "state"
    first = start(tmp_path / "first.log", port, "--state-dir", str(state))
    try:
        wait_for(state / REGISTRY_FILENAME, first)
        second = start(tmp_path / "second.log", other, "--state-dir", str(state))
        assert second.wait(timeout=60) == 1
        error = (tmp_path / "second.log").read_text(encoding="utf-8")
        assert error == (
            f"grstats: error: state_dir: {str(state)!r} is in use by another agent "
            f"(pid {first.pid}); give each agent its own state_dir (--state-dir)\n"
        )
        first.kill()  # a crash: the lock ends with the process
        first.wait(timeout=30)
        third = start(tmp_path / "third.log", other, "--state-dir", str(state))
        try:
            deadline = time.monotonic() + 30
            while str(third.pid) not in (state / LOCK_FILENAME).read_text(encoding="utf-8"):
                assert third.poll() is None, (tmp_path / "third.log").read_text(encoding="utf-8")
                assert time.monotonic() < deadline
                time.sleep(0.1)
            wait_started(tmp_path / "third.log", third)
        finally:
            assert stop(third) == 0
    finally:
        stop(first)
