"""Which grstats each peer runs: on the wire, kept per member, in /metrics and in the log (docs/upgrades.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import grpc
import pytest
from structlog.testing import capture_logs

from grstats import __version__
from grstats.agent.convert import (
    WireError,
    answer_from_wire,
    answer_to_wire,
    gossip_from_wire,
    gossip_to_wire,
    query_build_from_wire,
    uuid_to_bytes,
)
from grstats.agent.messages import Answer, Gossip
from grstats.agent.metrics import AgentMetrics
from grstats.core.build import OWN_BUILD, PROTOCOL_REVISION, UNSAID_BUILD, AgentBuild
from grstats.proto import grstats_pb2 as pb
from tests.agent.test_runtime import exchange, query, start_group, stats, stop_all

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from grstats.agent.runtime import Agent
    from tests.agent.test_runtime import Group


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


def peer_info(metrics: AgentMetrics) -> dict[str, tuple[str, str]]:
    """grstats_peer_info's series: member_id -> (version, protocol_revision) labels."""
    (family,) = metrics._peer_info.collect()
    found: dict[str, tuple[str, str]] = {}
    for sample in family.samples:
        assert sample.value == 1
        member = sample.labels["member_id"]
        assert member not in found, "one series per member"
        found[member] = (sample.labels["version"], sample.labels["protocol_revision"])
    return found


def test_a_message_without_the_fields_reads_as_revision_1() -> None:
    """An ExchangeRequest, ExchangeResponse or QueryResponse of an agent older than the fields reads as an unknown version of revision 1."""
    assert gossip_from_wire(pb.ExchangeRequest(sender="db1:7400")).build == UNSAID_BUILD
    assert answer_from_wire(pb.ExchangeResponse()).build == UNSAID_BUILD
    assert query_build_from_wire(pb.QueryResponse()) == UNSAID_BUILD
    assert AgentBuild("", 1) == UNSAID_BUILD


def test_the_build_travels_as_sent() -> None:
    """This agent's own build, and a newer peer's, decode as they were sent."""
    sent = gossip_to_wire(Gossip("db1:7400", "", (), 0))
    assert (sent.agent_version, sent.protocol_revision) == (__version__, PROTOCOL_REVISION)
    assert gossip_from_wire(sent).build == OWN_BUILD
    assert answer_from_wire(answer_to_wire(Answer())).build == OWN_BUILD
    newer = AgentBuild("0.9.0+g1a2b3c4", PROTOCOL_REVISION + 1)
    assert answer_from_wire(answer_to_wire(Answer(build=newer))).build == newer
    assert newer.newer
    assert not OWN_BUILD.newer
    assert not UNSAID_BUILD.newer


@pytest.mark.parametrize(
    "version",
    [
        pytest.param("0.1.0 beta", id="space"),
        pytest.param("0.1.0\n", id="newline"),
        pytest.param("0.1.0\x00", id="nul"),
        pytest.param("0.1.0é", id="not-ascii"),
        pytest.param("1" * 65, id="too-long"),
    ],
)
@pytest.mark.parametrize(
    "decode",
    [
        pytest.param(lambda v: gossip_from_wire(pb.ExchangeRequest(agent_version=v)), id="request"),
        pytest.param(lambda v: answer_from_wire(pb.ExchangeResponse(agent_version=v)), id="answer"),
        pytest.param(
            lambda v: query_build_from_wire(pb.QueryResponse(agent_version=v)), id="query"
        ),
    ],
)
def test_a_bad_version_is_refused_naming_the_field(
    version: str, decode: Callable[[str], object]
) -> None:
    """A version with a space, a control character or non-ASCII, or over 64 characters, is refused naming agent_version."""
    with pytest.raises(WireError, match=r"^agent_version: "):
        decode(version)


async def test_a_bad_version_over_grpc_is_invalid_argument(grpc_group: Group) -> None:
    """An Exchange whose agent_version is bad gets INVALID_ARGUMENT naming the field; nothing is kept."""
    a, b, _ = grpc_group.agents
    await grpc_group.rounds(2)
    before = stats(b)
    request = pb.ExchangeRequest(
        sender=a.address, sender_member=uuid_to_bytes(a.member_id), agent_version="0.1 0"
    )
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await exchange(b.address, request)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "agent_version" in (caught.value.details() or "")
    assert stats(b) == before
    assert b.rounds.builds[a.member_id] == OWN_BUILD


