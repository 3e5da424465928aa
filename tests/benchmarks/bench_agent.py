"""Agent benchmarks: propagation, query latency under load, CPU and RSS at 9 members, bytes.

The issue's targets (section 7), each measured here and printed with PASS or FAIL. Everything
but the bytes runs 9 agent processes of a simulated steady group (500 tps) with a 1 s period on
127.0.0.1, started 1/9 period apart so that their periods spread over the second as on
independent hosts, and stopped at the end, also on errors.

1. **Propagation.** A sample is one COUNTS value of one member: from the moment its agent read
   it (the value's ``sent_at_us``, taken before the source is read) until every other agent
   holds that value (the same stamp). The agents record both in memory and write them out when
   they stop. A change in the member's server waits for the next read, at most one period,
   before that: so a change is visible everywhere within one period plus this figure. Target:
   p99 <= period + 50 ms. Shown with the group otherwise idle and during the query load.
2. **Query latency** at 200 queries per second against one agent,
   ``Read(replication_group_member_stats)`` from a client in this process, paced open-loop: each
   request is sent at its scheduled time without waiting for earlier ones, and its latency
   counts from that scheduled time. Target: p99 <= 5 ms. Two requests a second ask for the
   extended columns: AGE_MS of the other members' rows at the queried agent, and of the queried
   member's row at a neighbour, must stay under 2 periods (queries never hold up the exchange,
   WL#3656 F5).
3. **CPU and RSS** of the same processes, before the query load: CPU time (utime + stime of
   /proc/PID/stat, every thread) over a window after a warm-up, as a share of one core; RSS is
   the largest VmRSS of /proc/PID/status sampled. Then the same for 9 agents whose source returns
   one fixed snapshot (``MemorySource``), which leaves out the simulator's cost. Target: at most
   1% of one core per agent.
4. **Bytes** of one counts message: grstats' wire (``update_to_wire``) against MySQL's own
   encoding of the same values (``tests.agent.pipeline_stats.encode``, 8.0 and 8.4). Target: at most
   a third of MySQL's bytes.

The agent processes run ``grstats agent`` (``grstats.cli``) through this script, which
swaps in the recording agent or the fixed source first: ``python -m tests.benchmarks.bench_agent --as-agent MODE
RECORD -- ARGS``. Linux only (/proc). The script exits 0 even when a target fails: it
measures, and prints FAIL where a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc

from grstats.agent.convert import update_to_wire, uuid_from_bytes
from grstats.agent.gossip import Counts, Key, Stamp, Update
from grstats.agent.runtime import Agent
from grstats.agent.sim.group import TICK_US
from grstats.agent.sim.views import snapshot
from grstats.agent.sources import MemorySource
from grstats.cli import agent as command
from grstats.cli import main as grstats
from grstats.cli.demo import free_ports
from grstats.core.query_wire import table_from_wire
from grstats.core.rows import MemberStatsRow
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc
from tests.agent.pipeline_stats import PipelineStats, encode
from tests.benchmarks.heading import print_heading

ROOT = Path(__file__).resolve().parents[2]  # the agents run this module with -m from here

if TYPE_CHECKING:
    from grstats.agent.config import AgentConfig
    from grstats.agent.gossip import MergeResult

MEMBERS = 9
PERIOD_S = 1.0
SCENARIO = "steady"  # single-primary, 500 tps
QPS = 200
STATS = "replication_group_member_stats"
TARGET_MARGIN_MS = 50.0  # propagation p99 <= period + 50 ms
TARGET_QUERY_P99_MS = 5.0
TARGET_CPU_PERCENT = 1.0
FRESH_PERIODS = 2  # AGE_MS under load stays below this many periods
QUERY_DEADLINE_S = 1.0
PROBES_PER_SECOND = 2  # extended queries among the load, for AGE_MS
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
AS_AGENT = "--as-agent"  # run as one agent process (see the module docstring)

# A stats row of a member 30 days into a 500 tps workload (counters of 10 digits).
MEMBER = "d8a706aa-16ee-11eb-8b4c-0800270d5e61"
GROUP = "8a84f397-aaa4-18df-89ab-c70aa9823561"
DAYS = 30
TRANSACTIONS = 500 * 86_400 * DAYS


def percentile(values: list[float], fraction: float) -> float:
    """Return the nearest-rank percentile (``fraction`` of 1) of ``values``; NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def change_to_all_ms(read_to_all_ms: list[float], fraction: float) -> float:
    """Percentile of a change's time until every agent holds it.

    A change in the member's server waits for its agent's next read, a wait spread evenly over
    the period (reads are periodic, changes are not tied to them), then takes the read-to-all
    time: the distribution of the sum, over 100 evenly spaced waits per sample.
    """
    steps = 100
    waits = [PERIOD_S * 1000 * (step + 0.5) / steps for step in range(steps)]
    return percentile([wait + ms for ms in read_to_all_ms for wait in waits], fraction)


