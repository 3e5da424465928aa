"""SQL endpoint benchmark: ``SELECT * FROM performance_schema.replication_group_member_stats``.

Issue 15's targets, at 9 members: the query at 100 a second from one client has p99 <= 10 ms;
the exchange is not held up meanwhile (every member's AGE_MS stays under 2 periods); and an
agent whose endpoint is on and idle uses no more CPU than one without.

Nine ``grstats agent`` processes of a simulated steady group (single-primary, 500 tps, 1 s
period) run on 127.0.0.1 over real gRPC, as in ``bench_status``; the first also listens for
SQL (``--sql-listen``). Once every agent lists all 9 members as connected:

1. **Idle**: for ``--idle-seconds`` nobody connects to the endpoint; the CPU time of agent 0
   (endpoint on) is compared with the median of agents 1-8 (endpoint off), which run the
   same periods.
2. **Load**: one client (PyMySQL, one connection, as a script or an exporter would hold)
   sends the query open-loop at ``--rate`` a second for ``--seconds``: query ``i`` is due at
   ``start + i / rate`` and its latency counts from then, so the client's own lateness counts
   against the agent rather than hiding a stall. Every answer is checked (9 rows, MySQL's 13
   column names). Meanwhile a second connection reads, once a second,
   ``SELECT MAX(AGE_MS) FROM grstats.replication_group_member_stats`` (the freshest update of
   each member, as agent 0 holds it): the exchange is held up if that reaches 2 periods.

``--own-core`` adds a load pass with agent 0 alone on the first core and the client with the
8 other agents (under ``SCHED_IDLE``) on the second, as ``bench_status --own-core`` does.

Run it from the repository's root as ``python -m tests.benchmarks.bench_sql``. Linux only
(/proc). The script exits 0 even when a target is missed (it prints FAIL).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymysql  # type: ignore[import-untyped]

from grstats.agent.cli.demo import free_ports
from grstats.agent.rows import REPLICATION_GROUP_MEMBER_STATS
from tests.benchmarks.bench_agent import (
    CLOCK_TICKS,
    AgentProcess,
    check_running,
    cpu_ticks,
    percentile,
    stop_group,
    wait_connected,
)
from tests.benchmarks.bench_scrape import OWN, SHARED
from tests.benchmarks.bench_status import MEMBERS, PERIOD_S, placed, start_group

QUERY = "SELECT * FROM performance_schema.replication_group_member_stats"
AGE_QUERY = "SELECT MAX(AGE_MS) FROM grstats.replication_group_member_stats"
RATE = 100
SECONDS = 30.0
IDLE_SECONDS = 20.0
TARGET_P99_MS = 10.0
TARGET_AGE_MS = 2 * PERIOD_S * 1000


@dataclass
class Load:
    """What one load pass saw."""

    sent: int = 0
    latencies_ms: list[float] = field(default_factory=list)  # from the scheduled time
    service_ms: list[float] = field(default_factory=list)  # from the actual send
    errors: dict[str, int] = field(default_factory=dict)
    ages_ms: list[int] = field(default_factory=list)  # MAX(AGE_MS), once a second
    agent_cpu_s: float = 0.0

    def summary(self) -> dict[str, Any]:
        """The pass's figures."""

        def at(values: list[float], fraction: float) -> float:
            return percentile(values, fraction) if values else float("nan")

        return {
            "sent": self.sent,
            "answered": len(self.latencies_ms),
            "errors": dict(self.errors),
            "p50_ms": at(self.latencies_ms, 0.50),
            "p90_ms": at(self.latencies_ms, 0.90),
            "p99_ms": at(self.latencies_ms, 0.99),
            "max_ms": max(self.latencies_ms, default=float("nan")),
            "service_p99_ms": at(self.service_ms, 0.99),
            "max_age_ms": max(self.ages_ms, default=None),
            "agent_cpu_ms_per_query": 1000 * self.agent_cpu_s / self.sent if self.sent else 0.0,
        }


def connect(address: str) -> Any:
    """A PyMySQL connection to the endpoint at ``address`` (loopback: no password)."""
    host, port = address.rsplit(":", 1)
    return pymysql.connect(host=host, port=int(port), user="bench", password="", connect_timeout=5)


def wrong(rows: tuple[tuple[Any, ...], ...], names: list[str]) -> str | None:
    """What is wrong with an answer to :data:`QUERY`, None when it is right."""
    if names != list(REPLICATION_GROUP_MEMBER_STATS.column_names):
        return "columns"
    if len(rows) != MEMBERS:
        return f"{len(rows)} rows"
    return None


def watch_ages(address: str, stop: threading.Event, into: list[int]) -> None:
    """Read MAX(AGE_MS) once a second on a second connection until ``stop``."""
    with connect(address) as connection, connection.cursor() as cursor:
        while not stop.wait(1.0):
            cursor.execute(AGE_QUERY)
            (age,) = cursor.fetchone() or (None,)
            if age is not None:
                into.append(int(age))


