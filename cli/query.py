"""``grstats query``: ask any agent for every member's rows, as the mysql client shows them.

``grstats query status`` asks for the group's verdict instead (the document and its text:
:mod:`grstats.cli.status_view`), once or, with ``--watch``, every period
(:mod:`grstats.cli.watch`).

Every answer says whether the agent asked can read its own member: while it cannot, one
warning line goes to standard error (``grstats: warning: agent HOST:PORT cannot read its member
since HH:MM:SS: ...``, see :func:`~grstats.cli.status_view.source_line`), and the status
document carries it as ``agent_source``, and so does a table's JSON (``--format json``: one
object, ``{"agent", "table", "agent_source", "rows"}``, see
:func:`~grstats.cli.status_view.table_document`). The exit status does not change.

The agent to ask, the TLS files, the token and the time zone come from the flags, the
environment or a client config file (:mod:`grstats.cli.client_settings`). The time zone
(``--time-zone``, as MySQL's ``time_zone``: UTC by default) is the one the ``table`` and
``vertical`` formats show TIMESTAMP(6) columns and times in, as a MySQL session does; JSON's
times are always ISO 8601 in UTC with ``Z``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from typing import TYPE_CHECKING

from grstats.cli.client_settings import (
    CLIENT_CONFIG_ENV,
    add_time_zone_argument,
    client_settings,
)
from grstats.cli.errors import CliError
from grstats.cli.events import EVENTS_TABLE, EventFilter, check_member, follow, since_us
from grstats.cli.security import add_security_arguments
from grstats.core.clock import now_us
from grstats.core.rows import EXTENDED_COLUMNS, TABLES, Column, Kind, render
from grstats.core.rows.member_log import REPLICATION_GROUP_MEMBER_LOG
from grstats.core.rows.zone import UTC_ZONE

# gRPC, protobuf, asyncio and the status view (structlog, through the gossip's modules) load
# in the functions that ask an agent, not for --help or a mistyped flag (issue 50).
if TYPE_CHECKING:
    from grstats.cli.status_view import GroupStatus
    from grstats.cli.types import Subparsers
    from grstats.core.query_wire import SourceReport
    from grstats.core.rows import Value
    from grstats.core.rows.zone import TimeZone
    from grstats.core.security import Security
    from grstats.proto import grstats_pb2 as pb

#: What each word of ``grstats query`` asks for.
WHAT = {
    "members": "replication_group_members",
    "stats": "replication_group_member_stats",
    "lag": "replication_group_member_lag",
    "gtids": "replication_group_member_gtid_executed",
    "views": "replication_group_member_views",
}
#: The word that asks for the group's verdict (replication_group_status and its members).
STATUS = "status"
#: The word that asks for what happened to the members (replication_group_events).
EVENTS = "events"
#: The word that asks for Group Replication's own log lines of every member.
LOG = "log"
LOG_TABLE = REPLICATION_GROUP_MEMBER_LOG.name
#: The tables ``columns_named`` knows, the log's among them.
_KNOWN_TABLES = {**TABLES, LOG_TABLE: REPLICATION_GROUP_MEMBER_LOG}

EPILOG = """\
what:
  members  replication_group_members: MEMBER_STATE and MEMBER_ROLE as Group Replication has them
  stats    replication_group_member_stats: every member's counters, even of members that are down
  lag      the WL#7374 applier fields of every member, APPLIER_LAG_SECONDS and the lag by
           stage: TRANSPORT_SECONDS (original commit to queued), WAITING_SECONDS (queued to
           start of apply) and APPLY_SECONDS (start to end); NULL for a MySQL 5.7 member
  gtids    every member's gtid_executed, all sampled on the same mark of the wall clock
           (every 60 s), and SAMPLED_AT, when
  views    every member's own view of every member: a row per OBSERVER_ID and MEMBER_ID, the
           MEMBER_STATE the observer's own server gives the member (NOT_LISTED where its view
           lacks it), its VIEW_ID, MEMBER_FAILURE_SUSPICIONS_COUNT (MySQL 8.4; the asked
           agent's own member only), ROUND_TRIP_MS between the two agents, AGE_MS, CONNECTED,
           and DISAGREEMENT: SPLIT_BRAIN, VIEW_LAG (its view id lags the group's) or ONE_WAY
           (one lists the other UNREACHABLE or not at all, the other it ONLINE)
  status   the group's verdict as MySQL Shell's cluster.status() gives it (OK, OK_PARTIAL,
           OK_NO_TOLERANCE, NO_QUORUM, ...), how many failures it tolerates, the mode, the
           primary, flow control, and each member's state, role, lag, queues, freshness
           and clock skew (CLOCK_SKEW_MS; a "clock skew" line names a member 0.5 s+ off);
           "split-brain", "one-way" and "view lag" lines name where members' views disagree
  events   what happened to the members, oldest first: state and role changes (a primary
           elected), views, joins and leaves, an agent losing and regaining its server, flow
           control beginning and ceasing to throttle a member, and a member's agent falling
           silent and heard again (seen by another). Any agent has every member's events,
           also those from while it was down itself; each is kept 7 days (at most the last
           500 of each member). EVENT_TIME is on the clock of the member that reported it
           (REPORTED_BY).
           --since 15m|2h|7d|'2026-11-28 03:12' (in --time-zone) keeps the later ones,
           --member MEMBER_ID one member's, --follow prints each new one as it comes (a line
           each, or JSON Lines with --format json) until Ctrl-C
  log      Group Replication's own lines of every member's error log, oldest first, with
           performance_schema.error_log's columns (LOGGED, THREAD_ID, PRIO, ERROR_CODE such as
           MY-011503, SUBSYSTEM, DATA) and MEMBER_ID: why a member left, became unreachable or
           was refused, in GR's words. Any agent has every member's last 200 lines, also of a
           member whose host is down; read from MySQL 8.0.22 on. LOGGED is on the clock of
           the member that wrote it. --since and --member as for events