# -- inside an agent process ---------------------------------------------------------------


class TimedAgent(Agent):
    """An agent that notes when it read each COUNTS value and when it first held the others'.

    A few dict operations per COUNTS value merged, in memory; written to ``record`` (JSON)
    when it stops.
    """

    record: Path | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.produced: dict[tuple[int, int], int] = {}  # own stamp -> read at, µs
        self.held: dict[tuple[str, int, int], int] = {}  # origin, stamp -> first held at, µs
        merge = self.rounds.merge  # where every update from a peer enters the state

        def timed_merge(
            updates: list[Update], via: str, sender_member: str = "", *, sent: bool = False
        ) -> MergeResult:
            result = merge(updates, via, sender_member, sent=sent)
            self._note_held(updates)
            return result

        self.rounds.merge = timed_merge  # type: ignore[method-assign]

    async def _read_source(self) -> None:
        await super()._read_source()
        heard = self.state.value(self.member_id, Key.COUNTS)
        if heard is not None:
            stamp = heard.update.stamp
            self.produced.setdefault((stamp.incarnation, stamp.version), heard.update.sent_at_us)

    def _note_held(self, updates: list[Update]) -> None:
        for update in updates:
            if update.key is not Key.COUNTS or update.origin == self.member_id:
                continue
            heard = self.state.value(update.origin, Key.COUNTS)
            if heard is not None and heard.update.stamp == update.stamp:
                key = (update.origin, update.stamp.incarnation, update.stamp.version)
                self.held.setdefault(key, heard.received_at_us)

    async def stop(self, grace_s: float = 1.0) -> None:
        await super().stop(grace_s)
        self.write_record()

    def write_record(self) -> None:
        """Write what was noted to ``record``."""
        if self.record is not None:
            noted = {
                "member": self.member_id,
                "produced": [[*stamp, at] for stamp, at in self.produced.items()],
                "held": [[*key, at] for key, at in self.held.items()],
            }
            self.record.write_text(json.dumps(noted), encoding="utf-8")


