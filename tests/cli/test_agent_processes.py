"""Agents as separate processes: bad configs, kill -9 and restart, forgetting members (the demo: tests/test_demo.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from typing import TYPE_CHECKING, Any

import pytest

from grstats.agent.registry import MemberRecord, SqliteRegistry
from grstats.cli.demo import free_ports
from tests import waiting

if TYPE_CHECKING:
    from pathlib import Path

PYTHON = [sys.executable, "-m", "grstats"]


def grstats(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run grstats (as python -m grstats) and capture its output."""
    return subprocess.run(
        [*PYTHON, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def start_agent(
    index: int, ports: list[int], start: int, state: Path, *extra: str
) -> subprocess.Popen[bytes]:
    """One agent process of a 3-member simulated group (``extra``: more flags)."""
    peers = ",".join(f"127.0.0.1:{p}" for p in ports)
    return subprocess.Popen(
        [
            *PYTHON,
            "agent",
            "--source",
            "simulated",
            "--scenario",
            "steady",
            "--members",
            "3",
            "--member-index",
            str(index),
            "--group-start",
            str(start),
            "--listen",
            f"127.0.0.1:{ports[index]}",
            "--peers",
            peers,
            "--state-dir",
            str(state / str(index)),
            "--log-format",
            "json",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def members(port: int) -> dict[str, dict[str, Any]]:
    """replication_group_members with the freshness columns, as the agent on ``port`` serves it."""
    done = grstats(
        "query",
        "members",
        "--node",
        f"127.0.0.1:{port}",
        "--format",
        "json",
        "--extended",
        "--timeout",
        "2",
    )
    return (
        {row["MEMBER_ID"]: row for row in json.loads(done.stdout)["rows"]}
        if done.returncode == 0
        else {}
    )


def stats(port: int) -> dict[str, dict[str, Any]]:
    """replication_group_member_stats as the agent on ``port`` serves it."""
    done = grstats(
        "query", "stats", "--node", f"127.0.0.1:{port}", "--format", "json", "--timeout", "2"
    )
    return (
        {row["MEMBER_ID"]: row for row in json.loads(done.stdout)["rows"]}
        if done.returncode == 0
        else {}
    )


@pytest.mark.parametrize(
    ("args", "field"),
    [
        pytest.param(
            ["--source", "simulated", "--group-start", "1"],
            "simulated.member_index",
            id="no-member-index",
        ),
        pytest.param(
            ["--source", "simulated", "--member-index", "0"],
            "simulated.group_start",
            id="no-group-start",
        ),
        pytest.param(
            ["--source", "simulated", "--member-index", "0", "--group-start", "1", "--period", "0"],
            "period_s",
            id="period-zero",
        ),
        pytest.param(
            [
                "--source",
                "simulated",
                "--member-index",
                "0",
                "--group-start",
                "1",
                "--peers",
                "nope",
            ],
            "peers[0]",
            id="bad-peer",
        ),
    ],
)
def test_invalid_config_exits_2_naming_the_field(args: list[str], field: str) -> None:
    """An invalid agent configuration exits 2 with one line naming the field."""
    done = grstats("agent", *args, timeout=30)
    assert done.returncode == 2
    assert field in done.stderr


@pytest.mark.slow
def test_kill_9_then_restart(tmp_path: Path) -> None:
    """A kill -9 of one agent: not connected within 10 periods, last row kept; back within 2 after restart."""
    ports = free_ports(3)
    start = int(time.time())
    agents = [start_agent(i, ports, start, tmp_path) for i in range(3)]
    try:
        waiting.wait_until(
            lambda: (
                len(members(ports[0])) == 3
                and all(r["CONNECTED"] == "YES" for r in members(ports[0]).values())
            ),
            30,
            "agent 0 lists 3 members, all connected",
        )
        victim_rows = members(ports[2])
        victim = next(m for m, row in victim_rows.items() if row["SOURCE"] == "local")
        os.kill(agents[2].pid, signal.SIGKILL)
        agents[2].wait()
        killed_at = time.monotonic()
        last = stats(ports[0])[victim]["COUNT_TRANSACTIONS_CHECKED"]
        polls: list[float] = []

        def at_agent_0(column: str, value: str) -> bool:
            began = time.monotonic()
            row = members(ports[0]).get(victim, {})
            polls.append(time.monotonic() - began)
            return row.get(column) == value

        waiting.wait_until(
            lambda: at_agent_0("CONNECTED", "NO"),
            20,
            "agent 0 shows the killed member CONNECTED NO",
        )
        silent = time.monotonic() - killed_at
        # 10 periods of 1 s, plus the polls' own `grstats query` processes (1-3 s under load)
        assert silent <= 10 + 2 * max(polls), (silent, polls)
        kept = stats(ports[0])[victim]
        assert kept["COUNT_TRANSACTIONS_CHECKED"] >= last  # its last row, not zeros
        assert (
            members(ports[0])[victim]["MEMBER_STATE"] == "ONLINE"
        )  # GR's own view: it is still up
        agents[2] = start_agent(2, ports, start, tmp_path)
        waiting.wait_until(
            lambda: members(ports[2]).get(victim, {}).get("SOURCE") == "local",
            30,
            "the restarted agent serves its own member",
        )
        serving_at = time.monotonic()  # started and read its member (start-up varies with load)
        polls.clear()
        waiting.wait_until(
            lambda: at_agent_0("CONNECTED", "YES"),
            15,
            "agent 0 shows the restarted member CONNECTED YES",
        )
        back = time.monotonic() - serving_at
        # 2 periods, plus the polls' own `grstats query` processes (1-3 s each under load)
        assert back <= 2 + 2 * max(polls), (back, polls)
        assert stats(ports[0])[victim]["COUNT_TRANSACTIONS_CHECKED"] > last
    finally:
        for process in agents:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in agents:
            process.wait(timeout=15)


def test_a_metrics_port_in_use_exits_1_with_one_line(tmp_path: Path) -> None:
    """A taken --metrics-listen port: exit 1, one line naming metrics_listen, no traceback."""
    ports = free_ports(2)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", ports[1]))
        taken.listen()
        done = grstats(
            "agent",
            *("--source", "simulated", "--member-index", "0", "--group-start", "1"),
            *("--listen", f"127.0.0.1:{ports[0]}", "--state-dir", str(tmp_path / "state")),
            *("--metrics-listen", f"127.0.0.1:{ports[1]}", "--log-format", "json"),
            timeout=30,
        )
    assert done.returncode == 1
    assert f"metrics_listen: cannot bind 127.0.0.1:{ports[1]}" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_metrics_listen_serves_prometheus_text(tmp_path: Path) -> None:
    """An agent process started with --metrics-listen serves /metrics with its own counters."""
    ports = free_ports(4)
    agent = start_agent(
        0, ports[:3], int(time.time()), tmp_path, "--metrics-listen", f"127.0.0.1:{ports[3]}"
    )

    def scraped() -> str:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{ports[3]}/metrics", timeout=2
            ) as answer:
                return str(answer.read().decode("utf-8"))
        except OSError:
            return ""

    try:
        waiting.wait_until(
            lambda: 'source="local"' in scraped(), 30, "/metrics has the agent's own member"
        )
        text = scraped()
        assert "# TYPE grstats_transactions_checked_total counter" in text
        assert "# TYPE grstats_certification_rows gauge" in text
        assert "grstats_agent_up{" in text
    finally:
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(timeout=15) == 0


def test_members_forget(tmp_path: Path) -> None:
    """Forgetting a member removes a member from an agent's registry; an unknown one is an error."""
    uuid = "d8a706aa-16ee-11eb-8b4c-0800270d5e61"
    registry = SqliteRegistry.in_directory(tmp_path)
    registry.save([MemberRecord(uuid, "db1", 3306, "db1:7400", 1, 2, "ONLINE")])
    registry.close()
    done = grstats("members", "forget", uuid, "--state-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert SqliteRegistry.in_directory(tmp_path).load() == []
    again = grstats("members", "forget", uuid, "--state-dir", str(tmp_path))
    assert again.returncode == 1
    assert uuid in again.stderr
