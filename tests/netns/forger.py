"""A fake agent with a stolen member certificate, run inside one test host's namespace.

It serves ``Gossip.Exchange`` over mutual TLS with the stolen certificate and key, and answers
every Exchange as the certificate's member with one forged value: the victim member's counts
with COUNT_TRANSACTIONS_CHECKED set to ``--checked``, stamped above the victim's latest
version. Before each answer it asks the victim's own agent for that version (an Exchange of
its own, as the certificate's member, sending nothing), so the stamp rises with the victim's
and keeps rising: the n-th answer since the last ``step`` command is ``n * step`` versions
above it. Pushes it takes and drops, so that agents dialling it see an ordinary peer.

The test drives it over stdin/stdout, one JSON line each way: ``{"step": K}`` sets the step
and counts anew; ``{"answers": null}`` only asks. Each is answered ``{"answers": N,
"forgeries": F}``: the Exchanges it answered, and those whose answer carried a forgery. Its first line is
``{"ready": ADDRESS}`` once it serves. Started as ``ip netns exec NS python -m
tests.netns.forger ...`` (by :mod:`tests.netns.test_identity_faults`).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc

from grstats.agent.convert import answer_to_wire
from grstats.agent.gossip import Counts, Key, Stamp
from grstats.agent.messages import Answer, Gossip
from grstats.agent.transports import GrpcTransport
from grstats.core.errors import AgentError
from grstats.core.security import Security
from grstats.core.tls import TlsConfig
from grstats.proto import grstats_pb2 as pb

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from grstats.agent.gossip import Update

#: How long the forger waits for the victim's agent to tell it the latest version.
LEARN_TIMEOUT_S = 0.2


@dataclasses.dataclass
class Forgery:
    """What the forger forges and how far above the victim's latest version it stamps it."""

    member: str  # the stolen certificate's member: the forger answers as it
    victim: str  # the member whose counts it forges
    checked: int  # the forged COUNT_TRANSACTIONS_CHECKED
    step: int = 1
    since_step: int = 0  # answers since the step was set
    answers: int = 0
    forgeries: int = 0  # answers that carried a forged value
    latest: tuple[Update, Stamp] | None = None  # the victim's counts and highest stamp

    def learn(self, answer: Answer) -> None:
        """Keep the victim's counts and its highest stamp from an answer of the victim's agent."""
        own = [update for update in answer.updates if update.origin == self.victim]
        counts = [update for update in own if update.key is Key.COUNTS]
        if counts:
            self.latest = (counts[0], max(update.stamp for update in own))

    def forged(self) -> tuple[Update, ...]:
        """The next answer's forged counts (none before the victim's were learned)."""
        self.answers += 1
        self.since_step += 1
        if self.latest is None:
            return ()
        held, highest = self.latest
        self.forgeries += 1
        assert isinstance(held.value, Counts)
        row = dataclasses.replace(held.value.row, count_transactions_checked=self.checked)
        stamp = Stamp(highest.incarnation, highest.version + self.step * self.since_step)
        return (dataclasses.replace(held, stamp=stamp, value=Counts(row, gtids_present=False)),)


class Forger:
    """The gRPC side: learns from the victim's agent, answers Exchanges with the forgery."""

    def __init__(self, forgery: Forgery, security: Security, learn_from: str) -> None:
        self.forgery = forgery
        self.security = security
        self.learn_from = learn_from
        self.transport = GrpcTransport(security=security)

    async def learn(self) -> None:
        """Ask the victim's agent for everything it holds (digest empty); keep its latest."""
        request = Gossip("", self.forgery.member, (), 0)
        try:
            answer = await self.transport.exchange(self.learn_from, request, LEARN_TIMEOUT_S)
        except AgentError:
            return  # the last version learned serves
        self.forgery.learn(answer)

    async def exchange(self, request: bytes, context: Any) -> pb.ExchangeResponse:
        """Answer as the stolen certificate's member, with the victim's forged counts."""
        del request, context
        await self.learn()
        return answer_to_wire(Answer(updates=self.forgery.forged(), member=self.forgery.member))

    async def push(self, requests: AsyncIterator[bytes], context: Any) -> pb.PushReply:
        """Take a push stream and drop what it carries."""
        del context
        taken = 0
        async for _ in requests:
            taken += 1
        return pb.PushReply(accepted=taken)

    async def serve(self, address: str) -> grpc.aio.Server:
        """Serve Gossip.Exchange and Gossip.Push on ``address`` over the stolen certificate."""
        server = grpc.aio.server()
        handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
            "Exchange": grpc.unary_unary_rpc_method_handler(
                self.exchange, response_serializer=pb.ExchangeResponse.SerializeToString
            ),
            "Push": grpc.stream_unary_rpc_method_handler(
                self.push, response_serializer=pb.PushReply.SerializeToString
            ),
        }
        server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler("grstats.v1.Gossip", handlers)]
        )
        self.security.bind(server, address)
        await server.start()
        return server


def obey(forgery: Forgery, stdin: Any, stdout: Any) -> None:
    """Carry out the test's commands until stdin closes (on a thread: the GIL guards the fields)."""
    for line in stdin:
        command = json.loads(line)
        if "step" in command:
            forgery.step, forgery.since_step = int(command["step"]), 0
        stdout.write(json.dumps({"answers": forgery.answers, "forgeries": forgery.forgeries}))
        stdout.write("\n")
        stdout.flush()


async def run(args: argparse.Namespace) -> None:
    """Serve until the test closes stdin."""
    certs = Path(args.certs)
    tls = TlsConfig(
        cert_file=certs / f"{args.name}.pem",
        key_file=certs / f"{args.name}.key",
        ca_file=certs / "ca.pem",
        require_client_cert=True,
    )
    forgery = Forgery(args.member, args.victim, args.checked)
    forger = Forger(forgery, Security(tls), args.learn_from)
    server = await forger.serve(args.listen)
    print(json.dumps({"ready": args.listen}), flush=True)
    commands = threading.Thread(target=obey, args=(forgery, sys.stdin, sys.stdout), daemon=True)
    commands.start()
    await asyncio.to_thread(commands.join)
    await server.stop(0)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The forger's arguments."""
    parser = argparse.ArgumentParser(prog="forger", description=__doc__)
    parser.add_argument("--listen", required=True, help="address:port to serve on")
    parser.add_argument("--certs", required=True, help="the group's certificate directory")
    parser.add_argument("--name", required=True, help="the stolen certificate's name (NAME.pem)")
    parser.add_argument("--member", required=True, help="the stolen certificate's member")
    parser.add_argument("--victim", required=True, help="the member whose counts are forged")
    parser.add_argument("--learn-from", required=True, help="the victim's agent, address:port")
    parser.add_argument("--checked", type=int, required=True, help="the forged count")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(run(parse()))
