"""Collector fleet benchmark: one collector polling 50 groups of 5 agents at 1 s.

``--server-processes`` processes (default 2) answer Query.Read on ``--groups`` x ``--members``
ports of 127.0.0.1, the groups spread over them: one grpc.aio server per group, bound to
``--members`` ports. Each answers with bytes encoded once: an extended QueryResponse taken from
a real 5-member simulated group (agents in that process), with a group name of its own, and
``served_at_us`` appended per answer (a later field wins in protobuf). So the servers spend as
little as they can per call, and what is measured is the collector. The collector's loop
(:func:`grstats.collector.collect.collect`, ``--fsync record`` by default) runs in this process
for ``--seconds``.

Per snapshot it measures four moments against the tick the snapshot belongs to: the poll
started (``collected_at_us``, what the record says), the agent took the snapshot
(``served_at_us``, the agent's clock; one host, one clock), the answer was decoded in the
collector, and the record was durable in the spool (the spool's batch, fsync included, had
returned). It reports p50/p99/max of each, the ticks any group missed, the spool's batches
(fsyncs) per tick, this process's CPU time (the collector alone, its spool thread included)
and the servers' CPU apart. Target: every snapshot taken and durable with p99 lateness
<= 200 ms, and no tick missed.

Run: ``.venv/bin/python -m tests.benchmarks.bench_collector_fleet [--json FILE]``. It measures
and prints PASS or FAIL against the target; it does not fail the run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import structlog

from grstats.agent.config import load_config
from grstats.agent.runtime import Agent
from grstats.cli.demo import free_ports
from grstats.collector.collect import Limits, collect
from grstats.collector.poller import Poller, PollerSettings
from grstats.collector.records import TABLE_NAMES
from grstats.collector.spool import (
    SpoolSettings,
    SpoolWriter,
    SyncPolicy,
    read_segment,
    sealed_segments,
)
from grstats.core.log import configure_logging
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from grstats.collector.records import Record
    from grstats.collector.spool import Position

TARGET_P99_S = 0.2
QUERY_SERVICE = pb.DESCRIPTOR.services_by_name["Query"].full_name


def quantile(values: list[float], q: float) -> float:
    """The q-quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# -- the server processes -----------------------------------------------------------------


async def canned_answer(members: int, state: Path) -> pb.QueryResponse:
    """An extended answer of every table, from agent 0 of a converged simulated group."""
    ports = free_ports(members)
    peers = ",".join(f"127.0.0.1:{port}" for port in ports)
    agents = []
    for index, port in enumerate(ports):
        config = load_config(
            None,
            {
                "source": "simulated",
                "listen": f"127.0.0.1:{port}",
                "peers": peers,
                "state_dir": str(state / str(index)),
                "simulated.scenario": "steady",
                "simulated.members": members,
                "simulated.member_index": index,
                "simulated.group_start_s": time.time() - 10,
            },
        )
        assert config.simulated is not None
        agents.append(Agent(config, config.simulated.build()))
    for agent in agents:
        await agent.start()
    try:
        await asyncio.sleep(4)  # a few periods: every agent hears every other
        async with grpc.aio.insecure_channel(f"127.0.0.1:{ports[0]}") as channel:
            request = pb.QueryRequest(tables=list(TABLE_NAMES), extended=True)
            answer: pb.QueryResponse = await pb_grpc.QueryStub(channel).Read(request, timeout=5)
    finally:
        for agent in agents:
            await agent.stop(grace_s=0)
    assert len(answer.tables[0].rows) == members, answer
    return answer


