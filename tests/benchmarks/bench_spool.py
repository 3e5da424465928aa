"""Collector benchmarks: one poll, the record's size, spool append and read speed.

1. **Poll.** ``Poller.poll()`` (all four tables, extended) against one agent of a running
   simulated group of 3 and of 9 agents on 127.0.0.1 (in this process): median and p99 of
   ``--polls`` polls, and the msgpack bytes of one record.
2. **Append.** ``SpoolWriter.append`` of the 9-member record under each sync policy, for
   ``--seconds`` each: records per second, and the p50/p99 time of one append. The collector
   appends one record per interval (1 s by default), so the RECORD policy's cost per append
   is what matters, not its throughput.
3. **Read.** ``read_segment`` over the sealed segments just written: records and MB per second.
4. **Size.** The bytes of 30 days of 9-member snapshots at one a second, from (1).

Run: ``.venv/bin/python tests/benchmarks/bench_spool.py [--json FILE]``. It measures; no target
is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import structlog

from grstats.agent.config import load_config
from grstats.agent.runtime import Agent
from grstats.cli.demo import free_ports
from grstats.collector.poller import Poller, PollerSettings
from grstats.collector.records import encode
from grstats.collector.spool import (
    SpoolSettings,
    SpoolWriter,
    SyncPolicy,
    read_segment,
    sealed_segments,
)

DAY_S = 86_400


def quantile(values: list[float], q: float) -> float:
    """The q-quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def poll_group(
    members: int, polls: int, state: Path
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Start ``members`` agents, let them converge, time ``polls`` polls of one; return a record."""
    ports = free_ports(members)
    peers = ",".join(f"127.0.0.1:{port}" for port in ports)
    start = time.time() - 10
    agents = []
    for index, port in enumerate(ports):
        config = load_config(
            None,
            {
                "source": "simulated",
                "listen": f"127.0.0.1:{port}",
                "peers": peers,
                "state_dir": str(state / f"{members}-{index}"),
                "simulated.scenario": "slow-secondary",
                "simulated.members": members,
                "simulated.member_index": index,
                "simulated.group_start_s": start,
            },
        )
        assert config.simulated is not None
        agents.append(Agent(config, config.simulated.build()))
    for agent in agents:
        await agent.start()
    poller = Poller(PollerSettings((f"127.0.0.1:{ports[0]}",), timeout_s=5))
    try:
        await asyncio.sleep(4)  # a few periods: every agent hears every other
        record = await poller.poll()
        times = []
        for _ in range(polls):
            started = time.perf_counter()
            record = await poller.poll()
            times.append(time.perf_counter() - started)
            await asyncio.sleep(0.005)
    finally:
        await poller.aclose()
        for agent in agents:
            await agent.stop(grace_s=0)
    rows = len(record["tables"]["replication_group_members"]["rows"])
    assert rows == members, rows
    figures = {
        "members": members,
        "poll_ms_p50": round(statistics.median(times) * 1000, 2),
        "poll_ms_p99": round(quantile(times, 0.99) * 1000, 2),
        "record_bytes": len(encode(record)),
    }
    return figures, record


def append_and_read(record: dict[str, Any], seconds: float, root: Path) -> list[dict[str, Any]]:
    """Append ``record`` for ``seconds`` under each sync policy, then read the segments back."""
    results = []
    for policy in SyncPolicy:
        spool = root / policy.value
        times = []
        with SpoolWriter(spool, SpoolSettings(sync=policy)) as writer:
            deadline = time.perf_counter() + seconds
            while (now := time.perf_counter()) < deadline:
                writer.append(record)
                times.append(time.perf_counter() - now)
        elapsed = sum(times)
        started = time.perf_counter()
        read = sum(1 for path in sealed_segments(spool) for _ in read_segment(path))
        read_s = time.perf_counter() - started
        size = sum(path.stat().st_size for path in sealed_segments(spool))
        assert read == len(times)
        results.append(
            {
                "sync": policy.value,
                "appends_per_s": round(len(times) / elapsed),
                "append_ms_p50": round(statistics.median(times) * 1000, 3),
                "append_ms_p99": round(quantile(times, 0.99) * 1000, 3),
                "read_records_per_s": round(read / read_s),
                "read_mb_per_s": round(size / read_s / 1e6, 1),
            }
        )
    return results


async def main() -> int:
    """Run the benchmarks and print the tables in markdown."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--polls", type=int, default=200, help="polls per group (default 200)")
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per sync policy")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the figures here")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    with tempfile.TemporaryDirectory(prefix="grstats-bench-spool-") as tmp:
        root = Path(tmp)
        polls = []
        for members in (3, 9):
            figures, record = await poll_group(members, args.polls, root / "agents")
            polls.append(figures)
        appends = append_and_read(record, args.seconds, root / "spools")
    print("| members | poll p50 ms | poll p99 ms | record bytes | 30 days of records |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for row in polls:
        month = row["record_bytes"] * 30 * DAY_S / 2**30
        print(
            f"| {row['members']} | {row['poll_ms_p50']} | {row['poll_ms_p99']} | "
            f"{row['record_bytes']:,} | {month:.1f} GiB |"
        )
    print()
    print("| sync | appends/s | append p50 ms | append p99 ms | read records/s | read MB/s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for row in appends:
        print(
            f"| {row['sync']} | {row['appends_per_s']:,} | {row['append_ms_p50']} | "
            f"{row['append_ms_p99']} | {row['read_records_per_s']:,} | {row['read_mb_per_s']} |"
        )
    if args.json:
        args.json.write_text(json.dumps({"polls": polls, "appends": appends}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