async def test_grpc_agents_say_their_build(grpc_group: Group) -> None:
    """Over gRPC, Query answers and every peer's record carry this release's version and revision."""
    await grpc_group.rounds(3)
    for agent in grpc_group.agents:
        response = await query(agent.address, pb.QueryRequest(tables=["replication_group_members"]))
        assert (response.agent_version, response.protocol_revision) == (
            __version__,
            PROTOCOL_REVISION,
        )
        others = {peer.member_id for peer in grpc_group.agents if peer is not agent}
        assert agent.rounds.builds == dict.fromkeys(others, OWN_BUILD)


async def test_every_agent_keeps_and_logs_each_peers_build_once(group: Group) -> None:
    """Each agent keeps every other member's build, serves one grstats_peer_info series each, and logs each once."""
    with capture_logs() as logs:
        await group.rounds(4)
    for agent in group.agents:
        others = {peer.member_id for peer in group.agents if peer is not agent}
        assert agent.rounds.builds == dict.fromkeys(others, OWN_BUILD)
        expected = dict.fromkeys(others, (__version__, str(PROTOCOL_REVISION)))
        assert peer_info(agent.metrics) == expected
    seen = [log for log in logs if log["event"] == "peer_version"]
    assert len(seen) == 3 * 2  # each agent, each peer, once
    assert all(log["protocol_revision"] == PROTOCOL_REVISION for log in seen)
    assert all(log["log_level"] == "info" for log in seen)
    assert not [log for log in logs if log["event"] == "peer_protocol_newer"]


def told(receiver: Agent, sender: Agent, build: AgentBuild, at_us: int) -> None:
    """``sender``'s agent pushes ``receiver`` a message that says it runs ``build``."""
    receiver.rounds.take(Gossip(sender.address, sender.member_id, (), at_us, build=build), 0)


async def test_a_peer_that_changes_build_is_relabelled_and_a_newer_one_warned(
    group: Group,
) -> None:
    """A peer's new build replaces its one series and logs once; a newer revision warns that this agent is older."""
    await group.rounds(2)
    a, b, _ = group.agents
    newer = AgentBuild("0.2.0", PROTOCOL_REVISION + 1)
    with capture_logs() as logs:
        for _ in range(3):
            told(a, b, newer, group.clock.us())
    events = [log for log in logs if log["event"].startswith("peer_")]
    assert [log["event"] for log in events] == ["peer_version", "peer_protocol_newer"]
    assert events[0]["was_version"] == __version__
    assert events[0]["was_protocol_revision"] == PROTOCOL_REVISION
    warning = events[1]
    assert warning["log_level"] == "warning"
    assert warning["message"] == "this agent is older than its peer: upgrade it"
    assert (warning["member"], warning["agent"]) == (b.member_id, b.address)
    assert warning["protocol_revision"] == PROTOCOL_REVISION + 1
    assert peer_info(a.metrics)[b.member_id] == ("0.2.0", str(PROTOCOL_REVISION + 1))
    with capture_logs() as logs:
        told(a, b, UNSAID_BUILD, group.clock.us())  # downgraded to an agent of revision 1
    (line,) = [log for log in logs if log["event"].startswith("peer_")]
    assert (line["event"], line["version"], line["protocol_revision"]) == ("peer_version", None, 1)
    assert peer_info(a.metrics)[b.member_id] == ("unknown", "1")
    assert len(peer_info(a.metrics)) == 2


async def test_an_unknown_member_or_the_agents_own_is_not_kept(group: Group) -> None:
    """A message claiming a member no view lists, or this agent's own, adds no build and no series."""
    await group.rounds(2)
    a = group.agents[0]
    stranger = "dddddddd-dddd-dddd-dddd-dddddddddddd"
    a.rounds.take(Gossip("x:1", stranger, (), group.clock.us(), build=UNSAID_BUILD), 0)
    told(a, a, UNSAID_BUILD, group.clock.us())
    assert stranger not in a.rounds.builds
    assert a.member_id not in a.rounds.builds
    assert set(peer_info(a.metrics)) == {peer.member_id for peer in group.agents[1:]}


def test_a_forgotten_member_loses_its_series() -> None:
    """peer_gone drops the member's grstats_peer_info series; peer_build with the same build changes nothing."""
    metrics = AgentMetrics()
    metrics.peer_build("m1", "", 1)
    metrics.peer_build("m1", "", 1)
    metrics.peer_build("m2", __version__, PROTOCOL_REVISION)
    assert peer_info(metrics) == {
        "m1": ("unknown", "1"),
        "m2": (__version__, str(PROTOCOL_REVISION)),
    }
    metrics.peer_gone("m1")
    metrics.peer_gone("m9")  # never heard: nothing to drop
    assert peer_info(metrics) == {"m2": (__version__, str(PROTOCOL_REVISION))}
