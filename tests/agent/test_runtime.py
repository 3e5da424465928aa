"""Agents of one simulated group: gossip and the registry in memory; gRPC's services on 127.0.0.1.

The helpers here (``start_group``, ``Group``, ``settings``, ``stats``) are shared by the other
tests of several agents. ``start_group`` runs real gRPC servers by default; with
``memory=True`` the agents are wired by a :class:`MemoryNetwork`, without sockets.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from grstats.agent.config import AgentConfig
from grstats.agent.convert import uuid_to_bytes
from grstats.agent.gossip import Key
from grstats.agent.limits import DEFAULT_LIMITS, LimitsConfig
from grstats.agent.registry import MemberRecord, SqliteRegistry
from grstats.agent.runtime import Agent
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources import SimulatedSourceConfig
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.transports import FaultyTransport, GrpcTransport, MemoryNetwork
from grstats.core.query_wire import table_from_wire
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping
    from pathlib import Path

    from grstats.agent.registry import MemberRegistry
    from grstats.agent.transports import Transport

START_S = 1_700_000_000.0


def settings(**changes: Any) -> AgentConfig:
    """An agent's config for tests: any free port of 127.0.0.1, a generous 1.9 s deadline.

    The deadline must be shorter than the period, hence ``period_s`` 2: tests drive the
    periods by hand, one per second of the test clock, and 5 silent periods make the 10 s of
    silence of a real agent. The simulated section is required and unused (tests give the
    source).
    """
    base = AgentConfig(
        source="simulated",
        simulated=SimulatedSourceConfig(member_index=0, group_start_s=START_S),
        listen="127.0.0.1:0",
        agent_port=7400,
        period_s=2.0,
        silence_periods=5,
        rpc_timeout_s=1.9,
    )
    return dataclasses.replace(base, **changes)


Settings = settings  # the name tests/collector imports


class Clock:
    """A clock the test moves; agents and simulated sources read it."""

    def __init__(self) -> None:
        self.seconds = START_S + 10

    def us(self) -> int:
        return int(self.seconds * 1_000_000)

    def s(self) -> float:
        return self.seconds


class Links(Protocol):
    """One agent's end of its links: the peers it cannot reach (FaultyTransport, MemoryTransport)."""

    @property
    def broken(self) -> set[str]: ...


