"""The one place that builds a SparkSession for grstats's jobs.

Every job runs in UTC (the spool holds UTC microseconds and the table's dates are UTC dates),
logs only warnings, and names itself. On one machine (``local[...]``, the default) it also
keeps Spark small: no web UI, as many shuffle partitions as cores, and Python workers run by
this very interpreter (``$PYSPARK_PYTHON`` unless already set) so that they import this
grstats, through :mod:`grstats.spark.worker_daemon` so that they import pyspark's compiled modules
rather than its zip's sources. On a cluster (``spark://...``,
``yarn``, ``k8s://...``) those choices are the cluster's, and a job started by spark-submit
without ``--master`` keeps spark-submit's master and settings: see ``deploy/spark/submit.sh``.
"""

from __future__ import annotations

import atexit
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from grstats.spark import class_archive as class_archives

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyspark.sql import SparkSession

#: The master used when none is given: every core of this machine.
DEFAULT_MASTER = "local[*]"

#: Set by spark-submit in the environment of the Python driver it starts.
SUBMIT_ENV = "PYSPARK_GATEWAY_PORT"

#: The log4j2 configuration shipped beside this module: warnings only, on stderr.
LOG4J2_PROPERTIES = Path(__file__).with_name("log4j2.properties")


def is_local(master: str) -> bool:
    """Return True when ``master`` runs everything in this process (``local``, ``local[N]``)."""
    return master == "local" or master.startswith("local[")


def session_conf(master: str | None, app_name: str, *, python_work: bool = False) -> dict[str, str]:
    """Return the settings :func:`build_session` applies for ``master``, before overrides.

    ``None`` means spark-submit chose the master: then only the job's own settings are given.
    ``python_work`` says the job's work runs in Python workers (ingest), not in the JVM.
    """
    conf = {
        "spark.app.name": app_name,
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
        # Parquet timestamps as microseconds, the spool's unit (Spark's default is INT96).
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        # Tables are read as lists of the files their commits name (hundreds: one per hourly
        # segment and date); above this many paths Spark lists them with a distributed job,
        # 12 s for a 30-day table's rollups against 0.1 s of stat() calls on the driver
        # (docs/benchmarks.md, "Spark report").
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000",
        # How long the JVM waits for the driver's Python to connect and collect a result
        # (15 s by default). On a loaded 2-core host the report's collect of its partials
        # missed it: "Connection reset by peer" (make test under two busy loops).
        "spark.python.authenticate.socketTimeout": "120s",
    }
    if master is None:
        return conf
    conf["spark.master"] = master
    # Read when the driver's JVM starts, so only when this process starts it.
    java_options = f"-Dlog4j2.configurationFile={LOG4J2_PROPERTIES.as_uri()}"
    if is_local(master):
        # The executors run in this JVM: the throughput collector suits batch jobs, and Spark's
        # sort and window pages are large arrays, which G1 (the default) treats as humongous
        # (docs/benchmarks.md, "Spark report", has the figures).
        java_options += " -XX:+UseParallelGC"
        if python_work:
            # The JVM only schedules tasks and pipes them to Python: its optimizing compiler's
            # threads would only take CPU from the workers, so it compiles with C1 alone
            # (docs/benchmarks.md, "Spark ingest", has the figures).
            java_options += " -XX:TieredStopAtLevel=1"
    conf["spark.driver.extraJavaOptions"] = java_options
    if is_local(master):
        cores = os.cpu_count() or 1
        conf |= {
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": str(max(2, cores)),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            # The Python workers import pyspark's compiled modules, not its zip's sources.
            "spark.python.daemon.module": "grstats.spark.worker_daemon",
        }
    return conf


def build_session(
    master: str | None = None,
    app_name: str = "grstats",
    *,
    conf: Mapping[str, str] | None = None,
    python_work: bool = False,
    class_archive: bool = False,
) -> SparkSession:
    """Return a SparkSession on ``master`` (default ``local[*]``) with grstats's settings.

    ``conf`` overrides any setting; ``python_work`` is :func:`session_conf`'s. When a session
    already runs in this process (tests share one), Spark returns it and the settings that can
    only be set at start-up are left as they were. ``class_archive`` (the commands) maps the
    class-data sharing archive into the driver JVM this starts, or has it written when this
    process exits (:mod:`grstats.spark.class_archive`).
    """
    from pyspark import SparkContext  # noqa: PLC0415 (pyspark is imported only when needed)
    from pyspark.sql import SparkSession  # noqa: PLC0415

    if master is None and SUBMIT_ENV in os.environ:
        # Started by spark-submit: its --master and --conf are already in the JVM's settings.
        settings = session_conf(None, app_name) | dict(conf or {})
        return _get_or_create(SparkSession.builder, settings)
    master = master or DEFAULT_MASTER
    settings = session_conf(master, app_name, python_work=python_work) | dict(conf or {})
    if is_local(master):
        # PySpark starts its Python workers with $PYSPARK_PYTHON (default: python3 on PATH),
        # not with the spark.pyspark.python setting, which only spark-submit reads.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    starts_jvm = SparkContext._gateway is None  # noqa: SLF001 (no JVM yet: this call starts it)
    archive_plan = class_archives.plan() if class_archive and starts_jvm else None
    if archive_plan is not None and archive_plan.options:
        options = settings.get("spark.driver.extraJavaOptions", "")
        settings["spark.driver.extraJavaOptions"] = f"{options} {archive_plan.options}".strip()
    session = _get_or_create(SparkSession.builder, settings)
    if archive_plan is not None and archive_plan.pending is not None:
        # The JVM writes the archive as it exits: at this process's exit, once every session
        # of it is done, end the JVM, wait for it and keep the archive.
        atexit.register(class_archives.finish, archive_plan)
    return session


def _get_or_create(builder: SparkSession.Builder, settings: Mapping[str, str]) -> SparkSession:
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session
