"""``grstats collect``: poll the agents of one or more groups each interval; spool the snapshots."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import signal
from typing import TYPE_CHECKING

from grstats.cli.errors import CliError
from grstats.cli.security import add_security_arguments, client_security
from grstats.collector.collect import Limits, collect
from grstats.collector.compression import Compression
from grstats.collector.errors import CollectorError
from grstats.collector.groups import GroupSpec, check_unique, groups_from_file, parse_group
from grstats.collector.metrics import CollectorMetrics, MetricsServer
from grstats.collector.poller import DEFAULT_GROUP_LABEL, Fleet, Poller, PollerSettings
from grstats.collector.spool import DEFAULT_SEGMENT_AGE_S, SpoolSettings, SpoolWriter, SyncPolicy
from grstats.core.address import join_address, split_address
from grstats.core.errors import ConfigError
from grstats.core.log import LOG_FORMATS, LOG_LEVELS, configure_logging, get_logger

if TYPE_CHECKING:
    from grstats.cli.types import Subparsers
    from grstats.collector.collect import Progress
    from grstats.core.security import Security

EPILOG = """\
Each interval the collector asks one agent of each group for every table it serves (members,
stats, lag, gtids, with the freshness columns) and appends the snapshot to the spool. It keeps
asking the agent that answered; when that agent stops answering it
fails over to the next --node (of the group), round robin. While no agent of a group answers it
keeps trying and says so in the log.

Groups: --node gives the agents of one group, labelled "default". To poll several groups, name
each: --group LABEL=HOST:PORT[,HOST:PORT...] (repeat it), or --config FILE with [[groups]]
tables of label and nodes (both may be given; --node may not be mixed with them). Labels are
1-64 of A-Z a-z 0-9 _ . - and unique. Every group is polled on the same tick, each on its own:
a group whose agents are slow or down never delays another's snapshot. Every record names its
group: group_label (the label given; for --node, the group's label the agent answers, its
InnoDB Cluster name or the agents' group_label, else "default"), agent_group_label (the
agent's answer, "" when none) and group_name (group_replication_group_name).

The spool is a directory of segment files (segment-<sequence>.open while written, .sealed
once complete): checksummed msgpack records, sealed when a segment reaches --segment-size or
--segment-age and on exit. With --fsync record (the default) every snapshot is on disk before
its group's next poll starts (the snapshots that complete together share one fsync, done off
the polling loop); a kill -9 at any moment loses nothing synced, never leaves a torn record in
a sealed segment, and the next start recovers the open segment and carries on. Only one
collector may write a spool. 'grstats spark ingest' reads the sealed segments.

With --metrics-listen it serves Prometheus /metrics: snapshots, failovers and failed polls,
the time of the last snapshot (labelled group_label, "default" for --node), and the spool's
bytes and segments.

SIGTERM or Ctrl-C: the open segment is sealed and the collector exits 0.
exit status: 0 after a clean stop, 1 when the spool cannot be used or --metrics-listen cannot
be bound, 2 for invalid arguments.
examples:
  grstats collect --node db1:7400 --node db2:7400 --node db3:7400 --spool /var/lib/grstats/spool
  grstats collect --node db1:7400 --spool /var/lib/grstats/spool --metrics-listen 0.0.0.0:9475
  grstats collect --node 127.0.0.1:7400 --spool ./spool --interval 5 --duration 60 --format json
  grstats collect --group orders=db1:7400,db2:7400 --group billing=db7:7400 --spool ./spool
  grstats collect --config /etc/grstats/collector.toml --spool /var/lib/grstats/spool
