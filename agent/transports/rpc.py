"""``GrpcTransport``: exchanges over gRPC, one channel per peer; gRPC errors translated here."""

from __future__ import annotations

import grpc

from agent.errors import PeerTimeout, PeerUnreachable, TransportError
from proto import grstats_pb2 as pb
from proto import grstats_pb2_grpc as pb_grpc

#: Largest message an agent accepts or sends (a whole group's state fits many times over).
MAX_MESSAGE_BYTES = 16 * 1024 * 1024


class GrpcTransport:
    """A :class:`~agent.transports.base.Transport` over grpc.aio, one channel per peer."""

    def __init__(self) -> None:
        self._stubs: dict[str, pb_grpc.GossipStub] = {}
        self._channels: dict[str, grpc.aio.Channel] = {}

    def _stub(self, peer: str) -> pb_grpc.GossipStub:
        stub = self._stubs.get(peer)
        if stub is None:
            channel = grpc.aio.insecure_channel(
                peer,
                options=[
                    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                ],
            )
            self._channels[peer] = channel
            stub = self._stubs[peer] = pb_grpc.GossipStub(channel)
        return stub

    async def exchange(
        self, peer: str, request: pb.ExchangeRequest, timeout_s: float
    ) -> pb.ExchangeResponse:
        """Run one Exchange RPC with ``peer``; translate gRPC's errors once, here."""
        try:
            response: pb.ExchangeResponse = await self._stub(peer).Exchange(
                request, timeout=timeout_s
            )
        except grpc.aio.AioRpcError as exc:
            code = exc.code()
            if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise PeerTimeout(f"{peer}: no answer within {timeout_s:g} s") from exc
            if code == grpc.StatusCode.UNAVAILABLE:
                raise PeerUnreachable(f"{peer}: unreachable ({exc.details()})") from exc
            raise TransportError(f"{peer}: {code.name}: {exc.details()}") from exc
        return response

    async def aclose(self) -> None:
        """Close every channel."""
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()
        self._stubs.clear()
