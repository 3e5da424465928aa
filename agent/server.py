"""The agent's gRPC services: Gossip (between agents) and Query (for clients), plus health.

The Gossip servicer is the gRPC transport's server half: it decodes each message, checks it
and hands it to the agent's :class:`~grstats.agent.transports.base.Receiver` (the gossip
rounds). Servicers check every request through :mod:`grstats.agent.convert` and answer
INVALID_ARGUMENT naming the bad field; nothing from a rejected request is stored, and the
agent keeps running. Times come from the clock the agent injects.

What a peer's messages may cost is bounded before they are decoded: gRPC refuses a message
over ``max_message_bytes``; a host's messages held at once (from the handler's first look at
their bytes until they are merged or refused) may not pass ``gossip_bytes_in_flight``
(RESOURCE_EXHAUSTED, one warning per 10 s); a message over
:data:`~grstats.agent.limits.DECODE_ON_LOOP_BYTES` is decoded and checked on the server's one
decoding thread, so that a large GTID text does not hold the event loop (and the agent's
period). Gossip refusals set the call's status rather than raise, and the memory that
messages took is handed back to the system afterwards (:class:`MemoryRelease`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import grpc
import structlog
from google.protobuf.message import DecodeError, Message
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from grstats.agent.convert import (
    WireError,
    answer_to_wire,
    gossip_from_wire,
    source_report_to_wire,
    uuid_to_bytes,
)
from grstats.agent.identity import certified_members, refusal
from grstats.agent.limits import (
    DECODE_ON_LOOP_BYTES,
    DEFAULT_LIMITS,
    ByteBudget,
    LimitsConfig,
    RateLimiter,
    client_host,
)
from grstats.agent.served import Served, Table
from grstats.core.build import OWN_BUILD
from grstats.core.clock import now_us
from grstats.core.log import ThrottledWarning
from grstats.core.query_wire import for_client, known_columns, table_to_wire
from grstats.core.rows.member_log import REPLICATION_GROUP_MEMBER_LOG
from grstats.core.rows.schema import REPLICATION_GROUP_EVENTS
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping

    from grstats.agent.messages import Gossip, SourceReport
    from grstats.agent.transports.base import Receiver
    from grstats.core.clock import Clock
    from grstats.core.security import Security

_M = TypeVar("_M", bound=Message)

#: A message at least this large makes the server hand memory back to the system afterwards.
RELEASE_AFTER_BYTES = 1024 * 1024
#: How long after a large message the memory is handed back (once for a burst of them).
RELEASE_DELAY_S = 0.5
#: How long after any call glibc's free memory is handed back (once for all calls meanwhile).
TRIM_EVERY_S = 5.0
#: Trims after a burst's last call, at 2, 4, ... 2**LATE_TRIMS times ``every_s`` after the one
#: before (:class:`MemoryRelease`): a flood refused on a loaded host was still being read at the
#: first, and its 30 MB stayed until the next call (tests/agent/test_message_memory.py).
LATE_TRIMS = 5

_RESOURCE_EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED

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


class MemoryRelease:
    """Hands the memory that messages took back to the system once the agent is done with them.

    Python frees a message's buffers when it is done with them, but glibc's malloc keeps
    what is freed in its arenas, so without this the agent's RSS stays at the peak of a
    flood (also of messages gRPC itself refused as too large: their bytes were read all the
    same). After a large message, :meth:`soon` schedules a collection and glibc's
    ``malloc_trim(0)`` within ``delay_s``; after any call, :meth:`noticed` schedules the trim
    alone within ``every_s`` (0.3 ms when there is nothing to hand back). They default to
    :data:`RELEASE_DELAY_S` and :data:`TRIM_EVERY_S`. After the last call of a burst come
    :data:`LATE_TRIMS` more trims, each twice as late as the one before: a message still being
    read or decoded at the first one (a slow host, a loaded one) is freed by a later one, even
    when no call follows (a group of one, a quiet peer). The trim runs on a worker thread, and
    not at all on a C library without it.
    """

    def __init__(self, delay_s: float | None = None, every_s: float | None = None) -> None:
        self._delay_s = RELEASE_DELAY_S if delay_s is None else delay_s
        self._every_s = TRIM_EVERY_S if every_s is None else every_s
        self._full: asyncio.TimerHandle | None = None
        self._trim: asyncio.TimerHandle | None = None
        self._busy = False  # a call was noticed since the trim was scheduled
        self._late = 0  # the late trims done since the last call's

    def soon(self) -> None:
        """Collect and trim ``delay_s`` from now, unless that is already scheduled."""
        if self._full is None:
            loop = asyncio.get_running_loop()
            self._full = loop.call_later(self._delay_s, self._collect, loop)

    def noticed(self) -> None:
        """Trim within ``every_s``, unless that is already scheduled (then once more after it).

        The trim after the last call of a burst comes ``every_s`` or more after that call
        began, once what it held is freed.
        """
        self._late = 0
        if self._trim is None:
            loop = asyncio.get_running_loop()
            self._trim = loop.call_later(self._every_s, self._trim_only, loop)
        else:
            self._busy = True

    def _collect(self, loop: asyncio.AbstractEventLoop) -> None:
        self._full = None
        gc.collect()
        self._hand_back(loop)

    def _trim_only(self, loop: asyncio.AbstractEventLoop) -> None:
        self._trim = None
        self._hand_back(loop)
        if self._busy:  # calls came since this trim was scheduled: one more after them
            self._busy = False
            self._trim = loop.call_later(self._every_s, self._trim_only, loop)
        elif self._late < LATE_TRIMS:  # the burst is over: later ones, for what it still held
            self._late += 1
            self._trim = loop.call_later(self._every_s * 2**self._late, self._trim_only, loop)

    def _hand_back(self, loop: asyncio.AbstractEventLoop) -> None:
        trim = _malloc_trim()
        if trim is None:
            return
        try:
            loop.run_in_executor(None, trim, 0)
        except RuntimeError:
            # The loop's executor is shut down (asyncio.run's end, once the agent stopped): a
            # timer of the last calls fired after it, and the process is about to exit anyway.
            return


class _Noticing(grpc.aio.ServerInterceptor):
    """Tells the :class:`MemoryRelease` of every call, before gRPC reads its message."""

    def __init__(self, release: MemoryRelease) -> None:
        self._release = release

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        """Note the call, then handle it as usual."""
        self._release.noticed()
        return await continuation(handler_call_details)


@functools.cache
def _decoder() -> ThreadPoolExecutor:
    """The one thread that decodes large messages, in turn.

    One, not a pool: a decode holds the GIL while it parses, and the event loop waits for it
    no longer than one switch interval (5 ms) at a time only while a single thread competes.
    """
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="grstats-decode")


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """The C library's ``malloc_trim`` (glibc has it), or None."""
    import ctypes  # noqa: PLC0415  (loaded at the first large message only)

    trim: Callable[[int], int] | None = getattr(ctypes.CDLL(None), "malloc_trim", None)
    return trim


