"""``GrpcTransport``: pushes and exchanges over gRPC, one channel per peer.

Messages are encoded here (:mod:`grstats.agent.convert`), and gRPC's errors are translated
here, once, into :mod:`grstats.core.errors`; a :class:`DialWatch` hears of each call that
failed UNAVAILABLE and of each Exchange that succeeded (the agent's
:class:`~grstats.agent.tls_watch.TlsWatch` names TLS mistakes from them). An answer larger than
:data:`~grstats.agent.limits.DECODE_ON_LOOP_BYTES` is decoded on a worker thread, so that a
peer's large GTID texts do not hold the event loop.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

import grpc
from google.protobuf.message import DecodeError

from grstats.agent.convert import WireError, answer_from_wire, gossip_to_wire
from grstats.agent.limits import DECODE_ON_LOOP_BYTES, DEFAULT_LIMITS, LimitsConfig
from grstats.core.errors import PeerTimeout, PeerUnreachable, TransportError
from grstats.core.security import Security
from grstats.proto import grstats_pb2 as pb

if TYPE_CHECKING:
    from grstats.agent.messages import Answer, Gossip

#: The Push method's path: called with payloads serialized once for every peer.
PUSH_METHOD = "/grstats.v1.Gossip/Push"
#: The Exchange method's path: its answer is taken as bytes and decoded here.
EXCHANGE_METHOD = "/grstats.v1.Gossip/Exchange"

#: Keepalive pings, so that a push stream to a host that vanished without closing its
#: connections fails within about a minute.
KEEPALIVE_OPTIONS = (
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
)

#: Pushes whose encoding is kept: a period's news (and the opening message) for every peer.
_ENCODINGS_KEPT = 2

#: Messages one push stream carries before it is half-closed and the next push opens another
#: (with an opening message of all the agent's values). gRPC holds memory for every message a
#: stream carried until the stream ends: about 0.65 KiB for each message of 0.8 KB (grpcio
#: 1.85; docs/benchmarks.md, "Soak"), so a stream kept open for good grew each agent's RSS by
#: that much a period for every peer. A minute of pushes at the default period bounds it.
PUSH_STREAM_MESSAGES = 60

_PushCall = grpc.aio.StreamUnaryCall[bytes, pb.PushReply]


class DialWatch(Protocol):
    """What hears of the calls to each peer: the failed (UNAVAILABLE) ones and the answered."""

    def failed(self, peer: str, error: str) -> None:
        """A call to ``peer`` failed UNAVAILABLE; ``error`` is gRPC's text of it."""

    def reached(self, peer: str) -> None:
        """An Exchange with ``peer`` was answered."""

    async def aclose(self) -> None:
        """Stop what it started."""


