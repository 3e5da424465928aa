"""The agent's gRPC services: Gossip (between agents) and Query (for clients), plus health.

The Gossip servicer is the gRPC transport's server half: it decodes each message, checks it
and hands it to the agent's :class:`~grstats.agent.transports.base.Receiver` (the gossip
rounds). Servicers check every request through :mod:`grstats.agent.convert` and answer
INVALID_ARGUMENT naming the bad field; nothing from a rejected request is stored, and the
agent keeps running. Times come from the clock the agent injects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import grpc
import structlog
from google.protobuf.message import DecodeError, Message
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from grstats.agent.clock import now_us
from grstats.agent.convert import (
    WireError,
    answer_to_wire,
    gossip_from_wire,
    source_report_to_wire,
    table_to_wire,
    uuid_to_bytes,
)
from grstats.agent.identity import certified_members, refusal
from grstats.agent.limits import DEFAULT_LIMITS, LimitsConfig, RateLimiter
from grstats.agent.log import ThrottledWarning
from grstats.agent.served import Served, Table
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping

    from grstats.agent.clock import Clock
    from grstats.agent.messages import Gossip, SourceReport
    from grstats.agent.security import Security
    from grstats.agent.transports.base import Receiver

_M = TypeVar("_M", bound=Message)

SERVICE_NAMES = (
    pb.DESCRIPTOR.services_by_name["Gossip"].full_name,
    pb.DESCRIPTOR.services_by_name["Query"].full_name,
)


class Node(Protocol):
    """What the Query servicer needs of the agent (``grstats.agent.runtime.Agent`` has it)."""

    @property
    def address(self) -> str:
        """The agent's address, ``host:port``."""
        ...

    @property
    def member_id(self) -> str:
        """The agent's member, ``''`` before its first read."""
        ...

    def tables(self, extended: bool) -> Mapping[str, Table]:
        """The served tables now (a :class:`~grstats.agent.served.Served`)."""
        ...


@runtime_checkable
class SourceReporting(Protocol):
    """What the Query servicer needs to say whether the agent can read its own member.

    Optional, like a memberlist delegate: a node without it answers without
    ``source_fault``, which clients read as "can read" (as they read an older agent's answer).
    ``grstats.agent.runtime.Agent`` has it. Called on the event loop once per Query.Read; must
    not block.
    """

    def source_report(self) -> SourceReport:
        """Whether the agent can read its member now, and since when it cannot."""
        ...


async def _admit(
    limiter: RateLimiter | None, kind: str, context: grpc.aio.ServicerContext[Any, Any]
) -> None:
    """Abort with RESOURCE_EXHAUSTED when the caller's host is over its ``kind`` rate."""
    if limiter is not None and not limiter.admit(kind, context.peer()):
        await context.abort(
            grpc.StatusCode.RESOURCE_EXHAUSTED, f"{kind}: over this client's rate limit"
        )


