"""A stolen member certificate: a fake agent holding member 0's real certificate answers Exchanges.

The agents run over real gRPC with mutual TLS on 127.0.0.1; the fake agent is a gRPC server with
member 0's certificate and key whose every Exchange answer carries member 2's forged counts
under a stamp it keeps raising. Member 1's agent dials it (and its two real peers) every round.
The rule under test is :mod:`grstats.agent.gossip.relays`; grstats' own design, as MySQL has no
such relay (GR's members hear each other's stats directly, ``Pipeline_stats_member_message`` in
pipeline_stats.cc), so no MySQL source defines it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import grpc
import pytest

from grstats.agent.convert import answer_to_wire
from grstats.agent.gossip import Counts, Key, Stamp
from grstats.agent.messages import Answer
from grstats.core.security import Security
from grstats.proto import grstats_pb2 as pb
from tests.agent.test_tls import (
    CHECKED,
    UUIDS,
    _certs,  # noqa: F401  (the module's certificates, as the fixture ``certs``)
    start_secure_group,
    stop_all,
    tls,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

    from grstats.agent.gossip import Update
    from tests.agent.test_runtime import Group

RECEIVER, VICTIM = 1, 2  # member 1's agent dials the forger, which forges member 2's counts


class Forger:
    """A fake agent with a stolen certificate: answers every Exchange with forged counts.

    ``raise_by(n)`` is how far above the victim's real latest version the n-th answer's stamp
    is: it keeps raising, as a forger outbidding the victim's own agent would.
    """

    def __init__(self, group: Group, raise_by: Callable[[int], int]) -> None:
        self.group = group
        self.raise_by = raise_by
        self.answers = 0
        self.server: grpc.aio.Server | None = None
        self.address = ""

    def forged(self) -> Update:
        """The victim's latest counts with COUNT_TRANSACTIONS_CHECKED = CHECKED, stamped higher."""
        victim = self.group.agents[VICTIM]
        held = victim.state.value(victim.member_id, Key.COUNTS)
        assert held is not None
        assert isinstance(held.update.value, Counts)
        self.answers += 1
        real = held.update.stamp
        row = dataclasses.replace(held.update.value.row, count_transactions_checked=CHECKED)
        stamp = Stamp(real.incarnation, real.version + self.raise_by(self.answers))
        return dataclasses.replace(held.update, stamp=stamp, value=Counts(row, gtids_present=False))

    async def exchange(self, request: bytes, context: Any) -> pb.ExchangeResponse:
        """Answer as member 0 (its certificate's member), with the victim's forged counts."""
        del request, context
        return answer_to_wire(Answer(updates=(self.forged(),), member=UUIDS[0]))

    async def start(self, security: Security) -> None:
        """Serve Gossip.Exchange on a free port of 127.0.0.1 over ``security``'s TLS."""
        self.server = grpc.aio.server()
        handler: grpc.RpcMethodHandler[bytes, pb.ExchangeResponse]
        handler = grpc.unary_unary_rpc_method_handler(
            self.exchange, response_serializer=pb.ExchangeResponse.SerializeToString
        )
        self.server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler("grstats.v1.Gossip", {"Exchange": handler})]
        )
        port = security.bind(self.server, "127.0.0.1:0")
        await self.server.start()
        self.address = f"127.0.0.1:{port}"

    async def stop(self) -> None:
        """Stop serving."""
        if self.server is not None:
            await self.server.stop(0)


@pytest.fixture(name="group")
async def _group(certs: Path) -> AsyncIterator[Group]:
    group = await start_secure_group([Security(tls(certs, f"m{i}")) for i in range(3)])
    await group.rounds(2)
    yield group
    await stop_all(group)


async def dialled_by_receiver(group: Group, certs: Path, raise_by: Callable[[int], int]) -> Forger:
    """Start a forger with member 0's stolen certificate; the receiver exchanges with it too."""
    forger = Forger(group, raise_by)
    await forger.start(Security(tls(certs, "m0")))
    receiver = group.agents[RECEIVER]
    peers = (*receiver.config.peers, forger.address)
    receiver.config = dataclasses.replace(receiver.config, peers=peers, pull_fanout=len(peers))
    return forger


def held_counts(group: Group, agent: int) -> tuple[Stamp, int]:
    """The stamp and COUNT_TRANSACTIONS_CHECKED of the victim's counts that ``agent`` holds."""
    held = group.agents[agent].state.value(UUIDS[VICTIM], Key.COUNTS)
    assert held is not None
    assert isinstance(held.update.value, Counts)
    return held.update.stamp, held.update.value.row.count_transactions_checked


def cut(group: Group, left: int, right: int, *, broken: bool = True) -> None:
    """Cut (or heal) both directions of the link between agents ``left`` and ``right``."""
    for one, other in ((left, right), (right, left)):
        links = group.transports[one].broken
        address = group.agents[other].address
        if broken:
            links.add(address)
        else:
            links.discard(address)


async def test_forger_cannot_outbid_a_member_heard_directly(group: Group, certs: Path) -> None:
    """While member 2's agent pushes to member 1's, relays of member 2 are refused, however high.

    Before the rule, the forger's answer (one version above member 2's latest, then ever
    higher) was taken and member 1's agent served the forged row.
    """
    forger = await dialled_by_receiver(group, certs, lambda answers: answers)
    try:
        for _ in range(4):
            await group.rounds(1)
            stamp, checked = held_counts(group, RECEIVER)
            assert checked != CHECKED
            assert stamp == held_counts(group, VICTIM)[0]  # member 2's own latest
        assert forger.answers >= 4
    finally:
        await forger.stop()


async def test_relays_of_a_member_cut_off_are_bounded_and_give_way_to_it(
    group: Group, certs: Path
) -> None:
    """Cut off from member 2, member 1 takes its values as relays: bounded, and until it is back.

    First the forger's stamps run away (1000 versions more each answer), past what member 2
    could have made since it was last heard directly: refused, while member 0's real agent
    relays member 2's counts. Then the forger stays just above member 2's latest, within the
    bound: taken, which is what a stolen certificate can still do (README). When member 2 is
    heard again, its own counts replace the forged ones, though their stamps are lower.
    """
    forger = await dialled_by_receiver(group, certs, lambda answers: 1000 * answers)
    try:
        cut(group, RECEIVER, VICTIM)
        for _ in range(6):  # past the 2 periods (4 s) in which member 2 counts as heard
            relayable = held_counts(group, 0)[0]  # member 0's agent holds it before the round
            await group.rounds(1)
            assert held_counts(group, RECEIVER)[1] != CHECKED
        relayed = group.agents[RECEIVER].state.value(UUIDS[VICTIM], Key.COUNTS)
        assert relayed is not None
        assert relayed.via == group.agents[0].address  # taken from member 0's real agent
        assert relayed.update.stamp == relayable
        answered = forger.answers
        forger.raise_by = lambda answers: answers - answered  # 1, 2, 3... above the latest
        await group.rounds(1)
        assert held_counts(group, RECEIVER)[1] == CHECKED  # the forger's, within the bound
        cut(group, RECEIVER, VICTIM, broken=False)
        for _ in range(3):  # the forger keeps raising
            await group.rounds(1)
            stamp, checked = held_counts(group, RECEIVER)
            assert checked != CHECKED
            assert stamp == held_counts(group, VICTIM)[0]
    finally:
        await forger.stop()
