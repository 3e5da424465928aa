"""A push stream ends after PUSH_STREAM_MESSAGES messages and the next push opens another.

gRPC holds memory for every message a client stream carried until the call ends (issue 43,
point 7; docs/benchmarks.md, "Soak"), so the gRPC transport half-closes a full stream. Nothing
of MySQL is followed here: GR's group communication (XCom) has no gRPC streams.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import grpc
import pytest
from grpc_health.v1 import health

from grstats.agent.server import build_server
from grstats.agent.transports import GrpcTransport, rpc
from tests.agent.test_transport_contract import REQUEST, Node, Recorder
from tests.waiting import wait_until_async

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

#: Messages a stream carries in these tests (the agent's is 60).
FULL = 3


@pytest.fixture(name="peer")
async def _peer() -> AsyncIterator[tuple[str, Recorder]]:
    """An agent's gRPC server on 127.0.0.1 whose receiver records what it takes."""
    recorder = Recorder()
    server = build_server(Node(), recorder, health.aio.HealthServicer())
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    yield f"127.0.0.1:{port}", recorder
    await server.stop(None)


async def test_a_full_push_stream_is_half_closed_and_the_next_push_opens_another(
    peer: tuple[str, Recorder], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After FULL pushes the stream is no longer open; it ends OK, and each stream's pushes arrive in order.

    The two streams are two calls: the server may take the new one's first push before the
    old one's last (seen in CI), as the receiver's merge by stamp allows.
    """
    monkeypatch.setattr(rpc, "PUSH_STREAM_MESSAGES", FULL)
    address, recorder = peer
    transport = GrpcTransport()
    sent = [dataclasses.replace(REQUEST, sent_at_us=n, digest={}) for n in range(FULL + 2)]
    try:
        for news in sent[:FULL]:
            await transport.push(address, news, timeout_s=5)
        first = transport._streams[address]
        assert not transport.streaming(address)  # the rounds compose an opening message
        for news in sent[FULL:]:
            await transport.push(address, news, timeout_s=5)
        assert transport.streaming(address)
        assert transport._streams[address] is not first
        reply = await first  # the peer answered the half-closed stream
        assert (await first.code(), reply.accepted) == (grpc.StatusCode.OK, FULL)
        await wait_until_async(
            lambda: len(recorder.taken) == len(sent), 5, "the receiver takes every push"
        )
        assert sorted(recorder.taken, key=lambda news: news.sent_at_us) == sent
        for stream in (sent[:FULL], sent[FULL:]):
            assert [news for news in recorder.taken if news in stream] == stream
    finally:
        await transport.aclose()