def run_load(address: str, agent_pid: int, rate: int, seconds: float) -> Load:
    """One client, one connection, open-loop at ``rate`` for ``seconds``; ages watched."""
    load = Load()
    stop = threading.Event()
    watcher = threading.Thread(target=watch_ages, args=(address, stop, load.ages_ms))
    watcher.start()
    cpu_before = cpu_ticks(agent_pid)
    try:
        with connect(address) as connection, connection.cursor() as cursor:
            start = time.perf_counter() + 0.1
            for index in range(int(rate * seconds)):
                due = start + index / rate
                wait = due - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
                sent = time.perf_counter()
                load.sent += 1
                try:
                    cursor.execute(QUERY)
                    rows = cursor.fetchall()
                except pymysql.MySQLError as exc:
                    kind = type(exc).__name__
                    load.errors[kind] = load.errors.get(kind, 0) + 1
                    continue
                done = time.perf_counter()
                problem = wrong(rows, [d[0] for d in cursor.description or ()])
                if problem is not None:
                    load.errors[problem] = load.errors.get(problem, 0) + 1
                    continue
                load.latencies_ms.append((done - due) * 1000)
                load.service_ms.append((done - sent) * 1000)
    finally:
        stop.set()
        watcher.join()
    load.agent_cpu_s = (cpu_ticks(agent_pid) - cpu_before) / CLOCK_TICKS
    return load


def idle_cpu(group: list[AgentProcess], seconds: float) -> dict[str, float]:
    """CPU seconds per second of agent 0 (endpoint on, idle) and of the others' median."""
    before = [cpu_ticks(member.process.pid) for member in group]
    time.sleep(seconds)
    check_running(group)
    used = [
        (cpu_ticks(member.process.pid) - was) / CLOCK_TICKS / seconds
        for member, was in zip(group, before, strict=True)
    ]
    return {"endpoint_on": used[0], "endpoint_off_median": statistics.median(used[1:])}


def ms(value: float) -> str:
    """A duration in ms with two decimals."""
    return f"{value:,.2f} ms"


def print_pass(title: str, load: Load) -> tuple[bool, bool]:
    """One table of the pass; whether the latency and the age targets hold."""
    figures = load.summary()
    errors = ", ".join(f"{n} {what}" for what, n in figures["errors"].items()) or "0"
    print(f"### {title}\n")
    print(
        "| sent | answered | errors | p50 | p90 | p99 | max | p99 from send | max AGE_MS | agent CPU/query |"
    )
    print("|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|")
    print(
        f"| {figures['sent']:,} | {figures['answered']:,} | {errors} | {ms(figures['p50_ms'])} "
        f"| {ms(figures['p90_ms'])} | {ms(figures['p99_ms'])} | {ms(figures['max_ms'])} "
        f"| {ms(figures['service_p99_ms'])} | {figures['max_age_ms']} ms "
        f"| {figures['agent_cpu_ms_per_query']:.2f} ms |\n"
    )
    fast = not figures["errors"] and figures["p99_ms"] <= TARGET_P99_MS
    fresh = figures["max_age_ms"] is not None and figures["max_age_ms"] < TARGET_AGE_MS
    return fast, fresh


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the figures and the verdicts; exit 0 whatever they are."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=RATE, help=f"queries/s (default {RATE})")
    parser.add_argument(
        "--seconds", type=float, default=SECONDS, help=f"seconds of load (default {SECONDS:g})"
    )
    parser.add_argument(
        "--idle-seconds",
        type=float,
        default=IDLE_SECONDS,
        help=f"seconds of the idle CPU comparison (default {IDLE_SECONDS:g})",
    )
    parser.add_argument(
        "--own-core",
        action="store_true",
        help="also run with agent 0 alone on a core (as on a host of its own)",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results here")
    args = parser.parse_args(argv)
    print(f"# SQL endpoint ({MEMBERS} members)\n")
    print(
        f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f} at start; {MEMBERS} agent processes, agent 0 "
        f"with --sql-listen; `{QUERY}` at {args.rate}/s for {args.seconds:g} s from one "
        "PyMySQL connection, open-loop\n",
        flush=True,
    )
    (sql_port,) = free_ports(1)
    address = f"127.0.0.1:{sql_port}"
    group: list[AgentProcess] = []
    passes: dict[str, Load] = {}
    with tempfile.TemporaryDirectory(prefix="grstats-bench-sql-") as workdir:
        try:
            start_group(Path(workdir), group, first_extra=("--sql-listen", address))
            connect_s = asyncio.run(wait_connected(group))
            time.sleep(2 * PERIOD_S)
            idle = idle_cpu(group, args.idle_seconds)
            passes[SHARED] = run_load(address, group[0].process.pid, args.rate, args.seconds)
            check_running(group)
            if args.own_core and len(os.sched_getaffinity(0)) >= 2:
                with placed(group, own_core=True):
                    passes[OWN] = run_load(address, group[0].process.pid, args.rate, args.seconds)
                check_running(group)
        finally:
            stop_group(group)
    print(f"The group connected in {connect_s:.1f} s.\n")
    print(
        f"Idle for {args.idle_seconds:g} s: agent 0 (endpoint on, no client) "
        f"{idle['endpoint_on'] * 1000:.1f} ms of CPU a second; agents 1-8 (endpoint off) "
        f"median {idle['endpoint_off_median'] * 1000:.1f} ms a second.\n"
    )
    results = [(title, *print_pass(title, load)) for title, load in passes.items()]
    for title, fast, fresh in results:
        print(
            f"- p99 <= {TARGET_P99_MS:g} ms at {args.rate}/s, {title}: {'PASS' if fast else '**FAIL**'}"
        )
        print(
            f"- AGE_MS < {TARGET_AGE_MS:g} ms under the load, {title}: {'PASS' if fresh else '**FAIL**'}"
        )
    if args.json is not None:
        raw = {
            "rate": args.rate,
            "seconds": args.seconds,
            "members": MEMBERS,
            "python": platform.python_version(),
            "connect_s": connect_s,
            "idle_cpu_s_per_s": idle,
            "passes": {
                title: {
                    **load.summary(),
                    "latencies_ms": load.latencies_ms,
                    "ages_ms": load.ages_ms,
                }
                for title, load in passes.items()
            },
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
