"""The one local SparkSession every Spark test shares (started once per test run, stopped at the end).

Starting a JVM takes seconds, so the session is session-scoped; tests must not stop it or change
settings that outlive them. Tests that need a different master run ``grstats spark ...`` as a
subprocess against the ``spark_cluster`` fixture: a real standalone cluster (tests/spark/cluster.py),
started once, when a test first asks for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from grstats.spark.session import build_session, session_conf
from tests.spark.cluster import _spark_cluster  # noqa: F401 (the spark_cluster fixture)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyspark.sql import SparkSession


@pytest.fixture(name="spark", scope="session")
def _spark() -> Iterator[SparkSession]:
    # The JVM compiles with C1 alone: the tests' queries are many and small, so C2's compiler
    # threads spent more CPU than they saved (test_figures.py: the JVM's CPU 79 -> 54 s, the
    # same wall time), CPU that the other test worker needs (make test runs two).
    conf = session_conf("local[2]", "grstats-tests")
    options = conf["spark.driver.extraJavaOptions"] + " -XX:TieredStopAtLevel=1"
    session = build_session(
        "local[2]",
        "grstats-tests",
        conf={"spark.sql.shuffle.partitions": "2", "spark.driver.extraJavaOptions": options},
    )
    yield session
    session.stop()