"""

#: Setting names in error messages -> the flags that set them.
FLAGS = {
    "interval_s": "--interval",
    "timeout_s": "--timeout",
    "segment_bytes": "--segment-size",
    "segment_age_s": "--segment-age",
    "count": "--count",
    "duration_s": "--duration",
    "summary_every_s": "--summary-every",
}

_SIZE = re.compile(r"(\d+)\s*([KMGT]?)(?:i?B)?", re.IGNORECASE)
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def register(subparsers: Subparsers) -> None:
    """Add the ``collect`` subcommand."""
    parser = subparsers.add_parser(
        "collect",
        help="poll the agents and spool the groups' history",
        description="Take one snapshot of every member's rows of each group each interval, "
        "from the first agent of the group that answers, and append it to a durable spool "
        "for the Spark reports.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    groups = parser.add_argument_group("groups (--node, or --group and --config)")
    groups.add_argument(
        "--node",
        action="append",
        metavar="HOST:PORT",
        help="an agent of the one group (labelled default) to ask; repeat for failover, "
        "tried in the order given",
    )
    groups.add_argument(
        "--group",
        action="append",
        metavar="LABEL=HOST:PORT[,HOST:PORT...]",
        help="a group to poll: its label and its agents in failover order; repeat per group",
    )
    groups.add_argument(
        "--config",
        metavar="FILE",
        help="a collector config file (TOML) of [[groups]] tables, each with label and nodes",
    )
    parser.add_argument("--spool", required=True, metavar="DIR", help="the spool directory")
    parser.add_argument(
        "--interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="seconds between snapshots, 1-3600 (default 1)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="seconds to wait for one agent before trying the next (default 2)",
    )
    parser.add_argument(
        "--metrics-listen",
        metavar="HOST:PORT",
        help="serve Prometheus /metrics here (the collector's own figures); port 0: any free",
    )
    spool = parser.add_argument_group("spool")
    spool.add_argument(
        "--segment-size",
        default="64M",
        metavar="SIZE",
        help="seal a segment before it grows past SIZE bytes; K, M, G suffixes (default 64M)",
    )
    spool.add_argument(
        "--segment-age",
        type=float,
        default=DEFAULT_SEGMENT_AGE_S,
        metavar="SECONDS",
        help="seal a segment this long after it was opened, so that ingest sees it "
        f"(default {DEFAULT_SEGMENT_AGE_S:g})",
    )
    spool.add_argument(
        "--fsync",
        choices=tuple(policy.value for policy in SyncPolicy),
        default=SyncPolicy.RECORD.value,
        help="record: fsync every snapshot (default); write: hand each to the OS, fsync on "
        "seal (survives a kill, not a power cut); seal: buffer, write and fsync on seal",
    )
    spool.add_argument(
        "--no-columns",
        action="store_true",
        help="seal segments without their columns files (the member rows a column at a time, "
        "which grstats spark ingest reads about three times faster than the records)",
    )
    spool.add_argument(
        "--spool-compression",
        choices=tuple(c.value for c in Compression),
        default=Compression.XZ.value,
        help="how sealed segments and their columns files are stored: xz (the default, about "
        "17 times fewer bytes), zlib, or none (what a release older than this one's ingest "
        "reads: docs/upgrades.md)",
    )
    stopping = parser.add_argument_group("stopping and reporting")
    stopping.add_argument("--count", type=int, metavar="N", help="stop after N snapshots")
    stopping.add_argument("--duration", type=float, metavar="SECONDS", help="stop after SECONDS")
    stopping.add_argument(
        "--summary-every",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="log a progress summary this often (default 60)",
    )
    stopping.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="the final summary on standard output: text, or json for scripts",
    )
    parser.add_argument(
        "--log-format", choices=LOG_FORMATS, default="auto", help="auto: console on a terminal"
    )
    parser.add_argument(
        "--log-level", choices=LOG_LEVELS, default="info", help="least severe level logged"
    )
    add_security_arguments(parser, agent=False)
    parser.set_defaults(handler=run)


def parse_size(text: str) -> int:
    """Return the bytes of ``64M``, ``1G``, ``4096``, ``512KiB`` (binary units)."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise ConfigError(f"segment_bytes: {text!r} is not a size such as 64M, 1G or 1048576")
    return int(match.group(1)) * _UNITS[match.group(2).upper()]


def settings_from(args: argparse.Namespace) -> tuple[Fleet, SpoolSettings, Limits]:
    """Return the groups, spool and loop settings of ``args``; CliError (exit 2) names the flag.

    The one group of ``--node`` is given no label (its records take the agents' label, its
    metrics :data:`DEFAULT_GROUP_LABEL`); the groups of ``--config`` come first, then those
    of ``--group``, in the order given.
    """
    specs = group_specs(args)
    named = not args.node
    try:
        return (
            Fleet(
                tuple(
                    PollerSettings(
                        spec.nodes,
                        interval_s=args.interval,
                        timeout_s=args.timeout,
                        group_label=spec.label if named else None,
                    )
                    for spec in specs
                )
            ),
            SpoolSettings(
                segment_bytes=parse_size(args.segment_size),
                segment_age_s=args.segment_age,
                sync=SyncPolicy(args.fsync),
                columns=not args.no_columns,
                compression=Compression(args.spool_compression),
            ),
            Limits(
                count=args.count,
                duration_s=args.duration,
                summary_every_s=args.summary_every,
            ),
        )
    except ConfigError as exc:
        raise CliError(_flag_named(str(exc), args), code=2) from exc


