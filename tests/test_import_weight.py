"""What the light parts load: no MySQL driver for the gossip core, the agent command, the records or Spark's stage; no SQL engine for the agent command."""

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


def test_the_agent_command_loads_no_sql_engine() -> None:
    """Importing the agent command leaves mysql-mimic and sqlglot unloaded (they load with sql_listen)."""
    check = (
        "import sys, grstats.agent.cli.agent; "
        "assert not {'mysql_mimic', 'sqlglot'} & set(sys.modules), sorted(sys.modules); "
        "import grstats.agent.sql; assert {'mysql_mimic', 'sqlglot'} <= set(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", check], check=True, timeout=60, capture_output=True)
