"""Status query benchmark: ``grstats query status`` at 9 members, 200 a second (issue 13).

Nine agent processes of a simulated steady group (single-primary, 500 tps, 1 s period) run
``grstats agent`` on 127.0.0.1 over real gRPC, started 1/9 period apart. Once every agent lists
all 9 members as connected, a client in this process sends to the first agent, open-loop:

* **status**: ``Read(tables=["replication_group_status", "replication_group_member_status"])``,
  what ``grstats query status`` sends (plain tables, not extended);
* **members** (the peer figure): ``Read(tables=["replication_group_members"])``, the same load
  on MySQL's own table alone.

Each load runs at ``--rate`` requests a second for ``--seconds`` in all. The two alternate in
blocks of 10 s (status, members, status, ...), so that whatever else the machine does falls on
both alike. Open-loop: request ``i`` of a block is sent at ``start + i / rate`` whatever the
earlier ones do, and its latency counts from that **scheduled** time, so the client's own
lateness counts against the agent rather than hiding a stall (coordinated omission); the
latency from the actual send and the send lateness are reported beside it. Every answer is
checked: 1 status row whose STATUS is recorded, 9 member rows; a wrong answer or an error
(deadline 1 s) counts as an error. Target: status p99 <= 5 ms.

Why processes: the agents are the ``grstats agent`` command, each in its own process, and the
client is this process, so the client never shares an agent's event loop or interpreter lock
(a client on the agent's loop would queue its sends behind the agent's own work and measure
that). All of them share the machine's cores, as in ``bench_agent``: the figures include
waiting for a core while 8 other agents run their periods, which agents on hosts of their own
do not. Three options add a pass of both loads closer to that: ``--pin`` puts the queried agent
and the client on the first core and the other 8 agents on the second (``sched_setaffinity``,
as ``bench_agent`` does); ``--nice`` runs the other 8 agents at nice 19, so that they take a
core only when the queried agent and the client leave it (other work on the machine still
competes at its own priority); ``--own-core`` puts the queried agent alone on the first core and
the client with the 8 other agents on the second, those under ``SCHED_IDLE`` (they run when the
client leaves the core idle): the nearest this machine comes to the deployed setting, where
each agent runs on its member's host and clients elsewhere.
``--fixed`` has every agent read one fixed snapshot of its simulated member (``bench_agent``'s
fixed source) instead of stepping the simulated group in a thread of its own, which leaves the
agent's own work.

The machine's load is measured over each pass: its busy cores (``/proc/stat``) and, of those,
the CPU used by the agents and the client (``/proc/PID/stat``); the rest is other work. The
queried agent's CPU per query (its whole CPU time over the blocks of that load, divided by the
requests) is given for each load.

Run it from the repository's root as ``python -m tests.benchmarks.bench_status``: a few
seconds of start-up plus twice ``--seconds`` (twice more for each of ``--pin``, ``--nice``
and ``--own-core``). Linux only (/proc). The script exits 0 even when the target is missed
(it prints FAIL).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc

from grstats.cli.demo import free_ports
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc
from tests.benchmarks.bench_agent import (
    AS_AGENT,
    CLOCK_TICKS,
    AgentProcess,
    check_running,
    column,
    cpu_ticks,
    percentile,
    stop_group,
    wait_connected,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Iterator, Mapping

MEMBERS = 9
PERIOD_S = 1.0
SCENARIO = "steady"
RATE = 200
SECONDS = 30.0
BLOCK_S = 10.0
DEADLINE_S = 1.0
TARGET_P99_MS = 5.0
ROOT = Path(__file__).resolve().parents[2]  # the agents run with -m from here
SHARED = "All processes on every core"
PINNED = "Queried agent and client on core 0, the 8 other agents on core 1 (--pin)"
NICED = "The 8 other agents at nice 19 (--nice)"
OWN = "Queried agent alone on core 0; client, and the 8 other agents (SCHED_IDLE), on core 1 (--own-core)"
#: The loads, by name: the tables each request asks for.
LOADS = {
    "status": ("replication_group_status", "replication_group_member_status"),
    "members": ("replication_group_members",),
}


@dataclass
class Load:
    """What one load saw, over all its blocks."""

    tables: tuple[str, ...]
    sent: int = 0
    latencies_ms: list[float] = field(default_factory=list)  # from the scheduled time
    service_ms: list[float] = field(default_factory=list)  # from the actual send
    lateness_ms: list[float] = field(default_factory=list)  # actual send - scheduled time
    errors: Counter[str] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    agent_cpu_s: float = 0.0  # the queried agent's CPU time during the blocks

    def summary(self) -> dict[str, Any]:
        """Count, errors and percentiles in ms."""
        latencies = self.latencies_ms
        return {
            "tables": list(self.tables),
            "sent": self.sent,
            "answered": len(latencies),
            "errors": dict(self.errors),
            "statuses": dict(self.statuses),
            "p50_ms": percentile(latencies, 0.5),
            "p90_ms": percentile(latencies, 0.9),
            "p99_ms": percentile(latencies, 0.99),
            "max_ms": max(latencies, default=math.nan),
            "service_p99_ms": percentile(self.service_ms, 0.99),
            "lateness_p99_ms": percentile(self.lateness_ms, 0.99),
            "agent_cpu_ms_per_query": 1000 * self.agent_cpu_s / self.sent if self.sent else 0.0,
            "agent_cpu_percent": 100 * self.agent_cpu_s / self.seconds if self.seconds else 0.0,
        }


def start_group(
    workdir: Path,
    into: list[AgentProcess],
    *,
    fixed: bool = False,
    first_extra: tuple[str, ...] = (),
) -> None:
    """Start 9 ``grstats agent`` processes of one simulated group into ``into``.

    With ``fixed``, each agent reads one fixed snapshot of its simulated member instead
    (``bench_agent``'s ``--as-agent fixed``: a ``MemorySource``), without the simulator.
    ``first_extra`` are more options of the first agent's (the one measured).
    """
    ports = free_ports(MEMBERS)
    peers = ",".join(f"127.0.0.1:{port}" for port in ports)
    start = int(time.time())
    for index, port in enumerate(ports):
        log = workdir / f"agent-{index}.log"
        command = (
            ["-m", "tests.benchmarks.bench_agent", AS_AGENT, "fixed", str(workdir / "unused"), "--"]
            if fixed
            else ["-m", "grstats"]
        )
        arguments = [
            *(sys.executable, *command, "agent", "--source", "simulated"),
            *("--scenario", SCENARIO, "--members", str(MEMBERS), "--member-index", str(index)),
            *("--group-start", str(start), "--listen", f"127.0.0.1:{port}", "--peers", peers),
            *("--period", str(PERIOD_S), "--state-dir", str(workdir / f"state-{index}")),
            *("--log-format", "json"),
            *(first_extra if index == 0 else ()),
        ]
        with log.open("wb") as out:
            process = subprocess.Popen(arguments, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        into.append(AgentProcess(process, f"127.0.0.1:{port}", log, workdir / "unused"))
        time.sleep(PERIOD_S / MEMBERS)


def check(load: Load, answer: pb.QueryResponse) -> str | None:
    """What is wrong with ``answer`` to ``load``'s request, None when it is right."""
    names = [table.name for table in answer.tables]
    if names != list(load.tables):
        return f"tables {names}"
    if "replication_group_status" in names:
        group, members = answer.tables
        if len(group.rows) != 1:
            return f"{len(group.rows)} status rows"
        load.statuses[str(column(group, "STATUS")[0])] += 1
        if len(members.rows) != MEMBERS:
            return f"{len(members.rows)} member status rows"
    elif len(answer.tables[0].rows) != MEMBERS:
        return f"{len(answer.tables[0].rows)} member rows"
    return None


async def block(stub: pb_grpc.QueryStub, load: Load, rate: int, seconds: float) -> None:
    """Send ``rate`` requests a second for ``seconds``, each at its scheduled time."""
    loop = asyncio.get_running_loop()
    request = pb.QueryRequest(tables=list(load.tables))

    async def read(at: float) -> None:
        sent = loop.time()
        load.lateness_ms.append((sent - at) * 1000)
        try:
            answer = await stub.Read(request, timeout=DEADLINE_S)
        except grpc.aio.AioRpcError as exc:
            load.errors[exc.code().name] += 1
            return
        done = loop.time()
        wrong = check(load, answer)
        if wrong is not None:
            load.errors[wrong] += 1
            return
        load.latencies_ms.append((done - at) * 1000)
        load.service_ms.append((done - sent) * 1000)

    pending: set[asyncio.Task[None]] = set()
    count = round(rate * seconds)
    start = loop.time() + 0.05
    for index in range(count):
        at = start + index / rate
        if (delay := at - loop.time()) > 0:
            await asyncio.sleep(delay)
        task = loop.create_task(read(at))
        pending.add(task)
        task.add_done_callback(pending.discard)
    load.sent += count
    if pending:
        await asyncio.wait(pending, timeout=DEADLINE_S + 2)
    load.errors["unanswered"] += sum(not task.done() for task in pending)
    for task in pending:
        task.cancel()
    load.errors = +load.errors  # drop zero counts


async def run_loads(target: AgentProcess, rate: int, seconds: float) -> dict[str, Load]:
    """Both loads on ``target``, alternating in blocks of up to 10 s, ``seconds`` each."""
    loads = {name: Load(tables) for name, tables in LOADS.items()}
    blocks = max(1, math.ceil(seconds / BLOCK_S))
    length = seconds / blocks
    async with grpc.aio.insecure_channel(target.address) as channel:
        stub = pb_grpc.QueryStub(channel)
        for tables in LOADS.values():  # one warm-up answer each, outside the figures
            await stub.Read(pb.QueryRequest(tables=list(tables)), timeout=2)
        for _ in range(blocks):
            for load in loads.values():
                began, ticks = time.monotonic(), cpu_ticks(target.process.pid)
                await block(stub, load, rate, length)
                load.agent_cpu_s += (cpu_ticks(target.process.pid) - ticks) / CLOCK_TICKS
                load.seconds += time.monotonic() - began
                check_running([target])
    return loads


def machine_ticks() -> int:
    """Busy CPU ticks of the whole machine so far: all but idle and iowait (``/proc/stat``)."""
    line = Path("/proc/stat").read_text(encoding="ascii").split("\n", 1)[0]
    fields = [int(part) for part in line.split()[1:8]]  # user nice system idle iowait irq softirq
    return sum(fields) - fields[3] - fields[4]


@dataclass
class Pass:
    """Both loads in one setting, and the machine's load meanwhile (in cores)."""

    loads: dict[str, Load]
    busy_cores: float  # the whole machine
    our_cores: float  # the 9 agents and this client
    load_average: float  # 1-minute, at the end

    @property
    def other_cores(self) -> float:
        """Cores busy with other work than this benchmark's."""
        return max(0.0, self.busy_cores - self.our_cores)


async def measured(group: list[AgentProcess], run: Awaitable[dict[str, Load]]) -> Pass:
    """Await ``run`` and note how busy the machine was meanwhile, and with what."""
    pids = [*(member.process.pid for member in group), os.getpid()]
    ours, busy, began = sum(cpu_ticks(pid) for pid in pids), machine_ticks(), time.monotonic()
    loads = await run
    elapsed = time.monotonic() - began
    check_running(group)
    ours = sum(cpu_ticks(pid) for pid in pids) - ours
    return Pass(
        loads,
        busy_cores=(machine_ticks() - busy) / CLOCK_TICKS / elapsed,
        our_cores=ours / CLOCK_TICKS / elapsed,
        load_average=os.getloadavg()[0],
    )


async def measure(group: list[AgentProcess], args: argparse.Namespace) -> dict[str, Any]:
    """Wait for the group, then run the loads (again per option), each pass measured."""
    connect_s = await wait_connected(group)
    await asyncio.sleep(2 * PERIOD_S)  # a few periods of exchanges after connecting
    passes = {SHARED: await measured(group, run_loads(group[0], args.rate, args.seconds))}
    if args.pin and len(os.sched_getaffinity(0)) >= 2:
        passes[PINNED] = await measured(group, run_placed(group, args, own_core=False))
    if args.nice:
        passes[NICED] = await measured(group, run_niced(group, args))
    if args.own_core and len(os.sched_getaffinity(0)) >= 2:
        passes[OWN] = await measured(group, run_placed(group, args, own_core=True))
    return {"connect_s": connect_s, "passes": passes}


async def run_niced(group: list[AgentProcess], args: argparse.Namespace) -> dict[str, Load]:
    """Both loads with the 8 agents not queried at nice 19 (then back at 0)."""
    try:
        for member in group[1:]:
            os.setpriority(os.PRIO_PROCESS, member.process.pid, 19)
        return await run_loads(group[0], args.rate, args.seconds)
    finally:
        for member in group[1:]:
            if member.process.poll() is None:
                os.setpriority(os.PRIO_PROCESS, member.process.pid, 0)


@contextlib.contextmanager
def placed(group: list[AgentProcess], *, own_core: bool) -> Iterator[None]:
    """Place the processes on the first two cores (``--pin``, or ``--own-core``), then back.

    ``--pin``: the queried agent (``group[0]``) and this client on the first core, the 8 other
    agents on the second. ``--own-core``: the queried agent alone on the first core, as on a
    host of its own; this client and the 8 other agents on the second, those under
    ``SCHED_IDLE`` (they run only when the client leaves the core idle), so that the client's
    sends are not late behind their periods, as a client on another host would not be.
    """
    everywhere = os.sched_getaffinity(0)
    first, second = sorted(everywhere)[:2]
    try:
        os.sched_setaffinity(group[0].process.pid, {first})
        os.sched_setaffinity(0, {second} if own_core else {first})
        for member in group[1:]:
            os.sched_setaffinity(member.process.pid, {second})
            if own_core:
                os.sched_setscheduler(member.process.pid, os.SCHED_IDLE, os.sched_param(0))
        yield
    finally:
        for member in group[1:]:
            if own_core and member.process.poll() is None:
                os.sched_setscheduler(member.process.pid, os.SCHED_OTHER, os.sched_param(0))
        for pid in [0, *(member.process.pid for member in group)]:
            os.sched_setaffinity(pid, everywhere)


async def run_placed(
    group: list[AgentProcess], args: argparse.Namespace, *, own_core: bool
) -> dict[str, Load]:
    """Both loads with the processes :func:`placed` (``--pin`` or ``--own-core``)."""
    with placed(group, own_core=own_core):
        return await run_loads(group[0], args.rate, args.seconds)


def ms(value: float) -> str:
    """A duration in ms, two decimals, or - when not measured."""
    return "-" if math.isnan(value) else f"{value:,.2f} ms"


def print_pass(title: str, found: Pass) -> None:
    """One markdown table of the pass's loads, and the machine's load meanwhile."""
    loads = found.loads
    print(f"### {title}\n")
    print(
        "| load | tables | sent | answered | errors | p50 | p90 | p99 | max "
        "| p99 from send | send lateness p99 | agent CPU/query |"
    )
    print("|---|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|")
    for name, load in loads.items():
        figures = load.summary()
        errors = ", ".join(f"{n} {what}" for what, n in figures["errors"].items()) or "0"
        print(
            f"| {name} | {', '.join(load.tables)} | {figures['sent']:,} | {figures['answered']:,} "
            f"| {errors} | {ms(figures['p50_ms'])} | {ms(figures['p90_ms'])} "
            f"| {ms(figures['p99_ms'])} | {ms(figures['max_ms'])} | {ms(figures['service_p99_ms'])} "
            f"| {ms(figures['lateness_p99_ms'])} | {figures['agent_cpu_ms_per_query']:.2f} ms |"
        )
    statuses = loads["status"].statuses
    seen = ", ".join(f"{status} {n:,}" for status, n in statuses.items()) or "none"
    print(f"\nSTATUS in the answers: {seen}.")
    print(
        f"Machine meanwhile: {found.busy_cores:.2f} cores busy, of which {found.our_cores:.2f} "
        f"this benchmark's (9 agents and the client) and {found.other_cores:.2f} other work; "
        f"load average {found.load_average:.2f} at the end.\n"
    )


def verdict(loads: dict[str, Load]) -> tuple[float, bool]:
    """The status load's p99 and whether it meets the target (and had no error)."""
    found = loads["status"].summary()
    p99 = found["p99_ms"]
    return p99, not found["errors"] and found["answered"] == found["sent"] and p99 <= TARGET_P99_MS


def write_json(
    args: argparse.Namespace,
    load_average: tuple[float, float],
    passes: Mapping[str, Any],
    **more: Any,
) -> None:
    """Write the run's settings, ``more``, and each pass's figures to ``args.json``.

    A pass has ``busy_cores``, ``our_cores``, ``other_cores`` and ``loads``, each load a
    ``summary()`` and its ``latencies_ms`` (this script's :class:`Pass` and ``bench_scrape``'s).
    """
    raw = {
        "rate": args.rate,
        "seconds": args.seconds,
        "members": MEMBERS,
        "fixed": args.fixed,
        "load_average": list(load_average),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        **more,
        "passes": {
            title: {
                "busy_cores": each.busy_cores,
                "our_cores": each.our_cores,
                "other_cores": each.other_cores,
                "loads": {
                    name: {**load.summary(), "latencies_ms": load.latencies_ms}
                    for name, load in each.loads.items()
                },
            }
            for title, each in passes.items()
        },
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the figures and the verdict; exit 0 whatever they are."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=RATE, help=f"requests/s (default {RATE})")
    parser.add_argument(
        "--seconds", type=float, default=SECONDS, help=f"seconds of each load (default {SECONDS:g})"
    )
    parser.add_argument("--pin", action="store_true", help="also run with the agents pinned")
    parser.add_argument("--nice", action="store_true", help="also run with the others at nice 19")
    parser.add_argument(
        "--own-core",
        action="store_true",
        help="also run with the queried agent alone on a core (as on a host of its own)",
    )
    parser.add_argument(
        "--fixed", action="store_true", help="agents read a fixed snapshot (no simulator)"
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results here")
    args = parser.parse_args(argv)
    started_load = os.getloadavg()
    print(f"# Status queries ({MEMBERS} members)\n")
    print(
        f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {started_load[0]:.2f} at start; {MEMBERS} agent processes "
        f"({SCENARIO}{', fixed snapshot' if args.fixed else ''}, period {PERIOD_S:g} s); "
        f"{args.rate} requests/s for {args.seconds:g} s "
        "per load against agent 0, open-loop, latency from the scheduled send time\n",
        flush=True,
    )
    group: list[AgentProcess] = []
    with tempfile.TemporaryDirectory(prefix="grstats-bench-status-") as workdir:
        try:
            start_group(Path(workdir), group, fixed=args.fixed)
            found = asyncio.run(measure(group, args))
        finally:
            stop_group(group)
    ended_load = os.getloadavg()
    for title, each in found["passes"].items():
        print_pass(title, each)
    print(
        f"Load average {started_load[0]:.2f} at start, {ended_load[0]:.2f} at the end; the "
        f"group connected in {found['connect_s']:.1f} s.\n"
    )
    for title, each in found["passes"].items():
        p99, passed = verdict(each.loads)
        print(
            f"- status p99 <= {TARGET_P99_MS:g} ms at {args.rate}/s with no error, "
            f"{title[0].lower()}{title[1:]}: {ms(p99)}, {'PASS' if passed else '**FAIL**'}"
        )
    if args.json:
        write_json(args, (started_load[0], ended_load[0]), found["passes"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