@dataclass
class Group:
    """Agents of one simulated group, their ends of the links and the shared clock."""

    agents: list[Agent]
    transports: list[Links]
    clock: Clock
    network: MemoryNetwork | None = None

    async def rounds(self, count: int = 1, step_s: float = 1.0) -> None:
        """Advance the clock and run one period on every agent, ``count`` times.

        Pushes over gRPC travel on streams that no one waits for: after each round, wait (up
        to 5 s of real time) until every serving agent holds the latest counts of every agent
        that can reach it, as it would within a few ms of a real period. In memory they have
        arrived when the round ends.
        """
        for _ in range(count):
            self.clock.seconds += step_s
            for agent in self.agents:
                await agent.run_period()
            await self.settle()

    async def settle(self, timeout_s: float = 5.0) -> None:
        """Wait until the pushes of the last round have arrived (see :meth:`rounds`)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not self._delivered():  # noqa: ASYNC110  (polls a condition over agents)
            await asyncio.sleep(0.002)

    def _delivered(self) -> bool:
        for sender, transport in zip(self.agents, self.transports, strict=False):
            own = sender.state.value(sender.member_id, Key.COUNTS) if sender.state else None
            if own is None:
                continue
            for receiver in self.agents:
                if receiver is sender or not receiver.serving or receiver.state is None:
                    continue
                if receiver.address in transport.broken:
                    continue
                held = receiver.state.value(sender.member_id, Key.COUNTS)
                if held is None or held.update.stamp != own.update.stamp:
                    return False
        return True


async def start_group(
    members: int,
    scenario: str = "steady",
    started: int | None = None,
    limits: LimitsConfig = DEFAULT_LIMITS,
    *,
    memory: bool = False,
    registries: Mapping[int, MemberRegistry] | None = None,
    group_labels: Mapping[int, str] | None = None,
) -> Group:
    """Start ``members`` agents (the first ``started``) with the loop disabled: tests drive it.

    ``group_labels`` gives some agents (by index) a ``group_label``.

    Over gRPC each listens on a free port of 127.0.0.1, and the started ones learn their
    peers once they are bound; with ``memory`` the agents are ``agent-N:7400`` on one
    :class:`MemoryNetwork`, each with all of them as peers.
    ``registries`` gives some agents (by index) a member registry.
    """
    clock = Clock()
    size = load_scenario(scenario).with_members(members)
    network = MemoryNetwork() if memory else None
    addresses = tuple(f"agent-{index}:7400" for index in range(members))
    agents: list[Agent] = []
    links: list[Links] = []
    for index in range(members):
        transport: Transport
        if network is not None:
            transport = memory_end = network.transport(addresses[index])
            config = settings(limits=limits, advertise=addresses[index], peers=addresses)
            links.append(memory_end)
        else:
            transport = faulty = FaultyTransport(GrpcTransport(limits))
            config = settings(limits=limits)
            links.append(faulty)
        label = (group_labels or {}).get(index)
        if label is not None:
            config = dataclasses.replace(config, group_label=label)
        source = SimulatedSource(size, index, seed=1, group_start_s=START_S, clock=clock.s)
        registry = (registries or {}).get(index)
        agents.append(Agent(config, source, transport=transport, registry=registry, clock=clock.us))
    for agent in agents[: started or members]:
        await _start_without_loop(agent)
    if network is None:
        bound = tuple(agent.address for agent in agents if agent.serving)
        for agent in agents:
            agent.config = dataclasses.replace(agent.config, peers=bound)
    return Group(agents, links, clock, network)


async def _start_without_loop(agent: Agent) -> None:
    await agent.start()
    assert agent._task is not None
    agent._task.cancel()


async def stop_all(group: Group) -> None:
    """Stop every agent of the group."""
    for agent in group.agents:
        await agent.stop(grace_s=0)


@pytest.fixture(name="group")
async def _group() -> AsyncIterator[Group]:
    """Three agents on an in-memory network."""
    group = await start_group(3, memory=True)
    yield group
    await stop_all(group)


@pytest.fixture(name="grpc_group")
async def _grpc_group() -> AsyncIterator[Group]:
    """Three agents over gRPC on 127.0.0.1."""
    group = await start_group(3)
    yield group
    await stop_all(group)


def stats(agent: Agent) -> dict[str, dict[str, Any]]:
    """The agent's replication_group_member_stats rows by MEMBER_ID."""
    columns, rows = agent.tables(extended=True)["replication_group_member_stats"]
    named = [{c.name: v for c, v in zip(columns, row, strict=True)} for row in rows]
    return {str(row["MEMBER_ID"]): row for row in named}


def members_of(agent: Agent) -> set[str]:
    """The MEMBER_IDs of the agent's replication_group_members."""
    columns, rows = agent.tables(extended=False)["replication_group_members"]
    at = [column.name for column in columns].index("MEMBER_ID")
    return {str(row[at]) for row in rows}


# -- gossip, in memory -------------------------------------------------------------------


async def test_every_agent_serves_every_member(group: Group) -> None:
    """After two rounds each agent lists all members, each with that member's own counts."""
    await group.rounds(2)
    truth = {a.member_id: a.local.stats.count_transactions_checked for a in group.agents}  # type: ignore[union-attr]
    for agent in group.agents:
        rows = stats(agent)
        assert sorted(rows) == sorted(truth)
        assert {m: r["COUNT_TRANSACTIONS_CHECKED"] for m, r in rows.items()} == truth
        assert all(r["CONNECTED"] == "YES" for r in rows.values())


async def test_clock_offsets_come_from_each_agents_clock() -> None:
    """A peer whose clock runs 2 s ahead is estimated 2 s ahead (NTP's formula on 4 stamps)."""
    clock, network = Clock(), MemoryNetwork()
    size = load_scenario("steady").with_members(2)
    addresses = ("agent-0:7400", "agent-1:7400")
    clocks = (clock.us, lambda: clock.us() + 2_000_000)
    ends = [network.transport(address) for address in addresses]
    agents = [
        Agent(
            settings(advertise=address, peers=addresses),
            SimulatedSource(size, index, seed=1, group_start_s=START_S, clock=clock.s),
            transport=ends[index],
            clock=clocks[index],
        )
        for index, address in enumerate(addresses)
    ]
    for agent in agents:
        await _start_without_loop(agent)
    group = Group(agents, list(ends), clock, network)
    try:
        await group.rounds(2)
        first, second = agents
        assert first.offsets == {second.member_id: 2_000_000}
        assert second.offsets == {first.member_id: -2_000_000}
    finally:
        await stop_all(group)


