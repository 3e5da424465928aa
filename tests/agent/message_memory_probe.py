"""One agent given a flood of large messages, in a process of its own: ``python -m``.

``python -m tests.agent.message_memory_probe COPIES`` starts one agent (the test group of
tests/agent/test_runtime.py, on 127.0.0.1), lets ``tests.agent.gossip_flood`` send it
``COPIES`` of each large message from another process, and prints one JSON object: the
longest the agent's event loop went without running a 10 ms ticker during the flood
(``longest_gap_s``), the calls' statuses (``answers``), this process's RSS before the flood
(``idle_mb``), its peak during it (``peak_mb``) and the lowest within ``RETURN_S`` after it
(``after_mb``, sampled each 0.2 s until it is back within ``MARGIN_MB``), on the last line of
standard output (the agent logs before it). A process of its own so that the RSS is the agent's,
not that of a test worker that ran thousands of tests before.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import json
import subprocess
import sys
import time
from pathlib import Path

from grstats.agent import server
from tests.agent.test_runtime import start_group, stop_all

ROOT = Path(__file__).resolve().parents[2]
#: How long the memory may take to come back after the flood, seconds.
RETURN_S = 30.0
#: How close to the idle RSS it must come, MB.
MARGIN_MB = 20.0


def rss_mb() -> float:
    """This process's resident set, in MB."""
    return int(Path("/proc/self/statm").read_text(encoding="ascii").split()[1]) * 4096 / 1e6


class _Gaps:
    """A 10 ms ticker: the longest the event loop went without running it, and the peak RSS."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.peak_mb = 0.0

    async def run(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            self.longest = max(self.longest, now - last)
            self.peak_mb = max(self.peak_mb, rss_mb())
            last = now


async def probe(copies: int) -> dict[str, object]:
    """Flood one agent with ``copies`` of each large message; what its loop and RSS did."""
    server.TRIM_EVERY_S = 0.1  # the agent's trims, sooner than in production (5 s)
    group = await start_group(1)
    try:
        await group.rounds(1)
        gc.collect()
        ctypes.CDLL(None).malloc_trim(0)
        idle = rss_mb()
        gaps = _Gaps()
        ticker = asyncio.create_task(gaps.run())
        sender = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.agent.gossip_flood",
            group.agents[0].address,
            str(copies),
            cwd=ROOT,
            stdout=subprocess.PIPE,
        )
        out, _ = await sender.communicate()
        ticker.cancel()
        flooded = rss_mb()
        after, waited = flooded, 0.0
        started = time.monotonic()
        while after >= idle + MARGIN_MB and waited < RETURN_S:
            await asyncio.sleep(0.2)
            after, waited = min(after, rss_mb()), time.monotonic() - started
        return {
            "longest_gap_s": gaps.longest,
            "answers": json.loads(out),
            "idle_mb": idle,
            "peak_mb": gaps.peak_mb,
            "flooded_mb": flooded,
            "after_mb": after,
            "returned_after_s": waited,
        }
    finally:
        await stop_all(group)


if __name__ == "__main__":
    print(json.dumps(asyncio.run(probe(int(sys.argv[1])))))
