"""``grstats spark ingest``: load the collector's sealed segments into the table, exactly once.

``cli/spark.py`` adds the ``spark`` command and calls :func:`register` with its
sub-subparsers. pyspark and pyarrow are imported only when ingest runs, after
:func:`grstats.cli.extra.require_spark` has checked that they are installed.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from grstats.cli.errors import CliError
from grstats.cli.extra import require_spark
from grstats.spark.compact_settings import COMPACT_OVER
from grstats.spark.rollup_settings import (
    ROLLUP_FLOW_CONTROL_THRESHOLD,
    ROLLUP_MAX_GAP_S,
    RollupSettings,
    RollupSettingsError,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import SparkSession

    from grstats.cli.types import Subparsers
    from grstats.spark.ingest import IngestResult
    from grstats.spark.shared_ingest import SharedIngestResult

EPILOG = """\
--table DIR holds:
  data/commit=N/collected_date=YYYY-MM-DD/*.parquet
                                              one row per snapshot and member (spark/schema.py)
  rollups/{members,groups}/commit=N/collected_date=.../*.parquet
                                              per-minute rollups of each member and group,
                                              which reports over long ranges read
  _grstats/log/                               the commits: which segments each loaded, and
                                              its files
  data/_delta_log/, rollups/*/_delta_log/, events/_delta_log/
                                              each dataset is a Delta Lake table: DuckDB's
                                              delta_scan, deltalake, Spark with delta-spark
                                              read it (docs/architecture.md)
  _grstats/quarantine/                        copies of corrupt segments, set aside

Run it as often as you like (e.g. every few minutes from a timer): each run loads only the
sealed segments no earlier run loaded, and commits them with their rows in one atomic step.
However abruptly a run stops, the next one loses nothing and duplicates nothing. A corrupt
segment is copied to the quarantine, removed from the spool and reported with its file and
offset; the other segments still load. A record of a schema version this grstats does not
read stops the run (exit 1) and nothing is loaded: upgrade grstats.

The rollups count writers as throttled above --flow-control-threshold and hold a snapshot's
state for at most --max-gap; a report reads them only when its own --flow-control-threshold
and --max-gap are the same, and reads every member row otherwise. A table keeps the settings
its first load chose: other settings exit 2 and load nothing (load into a new table).

