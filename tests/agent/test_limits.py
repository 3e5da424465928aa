"""``[limits]``: the section's validation, the rate limiter, and each limit on a real agent."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import grpc
import pytest
import structlog
from structlog.testing import capture_logs

from grstats.agent.config import load_config
from grstats.agent.convert import update_to_wire, uuid_to_bytes
from grstats.agent.gossip import Counts, GossipState, Key, Stamp, Update
from grstats.agent.limits import (
    DEFAULT_LIMITS,
    GROUP_MAX_MEMBERS,
    KEYS_PER_MEMBER,
    MIN_UPDATES,
    LimitsConfig,
    RateLimiter,
    client_host,
)
from grstats.agent.sources import GroupView
from grstats.core.errors import ConfigError
from grstats.core.rows import MemberRow, MemberStatsRow
from grstats.proto import grstats_pb2 as pb
from tests.agent.test_runtime import start_group

if TYPE_CHECKING:
    from tests.agent.test_runtime import Group

SIMULATED = {
    "source": "simulated",
    "simulated.member_index": 0,
    "simulated.group_start_s": 1_767_225_600,
}


class Clock:
    """Monotonic seconds the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class TestLimitsConfig:
    def test_defaults_fit_a_whole_group(self) -> None:
        """4 MiB messages (gRPC's default) hold the 18 GTID texts of a full group's answer."""
        limits = LimitsConfig()
        assert limits == DEFAULT_LIMITS
        assert limits.max_message_bytes == 4 * 1024 * 1024
        assert limits.max_gtid_text == 192 * 1024
        assert 2 * GROUP_MAX_MEMBERS * limits.max_gtid_text < limits.max_message_bytes - 64 * 1024
        assert limits.gossip_bytes_in_flight == 4 * limits.max_message_bytes
        assert limits.max_updates == 144
        assert ("grpc.max_receive_message_length", 4 * 1024 * 1024) in limits.channel_options
        assert ("grpc.http2.bdp_probe", 0) in limits.channel_options
        assert (limits.sql_connections_per_host, limits.sql_max_rows) == (16, 100_000)
        assert limits.sql_query_timeout_s == 5.0

    def test_update_bounds_follow_the_keys(self) -> None:
        """A message may carry every key of a full group: the bounds count gossip's keys."""
        assert len(Key) == KEYS_PER_MEMBER
        assert GROUP_MAX_MEMBERS * len(Key) == MIN_UPDATES
        assert DEFAULT_LIMITS.max_updates == 2 * MIN_UPDATES
        LimitsConfig(max_updates=MIN_UPDATES, max_members=GROUP_MAX_MEMBERS)  # the lowest pass

    @pytest.mark.parametrize(
        ("key", "value", "message"),
        [
            ("max_message_bytes", 1000, "limits.max_message_bytes: 1000 is not in 65536.."),
            ("max_gtid_text", 2**30, "limits.max_gtid_text: 1073741824 is not in 1024..4194304"),
            ("max_updates", 71, "limits.max_updates: 71 is not in 72..100000"),
            ("gossip_rate", -1, "limits.gossip_rate: -1 is not 0 (no limit)"),
            ("query_rate", float("inf"), "limits.query_rate: inf is not 0 (no limit)"),
            ("query_burst", 0, "limits.query_burst: 0 is not in 1..1000000"),
            ("max_clients", True, "limits.max_clients: True is not in 16..1000000"),
            ("gossip_burst", "9", "limits.gossip_burst: '9' is not in 1..1000000"),
            (
                "sql_connections_per_host",
                0,
                "limits.sql_connections_per_host: 0 is not in 1..100000",
            ),
            ("sql_query_timeout_s", 0.05, "limits.sql_query_timeout_s: 0.05 is not in "),
            ("sql_query_timeout_s", 3601, "limits.sql_query_timeout_s: 3601 is not in "),
            ("sql_max_rows", 10**7 + 1, "limits.sql_max_rows: 10000001 is not in 1..10000000"),
        ],
    )
    def test_errors_name_the_key_and_value(self, key: str, value: object, message: str) -> None:
        """A value out of range is refused with limits.<key> and the value."""
        with pytest.raises(
            ConfigError, match="^" + message.replace("(", r"\(").replace(")", r"\)")
        ):
            LimitsConfig(**{key: value})  # type: ignore[arg-type]

    def test_section_from_the_config(self) -> None:
        """``limits.<key>`` overrides reach AgentConfig.limits; unknown keys are refused."""
        config = load_config(None, {**SIMULATED, "limits.query_rate": 50, "limits.max_updates": 80})
        assert config.limits.query_rate == 50
        assert config.limits.max_updates == 80
        assert load_config(None, SIMULATED).limits == DEFAULT_LIMITS
        with pytest.raises(ConfigError, match=r"^limits\.max_update: unknown setting"):
            load_config(None, {**SIMULATED, "limits.max_update": 60})
        with pytest.raises(ConfigError, match=r"^limits\.gossip_rate: 'fast' is not 0"):
            load_config(None, {**SIMULATED, "limits.gossip_rate": "fast"})


