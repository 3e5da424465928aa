"""Signals to an agent process: SIGHUP reloads its config, SIGTERM stops it within a second.

One process test for both (processes are slow): the reload's rules are tested in-process.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import time
from typing import TYPE_CHECKING, Any

from structlog.testing import capture_logs

from grstats.agent.registry import RegistryError, SqliteRegistry
from grstats.agent.runtime import Agent
from grstats.cli.agent import OVERRIDES, build_source, config_from, reload_config
from grstats.cli.demo import free_ports
from tests.cli.test_agent_processes import PYTHON, start_agent
from tests.waiting import wait_until

if TYPE_CHECKING:
    from pathlib import Path


def _config(ports: list[int], state: Path, start: int, *, fanout: int, period_s: int) -> str:
    peers = ", ".join(f'"127.0.0.1:{port}"' for port in ports)
    return f"""
source = "simulated"
listen = "127.0.0.1:{ports[0]}"
peers = [{peers}]
state_dir = "{state}"
period_s = {period_s}
fanout = {fanout}
flush_interval_s = 1
log_format = "json"

[simulated]
scenario = "steady"
members = 3
member_index = 0
group_start_s = {start}
"""


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def _remembered(state: Path) -> int:
    """How many members the registry in ``state`` holds (0 before the agent made it)."""
    if not state.exists():
        return 0
    registry = SqliteRegistry.in_directory(state)
    try:
        return len(registry.load())
    except RegistryError:
        return 0
    finally:
        registry.close()


def test_sighup_reloads_then_sigterm_stops_within_a_second(tmp_path: Path) -> None:
    """SIGHUP applies fanout and names period_s as needing a restart; SIGTERM then stops in < 1 s, flushed."""
    ports = free_ports(3)
    start = int(time.time())
    config, log, state = tmp_path / "agent.toml", tmp_path / "agent.log", tmp_path / "0"
    config.write_text(_config(ports, state, start, fanout=0, period_s=1))
    with log.open("w") as out:
        agent = subprocess.Popen([*PYTHON, "agent", "--config", str(config)], stderr=out)
    peer = start_agent(1, ports, start, tmp_path)
    try:
        # Both agents known and flushed: the peer's push stream into the agent is open.
        wait_until(lambda: _remembered(state) == 2, 30, "the registry remembers 2 members")
        config.write_text(_config(ports, state, start, fanout=1, period_s=2))
        agent.send_signal(signal.SIGHUP)
        wait_until(  # two lines, the warning after the info
            lambda: (
                {"config_reloaded", "config_reload_needs_restart"}
                <= {e["event"] for e in _events(log)}
            ),
            10,
            "the agent logs config_reloaded and config_reload_needs_restart",
        )
        assert agent.poll() is None
        events = {e["event"]: e for e in _events(log)}
        assert events["config_reloaded"]["changed"] == ["fanout"]
        assert events["config_reload_needs_restart"]["keys"] == ["period_s"]
        asked = time.monotonic()
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(timeout=10) == 0
        took = time.monotonic() - asked
        assert took < 1.0, took
        assert _events(log)[-1]["event"] == "agent_stopped"
        assert _remembered(state) == 2
    finally:
        for process in (agent, peer):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            process.wait(timeout=15)


def test_a_reload_applies_the_keys_read_every_period_and_keeps_the_others(tmp_path: Path) -> None:
    """In-process: fanout and peers apply, period_s waits for a restart, an invalid file changes nothing."""
    ports = free_ports(3)
    config = tmp_path / "agent.toml"
    config.write_text(_config(ports, tmp_path / "0", 1, fanout=0, period_s=1))
    args = argparse.Namespace(config=config, **dict.fromkeys(OVERRIDES))
    first = config_from(args)
    agent = Agent(first, build_source(first))
    text = _config(ports[:2], tmp_path / "0", 1, fanout=2, period_s=3)
    config.write_text(text)
    with capture_logs() as logs:
        reload_config(agent, args)
        config.write_text(text.replace("fanout = 2", "fanout = 99"))
        reload_config(agent, args)
    assert agent.config.fanout == 2
    assert agent.config.peers == tuple(f"127.0.0.1:{port}" for port in ports[:2])
    assert agent.config.period_s == 1
    assert [(e["event"], e["log_level"]) for e in logs] == [
        ("config_reloaded", "info"),
        ("config_reload_needs_restart", "warning"),
        ("config_reload_failed", "error"),
    ]
    assert logs[0]["changed"] == ["fanout", "peers"]
    assert logs[1]["keys"] == ["period_s"]
    assert "fanout" in logs[2]["error"]