async def test_broken_link_is_bridged_by_relay(group: Group) -> None:
    """With the A-C link cut both ways, A and C still get each other's fresh rows via B."""
    a, b, c = group.agents
    assert group.network is not None
    await group.rounds(1)
    group.network.cut(a.address, c.address)
    seen = []
    for _ in range(3):
        await group.rounds(1)
        seen.append(c.local.stats.count_transactions_checked)  # type: ignore[union-attr]
    rows = stats(a)[c.member_id]
    assert rows["COUNT_TRANSACTIONS_CHECKED"] in seen[-2:]  # at most one period behind, via B
    assert rows["SOURCE"] == b.address
    assert rows["CONNECTED"] == "YES"
    assert rows["AGE_MS"] <= 2_000
    assert c.address in a.unreachable


async def test_silent_agent_is_not_connected_and_its_row_stays(group: Group) -> None:
    """An agent silent for 10 periods shows as not connected, its last row kept."""
    a, b, c = group.agents
    assert group.network is not None
    await group.rounds(2)
    last = stats(a)[c.member_id]["COUNT_TRANSACTIONS_CHECKED"]
    silent = group.agents.pop()
    group.network.cut(silent.address, a.address)
    group.network.cut(silent.address, b.address)
    await group.rounds(9)
    assert stats(a)[c.member_id]["CONNECTED"] == "YES"  # 9 periods: not yet
    await group.rounds(2)
    row = stats(a)[c.member_id]
    assert row["CONNECTED"] == "NO"
    assert row["COUNT_TRANSACTIONS_CHECKED"] == last
    group.agents.append(silent)


async def test_a_healed_link_carries_news_again(group: Group) -> None:
    """Once a cut link heals, the agent that was cut off is connected again everywhere."""
    a, _, c = group.agents
    assert group.network is not None
    await group.rounds(1)
    for other in group.agents[:2]:
        group.network.cut(c.address, other.address)
    await group.rounds(11)
    assert stats(a)[c.member_id]["CONNECTED"] == "NO"
    for other in group.agents[:2]:
        group.network.heal(c.address, other.address)
    await group.rounds(2)
    assert stats(a)[c.member_id]["CONNECTED"] == "YES"
    assert not c.unreachable


async def test_real_loop_converges() -> None:
    """With the period loop running for real, agents converge and keep running periods."""
    scenario = load_scenario("steady")
    network = MemoryNetwork()
    addresses = tuple(f"agent-{index}:7400" for index in range(3))
    start = time.time() - 5
    agents = [
        Agent(
            settings(advertise=address, peers=addresses, period_s=1.0, rpc_timeout_s=0.5),
            SimulatedSource(scenario, index, seed=1, group_start_s=start),
            transport=network.transport(address),
        )
        for index, address in enumerate(addresses)
    ]
    for agent in agents:
        await agent.start()
    try:
        for _ in range(100):
            await asyncio.sleep(0.1)
            if all(
                agent.periods >= 2
                and len(stats(agent)) == 3
                and all(r["CONNECTED"] == "YES" for r in stats(agent).values())
                for agent in agents
            ):
                break
        assert all(len(stats(agent)) == 3 for agent in agents)
        assert all(agent.periods >= 2 for agent in agents)
    finally:
        for agent in agents:
            await agent.stop(grace_s=0)


# -- the registry, in memory ---------------------------------------------------------------


async def test_restarted_agent_lists_every_member_at_once(tmp_path: Path) -> None:
    """After a restart, the agent being asked lists all members from its registry at once."""
    registry_path = tmp_path / "registry.sqlite"
    group = await start_group(3, memory=True, registries={1: SqliteRegistry(registry_path)})
    assert group.network is not None
    asked = group.agents[1]
    await group.rounds(3)
    members = {a.member_id for a in group.agents}
    await asked.stop(grace_s=0)  # flushes the registry
    restarted = Agent(
        asked.config,
        SimulatedSource(
            load_scenario("steady"), 1, seed=1, group_start_s=START_S, clock=group.clock.s
        ),
        transport=group.network.transport(asked.address),
        registry=SqliteRegistry(registry_path),
        clock=group.clock.us,
    )
    await _start_without_loop(restarted)
    try:
        rows = stats(restarted)  # before any read or exchange
        assert set(rows) == members
        # its own member's agent is this one (known from the registry): the others unheard
        assert {m: row["CONNECTED"] for m, row in rows.items()} == {
            m: "YES" if m == asked.member_id else "NO" for m in members
        }
        assert restarted.member_id == asked.member_id
        assert all(row["COUNT_TRANSACTIONS_CHECKED"] > 0 for row in rows.values())
    finally:
        await restarted.stop(grace_s=0)
        for agent in (group.agents[0], group.agents[2]):
            await agent.stop(grace_s=0)