class TestRateLimiter:
    def test_client_host_drops_the_port(self) -> None:
        """Buckets are per host: the peer's port (one per connection) is dropped."""
        assert client_host("ipv4:10.0.0.5:51234") == "ipv4:10.0.0.5"
        assert client_host("ipv6:[::1]:51234") == "ipv6:[::1]"
        assert client_host("unix:/run/x.sock") == "unix:/run/x.sock"

    def test_burst_then_rate(self) -> None:
        """A host gets its burst at once, then ``rate`` a second; other hosts are not charged."""
        clock = Clock()
        limiter = RateLimiter({"query": (10.0, 5)}, 16, clock=clock)
        admitted = [limiter.admit("query", "ipv4:10.0.0.1:1") for _ in range(8)]
        assert admitted == [True] * 5 + [False] * 3
        assert limiter.admit("query", "ipv4:10.0.0.2:1")
        assert limiter.admit("gossip", "ipv4:10.0.0.1:1")  # a kind without a rate: unlimited
        clock.now += 0.25  # 2.5 tokens back
        assert [limiter.admit("query", "ipv4:10.0.0.1:2") for _ in range(3)] == [True, True, False]

    def test_table_stays_bounded(self) -> None:
        """Ten thousand hosts leave at most ``max_clients`` buckets, the most recent ones."""
        limiter = RateLimiter({"gossip": (1.0, 1)}, 16, clock=Clock())
        for n in range(10_000):
            limiter.admit("gossip", f"ipv4:10.{n // 65536}.{n // 256 % 256}.{n % 256}:9")
        assert len(limiter) == 16
        assert not limiter.admit("gossip", "ipv4:10.0.39.15:9")  # the last host is still held

    def test_logged_once_per_episode(self) -> None:
        """Going over is logged once, and coming back once (with the count refused)."""
        clock = Clock()
        with capture_logs() as logs:
            limiter = RateLimiter(
                {"gossip": (100.0, 1)}, 16, clock=clock, logger=structlog.get_logger()
            )
            for _ in range(50):  # 200 a second against 100: over, again and again
                limiter.admit("gossip", "ipv4:10.0.0.9:1")
                clock.now += 0.005
            clock.now += 2
            assert limiter.admit("gossip", "ipv4:10.0.0.9:1")
        events = [(entry["event"], entry.get("refused")) for entry in logs]
        assert events[0] == ("rate_limited", None)
        assert events[1][0] == "rate_limit_ended"
        assert events[1][1] is not None
        assert events[1][1] >= 20
        assert len(events) == 2


def test_members_held_stay_bounded() -> None:
    """Views listing ever new members fill the state up to max_origins, then news is refused."""
    local = str(uuid.UUID(int=1))
    state = GossipState(local, incarnation=1, max_origins=9)
    for batch in range(20):  # a peer's member lists 8 new members every time
        listed = [str(uuid.UUID(int=1000 + batch * 8 + n)) for n in range(8)]
        rows = tuple(MemberRow(member_id=m, member_host="h") for m in [local, *listed])
        state.record_local(Key.VIEW, GroupView(members=rows), 0)
        news = [
            Update(
                m,
                Stamp(1, 1),
                Key.COUNTS,
                Counts(MemberStatsRow(member_id=m), gtids_present=True),
                0,
            )
            for m in listed
        ]
        result = state.merge(news, 0, via="peer")
        if batch == 0:
            assert result.accepted == 8
    assert len(state.origins) == 9
    assert len(result.unknown) == 8


