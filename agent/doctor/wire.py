"""The doctor's one gRPC call: ``Query.Read`` of an agent, timed, with gRPC's errors translated.

The only module of the doctor that speaks protobuf. :func:`ask_agent` asks an agent for its
smallest table a few times over one channel and returns what the answers say of the agent
(its address, its member, whether it can read it) and the clock sample of the quickest call;
a failed call raises :class:`CallFailed`, whose ``kind`` says how (the doctor words each).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import grpc

from grstats.agent.convert import WireError, source_report_from_wire, uuid_from_bytes
from grstats.core.query_wire import query_request
from grstats.core.rows import REPLICATION_GROUP_MEMBERS
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc

if TYPE_CHECKING:
    from collections.abc import Sequence

    from grstats.agent.messages import SourceReport
    from grstats.core.security import Security

#: How :class:`CallFailed` says a call failed.
UNREACHABLE = "unreachable"  # nothing answered gRPC there (refused, reset, TLS)
TIMEOUT = "timeout"  # no answer within the deadline
UNAUTHENTICATED = "unauthenticated"  # the agent refused the token
OTHER = "other"  # any other status; the text says which


class CallFailed(Exception):
    """A call to an agent failed: ``kind`` (:data:`UNREACHABLE`, ...) and gRPC's details."""

    def __init__(self, kind: str, details: str) -> None:
        super().__init__(details)
        self.kind = kind
        self.details = details


@dataclass(frozen=True, slots=True)
class AgentAnswer:
    """What an agent's answers say, and the clock sample of the quickest call.

    Attributes:
        agent: the address the agent answers as (its ``advertise``).
        member: its member's server_uuid, ``""`` before its first read of it.
        source: whether it can read its member (and why not).
        sent_us: our clock (µs since the epoch) when the quickest call was sent.
        received_us: our clock when its answer arrived.
        served_us: the agent's clock when it answered that call (``served_at_us``).
    """

    agent: str
    member: str
    source: SourceReport
    sent_us: int
    received_us: int
    served_us: int

    @property
    def offset_us(self) -> int:
        """The agent's clock minus ours, µs: its time less the middle of the round trip."""
        return self.served_us - (self.sent_us + self.received_us) // 2

    @property
    def uncertainty_us(self) -> int:
        """How far the true offset can be from :attr:`offset_us`: half the round trip."""
        return (self.received_us - self.sent_us + 1) // 2


async def ask_agent(
    security: Security,
    target: str,
    timeout_s: float,
    *,
    samples: int = 3,
    options: Sequence[tuple[str, object]] = (),
) -> AgentAnswer:
    """Ask the agent at ``target`` ``samples`` times, each within ``timeout_s`` in all.

    The first call also connects (and makes the TLS handshake), so its round trip is long;
    the quickest of the calls gives the clock sample, as NTP keeps its quickest exchange.

    Raises:
        CallFailed: a call failed, or an answer was malformed (kind :data:`OTHER`).
    """
    request = query_request([REPLICATION_GROUP_MEMBERS.name])
    deadline = time.monotonic() + timeout_s
    best: tuple[int, int, pb.QueryResponse] | None = None
    try:
        async with security.channel(target, options) as channel:
            stub = pb_grpc.QueryStub(channel)
            for _ in range(samples):
                left = deadline - time.monotonic()
                if left <= 0 and best is not None:
                    break
                sent = time.time_ns() // 1000
                response: pb.QueryResponse = await stub.Read(
                    request, timeout=max(left, 0.001), metadata=security.metadata
                )
                received = time.time_ns() // 1000
                if best is None or received - sent < best[1] - best[0]:
                    best = (sent, received, response)
    except grpc.aio.AioRpcError as exc:
        raise _translated(exc) from exc
    assert best is not None
    sent, received, response = best
    try:
        member = uuid_from_bytes(response.member, "member") if response.member else ""
        source = source_report_from_wire(response)
    except WireError as exc:
        raise CallFailed(OTHER, f"a malformed answer: {exc}") from exc
    return AgentAnswer(response.agent, member, source, sent, received, response.served_at_us)


def _translated(exc: grpc.aio.AioRpcError) -> CallFailed:
    code = exc.code()
    details = exc.details() or code.name
    if code == grpc.StatusCode.UNAVAILABLE:
        return CallFailed(UNREACHABLE, details)
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return CallFailed(TIMEOUT, details)
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return CallFailed(UNAUTHENTICATED, details)
    return CallFailed(OTHER, f"{code.name}: {details}")
