"""The agent's gRPC services: Gossip (between agents) and Query (for clients), plus health.

Servicers check every request through :mod:`grstats.agent.convert` and answer INVALID_ARGUMENT
naming the bad field; nothing from a rejected request is stored, and the agent keeps running.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import grpc
import structlog
from google.protobuf.message import DecodeError, Message
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from grstats.agent.convert import (
    MAX_GTID_TEXT,
    MAX_UPDATES,
    WireError,
    digest_from_wire,
    digest_to_wire,
    table_to_wire,
    update_to_wire,
    updates_from_wire,
    uuid_from_bytes,
    uuid_to_bytes,
)
from grstats.agent.identity import certified_members, refusal
from grstats.agent.limits import LimitsConfig, RateLimiter
from grstats.agent.log import ThrottledWarning
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from grstats.agent.gossip import GossipState, MergeResult, Update
    from grstats.agent.metrics import AgentMetrics
    from grstats.agent.security import Security
    from grstats.agent.served import Served

_M = TypeVar("_M", bound=Message)

#: Longest ``sender`` address accepted (a host name is at most 253 characters, plus the port).
MAX_SENDER_CHARS = 255

SERVICE_NAMES = (
    pb.DESCRIPTOR.services_by_name["Gossip"].full_name,
    pb.DESCRIPTOR.services_by_name["Query"].full_name,
)


class Node(Protocol):
    """What the servicers need of the agent (``agent.runtime.Agent`` provides it)."""

    address: str
    member_id: str
    metrics: AgentMetrics

    def clock(self) -> int:
        """The agent's clock, µs since the epoch: the times an exchange's answer carries."""
        ...

    def accept(self, updates: list[Update], sender: str, sender_member: str) -> MergeResult:
        """Merge updates a peer pushed; return what was taken."""
        ...

    def knowledge(self) -> GossipState | None:
        """The gossip state, once the local member is known."""
        ...

    def tables(self, extended: bool) -> Served:
        """The served tables now."""
        ...


def now_us() -> int:
    """The wall clock in µs since the epoch."""
    return time.time_ns() // 1000


async def _admit(
    limiter: RateLimiter | None, kind: str, context: grpc.aio.ServicerContext[Any, Any]
) -> None:
    """Abort with RESOURCE_EXHAUSTED when the caller's host is over its ``kind`` rate."""
    if limiter is not None and not limiter.admit(kind, context.peer()):
        await context.abort(
            grpc.StatusCode.RESOURCE_EXHAUSTED, f"{kind}: over this client's rate limit"
        )


