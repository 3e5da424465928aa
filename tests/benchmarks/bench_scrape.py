"""Scrape benchmark: ``/metrics`` of an agent at 9 members, as Prometheus scrapes it (issue 14).

Nine ``grstats agent`` processes of a simulated steady group (single-primary, 500 tps, 1 s
period) run on 127.0.0.1 over real gRPC, started as ``bench_status`` starts them; agent 0 also
serves ``/metrics`` (``--metrics-listen``). Once every agent lists all 9 members as connected,
a client in this process sends to agent 0, open-loop:

* **scrape**: ``GET /metrics`` with the headers Prometheus 2 sends (``Accept`` preferring
  OpenMetrics, ``Accept-Encoding: gzip``), a new connection each, as Prometheus does when it
  scrapes an exporter that closes connections;
* **query** (the peer figure): ``Query.Read`` of every table with the extended columns, the
  same members' rows through grstats' own gRPC service (``grstats query --extended``).

Each load runs at ``--rate`` requests a second for ``--seconds`` in all, the two alternating in
blocks of 10 s so that whatever else the machine does falls on both alike. Latency counts from
each request's **scheduled** time (coordinated omission), up to the whole answer read; every
answer is checked (HTTP 200 with every member's ``grstats_agent_up``; 9 member rows), and a
wrong answer, an error or no answer within 1 s counts as an error. Target: scrape p99 <= 5 ms.

The agent keeps the series it built while its state is unchanged and the build is younger
than 1 s (:mod:`grstats.agent.metrics`): a scrape either reuses them, without waiting for the
agent's loop, or builds them again there. The client tells the two apart by the
``grstats_row_age_seconds`` lines, which differ between builds (ages in ms), and reports both
kinds: at Prometheus' usual interval (15 s) every scrape finds a new state and builds. The
bytes of one scrape are recorded plain and gzipped (the agent serves the text format 0.0.4
whatever ``Accept`` asks for).

The machine's load is measured over the run, as ``bench_status`` does: busy cores
(``/proc/stat``) and, of those, the CPU of the 9 agents and the client; the rest is other
work. ``--pin`` adds a pass with agent 0 and the client on core 0 and the 8 other agents on
core 1; ``--own-core`` one with agent 0 alone on core 0 and the client with the 8 other agents
(``SCHED_IDLE``) on core 1, the nearest this machine comes to an agent on its member's host
scraped from elsewhere; ``--fixed`` has every agent read one fixed snapshot instead of
simulating the group.

Run it from the repository's root as ``python -m tests.benchmarks.bench_scrape``: a few
seconds of start-up plus twice ``--seconds`` (twice more for each of ``--pin`` and
``--own-core``). Linux only (/proc).
The script exits 0 even when the target is missed (it prints FAIL).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import http.client
import math
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from grstats.cli.demo import free_ports
from grstats.core.rows.schema import TABLES
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc
from tests.benchmarks.bench_agent import (
    CLOCK_TICKS,
    AgentProcess,
    check_running,
    cpu_ticks,
    percentile,
    stop_group,
    wait_connected,
)
from tests.benchmarks.bench_status import (
    MEMBERS,
    PERIOD_S,
    SCENARIO,
    machine_ticks,
    ms,
    placed,
    start_group,
    write_json,
)

RATE = 20
SECONDS = 30.0
BLOCK_S = 10.0
DEADLINE_S = 1.0
TARGET_P99_MS = 5.0
#: What Prometheus 2 asks an exporter for (scrape.go's acceptHeader), and its compression.
PROMETHEUS_HEADERS = {
    "Accept": "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
    "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
    "Accept-Encoding": "gzip",
}
AGE_LINE = b"grstats_row_age_seconds{"
UP_LINE = b"grstats_agent_up{"
SHARED = "All processes on every core"
PINNED = "Agent 0 and client on core 0, the 8 other agents on core 1 (--pin)"
OWN = "Agent 0 alone on core 0; client, and the 8 other agents (SCHED_IDLE), on core 1 (--own-core)"


@dataclass
class Load:
    """What one load saw, over all its blocks."""

    sent: int = 0
    latencies_ms: list[float] = field(default_factory=list)  # from the scheduled time
    built_ms: list[float] = field(default_factory=list)  # scrapes that found new series
    kept_ms: list[float] = field(default_factory=list)  # scrapes that reused the last ones
    wire_bytes: list[int] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    agent_cpu_s: float = 0.0
    last_ages: bytes = b""

    def summary(self) -> dict[str, Any]:
        """Counts, percentiles in ms, bytes and the agent's CPU per request."""
        return {
            "sent": self.sent,
            "answered": len(self.latencies_ms),
            "errors": dict(self.errors),
            "p50_ms": percentile(self.latencies_ms, 0.5),
            "p90_ms": percentile(self.latencies_ms, 0.9),
            "p99_ms": percentile(self.latencies_ms, 0.99),
            "max_ms": max(self.latencies_ms, default=math.nan),
            "built": len(self.built_ms),
            "built_p50_ms": percentile(self.built_ms, 0.5),
            "built_p99_ms": percentile(self.built_ms, 0.99),
            "kept_p99_ms": percentile(self.kept_ms, 0.99),
            "bytes_mean": sum(self.wire_bytes) / len(self.wire_bytes) if self.wire_bytes else 0,
            "agent_cpu_ms_per_request": 1000 * self.agent_cpu_s / self.sent if self.sent else 0.0,
        }


