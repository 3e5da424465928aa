"""Soak: the RSS of agent processes under steady client reads, and its slope (issue 43, point 7).

``python -m tests.benchmarks.bench_soak [--agents 5] [--members N] [--rate 50] [--minutes 5]``
starts ``--agents`` agent processes of one simulated steady group of ``--members`` (default
``--agents``; ``grstats agent --source simulated``, 1 s period, each with ``--sql-listen`` and
``--metrics-listen``), waits until each hears the others, then reads them at ``--rate`` reads
a second in all, spread round-robin over the agents and paced open-loop, for ``--minutes``. The reads take turns: a gRPC ``Query.Read``
of every table on one channel kept open, one on a new channel (as ``grstats query`` makes one),
a SQL ``SELECT`` on a PyMySQL connection kept open, one on a new connection, and a ``/metrics``
GET. Every ``--sample-s`` seconds it reads each agent's ``VmRSS`` (``/proc/PID/status``); the
slope is the least-squares line through the samples after ``--warmup-s``, in MB a minute, per
agent. ``--rate 0`` is the same group without reads: what the agents' own work does over time.
Prints a markdown table (and ``--json FILE``). Linux only (/proc). Exits 0 whatever it measures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymysql  # type: ignore[import-untyped]

from grstats.cli.demo import free_ports
from grstats.core.security import Security
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("grpc_kept", "grpc_new", "sql_kept", "sql_new", "metrics")
SQL = "SELECT MEMBER_ID, MEMBER_STATE FROM performance_schema.replication_group_members"


@dataclass
class Soaked:
    """One agent process: its ports and its RSS samples (seconds since the load began, MB)."""

    process: subprocess.Popen[bytes]
    grpc: int
    sql: int
    metrics: int
    samples: list[tuple[float, float]] = field(default_factory=list)


def vm_rss_mb(pid: int) -> float:
    """``VmRSS`` of process ``pid``, in MB (10**6 bytes)."""
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024 / 1e6
    raise RuntimeError(f"/proc/{pid}/status: no VmRSS")


def slope_mb_per_min(samples: list[tuple[float, float]]) -> float:
    """The least-squares slope of (seconds, MB) samples, in MB a minute; NaN under 2 samples."""
    if len(samples) < 2:
        return float("nan")
    mean_t = sum(t for t, _ in samples) / len(samples)
    mean_mb = sum(mb for _, mb in samples) / len(samples)
    spread = sum((t - mean_t) ** 2 for t, _ in samples)
    rise = sum((t - mean_t) * (mb - mean_mb) for t, mb in samples)
    return 60.0 * rise / spread if spread else float("nan")


def start(agents: int, workdir: Path, members: int | None = None) -> list[Soaked]:
    """Start ``agents`` agent processes of one simulated group of ``members`` on 127.0.0.1.

    ``members`` defaults to ``agents``; more members than agents simulates the whole group in
    each agent while only ``agents`` of them gossip (``--agents 1 --members 5``: a group of 5
    without a peer), which tells the agents' gossip from the rest of their work.
    """
    ports = free_ports(3 * agents)
    grpc_ports = ports[:agents]
    peers = ",".join(f"127.0.0.1:{port}" for port in grpc_ports)
    began = int(time.time())
    group = []
    for index in range(agents):
        sql, metrics = ports[agents + index], ports[2 * agents + index]
        arguments = [
            *(sys.executable, "-m", "grstats", "agent", "--source", "simulated"),
            *("--scenario", "steady", "--members", str(members or agents)),
            *("--member-index", str(index)),
            *("--group-start", str(began), "--period", "1", "--peers", peers),
            *("--listen", f"127.0.0.1:{grpc_ports[index]}"),
            *("--sql-listen", f"127.0.0.1:{sql}", "--metrics-listen", f"127.0.0.1:{metrics}"),
            *("--state-dir", str(workdir / str(index)), "--log-format", "json"),
        ]
        log = (workdir / f"agent-{index}.log").open("wb")
        process = subprocess.Popen(arguments, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        group.append(Soaked(process, grpc_ports[index], sql, metrics))
    return group


def peers_heard(port: int) -> float | None:
    """``grstats_peers_heard`` on the /metrics at ``port``, else None."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as answer:
            text = answer.read().decode("utf-8")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("grstats_peers_heard "):
            return float(line.split()[1])
    return None