class GossipServicer(pb_grpc.GossipServicer):  # type: ignore[misc]
    """Answers a peer's push-pull exchanges and takes its push stream."""

    def __init__(
        self,
        node: Node,
        limits: LimitsConfig | None = None,
        limiter: RateLimiter | None = None,
        log: structlog.typing.FilteringBoundLogger | None = None,
    ) -> None:
        self._node = node
        self._log = log or structlog.get_logger()
        # Keyed by the certificate's members (a bounded set: our CA signed them), never by
        # what the peer wrote, so a flood of refusals costs a line per 10 s per certificate.
        self._identity_refused = ThrottledWarning(self._log, "peer_identity_refused")
        self._max_updates = limits.max_updates if limits else MAX_UPDATES
        self._max_gtid_text = limits.max_gtid_text if limits else MAX_GTID_TEXT
        self._limiter = limiter

    async def Exchange(  # noqa: N802  (the RPC's name)
        self,
        request: pb.ExchangeRequest | None,
        context: grpc.aio.ServicerContext[pb.ExchangeRequest, pb.ExchangeResponse],
    ) -> pb.ExchangeResponse:
        """Merge what the peer pushed, then send what it lacks by its digest."""
        received = self._node.clock()
        await _admit(self._limiter, "gossip", context)
        sender_member, updates = await self._checked(request, context)
        await self._authorized(sender_member, updates, context)
        assert request is not None
        try:
            digest = digest_from_wire(request.digest)
        except WireError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        self._node.accept(updates, request.sender, sender_member)
        self._node.metrics.received(self._sender(sender_member), "exchange", request.ByteSize())
        state = self._node.knowledge()
        if state is None:
            return pb.ExchangeResponse(received_at_us=received, sent_at_us=self._node.clock())
        return pb.ExchangeResponse(
            updates=[update_to_wire(u) for u in state.updates_for(digest)],
            digest=digest_to_wire(state.digest()),
            received_at_us=received,
            sent_at_us=self._node.clock(),
            member=uuid_to_bytes(self._node.member_id),
        )

    async def Push(  # noqa: N802  (the RPC's name)
        self,
        requests: AsyncIterator[pb.ExchangeRequest | None],
        context: grpc.aio.ServicerContext[pb.ExchangeRequest, pb.PushReply],
    ) -> pb.PushReply:
        """Merge each message of a peer's push stream; a malformed one ends the stream."""
        accepted = 0
        async for request in requests:
            await _admit(self._limiter, "gossip", context)
            sender_member, updates = await self._checked(request, context)
            await self._authorized(sender_member, updates, context)
            assert request is not None
            self._node.accept(updates, request.sender, sender_member)
            self._node.metrics.received(self._sender(sender_member), "push", request.ByteSize())
            accepted += 1
        return pb.PushReply(accepted=accepted)

    def _sender(self, member: str) -> str:
        """The ``member`` label of a sender: its UUID if known, so that labels stay bounded."""
        state = self._node.knowledge()
        return member if state is not None and member in state.origins else "unknown"

    async def _authorized(
        self, sender_member: str, updates: list[Update], context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        """Abort PERMISSION_DENIED when the peer's certificate is not of the member it speaks for.

        Only peers that presented a certificate are checked (all of them with mutual TLS); see
        :mod:`grstats.agent.identity` for the mapping.
        """
        certified = certified_members(context.auth_context())
        if certified is None:
            return
        reason = refusal(certified, sender_member, updates)
        if reason:
            self._identity_refused(
                tuple(sorted(certified)),
                peer=context.peer(),
                certified=sorted(certified),
                sender_member=sender_member,
                reason=reason,
            )
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, reason)

    async def _checked(
        self, request: pb.ExchangeRequest | None, context: grpc.aio.ServicerContext[Any, Any]
    ) -> tuple[str, list[Update]]:
        """The sender's member and the updates of ``request``, or abort INVALID_ARGUMENT."""
        if request is None:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "request: not an ExchangeRequest")
        if len(request.sender) > MAX_SENDER_CHARS:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"sender: {len(request.sender)} characters is more than {MAX_SENDER_CHARS}",
            )
        try:
            return (
                uuid_from_bytes(request.sender_member, "sender_member"),
                updates_from_wire(
                    request.updates,
                    max_updates=self._max_updates,
                    max_gtid_text=self._max_gtid_text,
                ),
            )
        except WireError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        raise AssertionError  # not reached: abort raises


class QueryServicer(pb_grpc.QueryServicer):  # type: ignore[misc]
    """Serves the tables this agent knows.

    The plain tables change only when the agent's knowledge does (``Node.tables`` returns the
    same object until then): their wire encoding is made once per change and each answer is
    those bytes plus a few fields of its own. Extended tables hold the time, so they are built
    per query.
    """

    def __init__(self, node: Node, limiter: RateLimiter | None = None) -> None:
        self._node = node
        self._encoded: tuple[Served, dict[tuple[str, ...], bytes]] | None = None
        self._limiter = limiter

    def _encoded_tables(self, tables: Served, names: tuple[str, ...]) -> bytes:
        """``QueryResponse.tables`` of ``names``, encoded once per set of tables built."""
        if self._encoded is None or self._encoded[0] is not tables:
            self._encoded = (tables, {})
        cache = self._encoded[1]
        if names not in cache:
            converted = [table_to_wire(name, *tables[name]) for name in names]
            cache[names] = pb.QueryResponse(tables=converted).SerializeToString()
        return cache[names]

    async def Read(  # noqa: N802  (the RPC's name)
        self,
        request: pb.QueryRequest | None,
        context: grpc.aio.ServicerContext[pb.QueryRequest, pb.QueryResponse],
    ) -> pb.QueryResponse | bytes:
        """Return the requested tables (all when none is named)."""
        await _admit(self._limiter, "query", context)
        if request is None:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "request: not a QueryRequest")
        tables = self._node.tables(request.extended)
        unknown = [name for name in request.tables if name not in tables]
        if unknown:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"tables: {unknown[0][:64]!r} is not one of {', '.join(sorted(tables))}",
            )
        names = tuple(dict.fromkeys(request.tables)) or tuple(tables)  # each table once
        answer = pb.QueryResponse(
            agent=self._node.address,
            member=uuid_to_bytes(self._node.member_id) if self._node.member_id else b"",
            served_at_us=now_us(),
        )
        if request.extended:
            answer.tables.extend(table_to_wire(name, *tables[name]) for name in names)
            return answer
        # Serialized messages concatenate as a merge: the cached tables, then this answer's fields.
        own: bytes = answer.SerializeToString()
        return self._encoded_tables(tables, names) + own