def fixed_source(config: AgentConfig) -> MemorySource:
    """A source that always returns the snapshot the simulated member shows at start."""
    assert config.simulated is not None
    simulated = config.simulated.build()
    group = simulated.group
    group.advance_to((time.time_ns() // 1000 - group.start_us) // TICK_US)
    return MemorySource(snapshot(group, simulated.member_index))


def run_as_agent(arguments: list[str]) -> int:
    """``--as-agent MODE RECORD -- ARGS``: run ``grstats ARGS``, timed or with a fixed source."""
    mode, record, _, *rest = arguments
    if mode == "fixed":
        command.build_source = fixed_source
    else:
        TimedAgent.record = Path(record)
        command.Agent = TimedAgent  # type: ignore[attr-defined]  # imported there, not exported
    return grstats(rest)


# -- agent processes -------------------------------------------------------------------------


@dataclass
class AgentProcess:
    """One agent process of a group, its address, its log and its record."""

    process: subprocess.Popen[bytes]
    address: str
    log: Path
    record: Path


def start_group(workdir: Path, mode: str, into: list[AgentProcess]) -> None:
    """Start 9 agent processes (``mode`` timed or fixed) into ``into``, 1/9 period apart."""
    ports = free_ports(MEMBERS)
    peers = ",".join(f"127.0.0.1:{port}" for port in ports)
    start = int(time.time())
    for index, port in enumerate(ports):
        log, record = workdir / f"{mode}-{index}.log", workdir / f"{mode}-{index}.json"
        arguments = [
            *(
                sys.executable,
                "-m",
                "tests.benchmarks.bench_agent",
                AS_AGENT,
                mode,
                str(record),
                "--",
            ),
            *("agent", "--source", "simulated", "--scenario", SCENARIO),
            *("--members", str(MEMBERS), "--member-index", str(index)),
            *("--group-start", str(start), "--listen", f"127.0.0.1:{port}", "--peers", peers),
            *("--period", str(PERIOD_S), "--state-dir", str(workdir / f"{mode}-state-{index}")),
            *("--log-format", "json"),
        ]
        with log.open("wb") as out:
            process = subprocess.Popen(arguments, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        into.append(AgentProcess(process, f"127.0.0.1:{port}", log, record))
        time.sleep(PERIOD_S / MEMBERS)


def stop_group(group: list[AgentProcess]) -> None:
    """SIGTERM every process still running, then wait (SIGKILL after 10 s)."""
    for member in group:
        if member.process.poll() is None:
            member.process.send_signal(signal.SIGTERM)
    for member in group:
        try:
            member.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            member.process.kill()
            member.process.wait()


def propagation(group: list[AgentProcess], since_us: int, until_us: int) -> dict[str, Any]:
    """Read-to-everywhere of the values read in [since, until), in ms, from the records."""
    produced: dict[tuple[str, int, int], int] = {}
    held: dict[tuple[str, int, int], dict[str, int]] = {}
    for member in group:
        if not member.record.exists():
            continue  # killed: it wrote nothing, and its values count as not held
        noted = json.loads(member.record.read_text(encoding="utf-8"))
        for incarnation, version, at in noted["produced"]:
            produced[noted["member"], incarnation, version] = at
        for origin, incarnation, version, at in noted["held"]:
            held.setdefault((origin, incarnation, version), {})[noted["member"]] = at
    samples, replaced = [], 0
    for key, read_at in produced.items():
        if not since_us <= read_at < until_us:
            continue
        arrivals = held.get(key, {})
        if len(arrivals) < MEMBERS - 1:
            replaced += 1  # a newer value reached some agent first (or an agent wrote nothing)
            continue
        samples.append((max(arrivals.values()) - read_at) / 1000)
    return {"samples_ms": samples, "replaced": replaced}


def check_running(group: list[AgentProcess]) -> None:
    """Raise if an agent process exited."""
    for member in group:
        if member.process.poll() is not None:
            raise RuntimeError(f"agent {member.address} exited: see {member.log.name}")


def log_events(member: AgentProcess, event: str) -> int:
    """Count the JSON log lines of ``event`` the agent wrote so far."""
    text = member.log.read_text(encoding="utf-8", errors="replace")
    return text.count(f'"event": "{event}"') + text.count(f'"event":"{event}"')


def failures(member: AgentProcess) -> int:
    """Count the failed pushes and exchanges the agent logged so far."""
    return log_events(member, "peer_exchange_failed") + log_events(member, "peer_push_failed")


def cpu_ticks(pid: int) -> int:
    """Return utime + stime of the process (all its threads), in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def rss_kib(pid: int) -> int:
    """Return VmRSS of the process, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def column(table: pb.Table, name: str) -> list[Any]:
    """Return the values of column ``name`` of a wire table."""
    names, rows = table_from_wire(table)
    at = names.index(name)
    return [row[at] for row in rows]


async def wait_connected(group: list[AgentProcess], timeout_s: float = 30) -> float:
    """Wait until every agent lists every member as connected; return the seconds it took."""
    started = time.monotonic()
    request = pb.QueryRequest(tables=["replication_group_members"], extended=True)
    while time.monotonic() - started < timeout_s:
        check_running(group)
        ready = 0
        for member in group:
            async with grpc.aio.insecure_channel(member.address) as channel:
                try:
                    response = await pb_grpc.QueryStub(channel).Read(request, timeout=1)
                except grpc.aio.AioRpcError:
                    continue
            connected = column(response.tables[0], "CONNECTED")
            ready += len(connected) == MEMBERS and all(c == "YES" for c in connected)
        if ready == MEMBERS:
            return time.monotonic() - started
        await asyncio.sleep(0.5)
    raise RuntimeError(f"the agents did not all connect within {timeout_s:g} s")


async def measure_cpu(group: list[AgentProcess], warmup: float, seconds: float) -> dict[str, Any]:
    """After ``warmup``, sample CPU time and RSS of each process for ``seconds``."""
    await asyncio.sleep(warmup)
    check_running(group)
    pids = [member.process.pid for member in group]
    rss = [rss_kib(pid) for pid in pids]
    since_us = time.time_ns() // 1000
    began, ticks = time.monotonic(), [cpu_ticks(pid) for pid in pids]
    end = began + seconds
    while (now := time.monotonic()) < end:
        await asyncio.sleep(min(5.0, end - now))
        rss = [max(kib, rss_kib(pid)) for kib, pid in zip(rss, pids, strict=True)]
    elapsed = time.monotonic() - began
    spent = [cpu_ticks(pid) - before for pid, before in zip(pids, ticks, strict=True)]
    check_running(group)
    return {
        "cpu_percent": [100 * tick / CLOCK_TICKS / elapsed for tick in spent],
        "rss_mib": [kib / 1024 for kib in rss],
        "seconds": elapsed,
        "window_us": (since_us, time.time_ns() // 1000),
    }


@dataclass
class Load:
    """What the query load saw."""

    sent: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    lateness_ms: list[float] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)
    ages_here_ms: list[int] = field(default_factory=list)  # oldest other row, queried agent
    ages_there_ms: list[int] = field(default_factory=list)  # queried member's row, neighbour


class QueryClient:
    """Open-loop load on one agent, with AGE_MS probes there and at a neighbour."""

    def __init__(self, target: grpc.aio.Channel, neighbour: grpc.aio.Channel, qps: int) -> None:
        self.stub = pb_grpc.QueryStub(target)
        self.neighbour = pb_grpc.QueryStub(neighbour)
        self.qps = qps
        self.probe_every = max(1, qps // PROBES_PER_SECOND)
        self.member = ""  # the queried agent's member
        self.load = Load()

    async def read(self, index: int, at: float) -> None:
        """Send request ``index`` (scheduled at loop time ``at``); note its latency from ``at``."""
        loop, load = asyncio.get_running_loop(), self.load
        extended = index % self.probe_every == 0
        load.lateness_ms.append((loop.time() - at) * 1000)
        request = pb.QueryRequest(tables=[STATS], extended=extended)
        try:
            response = await self.stub.Read(request, timeout=QUERY_DEADLINE_S)
        except grpc.aio.AioRpcError as exc:
            load.failures[exc.code().name] += 1
            return
        load.latencies_ms.append((loop.time() - at) * 1000)
        table = response.tables[0]
        if len(table.rows) != MEMBERS:
            load.failures[f"{len(table.rows)} rows, not {MEMBERS}"] += 1
        if extended:
            ages = zip(column(table, "AGE_MS"), column(table, "SOURCE"), strict=True)
            others = [age for age, source in ages if source != "local" and age is not None]
            if others:
                load.ages_here_ms.append(max(others))

    async def probe(self) -> None:
        """Note the AGE_MS of the queried member's row at the neighbour."""
        request = pb.QueryRequest(tables=[STATS], extended=True)
        try:
            response = await self.neighbour.Read(request, timeout=QUERY_DEADLINE_S)
        except grpc.aio.AioRpcError:
            return
        table = response.tables[0]
        ages = zip(column(table, "AGE_MS"), column(table, "MEMBER_ID"), strict=True)
        self.load.ages_there_ms.extend(
            age for age, member in ages if member == self.member and age is not None
        )

    async def run(self, seconds: float) -> Load:
        """Send ``qps`` requests a second for ``seconds``, each at its time; wait for answers."""
        loop = asyncio.get_running_loop()
        first = await self.stub.Read(pb.QueryRequest(tables=[STATS]), timeout=2)
        self.member = uuid_from_bytes(first.member, "member")
        pending: set[asyncio.Task[None]] = set()
        start = loop.time() + 0.05
        for index in range(int(self.qps * seconds)):
            at = start + index / self.qps
            if (delay := at - loop.time()) > 0:
                await asyncio.sleep(delay)
            calls = [self.read(index, at)]
            if index % self.probe_every == 0:
                calls.append(self.probe())
            for call in calls:
                task = loop.create_task(call)
                pending.add(task)
                task.add_done_callback(pending.discard)
            self.load.sent += 1
        if pending:
            await asyncio.wait(pending, timeout=QUERY_DEADLINE_S + 2)
        self.load.failures["unanswered"] += sum(not task.done() for task in pending)
        for task in pending:
            task.cancel()
        self.load.failures = +self.load.failures  # drop zero counts
        return self.load


async def query_load(target: str, neighbour: str, qps: int, seconds: float) -> Load:
    """Send ``qps`` Read requests a second to ``target`` for ``seconds``, open-loop."""
    async with (
        grpc.aio.insecure_channel(target) as channel,
        grpc.aio.insecure_channel(neighbour) as other,
    ):
        return await QueryClient(channel, other, qps).run(seconds)


async def measure_simulated_group(
    group: list[AgentProcess], args: argparse.Namespace
) -> dict[str, Any]:
    """Connect, measure CPU and RSS with no queries, then run the query load."""
    connect_s = await wait_connected(group)
    cpu = await measure_cpu(group, args.warmup, args.cpu_seconds)
    target, neighbour = group[0], group[1]
    overruns = log_events(target, "period_overrun")
    failed = sum(failures(member) for member in group)
    since_us, began, ticks = time.time_ns() // 1000, time.monotonic(), cpu_ticks(target.process.pid)
    load = await query_load(target.address, neighbour.address, args.qps, args.query_seconds)
    check_running(group)
    spent = (cpu_ticks(target.process.pid) - ticks) / CLOCK_TICKS
    return {
        "target_cpu_percent": 100 * spent / (time.monotonic() - began),
        "connect_s": connect_s,
        "cpu": cpu,
        "load": load,
        "load_window_us": (since_us, time.time_ns() // 1000),
        "overruns": log_events(target, "period_overrun") - overruns,
        "exchange_failures": sum(failures(m) for m in group) - failed,
    }


async def measure_fixed_group(
    group: list[AgentProcess], args: argparse.Namespace
) -> dict[str, Any]:
    """Connect, measure CPU and RSS, then run the query load (without the simulator's cost).

    The load runs twice: with every process free to run on both cores, then with the queried
    agent and this client on core 0 and the 8 other agents on core 1, closer to agents on
    hosts of their own (the others' periods, which start together, no longer take the queried
    agent's core).
    """
    await wait_connected(group)
    cpu = await measure_cpu(group, args.warmup, args.cpu_seconds)
    load = await query_load(group[0].address, group[1].address, args.qps, args.query_seconds)
    everywhere = os.sched_getaffinity(0)
    pinned = None
    if len(everywhere) >= 2:
        first, second = sorted(everywhere)[:2]
        try:
            for pid, cores in [(0, {first}), (group[0].process.pid, {first})] + [
                (member.process.pid, {second}) for member in group[1:]
            ]:
                os.sched_setaffinity(pid, cores)
            pinned = await query_load(
                group[0].address, group[1].address, args.qps, args.query_seconds
            )
        finally:
            for pid in [0, *(member.process.pid for member in group)]:
                os.sched_setaffinity(pid, everywhere)
    check_running(group)
    return {**cpu, "load": load, "pinned_load": pinned}


def run_group(workdir: Path, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """Start a group of agent processes, measure it, and always stop it."""
    group: list[AgentProcess] = []
    try:
        start_group(workdir, mode, group)
        measure = measure_fixed_group if mode == "fixed" else measure_simulated_group
        found = asyncio.run(measure(group, args))
    finally:
        stop_group(group)
    if mode == "timed":  # the records are written as the agents stop
        found["idle"] = propagation(group, *found["cpu"]["window_us"])
        found["loaded"] = propagation(group, *found["load_window_us"])
    return found


# -- 4. message bytes ------------------------------------------------------------------------


def message_sizes() -> list[dict[str, Any]]:
    """Return our bytes and MySQL's (8.0, 8.4) for a counts message, with and without GTIDs."""
    now = time.time_ns() // 1000
    small = MemberStatsRow(  # the values tests/agent/test_convert.py pins
        member_id=MEMBER,
        count_transactions_checked=10154,
        count_transactions_rows_validating=9247,
        last_conflict_free_transaction=f"{GROUP}:5",
        count_transactions_remote_applied=5,
        count_transactions_local_proposed=10154,
        count_transactions_local_rollback=2**64 - 1,
    )
    month = MemberStatsRow(
        member_id=MEMBER,
        count_transactions_in_queue=3,
        count_transactions_checked=TRANSACTIONS,
        count_transactions_rows_validating=9_247,
        transactions_committed_all_members=f"{GROUP}:1-{TRANSACTIONS - 40}",
        last_conflict_free_transaction=f"{GROUP}:{TRANSACTIONS}",
        count_transactions_remote_in_applier_queue=2,
        count_transactions_remote_applied=TRANSACTIONS,
    )
    month_stamp = Stamp(now - DAYS * 86_400_000_000, 3 * DAYS * 86_400)  # ~3 values per period
    cases = [
        ("small counters (as tests/agent/test_convert.py)", small, Stamp(now, 42), False),
        (f"{DAYS} days at 500 tps, counters only (every period)", month, month_stamp, False),
        (f"{DAYS} days at 500 tps, with the GTID columns (every 30 s)", month, month_stamp, True),
    ]
    sizes = []
    for name, row, stamp, gtids in cases:
        update = Update(MEMBER, stamp, Key.COUNTS, Counts(row, gtids_present=gtids), now)
        ours = len(update_to_wire(update).SerializeToString())
        mysql = PipelineStats(
            transactions_waiting_certification=row.count_transactions_in_queue,
            transactions_waiting_apply=row.count_transactions_remote_in_applier_queue,
            transactions_certified=row.count_transactions_checked,
            transactions_applied=row.count_transactions_remote_applied,
            transactions_local=row.count_transactions_local_proposed,
            transactions_negative_certified=row.count_conflicts_detected,
            transactions_rows_validating=row.count_transactions_rows_validating,
            transactions_committed_all_members=row.transactions_committed_all_members
            if gtids
            else "",
            transaction_last_conflict_free=row.last_conflict_free_transaction if gtids else "",
            transactions_local_rollback=row.count_transactions_local_rollback,
            gtids_present=gtids,
            sent_timestamp_us=now,
        )
        sizes.append(
            {
                "case": name,
                "gtids": gtids,
                "ours": ours,
                "mysql_8_0": len(encode(mysql, version="8.0")),
                "mysql_8_4": len(encode(mysql, version="8.4")),
            }
        )
    return sizes


# -- report ----------------------------------------------------------------------------------


def verdict(passed: bool | None) -> str:
    """PASS, **FAIL** or - (information)."""
    return "-" if passed is None else ("PASS" if passed else "**FAIL**")


def ms(value: float, digits: int = 1) -> str:
    """A duration in ms, or - when not measured."""
    return "-" if math.isnan(value) else f"{value:,.{digits}f} ms"


def print_propagation(simulated: dict[str, Any]) -> None:
    """Print the propagation table: the group idle, and under the query load."""
    print(f"## Propagation ({MEMBERS} agent processes, {PERIOD_S:g} s period)\n")
    print("| group | samples | replaced first | p50 | p95 | p99 | max | change to all, p99 |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for name, found in (
        ("idle (the CPU window)", simulated["idle"]),
        ("under the query load", simulated["loaded"]),
    ):
        samples = found["samples_ms"]
        print(
            f"| {name} | {len(samples)} | {found['replaced']} | {ms(percentile(samples, 0.5))} "
            f"| {ms(percentile(samples, 0.95))} | {ms(percentile(samples, 0.99))} "
            f"| {ms(max(samples, default=math.nan))} | {ms(change_to_all_ms(samples, 0.99), 0)} |"
        )
    print(
        "\nFrom the origin agent's read until all 8 others hold the value; replaced first: a "
        "newer value\nreached some agent before it did. Change to all: a change in the member "
        "first waits for the next\nread, evenly spread over the period.\n"
    )


def print_queries(
    simulated: dict[str, Any], fixed: dict[str, Any], args: argparse.Namespace
) -> None:
    """Print the query latency and AGE_MS tables."""
    load: Load = simulated["load"]
    print(f"## Queries ({args.qps} per second for {args.query_seconds:g} s, open-loop)\n")
    print("| group | sent | answered | p50 | p99 | max | failures | send lateness p99 |")
    print("|---|--:|--:|--:|--:|--:|---|--:|")
    runs = [(f"simulated {SCENARIO}", load), ("fixed snapshot", fixed["load"])]
    if fixed["pinned_load"] is not None:
        runs.append(("fixed snapshot, queried agent on a core of its own", fixed["pinned_load"]))
    for name, each in runs:
        latencies = each.latencies_ms
        failures = ", ".join(f"{n} {code}" for code, n in each.failures.items()) or "none"
        print(
            f"| {name} | {each.sent:,} | {len(latencies):,} | {ms(percentile(latencies, 0.5), 2)} "
            f"| {ms(percentile(latencies, 0.99), 2)} | {ms(max(latencies, default=math.nan), 2)} "
            f"| {failures} | {ms(percentile(each.lateness_ms, 0.99), 2)} |"
        )
    print(f"\nAGE_MS during the load (limit {FRESH_PERIODS} periods):\n")
    print("| row | probes | median | max |\n|---|--:|--:|--:|")
    for name, ages in (
        ("oldest other member's row at the queried agent", load.ages_here_ms),
        ("the queried member's row at a neighbour", load.ages_there_ms),
    ):
        median = percentile([float(age) for age in ages], 0.5)
        print(f"| {name} | {len(ages)} | {ms(median, 0)} | {ms(max(ages, default=math.nan), 0)} |")
    idle = simulated["cpu"]["cpu_percent"][0]
    busy = simulated["target_cpu_percent"]
    per_query = 10 * (busy - idle) / args.qps  # % of a core -> ms of CPU per query
    print(
        f"\nDuring the load: {simulated['overruns']} period overruns at the queried agent, "
        f"{simulated['exchange_failures']} failed exchanges in the group; the queried agent "
        f"used {busy:.1f}% of a core\n(idle: {idle:.1f}%), about {per_query:.2f} ms of CPU "
        "per query.\n"
    )


def cpu_rows(simulated: dict[str, Any], fixed: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The two CPU measurements, named."""
    return [(f"simulated {SCENARIO} group (500 tps)", simulated["cpu"]), ("fixed snapshot", fixed)]


def print_cpu(rows: list[tuple[str, dict[str, Any]]]) -> None:
    """Print CPU and RSS per agent process."""
    print(f"## CPU and RSS per agent process ({MEMBERS} members, {PERIOD_S:g} s period)\n")
    print("| source | window | CPU mean | CPU max | RSS mean | RSS max |")
    print("|---|--:|--:|--:|--:|--:|")
    for name, cpu in rows:
        share, rss = cpu["cpu_percent"], cpu["rss_mib"]
        print(
            f"| {name} | {cpu['seconds']:.0f} s | {sum(share) / len(share):.2f}% "
            f"| {max(share):.2f}% | {sum(rss) / len(rss):.1f} MiB | {max(rss):.1f} MiB |"
        )
    print()
    for name, cpu in rows:
        each = " ".join(f"{share:.2f}" for share in cpu["cpu_percent"])
        print(f"- {name}, % of one core by member index: {each}")
    print()


def print_sizes(sizes: list[dict[str, Any]]) -> None:
    """Print the bytes of one counts message."""
    print("## One counts message, bytes\n")
    print("| values | grstats | MySQL 8.0 | MySQL 8.4 (+ sent timestamp) | grstats / 8.0 |")
    print("|---|--:|--:|--:|--:|")
    for size in sizes:
        print(
            f"| {size['case']} | {size['ours']} | {size['mysql_8_0']} | {size['mysql_8_4']} "
            f"| {size['ours'] / size['mysql_8_0']:.2f} |"
        )
    print()


def targets(
    propagation: dict[str, Any],
    load: Load,
    fixed_load: Load,
    pinned_load: Load | None,
    *,
    rows: list[tuple[str, dict[str, Any]]],
    sizes: list[dict[str, Any]],
    args: argparse.Namespace,
) -> list[tuple[str, str, bool | None]]:
    """Return (target, measured, passed or None for information) for each target."""
    p99 = percentile(propagation["samples_ms"], 0.99)
    change_p99 = change_to_all_ms(propagation["samples_ms"], 0.99)
    query_p99 = percentile(load.latencies_ms, 0.99)
    oldest = max([*load.ages_here_ms, *load.ages_there_ms], default=math.inf)
    found: list[tuple[str, str, bool | None]] = [
        (
            f"change visible at every agent: p99 <= period + {TARGET_MARGIN_MS:g} ms",
            ms(change_p99, 0),
            change_p99 <= PERIOD_S * 1000 + TARGET_MARGIN_MS,
        ),
        (
            f"from the read alone: p99 <= {TARGET_MARGIN_MS:g} ms (information)",
            ms(p99),
            None,
        ),
        (
            f"query p99 at {args.qps}/s <= {TARGET_QUERY_P99_MS:g} ms, simulated {SCENARIO} group",
            ms(query_p99, 2),
            query_p99 <= TARGET_QUERY_P99_MS,
        ),
        (
            f"query p99 at {args.qps}/s <= {TARGET_QUERY_P99_MS:g} ms, fixed snapshot",
            ms(percentile(fixed_load.latencies_ms, 0.99), 2),
            percentile(fixed_load.latencies_ms, 0.99) <= TARGET_QUERY_P99_MS,
        ),
        *(
            (
                (
                    f"query p99 at {args.qps}/s <= {TARGET_QUERY_P99_MS:g} ms, fixed snapshot, "
                    "queried agent on a core of its own"
                ),
                ms(percentile(pinned.latencies_ms, 0.99), 2),
                percentile(pinned.latencies_ms, 0.99) <= TARGET_QUERY_P99_MS,
            )
            for pinned in [pinned_load]
            if pinned is not None
        ),
        (
            f"queries do not hold up the exchange: AGE_MS < {FRESH_PERIODS} periods",
            f"max {oldest:,} ms",
            oldest < FRESH_PERIODS * PERIOD_S * 1000,
        ),
    ]
    for name, cpu in rows:
        worst = max(cpu["cpu_percent"])
        target = f"CPU <= {TARGET_CPU_PERCENT:g}% of one core per agent, {name}"
        found.append((target, f"max {worst:.2f}%", worst <= TARGET_CPU_PERCENT))
    every_period, with_gtids = sizes[1], sizes[2]
    found.append(
        (
            "counts message <= 1/3 of MySQL 8.0's bytes (every period)",
            f"{every_period['ours']} / {every_period['mysql_8_0']}",
            3 * every_period["ours"] <= every_period["mysql_8_0"],
        )
    )
    found.append(
        (
            "the same with the GTID columns (information)",
            f"{with_gtids['ours']} / {with_gtids['mysql_8_0']}",
            None,
        )
    )
    return found


def print_targets(found: list[tuple[str, str, bool | None]], quick: bool) -> None:
    """Print the targets table."""
    print("## Targets\n")
    if quick:
        print("(--quick: shorter windows, so the tails are less certain)\n")
    print("| target | measured | result |\n|---|--:|---|")
    for name, measured, passed in found:
        print(f"| {name} | {measured} | {verdict(passed)} |")
    failed = [name for name, _, passed in found if passed is False]
    print(f"\n{len(failed)} target(s) FAILED" if failed else "\nall targets met")


def interrupted(signum: int, frame: object) -> None:
    """On SIGTERM, unwind as on Ctrl-C, so that every agent process started is stopped."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Run the four measurements and print the tables; exit 0 whatever the verdicts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run with short windows")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write raw results here")
    parser.add_argument("--qps", type=int, default=QPS, help=f"query rate (default {QPS})")
    args = parser.parse_args(argv)
    args.query_seconds = 10.0 if args.quick else 30.0
    args.cpu_seconds = 20.0 if args.quick else 60.0
    args.warmup = 10.0
    if not Path("/proc/self/stat").exists():
        parser.error("needs Linux /proc to read CPU time and RSS")
    signal.signal(signal.SIGTERM, interrupted)
    print_heading("Agent")
    started = time.perf_counter()
    sizes = message_sizes()
    with tempfile.TemporaryDirectory(prefix="grstats-bench-") as workdir:
        simulated = run_group(Path(workdir), "timed", args)
        fixed = run_group(Path(workdir), "fixed", args)
    rows = cpu_rows(simulated, fixed)
    print_propagation(simulated)
    print_queries(simulated, fixed, args)
    print_cpu(rows)
    print_sizes(sizes)
    found = targets(
        simulated["idle"],
        simulated["load"],
        fixed["load"],
        fixed["pinned_load"],
        rows=rows,
        sizes=sizes,
        args=args,
    )
    print_targets(found, args.quick)
    print(f"(whole run: {time.perf_counter() - started:.0f} s)")
    if args.json:
        load_result: Load = simulated["load"]
        raw = {
            "quick": args.quick,
            "cpus": os.cpu_count(),
            "propagation_ms": {
                "idle": simulated["idle"]["samples_ms"],
                "loaded": simulated["loaded"]["samples_ms"],
            },
            "query_latency_ms": load_result.latencies_ms,
            "query_latency_ms_fixed": fixed["load"].latencies_ms,
            "query_latency_ms_fixed_pinned": fixed["pinned_load"].latencies_ms
            if fixed["pinned_load"]
            else None,
            "query_failures": dict(load_result.failures),
            "age_ms": {"here": load_result.ages_here_ms, "neighbour": load_result.ages_there_ms},
            "cpu": {
                "simulated": simulated["cpu"],
                "fixed": {k: v for k, v in fixed.items() if not k.endswith("load")},
            },
            "bytes": sizes,
            "targets": [{"target": n, "measured": m, "passed": p} for n, m, p in found],
        }
        args.json.write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(run_as_agent(sys.argv[2:]) if sys.argv[1:2] == [AS_AGENT] else main())
