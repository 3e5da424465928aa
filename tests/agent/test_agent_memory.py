"""An agent process holds at most 60 MB: a member of a simulated group of 3, and a MySQL member.

RSS of the running ``grstats agent`` (``/proc/PID/statm``) once it exchanges with its peers
(simulated) or reads its server (MySQL) every period, with ``/metrics`` served and scraped.
What took the memory (issue 33): every command's modules, Rich (loaded by structlog for the
console's tracebacks), the simulator's certification database held as a dict, and for MySQL
``cryptography`` (loaded by PyMySQL): 61-66 MB for a simulated member, 69 for a MySQL one.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request
from typing import TYPE_CHECKING

import pytest

from grstats.agent.cli.demo import free_ports
from tests import waiting
from tests.agent.cli.test_agent_processes import start_agent
from tests.agent.sources.schemas import USER
from tests.agent.test_message_memory import rss_mb

if TYPE_CHECKING:
    from pathlib import Path

    from tests.agent.sources.schemas import Accounts
    from tests.mariadb import MariaDB

#: The most an agent process may hold, in MB (10**6 bytes).
MAX_RSS_MB = 60.0
#: Periods the agents run after they first hear each other (or read their server), before RSS.
SETTLE_S = 3.0


def gauge(port: int, name: str) -> float | None:
    """The value of the unlabelled gauge ``name`` on the /metrics at ``port``, else None."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as answer:
            text = answer.read().decode("utf-8")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    return None


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every process still running and wait for it."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        process.wait(timeout=15)


def test_agents_of_a_simulated_group_of_3_hold_at_most_60_mb(tmp_path: Path) -> None:
    """Three agents (steady, 500 tps) that hear each other: each holds at most 60 MB."""
    ports = free_ports(6)
    start = int(time.time())
    agents = [
        start_agent(i, ports[:3], start, tmp_path, "--metrics-listen", f"127.0.0.1:{ports[3 + i]}")
        for i in range(3)
    ]
    try:
        waiting.wait_until(
            lambda: all(gauge(port, "grstats_peers_heard") == 2 for port in ports[3:]),
            20,
            "every agent hears the 2 others",
        )
        time.sleep(SETTLE_S)
        held = [rss_mb(agent.pid) for agent in agents]
        assert all(agent.poll() is None for agent in agents)
        assert max(held) <= MAX_RSS_MB, held
    finally:
        stop(agents)


@pytest.mark.mysql
def test_an_agent_reading_mysql_holds_at_most_60_mb(
    mariadb: MariaDB, accounts: Accounts, ps80: str, tmp_path: Path
) -> None:
    """An agent reading its member (a group of 3) from a server every period: at most 60 MB."""
    listen, metrics = free_ports(2)
    config = tmp_path / "agent.toml"
    config.write_text(
        'source = "mysql"\n'
        "[mysql]\n"
        f'host = "{mariadb.host}"\nport = {mariadb.port}\nuser = "{USER}"\n'
        f'password_file = "{accounts.password_file}"\nschema = "{ps80}"\n',
        encoding="utf-8",
    )
    agent = subprocess.Popen(
        [
            *(sys.executable, "-m", "grstats", "agent", "--config", str(config)),
            *("--listen", f"127.0.0.1:{listen}", "--peers", f"127.0.0.1:{listen}"),
            *("--metrics-listen", f"127.0.0.1:{metrics}", "--state-dir", str(tmp_path / "state")),
            *("--log-format", "json"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        waiting.wait_until(
            lambda: gauge(metrics, "grstats_source_up") == 1, 20, "the agent reads its server"
        )
        time.sleep(SETTLE_S)
        held = rss_mb(agent.pid)
        assert agent.poll() is None
        assert held <= MAX_RSS_MB, held
    finally:
        stop([agent])