On a cluster (--master spark://HOST:7077), the executors read the spool and write the table
themselves: both must be on storage every machine mounts at the same path, and the
executors need grstats with its spark extra, grstats[spark] (see deploy/spark/submit.sh).

With --shared, each collector's spool is ingested by a run of its own, all at once into one
table (on storage every host mounts): each run commits to data/'s Delta log directly, retrying
when another run committed first, and skips the member rows (group, member, the member's own
LAST_SEEN) that the table holds already, so two collectors of one group load each row once.
Such a table has member rows only: reports read them all (no rollups). How far each spool is
loaded is Delta's own mark in data/_delta_log/, which grstats spool prune reads.

exit status: 0 when the run loaded (or had nothing to load), 1 when it failed, 2 for invalid
arguments (also rollup settings other than the table's).
examples:
  grstats spark ingest --spool /var/lib/grstats/spool --table /var/lib/grstats/table
  grstats spark ingest --spool spool --table table --format json
  grstats spark ingest --spool spool --table table --flow-control-threshold 10000
  grstats spark ingest --spool spool --table table --every 30     # fresh within 2 minutes
  grstats spark ingest --shared --spool /var/lib/grstats/spool --table /mnt/shared/table
  grstats spark ingest --spool /mnt/shared/spool --table /mnt/shared/table \\
      --master spark://spark-master:7077
"""


#: The namespace attribute :class:`_Given` notes the options given on the command line in.
GIVEN = "given_options"


class _Given(argparse.Action):
    """Store the value, and note that the option was given (its default is a real value)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,  # noqa: ARG002  (argparse's signature)
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,  # noqa: ARG002
    ) -> None:
        """Called by argparse once per occurrence of the option."""
        setattr(namespace, self.dest, values)
        setattr(namespace, GIVEN, {*getattr(namespace, GIVEN, ()), self.dest})


def register(subparsers: Subparsers) -> None:
    """Add the ``ingest`` job to the ``spark`` command."""
    parser = subparsers.add_parser(
        "ingest",
        help="load the collector's sealed spool segments into the Parquet table, exactly once",
        description="Load every sealed segment of the collector's spool that the table does "
        "not hold yet into the Parquet table, one row per snapshot and member, partitioned by "
        "UTC date. Spark's executors read the segments (a task takes a few consecutive ones): "
        "each one's rows from the columns file the collector wrote beside it when it sealed "
        "it, or, where there is none, by decoding its records.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--spool", required=True, type=Path, metavar="DIR", help="the collector's spool directory"
    )
    parser.add_argument(
        "--table", required=True, type=Path, metavar="DIR", help="the table directory"
    )
    parser.add_argument(
        "--master",
        metavar="URL",
        help="Spark master, e.g. spark://HOST:7077 (default: local mode on every core)",
    )
    parser.add_argument(
        "--flow-control-threshold",
        type=int,
        default=ROLLUP_FLOW_CONTROL_THRESHOLD,
        action=_Given,
        metavar="N",
        help="the rollups count writers as throttled while a member's queue is above this, as "
        "group_replication_flow_control_certifier_threshold and _applier_threshold; a report "
        "reads the rollups only when its own --flow-control-threshold is the same "
        f"(default {ROLLUP_FLOW_CONTROL_THRESHOLD})",
    )
    parser.add_argument(
        "--max-gap",
        type=float,
        default=ROLLUP_MAX_GAP_S,
        action=_Given,
        metavar="SECONDS",
        help="in the rollups a snapshot's state counts until the member's next snapshot, at "
        "most this long; a report reads the rollups only when its own --max-gap is the same "
        f"(default {ROLLUP_MAX_GAP_S:g})",
    )
    parser.add_argument(
        "--ignore-columns",
        action="store_true",
        help="decode every segment's records even where the collector left a columns file "
        "beside it (the same rows, about three times slower; to compare, or to rule the "
        "columns files out)",
    )
    parser.add_argument(
        "--compact-over",
        type=int,
        default=COMPACT_OVER,
        action=_Given,
        metavar="N",
        help="after its commit, compact each dataset's dates it added to that hold more than N "
        f"files, 0 never (default {COMPACT_OVER}; grstats spark compact does it on demand)",
    )
    parser.add_argument(
        "--publish",
        metavar="URI",
        help="after each run, copy the table's new Delta versions to object storage at URI "
        "(s3://bucket/prefix; credentials, region and AWS_ENDPOINT_URL as the AWS SDKs read "
        "them), where other engines read the datasets (docs/architecture.md); --table stays "
        "the working copy (default: none)",
    )
    parser.add_argument(
        "--shared",
        action="store_true",
        help="load alongside other collectors' ingests into one table at once: no table lock, "
        "Delta's optimistic commits retried on conflict, each member row (group, member, its "
        "LAST_SEEN) loaded once whichever spools hold it; member rows only (no rollups, "
        "events or GR log lines), read without Spark; not with --publish, --master, "
        "--flow-control-threshold, --max-gap nor --compact-over, nor into a table the "
        "single-writer ingest loads (default: the single-writer ingest)",
    )
    parser.add_argument(
        "--every",
        type=float,
        metavar="SECONDS",
        help="run again every SECONDS (1 to 86400) with the same Spark session, until SIGTERM "
        "or Ctrl-C (exit 0): with the collector's default --segment-age 60, a snapshot is in "
        "the table within about 60 + SECONDS + the run's time; a failed run is reported and "
        "the next one tried (default: one run)",
    )
    parser.add_argument(
        "--runs",
        type=int,
        metavar="N",
        help="with --every, stop after N runs (default: until stopped)",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: a summary for people; json: the summary for scripts, one JSON object a run "
        "(default text)",
    )
    parser.set_defaults(handler=run)


def _check_schedule(args: argparse.Namespace) -> None:
    """Refuse --compact-over, --every and --runs out of range (exit 2, naming the flag)."""
    if args.compact_over < 0:
        raise CliError(f"--compact-over: {args.compact_over} is not 0 or more", code=2)
    if args.every is not None and not 1 <= args.every <= 86_400:
        raise CliError(
            f"--every: {args.every:g} is not a number of seconds from 1 to 86400", code=2
        )
    if args.runs is not None and (args.every is None or args.runs < 1):
        raise CliError(
            f"--runs: {args.runs} needs --every and is a count from 1"
            if args.every is None
            else f"--runs: {args.runs} is not a count from 1",
            code=2,
        )


#: Of :data:`SHARED_REFUSES`, the options whose default is None (given when set).
NO_DEFAULT = frozenset({"publish", "master"})

#: The options a shared ingest (``--shared``) refuses: what it does not do.
SHARED_REFUSES = (
    ("publish", "--publish"),
    ("master", "--master"),
    ("flow_control_threshold", "--flow-control-threshold"),
    ("max_gap", "--max-gap"),
    ("compact_over", "--compact-over"),
)


def _check_dirs(args: argparse.Namespace) -> None:
    """Refuse a --spool that is no directory, and a --table that is something else (exit 2)."""
    if not args.spool.is_dir():
        raise CliError(f"--spool: {str(args.spool)!r} is not a directory", code=2)
    if args.table.exists() and not args.table.is_dir():
        raise CliError(f"--table: {str(args.table)!r} is not a directory", code=2)


def _check_shared(args: argparse.Namespace) -> None:
    """Refuse, with --shared, the options a shared ingest does not take (exit 2, naming them)."""
    given = [
        flag
        for name, flag in SHARED_REFUSES
        if name in getattr(args, GIVEN, ()) or (name in NO_DEFAULT and getattr(args, name))
    ]
    if given:
        raise CliError(
            f"--shared: {', '.join(given)} cannot go with it (a shared ingest loads member "
            "rows only, without Spark, and publishes or compacts nothing)",
            code=2,
        )


def run(args: argparse.Namespace) -> int:
    """Run the ingest ``args`` describe (once, or every ``--every``) and print each summary."""
    _check_schedule(args)
    if args.shared:
        _check_shared(args)
    require_spark()
    if args.shared:
        return _run_shared(args)
    rollups = settings_from_args(args)
    _check_dirs(args)
    if args.publish is not None:
        from grstats.spark.publish import PublishError, remote_filesystem  # noqa: PLC0415

        try:
            remote_filesystem(args.publish)
        except PublishError as exc:
            raise CliError(str(exc), code=2) from exc
    from pyspark.sql import SparkSession  # noqa: PLC0415 (pyspark only when a job runs)

    from grstats.spark.session import build_session  # noqa: PLC0415

    def progress(message: str) -> None:
        print(f"ingest: {message}", file=sys.stderr, flush=True)

    progress("starting Spark" + (f" on {args.master}" if args.master else " in local mode"))
    began = time.monotonic()
    running = SparkSession.getActiveSession()
    spark = build_session(args.master, "grstats-ingest", python_work=True, class_archive=True)
    startup_seconds = time.monotonic() - began
    try:
        _runs(args, spark, rollups, progress, startup_seconds)
    finally:
        if running is None:  # a session this command started (not one its caller runs)
            spark.stop()
    return 0


def _runs(
    args: argparse.Namespace,
    spark: SparkSession,
    rollups: RollupSettings,
    progress: Callable[[str], None],
    startup_seconds: float,
) -> None:
    """One ingest, or one every ``--every`` seconds until a signal or ``--runs``."""
    from grstats.collector.errors import SpoolError  # noqa: PLC0415
    from grstats.spark.ingest import IngestError, SettingsRefused, run_ingest  # noqa: PLC0415
    from grstats.spark.table import TableError  # noqa: PLC0415

    def once(runs: int) -> None:
        try:
            result = run_ingest(
                spark,
                args.spool,
                args.table,
                progress=progress,
                rollups=rollups,
                use_columns=not args.ignore_columns,
                compact_over=args.compact_over or None,
                publish_to=args.publish,
            )
        except SettingsRefused as exc:  # the arguments do not fit this table
            raise CliError(str(exc), code=2) from exc
        _print_summary(args, result, startup_seconds if runs == 1 else None)

    _on_schedule(args, once, (IngestError, TableError, SpoolError), progress)


def _on_schedule(
    args: argparse.Namespace,
    once: Callable[[int], None],
    failures: tuple[type[Exception], ...],
    progress: Callable[[str], None],
) -> None:
    """Call ``once(run number)`` once, or every ``--every`` seconds until a signal or ``--runs``.

    A run that raises one of ``failures`` is a CliError without ``--every``; with it, it is
    reported and the next run tried.
    """
    stopping = _stop_on_signals() if args.every is not None else threading.Event()
    runs = 0
    while True:
        runs += 1
        try:
            once(runs)
        except failures as exc:
            if args.every is None:
                raise CliError(str(exc)) from exc
            progress(f"run {runs} failed: {exc}; the next run in {args.every:g} s")
        if args.every is None or (args.runs is not None and runs >= args.runs):
            return
        if stopping.wait(args.every):
            progress("stopped")
            return


def _run_shared(args: argparse.Namespace) -> int:
    """The shared ingest of ``--spool`` (once, or every ``--every``), no Spark session."""
    from grstats.collector.errors import SpoolError  # noqa: PLC0415
    from grstats.spark.delta import DeltaTableError  # noqa: PLC0415
    from grstats.spark.shared_ingest import SharedIngestError, run_shared_ingest  # noqa: PLC0415

    _check_dirs(args)

    def progress(message: str) -> None:
        print(f"ingest: {message}", file=sys.stderr, flush=True)

    def once(_runs: int) -> None:
        result = run_shared_ingest(
            args.spool, args.table, progress=progress, use_columns=not args.ignore_columns
        )
        _print_shared(args, result)

    _on_schedule(args, once, (SharedIngestError, DeltaTableError, SpoolError), progress)
    return 0


def _print_shared(args: argparse.Namespace, result: SharedIngestResult) -> None:
    """A shared run's summary, as ``--format`` asks (one line a run with ``--every``)."""
    if args.format == "json":
        indent = None if args.every is not None else 2
        print(json.dumps(result.to_json(), indent=indent, sort_keys=True), flush=True)
    else:
        print(result.text(), flush=True)


def _stop_on_signals() -> threading.Event:
    """An event SIGTERM and SIGINT set (in the main thread; elsewhere none is installed)."""
    stopping = threading.Event()
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda _signum, _frame: stopping.set())
    return stopping


