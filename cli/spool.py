"""``grstats spool prune``: remove the spool's segments that the table's commit log says are loaded.

Runs on the collector's host, without Spark: it reads the table's log as JSON
(:mod:`grstats.collector.retention` has the rules).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from grstats.cli.errors import CliError
from grstats.collector.retention import RetentionError, prune

if TYPE_CHECKING:
    from grstats.cli.types import Subparsers
    from grstats.collector.retention import PruneResult

#: The most --keep-days takes: ten years.
MAX_KEEP_DAYS = 3650

EPILOG = """\
jobs:
  prune  remove the sealed segments (and their columns files) the table holds already

examples:
  grstats spool prune --spool /var/lib/grstats-collector/spool --table /mnt/shared/grstats/table
"""

PRUNE_EPILOG = """\
A sealed segment is removed, with its columns file, once a commit of the table's log
(TABLE/_grstats/log/*.json) names it as loaded from this spool, or as quarantined (the table
keeps a copy), with the size the segment has, and that commit is --keep-days old. Never
removed: an .open segment; a sealed one no commit names (not loaded yet, or being loaded: a
commit counts once its entry is renamed into place, never as a .tmp); one whose size differs
from the commit's (reported: the spool is not the one the table loaded); any other file.
While an ingest holds the table's lock nothing is removed (the next run prunes). Only the
log is read: Spark is not needed.

A spool is known to the log by its absolute path as ingest saw it. When ingest reads it at
another path (a shared volume mounted elsewhere), give that path with --ingested-as; when the
log names none of this spool's segments, the summary lists the spools it does name.

exit status: 0 when the run removed what it could (or an ingest was running), 1 when the
spool or the table's log cannot be read or a removal failed, 2 for invalid arguments.
examples:
  grstats spool prune --spool /var/lib/grstats-collector/spool --table /mnt/shared/grstats/table
  grstats spool prune --spool ./spool --table ./table --keep-days 2 --dry-run
  grstats spool prune --spool /var/lib/grstats-collector/spool --table /mnt/table \\
      --ingested-as /mnt/shared/grstats/spool --format json
"""


def register(subparsers: Subparsers) -> None:
    """Add the ``spool`` command and its ``prune`` job."""
    parser = subparsers.add_parser(
        "spool",
        help="spool upkeep: remove the segments the Spark table has loaded",
        description="Upkeep of the collector's spool: 'prune' removes the sealed segments "
        "the table's commit log names as loaded, so that the spool does not grow forever.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    jobs = parser.add_subparsers(title="jobs", metavar="JOB")
    prune_parser = jobs.add_parser(
        "prune",
        help="remove the sealed segments (and columns files) the table's log names as loaded",
        description="Remove from the spool every sealed segment, with its columns file, that "
        "a commit of the table's log names as loaded (or quarantined) from this spool. A "
        "segment not loaded yet is never removed.",
        epilog=PRUNE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    prune_parser.add_argument(
        "--spool", required=True, type=Path, metavar="DIR", help="the collector's spool directory"
    )
    prune_parser.add_argument(
        "--table",
        required=True,
        type=Path,
        metavar="DIR",
        help="the table 'grstats spark ingest' loads the spool into (only its log is read)",
    )
    prune_parser.add_argument(
        "--ingested-as",
        metavar="PATH",
        help="the spool's path as ingest saw it, when ingest reads it at another path "
        "(default: --spool's absolute path)",
    )
    prune_parser.add_argument(
        "--keep-days",
        type=float,
        default=0.0,
        metavar="DAYS",
        help="keep a loaded segment until its commit is this many days old, 0-3650 "
        "(default 0: remove it once loaded)",
    )
    prune_parser.add_argument(
        "--dry-run", action="store_true", help="list what would be removed; remove nothing"
    )
    prune_parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: a summary for people; json: the summary for scripts (default text)",
    )
    prune_parser.set_defaults(handler=run_prune)
    parser.set_defaults(handler=lambda _args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def run_prune(args: argparse.Namespace) -> int:
    """Prune the spool ``args`` name and print the summary."""
    keep_days = args.keep_days
    if not math.isfinite(keep_days) or not 0 <= keep_days <= MAX_KEEP_DAYS:
        raise CliError(
            f"--keep-days: {keep_days:g} is not a number of days from 0 to {MAX_KEEP_DAYS}",
            code=2,
        )
    if not args.spool.is_dir():
        raise CliError(f"--spool: {str(args.spool)!r} is not a directory", code=2)
    if not args.table.is_dir():
        raise CliError(f"--table: {str(args.table)!r} is not a directory", code=2)
    try:
        result = prune(
            args.spool,
            args.table,
            ingested_as=args.ingested_as,
            keep_days=keep_days,
            dry_run=args.dry_run,
        )
    except RetentionError as exc:
        raise CliError(str(exc)) from exc
    if args.format == "json":
        print(json.dumps(result.to_json(), indent=2, sort_keys=True))
    else:
        print(summary_text(result))
    return 0


def summary_text(result: PruneResult) -> str:
    """The summary people read."""
    if result.ingest_running:
        return "an ingest is loading the table: nothing removed (run again after it)"
    verb = "would remove" if result.dry_run else "removed"
    mib = result.removed_bytes / 2**20
    head = (
        f"{verb} {len(result.removed)} loaded segments ({mib:,.1f} MiB) and their columns "
        f"files; kept {len(result.kept_unloaded)} not loaded yet, {len(result.kept_recent)} "
        f"loaded within --keep-days, {len(result.open)} open"
    )
    lines = [head]
    lines += [f"{verb} {removal.name} (commit {removal.commit})" for removal in result.removed]
    lines += [
        f"kept {name}: its size differs from the one the table loaded: is the table loaded "
        "from another spool of the same segment names?"
        for name in result.mismatched
    ]
    lines += [f"{verb} {name}: its segment is gone already" for name in result.orphan_columns]
    if result.other_spools:
        lines.append(
            f"the table's log names no segment of {result.spool}; it names spools "
            f"{', '.join(result.other_spools)} (--ingested-as)"
        )
    return "\n".join(lines)
