"""One agent under steady client reads, in a process of its own: ``python -m``.

``python -m tests.agent.soak_memory_probe WARM READS`` starts one agent of a simulated group of
1 (gRPC, ``sql_listen`` and ``metrics_listen`` on 127.0.0.1; its periods stopped after a first
one on the test clock, so that only the reads move its memory: what the agent's periods do
over time is tests/benchmarks/bench_soak.py's ``--rate 0``), reads it ``WARM`` times, starts
``tracemalloc``, reads it ``READS`` times more (the kinds of tests/benchmarks/bench_soak.py by
turns: gRPC ``Query.Read`` on a kept channel and on a new
one, SQL on a kept PyMySQL connection and on a new one, a ``/metrics`` GET), and prints one
JSON object on the last line of standard output: the memory Python holds (``tracemalloc``'s
traced bytes, after a full collection) at the two marks ``READS // 2`` and ``READS`` into the
traced reads, the net growth between them per read, and the allocation sites that grew most.
A process of its own so that what is measured is the agent's, not a test worker's. To look
into a growth: ``PROBE_KINDS=sql_kept,metrics`` reads those kinds only, ``PROBE_FRAMES=12``
keeps more of each allocation's traceback (slower).

Two things are left out of the count because they are not the agent's: the simulator's own
transaction log (``grstats.agent.sim``, which grows with the simulated time until it trims)
and what tracemalloc itself keeps. Every statement has the same text: tracemalloc keeps the
file name of every frame it records for good, and sqlglot's executor compiles each statement's
expressions with their Python source as the file name, so distinct texts would grow
tracemalloc's table, not the agent (measured: no RSS growth over 200,000 distinct ones
without tracemalloc).

``python -m tests.agent.soak_memory_probe group TRIMS`` is the gossip's side: two agents of a
simulated group of 2 over gRPC on 127.0.0.1, their periods run back to back on the test clock
with a read of the first agent each period, and the process's RSS sampled at ``TRIMS`` trims of
the simulator's log after a warm-up (:func:`group_probe`); the JSON object holds the samples
and their rise per period.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
import os
import statistics
import sys
import tracemalloc
import urllib.request
from pathlib import Path
from typing import Any

import pymysql  # type: ignore[import-untyped]

from grstats.agent import server
from grstats.agent.runtime import Agent
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.transports import GrpcTransport
from grstats.core.security import Security
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc
from tests.agent.test_runtime import START_S, Clock, settings

#: Frames tracemalloc keeps of each allocation: enough to name the site, few enough to be quick.
FRAMES = int(os.environ.get("PROBE_FRAMES", "4"))
KINDS = ("grpc_kept", "grpc_new", "sql_kept", "sql_new", "metrics")
SQL = "SELECT MEMBER_ID, MEMBER_STATE FROM performance_schema.replication_group_members"
#: Allocation sites that are not the agent's (see the module docstring).
NOT_THE_AGENT = (
    tracemalloc.Filter(inclusive=False, filename_pattern=tracemalloc.__file__),
    tracemalloc.Filter(inclusive=False, filename_pattern="*/agent/sim/*"),
    tracemalloc.Filter(inclusive=False, filename_pattern="<frozen importlib._bootstrap*>"),
)


def _port(address: str | None) -> int:
    assert address is not None
    return int(address.rsplit(":", 1)[1])


class Reader:
    """The probe's clients of the agent: one kept gRPC channel and one kept SQL connection."""

    def __init__(self, agent: Agent, kinds: tuple[str, ...] = KINDS) -> None:
        self.kinds = kinds
        self._grpc = agent.address
        self._sql = _port(agent.sql_address) if {"sql_kept", "sql_new"} & set(kinds) else 0
        self._metrics = _port(agent.metrics_address) if "metrics" in kinds else 0
        self._security = Security.from_files(None, None)
        self._channel = self._security.channel(self._grpc)
        self._kept: Any | None = None

    async def open(self) -> None:
        """Open the kept SQL connection (off the loop, which serves the endpoint)."""
        self._kept = await asyncio.to_thread(self._connect)

    def _connect(self) -> Any:
        return pymysql.connect(host="127.0.0.1", port=self._sql, user="probe", password="")

    async def read(self, number: int) -> None:
        """Read number ``number``, of its kind by turns."""
        kind = self.kinds[number % len(self.kinds)]
        if kind == "grpc_kept":
            await pb_grpc.QueryStub(self._channel).Read(pb.QueryRequest(), timeout=5)
        elif kind == "grpc_new":
            async with self._security.channel(self._grpc) as channel:
                await pb_grpc.QueryStub(channel).Read(pb.QueryRequest(), timeout=5)
        else:
            await asyncio.to_thread(self._blocking, kind)

    def _blocking(self, kind: str) -> None:
        if kind == "metrics":
            url = f"http://127.0.0.1:{self._metrics}/metrics"
            with urllib.request.urlopen(url, timeout=5) as answer:
                answer.read()
            return
        connection = self._kept if kind == "sql_kept" and self._kept else self._connect()
        try:
            with connection.cursor() as cursor:
                cursor.execute(SQL)
                cursor.fetchall()
        finally:
            if kind == "sql_new":
                connection.close()

    async def close(self) -> None:
        """Close the kept channel and connection."""
        await self._channel.close()
        if self._kept is not None:
            self._kept.close()


