"""``GrpcTransport``: pushes and exchanges over gRPC, one channel per peer.

gRPC's errors are translated here, once, into :mod:`grstats.agent.errors`.
"""

from __future__ import annotations

import asyncio

import grpc

from grstats.agent.errors import PeerTimeout, PeerUnreachable, TransportError
from grstats.agent.security import Security
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc

#: Largest message an agent accepts or sends (a whole group's state fits many times over).
MAX_MESSAGE_BYTES = 16 * 1024 * 1024

#: The Push method's path: called with payloads serialized once for every peer.
PUSH_METHOD = "/grstats.v1.Gossip/Push"

#: Channel options: message limits, and keepalive pings so that a push stream to a host that
#: vanished without closing its connections fails within about a minute.
CHANNEL_OPTIONS = (
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
)

_PushCall = grpc.aio.StreamUnaryCall[bytes, pb.PushReply]


class GrpcTransport:
    """A :class:`~grstats.agent.transports.base.Transport` over grpc.aio, one channel per peer."""

    def __init__(
        self, max_message_bytes: int = MAX_MESSAGE_BYTES, security: Security | None = None
    ) -> None:
        """``max_message_bytes`` bounds what each channel sends and receives ([limits])."""
        self._security = security or Security()  # the channels' TLS, the token of every call
        self._options = [
            (name, max_message_bytes if name.endswith("_message_length") else value)
            for name, value in CHANNEL_OPTIONS
        ]
        self._stubs: dict[str, pb_grpc.GossipStub] = {}
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._streams: dict[str, _PushCall] = {}
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
        if call is not None:
            call.cancel()
        self._stubs.pop(peer, None)
        del self._made[peer]
        await self._channels.pop(peer).close()

    def _stub(self, peer: str) -> pb_grpc.GossipStub:
        stub = self._stubs.get(peer)
        if stub is None:
            stub = self._stubs[peer] = pb_grpc.GossipStub(self._channel(peer))
        return stub

    async def exchange(
        self, peer: str, request: pb.ExchangeRequest, timeout_s: float
    ) -> pb.ExchangeResponse:
        """Run one Exchange RPC with ``peer``; translate gRPC's errors once, here."""
        await self._renew(peer)
        try:
            response: pb.ExchangeResponse = await self._stub(peer).Exchange(
                request, timeout=timeout_s, metadata=self._security.metadata
            )
        except grpc.aio.AioRpcError as exc:
            raise _translated(peer, exc, timeout_s) from exc
        return response

    def streaming(self, peer: str) -> bool:
        """Whether a push stream to ``peer`` is open (and not about to be renewed)."""
        call = self._streams.get(peer)
        return call is not None and not call.done() and not self._stale(peer)

    async def push(self, peer: str, payload: bytes, timeout_s: float) -> None:
        """Write ``payload`` on the push stream to ``peer``, opening the stream if needed.

        A stream that ended (the peer restarted, or refused a message) or a write that fails
        or takes longer than ``timeout_s`` drops the stream; the next push opens a new one.
        When the TLS files changed, the channel is dialled again first, with the new files.
        """
        await self._renew(peer)
        call = self._streams.get(peer)
        if call is not None and call.done():
            del self._streams[peer]
            await _ended(peer, call)
        if call is None or call.done():
            multicallable: grpc.aio.StreamUnaryMultiCallable[bytes, pb.PushReply]
            multicallable = self._channel(peer).stream_unary(
                PUSH_METHOD, response_deserializer=pb.PushReply.FromString
            )
            call = self._streams[peer] = multicallable(metadata=self._security.metadata)
        try:
            async with asyncio.timeout(timeout_s):
                await call.write(payload)
        except TimeoutError as exc:
            self._drop(peer, call)
            raise PeerTimeout(f"{peer}: push not taken within {timeout_s:g} s") from exc
        except grpc.aio.AioRpcError as exc:
            self._drop(peer, call)
            raise _translated(peer, exc, timeout_s) from exc
        except asyncio.InvalidStateError as exc:  # the call ended between the check and the write
            self._drop(peer, call)
            raise PeerUnreachable(f"{peer}: push stream ended") from exc

    def _drop(self, peer: str, call: _PushCall) -> None:
        call.cancel()
        if self._streams.get(peer) is call:
            del self._streams[peer]

    async def aclose(self) -> None:
        """Close every push stream and channel."""
        for call in self._streams.values():
            call.cancel()
        self._streams.clear()
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()
        self._stubs.clear()
        self._made.clear()


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