class GrpcTransport:
    """A :class:`~grstats.agent.transports.base.Transport` over grpc.aio, one channel per peer.

    ``limits`` bounds what each channel sends and receives and what an answer may hold
    (the agent's ``[limits]``); ``security`` gives the channels' TLS and every call's token;
    ``watch`` hears of failed and answered calls.
    """

    def __init__(
        self,
        limits: LimitsConfig = DEFAULT_LIMITS,
        security: Security | None = None,
        watch: DialWatch | None = None,
    ) -> None:
        self._limits = limits
        self._watch = watch
        self._security = security or Security()
        self._options = [*limits.channel_options, *KEEPALIVE_OPTIONS]
        self._encoded: dict[int, tuple[Gossip, bytes]] = {}  # id(news) -> (news, its bytes)
        self._stubs: dict[str, grpc.aio.UnaryUnaryMultiCallable[pb.ExchangeRequest, bytes]] = {}
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._streams: dict[str, _PushCall] = {}
        self._written: dict[str, int] = {}  # peer -> messages written on its open push stream
        self._closing: set[asyncio.Task[None]] = set()  # half-closes of full streams under way
        self._generation = 0  # bumped when the TLS files change: channels are made anew
        self._made: dict[str, int] = {}  # peer -> the generation its channel was made in

    def _channel(self, peer: str) -> grpc.aio.Channel:
        channel = self._channels.get(peer)
        if channel is None:
            channel = self._channels[peer] = self._security.channel(peer, self._options)
            self._made[peer] = self._generation
        return channel

    def _stale(self, peer: str) -> bool:
        """Whether ``peer``'s channel was made with TLS files that have since been replaced."""
        if self._security.renewed():
            self._generation += 1
        return self._made.get(peer, self._generation) != self._generation

    async def _renew(self, peer: str) -> None:
        """Close ``peer``'s stale channel and stream: the next call dials with the new files."""
        if not self._stale(peer):
            return
        call = self._streams.pop(peer, None)
        self._written.pop(peer, None)
        if call is not None:
            call.cancel()
        self._stubs.pop(peer, None)
        del self._made[peer]
        await self._channels.pop(peer).close()

    def _stub(self, peer: str) -> grpc.aio.UnaryUnaryMultiCallable[pb.ExchangeRequest, bytes]:
        stub = self._stubs.get(peer)
        if stub is None:
            stub = self._stubs[peer] = self._channel(peer).unary_unary(
                EXCHANGE_METHOD, request_serializer=pb.ExchangeRequest.SerializeToString
            )
        return stub

    async def exchange(self, peer: str, request: Gossip, timeout_s: float) -> Answer:
        """Run one Exchange RPC with ``peer``; translate gRPC's errors once, here.

        An answer that breaks the wire contract raises :class:`~grstats.agent.convert.WireError`
        naming the field.
        """
        await self._renew(peer)
        message = gossip_to_wire(request)
        try:
            response: bytes = await self._stub(peer)(
                message, timeout=timeout_s, metadata=self._security.metadata
            )
        except grpc.aio.AioRpcError as exc:
            self._failed(peer, exc)
            raise _translated(peer, exc, timeout_s) from exc
        if self._watch is not None:
            self._watch.reached(peer)
        if len(response) <= DECODE_ON_LOOP_BYTES:
            return _answer(response, self._limits, message.ByteSize())
        return await asyncio.to_thread(_answer, response, self._limits, message.ByteSize())

    def streaming(self, peer: str) -> bool:
        """Whether a push stream to ``peer`` is open (and not about to be renewed or full)."""
        call = self._streams.get(peer)
        return (
            call is not None
            and not call.done()
            and self._written.get(peer, 0) < PUSH_STREAM_MESSAGES
            and not self._stale(peer)
        )

    async def push(self, peer: str, news: Gossip, timeout_s: float) -> int:
        """Write ``news`` on the push stream to ``peer``, opening the stream if needed.

        ``news`` is encoded once for every peer it is pushed to; the size encoded is returned.

        A stream that ended (the peer restarted, or refused a message) or a write that fails
        or takes longer than ``timeout_s`` drops the stream; the next push opens a new one.
        When the TLS files changed, the channel is dialled again first, with the new files.
        A stream that carried :data:`PUSH_STREAM_MESSAGES` is half-closed (the peer answers it
        as usual) and this push opens the next one.
        """
        payload = self._encoding(news)
        await self._renew(peer)
        call = self._streams.get(peer)
        if call is not None and not call.done() and self._written[peer] >= PUSH_STREAM_MESSAGES:
            self._close_full(peer, call)
            call = None
        if call is not None and call.done():
            del self._streams[peer]
            try:
                await _ended(peer, call)
            except PeerUnreachable as exc:
                if self._watch is not None:
                    self._watch.failed(peer, str(exc))
                raise
        if call is None or call.done():
            multicallable: grpc.aio.StreamUnaryMultiCallable[bytes, pb.PushReply]
            multicallable = self._channel(peer).stream_unary(
                PUSH_METHOD, response_deserializer=pb.PushReply.FromString
            )
            call = self._streams[peer] = multicallable(metadata=self._security.metadata)
            self._written[peer] = 0
        try:
            async with asyncio.timeout(timeout_s):
                await call.write(payload)
        except TimeoutError as exc:
            self._drop(peer, call)
            raise PeerTimeout(f"{peer}: push not taken within {timeout_s:g} s") from exc
        except grpc.aio.AioRpcError as exc:
            self._drop(peer, call)
            self._failed(peer, exc)
            raise _translated(peer, exc, timeout_s) from exc
        except asyncio.InvalidStateError as exc:  # the call ended between the check and the write
            self._drop(peer, call)
            raise PeerUnreachable(f"{peer}: push stream ended") from exc
        self._written[peer] += 1
        return len(payload)

    def _close_full(self, peer: str, call: _PushCall) -> None:
        """Half-close ``peer``'s full push stream in the background; the next push opens one."""
        del self._streams[peer]
        del self._written[peer]
        closing = asyncio.ensure_future(_half_close(call))
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    def _encoding(self, news: Gossip) -> bytes:
        """The bytes of ``news``, encoded on its first push and kept for the other peers."""
        kept = self._encoded.get(id(news))
        if kept is not None and kept[0] is news:
            return kept[1]
        payload: bytes = gossip_to_wire(news).SerializeToString()
        self._encoded[id(news)] = (news, payload)
        while len(self._encoded) > _ENCODINGS_KEPT:
            del self._encoded[next(iter(self._encoded))]
        return payload

    def _failed(self, peer: str, exc: grpc.aio.AioRpcError) -> None:
        if self._watch is not None and exc.code() == grpc.StatusCode.UNAVAILABLE:
            self._watch.failed(peer, exc.details() or "")

    def _drop(self, peer: str, call: _PushCall) -> None:
        call.cancel()
        if self._streams.get(peer) is call:
            del self._streams[peer]
            del self._written[peer]

    async def aclose(self) -> None:
        """Close every push stream and channel."""
        for call in self._streams.values():
            call.cancel()
        self._streams.clear()
        self._written.clear()
        for closing in list(self._closing):
            closing.cancel()
        await asyncio.gather(*self._closing, return_exceptions=True)
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()
        self._stubs.clear()
        self._made.clear()
        self._encoded.clear()
        if self._watch is not None:
            await self._watch.aclose()


