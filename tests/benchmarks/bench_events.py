"""What events cost: a 9-member group over a day with a failover every hour (issue 34).

Runs real agents in memory over the simulator for one failover (the primary crashes at 30 s,
is expelled at 40 s, comes back at 90 s and is ONLINE again before 120 s) and records every
EVENTS value the agents send. A day is 24 such hours: each member's list grows by the
events of one failover an hour (until the 500 it keeps), and each time one is added the
whole list travels once to each of the 8 other agents. From the measured hour this prints:

* the events per failover, per member and in all;
* the bytes on the wire (the protobuf ``Update`` of each EVENTS value, without gRPC's
  framing) over the day, per agent and for the group, against the counts every agent sends
  every second;
* the registry: one agent's SQLite file holding the day's events of all 9 members, its size
  and how long one save of the 9 records takes;
* the agent's memory for the day's events (the Python objects of all 9 lists);
* what the collector's asks cost: the events table of a Query answer with the whole day's
  lists, and with the last 10 minutes only (``QueryRequest.events_since_us``).

Usage: ``python -m tests.benchmarks.bench_events [--json FILE]`` (about 10 s).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from grstats.agent.convert import update_to_wire
from grstats.agent.gossip import Counts, Events, Key, Stamp, Update
from grstats.agent.registry import SqliteRegistry
from grstats.agent.runtime import Agent
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.transports import MemoryNetwork
from grstats.core.events import MAX_EVENTS
from grstats.core.query_wire import table_to_wire
from grstats.core.rows import REPLICATION_GROUP_EVENTS, EventRow, MemberStatsRow
from tests.agent.registry.records import full
from tests.agent.test_runtime import START_S, Clock, Group, _start_without_loop, settings, stop_all

MEMBERS = 9
HOURS = 24
CYCLE_S = 120


async def one_failover() -> dict[str, tuple[EventRow, ...]]:
    """Each member's events, as its agent keeps them, after one failover of the group."""
    scenario = load_scenario("primary-failover").with_members(MEMBERS)
    clock, network = Clock(), MemoryNetwork()
    addresses = tuple(f"agent-{index}:7400" for index in range(MEMBERS))
    agents = [
        Agent(
            settings(advertise=address, peers=addresses),
            SimulatedSource(scenario, index, seed=1, group_start_s=START_S, clock=clock.s),
            transport=network.transport(address),
            clock=clock.us,
        )
        for index, address in enumerate(addresses)
    ]
    for agent in agents:
        await _start_without_loop(agent)
    group = Group(agents, [], clock, network)
    try:
        while group.clock.seconds - START_S < CYCLE_S:
            await group.rounds(1)
        return {agent.member_id: agent.event_log.held() for agent in agents}
    finally:
        await stop_all(group)


def wire_bytes(member: str, events: tuple[EventRow, ...]) -> int:
    """The protobuf size of one EVENTS update of ``member`` holding ``events``."""
    update = Update(member, Stamp(int(START_S * 1_000_000), 1), Key.EVENTS, Events(events), 0)
    size: int = update_to_wire(update).ByteSize()
    return size


def query_bytes(lists: dict[str, tuple[EventRow, ...]], last_s: int) -> int:
    """The events table of a Query answer holding ``lists`` (the last ``last_s`` only, if set)."""
    rows = sorted((e for events in lists.values() for e in events), key=lambda e: e.event_time)
    if last_s:
        newest = rows[-1].event_time
        rows = [e for e in rows if e.event_time >= newest - last_s * 1_000_000]
    columns = REPLICATION_GROUP_EVENTS.columns
    table = table_to_wire(REPLICATION_GROUP_EVENTS.name, columns, [e.values() for e in rows])
    size: int = table.ByteSize()
    return size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    started = time.perf_counter()
    per_hour = asyncio.run(one_failover())
    counts = {member: len(events) for member, events in per_hour.items()}
    # The day: each hour, each member's list grows by its hour's events (times shifted).
    hour_us = 3600 * 1_000_000
    day_bytes = 0
    day_lists: dict[str, tuple[EventRow, ...]] = {}
    for member, events in per_hour.items():
        held: list[EventRow] = []
        for hour in range(HOURS):
            for event in events:
                shifted = dataclasses.replace(event, event_time=event.event_time + hour * hour_us)
                held.append(shifted)
                held = held[-MAX_EVENTS:]
                day_bytes += wire_bytes(member, tuple(held)) * (MEMBERS - 1)
        day_lists[member] = tuple(held)
    # Counts for comparison: one COUNTS update per agent per second to 8 others.
    any_member = next(iter(per_hour))
    counts_update = Update(
        any_member,
        Stamp(int(START_S * 1_000_000), 1),
        Key.COUNTS,
        Counts(
            MemberStatsRow(member_id=any_member, count_transactions_checked=10**9),
            gtids_present=False,
        ),
        0,
    )
    counts_day = update_to_wire(counts_update).ByteSize() * (MEMBERS - 1) * MEMBERS * 86400
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "members.sqlite3"
        records = [
            dataclasses.replace(full(member), events=events) for member, events in day_lists.items()
        ]
        with SqliteRegistry(path) as registry:
            registry.save([dataclasses.replace(r, events=()) for r in records])
            empty = sum(p.stat().st_size for p in Path(directory).iterdir())
            took = []
            for _ in range(5):
                began = time.perf_counter()
                registry.save(records)
                took.append(time.perf_counter() - began)
            registry.load()
        sizes = sum(p.stat().st_size for p in Path(directory).iterdir())
    tracemalloc.start()
    copies = [tuple(dataclasses.replace(e) for e in events) for events in day_lists.values()]
    memory = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del copies
    figures = {
        "members": MEMBERS,
        "hours": HOURS,
        "events_per_failover": sum(counts.values()),
        "events_per_failover_by_member": sorted(counts.values()),
        "events_kept_after_a_day": sum(len(e) for e in day_lists.values()),
        "largest_events_value_bytes": max(wire_bytes(m, e) for m, e in day_lists.items()),
        "collector_whole_list_bytes": query_bytes(day_lists, 0),
        "collector_last_10_min_bytes": query_bytes(day_lists, 600),
        "wire_bytes_per_day_group": day_bytes,
        "counts_wire_bytes_per_day_group": counts_day,
        "registry_bytes_with_events": sizes,
        "registry_bytes_without_events": empty,
        "registry_save_ms_median": round(sorted(took)[2] * 1000, 2),
        "events_memory_bytes": memory,
        "took_s": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