--extended (members, stats, lag, gtids) adds CONNECTED (its agent heard, its server read), IN_VIEW
(is the member in the group's view), LAST_SEEN and AGE_MS (how fresh the row is) and SOURCE (the
agent it came through).

status --watch [SECONDS] asks again every SECONDS (default 1, the agent's period). On a terminal
it redraws one screen in place like top: states in colour, values that changed in reverse, the
last answer kept and marked STALE while the agent does not answer; Ctrl-C quits (exit 0).
Piped, it prints each answer: JSON Lines with --format json, else text with a blank line between.

--format json prints a table as one object: {"agent": HOST:PORT, "table": NAME, "agent_source":
null or what status's agent_source says, "rows": [one object per row, keyed by column name]}.
Its times are ISO 8601 in UTC with Z (2026-11-24T10:15:02.123456Z); an unset TIMESTAMP
(0000-00-00 00:00:00.000000 in the tables) is null.

time zone: table and vertical show TIMESTAMP columns, "as of" and "since" as a MySQL session
with time_zone TZ does: --time-zone SYSTEM (this machine's zone), +02:00, -05:30 (offsets from
-13:59 to +14:00) or a tz database name (Europe/Paris, UTC). The default is +00:00 (UTC), not
MySQL's SYSTEM, so that two hosts print the same text.

When the agent asked cannot read its own member, a warning line on stderr says since when,
why and what to do (the JSON has it as agent_source); the exit status is unchanged.

settings: each of --node, --tls-ca, --tls-cert, --tls-key, --token-file and --time-zone may
instead come from the environment (GRSTATS_NODE, GRSTATS_TLS_CA, GRSTATS_TLS_CERT,
GRSTATS_TLS_KEY, GRSTATS_TOKEN_FILE, GRSTATS_TIME_ZONE) or from a client config file (TOML:
node, token_file, time_zone, and [tls] ca_file, cert_file, key_file; relative paths are
relative to the file) at --client-config FILE, else $GRSTATS_CLIENT_CONFIG, else
~/.config/grstats/client.toml; the flag wins, then the variable.

exit status: 0 when the agent answered (also for a NO_QUORUM verdict), 1 when it did not,
2 for invalid arguments.
examples:
  grstats query status                # the node and the files from the environment or the file
  grstats query stats --node 127.0.0.1:7400
  grstats query members --node db2:7400 --extended --format vertical
  grstats query lag --node db2:7400 --time-zone SYSTEM
  grstats query lag --node db3:7400 --format json
  grstats query views --node db3:7400
  grstats query status --node db1:7400
  grstats query status --node db1:7400 --watch
  grstats query status --node db1:7400 --format json --watch 5 >> status.jsonl
  grstats query events --node db1:7400 --since 2h
  grstats query events --node db1:7400 --follow --format json >> events.jsonl
  grstats query log --node db1:7400 --since 1h --member 5b3f0c6e-16ee-11eb-9a3b-0800275c3a8f
"""


def register(subparsers: Subparsers) -> None:
    """Add the ``query`` subcommand."""
    parser = subparsers.add_parser(
        "query",
        help="show every member's rows, or the group's verdict, as seen by one agent",
        description="Ask one agent for a table of every member of the group, or for the group's "
        "verdict (status). Any agent answers for all members, including members that are down.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "what",
        choices=(*WHAT, STATUS, EVENTS, LOG),
        help="which table, status, events, or log",
    )
    parser.add_argument(
        "--node",
        metavar="HOST:PORT",
        help="the agent to ask (default: $GRSTATS_NODE, else the client config's node)",
    )
    parser.add_argument(
        "--client-config",
        metavar="FILE",
        help=f"the client config file (default: ${CLIENT_CONFIG_ENV}, else "
        "~/.config/grstats/client.toml if it exists)",
    )
    parser.add_argument(
        "--format",
        choices=("table", "vertical", "json"),
        default="table",
        help="table or vertical (\\G) for people, json for scripts (default table)",
    )
    parser.add_argument("--extended", action="store_true", help="add the freshness columns")
    parser.add_argument(
        "--watch",
        nargs="?",
        const="1",
        metavar="SECONDS",
        help="status only: ask again every SECONDS (default 1) until Ctrl-C",
    )
    parser.add_argument(
        "--since",
        metavar="DURATION|TIME",
        help="events and log only: those from this long ago (30s, 15m, 2h, 7d) or this time on "
        "('2026-11-28 03:12:00' in --time-zone)",
    )
    parser.add_argument(
        "--member",
        metavar="MEMBER_ID",
        help="events and log only: those of this member (its UUID)",
    )
    parser.add_argument(
        "--follow",
        action="store_true",
        help="events only: then print each new event as it comes, until Ctrl-C",
    )
    parser.add_argument(
        "--timeout", type=float, default=5.0, metavar="S", help="seconds to wait (default 5)"
    )
    add_time_zone_argument(parser)
    add_security_arguments(parser, agent=False)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Query the agent and print the table (or the verdict, see :func:`status`)."""
    import asyncio  # noqa: PLC0415  (only to ask an agent, as below)

    from grstats.cli.status_view import VIEWS_TABLE, table_document  # noqa: PLC0415
    from grstats.core.query_wire import table_from_wire  # noqa: PLC0415

    if args.timeout <= 0:
        raise CliError(f"--timeout: {args.timeout:g} is not a positive number of seconds", code=2)
    _check_event_flags(args)
    if args.what == STATUS:
        return status(args)
    if args.watch is not None:
        raise CliError(f"--watch: only 'grstats query {STATUS}' watches, not {args.what}", code=2)
    if args.what == EVENTS:
        return events(args)
    if args.what == LOG:
        return log(args)
    name = WHAT[args.what]
    if args.extended and name == VIEWS_TABLE:
        raise CliError("--extended: the views table holds CONNECTED and AGE_MS already", code=2)
    settings = client_settings(args)
    node, security = settings.node, settings.security()
    started = time.monotonic()
    response = asyncio.run(_read(node, (name,), args.timeout, security, extended=args.extended))
    elapsed = time.monotonic() - started
    table = next((t for t in response.tables if t.name == name), None)
    if table is None:
        raise CliError(f"{node}: the agent did not return {name}")
    names, rows = table_from_wire(table)
    source = _source(node, response)
    columns = columns_named(name, names)
    if args.format == "json":
        document = table_document(node, name, source, columns, rows)
        print(json.dumps(document, indent=2))
    else:
        print(render(columns, rows, args.format, elapsed, settings.time_zone), end="")
    warn_source(node, source, settings.time_zone)
    return 0


def status(args: argparse.Namespace) -> int:
    """Print the group's verdict once, or every period with ``--watch``."""
    import asyncio  # noqa: PLC0415

    from grstats.cli.status_view import (  # noqa: PLC0415
        STATUS_TABLES,
        VIEWS_TABLE,
        GroupStatus,
        StatusTableMissing,
        render_status,
    )
    from grstats.core.query_wire import table_from_wire  # noqa: PLC0415

    if args.extended:
        raise CliError("--extended: the status tables hold CONNECTED and AGE_MS already", code=2)
    settings = client_settings(args)
    node, security = settings.node, settings.security()

    views = [VIEWS_TABLE]  # emptied once the agent turns out older than the views table

    async def fetch() -> GroupStatus:
        try:
            response = await _read(node, (*STATUS_TABLES, *views), args.timeout, security)
        except OlderAgent as exc:
            if exc.table != VIEWS_TABLE:
                raise
            views.clear()
            response = await _read(node, STATUS_TABLES, args.timeout, security)
        tables = {table.name: table_from_wire(table) for table in response.tables}
        try:
            return GroupStatus.from_tables(node, tables, _source(node, response))
        except StatusTableMissing as exc:
            raise CliError(_older(node, exc.table)) from exc

    if args.watch is not None:  # rich is loaded for --watch only
        from grstats.cli.watch import run_watch, watch_period  # noqa: PLC0415

        period_s = watch_period(args.watch)
        return run_watch(
            fetch,
            agent=node,
            period_s=period_s,
            output_format=args.format,
            zone=settings.time_zone,
        )
    started = time.monotonic()
    answer = asyncio.run(fetch())
    elapsed = time.monotonic() - started
    print(render_status(answer, args.format, elapsed, settings.time_zone), end="")
    warn_source(node, answer.source, settings.time_zone)
    return 0


def _check_event_flags(args: argparse.Namespace) -> None:
    """--since and --member are the events' and log's, --follow the events': CliError (exit 2)."""
    if args.what == EVENTS:
        return
    for flag, given in (("--since", args.since), ("--member", args.member)):
        if given is not None and args.what != LOG:
            raise CliError(f"{flag}: only 'grstats query {EVENTS}' and '{LOG}' take it", code=2)
    if args.follow:
        raise CliError(f"--follow: only 'grstats query {EVENTS}' follows", code=2)


def events(args: argparse.Namespace) -> int:
    """Print the members' events once, or follow them with ``--follow``."""
    import asyncio  # noqa: PLC0415

    from grstats.cli.status_view import table_document  # noqa: PLC0415
    from grstats.core.query_wire import SourceReport, table_from_wire  # noqa: PLC0415

    if args.extended:
        raise CliError("--extended: events have no freshness columns", code=2)
    settings = client_settings(args)
    node, security, zone = settings.node, settings.security(), settings.time_zone
    keep = EventFilter(since_us(args.since, now_us(), zone), check_member(args.member))

    def fetch() -> tuple[list[Column], list[tuple[Value, ...]]]:
        response = asyncio.run(_read(node, (EVENTS_TABLE,), args.timeout, security))
        table = next((t for t in response.tables if t.name == EVENTS_TABLE), None)
        if table is None:
            raise CliError(_older(node, EVENTS_TABLE))
        names, rows = table_from_wire(table)
        return columns_named(EVENTS_TABLE, names), rows

    if args.follow:
        if args.format == "vertical":
            raise CliError("--format: --follow prints a line per event or JSON Lines", code=2)
        return follow(fetch, keep, output_format=args.format, zone=zone)
    started = time.monotonic()
    columns, rows = fetch()
    kept = keep.rows([column.name for column in columns], rows)
    if args.format == "json":
        print(
            json.dumps(table_document(node, EVENTS_TABLE, SourceReport(), columns, kept), indent=2)
        )
    else:
        print(render(columns, kept, args.format, time.monotonic() - started, zone), end="")
    return 0


def log(args: argparse.Namespace) -> int:
    """Print every member's Group Replication log lines, oldest first (--since, --member)."""
    import asyncio  # noqa: PLC0415

    from grstats.cli.status_view import table_document  # noqa: PLC0415
    from grstats.core.query_wire import table_from_wire  # noqa: PLC0415

    if args.extended:
        raise CliError("--extended: the log has no freshness columns", code=2)
    settings = client_settings(args)
    node, security, zone = settings.node, settings.security(), settings.time_zone
    earliest, member = since_us(args.since, now_us(), zone), check_member(args.member)
    started = time.monotonic()
    response = asyncio.run(_read(node, (LOG_TABLE,), args.timeout, security))
    table = next((t for t in response.tables if t.name == LOG_TABLE), None)
    if table is None:
        raise CliError(_older(node, LOG_TABLE))
    names, rows = table_from_wire(table)
    columns = columns_named(LOG_TABLE, names)
    at, who = names.index("LOGGED"), names.index("MEMBER_ID")
    kept = [
        row
        for row in rows
        if (earliest is None or int(row[at] or 0) >= earliest)
        and (member is None or str(row[who]).lower() == member)
    ]
    source = _source(node, response)
    if args.format == "json":
        print(json.dumps(table_document(node, LOG_TABLE, source, columns, kept), indent=2))
    else:
        print(render(columns, kept, args.format, time.monotonic() - started, zone), end="")
    warn_source(node, source, zone)
    return 0


def _source(node: str, response: pb.QueryResponse) -> SourceReport:
    """What the answer says of the agent's source; a malformed report is a CliError."""
    from grstats.core.query_wire import WireError, source_report_from_wire  # noqa: PLC0415

    try:
        return source_report_from_wire(response)
    except WireError as exc:
        raise CliError(f"{node}: {exc}") from exc


def warn_source(node: str, source: SourceReport, zone: TimeZone = UTC_ZONE) -> None:
    """Print the one warning line on stderr while the agent ``node`` cannot read its member.

    Its time is in ``zone``.
    """
    from grstats.cli.status_view import source_line  # noqa: PLC0415

    line = source_line(node, source, zone=zone)
    if line is not None:
        sys.stdout.flush()  # the answer first, when both go to one terminal or file
        print(f"grstats: warning: {line}", file=sys.stderr, flush=True)


def _older(node: str, table: str) -> str:
    return f"{node}: the agent does not serve {table}: it is an older grstats agent (upgrade it)"


class OlderAgent(CliError):
    """The agent asked does not serve ``table``: it is older than it."""

    def __init__(self, node: str, table: str) -> None:
        super().__init__(_older(node, table))
        self.table = table


async def _read(
    node: str,
    names: tuple[str, ...],
    deadline_s: float,
    security: Security,
    *,
    extended: bool = False,
) -> pb.QueryResponse:
    import grpc  # noqa: PLC0415

    from grstats.core.query_wire import query_request  # noqa: PLC0415
    from grstats.proto import grstats_pb2_grpc as pb_grpc  # noqa: PLC0415

    request = query_request(names, extended=extended)
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
            why = _unavailable(exc.details() or "", tls=security.tls is not None)
            raise CliError(f"{node}: unreachable: {why}") from exc
        unknown = next((n for n in names if repr(n) in (exc.details() or "")), None)
        if exc.code() == grpc.StatusCode.INVALID_ARGUMENT and unknown is not None:
            raise OlderAgent(node, unknown) from exc
        raise CliError(f"{node}: {exc.code().name}: {exc.details()}") from exc


#: What gRPC's C core says of a failed TLS handshake, after "handshake failed".
_HANDSHAKE = re.compile(r"handshake failed(?: \([A-Z_]+\))?:? *(?P<why>[^;]*)", re.IGNORECASE)
#: OpenSSL's reason in it: ``CERTIFICATE_VERIFY_FAILED: unable to get local issuer certificate``.
_OPENSSL_REASON = re.compile(r"OPENSSL_internal:(?P<reason>.*)")


def _unavailable(details: str, *, tls: bool) -> str:
    """Why the node could not be reached, in a DBA's words, from gRPC's ``details``.

    gRPC's C core also writes a failed TLS handshake to standard error (silenced by default,
    see :func:`grstats.core.log.quiet_grpc_core`), so this line must say it itself. An agent
    that refuses the client's certificate (or its lack of one) closes the connection after
    the client's side of the handshake succeeded: the client sees only "Socket closed".
    """
    found = _HANDSHAKE.search(details)
    if found is not None:
        why = found.group("why").strip().removesuffix(": OK")  # gRPC appends its status
        reason = _OPENSSL_REASON.search(why)
        shown = (reason.group("reason") if reason else why).strip() or "no reason given"
        return (
            f"the TLS handshake failed ({shown}): is the CA (--tls-ca) the one that signed "
            "the agent's certificate, and does the agent serve over TLS?"
        )
    if "socket closed" in details.lower():
        if tls:
            return (
                "the agent closed the connection: does it require a client certificate "
                "(--tls-cert, --tls-key) signed by its CA?"
            )
        return "the agent closed the connection: does it serve over TLS (give --tls-ca)?"
    return "is a grstats agent listening there?"


def columns_named(table: str, names: list[str]) -> list[Column]:
    """The column definitions of ``names``; a column of a newer agent is shown as text."""
    known = {column.name: column for column in (*_KNOWN_TABLES[table].columns, *EXTENDED_COLUMNS)}
    return [
        known.get(name) or Column(name, "TEXT", nullable=True, kind=Kind.TEXT) for name in names
    ]
