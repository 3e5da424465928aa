"""``grstats spark compact``: bound the table's file count (Delta OPTIMIZE, then VACUUM).

The work is :func:`grstats.spark.compact.compact_table`'s; no Spark.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from grstats.cli.errors import CliError
from grstats.cli.extra import require_spark
from grstats.spark.compact_settings import TARGET_MIB, VACUUM_HOURS

if TYPE_CHECKING:
    from grstats.cli.types import Subparsers

EPILOG = """\
Each ingest adds a few small files per segment and date to each dataset; compaction
rewrites each date's small files of data/, rollups/members/, rollups/groups/ and events/ into
files of about --target-mib (Delta Lake's OPTIMIZE, one Delta commit per dataset). The files
it replaced stay for readers of earlier versions; --vacuum-hours deletes them once no version
of that many hours reads them (Delta's VACUUM; 168, Delta's default, unless you know no report
runs that long). It takes the table's lock: run it between ingests (e.g. nightly, from the
timer that runs ingest), never beside one. No Spark is started.

exit status: 0 when done, 1 when it failed (a broken table, an ingest running), 2 for invalid
arguments (also a --table that is no grstats table).

examples:
  grstats spark compact --table /var/lib/grstats/table
  grstats spark compact --table table --vacuum-hours 168 --format json
"""


def register(subparsers: Subparsers) -> None:
    """Add the ``compact`` job to the ``spark`` command."""
    parser = subparsers.add_parser(
        "compact",
        help="compact the table's small files (Delta OPTIMIZE) and vacuum the replaced ones",
        description="Rewrite the small files of each of the table's Delta tables into larger "
        "ones, date by date, and optionally delete the files that no recent version reads.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--table", required=True, type=Path, metavar="DIR", help="the table directory"
    )
    parser.add_argument(
        "--target-mib",
        type=int,
        default=TARGET_MIB,
        metavar="MIB",
        help=f"the compacted files' size, in MiB, from 1 to 4096 (default {TARGET_MIB})",
    )
    parser.add_argument(
        "--vacuum-hours",
        type=int,
        default=None,
        metavar="HOURS",
        help="then delete replaced files no version of the last HOURS reads, and files of no "
        "version older than HOURS (a shared ingest's lost attempts), 0 to 87600, at least 1 "
        "on a table shared ingests load "
        f"(default: no vacuum; Delta's own default retention is {VACUUM_HOURS})",
    )
    parser.add_argument(
        "--publish",
        metavar="URI",
        help="then copy the new Delta versions to the table's copy at URI (s3://bucket/prefix, "
        "as grstats spark ingest --publish) and, after --vacuum-hours, delete there the files "
        "vacuumed here (default: none)",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: a line for people; json: the files by dataset (default text)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Compact the table ``args`` name and print what changed."""
    if not 1 <= args.target_mib <= 4096:
        raise CliError(f"--target-mib: {args.target_mib} is not from 1 to 4096", code=2)
    if args.vacuum_hours is not None and not 0 <= args.vacuum_hours <= 87_600:
        raise CliError(f"--vacuum-hours: {args.vacuum_hours} is not from 0 to 87600", code=2)
    require_spark()
    from grstats.spark.compact import (  # noqa: PLC0415 (pyspark)
        NotATable,
        RetentionRefused,
        compact_table,
    )
    from grstats.spark.table import TableError  # noqa: PLC0415

    try:
        result = compact_table(
            args.table,
            target_bytes=args.target_mib * 2**20,
            vacuum_hours=args.vacuum_hours,
            publish_to=args.publish,
        )
    except (NotATable, RetentionRefused) as exc:
        raise CliError(str(exc), code=2) from exc
    except TableError as exc:
        raise CliError(str(exc)) from exc
    if args.format == "json":
        print(json.dumps(result.to_json(), indent=2, sort_keys=True))
        return 0
    removed, added = sum(result.removed.values()), sum(result.added.values())
    line = f"{args.table}: compacted {removed} files into {added}"
    if args.vacuum_hours is not None:
        line += f"; vacuumed {sum(result.vacuumed.values())} replaced files"
    if args.publish is not None:
        line += f"; published {result.published} versions to {args.publish}"
        line += f", pruned {result.pruned} files there" if args.vacuum_hours is not None else ""
    print(line)
    return 0
