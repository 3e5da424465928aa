"""What the light parts load: no MySQL driver for the gossip core, the agent command, the records or Spark's stage."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "grstats.agent.gossip",
        "grstats.agent.cli.agent",
        "grstats.collector.records",
        "grstats.spark.stage",
    ],
)
def test_no_mysql_driver_is_loaded(module: str) -> None:
    """Importing the module leaves aiomysql and PyMySQL unloaded (they load with MySQLSource)."""
    check = (
        f"import sys, {module}, grstats.agent.sources; "
        "assert not {'aiomysql', 'pymysql'} & set(sys.modules), sorted(sys.modules); "
        "grstats.agent.sources.MySQLSource; assert 'aiomysql' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", check], check=True, timeout=60, capture_output=True)
