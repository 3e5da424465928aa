"""Groups of 5 and 9 agents and a member crash as GR shows it (in memory); fuzzing Gossip (gRPC)."""

from __future__ import annotations

import asyncio
import random

import grpc
import pytest

from grstats.agent.convert import update_to_wire, uuid_to_bytes
from grstats.agent.limits import LimitsConfig
from grstats.proto import grstats_pb2 as pb
from tests.agent.test_runtime import Group, start_group, stats

#: No rate limits: the fuzz tests here check decoding, thousands of messages a second.
UNLIMITED = LimitsConfig(gossip_rate=0, query_rate=0)


def members(agent: object) -> dict[str, dict[str, object]]:
    """The agent's replication_group_members rows (extended) by MEMBER_ID."""
    columns, rows = agent.tables(extended=True)["replication_group_members"]  # type: ignore[attr-defined]
    named = [{c.name: v for c, v in zip(columns, row, strict=True)} for row in rows]
    return {str(row["MEMBER_ID"]): row for row in named}


async def stop_all(group: Group) -> None:
    """Stop every agent of the group."""
    for agent in group.agents:
        await agent.stop(grace_s=0)


@pytest.mark.parametrize("size", [5, 9])
async def test_every_agent_agrees(size: int) -> None:
    """In groups of 5 and 9, every agent serves the same membership and each member's own counts."""
    group = await start_group(size, memory=True)
    try:
        await group.rounds(3)
        truth = {a.member_id: a.local.stats.count_transactions_checked for a in group.agents}  # type: ignore[union-attr]
        views = [members(agent) for agent in group.agents]
        assert all(sorted(view) == sorted(truth) for view in views)
        assert all(
            {m: r["MEMBER_STATE"] for m, r in view.items()} == dict.fromkeys(truth, "ONLINE")
            for view in views
        )
        for agent in group.agents:
            served = {m: row["COUNT_TRANSACTIONS_CHECKED"] for m, row in stats(agent).items()}
            # the local row is read now; the others are at most one period behind
            assert served[agent.member_id] == truth[agent.member_id]
            assert all(served[m] <= truth[m] for m in truth)
    finally:
        await stop_all(group)


async def test_member_crash_shows_unreachable_then_offline_still_listed() -> None:
    """A crashed member is UNREACHABLE after 5 s, then OFFLINE, not connected, listed with its last row."""
    group = await start_group(3, scenario="crash-rejoin", memory=True)
    try:
        crashed = group.agents[2]
        await group.rounds(20)  # to 30 s: the crash
        crashed_id = crashed.member_id
        last = stats(group.agents[0])[crashed_id]["COUNT_TRANSACTIONS_CHECKED"]
        await group.rounds(6)  # 36 s
        assert members(group.agents[0])[crashed_id]["MEMBER_STATE"] == "UNREACHABLE"
        assert (
            members(crashed)[crashed_id]["MEMBER_STATE"] == "UNREACHABLE"
        )  # its agent relays the others' view
        await group.rounds(5)  # 41 s: expelled
        row = members(group.agents[1])[crashed_id]
        # Its agent runs, but its server was not read for 10 s: not connected (known.connected).
        assert (row["MEMBER_STATE"], row["IN_VIEW"], row["CONNECTED"]) == ("OFFLINE", "NO", "NO")
        assert stats(group.agents[1])[crashed_id]["COUNT_TRANSACTIONS_CHECKED"] == last
        await group.rounds(25)  # 66 s: restarted at 60 s and recovering or back
        assert members(group.agents[0])[crashed_id]["MEMBER_STATE"] in ("RECOVERING", "ONLINE")
    finally:
        await stop_all(group)


async def test_fuzzing_the_gossip_service() -> None:
    """Thousands of malformed or random exchanges: no member injected, no row changed, agent answers."""
    group = await start_group(3, limits=UNLIMITED)
    try:
        await group.rounds(2)
        target = group.agents[1]
        before_members = sorted(members(target))
        valid = pb.ExchangeRequest(
            sender="fuzz:1",
            sender_member=uuid_to_bytes(group.agents[0].member_id),
            updates=[update_to_wire(u) for u in group.agents[0].state.updates_for({})],
        ).SerializeToString()
        rng = random.Random(7)  # noqa: S311  (fuzzing, not secrets)
        async with grpc.aio.insecure_channel(target.address) as channel:
            call = channel.unary_unary(
                "/grstats.v1.Gossip/Exchange",
                request_serializer=lambda raw: raw,
                response_deserializer=lambda raw: raw,
            )
            codes: dict[str, int] = {}
            for n in range(2000):
                if n % 2:
                    payload = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 300)))
                else:
                    mutated = bytearray(valid)
                    for _ in range(rng.randrange(1, 8)):
                        mutated[rng.randrange(len(mutated))] = rng.getrandbits(8)
                    payload = bytes(mutated)
                try:
                    await call(payload, timeout=5)
                    codes["OK"] = codes.get("OK", 0) + 1
                except grpc.aio.AioRpcError as exc:
                    codes[exc.code().name] = codes.get(exc.code().name, 0) + 1
        assert set(codes) <= {"OK", "INVALID_ARGUMENT"}, codes
        assert codes.get("INVALID_ARGUMENT", 0) > 1000
        assert sorted(members(target)) == before_members  # nothing injected
        await group.rounds(2)
        assert sorted(members(target)) == before_members
        assert all(row["CONNECTED"] == "YES" for row in members(target).values())
    finally:
        await stop_all(group)


async def test_fuzzing_the_push_stream() -> None:
    """Malformed messages on Push streams end them with INVALID_ARGUMENT; nothing is injected."""
    group = await start_group(3, limits=UNLIMITED)
    try:
        await group.rounds(2)
        target = group.agents[1]
        before = members(target)
        valid = pb.ExchangeRequest(
            sender="fuzz:1",
            sender_member=uuid_to_bytes(group.agents[0].member_id),
            updates=[update_to_wire(u) for u in group.agents[0].state.updates_for({})],
        ).SerializeToString()
        rng = random.Random(11)  # noqa: S311  (fuzzing, not secrets)
        codes: dict[str, int] = {}
        async with grpc.aio.insecure_channel(target.address) as channel:
            push = channel.stream_unary(
                "/grstats.v1.Gossip/Push",
                request_serializer=lambda raw: raw,
                response_deserializer=pb.PushReply.FromString,
            )
            for n in range(300):
                mutated = bytearray(valid)
                for _ in range(rng.randrange(1, 8)):
                    mutated[rng.randrange(len(mutated))] = rng.getrandbits(8)
                noise = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 300)))
                call = push()
                try:
                    await call.write(valid)  # an old message of a real member: stale, harmless
                    await call.write(noise if n % 2 else bytes(mutated))
                    await call.done_writing()
                    await call
                    codes["OK"] = codes.get("OK", 0) + 1
                except grpc.aio.AioRpcError as exc:
                    codes[exc.code().name] = codes.get(exc.code().name, 0) + 1
                except asyncio.InvalidStateError:  # the stream ended before the write
                    code = (await call.code()).name
                    codes[code] = codes.get(code, 0) + 1
        assert set(codes) <= {"OK", "INVALID_ARGUMENT"}, codes
        assert codes.get("INVALID_ARGUMENT", 0) > 150
        assert sorted(members(target)) == sorted(before)  # no member injected
        await group.rounds(2)
        after = members(target)
        assert sorted(after) == sorted(before)
        assert all(row["CONNECTED"] == "YES" for row in after.values())
    finally:
        await stop_all(group)
