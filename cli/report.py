"""``grstats spark report``: turn the ingested member rows into a report for people and scripts.

``cli/spark.py`` adds the ``spark`` command and calls :func:`register` with its
sub-subparsers. pyspark is imported only when the report runs, after
:func:`grstats.cli.extra.require_spark` has checked that it is installed, so ``--help`` and
argument errors never start a JVM and need no Spark.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from grstats.cli.errors import CliError
from grstats.cli.extra import require_spark
from grstats.spark.report.config import (
    DEFAULT_FLOW_CONTROL_THRESHOLD,
    DEFAULT_MAX_GAP_S,
    SOURCES,
    ReportConfig,
    ReportConfigError,
    parse_time,
)

if TYPE_CHECKING:
    from grstats.cli.types import Subparsers

#: Local mode runs the executors inside the driver's JVM: sorting 30 days of one-second
#: snapshots (23 million member rows) there needs more than Spark's default 1 GiB heap.
LOCAL_CONF = {"spark.driver.memory": "4g"}

EPILOG = """\
TIME is ISO 8601 (2026-01-31T12:00:00Z; no offset means UTC) or unix seconds (1769860800).
The range is [--from, --to): snapshots collected at or after --from and before --to.

written into --out DIR:
  report.html       for people: charts of applier queue, lag and member state over time
                    per member, and every table below (self-contained, no network needed)
  summary.json      for scripts: group and per-member figures
  groups/LABEL/     with several groups in the range: each group's own report.html,
                    summary.json and tables; report.html starts with the fleet overview
                    and summary.json lists the groups ("groups")
  tables/NAME/      each result table as Parquet, and tables/NAME.csv as CSV

figures, per member and for the group: throughput (applied, proposed, checked per
second; a counter that goes down is a reset, e.g. a restart, not a negative rate);
conflict rate and local rollback ratio; certifier and applier queue p50/p95/max;
COUNT_TRANSACTIONS_ROWS_VALIDATING per hour and its slope; seconds in each MEMBER_STATE;
every UNREACHABLE and not-connected episode; APPLIER_LAG_SECONDS p50/p95/p99/max, and
of its stages (transport, waiting, apply; unknown on MySQL 5.7, never 0); time
writers were throttled by flow control; how many GTIDs gtid_executed ran ahead of
TRANSACTIONS_COMMITTED_ALL_MEMBERS; the worst minutes by lag, applier queue and
conflict rate. An empty range writes a summary that says so and exits 0.

