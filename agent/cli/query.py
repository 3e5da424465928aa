"""``grstats query``: ask any agent for every member's rows, as the mysql client shows them."""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import TYPE_CHECKING

import grpc

from grstats.agent.cli.errors import CliError
from grstats.agent.cli.security import add_security_arguments, client_security
from grstats.agent.convert import table_from_wire
from grstats.agent.rows import EXTENDED_COLUMNS, TABLES, Column, Kind, render
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc

if TYPE_CHECKING:
    from grstats.agent.cli.types import Subparsers
    from grstats.agent.security import Security

#: What each word of ``grstats query`` asks for.
WHAT = {
    "members": "replication_group_members",
    "stats": "replication_group_member_stats",
    "lag": "replication_group_member_lag",
    "gtids": "replication_group_member_gtid_executed",
}

EPILOG = """\
what:
  members  replication_group_members: MEMBER_STATE and MEMBER_ROLE as Group Replication has them
  stats    replication_group_member_stats: every member's counters, even of members that are down
  lag      the WL#7374 applier fields of every member and APPLIER_LAG_SECONDS
  gtids    every member's gtid_executed

--extended adds CONNECTED (is the member's agent heard), IN_VIEW (is the member in the group's
view), LAST_SEEN and AGE_MS (how fresh the row is) and SOURCE (the agent it came through).

exit status: 0 when the agent answered, 1 when it did not, 2 for invalid arguments.
examples:
  grstats query stats --node 127.0.0.1:7400
  grstats query members --node db2:7400 --extended --format vertical
  grstats query lag --node db3:7400 --format json
"""


def register(subparsers: Subparsers) -> None:
    """Add the ``query`` subcommand."""
    parser = subparsers.add_parser(
        "query",
        help="show every member's rows, as seen by one agent",
        description="Ask one agent for a table of every member of the group. Any agent answers "
        "for all members, including members that are down.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("what", choices=tuple(WHAT), help="which table")
    parser.add_argument("--node", required=True, metavar="HOST:PORT", help="the agent to ask")
    parser.add_argument(
        "--format",
        choices=("table", "vertical", "json"),
        default="table",
        help="table or vertical (\\G) for people, json for scripts (default table)",
    )
    parser.add_argument("--extended", action="store_true", help="add the freshness columns")
    parser.add_argument(
        "--timeout", type=float, default=5.0, metavar="S", help="seconds to wait (default 5)"
    )
    add_security_arguments(parser, agent=False)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Query the agent and print the table."""
    if args.timeout <= 0:
        raise CliError(f"--timeout: {args.timeout:g} is not a positive number of seconds", code=2)
    name = WHAT[args.what]
    security = client_security(args)
    started = time.monotonic()
    response = asyncio.run(_read(args.node, name, args.extended, args.timeout, security))
    elapsed = time.monotonic() - started
    table = next((t for t in response.tables if t.name == name), None)
    if table is None:
        raise CliError(f"{args.node}: the agent did not return {name}")
    names, rows = table_from_wire(table)
    print(render(columns_named(name, names), rows, args.format, elapsed_s=elapsed), end="")
    return 0


async def _read(
    node: str, name: str, extended: bool, deadline_s: float, security: Security
) -> pb.QueryResponse:
    request = pb.QueryRequest(tables=[name], extended=extended)
    try:
        async with security.channel(node) as channel:
            stub = pb_grpc.QueryStub(channel)
            response: pb.QueryResponse = await stub.Read(
                request, timeout=deadline_s, metadata=security.metadata
            )
            return response
    except grpc.aio.AioRpcError as exc:
        if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
            raise CliError(f"{node}: no answer within {deadline_s:g} s") from exc
        if exc.code() == grpc.StatusCode.UNAVAILABLE:
            raise CliError(f"{node}: unreachable: is a grstats agent listening there?") from exc
        raise CliError(f"{node}: {exc.code().name}: {exc.details()}") from exc


def columns_named(table: str, names: list[str]) -> list[Column]:
    """The column definitions of ``names``; a column of a newer agent is shown as text."""
    known = {column.name: column for column in (*TABLES[table].columns, *EXTENDED_COLUMNS)}
    return [
        known.get(name) or Column(name, "TEXT", nullable=True, kind=Kind.TEXT) for name in names
    ]
