"""Cost of the simulated source: one agent's share of CPU for a 9-member group at 2,000 tps.

Each agent process steps its own copy of the whole group and reads its member once a period
(1 s), so its cost is the CPU time of stepping one simulated second plus one read. This script
drives ``SimulatedSource`` with a clock it moves by one second per read, measures the process
CPU time over ``--seconds`` simulated seconds (after a warm-up), and reports it as a share of
one core. Target (issue): at most 5% of one core per agent process.

Shapes: single-primary (the primary writes 2,000 tps) and multi-primary (9 writers at 222 tps
each, skewed keys, with conflicts). Run with ``make bench``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from grstats.agent.sim.scenario import Scenario, from_mapping
from grstats.agent.sources.simulated import SimulatedSource

TARGET_PERCENT = 5.0
START = 1_700_000_000.0


def shapes() -> dict[str, Scenario]:
    """The two 9-member groups at 2,000 transactions per second in total."""
    common: dict[str, Any] = {
        "description": "benchmark",
        "members": 9,
        "appliers": {"capacity_tps": 6000},
    }
    return {
        "single-primary, 2,000 tps": from_mapping(
            {"name": "sp", "mode": "single-primary", "workload": {"rate_tps": 2000}, **common}
        ),
        "multi-primary, 9 x 222 tps": from_mapping(
            {
                "name": "mp",
                "mode": "multi-primary",
                "workload": {"rate_tps": 2000 / 9, "key_space": 100000, "skew": 0.7},
                **common,
            }
        ),
    }


class Clock:
    """A clock moved by the benchmark."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


async def cpu_share(scenario: Scenario, seconds: int, warmup: int) -> tuple[float, int]:
    """Return (percent of one core, transactions checked) for ``seconds`` one-second reads."""
    clock = Clock()
    source = SimulatedSource(scenario, member_index=4, seed=1, group_start_s=START, clock=clock)
    for _ in range(warmup):
        clock.now += 1
        await source.read()
    before = time.process_time()
    for _ in range(seconds):
        clock.now += 1
        read = await source.read()
    spent = time.process_time() - before
    await source.aclose()
    return 100 * spent / seconds, read.stats.count_transactions_checked


def main() -> int:
    """Measure each shape and print a markdown table with the target."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--seconds", type=int, default=120, help="simulated seconds measured (default 120)"
    )
    parser.add_argument("--warmup", type=int, default=10, help="simulated seconds before measuring")
    args = parser.parse_args()
    print("| group (9 members) | CPU, % of one core | transactions checked | target <= 5% |")
    print("|---|--:|--:|---|")
    for name, scenario in shapes().items():
        percent, checked = asyncio.run(cpu_share(scenario, args.seconds, args.warmup))
        verdict = "PASS" if percent <= TARGET_PERCENT else "FAIL"
        print(f"| {name} | {percent:.2f} | {checked:,} | {verdict} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