def get_metrics(address: str, headers: dict[str, str]) -> tuple[bytes, bytes]:
    """GET /metrics on a new connection; return the bytes on the wire and the text."""
    host, _, port = address.rpartition(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=DEADLINE_S)
    try:
        connection.request("GET", "/metrics", headers=headers)
        answer = connection.getresponse()
        wire = answer.read()
        if answer.status != 200:
            raise RuntimeError(f"HTTP {answer.status}")
        gzipped = answer.getheader("Content-Encoding") == "gzip"
    finally:
        connection.close()
    return wire, gzip.decompress(wire) if gzipped else wire


def scrape(address: str, load: Load, at: float) -> None:
    """One scrape scheduled at ``at`` (monotonic), timed and checked (in a worker thread)."""
    try:
        wire, text = get_metrics(address, PROMETHEUS_HEADERS)
    except (OSError, RuntimeError, http.client.HTTPException) as exc:
        load.errors[type(exc).__name__] += 1
        return
    latency = (time.monotonic() - at) * 1000
    if text.count(UP_LINE) != MEMBERS:
        load.errors[f"{text.count(UP_LINE)} members"] += 1
        return
    ages = b"\n".join(line for line in text.split(b"\n") if line.startswith(AGE_LINE))
    (load.built_ms if ages != load.last_ages else load.kept_ms).append(latency)
    load.last_ages = ages
    load.latencies_ms.append(latency)
    load.wire_bytes.append(len(wire))


async def scrape_block(address: str, load: Load, rate: int, seconds: float) -> None:
    """``rate`` scrapes a second for ``seconds``, each at its scheduled time, in threads."""
    loop = asyncio.get_running_loop()
    count = round(rate * seconds)
    pending = []
    with ThreadPoolExecutor(max_workers=8) as pool:
        start = time.monotonic() + 0.05
        for index in range(count):
            at = start + index / rate
            if (delay := at - time.monotonic()) > 0:
                await asyncio.sleep(delay)
            pending.append(loop.run_in_executor(pool, scrape, address, load, at))
        await asyncio.gather(*pending)
    load.sent += count


async def query_block(stub: pb_grpc.QueryStub, load: Load, rate: int, seconds: float) -> None:
    """``rate`` extended Reads of every table a second for ``seconds``, each at its time."""
    request = pb.QueryRequest(tables=list(TABLES), extended=True)

    async def read(at: float) -> None:
        try:
            answer = await stub.Read(request, timeout=DEADLINE_S)
        except grpc.aio.AioRpcError as exc:
            load.errors[exc.code().name] += 1
            return
        latency = (time.monotonic() - at) * 1000
        if len(answer.tables[0].rows) != MEMBERS:
            load.errors[f"{len(answer.tables[0].rows)} members"] += 1
            return
        load.latencies_ms.append(latency)
        load.wire_bytes.append(answer.ByteSize())

    count = round(rate * seconds)
    tasks = []
    start = time.monotonic() + 0.05
    for index in range(count):
        at = start + index / rate
        if (delay := at - time.monotonic()) > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(read(at)))
    await asyncio.gather(*tasks)
    load.sent += count


