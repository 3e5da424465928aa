"""Hostile input to every RPC of a real agent: it keeps answering, and nothing it holds changes.

Thousands of messages: random bytes, extreme integers, huge strings, unknown members, spoofed
senders, values of the agent's own member, replayed and out-of-order stamps of known members,
too many updates, garbage digests; to Gossip.Exchange, Gossip.Push, Query.Read, health Check
and reflection. A peer that sends a *newer* stamp for a known member is believed: only
member identities (mutual TLS) tell a peer from an impostor, so that case is not here.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from typing import TYPE_CHECKING, Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2

from grstats.agent.convert import update_to_wire, uuid_to_bytes
from grstats.agent.limits import LimitsConfig
from grstats.proto import grstats_pb2 as pb
from tests.agent.test_runtime import start_group

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable

    from grstats.agent.runtime import Agent
    from tests.agent.test_runtime import Group

U64 = 2**64 - 1
#: Rates high enough that every hostile message is decoded (the rate limits have their tests).
FUZZ_LIMITS = LimitsConfig(gossip_rate=0, query_rate=0, max_clients=16)
EXCHANGE = "/grstats.v1.Gossip/Exchange"
PUSH = "/grstats.v1.Gossip/Push"
READ = "/grstats.v1.Query/Read"
CHECK = "/grpc.health.v1.Health/Check"
REFLECT = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"


def _raw(raw: bytes) -> bytes:
    return raw


class Hostile:
    """Makes hostile ExchangeRequests against ``target`` in a group, from a seeded generator."""

    def __init__(self, group: Group, target: Agent, seed: int) -> None:
        self.rng = random.Random(seed)  # noqa: S311  (fuzzing, not secrets)
        self.target = target
        self.known = [agent.member_id for agent in group.agents]
        assert target.state is not None
        # Every value the target holds, as a peer would relay it: replays are stale by design.
        self.held = [update_to_wire(u) for u in target.state.updates_for({})]
        pieces = "".join(chr(self.rng.randrange(32, 0x2FFF)) for _ in range(300))
        self.texts = [pieces[:size] for size in (0, 1, 255, 256)] + [
            pieces * (size // 300) for size in (1_200, 70_200)
        ]
        self.huge = "9" * (FUZZ_LIMITS.max_gtid_text + 1)  # over max_gtid_text (192 KiB)

    def uuid(self) -> bytes:
        """A member nobody knows."""
        return uuid.UUID(int=self.rng.getrandbits(128)).bytes

    def text(self) -> str:
        """A string from empty to 70,200 characters of any kind (drawn from a pool made once)."""
        return self.rng.choice(self.texts)

    def counts(self) -> pb.Counts:
        """Counts of extreme integers and texts."""
        rng = self.rng
        return pb.Counts(
            transactions_in_queue=rng.choice([0, U64, 2**63]),
            transactions_checked=U64,
            conflicts_detected=rng.getrandbits(64),
            gtids_present=True,
            transactions_committed_all_members=rng.choice(["", self.text(), "zz:1-2", "x" * 4000]),
            last_conflict_free_transaction=rng.choice(["", "x" * 2000]),
            transactions_remote_applied=U64,
        )

    def value(self, update: pb.Update) -> None:
        """Give ``update`` a hostile value of a random kind."""
        kind = self.rng.randrange(5)
        if kind == 0:
            update.counts.CopyFrom(self.counts())
        elif kind == 1:
            members = [
                pb.Member(
                    member_id=self.uuid(), host=self.text()[:2000], port=self.rng.getrandbits(32)
                )
                for _ in range(self.rng.choice([1, 9, 10, 50]))
            ]
            update.view.CopyFrom(pb.View(members=members, view_id=self.text()[:100]))
        elif kind == 2:
            update.applier.CopyFrom(
                pb.Applier(last_queued_transaction=self.text(), last_queued_original_commit_us=U64)
            )
        elif kind == 3:
            texts = [self.text(), "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-" + "9" * 30]
            update.gtid_executed = self.huge if self.rng.random() < 0.02 else self.rng.choice(texts)
        else:
            update.health.CopyFrom(pb.Health(ok=False, message=self.text()))

    def update(self) -> pb.Update:
        """One hostile update: unknown member, own member, or a stale replay of a known one."""
        rng = self.rng
        choice = rng.randrange(4)
        if choice == 0:  # an unknown member, with stamps anywhere up to the largest
            update = pb.Update(
                origin=self.uuid(), incarnation=rng.choice([0, U64]), version=rng.getrandbits(64)
            )
            self.value(update)
        elif choice == 1:  # the target's own member, with the largest stamps
            update = pb.Update(
                origin=uuid_to_bytes(self.target.member_id), incarnation=U64, version=U64
            )
            self.value(update)
        elif choice == 2:  # a replay: the very value held (a duplicate stamp)
            update = pb.Update()
            update.CopyFrom(rng.choice(self.held))
        else:  # out of order: an older stamp of a known member, with a hostile value
            update = pb.Update()
            update.CopyFrom(rng.choice(self.held))
            update.version = rng.randrange(update.version) if update.version else 0
            if update.version == 0:
                update.incarnation = rng.randrange(update.incarnation) if update.incarnation else 0
            self.value(update)
        update.sent_at_us = rng.choice([0, U64, rng.getrandbits(64)])
        return update

    def request(self) -> bytes:
        """One hostile ExchangeRequest, or random bytes, or a mutation of one."""
        rng = self.rng
        shape = rng.randrange(10)
        if shape == 0:
            return rng.randbytes(rng.randrange(0, 2000))
        sender_member = rng.choice(
            [self.uuid(), uuid_to_bytes(rng.choice(self.known)), b"", b"\x00" * 17]
        )
        request = pb.ExchangeRequest(
            sender=rng.choice(["", "127.0.0.1:1", "evil:666", "x" * 300, self.text()[:250]]),
            sender_member=sender_member,
            updates=[self.update() for _ in range(rng.choice([0, 1, 3, 20, 91]))],
            digest=[
                pb.DigestEntry(
                    origin=rng.choice([self.uuid(), b"short"]),
                    stamps=[pb.Stamp(key=rng.randrange(-1, 9), incarnation=U64, version=U64)],  # type: ignore[arg-type]
                )
                for _ in range(rng.choice([0, 1, 40]))
            ],
            sent_at_us=U64,
        )
        raw = bytearray(request.SerializeToString())
        if shape == 1 and raw:
            for _ in range(rng.randrange(1, 8)):
                raw[rng.randrange(len(raw))] = rng.getrandbits(8)
        return bytes(raw)


def snapshot(agent: Agent) -> dict[str, Any]:
    """What the agent holds and serves, to compare before and after."""
    assert agent.state is not None
    return {
        "served": agent.tables(extended=True),
        "digest": {member: dict(stamps) for member, stamps in agent.state.digest().items()},
        "origins": sorted(agent.state.origins),
    }


def sizes(agent: Agent) -> dict[str, int]:
    """The sizes of the agent's maps keyed by something a peer or client sends."""
    assert agent.state is not None
    return {
        "origins": len(agent.state.origins),
        "agents": len(agent.rounds.agents),
        "offsets": len(agent.offsets),
        "peer_digests": len(agent.rounds._peer_digests),
        "limiter": len(agent.limiter),
    }


