"""``grstats spark``: the table's jobs (``ingest``, ``report``, ``compact``, ``convert``).

Each job's module exposes ``register(subparsers)`` like the top-level commands do. pyspark and
pyarrow (the ``spark`` extra, see :mod:`grstats.cli.extra`) are imported only inside the
handlers, so ``grstats --help`` and argument errors need neither and start no JVM.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from grstats.cli import compact, convert, ingest, report

if TYPE_CHECKING:
    from grstats.cli.types import Subparsers

EPILOG = """\
jobs:
  ingest  load the collector's sealed spool segments into the Parquet table, exactly once
  report  turn the table into a report (HTML for people, JSON, Parquet and CSV for scripts)
  compact compact the table's small files and vacuum the replaced ones (no Spark)
  convert write the Delta Lake logs of a table an earlier grstats loaded (no Spark)

ingest and report run on this machine (local mode, every core) unless --master names a
cluster, e.g. spark://HOST:7077; see deploy/spark/submit.sh for spark-submit on a real cluster.

examples:
  grstats spark ingest --spool /var/lib/grstats/spool --table /var/lib/grstats/table
  grstats spark report --table /var/lib/grstats/table --out report
"""


def register(subparsers: Subparsers) -> None:
    """Add the ``spark`` command and its jobs."""
    parser = subparsers.add_parser(
        "spark",
        help="Spark jobs: load the collector's spool into a table, report on it",
        description="Batch jobs over the group's history: 'ingest' loads what the collector "
        "spooled into a Parquet table, 'report' turns the table into reports.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    jobs = parser.add_subparsers(title="jobs", metavar="JOB")
    ingest.register(jobs)
    report.register(jobs)
    compact.register(jobs)
    convert.register(jobs)
    parser.set_defaults(handler=lambda _args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2