class GossipServicer(pb_grpc.GossipServicer):  # type: ignore[misc]
    """Decodes and checks a peer's exchanges and push stream; the ``receiver`` merges them."""

    def __init__(
        self,
        receiver: Receiver,
        limits: LimitsConfig | None = None,
        limiter: RateLimiter | None = None,
        log: structlog.typing.FilteringBoundLogger | None = None,
        clock: Clock = now_us,
    ) -> None:
        self._receiver = receiver
        self._log = log or structlog.get_logger()
        # Keyed by the certificate's members (a bounded set: our CA signed them), never by
        # what the peer wrote, so a flood of refusals costs a line per 10 s per certificate.
        self._identity_refused = ThrottledWarning(self._log, "peer_identity_refused")
        self._limits = limits or DEFAULT_LIMITS
        self._limiter = limiter
        self._clock = clock

    async def Exchange(  # noqa: N802  (the RPC's name)
        self,
        request: pb.ExchangeRequest | None,
        context: grpc.aio.ServicerContext[pb.ExchangeRequest, pb.ExchangeResponse],
    ) -> pb.ExchangeResponse:
        """Merge what the peer sent, then send what it lacks by its digest."""
        received = self._clock()
        await _admit(self._limiter, "gossip", context)
        message = await self._checked(request, context, pushed=False)
        assert request is not None
        answer = self._receiver.answer(message, request.ByteSize(), received)
        return answer_to_wire(answer)

    async def Push(  # noqa: N802  (the RPC's name)
        self,
        requests: AsyncIterator[pb.ExchangeRequest | None],
        context: grpc.aio.ServicerContext[pb.ExchangeRequest, pb.PushReply],
    ) -> pb.PushReply:
        """Merge each message of a peer's push stream; a malformed one ends the stream."""
        accepted = 0
        async for request in requests:
            await _admit(self._limiter, "gossip", context)
            message = await self._checked(request, context, pushed=True)
            assert request is not None
            self._receiver.take(message, request.ByteSize())
            accepted += 1
        return pb.PushReply(accepted=accepted)

    async def _checked(
        self,
        request: pb.ExchangeRequest | None,
        context: grpc.aio.ServicerContext[Any, Any],
        *,
        pushed: bool,
    ) -> Gossip:
        """The message of ``request``, or abort INVALID_ARGUMENT (or PERMISSION_DENIED)."""
        if request is None:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "request: not an ExchangeRequest")
        try:
            message = gossip_from_wire(request, self._limits, pushed=pushed)
        except WireError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        await self._authorized(message, context)
        return message

    async def _authorized(
        self, message: Gossip, context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        """Abort PERMISSION_DENIED when the peer's certificate is not of the member it speaks for.

        Only peers that presented a certificate are checked (all of them with mutual TLS); see
        :mod:`grstats.agent.identity` for the mapping.
        """
        certified = certified_members(context.auth_context())
        if certified is None:
            return
        reason = refusal(certified, message.sender_member, message.updates)
        if reason:
            self._identity_refused(
                tuple(sorted(certified)),
                peer=context.peer(),
                certified=sorted(certified),
                sender_member=message.sender_member,
                reason=reason,
            )
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, reason)


class QueryServicer(pb_grpc.QueryServicer):  # type: ignore[misc]
    """Serves the tables this agent knows, and whether it can read its own member.

    The plain tables change only when the agent's knowledge does (``Node.tables`` returns the
    same object until then): their wire encoding is made once per change and each answer is
    those bytes plus a few fields of its own. Extended tables hold the time, so they are built
    per query.
    """

    def __init__(
        self, node: Node, limiter: RateLimiter | None = None, clock: Clock = now_us
    ) -> None:
        self._node = node
        self._reporter = node if isinstance(node, SourceReporting) else None
        self._encoded: tuple[Mapping[str, Table], dict[tuple[str, ...], bytes]] | None = None
        self._limiter = limiter
        self._clock = clock

    def _encoded_tables(self, tables: Mapping[str, Table], names: tuple[str, ...]) -> bytes:
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
        """Return the requested tables (all when none is named) and the source's fault, if any."""
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
            served_at_us=self._clock(),
            group_name=tables.group_name if isinstance(tables, Served) else "",
        )
        if self._reporter is not None:
            fault = source_report_to_wire(self._reporter.source_report())
            if fault is not None:
                answer.source_fault.CopyFrom(fault)
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


def _handlers(gossip: GossipServicer, query: QueryServicer) -> list[grpc.GenericRpcHandler]:
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
    receiver: Receiver,
    health_servicer: health.aio.HealthServicer,
    *,
    clock: Clock = now_us,
    limits: LimitsConfig | None = None,
    limiter: RateLimiter | None = None,
    security: Security | None = None,
    log: structlog.typing.FilteringBoundLogger | None = None,
) -> grpc.aio.Server:
    """Return an unstarted server with Gossip, Query, health and reflection registered.

    Gossip hands what peers send to ``receiver``; Query serves ``node``'s tables. ``clock``
    is the agent's (the times answers carry); ``limits`` bounds message sizes and contents
    (default: :data:`~grstats.agent.limits.DEFAULT_LIMITS`); ``limiter`` rate-limits Gossip and
    Query per client host (None: no rate limit). ``security`` adds the token check (its port
    is bound with ``security.bind``); ``log`` records refused identities and tokens.
    """
    limits = limits or DEFAULT_LIMITS
    log = log or structlog.get_logger()
    interceptors = security.interceptors(SERVICE_NAMES, log) if security else []
    server = grpc.aio.server(options=limits.channel_options, interceptors=interceptors)
    gossip = GossipServicer(receiver, limits, limiter, log, clock)
    query = QueryServicer(node, limiter, clock)
    server.add_generic_rpc_handlers(_handlers(gossip, query))
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