def wait_heard(group: list[Soaked], timeout_s: float = 60.0) -> None:
    """Wait until every agent hears all the others."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(peers_heard(agent.metrics) == len(group) - 1 for agent in group):
            return
        if any(agent.process.poll() is not None for agent in group):
            raise RuntimeError("an agent exited before the group formed")
        time.sleep(0.5)
    raise RuntimeError(f"the agents did not all hear each other within {timeout_s:g} s")


class Reader:
    """The clients of the soak: one kept gRPC channel and SQL connection per agent."""

    def __init__(self, group: list[Soaked]) -> None:
        self._group = group
        self._security = Security.from_files(None, None)
        self._channels = [self._security.channel(f"127.0.0.1:{a.grpc}") for a in group]
        self._sql = [self._connect(agent) for agent in group]
        # One read at a time on a kept connection: on a busy machine a read can outlast the
        # turns (0.5 s at 50 reads/s over 5 agents), and two at once break its packet order.
        self._sql_locks = [threading.Lock() for _ in group]
        self.done: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.failed: dict[str, int] = dict.fromkeys(KINDS, 0)

    @staticmethod
    def _connect(agent: Soaked) -> Any:
        return pymysql.connect(host="127.0.0.1", port=agent.sql, user="soak", password="")

    async def read(self, number: int) -> None:
        """Read number ``number``: its agent and its kind by turns; failures are counted."""
        agent = number % len(self._group)
        kind = KINDS[(number // len(self._group)) % len(KINDS)]
        try:
            await self._read(kind, agent)
        except (TimeoutError, OSError, pymysql.MySQLError, RuntimeError) as exc:
            self.failed[kind] += 1
            if self.failed[kind] <= 3:
                print(f"read {kind} of agent {agent} failed: {exc!r}", file=sys.stderr)
        else:
            self.done[kind] += 1

    async def _read(self, kind: str, index: int) -> None:
        agent = self._group[index]
        request = pb.QueryRequest()
        if kind == "grpc_kept":
            await pb_grpc.QueryStub(self._channels[index]).Read(request, timeout=5)
        elif kind == "grpc_new":
            async with self._security.channel(f"127.0.0.1:{agent.grpc}") as channel:
                await pb_grpc.QueryStub(channel).Read(request, timeout=5)
        else:
            await asyncio.to_thread(self._blocking, kind, index)

    def _blocking(self, kind: str, index: int) -> None:
        agent = self._group[index]
        if kind == "metrics":
            url = f"http://127.0.0.1:{agent.metrics}/metrics"
            with urllib.request.urlopen(url, timeout=5) as answer:
                answer.read()
            return
        if kind == "sql_kept":
            with self._sql_locks[index]:
                _select(self._sql[index])
            return
        connection = self._connect(agent)
        try:
            _select(connection)
        finally:
            connection.close()

    async def close(self) -> None:
        """Close the kept channels and connections."""
        for channel in self._channels:
            await channel.close()
        for connection in self._sql:
            connection.close()


def _select(connection: Any) -> None:
    """Run the soak's statement on ``connection`` and read its rows."""
    with connection.cursor() as cursor:
        cursor.execute(SQL)
        cursor.fetchall()


async def soak(group: list[Soaked], rate: float, seconds: float, sample_s: float) -> Reader:
    """Read ``group`` at ``rate`` a second for ``seconds``, sampling RSS each ``sample_s``."""
    reader = Reader(group)
    began = time.monotonic()
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0 if not group[0].samples else sample_s):
            at = time.monotonic() - began
            for agent in group:
                agent.samples.append((at, vm_rss_mb(agent.process.pid)))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    pending: set[asyncio.Task[None]] = set()
    number = 0
    while (elapsed := time.monotonic() - began) < seconds:
        if rate <= 0:
            await asyncio.sleep(min(1.0, seconds - elapsed))
            continue
        due = began + number / rate
        if due > time.monotonic():
            await asyncio.sleep(due - time.monotonic())
        task = asyncio.create_task(reader.read(number))
        pending.add(task)
        task.add_done_callback(pending.discard)
        number += 1
    await asyncio.gather(*pending)
    stop.set()
    sampler.join()
    for agent in group:  # the last sample, at the end
        agent.samples.append((time.monotonic() - began, vm_rss_mb(agent.process.pid)))
    await reader.close()
    return reader


def stop_all(group: list[Soaked]) -> None:
    """SIGTERM every agent and wait for it."""
    for agent in group:
        if agent.process.poll() is None:
            agent.process.send_signal(signal.SIGTERM)
    for agent in group:
        agent.process.wait(timeout=30)


def report(group: list[Soaked], reader: Reader | None, args: argparse.Namespace) -> dict[str, Any]:
    """The figures: each agent's RSS at the warm-up's end and at the end, and its slope."""
    rows = []
    for index, agent in enumerate(group):
        kept = [(t, mb) for t, mb in agent.samples if t >= args.warmup_s]
        rows.append(
            {
                "agent": index,
                "rss_start_mb": round(kept[0][1], 2) if kept else None,
                "rss_end_mb": round(kept[-1][1], 2) if kept else None,
                "slope_mb_per_min": round(slope_mb_per_min(kept), 3),
                "samples": len(kept),
                "rss_mb_by_s": [[round(t, 1), round(mb, 3)] for t, mb in agent.samples],
            }
        )
    return {
        "agents": args.agents,
        "members": args.members or args.agents,
        "rate": args.rate,
        "minutes": args.minutes,
        "warmup_s": args.warmup_s,
        "reads": reader.done if reader else {},
        "failed": reader.failed if reader else {},
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} cores",
        "rows": rows,
    }


def markdown(figures: dict[str, Any]) -> str:
    """The figures as a markdown table."""
    lines = [
        (
            f"{figures['agents']} agents (a group of {figures['members']}), "
            f"{figures['rate']:g} reads/s, {figures['minutes']:g} "
            f"min (slope after {figures['warmup_s']:g} s); reads "
            f"{sum(figures['reads'].values())}, failed {sum(figures['failed'].values())}"
        ),
        "",
        "| agent | RSS after warm-up MB | RSS at end MB | slope MB/min |",
        "|--:|--:|--:|--:|",
    ]
    lines += [
        f"| {r['agent']} | {r['rss_start_mb']} | {r['rss_end_mb']} | {r['slope_mb_per_min']} |"
        for r in figures["rows"]
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the soak and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=5)
    parser.add_argument(
        "--members", type=int, default=None, help="the simulated group's size (default: --agents)"
    )
    parser.add_argument("--rate", type=float, default=50.0, help="reads a second, all agents")
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--warmup-s", type=float, default=60.0, help="samples before: not fitted")
    parser.add_argument("--sample-s", type=float, default=10.0)
    parser.add_argument("--json", type=Path, metavar="FILE")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="grstats-soak-") as work:
        group = start(args.agents, Path(work), args.members)
        reader = None
        try:
            wait_heard(group)
            reader = asyncio.run(soak(group, args.rate, args.minutes * 60, args.sample_s))
        finally:
            stop_all(group)
    figures = report(group, reader, args)
    print(markdown(figures))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
