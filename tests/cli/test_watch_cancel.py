"""Ctrl-C ends ``query status --watch`` even when it lands inside a gRPC read (in-process)."""

from __future__ import annotations

import asyncio
import io
from typing import TYPE_CHECKING

import grpc
import pytest

from grstats.cli.errors import CliError
from grstats.cli.query import _read
from grstats.cli.status_view import GroupStatus
from grstats.cli.watch import _stream
from grstats.core.security import Security
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


class _Silent(pb_grpc.QueryServicer):  # type: ignore[misc]
    """A Query service that never answers a Read: the client is always mid-call."""

    async def Read(self, request: pb.QueryRequest, context: object) -> pb.QueryResponse:  # noqa: N802
        del request, context
        await asyncio.sleep(3600)
        return pb.QueryResponse()


@pytest.fixture(name="silent_node")
async def _silent_node() -> AsyncIterator[str]:
    server = grpc.aio.server()
    pb_grpc.add_QueryServicer_to_server(_Silent(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    yield f"127.0.0.1:{port}"
    await server.stop(grace=None)


async def test_a_read_cancelled_mid_call_is_a_cancellation_not_a_failed_read(
    silent_node: str,
) -> None:
    """grpc.aio makes a cancelled await a CANCELLED call; _read gives back the cancellation."""
    read = asyncio.create_task(_read(silent_node, ("replication_group_members",), 30.0, Security()))
    await asyncio.sleep(0.3)  # the call is in flight: the server never answers
    read.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(read, timeout=5)


STATUS = GroupStatus(agent="db1:7400", group={"STATUS": "OK"}, member_columns=(), member_rows=())


@pytest.mark.parametrize("lost_as", ["an answer", "an error"])
async def test_the_watch_ends_when_a_fetch_loses_its_cancellation(lost_as: str) -> None:
    """A fetch that swallows its cancellation (grpc.aio's answer-already-in race) still ends it."""
    started = asyncio.Event()

    async def fetch() -> GroupStatus:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            if lost_as == "an error":
                raise CliError("db1:7400: CANCELLED: Locally cancelled by application!") from None
        return STATUS

    out, err = io.StringIO(), io.StringIO()
    watch = asyncio.create_task(_stream(fetch, 0.05, "json", out, err))
    await asyncio.wait_for(started.wait(), timeout=5)
    watch.cancel()
    await asyncio.wait({watch}, timeout=5)
    ended = watch.done()
    if not ended:  # the bug: it would ask forever; stop it for good
        watch.uncancel()
        watch.cancel()
        await asyncio.wait({watch}, timeout=1)
    assert ended, "the watch went on after it was cancelled"
    assert watch.cancelled()
    assert "asking again" not in err.getvalue()