class Codes:
    """Status codes seen, per RPC."""

    def __init__(self) -> None:
        self.seen: dict[str, Counter[str]] = {}

    async def call(self, rpc: str, answer: Awaitable[object]) -> None:
        """Await one call and note its status code."""
        try:
            await answer
            code = "OK"
        except grpc.aio.AioRpcError as exc:
            code = exc.code().name
        self.seen.setdefault(rpc, Counter())[code] += 1


async def _stream(items: list[bytes]) -> AsyncIterator[bytes]:
    for item in items:
        yield item


async def _drain(call: grpc.aio.StreamStreamCall[bytes, bytes]) -> None:
    async for _ in call:
        pass


async def fuzz_gossip(channel: grpc.aio.Channel, hostile: Hostile, codes: Codes) -> None:
    """Hostile Exchange calls, then hostile Push streams (a malformed message ends a stream)."""
    exchange = channel.unary_unary(EXCHANGE, request_serializer=_raw, response_deserializer=_raw)
    for _ in range(600):
        await codes.call("exchange", exchange(hostile.request(), timeout=10))
    push = channel.stream_unary(PUSH, request_serializer=_raw, response_deserializer=_raw)
    for _ in range(100):
        messages = [hostile.request() for _ in range(hostile.rng.randrange(1, 8))]
        await codes.call("push", push(_stream(messages), timeout=10))