async def test_members_forget_while_the_agent_runs(tmp_path: Path) -> None:
    """A departed member forgotten in the registry of a running agent is gone after its flush."""
    registry_path = tmp_path / "registry.sqlite"
    departed = "aaaaaaaa-0000-4000-8000-000000000001"
    seen_us = int(START_S * 1_000_000)
    with SqliteRegistry(registry_path) as registry:
        registry.save([MemberRecord(departed, "db9", 3306, "db9:7400", seen_us, seen_us, "ONLINE")])
    group = await start_group(
        3, started=2, memory=True, registries={2: SqliteRegistry(registry_path)}
    )
    asked = group.agents[2]
    await _start_without_loop(asked)
    try:
        await group.rounds(2)
        await asked.flush()
        assert departed in stats(asked) or departed in members_of(asked)
        with SqliteRegistry(registry_path) as other:  # grstats members forget, another process
            assert other.forget(departed)
        await asked.flush()
        assert departed not in members_of(asked)
        await asked.flush()
        with SqliteRegistry(registry_path) as other:
            assert departed not in {record.member_id for record in other.load()}
            assert asked.member_id in {record.member_id for record in other.load()}
    finally:
        await stop_all(group)


# -- peers, in memory ----------------------------------------------------------------------


async def test_discovers_peers_from_the_membership(group: Group) -> None:
    """Without peers, an agent's peers are the other members' hosts at the agent port."""
    agent = group.agents[0]
    agent.config = dataclasses.replace(agent.config, peers=())
    await agent.run_period()
    assert sorted(agent.peers()) == ["127.0.0.1:7400"]  # every simulated member is 127.0.0.1


async def test_discover_peers_adds_to_or_turns_off_the_peers(group: Group) -> None:
    """discover_peers=true adds the members' hosts to the peers; false leaves only the peers."""
    agent = group.agents[0]
    given = [peer for peer in agent.config.peers if peer != agent.address]
    await agent.run_period()
    agent.config = dataclasses.replace(agent.config, discover_peers=True)
    assert sorted(agent.peers()) == sorted([*given, "127.0.0.1:7400"])
    agent.config = dataclasses.replace(agent.config, discover_peers=False)
    assert sorted(agent.peers()) == sorted(given)
    agent.config = dataclasses.replace(agent.config, peers=())
    assert agent.peers() == []


# -- the gRPC services, on 127.0.0.1 -------------------------------------------------------


async def test_grpc_group_converges_with_the_agents_clocks(grpc_group: Group) -> None:
    """Over gRPC every agent serves every member, and answers carry the agent's clock."""
    await grpc_group.rounds(4)
    for agent in grpc_group.agents:
        assert sorted(stats(agent)) == sorted(a.member_id for a in grpc_group.agents)
        assert agent.offsets  # some exchange answered
        assert all(offset == 0 for offset in agent.offsets.values())


async def query(address: str, request: pb.QueryRequest) -> pb.QueryResponse:
    """One Query.Read over a real channel."""
    async with grpc.aio.insecure_channel(address) as channel:
        response: pb.QueryResponse = await pb_grpc.QueryStub(channel).Read(request, timeout=5)
        return response


async def test_query_service(grpc_group: Group) -> None:
    """Query.Read returns the named tables with MySQL's column names; a bad name is refused."""
    await grpc_group.rounds(2)
    asked = grpc_group.agents[1]
    response = await query(asked.address, pb.QueryRequest(tables=["replication_group_members"]))
    assert [t.name for t in response.tables] == ["replication_group_members"]
    columns, rows = table_from_wire(response.tables[0])
    assert columns[:3] == ["CHANNEL_NAME", "MEMBER_ID", "MEMBER_HOST"]
    assert len(rows) == 3
    assert response.agent == asked.address
    assert response.member == uuid_to_bytes(asked.member_id)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await query(asked.address, pb.QueryRequest(tables=["nope"]))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "'nope'" in (caught.value.details() or "")


