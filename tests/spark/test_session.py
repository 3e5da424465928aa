"""spark.session: the settings every grstats job runs with."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

from grstats.spark.session import LOG4J2_PROPERTIES, build_session, is_local, session_conf


class TestSessionConf:
    @pytest.mark.parametrize("master", ["local", "local[2]", "local[*]"])
    def test_local_masters_run_workers_with_this_interpreter(self, master: str) -> None:
        """In local mode the UI is off and the driver binds to the loopback address."""
        conf = session_conf(master, "app")
        assert is_local(master)
        assert conf["spark.ui.enabled"] == "false"
        assert conf["spark.driver.host"] == "127.0.0.1"

    def test_cluster_masters_keep_the_cluster_choices(self) -> None:
        """On a cluster grstats does not pick the executors' Python, UI or partitions."""
        conf = session_conf("spark://10.0.0.1:7077", "app")
        assert not is_local("spark://10.0.0.1:7077")
        assert not {
            "spark.ui.enabled",
            "spark.pyspark.python",
            "spark.sql.shuffle.partitions",
            "spark.python.daemon.module",
        } & set(conf)
        assert conf["spark.sql.session.timeZone"] == "UTC"

    def test_under_spark_submit_the_master_is_spark_submits(self) -> None:
        """With no master (spark-submit chose it) only the job's own settings are set."""
        conf = session_conf(None, "app")
        assert "spark.master" not in conf
        assert "spark.driver.extraJavaOptions" not in conf
        assert conf["spark.sql.session.timeZone"] == "UTC"

    def test_python_work_compiles_the_jvm_with_c1_alone(self) -> None:
        """A job whose work runs in Python (ingest) leaves the CPUs to it; others keep C2."""
        ingest = session_conf("local[2]", "app", python_work=True)["spark.driver.extraJavaOptions"]
        report = session_conf("local[2]", "app")["spark.driver.extraJavaOptions"]
        assert "-XX:TieredStopAtLevel=1" in ingest
        assert "-XX:TieredStopAtLevel=1" not in report
        assert "-XX:+UseParallelGC" in ingest

    def test_the_log_configuration_ships_with_the_package(self) -> None:
        """The driver JVM is pointed at a log4j2 file that exists and logs warnings only."""
        options = session_conf("local", "app")["spark.driver.extraJavaOptions"]
        assert LOG4J2_PROPERTIES.as_uri() in options
        assert "rootLogger.level = warn" in LOG4J2_PROPERTIES.read_text()


@pytest.mark.spark
def test_the_shared_session_runs_in_utc(spark: SparkSession) -> None:
    """The session the tests share computes dates in UTC, whatever the machine's zone."""
    row = spark.sql("SELECT to_date(timestamp_micros(86399999999)) AS d").first()
    assert row is not None
    assert str(row["d"]) == "1970-01-01"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert build_session("local[2]") is spark


@pytest.mark.spark
def test_python_workers_run_this_interpreter(spark: SparkSession) -> None:
    """Python code shipped to local workers runs with the interpreter that runs the tests."""
    found = spark.sparkContext.parallelize([0], 1).map(lambda _: sys.executable).collect()
    assert found == [sys.executable]


@pytest.mark.spark
def test_local_workers_import_the_installed_pyspark_not_its_zip(spark: SparkSession) -> None:
    """Local workers load pyspark's compiled package, not the zip Spark puts first on the path."""

    # Nested, so that Spark's pickler ships it by value: pytest may give this module a name
    # that the workers cannot import (the name of the checkout's directory comes first).
    def pyspark_file(_: object) -> str:
        import pyspark  # noqa: PLC0415 (the worker's own pyspark)

        return str(pyspark.__file__)

    found = spark.sparkContext.parallelize([0], 1).map(pyspark_file).collect()
    assert spark.conf.get("spark.python.daemon.module") == "grstats.spark.worker_daemon"
    assert ".zip" not in found[0]
    assert Path(found[0]).is_file()