def _print_summary(
    args: argparse.Namespace, result: IngestResult, startup_seconds: float | None
) -> None:
    if args.format == "json":
        summary = result.to_json()
        if startup_seconds is not None:
            summary["startup_seconds"] = round(startup_seconds, 3)
        indent = None if args.every is not None else 2  # one line a run when it repeats
        print(json.dumps(summary, indent=indent, sort_keys=True), flush=True)
    else:
        print(summary_text(result, startup_seconds), flush=True)


def settings_from_args(args: argparse.Namespace) -> RollupSettings:
    """Return the rollup settings ``args`` ask for; raises CliError (exit 2) when invalid."""
    try:
        return RollupSettings(args.flow_control_threshold, args.max_gap)
    except RollupSettingsError as exc:
        message = str(exc)
        for field, flag in (
            ("flow_control_threshold:", "--flow-control-threshold:"),
            ("max_gap_s:", "--max-gap:"),
        ):
            if message.startswith(field):
                message = flag + message[len(field) :]
        raise CliError(message, code=2) from exc


def summary_text(result: IngestResult, startup_seconds: float | None = None) -> str:
    """The summary people read: the rate is the Spark job's, and it says what it leaves out."""
    started = "" if startup_seconds is None else f" ({startup_seconds:.1f} s)"
    if result.commit is None:
        return (
            f"nothing to load: the table holds all {result.segments_total} sealed segments "
            f"({result.seconds:.1f} s"
            + ("" if startup_seconds is None else f", after {startup_seconds:.1f} s starting Spark")
            + ")"
        )
    loaded = (
        f"commit {result.commit}: loaded {result.segments_loaded} segments "
        f"({result.from_columns} from their columns files), "
        f"{result.records:,} snapshots, {result.rows:,} member rows in {result.seconds:.1f} s; "
        f"{result.segments_skipped} segments were loaded before\n"
        f"rate: {result.rows_per_second:,.0f} rows/s, over the {result.job_seconds:.1f} s of "
        f"the Spark job alone: not the log and the commit, not starting Spark{started}, nor a "
        "class archive written as the command exits"
    )
    lines = [loaded]
    lines += [
        f"quarantined {q.name}: offset {q.offset}: {q.reason} (copy: {q.copy})"
        for q in result.quarantined
    ]
    return "\n".join(lines)