class GossipServicer(pb_grpc.GossipServicer):  # type: ignore[misc]
    """Decodes and checks a peer's exchanges and push stream; the ``receiver`` merges them.

    Requests arrive as bytes (see :func:`_handlers`): their size is charged to the sending
    host's :class:`~grstats.agent.limits.ByteBudget` before they are decoded.
    """

    def __init__(  # noqa: PLR0913  (optional parts, by keyword)
        self,
        receiver: Receiver,
        limits: LimitsConfig | None = None,
        limiter: RateLimiter | None = None,
        log: structlog.typing.FilteringBoundLogger | None = None,
        clock: Clock = now_us,
        *,
        release: MemoryRelease | None = None,
    ) -> None:
        self._receiver = receiver
        self._log = log or structlog.get_logger()
        # Keyed by the certificate's members (a bounded set: our CA signed them), never by
        # what the peer wrote, so a flood of refusals costs a line per 10 s per certificate.
        self._identity_refused = ThrottledWarning(self._log, "peer_identity_refused")
        self._over_budget = ThrottledWarning(self._log, "peer_bytes_in_flight_exceeded")
        self._limits = limits or DEFAULT_LIMITS
        self.budget = ByteBudget(self._limits.gossip_bytes_in_flight)
        self.release = release or MemoryRelease()
        self._limiter = limiter
        self._clock = clock

    async def Exchange(  # noqa: N802  (the RPC's name)
        self,
        request: bytes,
        context: grpc.aio.ServicerContext[bytes, pb.ExchangeResponse],
    ) -> pb.ExchangeResponse:
        """Merge what the peer sent, then send what it lacks by its digest."""
        received = self._clock()
        with self._charged(request, context) as admitted:
            message = await self._accepted(request, context, admitted=admitted, pushed=False)
            if message is None:
                return pb.ExchangeResponse()  # not sent: the call ends with the status set
            answer = self._receiver.answer(message, len(request), received)
        return answer_to_wire(answer)

    async def Push(  # noqa: N802  (the RPC's name)
        self,
        requests: AsyncIterator[bytes],
        context: grpc.aio.ServicerContext[bytes, pb.PushReply],
    ) -> pb.PushReply:
        """Merge each message of a peer's push stream; a refused one ends the stream."""
        accepted = 0
        async for request in requests:
            with self._charged(request, context) as admitted:
                message = await self._accepted(request, context, admitted=admitted, pushed=True)
                if message is None:
                    break
                self._receiver.take(message, len(request))
            accepted += 1
        return pb.PushReply(accepted=accepted)

    @contextlib.contextmanager
    def _charged(
        self, request: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> Iterator[bool]:
        """Charge ``request``'s bytes to its host while the block runs; whether they fitted."""
        peer, size = context.peer(), len(request)
        admitted = self.budget.take(peer, size)
        try:
            yield admitted
        finally:
            if admitted:
                self.budget.give(peer, size)
            if size >= RELEASE_AFTER_BYTES:
                self.release.soon()

    async def _accepted(
        self,
        request: bytes,
        context: grpc.aio.ServicerContext[Any, Any],
        *,
        admitted: bool,
        pushed: bool,
    ) -> Gossip | None:
        """The checked message of ``request``, or None with the call's status saying why not.

        Refusals set the status rather than raise (``context.abort``): an exception would
        keep the frames holding the message alive as long as gRPC keeps the call's state.
        """
        peer = context.peer()
        if self._limiter is not None and not self._limiter.admit("gossip", peer):
            _refused(context, _RESOURCE_EXHAUSTED, "gossip: over this client's rate limit")
            return None
        if not admitted:
            host, held = client_host(peer), self.budget.held(peer)
            self._over_budget("gossip", client=host, held=held, size=len(request))
            _refused(
                context,
                _RESOURCE_EXHAUSTED,
                f"gossip: {held + len(request)} bytes in flight from this host is more than "
                f"limits.gossip_bytes_in_flight ({self.budget.limit})",
            )
            return None
        decoded = await self._decoded(request, pushed=pushed)
        if isinstance(decoded, str):
            _refused(context, grpc.StatusCode.INVALID_ARGUMENT, decoded)
            return None
        reason = self._unauthorized(decoded, context)
        if reason:
            _refused(context, grpc.StatusCode.PERMISSION_DENIED, reason)
            return None
        return decoded

    async def _decoded(self, request: bytes, *, pushed: bool) -> Gossip | str:
        """The message of ``request``, or what is wrong with it (on a thread when large)."""
        if len(request) <= DECODE_ON_LOOP_BYTES:
            return _decoded(request, self._limits, pushed=pushed)
        decode = functools.partial(_decoded, request, self._limits, pushed=pushed)
        return await asyncio.get_running_loop().run_in_executor(_decoder(), decode)

    def _unauthorized(self, message: Gossip, context: grpc.aio.ServicerContext[Any, Any]) -> str:
        """Why the peer's certificate is not of the member it speaks for; '' when it is.

        Only peers that presented a certificate are checked (all of them with mutual TLS); see
        :mod:`grstats.agent.identity` for the mapping.
        """
        certified = certified_members(context.auth_context())
        if certified is None:
            return ""
        reason = refusal(certified, message.sender_member, message.updates)
        if reason:
            self._identity_refused(
                tuple(sorted(certified)),
                peer=context.peer(),
                certified=sorted(certified),
                sender_member=message.sender_member,
                reason=reason,
            )
        return reason


def _refused(
    context: grpc.aio.ServicerContext[Any, Any], code: grpc.StatusCode, details: str
) -> None:
    """End the call with ``code`` and ``details`` once the handler returns."""
    context.set_code(code)
    context.set_details(details)


def _decoded(request: bytes, limits: LimitsConfig, *, pushed: bool) -> Gossip | str:
    """The checked message of an ExchangeRequest's bytes, or the refusal naming the field.

    The refusal is returned, not raised: see :meth:`GossipServicer._accepted`.
    """
    try:
        parsed = pb.ExchangeRequest.FromString(request)
    except DecodeError:
        return "request: not an ExchangeRequest"
    try:
        return gossip_from_wire(parsed, limits, pushed=pushed)
    except WireError as exc:
        return str(exc)


class QueryServicer(pb_grpc.QueryServicer):  # type: ignore[misc]
    """Serves the tables this agent knows, whether it can read its own member, and its build.

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
        self._encoded: tuple[Mapping[str, Table], dict[tuple[tuple[str, ...], int], bytes]] | None
        self._encoded = None
        self._limiter = limiter
        self._clock = clock

    def _encoded_tables(
        self, tables: Mapping[str, Table], names: tuple[str, ...], revision: int
    ) -> bytes:
        """``QueryResponse.tables`` of ``names`` for a client of ``revision``, encoded once.

        Once per set of tables built and per set of columns the client knows.
        """
        if self._encoded is None or self._encoded[0] is not tables:
            self._encoded = (tables, {})
        cache = self._encoded[1]
        known = known_columns(revision)
        key = (names, id(known))
        if key not in cache:
            converted = [
                table_to_wire(name, *for_client(name, *tables[name], known)) for name in names
            ]
            cache[key] = pb.QueryResponse(tables=converted).SerializeToString()
        return cache[key]

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
            group_label=tables.group_label if isinstance(tables, Served) else "",
            agent_version=OWN_BUILD.version,
            protocol_revision=OWN_BUILD.revision,
        )
        if self._reporter is not None:
            fault = source_report_to_wire(self._reporter.source_report())
            if fault is not None:
                answer.source_fault.CopyFrom(fault)
        since = request.events_since_us if any(n in _SINCE_COLUMNS for n in names) else 0
        revision = request.protocol_revision  # 0 from an older client: the columns it knows
        if request.extended or since:  # built for this query: not the cached encoding
            known = known_columns(revision)
            answer.tables.extend(
                table_to_wire(name, *for_client(name, *_since(name, tables[name], since), known))
                for name in names
            )
            return answer
        # Serialized messages concatenate as a merge: the cached tables, then this answer's fields.
        own: bytes = answer.SerializeToString()
        return self._encoded_tables(tables, names, revision) + own


#: The tables ``QueryRequest.events_since_us`` filters, and the index of the time column each is
#: filtered on: the events' EVENT_TIME and (revision 5) the log lines' LOGGED.
EVENTS_TABLE = REPLICATION_GROUP_EVENTS.name
_SINCE_COLUMNS = {
    table.name: next(index for index, column in enumerate(table.columns) if column.name == name)
    for table, name in (
        (REPLICATION_GROUP_EVENTS, "EVENT_TIME"),
        (REPLICATION_GROUP_MEMBER_LOG, "LOGGED"),
    )
}


def _since(name: str, table: Table, since_us: int) -> Table:
    """Table ``name``; the events and log lines only those at or after ``since_us`` (µs)."""
    columns, rows = table
    at_column = _SINCE_COLUMNS.get(name)
    if at_column is None or not since_us:
        return table
    kept = [row for row in rows if isinstance(at := row[at_column], int) and at >= since_us]
    return columns, kept


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
                # No deserializer: the servicer charges the bytes, then decodes them.
                "Exchange": grpc.unary_unary_rpc_method_handler(
                    gossip.Exchange,
                    response_serializer=pb.ExchangeResponse.SerializeToString,
                ),
                "Push": grpc.stream_unary_rpc_method_handler(
                    gossip.Push,
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
    release = MemoryRelease()
    interceptors = [
        _Noticing(release),
        *(security.interceptors(SERVICE_NAMES, log) if security else []),
    ]
    server = grpc.aio.server(options=limits.channel_options, interceptors=interceptors)
    gossip = GossipServicer(receiver, limits, limiter, log, clock, release=release)
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