def group_specs(args: argparse.Namespace) -> tuple[GroupSpec, ...]:
    """Return the groups of ``--node``, ``--config`` and ``--group``; CliError (exit 2) if bad."""
    if args.node and (args.group or args.config):
        raise CliError(
            "--node: cannot be combined with --group or --config; give the group of --node a "
            "label with --group LABEL=HOST:PORT[,HOST:PORT...]",
            code=2,
        )
    try:
        if args.node:
            for node in args.node:
                split_address(node, "--node")
            return (GroupSpec(DEFAULT_GROUP_LABEL, tuple(args.node)),)
        specs = groups_from_file(args.config) if args.config else ()
        specs += tuple(parse_group(text) for text in args.group or ())
        check_unique(specs)
    except ConfigError as exc:
        message = str(exc)
        if message.startswith("label: "):
            message = "--group: " + message.removeprefix("label: ")
        raise CliError(message, code=2) from exc
    if not specs:
        raise CliError(
            "--node: no group to poll; give --node HOST:PORT, --group "
            "LABEL=HOST:PORT[,HOST:PORT...] or --config FILE",
            code=2,
        )
    return specs


def metrics_address(args: argparse.Namespace) -> tuple[str, int] | None:
    """Return ``(host, port)`` of ``--metrics-listen``, or None when it is not given.

    Raises:
        CliError: exit status 2, naming the flag and the value, when it is not host:port.
    """
    if args.metrics_listen is None:
        return None
    try:
        return split_address(args.metrics_listen, "--metrics-listen", lowest_port=0)
    except ConfigError as exc:
        raise CliError(str(exc), code=2) from exc


def _flag_named(message: str, args: argparse.Namespace) -> str:
    field, _, rest = message.partition(": ")
    flag = FLAGS.get(field)
    if flag is None:
        return message
    if flag == "--segment-size" and not rest.startswith(repr(args.segment_size)):
        rest = f"{args.segment_size!r} ({rest})"
    return f"{flag}: {rest}"


def run(args: argparse.Namespace) -> int:
    """Collect until SIGTERM, Ctrl-C, --count or --duration; print the summary."""
    fleet, spool_settings, limits = settings_from(args)
    listen = metrics_address(args)
    security = client_security(args)
    configure_logging(args.log_format, args.log_level)
    logger = get_logger()
    try:
        writer = SpoolWriter(args.spool, spool_settings, logger=logger)
    except (CollectorError, OSError) as exc:
        raise CliError(str(exc)) from exc
    server: MetricsServer | None = None
    try:
        metrics = CollectorMetrics(writer.directory)
        for group in fleet.groups:
            metrics.group(group.label)  # its series are there from the first scrape
        if listen is not None:
            server = _serve_metrics(metrics, listen, args.metrics_listen)
            logger.info("metrics_served", address=join_address(listen[0], server.port))
        progress = asyncio.run(_collect(fleet, writer, limits, security, metrics))
    except (CollectorError, OSError) as exc:
        raise CliError(str(exc)) from exc
    finally:
        if server is not None:
            server.close()
        writer.close()
    summary = progress.as_dict() | {
        "spool": args.spool,
        "segments_sealed": writer.sealed,
        "last_sequence": writer.last_sequence,
    }
    if args.format == "json":
        print(json.dumps(summary, sort_keys=True))
    else:
        print(
            f"collected {progress.snapshots} snapshots of {len(fleet.groups)} group(s) in "
            f"{progress.elapsed_s:g} s into "
            f"{args.spool}: {writer.sealed} segments sealed (last {writer.last_sequence}), "
            f"{progress.failed_polls} polls unanswered, {progress.failovers} failovers, "
            f"{progress.skipped_ticks} ticks skipped"
        )
    return 0


def _serve_metrics(metrics: CollectorMetrics, listen: tuple[str, int], given: str) -> MetricsServer:
    """Serve ``/metrics`` at ``listen``; CliError (exit 1) names the flag when it cannot."""
    try:
        return MetricsServer(metrics.registry, *listen)
    except OSError as exc:
        raise CliError(f"--metrics-listen: cannot serve on {given!r}: {exc}") from exc


async def _collect(
    fleet: Fleet,
    writer: SpoolWriter,
    limits: Limits,
    security: Security,
    metrics: CollectorMetrics,
) -> Progress:
    logger = get_logger()
    pollers = [Poller(group, logger=logger, security=security) for group in fleet.groups]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        return await collect(pollers, writer, stop, limits=limits, logger=logger, metrics=metrics)
    finally:
        for poller in pollers:
            await poller.aclose()
