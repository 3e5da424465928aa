"""``grstats spark convert``: write the Delta logs of a table an earlier grstats loaded.

A table of an earlier grstats has its commit log (``_grstats/log/``) and Parquet datasets but
no Delta log; grstats' readers refuse it until each dataset's Delta table holds every commit
(:meth:`grstats.spark.table.TableLog.check_delta`). This command adds them, in place, moving
no file: the same step every ingest takes first (:meth:`TableLog.catch_up`), without Spark.
It takes the table's lock, so it waits for no ingest and none runs beside it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from grstats.cli.errors import CliError
from grstats.cli.extra import require_spark

if TYPE_CHECKING:
    from grstats.cli.types import Subparsers

EPILOG = """\
Each dataset directory (data/, rollups/members/, rollups/groups/, events/) becomes a Delta
Lake table: its _delta_log/ lists the files the commit log names, so DuckDB (delta_scan),
Spark with delta-spark, Polars and the deltalake package read it as a table. No data file
moves or changes; running it again adds nothing. Ingest does the same at its start, so a
table that is ingested into again needs no convert.

exit status: 0 when converted (or nothing was left to convert), 1 when it failed (the
message says why), 2 for invalid arguments.

examples:
  grstats spark convert --table /var/lib/grstats/table
  grstats spark convert --table table --format json
"""


def register(subparsers: Subparsers) -> None:
    """Add the ``convert`` job to the ``spark`` command."""
    parser = subparsers.add_parser(
        "convert",
        help="write the Delta Lake logs of a table an earlier grstats loaded (in place)",
        description="Make each dataset of a table loaded by an earlier grstats a Delta Lake "
        "table, in place: its Delta log lists the files grstats' commit log names.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--table", required=True, type=Path, metavar="DIR", help="the table directory"
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: a line for people; json: the files added by dataset (default text)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Convert the table ``args`` name and print what was added."""
    require_spark()
    from grstats.spark.compact import NotATable, convert_table  # noqa: PLC0415 (pyspark)
    from grstats.spark.table import TableError  # noqa: PLC0415

    table: Path = args.table
    try:
        commits, added = convert_table(table)
    except NotATable as exc:
        raise CliError(str(exc), code=2) from exc
    except TableError as exc:
        raise CliError(str(exc)) from exc
    if args.format == "json":
        print(json.dumps({"commits": commits, "added": added}, indent=2, sort_keys=True))
    elif added:
        files = ", ".join(f"{dataset}/ {count} files" for dataset, count in added.items())
        print(f"converted {table}: {commits} commits; Delta logs written for {files}")
    else:
        print(f"{table}: nothing to convert, its Delta tables hold all {commits} commits")
    return 0