async def fuzz_services(channel: grpc.aio.Channel, hostile: Hostile, codes: Codes) -> None:
    """Hostile Query.Read, health Check and reflection calls."""
    rng = hostile.rng
    read = channel.unary_unary(READ, request_serializer=_raw, response_deserializer=_raw)
    check = channel.unary_unary(CHECK, request_serializer=_raw, response_deserializer=_raw)
    reflect = channel.stream_stream(REFLECT, request_serializer=_raw, response_deserializer=_raw)
    for n in range(400):
        queries = [
            rng.randbytes(rng.randrange(0, 500)),
            pb.QueryRequest(tables=["x" * rng.randrange(1, 5000)]).SerializeToString(),
            pb.QueryRequest(
                tables=["replication_group_members"] * 5000, extended=True
            ).SerializeToString(),
            pb.QueryRequest(tables=[hostile.text()[:1000]]).SerializeToString(),
        ]
        checks = [
            rng.randbytes(rng.randrange(0, 200)),
            health_pb2.HealthCheckRequest(service=hostile.text()[:5000]).SerializeToString(),
        ]
        await codes.call("read", read(queries[n % len(queries)], timeout=10))
        await codes.call("check", check(checks[n % len(checks)], timeout=10))
        if n % 2 == 0:
            symbol = reflection_pb2.ServerReflectionRequest(
                file_containing_symbol=hostile.text()[:3000]
            ).SerializeToString()
            payload = rng.choice([symbol, rng.randbytes(rng.randrange(0, 300))])
            await codes.call("reflection", _drain(reflect(_stream([payload]), timeout=10)))


async def test_hostile_messages_to_every_rpc() -> None:
    """Thousands of hostile messages to every RPC: answers go on, nothing changes or grows."""
    group = await start_group(3, limits=FUZZ_LIMITS)
    try:
        await group.rounds(2)
        target = group.agents[1]
        before, bounded = snapshot(target), sizes(target)
        hostile = Hostile(group, target, seed=2026)
        codes = Codes()
        options = [("grpc.max_send_message_length", 64 * 1024 * 1024)]
        async with grpc.aio.insecure_channel(target.address, options=options) as channel:
            await fuzz_gossip(channel, hostile, codes)
            await fuzz_services(channel, hostile, codes)
            # Still answering: a plain query, health SERVING.
            read = channel.unary_unary(READ, request_serializer=_raw, response_deserializer=_raw)
            answer = pb.QueryResponse.FromString(await read(b"", timeout=5))
            stub = health_pb2_grpc.HealthStub(channel)
            status = await stub.Check(health_pb2.HealthCheckRequest(), timeout=5)
        seen = codes.seen
        assert set(seen["exchange"]) <= {"OK", "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED"}, seen
        # A stream the agent ended while this client was still writing shows INTERNAL here.
        assert set(seen["push"]) <= {"OK", "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "INTERNAL"}
        assert set(seen["read"]) <= {"OK", "INVALID_ARGUMENT"}, seen
        assert seen["exchange"]["INVALID_ARGUMENT"] > 300, seen
        assert seen["exchange"]["OK"] > 15, seen  # well-formed hostile messages were taken in
        assert sum(seen["check"].values()) == 400
        assert sum(seen["reflection"].values()) == 200
        assert len(answer.tables) == 9  # 4 of members' rows, 2 of the status, events, views, log
        assert status.status == health_pb2.HealthCheckResponse.SERVING
        after = snapshot(target)
        assert after["origins"] == before["origins"]  # no member injected
        assert after["digest"] == before["digest"]  # no stamp moved
        assert after["served"] == before["served"]  # no row changed
        assert sizes(target) == bounded
        await group.rounds(2)  # the group goes on exchanging normally
        columns, rows = target.tables(extended=True)["replication_group_members"]
        connected = [column.name for column in columns].index("CONNECTED")
        assert [row[connected] for row in rows] == ["YES"] * 3
    finally:
        for agent in group.agents:
            await agent.stop(grace_s=0)


async def test_many_clients_keep_the_rate_table_bounded() -> None:
    """Calls from as many (pretended) hosts as the table holds and more never grow it past max."""
    group = await start_group(2, limits=LimitsConfig(max_clients=16))
    try:
        await group.rounds(1)
        target = group.agents[1]
        for n in range(500):
            target.limiter.admit("query", f"ipv4:10.1.{n // 256}.{n % 256}:4000")
            target.limiter.admit("gossip", f"ipv6:[fd00::{n:x}]:4000")
        assert len(target.limiter) == 16
        async with grpc.aio.insecure_channel(target.address) as channel:
            read = channel.unary_unary(READ, request_serializer=_raw, response_deserializer=_raw)
            assert pb.QueryResponse.FromString(await read(b"", timeout=5)).tables
        assert len(target.limiter) == 16
    finally:
        for agent in group.agents:
            await agent.stop(grace_s=0)
