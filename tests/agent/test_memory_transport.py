"""The in-memory network: delivery, cut and healed links, streams, and agents without servers."""

from __future__ import annotations

import pytest

from grstats.agent.gossip import Key, Stamp, Update
from grstats.agent.messages import Answer, Gossip
from grstats.agent.runtime import Agent
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.transports import MemoryNetwork, ServingTransport
from grstats.core.errors import PeerUnreachable
from grstats.core.model import SourceHealth
from tests.agent.test_runtime import START_S, Clock, settings

A = "d8a706aa-16ee-11eb-8b4c-0800270d5e61"
NEWS = Gossip(
    sender="a:1",
    sender_member=A,
    updates=(Update(A, Stamp(1, 1), Key.HEALTH, SourceHealth(), 5),),
    sent_at_us=5,
)


class Recorder:
    """A receiver that keeps what it is handed and answers with its own clock's times."""

    def __init__(self) -> None:
        self.taken: list[tuple[Gossip, int]] = []
        self.asked: list[tuple[Gossip, int, int | None]] = []

    def take(self, news: Gossip, size_bytes: int) -> None:
        self.taken.append((news, size_bytes))

    def answer(self, request: Gossip, size_bytes: int, received_at_us: int | None) -> Answer:
        self.asked.append((request, size_bytes, received_at_us))
        return Answer(member=A, received_at_us=1, sent_at_us=2)


@pytest.fixture(name="network")
def _network() -> MemoryNetwork:
    return MemoryNetwork()


class TestDelivery:
    async def test_push_is_handed_over_at_once(self, network: MemoryNetwork) -> None:
        """A push is taken by the receiver at the address before push returns, as it was sent."""
        receiver = Recorder()
        network.register("b:1", receiver)
        size = await network.transport("a:1").push("b:1", NEWS, timeout_s=1)
        assert receiver.taken == [(NEWS, 0)]
        assert size == 0

    async def test_exchange_returns_the_receivers_answer(self, network: MemoryNetwork) -> None:
        """An exchange's request reaches the receiver, whose answer comes back; its clock rules."""
        receiver = Recorder()
        network.register("b:1", receiver)
        answer = await network.transport("a:1").exchange("b:1", NEWS, timeout_s=1)
        assert answer == Answer(member=A, received_at_us=1, sent_at_us=2)
        assert receiver.asked == [(NEWS, 0, None)]

    async def test_an_address_without_an_agent_is_unreachable(self, network: MemoryNetwork) -> None:
        """Nobody at the address: PeerUnreachable naming it, for pushes and exchanges."""
        transport = network.transport("a:1")
        with pytest.raises(PeerUnreachable, match=r"^nobody:1: "):
            await transport.push("nobody:1", NEWS, timeout_s=1)
        with pytest.raises(PeerUnreachable, match=r"^nobody:1: "):
            await transport.exchange("nobody:1", NEWS, timeout_s=1)

    async def test_a_closed_transport_no_longer_delivers(self, network: MemoryNetwork) -> None:
        """Closing an agent's transport unregisters its receiver: it is unreachable."""
        ours, theirs = network.transport("a:1"), network.transport("b:1")
        theirs.serve(Recorder())
        await ours.push("b:1", NEWS, timeout_s=1)
        await theirs.aclose()
        assert network.receiver("b:1") is None
        with pytest.raises(PeerUnreachable):
            await ours.push("b:1", NEWS, timeout_s=1)


class TestLinks:
    async def test_a_cut_link_is_unreachable_both_ways_until_healed(
        self, network: MemoryNetwork
    ) -> None:
        """cut() breaks both directions with PeerUnreachable; heal() restores delivery."""
        a, b = network.transport("a:1"), network.transport("b:1")
        a_in, b_in = Recorder(), Recorder()
        a.serve(a_in)
        b.serve(b_in)
        network.cut("a:1", "b:1")
        with pytest.raises(PeerUnreachable, match="link broken"):
            await a.push("b:1", NEWS, timeout_s=1)
        with pytest.raises(PeerUnreachable, match="link broken"):
            await b.exchange("a:1", NEWS, timeout_s=1)
        assert (a_in.taken, a_in.asked, b_in.taken) == ([], [], [])
        network.heal("a:1", "b:1")
        await a.push("b:1", NEWS, timeout_s=1)
        await b.exchange("a:1", NEWS, timeout_s=1)
        assert len(b_in.taken) == len(a_in.asked) == 1

    async def test_a_link_may_be_cut_one_way(self, network: MemoryNetwork) -> None:
        """A peer in a transport's ``broken`` set is unreachable from it only."""
        a, b = network.transport("a:1"), network.transport("b:1")
        a.serve(Recorder())
        b.serve(Recorder())
        a.broken.add("b:1")
        with pytest.raises(PeerUnreachable):
            await a.push("b:1", NEWS, timeout_s=1)
        await b.push("a:1", NEWS, timeout_s=1)

    async def test_a_new_transport_keeps_the_cuts_of_its_address(
        self, network: MemoryNetwork
    ) -> None:
        """A restarted agent's new transport is still cut off where its address was."""
        network.transport("a:1")
        network.transport("b:1").serve(Recorder())
        network.cut("a:1", "b:1")
        restarted = network.transport("a:1")
        assert restarted.broken == {"b:1"}
        with pytest.raises(PeerUnreachable):
            await restarted.push("b:1", NEWS, timeout_s=1)


class TestStreams:
    async def test_a_stream_lasts_while_the_receiver_does(self, network: MemoryNetwork) -> None:
        """A stream opens with the first push and ends when the peer's agent is replaced."""
        a = network.transport("a:1")
        network.register("b:1", Recorder())
        assert not a.streaming("b:1")
        await a.push("b:1", NEWS, timeout_s=1)
        assert a.streaming("b:1")
        network.register("b:1", Recorder())  # the peer restarted
        assert not a.streaming("b:1")

    async def test_no_stream_over_a_cut_link(self, network: MemoryNetwork) -> None:
        """While a link is cut, no stream is open over it."""
        a = network.transport("a:1")
        network.register("b:1", Recorder())
        await a.push("b:1", NEWS, timeout_s=1)
        network.cut("a:1", "b:1")
        assert not a.streaming("b:1")


async def test_an_agent_on_the_network_starts_no_server(network: MemoryNetwork) -> None:
    """An agent given a network's transport serves through it: no gRPC server, no port."""
    clock = Clock()
    source = SimulatedSource(
        load_scenario("steady"), 0, seed=1, group_start_s=START_S, clock=clock.s
    )
    transport = network.transport("db1:7400")
    assert isinstance(transport, ServingTransport)
    agent = Agent(settings(), source, transport=transport, clock=clock.us)
    await agent.start()
    try:
        assert agent._server is None
        assert agent.address == "db1:7400"
        assert network.receiver("db1:7400") is agent.rounds
        serving_when_started = agent.serving
    finally:
        await agent.stop(grace_s=0)
    assert (serving_when_started, agent.serving) == (True, False)
    assert network.receiver("db1:7400") is None
