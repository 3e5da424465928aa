"""An agent's memory under steady client reads: what Python holds does not grow with the reads.

Issue 43, point 7. The probe (tests/agent/soak_memory_probe.py) runs in a process of its own,
so that tracemalloc counts the agent's allocations and not those of a test worker. The RSS
slope of agent processes over minutes is tests/benchmarks/bench_soak.py's (docs/benchmarks.md,
"Soak"): RSS is too noisy on a shared machine for a test, tracemalloc's traced bytes are not.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Reads before tracemalloc starts: the lazily built caches and the first trim fill first.
WARM_READS = 400
#: Traced reads; the growth is measured over the second half of them.
READS = 400
#: The most the agent's traced memory may grow per read, bytes. Measured on a 2-core machine:
#: 56 bytes a read here (reads 600-800), 88-91 over reads 900-1200, 23 over reads 2250-3000 for
#: SQL alone (bounded things still filling); 1,477 with each gRPC answer kept (docs/benchmarks.md,
#: "Soak").
MAX_GROWTH_PER_READ_BYTES = 256


def test_memory_an_agent_holds_does_not_grow_with_reads() -> None:
    """Reads over gRPC (kept and new channels), SQL (kept and new connections) and /metrics."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.agent.soak_memory_probe", str(WARM_READS), str(READS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["reads"] == READS
    where = json.dumps(found["grew_most"], indent=1)
    assert found["growth_per_read_bytes"] < MAX_GROWTH_PER_READ_BYTES, where