def _serialized(response: Message | bytes) -> bytes:
    """A response serializer that passes bytes already encoded through."""
    return response if isinstance(response, bytes) else response.SerializeToString()


def _lenient(message_type: type[_M]) -> Callable[[bytes], _M | None]:
    """A request deserializer that returns None for bytes that are not a ``message_type``.

    gRPC's own deserializer raises, which ends the call as UNKNOWN with an error logged by
    the library; the servicers answer None with INVALID_ARGUMENT instead.
    """

    def parse(raw: bytes) -> _M | None:
        try:
            parsed: _M = message_type.FromString(raw)
        except DecodeError:
            return None
        return parsed

    return parse


def _handlers(
    node: Node,
    limits: LimitsConfig | None,
    limiter: RateLimiter | None,
    log: structlog.typing.FilteringBoundLogger | None = None,
) -> list[grpc.GenericRpcHandler]:
    gossip = GossipServicer(node, limits, limiter, log)
    query = QueryServicer(node, limiter)
    return [
        grpc.method_handlers_generic_handler(
            SERVICE_NAMES[0],
            {
                "Exchange": grpc.unary_unary_rpc_method_handler(
                    gossip.Exchange,
                    request_deserializer=_lenient(pb.ExchangeRequest),
                    response_serializer=pb.ExchangeResponse.SerializeToString,
                ),
                "Push": grpc.stream_unary_rpc_method_handler(
                    gossip.Push,
                    request_deserializer=_lenient(pb.ExchangeRequest),
                    response_serializer=pb.PushReply.SerializeToString,
                ),
            },
        ),
        grpc.method_handlers_generic_handler(
            SERVICE_NAMES[1],
            {
                "Read": grpc.unary_unary_rpc_method_handler(
                    query.Read,
                    request_deserializer=_lenient(pb.QueryRequest),
                    response_serializer=_serialized,
                )
            },
        ),
    ]


def build_server(  # noqa: PLR0913  (optional parts, by keyword)
    node: Node,
    health_servicer: health.aio.HealthServicer,
    *,
    limits: LimitsConfig | None = None,
    limiter: RateLimiter | None = None,
    security: Security | None = None,
    log: structlog.typing.FilteringBoundLogger | None = None,
) -> grpc.aio.Server:
    """Return an unstarted server with Gossip, Query, health and reflection registered.

    ``limits`` bounds message sizes and contents (default: :class:`LimitsConfig`'s defaults);
    ``limiter`` rate-limits Gossip and Query per client host (None: no rate limit).
    ``security`` adds the token check (its port is bound with ``security.bind``); ``log``
    records refused identities and tokens.
    """
    limits = limits or LimitsConfig()
    log = log or structlog.get_logger()
    interceptors = security.interceptors(SERVICE_NAMES, log) if security else []
    server = grpc.aio.server(options=limits.channel_options, interceptors=interceptors)
    server.add_generic_rpc_handlers(_handlers(node, limits, limiter, log))
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (
            *SERVICE_NAMES,
            health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
            reflection.SERVICE_NAME,
        ),
        server,
    )
    return server
