"""The agent's cost of reading a real server: ``MySQLSource.read()`` against MariaDB.

The agent benchmark (``bench_agent.py``) measures the agent's own CPU with a source that
returns a fixed snapshot; beside a real member the agent also reads its server once a period.
This script starts a throwaway MariaDB server (as the tests do) holding the MySQL 8.0.27+
``performance_schema`` look-alike tables of ``tests/agent/sources/fixtures``, reads it through
``MySQLSource`` (the agent's own code: aiomysql, 4 queries, row checks) once per ``--period``
for ``--reads`` reads after a warm-up, and reports this process's CPU time per read
(``time.process_time``: the agent's side only, not the server's) and as a share of one core
at one read per second. Add it to the fixed-snapshot figure to get an agent beside a real member.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
import tempfile
import time
from pathlib import Path

from grstats.agent.sources.mysql import MySQLSource
from grstats.agent.sources.mysql_config import MySQLSourceConfig
from tests.agent.sources.schemas import USER, create_accounts, load_schema
from tests.benchmarks.heading import print_heading
from tests.mariadb import MariaDB, require_server_binaries


async def measure(config: MySQLSourceConfig, reads: int, period_s: float) -> list[float]:
    """Return the CPU seconds of each read, one read per ``period_s``, after 5 warm-up reads."""
    source = MySQLSource(config)
    try:
        for _ in range(5):
            await source.read()
        costs = []
        for _ in range(reads):
            began = time.process_time()
            await source.read()
            costs.append(time.process_time() - began)
            await asyncio.sleep(period_s)
        return costs
    finally:
        await source.aclose()


def main(argv: list[str] | None = None) -> int:
    """Run the measurement and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reads", type=int, default=120, help="reads measured (default 120)")
    parser.add_argument(
        "--period", type=float, default=0.25, help="seconds between reads (default 0.25)"
    )
    args = parser.parse_args(argv)
    print_heading("Reading a real server (MySQLSource against MariaDB)")
    with (
        tempfile.TemporaryDirectory(prefix="grstats-bench-mysql-") as workdir,
        MariaDB.running(require_server_binaries(), Path(workdir) / "db") as server,
    ):
        password = secrets.token_urlsafe(18)
        create_accounts(server, password)
        secret = Path(workdir) / "password"
        secret.write_text(password + "\n", encoding="utf-8")
        secret.chmod(0o600)
        config = MySQLSourceConfig(
            host=server.host,
            port=server.port,
            user=USER,
            password_file=secret,
            schema=load_schema(server, "ps80"),
        )
        costs = asyncio.run(measure(config, args.reads, args.period))
    costs.sort()
    mean_ms = 1000 * sum(costs) / len(costs)
    print("| reads | CPU per read, mean | median | p95 | share of one core at 1 read/s |")
    print("|--:|--:|--:|--:|--:|")
    print(
        f"| {len(costs)} | {mean_ms:.2f} ms | {1000 * costs[len(costs) // 2]:.2f} ms "
        f"| {1000 * costs[int(len(costs) * 0.95)]:.2f} ms | {mean_ms / 10:.2f}% |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
