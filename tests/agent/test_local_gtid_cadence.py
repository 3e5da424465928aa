"""The two GTID texts a member reports ride on common reads, so that one subtraction of them is one instant.

TRANSACTIONS_COMMITTED_ALL_MEMBERS rides on the reads after each ``gtid_interval_s`` mark
(GR's 30 s, ``Certifier_broadcast_thread::dispatcher``), gtid_executed is sampled on those after
each ``executed_interval_s`` mark (GR's 60 s, ``broadcast_gtid_executed``). The report's "GTIDs
ahead" subtracts the first from the second: both come from one read at every gtid_executed
sample, and at every read when the two intervals are equal (docs/configuration.md).
"""

from __future__ import annotations

import dataclasses

import structlog

from grstats.agent.gossip import Counts, Key
from grstats.agent.local import LocalMember
from grstats.agent.metrics import AgentMetrics
from grstats.agent.sources import MemorySource
from tests.agent.test_local_faults import UUID, Clock, member, snapshot


def gtid_reads(local: LocalMember, clock: Clock) -> tuple[bool, bool]:
    """Whether the read just made sampled gtid_executed, and whether its counts carry the GTID columns."""
    executed = local.state.value(UUID, Key.GTID_EXECUTED)
    counts = local.state.value(UUID, Key.COUNTS)
    assert executed is not None
    assert counts is not None
    assert isinstance(counts.update.value, Counts)
    return executed.update.sent_at_us == clock.us, counts.update.value.gtids_present


async def cadence(local: LocalMember, clock: Clock, seconds: int) -> tuple[list[int], list[int]]:
    """The seconds (since the start) of the reads that sampled gtid_executed, and of those with GTID columns."""
    executed, columns = [], []
    for second in range(seconds):
        clock.advance(1)
        await local.read()
        sampled, present = gtid_reads(local, clock)
        if sampled:
            executed.append(second + 1)
        if present:
            columns.append(second + 1)
    return executed, columns


async def test_every_gtid_executed_sample_rides_with_the_gtid_columns() -> None:
    """At the defaults (30 s and 60 s), each gtid_executed sample's read also carries the GTID columns."""
    clock = Clock()
    local = member(MemorySource(snapshot()), clock)
    executed, columns = await cadence(local, clock, 180)
    assert executed == [1, 40, 100, 160]  # the first read, then the 60 s marks (the start is :20)
    assert columns == [1, 10, 40, 70, 100, 130, 160]  # the first read, then the 30 s marks
    assert set(executed) <= set(columns)


async def test_equal_intervals_make_every_gtid_read_one_instant() -> None:
    """With executed_interval_s equal to gtid_interval_s, the two texts always come from the same reads."""
    clock = Clock()
    plain = member(MemorySource(snapshot()), clock)
    config = dataclasses.replace(plain.config, executed_interval_s=30.0)
    local = LocalMember(
        config,
        MemorySource(snapshot()),
        clock=clock,
        log=structlog.get_logger(),
        metrics=AgentMetrics(),
    )
    executed, columns = await cadence(local, clock, 180)
    assert executed == columns
    assert len(executed) == 7  # the first read, then 6 marks of 30 s
