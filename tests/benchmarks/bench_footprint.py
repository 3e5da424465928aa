"""An agent's footprint: RSS and CPU of agents of a simulated group, under a scrape every 15 s.

Issue 50's targets: an agent at most 40 MB of RSS (10**6 bytes) at 3 members with the SQL
endpoint off, at most 50 MB with everything on, measured after 5 minutes under a
Prometheus-style scrape every 15 s (``GET /metrics`` where it is served); at most 1 % of a core
at 9 simulated members.

Each configuration is one ``grstats agent`` process of a simulated ``steady`` group (member 0
of 3 or of 9, the whole group simulated in the process, its only peer itself: the gossip's
share is not in it, bench_soak's is), all of them side by side for ``--minutes``. After the
first minute (start-up and the simulator's log filling), the CPU time (user and system, from
``/proc/PID/stat``) over the rest is the CPU figure, a share of one core; RSS is ``VmRSS`` at
the end. The simulator's own work is part of a simulated agent's CPU (docs/benchmarks.md
counts it apart for a fixed snapshot); an agent of a MySQL source has none of it.

Run it from the repository's root as ``python -m tests.benchmarks.bench_footprint`` (``--minutes
N`` to shorten, ``--json PATH`` also writes the figures). It exits 0 even when a target is
missed (it prints FAIL).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from grstats.cli.demo import free_ports

SCRAPE_S = 15.0
WARMUP_S = 60.0
TICKS_S = os.sysconf("SC_CLK_TCK")
#: (members, what is on) of each agent measured, and its RSS target in MB (None: no target).
CONFIGURATIONS: tuple[tuple[int, str, float | None], ...] = (
    (3, "nothing", 40.0),
    (3, "metrics", None),
    (3, "everything", 50.0),
    (9, "nothing", None),
    (9, "everything", None),
)
#: The most CPU, a share of one core, an agent of 9 simulated members may use.
CPU_TARGET = 0.01


@dataclass
class Measured:
    """One agent measured: its process, its /metrics port (0: none), its figures."""

    members: int
    on: str
    target_mb: float | None
    process: subprocess.Popen[bytes]
    metrics_port: int
    scrapes: int = 0
    failed_scrapes: int = 0
    figures: dict[str, float] = field(default_factory=dict)


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


def start(members: int, on: str, workdir: Path) -> tuple[subprocess.Popen[bytes], int]:
    """Start one agent (member 0 of ``members``, with ``on`` on); return it and its metrics port."""
    listen, metrics, sql = free_ports(3)
    extra: list[str] = []
    if on in {"metrics", "everything"}:
        extra += ["--metrics-listen", f"127.0.0.1:{metrics}"]
    if on == "everything":
        extra += ["--sql-listen", f"127.0.0.1:{sql}"]
    state = workdir / f"{members}-{on}"
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "grstats", "agent", "--source", "simulated"),
            *("--scenario", "steady", "--members", str(members), "--member-index", "0"),
            *("--group-start", str(int(time.time()) - 5)),
            *("--listen", f"127.0.0.1:{listen}", "--peers", f"127.0.0.1:{listen}"),
            *("--state-dir", str(state), "--log-format", "json", *extra),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return process, metrics if extra else 0


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
            raise SystemExit(f"{agent.members} members, {agent.on}: the agent stopped")
        at, cpu = marks[pid]
        agent.figures = {
            "rss_mb": vm_rss_mb(pid),
            "cpu_share": (cpu_s(pid) - cpu) / (time.monotonic() - at),
        }


def run(minutes: float) -> list[Measured]:
    """Run every configuration side by side for ``minutes``; return them measured."""
    with tempfile.TemporaryDirectory(prefix="grstats-bench-footprint-") as scratch:
        agents = []
        for members, on, target in CONFIGURATIONS:
            process, port = start(members, on, Path(scratch))
            agents.append(Measured(members, on, target, process, port))
        try:
            observe(agents, minutes * 60)
        finally:
            for agent in agents:
                agent.process.terminate()
            for agent in agents:
                agent.process.wait(15)
    return agents


def print_table(agents: list[Measured], minutes: float) -> None:
    """Print the figures as a markdown table, with the targets."""
    print(f"| agent ({minutes:g} min) | on | RSS | CPU, of a core | scrapes (failed) | target |")
    print("|---|---|--:|--:|--:|---|")
    for agent in agents:
        rss, cpu = agent.figures["rss_mb"], agent.figures["cpu_share"]
        verdicts = []
        if agent.target_mb is not None:
            ok = "ok" if rss <= agent.target_mb else "FAIL"
            verdicts.append(f"RSS <= {agent.target_mb:g} MB: {ok}")
        if agent.members == 9:
            verdicts.append(f"CPU <= 1 %: {'ok' if cpu <= CPU_TARGET else 'FAIL'}")
        print(
            f"| simulated, {agent.members} members | {agent.on} | {rss:.1f} MB | {cpu:.2%} "
            f"| {agent.scrapes} ({agent.failed_scrapes}) | {'; '.join(verdicts)} |"
        )


def main(argv: list[str] | None = None) -> int:
    """Run the measurement, print the table and optionally write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="how long (default 5)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    print("# An agent's footprint (RSS and CPU under a scrape every 15 s)")
    print(
        f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {load_before:.2f} at start\n",
        flush=True,
    )
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
                {"members": a.members, "on": a.on, "scrapes": a.scrapes, **a.figures}
                for a in agents
            ],
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