def canned_handler(answer: bytes) -> grpc.GenericRpcHandler:
    """Query.Read answering ``answer`` (bytes, encoded once) with this moment as served_at_us."""

    async def read(_request: bytes, _context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
        stamp: bytes = pb.QueryResponse(served_at_us=time.time_ns() // 1000).SerializeToString()
        return answer + stamp  # the later served_at_us wins

    return grpc.method_handlers_generic_handler(
        QUERY_SERVICE, {"Read": grpc.unary_unary_rpc_method_handler(read)}
    )


async def serve(groups: list[int], members: int) -> None:
    """Serve ``groups`` x ``members`` ports; print them as one JSON line; run until stdin ends.

    At the end it prints this process's CPU seconds as one more JSON line.
    """
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as state:
        base = await canned_answer(members, Path(state))
    servers = []
    ports: list[list[int]] = []
    for group in groups:
        answer = pb.QueryResponse()
        answer.CopyFrom(base)
        answer.group_name = str(uuid.uuid5(uuid.NAMESPACE_OID, f"bench-group-{group}"))
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((canned_handler(answer.SerializeToString()),))
        ports.append([server.add_insecure_port("127.0.0.1:0") for _ in range(members)])
        await server.start()
        servers.append(server)
    print(json.dumps({"ports": ports, "record_tables_bytes": base.ByteSize()}), flush=True)
    cpu_before = time.process_time()
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    cpu = time.process_time() - cpu_before
    for server in servers:
        await server.stop(0)
    print(json.dumps({"cpu_s": cpu}), flush=True)


def start_servers(groups: int, members: int, processes: int) -> list[subprocess.Popen[str]]:
    """Start ``processes`` server processes, each serving a contiguous share of the groups."""
    command = [sys.executable, "-m", "tests.benchmarks.bench_collector_fleet", "--serve"]
    started = []
    for index in range(processes):
        share = range(index * groups // processes, (index + 1) * groups // processes)
        mine = ",".join(str(group) for group in share)
        started.append(
            subprocess.Popen(
                [*command, "--serve-groups", mine, "--members", str(members)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    return started


# -- the collector (this process) ---------------------------------------------------------


class TimedPoller(Poller):
    """A poller that notes when each answer was decoded (monotonic seconds)."""

    answered: dict[tuple[str, int], float]

    async def poll(self) -> Record:
        """Poll, then note the group, the poll's start and now."""
        record = await super().poll()
        self.answered[record["group_label"], record["collected_at_us"]] = time.monotonic()
        return record


class TimedWriter(SpoolWriter):
    """A spool writer that notes when each record was durable, and its batches."""

    durable: dict[tuple[str, int], float]
    batches: int
    threads: set[int]

    def append_all(self, records: Sequence[Mapping[str, Any]]) -> list[Position]:
        """Append the batch, then note each record's group and poll start, and now."""
        positions = super().append_all(records)
        now = time.monotonic()
        self.batches += 1
        self.threads.add(threading.get_ident())
        for record in records:
            self.durable[record["group_label"], record["collected_at_us"]] = now
        return positions


def late_ms(values: list[float], name: str) -> dict[str, float]:
    """p50, p99 and max of ``values`` (seconds) in ms, keyed ``name_late_ms_p50`` and so on."""
    return {
        f"{name}_late_ms_p50": round(quantile(values, 0.5) * 1000, 1),
        f"{name}_late_ms_p99": round(quantile(values, 0.99) * 1000, 1),
        f"{name}_late_ms_max": round(max(values) * 1000, 1),
    }


async def run_collector(
    ports: list[list[int]],
    seconds: float,
    interval_s: float,
    spool: Path,
    settings: SpoolSettings,
) -> dict[str, Any]:
    """Collect every group for ``seconds``; return the lateness and CPU figures."""
    answered: dict[tuple[str, int], float] = {}
    pollers = []
    for index, group in enumerate(ports):
        poller = TimedPoller(
            PollerSettings(
                tuple(f"127.0.0.1:{port}" for port in group),
                interval_s=interval_s,
                timeout_s=2.0,
                group_label=f"g{index:02d}",
            ),
            clock_us=lambda: time.monotonic_ns() // 1000,  # stamps on the loop's clock
        )
        poller.answered = answered
        pollers.append(poller)
    anchor: list[float] = []

    def clock() -> float:
        now = time.monotonic()
        if not anchor:
            anchor.append(now)  # the loop's first reading: the grid's first tick
        return now

    writer = TimedWriter(spool, settings)
    writer.durable, writer.batches, writer.threads = {}, 0, set()
    wall_offset_s = time.time() - time.monotonic()  # maps the agents' served_at_us
    cpu_before = time.process_time()
    usage_before = resource.getrusage(resource.RUSAGE_SELF)
    wall_before = time.monotonic()
    try:
        progress = await collect(
            pollers,
            writer,
            asyncio.Event(),
            limits=Limits(duration_s=seconds),
            clock=clock,
            logger=structlog.get_logger(),
        )
    finally:
        for poller in pollers:
            await poller.aclose()
        writer.close()
    wall = time.monotonic() - wall_before
    cpu = time.process_time() - cpu_before
    usage_after = resource.getrusage(resource.RUSAGE_SELF)
    served_at_us = served_at(spool)
    taken, served, decoded, durable = [], [], [], []
    for key, durable_s in writer.durable.items():
        collected_s = key[1] / 1e6
        tick = anchor[0] + int((collected_s - anchor[0]) / interval_s) * interval_s
        taken.append(collected_s - tick)
        served.append(served_at_us[key] / 1e6 - wall_offset_s - tick)
        decoded.append(answered[key] - tick)
        durable.append(durable_s - tick)
    ticks = math.ceil(seconds / interval_s)  # the ticks before the deadline, the first at 0
    expected = ticks * len(ports)
    on_time = max(quantile(taken, 0.99), quantile(durable, 0.99)) <= TARGET_P99_S
    return {
        "groups": len(ports),
        "members": len(ports[0]),
        "seconds": seconds,
        "interval_s": interval_s,
        "fsync": settings.sync.value,
        "columns": settings.columns,
        "snapshots": progress.snapshots,
        "expected_snapshots": expected,
        "missed_ticks": progress.skipped_ticks,
        "failed_polls": progress.failed_polls,
        **late_ms(taken, "taken"),
        **late_ms(served, "served"),
        **late_ms(decoded, "decoded"),
        **late_ms(durable, "durable"),
        "spool_batches": writer.batches,
        "spool_batches_per_tick": round(writer.batches / ticks, 2),
        "spool_on_loop_thread": threading.get_ident() in writer.threads,
        "cpu_s": round(cpu, 2),
        "cpu_percent_of_one_core": round(100 * cpu / wall, 1),
        "cpu_user_s": round(usage_after.ru_utime - usage_before.ru_utime, 2),
        "cpu_system_s": round(usage_after.ru_stime - usage_before.ru_stime, 2),
        "spool_bytes": writer.appended_bytes,
        "verdict": "PASS" if on_time and progress.snapshots == expected else "FAIL",
    }


def served_at(spool: Path) -> dict[tuple[str, int], int]:
    """``served_at_us`` of each record of ``spool``, by group label and ``collected_at_us``."""
    return {
        (record["group_label"], record["collected_at_us"]): record["served_at_us"]
        for path in sealed_segments(spool)
        for record in read_segment(path)
    }


def main(argv: list[str] | None = None) -> int:
    """Start the servers' processes, run the collector against them, print (and save) figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--members", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--fsync", choices=[p.value for p in SyncPolicy], default="record")
    parser.add_argument("--server-processes", type=int, default=2)
    parser.add_argument(
        "--no-columns",
        action="store_true",
        help="the spool writer keeps no columns files (as grstats collect --no-columns)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-groups", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    configure_logging("json", "error")
    if args.serve:
        groups = [int(group) for group in args.serve_groups.split(",")]
        asyncio.run(serve(groups, args.members))
        return 0
    servers = start_servers(args.groups, args.members, args.server_processes)
    servers_cpu: list[float] = []
    load_before = os.getloadavg()
    try:
        ports: list[list[int]] = []
        for process in servers:
            assert process.stdout is not None
            ports += json.loads(process.stdout.readline())["ports"]
        with tempfile.TemporaryDirectory(prefix="bench-fleet-spool-") as spool:
            figures = asyncio.run(
                run_collector(
                    ports,
                    args.seconds,
                    args.interval,
                    Path(spool) / "s",
                    SpoolSettings(sync=SyncPolicy(args.fsync), columns=not args.no_columns),
                )
            )
    finally:
        for process in servers:
            assert process.stdin is not None
            process.stdin.close()
        for process in servers:
            assert process.stdout is not None
            out = process.stdout.read()
            process.wait(timeout=30)
            servers_cpu += [json.loads(line)["cpu_s"] for line in out.splitlines() if line]
    figures["servers_cpu_s"] = round(sum(servers_cpu), 2)
    figures["server_processes"] = args.server_processes
    figures["load_average_1m_before_after"] = [
        round(load_before[0], 2),
        round(os.getloadavg()[0], 2),
    ]
    figures["cpu_count"] = os.cpu_count()
    print(json.dumps(figures, indent=2))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
