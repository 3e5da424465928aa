"""An agent's footprint: RSS and CPU of agents beside mysqld_exporter, under a scrape every 15 s.

Issue 50's targets: an agent at most 40 MB of RSS (10**6 bytes) at 3 members with the SQL
endpoint off, at most 50 MB with everything on, measured after 5 minutes under a
Prometheus-style scrape every 15 s (``GET /metrics`` where it is served), beside mysqld_exporter
measured the same way; at most 1 % of a core at 9 simulated members with the simulator's work
apart (bench_agent's fixed-snapshot group measures that one).

Each configuration is one ``grstats agent`` process of a simulated ``steady`` group (member 0
of 3 or of 9, the whole group simulated in the process, its only peer itself: the gossip's
share is not in it, bench_soak's is), or of the MySQL source reading a throwaway MariaDB
server that holds the MySQL 8.0 ``performance_schema`` tables of a 3-member group (the tests'
``ps80``, :mod:`tests.agent.sources.schemas`) once a period; beside them Prometheus'
``mysqld_exporter`` (Debian's ``prometheus-mysqld-exporter``, its default collectors) reads
the same server, scraped as the agents are: all side by side for ``--minutes``. After the
first minute (start-up and the simulator's log filling), the CPU time (user and system, from
``/proc/PID/stat``) over the rest is the CPU figure, a share of one core; RSS is ``VmRSS`` at
the end, and each is shown as a ratio to the exporter's. The simulator's own work is part of
a simulated agent's CPU (docs/benchmarks.md counts it apart for a fixed snapshot); an agent of
a MySQL source has none of it.

Run it from the repository's root as ``python -m tests.benchmarks.bench_footprint`` (``--minutes
N`` to shorten, ``--json PATH`` also writes the figures). It exits 0 even when a target is
missed (it prints FAIL).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from grstats.cli.demo import free_ports
from tests.agent.sources.schemas import USER, create_accounts, load_schema
from tests.benchmarks.heading import print_heading
from tests.mariadb import MariaDB, require_server_binaries

SCRAPE_S = 15.0
WARMUP_S = 60.0
TICKS_S = os.sysconf("SC_CLK_TCK")
#: (source, members, what is on) of each agent measured, and its RSS target in MB (None: no
#: target): 40 MB at 3 members with the SQL endpoint off, scraped or not, 50 MB with everything.
CONFIGURATIONS: tuple[tuple[str, int, str, float | None], ...] = (
    ("simulated", 3, "nothing", 40.0),
    ("simulated", 3, "metrics", 40.0),
    ("simulated", 3, "everything", 50.0),
    ("mysql", 3, "metrics", 40.0),
    ("simulated", 9, "nothing", None),
    ("simulated", 9, "everything", None),
)
#: The exporter the agents are measured beside, and its password file's account.
EXPORTER = "prometheus-mysqld-exporter"
EXPORTER_USER = "exporter"


@dataclass
class Measured:
    """One agent (or the exporter) measured: its process, its /metrics port (0: none), figures."""

    source: str
    members: int
    on: str
    target_mb: float | None
    process: subprocess.Popen[bytes]
    metrics_port: int
    scrapes: int = 0
    failed_scrapes: int = 0
    figures: dict[str, float] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """What the table calls it."""
        if self.source == "exporter":
            return "mysqld_exporter, same server"
        return f"{self.source}, {self.members} members"


def vm_rss_mb(pid: int) -> float:
    """``VmRSS`` of process ``pid``, in MB (10**6 bytes)."""
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024 / 1e6
    raise SystemExit(f"pid {pid}: no VmRSS")


def cpu_s(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_S


@dataclass(frozen=True)
class Server:
    """The MariaDB server the MySQL-source agent and the exporter read, and their passwords."""

    mariadb: MariaDB
    agent_password_file: Path
    exporter_cnf: Path


def prepare_server(mariadb: MariaDB, workdir: Path) -> Server:
    """Load the 3-member group's tables; make the agent's account and the exporter's."""
    password = secrets.token_urlsafe(18)
    create_accounts(mariadb, password)
    load_schema(mariadb, "ps80")
    # the privileges mysqld_exporter's README asks for
    mariadb.execute(
        f"CREATE USER '{EXPORTER_USER}'@'%%' IDENTIFIED BY %s WITH MAX_USER_CONNECTIONS 3;"
        f"GRANT PROCESS, REPLICATION CLIENT, SELECT ON *.* TO '{EXPORTER_USER}'@'%%';",
        (password,),
    )
    secret = workdir / "agent-password"
    secret.write_text(password + "\n", encoding="utf-8")
    cnf = workdir / "exporter.cnf"
    cnf.write_text(
        f"[client]\nuser = {EXPORTER_USER}\npassword = {password}\n"
        f"host = {mariadb.host}\nport = {mariadb.port}\n",
        encoding="utf-8",
    )
    for path in (secret, cnf):
        path.chmod(0o600)
    return Server(mariadb, secret, cnf)