def traced() -> tuple[int, tracemalloc.Snapshot]:
    """After a full collection: the bytes the agent's allocations hold, and their snapshot."""
    gc.collect()
    snapshot = tracemalloc.take_snapshot().filter_traces(NOT_THE_AGENT)
    return sum(stat.size for stat in snapshot.statistics("filename")), snapshot


async def probe(warm: int, reads: int) -> dict[str, object]:
    """Read one agent ``warm`` times, then ``reads`` times traced; its growth between marks."""
    config = dataclasses.replace(
        settings(),
        period_s=1.0,
        rpc_timeout_s=0.9,
        sql_listen="127.0.0.1:0",
        metrics_listen="127.0.0.1:0",
    )
    server.TRIM_EVERY_S = 0.1  # the agent's trims (and ctypes, loaded by the first) during warm-up
    clock = Clock()
    group = load_scenario("steady").with_members(1)
    source = SimulatedSource(group, 0, seed=1, group_start_s=START_S, clock=clock.s)
    agent = Agent(config, source, transport=GrpcTransport(config.limits), clock=clock.us)
    await agent.start()
    assert agent._task is not None  # the probe runs the periods: none while it reads
    agent._task.cancel()
    await agent.run_period()
    reader = Reader(agent, tuple(os.environ.get("PROBE_KINDS", ",".join(KINDS)).split(",")))
    try:
        await reader.open()
        for number in range(warm):
            await reader.read(number)
        tracemalloc.start(FRAMES)
        marks: list[tuple[int, tracemalloc.Snapshot]] = []
        for number in range(warm, warm + reads):
            await reader.read(number)
            if number - warm + 1 in (reads // 2, reads):
                marks.append(traced())
        (first, older), (last, newer) = marks
        grown = newer.compare_to(older, "traceback")[:5]
        return {
            "reads": reads,
            "first_bytes": first,
            "last_bytes": last,
            "growth_per_read_bytes": (last - first) / (reads - reads // 2),
            "grew_most": [
                {"bytes": stat.size_diff, "blocks": stat.count_diff, "at": stat.traceback.format()}
                for stat in grown
            ],
        }
    finally:
        tracemalloc.stop()
        await reader.close()
        await agent.stop(grace_s=0)


def resident_kb() -> int:
    """``VmRSS`` of this process after a full collection and glibc's ``malloc_trim(0)``, KiB.

    The trim hands back what glibc holds free, as the agent's own
    :class:`~grstats.agent.server.MemoryRelease` does after calls, so that what is left is
    what the process holds.
    """
    gc.collect()
    trim = server._malloc_trim()
    if trim is not None:
        trim(0)
    for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("/proc/self/status: no VmRSS")


#: Trims of the simulator's log that are the group probe's warm-up.
WARM_TRIMS = 1


async def group_probe(trims: int) -> dict[str, object]:
    """Two agents gossiping over gRPC, read every round: their process's RSS at each trim.

    The group's periods run back to back on the test clock, one simulated second each, so
    that minutes of the group's life pass in seconds. RSS rises and falls with the simulator's
    log of transactions, which trims every 65,536 of them (``TxLog.trim``: every 131 rounds
    at the steady scenario's 500 a second): the samples are taken just after each trim, at the
    same point of that saw-tooth, and the first trim ends the warm-up (the log's first
    fill, the lazily built caches). Returns the (round, KiB) samples after the warm-up and
    the least-squares slope through them, KiB a round (a single interval's rise is noise: 0.18
    to 0.76 on a quiet machine).
    """
    from tests.agent.test_runtime import start_group  # noqa: PLC0415  (its pytest fixtures)

    group = await start_group(2)
    log = group.agents[0].member._source.group.log  # type: ignore[attr-defined]
    reader = Reader(group.agents[0], ("grpc_kept", "grpc_new"))
    samples: list[tuple[int, int]] = []
    number, seen = 0, 0
    try:
        while seen < trims + WARM_TRIMS:
            base = log.base
            await group.rounds(1)
            await reader.read(number)
            number += 1
            if log.base != base:
                seen += 1
                if seen > WARM_TRIMS:
                    samples.append((number, resident_kb()))
        rounds, kib = zip(*samples, strict=True)
        slope = statistics.linear_regression(rounds, kib).slope
        return {"samples": samples, "rise_kib_per_round": slope}
    finally:
        await reader.close()
        for agent in group.agents:
            await agent.stop(grace_s=0)


if __name__ == "__main__":
    if sys.argv[1] == "group":
        found = asyncio.run(group_probe(int(sys.argv[2])))
    else:
        found = asyncio.run(probe(int(sys.argv[1]), int(sys.argv[2])))
    print(json.dumps(found))