where the figures come from (--source): every figure comes from partials (each member's
and group's snapshots over a stretch of time, added up), stitched. Ingest writes them per
minute beside the member rows (the rollups). With --source auto a report reads the rollups
when they answer it: every load wrote them, with the --flow-control-threshold and --max-gap
given here (grstats spark ingest takes both; 25000 and 30 by default), --from/--to on whole
minutes, and a range of at least 100 minutes (a chart point a minute); it then reads no
member row (30 days in seconds). Otherwise Spark tasks make the partials from the member
rows with the same code, at the grain the charts need (a 60 s range: a point a second).
Percentiles come from the partials' sketches: within 1% of the value at the percentile's
rank (0.5 ms for lags under 0.1 s).
summary.json's settings say which source was read ("source").

examples:
  grstats spark report --table /var/lib/grstats/table --out report
  grstats spark report --table table --out night --from 2026-01-31T22:00Z --to 2026-02-01T06:00Z
  grstats spark report --table table --out report --master spark://spark-master:7077 --format json
  grstats spark report --table table --out east --group east
"""


def register(subparsers: Subparsers) -> None:
    """Add the ``report`` subcommand to the ``spark`` command."""
    parser = subparsers.add_parser(
        "report",
        help="write the group's report (HTML, JSON, Parquet, CSV) from the ingested table",
        description="Read the Parquet table that 'grstats spark ingest' keeps, compute per-member "
        "and group-wide figures over a time range with Spark, and write them as an HTML report "
        "for people, summary.json for scripts, and one Parquet and CSV table per result.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--table", required=True, type=Path, metavar="DIR", help="the ingested table directory"
    )
    parser.add_argument(
        "--out", required=True, type=Path, metavar="DIR", help="where to write the report"
    )
    parser.add_argument(
        "--from",
        dest="start",
        metavar="TIME",
        help="first moment included (default: the first snapshot)",
    )
    parser.add_argument(
        "--to", dest="end", metavar="TIME", help="end of the range, excluded (default: no end)"
    )
    parser.add_argument(
        "--group",
        metavar="LABEL",
        help="report only the group of this label (default: every group in the range; "
        "several groups give a fleet overview and a section per group)",
    )
    parser.add_argument(
        "--master",
        metavar="URL",
        help="Spark master, e.g. spark://HOST:7077 (default: local mode on this machine)",
    )
    parser.add_argument(
        "--flow-control-threshold",
        type=int,
        default=DEFAULT_FLOW_CONTROL_THRESHOLD,
        metavar="N",
        help="queue size above which flow control throttles writers, as "
        "group_replication_flow_control_certifier_threshold and _applier_threshold "
        f"(default {DEFAULT_FLOW_CONTROL_THRESHOLD})",
    )
    parser.add_argument(
        "--max-gap",
        type=float,
        default=DEFAULT_MAX_GAP_S,
        metavar="SECONDS",
        help="a snapshot's state counts until the member's next snapshot, at most this long; "
        f"longer gaps (the collector stopped) count as no data (default {DEFAULT_MAX_GAP_S:g})",
    )
    parser.add_argument(
        "--source",
        choices=SOURCES,
        default="auto",
        help="rollups: the per-minute partials ingest writes (fast over long ranges; a chart "
        "point a minute at most); rows: partials made from every member row, at the grain the "
        "charts need; auto: the rollups when they answer (every load wrote them, with this "
        "--flow-control-threshold and --max-gap; a range on whole minutes, of 100 minutes or "
        "more), else the rows (default auto)",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: where the report is; json: summary.json on stdout (default text)",
    )
    parser.set_defaults(handler=run)


def config_from_args(args: argparse.Namespace) -> ReportConfig:
    """Return the validated run described by ``args``; raises CliError (exit 2) when invalid."""
    try:
        start = None if args.start is None else parse_time("--from", args.start)
        end = None if args.end is None else parse_time("--to", args.end)
        return ReportConfig(
            table_dir=args.table,
            out_dir=args.out,
            start=start,
            end=end,
            flow_control_threshold=args.flow_control_threshold,
            max_gap_s=args.max_gap,
            group=args.group,
            source=args.source,
        )
    except ReportConfigError as exc:
        message = str(exc)
        for field, flag in (
            ("end:", "--to:"),
            ("start:", "--from:"),
            ("flow_control_threshold:", "--flow-control-threshold:"),
            ("max_gap_s:", "--max-gap:"),
            ("group:", "--group:"),
        ):
            if message.startswith(field):
                message = flag + message[len(field) :]
        raise CliError(message, code=2) from exc


def run(args: argparse.Namespace) -> int:
    """Run the report described by ``args`` and say where it is."""
    require_spark()
    config = config_from_args(args)
    if not config.table_dir.is_dir():
        raise CliError(f"--table: {str(config.table_dir)!r} is not a directory", code=2)
    # pyspark is imported only when a report runs.
    from pyspark.sql import SparkSession  # noqa: PLC0415

    from grstats.spark.report.job import ReportInputError, check_table, run_report  # noqa: PLC0415
    from grstats.spark.session import DEFAULT_MASTER, build_session, is_local  # noqa: PLC0415

    try:
        check_table(config.table_dir)
    except ReportInputError as exc:
        raise CliError(str(exc), code=2) from exc

    def progress(message: str) -> None:
        print(f"report: {message}", file=sys.stderr, flush=True)

    master = args.master or DEFAULT_MASTER
    progress(f"starting Spark ({master})")
    running = SparkSession.getActiveSession()
    spark = build_session(
        master,
        "grstats-report",
        conf=LOCAL_CONF if is_local(master) else None,
        class_archive=True,
    )
    try:
        result = run_report(config, spark=spark, progress=progress)
    except ReportInputError as exc:
        raise CliError(str(exc), code=2) from exc
    finally:
        if running is None:  # a session this command started (not one its caller runs)
            spark.stop()
    if args.format == "json":
        print(json.dumps(result.summary, indent=2, sort_keys=True))
        return 0
    if result.empty:
        print(f"the range holds no snapshots ({result.range_text}): nothing to report")
    print(f"report: {result.html_path}")
    print(f"summary: {result.summary_path}")
    return 0