# -- on a real agent -------------------------------------------------------------------------


async def _call(address: str, method: str, payload: bytes) -> str:
    """Call a unary method with raw bytes; return the status code's name."""
    async with grpc.aio.insecure_channel(
        address, options=[("grpc.max_send_message_length", 64 * 1024 * 1024)]
    ) as channel:
        call = channel.unary_unary(
            method, request_serializer=lambda raw: raw, response_deserializer=lambda raw: raw
        )
        try:
            await call(payload, timeout=5)
        except grpc.aio.AioRpcError as exc:
            return exc.code().name
    return "OK"


def _request(group: Group, updates: list[pb.Update]) -> bytes:
    sender = group.agents[0]
    request = pb.ExchangeRequest(
        sender=sender.address, sender_member=uuid_to_bytes(sender.member_id), updates=updates
    )
    raw: bytes = request.SerializeToString()
    return raw


async def _stop(group: Group) -> None:
    for agent in group.agents:
        await agent.stop(grace_s=0)


async def test_message_size_limit() -> None:
    """A message over max_message_bytes is refused by gRPC itself; the agent goes on."""
    group = await start_group(
        2, limits=LimitsConfig(max_message_bytes=64 * 1024, max_gtid_text=1024)
    )
    try:
        await group.rounds(1)
        target = group.agents[1].address
        oversized = pb.ExchangeRequest(sender="x" * 100_000).SerializeToString()
        assert await _call(target, "/grstats.v1.Gossip/Exchange", oversized) == "RESOURCE_EXHAUSTED"
        assert await _call(target, "/grstats.v1.Query/Read", b"") == "OK"
    finally:
        await _stop(group)


async def test_gtid_text_and_update_count_limits() -> None:
    """GTID text over max_gtid_text and more than max_updates updates: INVALID_ARGUMENT."""
    limits = LimitsConfig(max_gtid_text=1024, max_updates=MIN_UPDATES)
    group = await start_group(2, limits=limits)
    try:
        await group.rounds(1)
        origin = uuid_to_bytes(group.agents[0].member_id)
        gtids = ",".join(f"{uuid.UUID(int=n)}:1-9" for n in range(1, 40))  # 1,7xx characters
        long_text = pb.Update(origin=origin, incarnation=1, version=1, gtid_executed=gtids)
        target = group.agents[1].address
        method = "/grstats.v1.Gossip/Exchange"
        assert await _call(target, method, _request(group, [long_text])) == "INVALID_ARGUMENT"
        held = [update_to_wire(u) for u in group.agents[0].state.updates_for({})]
        many = (held * (MIN_UPDATES + 1))[: MIN_UPDATES + 1]
        assert await _call(target, method, _request(group, many)) == "INVALID_ARGUMENT"
        assert await _call(target, method, _request(group, many[:MIN_UPDATES])) == "OK"
    finally:
        await _stop(group)


async def test_rate_limits_answer_resource_exhausted() -> None:
    """Past its burst a client gets RESOURCE_EXHAUSTED, logged once; other work goes on."""
    limits = LimitsConfig(gossip_rate=1, gossip_burst=5, query_rate=1, query_burst=3)
    with capture_logs() as logs:
        group = await start_group(2, limits=limits)
        try:
            await group.rounds(1)
            target = group.agents[1]
            request = _request(group, [])
            gossip = [
                await _call(target.address, "/grstats.v1.Gossip/Exchange", request)
                for _ in range(8)
            ]
            queries = [await _call(target.address, "/grstats.v1.Query/Read", b"") for _ in range(6)]
        finally:
            await _stop(group)
    assert gossip[:3] == ["OK"] * 3  # its own round used up to two of the five
    assert gossip[-3:] == ["RESOURCE_EXHAUSTED"] * 3
    assert queries == ["OK"] * 3 + ["RESOURCE_EXHAUSTED"] * 3
    limited = [entry for entry in logs if entry["event"] == "rate_limited"]
    assert sorted(entry["kind"] for entry in limited) == ["gossip", "query"]
    assert all(entry["client"] == "ipv4:127.0.0.1" for entry in limited)
