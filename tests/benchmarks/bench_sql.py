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

3. **Heavy statements** (issue 28): for ``--heavy-seconds`` each, one connection sends one
   of :data:`HEAVY` over and over (the heaviest statements the default ``[limits]`` refuse,
   and the heaviest they allow), while agent 1, a peer, is read over gRPC five times a second
   for the AGE_MS of agent 0's own member (the period's delay as the group sees it), and
   agent 0's RSS is sampled: before (idle), its peak, and 5 s after the statements stop.

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

import grpc
import pymysql  # type: ignore[import-untyped]

from grstats.agent.convert import uuid_from_bytes
from grstats.cli.demo import free_ports
from grstats.core.rows import REPLICATION_GROUP_MEMBER_STATS
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc
from tests.benchmarks.bench_agent import (
    CLOCK_TICKS,
    AgentProcess,
    check_running,
    column,
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
HEAVY_SECONDS = 15.0
#: A peer must see the member fresher than this while any statement runs (issue 28).
TARGET_PEER_AGE_MS = 1500
#: ... and agent 0's RSS must come back within this of its idle figure.
TARGET_RSS_MB = 50
FIVE_STATS = "SELECT COUNT(*) FROM " + ", ".join(  # noqa: S608  (the benchmark's own names)
    f"performance_schema.replication_group_member_stats s{index}" for index in range(5)
)
FOUR_STATS = "SELECT COUNT(*) FROM " + ", ".join(  # noqa: S608  (the benchmark's own names)
    f"performance_schema.replication_group_member_stats s{index}" for index in range(4)
)
#: The heaviest statements the default [limits] refuse, and the heaviest they allow
#: (limits.sql_max_cost bounds every statement before it starts: agent/sql/bounds.py).
HEAVY = {
    "refused: information_schema 3-way join (1104 before it runs)": (
        "SELECT COUNT(*) FROM information_schema.columns a, information_schema.columns b, "
        "information_schema.tables c"
    ),
    "refused: 40 KB SELECT 1+1+...+1 past max_allowed_packet (1153, dropped unread)": "SELECT "
    + "+".join(["1"] * 20_000),
    "refused: 16 KB SELECT 1+1+...+1 (1104/1436 before it is planned)": "SELECT "
    + "+".join(["1"] * 8_000),
    "refused: information_schema 3-way join, 51,960 combinations (1104: sql_max_cost)": (
        "SELECT COUNT(*) FROM information_schema.columns a, information_schema.tables b, "
        "information_schema.schemata c"
    ),
    "refused: 5-way join of the 9 members' stats, 59,049 combinations (1104)": FIVE_STATS,
    "allowed: 4-way join of the 9 members' stats (6,561 combinations)": FOUR_STATS,
    "allowed: SELECT 1+1+...+1 of 90 terms": "SELECT " + "+".join(["1"] * 90),
}


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


#: Issue 31's metadata statements, each with the rows it answers (MySQL's, see test_metadata).
METADATA = {
    "SHOW FULL COLUMNS FROM performance_schema.replication_group_member_stats": 13,
    "SHOW CREATE TABLE performance_schema.replication_group_member_stats": 1,
    "SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'performance_schema'": 31,  # 8 + 13 + 2 + 2 + the communication table's 6
}


def run_load(
    address: str,
    agent_pid: int,
    rate: int,
    seconds: float,
    *,
    query: str = QUERY,
    rows_expected: int | None = None,
) -> Load:
    """One client, one connection, open-loop at ``rate`` for ``seconds``; ages watched.

    Each answer to :data:`QUERY` is checked by :func:`wrong`; another ``query``'s by its row
    count, ``rows_expected``.
    """
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
                    cursor.execute(query)
                    rows = cursor.fetchall()
                except pymysql.MySQLError as exc:
                    kind = type(exc).__name__
                    load.errors[kind] = load.errors.get(kind, 0) + 1
                    continue
                done = time.perf_counter()
                if query == QUERY:
                    problem = wrong(rows, [d[0] for d in cursor.description or ()])
                else:
                    problem = None if len(rows) == rows_expected else f"{len(rows)} rows"
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


@dataclass
class Heavy:
    """What one heavy statement's pass saw."""

    outcomes: dict[str, int] = field(default_factory=dict)  # "ok" or the error code
    seconds: list[float] = field(default_factory=list)  # each statement's time
    peer_ages_ms: list[int] = field(default_factory=list)  # agent 0's member at agent 1
    rss_idle_mb: float = 0.0
    rss_peak_mb: float = 0.0
    rss_after_mb: float = 0.0


def rss_mb(pid: int) -> float:
    """The resident memory of process ``pid``, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def send_heavy(address: str, sql: str, seconds: float, into: Heavy) -> None:
    """Send ``sql`` over and over on one connection for ``seconds``."""
    host, port = address.rsplit(":", 1)
    connection = pymysql.connect(
        host=host, port=int(port), user="bench", password="", read_timeout=60
    )
    try:
        ends = time.monotonic() + seconds
        while time.monotonic() < ends:
            started = time.monotonic()
            try:
                with connection.cursor() as cursor:
                    cursor.execute(sql)
                    cursor.fetchall()
                outcome = "ok"
            except pymysql.MySQLError as exc:
                outcome = str(exc.args[0])
            into.seconds.append(time.monotonic() - started)
            into.outcomes[outcome] = into.outcomes.get(outcome, 0) + 1
    finally:
        connection.close()


async def run_heavy(group: list[AgentProcess], address: str, sql: str, seconds: float) -> Heavy:
    """One heavy pass: the statement sent for ``seconds``; a peer's AGE_MS and RSS watched."""
    heavy = Heavy()
    pid = group[0].process.pid
    heavy.rss_idle_mb = heavy.rss_peak_mb = rss_mb(pid)
    request = pb.QueryRequest(tables=["replication_group_member_stats"], extended=True)
    async with (
        grpc.aio.insecure_channel(group[0].address) as own,
        grpc.aio.insecure_channel(group[1].address) as peer,
    ):
        first = await pb_grpc.QueryStub(own).Read(request, timeout=2)
        member = uuid_from_bytes(first.member, "member")
        stub = pb_grpc.QueryStub(peer)
        sender = asyncio.create_task(asyncio.to_thread(send_heavy, address, sql, seconds, heavy))
        while not sender.done():
            await asyncio.sleep(0.2)
            heavy.rss_peak_mb = max(heavy.rss_peak_mb, rss_mb(pid))
            try:
                answer = await stub.Read(request, timeout=1)
            except grpc.aio.AioRpcError:
                continue
            table = answer.tables[0]
            ages = zip(column(table, "AGE_MS"), column(table, "MEMBER_ID"), strict=True)
            heavy.peer_ages_ms += [age for age, who in ages if who == member and age is not None]
        await sender
    await asyncio.sleep(5)
    heavy.rss_after_mb = rss_mb(pid)
    return heavy


def print_heavy(passes: dict[str, Heavy]) -> bool:
    """The heavy statements' table; whether every pass kept the targets."""
    print("### Heavy statements\n")
    print(
        "| statement | outcomes | median time | max AGE_MS at a peer | RSS idle | peak | 5 s after |"
    )
    print("|---|---|--:|--:|--:|--:|--:|")
    kept = True
    for title, heavy in passes.items():
        outcomes = ", ".join(f"{n} x {what}" for what, n in heavy.outcomes.items())
        age = max(heavy.peer_ages_ms, default=None)
        median = statistics.median(heavy.seconds) if heavy.seconds else float("nan")
        print(
            f"| {title} | {outcomes} | {median:.2f} s | {age} ms | {heavy.rss_idle_mb:.0f} MB "
            f"| {heavy.rss_peak_mb:.0f} MB | {heavy.rss_after_mb:.0f} MB |"
        )
        kept = kept and age is not None and age < TARGET_PEER_AGE_MS
        kept = kept and heavy.rss_after_mb - heavy.rss_idle_mb < TARGET_RSS_MB
    print()
    return kept


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


def main(argv: list[str] | None = None) -> int:  # noqa: PLR0915  (one pass after another)
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
    parser.add_argument(
        "--heavy-seconds",
        type=float,
        default=HEAVY_SECONDS,
        help=f"seconds of each heavy statement, 0 for none (default {HEAVY_SECONDS:g})",
    )
    parser.add_argument("--only-heavy", action="store_true", help="skip the idle and load passes")
    parser.add_argument(
        "--metadata",
        action="store_true",
        help="also a load pass of each metadata statement (SHOW FULL COLUMNS, ...)",
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
    heavies: dict[str, Heavy] = {}
    idle = {"endpoint_on": float("nan"), "endpoint_off_median": float("nan")}
    with tempfile.TemporaryDirectory(prefix="grstats-bench-sql-") as workdir:
        try:
            start_group(Path(workdir), group, first_extra=("--sql-listen", address))
            connect_s = asyncio.run(wait_connected(group))
            time.sleep(2 * PERIOD_S)
            if not args.only_heavy:
                idle = idle_cpu(group, args.idle_seconds)
                passes[SHARED] = run_load(address, group[0].process.pid, args.rate, args.seconds)
                check_running(group)
            if args.metadata:
                for sql, count in METADATA.items():
                    passes[sql] = run_load(
                        address,
                        group[0].process.pid,
                        args.rate,
                        args.seconds,
                        query=sql,
                        rows_expected=count,
                    )
                    check_running(group)
            if args.heavy_seconds > 0:
                for title, sql in HEAVY.items():
                    heavies[title] = asyncio.run(run_heavy(group, address, sql, args.heavy_seconds))
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
    heavy_kept = print_heavy(heavies) if heavies else None
    for title, fast, fresh in results:
        print(
            f"- p99 <= {TARGET_P99_MS:g} ms at {args.rate}/s, {title}: {'PASS' if fast else '**FAIL**'}"
        )
        print(
            f"- AGE_MS < {TARGET_AGE_MS:g} ms under the load, {title}: {'PASS' if fresh else '**FAIL**'}"
        )
    if heavy_kept is not None:
        print(
            f"- a peer's AGE_MS of agent 0 < {TARGET_PEER_AGE_MS} ms and RSS back within "
            f"{TARGET_RSS_MB} MB while heavy statements run: {'PASS' if heavy_kept else '**FAIL**'}"
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
            "heavy": {title: vars(heavy) for title, heavy in heavies.items()},
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
