"""Sends a flood of large Exchange messages to one agent, as another host would: ``python -m``.

``python -m tests.agent.gossip_flood HOST:PORT COPIES`` sends ``COPIES`` times each of three
messages at once, on one channel: a 15 MiB GTID text (over ``max_message_bytes``), a GTID
text of 3 MiB with many UUIDs (over ``max_gtid_text``) and one of ``max_gtid_text`` (taken).
It prints each call's status as a JSON list. A process of its own, so that the sender's
memory and CPU are not the agent's.
"""

from __future__ import annotations

import json
import sys
import uuid

import grpc

from grstats.agent.limits import DEFAULT_LIMITS, MIB
from grstats.proto import grstats_pb2 as pb

EXCHANGE = "/grstats.v1.Gossip/Exchange"


def gtid_text(size: int) -> str:
    """A GTID set of about ``size`` characters: many UUIDs, the slowest text to parse."""
    return ",".join(f"{uuid.UUID(int=i + 1)}:1-{i + 7}" for i in range(size // 45))


def message(text: str) -> bytes:
    """An ExchangeRequest carrying ``text`` as an unknown member's gtid_executed."""
    request = pb.ExchangeRequest(
        sender="127.0.0.1:1",
        sender_member=uuid.uuid4().bytes,
        updates=[
            pb.Update(origin=uuid.uuid4().bytes, incarnation=1, version=1, gtid_executed=text)
        ],
    )
    raw: bytes = request.SerializeToString()
    return raw


def flood(address: str, copies: int) -> list[str]:
    """Send the three messages ``copies`` times each, all at once; each call's status."""
    texts = ["9" * (15 * MIB), gtid_text(3 * MIB), gtid_text(DEFAULT_LIMITS.max_gtid_text - 64)]
    messages = [message(text) for text in texts] * copies
    options = [("grpc.max_send_message_length", 64 * MIB)]
    with grpc.insecure_channel(address, options=options) as channel:
        call: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(EXCHANGE)
        futures = [call.future(raw, timeout=30) for raw in messages]
        answers = []
        for future in futures:
            try:
                future.result()
            except grpc.RpcError as exc:
                answers.append(f"{exc.code().name}: {exc.details()}")
            else:
                answers.append("OK")
        return answers


if __name__ == "__main__":
    print(json.dumps(flood(sys.argv[1], int(sys.argv[2]))))