def _answer(response: bytes, limits: LimitsConfig, request_bytes: int) -> Answer:
    """The answer in an ExchangeResponse's bytes; raise WireError naming the bad field."""
    try:
        parsed = pb.ExchangeResponse.FromString(response)
    except DecodeError as exc:
        raise WireError("answer: not an ExchangeResponse") from exc
    return answer_from_wire(parsed, limits, request_bytes)


async def _half_close(call: _PushCall) -> None:
    """Tell the peer that ``call`` carries no more messages; it ends with the peer's answer.

    An error here changes nothing: the stream is no longer used, and the peer's faults are
    found by the next stream's writes.
    """
    try:
        await call.done_writing()
    except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
        call.cancel()


async def _ended(peer: str, call: _PushCall) -> None:
    """Raise what ended a push stream that the peer closed, unless it ended cleanly."""
    code = await call.code()
    if code != grpc.StatusCode.OK:
        details = await call.details()
        if code == grpc.StatusCode.UNAVAILABLE:
            raise PeerUnreachable(f"{peer}: push stream ended: unreachable ({details})")
        raise TransportError(f"{peer}: push stream ended: {code.name}: {details}")


def _translated(peer: str, exc: grpc.aio.AioRpcError, timeout_s: float) -> TransportError:
    code = exc.code()
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return PeerTimeout(f"{peer}: no answer within {timeout_s:g} s")
    if code == grpc.StatusCode.UNAVAILABLE:
        return PeerUnreachable(f"{peer}: unreachable ({exc.details()})")
    return TransportError(f"{peer}: {code.name}: {exc.details()}")
