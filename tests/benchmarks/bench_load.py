"""Load benchmark: 500 queries a second for 60 s against one agent of a 5-agent group.

Five agent processes of a simulated steady group (1 s period) run on 127.0.0.1, started 1/5
period apart, and exchange as usual. Once every agent lists every member as connected, a
client in this process sends ``Read(replication_group_member_stats)`` to the first agent at
500 a second for 60 s, open-loop (each request at its scheduled time, whatever the earlier
ones do), with the agent's default ``[limits]``. Targets (issue 6, section 3):

1. **Exchange period jitter** of the queried agent under that load: its period starts are
   noted by the agent process itself (``--as-agent``: the agent's class is swapped for one that
   notes the wall clock as each period begins, and writes the notes out when it stops). The
   jitter of a start is how far the spacing from the previous start is from the period; p99
   under 100 ms. How late each start is after its whole-period mark is shown too.
2. **No query fails**: every request answered OK within 1 s, with the 5 members' rows.

Run it from the repository's root as ``python -m tests.benchmarks.bench_load``; with
``--as-agent RECORD -- ARGS`` it runs ``grstats ARGS`` as such an agent. The script exits 0
even when a target is missed (it prints FAIL).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import grpc

from grstats.agent.runtime import Agent
from grstats.cli import agent as command
from grstats.cli import main as grstats
from grstats.cli.demo import free_ports
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc
from tests.benchmarks.bench_agent import AgentProcess, percentile, stop_group

MEMBERS = 5
PERIOD_S = 1.0
QPS = 500
SECONDS = 60.0
STATS = "replication_group_member_stats"
QUERY_DEADLINE_S = 1.0
TARGET_JITTER_P99_MS = 100.0
AS_AGENT = "--as-agent"
ROOT = Path(__file__).resolve().parents[2]  # the agents run this module with -m from here


class PeriodAgent(Agent):
    """An agent that notes the wall clock (µs) at the start of each period."""

    record: Path | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.starts: list[int] = []

    async def run_period(self) -> None:
        self.starts.append(time.time_ns() // 1000)
        await super().run_period()

    async def stop(self, grace_s: float = 1.0) -> None:
        await super().stop(grace_s)
        if self.record is not None:
            self.record.write_text(json.dumps(self.starts), encoding="utf-8")


def run_as_agent(arguments: list[str]) -> int:
    """``--as-agent RECORD -- ARGS``: run ``grstats ARGS`` with :class:`PeriodAgent`."""
    record, _, *rest = arguments
    PeriodAgent.record = Path(record)
    command.Agent = PeriodAgent  # type: ignore[attr-defined]  # imported there, not exported
    return grstats(rest)


def start_group(workdir: Path) -> list[AgentProcess]:
    """Start the 5 agent processes, 1/5 period apart."""
    ports = free_ports(MEMBERS)
    peers = ",".join(f"127.0.0.1:{port}" for port in ports)
    start = int(time.time())
    group = []
    for index, port in enumerate(ports):
        log, record = workdir / f"agent-{index}.log", workdir / f"agent-{index}.json"
        arguments = [
            *(sys.executable, "-m", "tests.benchmarks.bench_load", AS_AGENT, str(record), "--"),
            *("agent", "--source", "simulated", "--scenario", "steady"),
            *("--members", str(MEMBERS), "--member-index", str(index)),
            *("--group-start", str(start), "--listen", f"127.0.0.1:{port}", "--peers", peers),
            *("--period", str(PERIOD_S), "--state-dir", str(workdir / f"state-{index}")),
            *("--log-format", "json"),
        ]
        with log.open("wb") as out:
            process = subprocess.Popen(arguments, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        group.append(AgentProcess(process, f"127.0.0.1:{port}", log, record))
        time.sleep(PERIOD_S / MEMBERS)
    return group


async def wait_connected(group: list[AgentProcess], timeout_s: float = 30) -> None:
    """Wait until every agent lists all 5 members as connected."""
    request = pb.QueryRequest(tables=["replication_group_members"], extended=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready = 0
        for member in group:
            if member.process.poll() is not None:
                raise RuntimeError(f"agent {member.address} exited: see {member.log}")
            async with grpc.aio.insecure_channel(member.address) as channel:
                try:
                    answer = await pb_grpc.QueryStub(channel).Read(request, timeout=1)
                except grpc.aio.AioRpcError:
                    continue
            table = answer.tables[0]
            at = list(table.columns).index("CONNECTED")
            cells = [row.cells[at].text for row in table.rows]
            ready += cells == ["YES"] * MEMBERS
        if ready == MEMBERS:
            return
        await asyncio.sleep(0.5)
    raise RuntimeError(f"the agents did not all connect within {timeout_s:g} s")


async def query_load(target: str, qps: int, seconds: float) -> dict[str, Any]:
    """Send ``qps`` reads a second for ``seconds``, open-loop; return latencies and failures."""
    latencies: list[float] = []
    failures: Counter[str] = Counter()
    loop = asyncio.get_running_loop()
    async with grpc.aio.insecure_channel(target) as channel:
        stub = pb_grpc.QueryStub(channel)
        request = pb.QueryRequest(tables=[STATS])

        async def read(at: float) -> None:
            try:
                answer = await stub.Read(request, timeout=QUERY_DEADLINE_S)
            except grpc.aio.AioRpcError as exc:
                failures[exc.code().name] += 1
                return
            latencies.append((loop.time() - at) * 1000)
            if len(answer.tables[0].rows) != MEMBERS:
                failures[f"{len(answer.tables[0].rows)} rows"] += 1

        pending: set[asyncio.Task[None]] = set()
        start = loop.time() + 0.05
        total = int(qps * seconds)
        for index in range(total):
            at = start + index / qps
            if (delay := at - loop.time()) > 0:
                await asyncio.sleep(delay)
            task = loop.create_task(read(at))
            pending.add(task)
            task.add_done_callback(pending.discard)
        if pending:
            await asyncio.wait(pending, timeout=QUERY_DEADLINE_S + 2)
        failures["unanswered"] += sum(not task.done() for task in pending)
    return {"sent": total, "latencies_ms": latencies, "failures": dict(+failures)}


def jitter(starts_us: list[int], since_us: int, until_us: int) -> dict[str, list[float]]:
    """Spacing jitter and lateness after the whole-period mark of the starts in the window, ms."""
    period_us = round(PERIOD_S * 1_000_000)
    window = [at for at in starts_us if since_us <= at <= until_us]
    spacing = [abs((b - a) - period_us) / 1000 for a, b in itertools.pairwise(window)]
    late = [(at % period_us) / 1000 for at in window]
    return {"spacing_ms": spacing, "late_ms": late}


def run(workdir: Path, qps: int, seconds: float) -> dict[str, Any]:
    """Start the group, load the first agent, stop the group; return what was measured."""
    group = start_group(workdir)
    try:
        asyncio.run(wait_connected(group))
        time.sleep(2 * PERIOD_S)
        since = time.time_ns() // 1000
        load = asyncio.run(query_load(group[0].address, qps, seconds))
        until = time.time_ns() // 1000
    finally:
        stop_group(group)
    figures = {}
    for index, member in enumerate(group):
        starts = json.loads(member.record.read_text(encoding="utf-8"))
        figures[index] = jitter(starts, since, until)
    return {"load": load, "agents": figures}


def ms(values: list[float], fraction: float) -> str:
    """A percentile of ``values`` in ms, one decimal."""
    return f"{percentile(values, fraction):.1f}"


def main(argv: list[str] | None = None) -> int:
    """Run the load, print the figures and the verdicts; exit 0 whatever they are."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--qps", type=int, default=QPS, help=f"query rate (default {QPS})")
    parser.add_argument("--seconds", type=float, default=SECONDS, help="load duration")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write raw results here")
    args = parser.parse_args(argv)
    load_average = os.getloadavg()[0]
    print("# Agent under query load")
    print(
        f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {load_average:.2f} at start; {MEMBERS} agents, period {PERIOD_S:g} s, "
        f"{args.qps} queries/s for {args.seconds:g} s against agent 0\n",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="grstats-bench-load-") as workdir:
        result = run(Path(workdir), args.qps, args.seconds)
    load = result["load"]
    latencies = load["latencies_ms"]
    print("| agent | periods | jitter p50 ms | p99 ms | max ms | late p50 ms | p99 ms |")
    print("|---|---|---|---|---|---|---|")
    for index, figures in result["agents"].items():
        spacing, late = figures["spacing_ms"], figures["late_ms"]
        name = f"{index} (queried)" if index == 0 else str(index)
        print(
            f"| {name} | {len(late)} | {ms(spacing, 0.5)} | {ms(spacing, 0.99)} | "
            f"{max(spacing, default=float('nan')):.1f} | {ms(late, 0.5)} | {ms(late, 0.99)} |"
        )
    answered = len(latencies)
    print(
        f"\nqueries: {load['sent']} sent, {answered} answered, failures {load['failures'] or 0}; "
        f"latency p50 {ms(latencies, 0.5)} ms, p99 {ms(latencies, 0.99)} ms, "
        f"max {max(latencies, default=float('nan')):.1f} ms\n"
    )
    queried = result["agents"][0]["spacing_ms"]
    jitter_p99 = percentile(queried, 0.99)
    jitter_ok = bool(queried) and jitter_p99 < TARGET_JITTER_P99_MS
    queries_ok = not load["failures"] and answered == load["sent"]
    print(
        f"- period jitter p99 of the queried agent {jitter_p99:.1f} ms "
        f"< {TARGET_JITTER_P99_MS:g} ms: {'PASS' if jitter_ok else 'FAIL'}"
    )
    print(
        f"- no query failed ({answered}/{load['sent']} answered): "
        f"{'PASS' if queries_ok else 'FAIL'}"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(run_as_agent(sys.argv[2:]) if sys.argv[1:2] == [AS_AGENT] else main())