async def run_loads(
    agent: AgentProcess, metrics: str, rate: int, seconds: float
) -> dict[str, Load]:
    """Both loads on agent 0, alternating in blocks of up to 10 s, ``seconds`` each."""
    loads = {"scrape": Load(), "query": Load()}
    blocks = max(1, math.ceil(seconds / BLOCK_S))
    length = seconds / blocks
    pid = agent.process.pid
    async with grpc.aio.insecure_channel(agent.address) as channel:
        stub = pb_grpc.QueryStub(channel)
        await stub.Read(pb.QueryRequest(tables=list(TABLES), extended=True), timeout=2)  # warm-up
        for _ in range(blocks):
            for name, load in loads.items():
                began, ticks = time.monotonic(), cpu_ticks(pid)
                if name == "scrape":
                    await scrape_block(metrics, load, rate, length)
                else:
                    await query_block(stub, load, rate, length)
                load.agent_cpu_s += (cpu_ticks(pid) - ticks) / CLOCK_TICKS
                load.seconds += time.monotonic() - began
                check_running([agent])
    return loads


@dataclass
class Pass:
    """Both loads in one setting, and the machine's load meanwhile (in cores)."""

    loads: dict[str, Load]
    busy_cores: float
    our_cores: float
    load_average: float

    @property
    def other_cores(self) -> float:
        """Cores busy with other work than this benchmark's."""
        return max(0.0, self.busy_cores - self.our_cores)


async def measured(group: list[AgentProcess], metrics: str, args: argparse.Namespace) -> Pass:
    """Run both loads on agent 0 and note how busy the machine was meanwhile."""
    pids = [*(member.process.pid for member in group), os.getpid()]
    ours, busy, began = sum(cpu_ticks(pid) for pid in pids), machine_ticks(), time.monotonic()
    loads = await run_loads(group[0], metrics, args.rate, args.seconds)
    elapsed = time.monotonic() - began
    check_running(group)
    return Pass(
        loads,
        busy_cores=(machine_ticks() - busy) / CLOCK_TICKS / elapsed,
        our_cores=(sum(cpu_ticks(pid) for pid in pids) - ours) / CLOCK_TICKS / elapsed,
        load_average=os.getloadavg()[0],
    )


async def measure_placed(
    group: list[AgentProcess], metrics: str, args: argparse.Namespace, *, own_core: bool
) -> Pass:
    """A pass with agent 0 on core 0: with the client (``--pin``) or alone (``--own-core``).

    See :func:`tests.benchmarks.bench_status.placed`: with ``--own-core`` the 8 other agents
    run under ``SCHED_IDLE`` beside the client, as a Prometheus on another host is not late
    behind their periods.
    """
    with placed(group, own_core=own_core):
        return await measured(group, metrics, args)


def sizes(metrics: str) -> dict[str, int]:
    """The bytes of one scrape, plain and gzipped (as Prometheus gets it), and its samples."""
    plain, text = get_metrics(metrics, {})
    zipped, _ = get_metrics(metrics, PROMETHEUS_HEADERS)
    samples = [line for line in text.split(b"\n") if line and not line.startswith(b"#")]
    return {
        "text": len(plain),
        "gzip": len(zipped),
        "samples": len(samples),
        "member_samples": sum(b'member_id="' in line for line in samples),
    }


async def measure(
    group: list[AgentProcess], metrics: str, args: argparse.Namespace
) -> dict[str, Any]:
    """Wait for the group, note the sizes, then run the passes."""
    connect_s = await wait_connected(group)
    await asyncio.sleep(2 * PERIOD_S)
    found = await asyncio.to_thread(sizes, metrics)
    passes = {SHARED: await measured(group, metrics, args)}
    two_cores = len(os.sched_getaffinity(0)) >= 2
    if args.pin and two_cores:
        passes[PINNED] = await measure_placed(group, metrics, args, own_core=False)
    if args.own_core and two_cores:
        passes[OWN] = await measure_placed(group, metrics, args, own_core=True)
    return {"connect_s": connect_s, "sizes": found, "passes": passes}