async def test_cached_answers_are_the_same_tables_with_their_own_time(grpc_group: Group) -> None:
    """Plain answers reuse the encoded tables until the state changes; each has its own time.

    The time is the agent's clock, the one the test moves.
    """
    await grpc_group.rounds(2)
    address = grpc_group.agents[0].address
    first = await query(address, pb.QueryRequest())
    assert first.served_at_us == grpc_group.clock.us()
    grpc_group.clock.seconds += 0.5
    second = await query(address, pb.QueryRequest())
    assert first.tables == second.tables
    assert [t.name for t in first.tables] == list(grpc_group.agents[0].tables(extended=False))
    assert second.served_at_us == first.served_at_us + 500_000
    await grpc_group.rounds(1)
    third = await query(address, pb.QueryRequest())
    assert third.tables != second.tables  # the counts moved on


async def exchange(address: str, request: pb.ExchangeRequest) -> pb.ExchangeResponse:
    """One Gossip.Exchange over a real channel."""
    async with grpc.aio.insecure_channel(address) as channel:
        response: pb.ExchangeResponse = await pb_grpc.GossipStub(channel).Exchange(
            request, timeout=5
        )
        return response


async def test_exchange_answers_carry_the_agents_clock(grpc_group: Group) -> None:
    """An Exchange's answer is stamped with the answering agent's clock, received and sent."""
    await grpc_group.rounds(1)
    a, b, _ = grpc_group.agents
    request = pb.ExchangeRequest(sender="x:1", sender_member=uuid_to_bytes(a.member_id))
    answer = await exchange(b.address, request)
    assert answer.received_at_us == answer.sent_at_us == grpc_group.clock.us()
    assert answer.member == uuid_to_bytes(b.member_id)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        pytest.param(lambda r: setattr(r, "sender_member", b"x"), "sender_member", id="bad-sender"),
        pytest.param(
            lambda r: r.updates.add(origin=b"\x01" * 16, gtid_executed="garbage"),
            "updates[0]",
            id="garbage-gtid",
        ),
        pytest.param(
            lambda r: r.updates.add(origin=b"\x01" * 3, health=pb.Health()),
            "updates[0].origin",
            id="bad-origin",
        ),
        pytest.param(lambda r: r.digest.add(origin=b"\x02"), "digest[0].origin", id="bad-digest"),
    ],
)
async def test_malformed_gossip_is_refused_and_the_agent_goes_on(
    grpc_group: Group, mutate: Any, field: str
) -> None:
    """Malformed exchanges get INVALID_ARGUMENT naming the field; rows stay; the agent answers."""
    a, b, _ = grpc_group.agents
    await grpc_group.rounds(2)
    before = stats(b)
    request = pb.ExchangeRequest(sender="fuzz:1", sender_member=uuid_to_bytes(a.member_id))
    mutate(request)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await exchange(b.address, request)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in (caught.value.details() or "")
    assert stats(b) == before
    await grpc_group.rounds(1)
    assert len(stats(b)) == 3


async def test_unknown_member_never_gets_a_row(grpc_group: Group) -> None:
    """A well-formed update about a member no membership lists is dropped, not served."""
    a, b, _ = grpc_group.agents
    await grpc_group.rounds(2)
    stranger = "dddddddd-dddd-dddd-dddd-dddddddddddd"
    update = pb.Update(origin=uuid_to_bytes(stranger), incarnation=1, version=1)
    update.counts.transactions_checked = 5
    request = pb.ExchangeRequest(
        sender="x:1", sender_member=uuid_to_bytes(a.member_id), updates=[update]
    )
    await exchange(b.address, request)
    assert stranger not in stats(b)


async def test_health_serving_then_not_serving() -> None:
    """Health is SERVING while the agent runs and NOT_SERVING once stop begins."""
    group = await start_group(1)
    agent = group.agents[0]
    async with grpc.aio.insecure_channel(agent.address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        reply = await stub.Check(
            health_pb2.HealthCheckRequest(service="grstats.v1.Query"), timeout=5
        )
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        await agent._health.enter_graceful_shutdown()
        reply = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING
    await agent.stop(grace_s=0)
