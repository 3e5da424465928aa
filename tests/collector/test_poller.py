"""The poller against a real simulated group over gRPC: snapshots, failover, dead and hung nodes."""

from __future__ import annotations

import math
import socket
import time
from typing import TYPE_CHECKING, Any

import pytest
from structlog.testing import capture_logs

from grstats.cli.demo import free_ports
from grstats.collector.errors import NoAgentAnswered
from grstats.collector.poller import Poller, PollerSettings, Schedule
from grstats.collector.records import TABLE_NAMES, table_rows
from grstats.core.errors import ConfigError
from grstats.core.rows import EXTENDED_COLUMNS
from tests.agent.test_runtime import Group, start_group

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator, MutableMapping


@pytest.fixture(name="group")
async def _group() -> AsyncIterator[Group]:
    group = await start_group(3)
    await group.rounds(2)
    yield group
    for agent in group.agents:
        await agent.stop(grace_s=0)


@pytest.fixture(name="dead")
def _dead() -> str:
    """An address on 127.0.0.1 where nothing listens."""
    return f"127.0.0.1:{free_ports(1)[0]}"


@pytest.fixture(name="hung")
def _hung() -> Iterator[str]:
    """An address that accepts connections and never says a word (a stuck agent)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture(name="poller")
async def _poller() -> AsyncIterator[list[Poller]]:
    """Pollers the test makes; their channels are closed at the end."""
    made: list[Poller] = []
    yield made
    for poller in made:
        await poller.aclose()


def make(made: list[Poller], *nodes: str, timeout_s: float = 2.0) -> Poller:
    """A poller of ``nodes``, closed at the end of the test."""
    poller = Poller(PollerSettings(nodes, timeout_s=timeout_s))
    made.append(poller)
    return poller


def events(logs: list[MutableMapping[str, Any]], name: str) -> list[MutableMapping[str, Any]]:
    """The captured log events called ``name``."""
    return [entry for entry in logs if entry["event"] == name]


async def test_snapshot_of_every_table(group: Group, poller: list[Poller]) -> None:
    """One poll returns all four tables with the extended columns, stamped and named."""
    first, second, _ = (agent.address for agent in group.agents)
    before = time.time_ns() // 1000
    record = await make(poller, first, second).poll()
    after = time.time_ns() // 1000
    assert record["agent"] == first
    assert record["agent_member"] == group.agents[0].member_id
    assert before <= record["collected_at_us"] <= after
    assert set(record["tables"]) == set(TABLE_NAMES)
    members = sorted(agent.member_id for agent in group.agents)
    for name in TABLE_NAMES:
        rows = table_rows(record, name)
        assert sorted(str(row["MEMBER_ID"]) for row in rows) == members
        assert all(column.name in rows[0] for column in EXTENDED_COLUMNS)


async def test_failover_when_the_agent_stops(group: Group, poller: list[Poller]) -> None:
    """When the agent being polled stops, the same poll gets the next one; it then stays there."""
    first, second, third = (agent.address for agent in group.agents)
    polling = make(poller, first, second, third)
    assert (await polling.poll())["agent"] == first
    stopped = group.agents.pop(0)
    await stopped.stop(grace_s=0)
    with capture_logs() as logs:
        record = await polling.poll()
        again = await polling.poll()
    assert (record["agent"], again["agent"]) == (second, second)
    assert len(table_rows(record, "replication_group_members")) == 3  # the stopped one is listed
    (failover,) = events(logs, "agent_failover")
    assert (failover["node"], failover["next"]) == (first, second)
    assert failover["reason"].startswith("unavailable")
    assert polling.failovers == 1


async def test_dead_first_node(group: Group, poller: list[Poller], dead: str) -> None:
    """A first --node where nothing listens is passed over for the next one."""
    second = group.agents[1].address
    with capture_logs() as logs:
        record = await make(poller, dead, second).poll()
    assert record["agent"] == second
    (failover,) = events(logs, "agent_failover")
    assert failover["node"] == dead
    assert "Connection refused" in failover["reason"]


async def test_hung_node_times_out(group: Group, poller: list[Poller], hung: str) -> None:
    """An agent that never answers is given up after the timeout, for the next one."""
    second = group.agents[1].address
    started = time.monotonic()
    with capture_logs() as logs:
        record = await make(poller, hung, second, timeout_s=0.5).poll()
    assert record["agent"] == second
    assert 0.5 <= time.monotonic() - started < 3
    (failover,) = events(logs, "agent_failover")
    assert failover["reason"] == "no answer within 0.5 s"


async def test_round_robin_wraps_around(group: Group, poller: list[Poller], dead: str) -> None:
    """Failing over from the last node goes back to the first."""
    first, second, _ = (agent.address for agent in group.agents)
    polling = make(poller, first, second, dead)
    polling._index = 2
    assert (await polling.poll())["agent"] == first
    assert polling.node == first


async def test_no_agent_answers(poller: list[Poller], dead: str, hung: str) -> None:
    """When every node fails, the error names each one and why; the next poll tries again."""
    polling = make(poller, dead, hung, timeout_s=0.3)
    with capture_logs() as logs:
        with pytest.raises(NoAgentAnswered) as caught:
            await polling.poll()
        with pytest.raises(NoAgentAnswered):
            await polling.poll()
    message = str(caught.value)
    assert f"{dead}: unavailable" in message
    assert f"{hung}: no answer within 0.3 s" in message
    assert len(events(logs, "agent_failover")) == 2  # logged on the way down, not every poll


class TestSchedule:
    def test_on_time_ticks_follow_the_grid(self) -> None:
        """Polls that finish in time wait for the next tick of the grid."""
        schedule = Schedule(2.0)
        assert schedule.next(100.0) == (0.0, 0)
        assert schedule.next(100.3) == pytest.approx((1.7, 0))
        assert schedule.next(102.5) == pytest.approx((1.5, 0))

    def test_overrun_skips_ticks_without_bunching(self) -> None:
        """A poll that took 3.5 intervals skips the ticks it covered; the next waits for the grid."""
        schedule = Schedule(1.0)
        schedule.next(0.0)
        delay, missed = schedule.next(3.5)
        assert (delay, missed) == pytest.approx((0.5, 3))
        assert schedule.next(4.1) == pytest.approx((0.9, 0))

    def test_exactly_on_a_tick(self) -> None:
        """Finishing exactly at the next tick polls at once, missing nothing."""
        schedule = Schedule(1.0)
        schedule.next(10.0)
        assert schedule.next(11.0) == (0.0, 0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nodes": ()}, "nodes: () is empty"),
        ({"nodes": ("a:1", "nope")}, "nodes[1]: 'nope' is not host:port"),
        ({"interval_s": 0.5}, "interval_s: 0.5 is not a number of seconds from 1 to 3600"),
        ({"interval_s": 3601}, "interval_s: 3601"),
        ({"interval_s": math.nan}, "interval_s: nan"),
        ({"interval_s": True}, "interval_s: True"),
        ({"timeout_s": 0}, "timeout_s: 0 is not a number of seconds over 0 up to 60"),
        ({"timeout_s": 61}, "timeout_s: 61"),
    ],
)
def test_settings_name_the_bad_field(kwargs: dict[str, Any], message: str) -> None:
    """Invalid poller settings are refused with the field and its value."""
    settings: dict[str, Any] = {"nodes": ("a:1",)} | kwargs
    with pytest.raises(ConfigError) as caught:
        PollerSettings(**settings)
    assert str(caught.value).startswith(message)
