"""The Transport contract, run against the in-memory network and gRPC on 127.0.0.1 alike.

Each transport carries values to a :class:`Receiver`: gRPC through the agent's own server
(:func:`grstats.agent.server.build_server`, encoding and decoding), memory as they are.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from grpc_health.v1 import health

from grstats.agent.gossip import Key, Stamp, Update
from grstats.agent.messages import Answer, Gossip
from grstats.agent.server import build_server
from grstats.agent.transports import GrpcTransport, MemoryNetwork
from grstats.cli.demo import free_ports
from grstats.core.errors import PeerUnreachable
from grstats.core.model import SourceHealth
from tests.waiting import wait_until_async

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from grstats.agent.served import Table
    from grstats.agent.transports import Transport

A = "d8a706aa-16ee-11eb-8b4c-0800270d5e61"
B = "e14043d7-16ee-11eb-9a3b-0800275c3a8f"
REQUEST = Gossip(
    sender="a:1",
    sender_member=A,
    updates=(Update(A, Stamp(1, 1), Key.HEALTH, SourceHealth(ok=False, message="down"), 5),),
    sent_at_us=7,
    digest={A: {Key.HEALTH: Stamp(1, 1)}, B: {Key.HEALTH: Stamp(2, 3)}},
)
ANSWER = Answer(
    updates=(Update(B, Stamp(2, 4), Key.HEALTH, SourceHealth(), 6),),
    digest={B: {Key.HEALTH: Stamp(2, 4)}},
    member=B,
    received_at_us=8,
    sent_at_us=9,
)


class Recorder:
    """A receiver that keeps what it is handed and answers :data:`ANSWER`."""

    def __init__(self) -> None:
        self.taken: list[Gossip] = []
        self.asked: list[Gossip] = []

    def take(self, news: Gossip, size_bytes: int) -> None:  # noqa: ARG002  (sizes differ by transport)
        self.taken.append(news)

    def answer(self, request: Gossip, size_bytes: int, received_at_us: int | None) -> Answer:  # noqa: ARG002  (the fixed answer)
        self.asked.append(request)
        return ANSWER


class Node:
    """What the Query servicer needs; these tests never query."""

    address = "b:1"
    member_id = B

    def tables(self, extended: bool) -> Mapping[str, Table]:  # noqa: ARG002  (no tables here)
        return {}


@dataclass
class Wiring:
    """A transport, the address where a recorder receives, and one where nobody does."""

    transport: Transport
    peer: str
    recorder: Recorder
    nowhere: str


@pytest.fixture(name="wiring", params=["memory", "grpc"])
async def _wiring(request: pytest.FixtureRequest) -> AsyncIterator[Wiring]:
    recorder = Recorder()
    if request.param == "memory":
        network = MemoryNetwork()
        network.register("b:1", recorder)
        transport = network.transport("a:1")
        yield Wiring(transport, "b:1", recorder, "nobody:1")
        await transport.aclose()
        return
    server = build_server(Node(), recorder, health.aio.HealthServicer())
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    grpc_transport = GrpcTransport()
    (unused,) = free_ports(1)
    yield Wiring(grpc_transport, f"127.0.0.1:{port}", recorder, f"127.0.0.1:{unused}")
    await grpc_transport.aclose()
    await server.stop(None)


class TestContract:
    async def test_exchange_carries_the_request_and_returns_the_answer(
        self, wiring: Wiring
    ) -> None:
        """The receiver gets the request as sent; the sender gets the receiver's answer."""
        answer = await wiring.transport.exchange(wiring.peer, REQUEST, timeout_s=5)
        assert dataclasses.replace(answer, request_bytes=0) == ANSWER
        assert wiring.recorder.asked == [REQUEST]

    async def test_pushes_arrive_in_order_without_a_digest(self, wiring: Wiring) -> None:
        """Pushed news arrives as sent and in order, on one stream (the first push opens it)."""
        sent = [dataclasses.replace(REQUEST, sent_at_us=n, digest={}) for n in range(3)]
        assert not wiring.transport.streaming(wiring.peer)
        for news in sent:
            await wiring.transport.push(wiring.peer, news, timeout_s=5)
        assert wiring.transport.streaming(wiring.peer)
        await wait_until_async(  # pushes over gRPC arrive on their own
            lambda: len(wiring.recorder.taken) == 3, 5, "the receiver takes the 3 pushes"
        )
        assert wiring.recorder.taken == sent

    async def test_a_peer_nobody_serves_is_unreachable(self, wiring: Wiring) -> None:
        """Where no agent listens, exchanges and pushes raise PeerUnreachable naming the peer."""
        with pytest.raises(PeerUnreachable, match=wiring.nowhere):
            await wiring.transport.exchange(wiring.nowhere, REQUEST, timeout_s=5)
        with pytest.raises(PeerUnreachable, match=wiring.nowhere):
            await wiring.transport.push(wiring.nowhere, REQUEST, timeout_s=5)
