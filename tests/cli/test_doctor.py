"""``grstats doctor`` as a user runs it: exit statuses, the table, the JSON, --help.

The passing run checks an agent process started with the same config file: its ports are
held by this agent.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from typing import TYPE_CHECKING

import pytest

from grstats.cli import main
from grstats.cli.demo import free_ports
from tests.cli.test_agent_processes import PYTHON, grstats
from tests.inprocess import run_main
from tests.waiting import wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


def write_config(directory: Path, listen: int, metrics: int, *peers: str) -> Path:
    """A simulated member 0's config on ``listen`` and ``metrics`` (127.0.0.1), no discovery."""
    path = directory / "agent.toml"
    listed = ", ".join(f'"{peer}"' for peer in peers)
    path.write_text(
        f'source = "simulated"\nlisten = "127.0.0.1:{listen}"\n'
        f'metrics_listen = "127.0.0.1:{metrics}"\npeers = [{listed}]\ndiscover_peers = false\n'
        f'state_dir = "{directory / "state"}"\n'
        f"[simulated]\nmember_index = 0\ngroup_start_s = {int(time.time())}\n",
        encoding="utf-8",
    )
    return path


def answers(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port``."""
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(name="agent_config")
def _agent_config(tmp_path: Path) -> Iterator[Path]:
    """A config file, and an agent process running with it until the test ends."""
    listen, metrics = free_ports(2)
    path = write_config(tmp_path, listen, metrics)
    process = subprocess.Popen(
        [*PYTHON, "agent", "--config", str(path), "--log-format", "json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: answers(listen) and answers(metrics), 30, "the agent's two ports")
        yield path
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_a_running_agent_passes(agent_config: Path) -> None:
    """The agent's own config, while it runs: exit 0, its ports held by this agent (a process)."""
    done = grstats("doctor", "--config", str(agent_config), timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(
        line.startswith("[ ok ] listen 127.0.0.1:") and "held by this agent" in line
        for line in lines
    )
    assert any(line.startswith("[ ok ] metrics_listen") for line in lines)
    assert "[skip] MySQL: not checked, source is simulated" in done.stdout
    assert lines[-1].startswith("passed: ")
    assert "\x1b[" not in done.stdout  # no colour when piped


def test_a_peer_down_exits_1_with_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A peer that is down: exit 1, and the JSON says which check failed and its fix."""
    listen, metrics, down = free_ports(3)
    path = write_config(tmp_path, listen, metrics, f"127.0.0.1:{down}")
    assert main(["doctor", "--config", str(path), "--format", "json", "--timeout", "1"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["ok"] is False
    assert set(document) == {"ok", "checks"}
    for check in document["checks"]:
        assert set(check) == {"name", "status", "message", "fix"}
        assert check["status"] in {"ok", "failed", "skipped", "warning"}
    by_name = {check["name"]: check for check in document["checks"]}
    peer = by_name[f"peer:127.0.0.1:{down}"]
    assert peer["status"] == "failed"
    assert peer["fix"] == f"start the grstats agent on 127.0.0.1:{down}, or correct peers"
    assert by_name[f"clock:127.0.0.1:{down}"]["status"] == "skipped"
    assert by_name["port.listen"]["status"] == "ok"


def test_table_shows_the_fix_under_the_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The table prints [FAIL] and, indented under it, the fix."""
    listen, metrics, down = free_ports(3)
    path = write_config(tmp_path, listen, metrics, f"127.0.0.1:{down}")
    assert main(["doctor", "--config", str(path), "--timeout", "1"]) == 1
    lines = capsys.readouterr().out.splitlines()
    failed = lines.index(f"[FAIL] peer 127.0.0.1:{down} is down: connection refused")
    assert (
        lines[failed + 1]
        == f"       fix: start the grstats agent on 127.0.0.1:{down}, or correct peers"
    )
    assert lines[-1] == "FAILED: 5 ok, 3 skipped, 1 failed"


def test_invalid_config_fails_and_skips_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A config that does not load: exit 1, its line failed, every other check skipped."""
    path = tmp_path / "agent.toml"
    path.write_text(
        'source = "simulated"\nperiod_s = 0\n[simulated]\nmember_index = 0\ngroup_start_s = 0\n',
        encoding="utf-8",
    )
    assert main(["doctor", "--config", str(path), "--format", "json"]) == 1
    checks = json.loads(capsys.readouterr().out)["checks"]
    assert checks[0]["name"] == "config"
    assert checks[0]["status"] == "failed"
    assert "period_s: 0 is not in [1, 60] seconds" in checks[0]["message"]
    assert {check["status"] for check in checks[1:]} == {"skipped"}


def test_the_agents_own_flags_beat_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file listening on 0.0.0.0 without advertise (as in Kubernetes) passes with the pod's --advertise."""
    path = tmp_path / "agent.toml"
    path.write_text(
        'source = "simulated"\nlisten = "0.0.0.0:0"\ndiscover_peers = false\n'
        f'state_dir = "{tmp_path / "state"}"\n'
        "[simulated]\nmember_index = 0\ngroup_start_s = 0\n",
        encoding="utf-8",
    )
    main(["doctor", "--config", str(path), "--format", "json"])
    alone = json.loads(capsys.readouterr().out)["checks"][0]
    assert (alone["status"], alone["message"].count("advertise: not set")) == ("failed", 1)
    main(["doctor", "--config", str(path), "--format", "json", "--advertise", "127.0.0.1:7400"])
    flagged = json.loads(capsys.readouterr().out)["checks"][0]
    assert flagged["status"] == "ok"
    assert "advertise 127.0.0.1:7400" in flagged["message"]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        pytest.param(
            ["--config", "missing.toml"], "--config: 'missing.toml' does not exist", id="missing"
        ),
        pytest.param(["--config", "."], "--config: '.' is not a file", id="directory"),
        pytest.param(
            ["--config", "{config}", "--timeout", "0"],
            "--timeout: 0.0 is not in (0, 60] seconds",
            id="timeout",
        ),
        pytest.param(
            ["--config", "{config}", "--max-clock-offset", "-1"],
            "--max-clock-offset: -1.0 is not in (0, 60] seconds",
            id="max-clock-offset",
        ),
    ],
)
def test_bad_arguments_exit_2(
    args: list[str], error: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing config file or a bad flag exits 2 with one line naming it."""
    config = write_config(tmp_path, 7400, 9474)
    argv = [arg.replace("{config}", str(config)) for arg in args]
    assert main(["doctor", *argv]) == 2
    assert capsys.readouterr().err == f"grstats: error: {error}\n"


def test_help_lists_the_checks(capsys: pytest.CaptureFixture[str]) -> None:
    """--help says what is checked, in order, and what the exit statuses mean."""
    done = run_main(["doctor", "--help"], capsys)
    assert done.returncode == 0
    for word in (
        "--config FILE",
        "--max-clock-offset S",
        "state_dir",
        "mysql.*",
        "clock:HOST:PORT",
        "exit status: 0",
    ):
        assert word in done.stdout