def source_arguments(source: str, members: int, workdir: Path, server: Server) -> list[str]:
    """The agent's flags (or config file) for ``source`` at ``members``."""
    if source == "simulated":
        return [
            *("--source", "simulated", "--scenario", "steady", "--members", str(members)),
            *("--member-index", "0", "--group-start", str(int(time.time()) - 5)),
        ]
    config = workdir / "agent-mysql.toml"
    config.write_text(
        'source = "mysql"\n[mysql]\n'
        f'host = "{server.mariadb.host}"\nport = {server.mariadb.port}\nuser = "{USER}"\n'
        f'password_file = "{server.agent_password_file}"\nschema = "ps80"\n',
        encoding="utf-8",
    )
    return ["--config", str(config)]


def start(
    source: str, members: int, on: str, workdir: Path, server: Server
) -> tuple[subprocess.Popen[bytes], int]:
    """Start one agent (member 0 of ``members``, with ``on`` on); return it and its metrics port."""
    listen, metrics, sql = free_ports(3)
    extra: list[str] = []
    if on in {"metrics", "everything"}:
        extra += ["--metrics-listen", f"127.0.0.1:{metrics}"]
    if on == "everything":
        extra += ["--sql-listen", f"127.0.0.1:{sql}"]
    state = workdir / f"{source}-{members}-{on}"
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "grstats", "agent"),
            *source_arguments(source, members, workdir, server),
            *("--listen", f"127.0.0.1:{listen}", "--peers", f"127.0.0.1:{listen}"),
            *("--state-dir", str(state), "--log-format", "json", *extra),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return process, metrics if extra else 0


def start_exporter(server: Server) -> tuple[subprocess.Popen[bytes], int]:
    """Start mysqld_exporter on the same server with its default collectors; return it, its port."""
    (web,) = free_ports(1)
    environment = {k: v for k, v in os.environ.items() if k != "DATA_SOURCE_NAME"}
    process = subprocess.Popen(
        [
            EXPORTER,
            f"--config.my-cnf={server.exporter_cnf}",
            f"--web.listen-address=127.0.0.1:{web}",
        ],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return process, web


def scrape(agent: Measured) -> None:
    """GET the agent's /metrics once, as Prometheus does, and count it."""
    try:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{agent.metrics_port}/metrics", timeout=5
        ) as answer:
            answer.read()
        agent.scrapes += 1
    except OSError:
        agent.failed_scrapes += 1