def print_pass(title: str, found: Pass) -> None:
    """One markdown table of the pass's loads, and the machine's load meanwhile."""
    print(f"### {title}\n")
    print(
        "| load | sent | answered | errors | p50 | p90 | p99 | max | built (count, p50, p99) "
        "| reused p99 | bytes | agent CPU/request |"
    )
    print("|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for name, load in found.loads.items():
        got = load.summary()
        errors = ", ".join(f"{n} {what}" for what, n in got["errors"].items()) or "0"
        built = (
            f"{got['built']:,}, {ms(got['built_p50_ms'])}, {ms(got['built_p99_ms'])}"
            if name == "scrape"
            else "-"
        )
        reused = ms(got["kept_p99_ms"]) if name == "scrape" else "-"
        print(
            f"| {name} | {got['sent']:,} | {got['answered']:,} | {errors} | {ms(got['p50_ms'])} "
            f"| {ms(got['p90_ms'])} | {ms(got['p99_ms'])} | {ms(got['max_ms'])} | {built} "
            f"| {reused} | {got['bytes_mean']:,.0f} B | {got['agent_cpu_ms_per_request']:.2f} ms |"
        )
    print(
        f"\nMachine meanwhile: {found.busy_cores:.2f} cores busy, of which {found.our_cores:.2f} "
        f"this benchmark's (9 agents and the client) and {found.other_cores:.2f} other work; "
        f"load average {found.load_average:.2f} at the end.\n"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the figures and the verdict; exit 0 whatever they are."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=RATE, help=f"requests/s (default {RATE})")
    parser.add_argument(
        "--seconds", type=float, default=SECONDS, help=f"seconds of each load (default {SECONDS:g})"
    )
    parser.add_argument("--pin", action="store_true", help="also run with the agents pinned")
    parser.add_argument(
        "--own-core", action="store_true", help="also run with agent 0 alone on a core"
    )
    parser.add_argument(
        "--fixed", action="store_true", help="agents read a fixed snapshot (no simulator)"
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results here")
    args = parser.parse_args(argv)
    started_load = os.getloadavg()
    print(f"# Scrapes ({MEMBERS} members)\n")
    print(
        f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {started_load[0]:.2f} at start; {MEMBERS} agent processes "
        f"({SCENARIO}{', fixed snapshot' if args.fixed else ''}, period {PERIOD_S:g} s); "
        f"{args.rate} requests/s for {args.seconds:g} s per load against agent 0, open-loop, "
        "latency from the scheduled send time\n",
        flush=True,
    )
    group: list[AgentProcess] = []
    (port,) = free_ports(1)
    metrics = f"127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="grstats-bench-scrape-") as workdir:
        # Agent 0 alone is scraped: it exports every member's series (metrics.scope all).
        every_member = Path(workdir) / "scope-all.toml"
        every_member.write_text('[metrics]\nscope = "all"\n', encoding="utf-8")
        try:
            start_group(
                Path(workdir),
                group,
                fixed=args.fixed,
                first_extra=(
                    *("--metrics-listen", f"127.0.0.1:{port}"),
                    *("--config", str(every_member)),
                ),
            )
            found = asyncio.run(measure(group, metrics, args))
        finally:
            stop_group(group)
    ended_load = os.getloadavg()
    size = found["sizes"]
    print(
        f"One scrape: {size['text']:,} B of text 0.0.4, {size['gzip']:,} B gzipped (what "
        f"Prometheus receives); {size['samples']} samples, {size['member_samples']} of them with "
        "a member_id label.\n"
    )
    for title, each in found["passes"].items():
        print_pass(title, each)
    print(
        f"Load average {started_load[0]:.2f} at start, {ended_load[0]:.2f} at the end; the "
        f"group connected in {found['connect_s']:.1f} s.\n"
    )
    for title, each in found["passes"].items():
        got = each.loads["scrape"].summary()
        passed = not got["errors"] and got["answered"] == got["sent"]
        passed = passed and got["p99_ms"] <= TARGET_P99_MS
        print(
            f"- scrape p99 <= {TARGET_P99_MS:g} ms at {args.rate}/s with no error, "
            f"{title[0].lower()}{title[1:]}: {ms(got['p99_ms'])}, "
            f"{'PASS' if passed else '**FAIL**'}"
        )
    if args.json:
        write_json(args, (started_load[0], ended_load[0]), found["passes"], sizes=size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
