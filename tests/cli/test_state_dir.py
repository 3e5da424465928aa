"""Agent processes and their state directory: the default by port, one agent per directory."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from grstats.agent.registry.sqlite import REGISTRY_FILENAME
from grstats.cli.agent import LOCK_FILENAME
from grstats.cli.demo import free_ports
from tests.waiting import wait_until

if TYPE_CHECKING:
    from collections.abc import Callable
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


def running_until(check: Callable[[], bool], process: subprocess.Popen[bytes], log: Path) -> bool:
    """``check()``, a condition for wait_until; fails at once, with ``log``, if ``process`` ended."""
    if check():
        return True
    assert process.poll() is None, (
        f"the agent stopped ({process.returncode}): {log.read_text(encoding='utf-8')}"
    )
    return False


def started(log: Path, process: subprocess.Popen[bytes]) -> bool:
    """Whether the agent has logged agent_started: from then on it handles SIGTERM.

    It locks its directory and makes its registry before; stopped then, it dies of the signal
    (as it once did here, under load).
    """
    return running_until(lambda: '"agent_started"' in log.read_text(encoding="utf-8"), process, log)


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
        for agent, listen, name in ((first, port, "first.log"), (second, other, "second.log")):
            registry, log = tmp_path / "base" / str(listen) / REGISTRY_FILENAME, tmp_path / name
            wait_until(
                functools.partial(running_until, registry.exists, agent, log),
                30,
                f"{registry} appears",
            )
            wait_until(functools.partial(started, log, agent), 30, f"{name} says agent_started")
    finally:
        assert (stop(first), stop(second)) == (0, 0)
    assert list(cwd.iterdir()) == []


def test_a_second_agent_on_one_state_dir_is_refused(tmp_path: Path) -> None:
    """The second agent on a directory exits 1 naming it and the first's pid; after a kill it starts."""
    port, other = free_ports(2)
    state = tmp_path / "state"
    first = start(tmp_path / "first.log", port, "--state-dir", str(state))
    try:
        wait_until(
            lambda: running_until(
                (state / REGISTRY_FILENAME).exists, first, tmp_path / "first.log"
            ),
            30,
            "the first agent's registry appears",
        )
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
            wait_until(
                lambda: running_until(
                    lambda: str(third.pid) in (state / LOCK_FILENAME).read_text(encoding="utf-8"),
                    third,
                    tmp_path / "third.log",
                ),
                30,
                "the third agent holds the lock",
            )
            wait_until(
                lambda: started(tmp_path / "third.log", third), 30, "third.log says agent_started"
            )
        finally:
            assert stop(third) == 0
    finally:
        stop(first)