def observe(agents: list[Measured], total_s: float) -> None:
    """Scrape every 15 s for ``total_s``; note each agent's RSS and CPU share after the warm-up."""
    began = time.monotonic()
    warmup_s = min(WARMUP_S, total_s / 3)
    marks: dict[int, tuple[float, float]] = {}
    next_scrape = began + 5.0
    while (now := time.monotonic()) - began < total_s:
        if now - began >= warmup_s and not marks:
            marks = {a.process.pid: (now, cpu_s(a.process.pid)) for a in agents}
        if now >= next_scrape:
            for agent in (a for a in agents if a.metrics_port):
                scrape(agent)
            next_scrape += SCRAPE_S
        time.sleep(0.5)
    for agent in agents:
        pid = agent.process.pid
        if agent.process.poll() is not None:
            raise SystemExit(f"{agent.name}: it stopped")
        at, cpu = marks[pid]
        agent.figures = {
            "rss_mb": vm_rss_mb(pid),
            "cpu_share": (cpu_s(pid) - cpu) / (time.monotonic() - at),
            "cpu_s": cpu_s(pid) - cpu,
        }


def run(minutes: float) -> list[Measured]:
    """Run every configuration and the exporter side by side for ``minutes``; return them."""
    if shutil.which(EXPORTER) is None:
        raise SystemExit(f"{EXPORTER} is not installed (Debian: apt-get install {EXPORTER})")
    with (
        tempfile.TemporaryDirectory(prefix="grstats-bench-footprint-") as scratch,
        MariaDB.running(require_server_binaries(), Path(scratch) / "db") as mariadb,
    ):
        server = prepare_server(mariadb, Path(scratch))
        agents = []
        for source, members, on, target in CONFIGURATIONS:
            process, port = start(source, members, on, Path(scratch), server)
            agents.append(Measured(source, members, on, target, process, port))
        process, port = start_exporter(server)
        agents.append(Measured("exporter", 3, "metrics", None, process, port))
        try:
            observe(agents, minutes * 60)
        finally:
            for agent in agents:
                agent.process.terminate()
            for agent in agents:
                agent.process.wait(15)
    return agents


def print_table(agents: list[Measured], minutes: float) -> None:
    """Print the figures as a markdown table, with the targets and the ratios to the exporter.

    The CPU target (1 % of a core at 9 members, the simulator's work apart) is bench_agent's
    fixed-snapshot group: a simulated agent's CPU here includes its simulator.
    """
    (exporter,) = [a for a in agents if a.source == "exporter"]
    rss_floor = exporter.figures["rss_mb"]
    # A ratio to fewer than 2 clock ticks of the exporter's (a short run) would mean nothing.
    exporter_cpu = exporter.figures["cpu_share"]
    exporter_counted = exporter.figures["cpu_s"] * TICKS_S >= 2
    print(
        f"| agent ({minutes:g} min) | on | RSS | / exporter's | CPU, of a core | / exporter's "
        "| scrapes (failed) | target |"
    )
    print("|---|---|--:|--:|--:|--:|--:|---|")
    for agent in agents:
        rss, cpu = agent.figures["rss_mb"], agent.figures["cpu_share"]
        verdict = ""
        if agent.target_mb is not None:
            verdict = f"RSS <= {agent.target_mb:g} MB: {'ok' if rss <= agent.target_mb else 'FAIL'}"
        print(
            f"| {agent.name} | {agent.on} | {rss:.1f} MB | {rss / rss_floor:.1f} | {cpu:.2%} "
            f"| {f'{cpu / exporter_cpu:.0f}' if exporter_counted else '-'} | {agent.scrapes} ({agent.failed_scrapes}) | {verdict} |"
        )


def main(argv: list[str] | None = None) -> int:
    """Run the measurement, print the table and optionally write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="how long (default 5)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    load_before = print_heading("An agent's footprint (RSS and CPU under a scrape every 15 s)")
    agents = run(args.minutes)
    print_table(agents, args.minutes)
    load_after = os.getloadavg()[0]
    print(f"\nload average {load_after:.2f} at the end")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        document = {
            "minutes": args.minutes,
            "python": platform.python_version(),
            "load_average": {"start": load_before, "end": load_after},
            "agents": [
                {
                    "source": a.source,
                    "members": a.members,
                    "on": a.on,
                    "scrapes": a.scrapes,
                    "failed_scrapes": a.failed_scrapes,
                    **a.figures,
                }
                for a in agents
            ],
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
