"""kill -9 at random moments: sealed segments stay whole, a restart resumes, no synced record is lost."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from itertools import islice
from pathlib import Path

import pytest

from grstats.collector.spool import (
    MAGIC,
    SpoolWriter,
    parse_segment_name,
    read_records,
    read_segment,
    scan,
    sealed_segments,
)

APPENDER = Path(__file__).with_name("appender.py")
ROOT = Path(__file__).parents[2]


def start_appender(spool: Path) -> subprocess.Popen[str]:
    """The appender process, small segments so that kills also land in rolls and seals."""
    return subprocess.Popen(
        [sys.executable, str(APPENDER), str(spool), "1024"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def first_line(process: subprocess.Popen[str]) -> str:
    """Wait for the appender's first acknowledged record (it has recovered and is writing)."""
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line, process.communicate()[1]
    return line


def indexes_after_kill(spool: Path) -> list[int]:
    """Record numbers on disk after a kill: sealed segments whole, the open one's valid prefix."""
    found = [record["index"] for path in sealed_segments(spool) for record in read_segment(path)]
    opened = sorted(spool.glob("segment-*.open"))
    assert len(opened) <= 1, opened
    for path in opened:
        state = scan(path)
        if state.size >= len(MAGIC):
            assert state.problem is None or state.problem.offset >= len(MAGIC), state
        found += [record["index"] for _, record in islice(read_records(path), state.records)]
    return found


def segment_files(spool: Path) -> dict[int, tuple[bool, bytes]]:
    """Every segment by sequence number: whether it is sealed, and its bytes."""
    files = {}
    for path in spool.glob("segment-*"):
        parsed = parse_segment_name(path.name)
        assert parsed is not None, path
        files[parsed[0]] = (parsed[1], path.read_bytes())
    return files


@pytest.mark.slow
def test_kill_9_at_random_moments(tmp_path: Path) -> None:
    """Eight kills: sealed segments read whole and never change; records stay 0..n-1, none lost."""
    seed = time.time_ns()
    rng = random.Random(seed)  # noqa: S311  (when to kill, not a secret)
    acknowledged = -1
    before: dict[int, tuple[bool, bytes]] = {}
    for round_ in range(8):
        process = start_appender(tmp_path)
        lines = [first_line(process)]
        time.sleep(rng.uniform(0.0, 0.4))
        process.send_signal(signal.SIGKILL)
        out, _ = process.communicate(timeout=10)
        lines += out.splitlines()
        acknowledged = max(acknowledged, *(int(line) for line in lines if line.strip()))
        context = f"seed {seed}, round {round_}"
        found = indexes_after_kill(tmp_path)
        assert found == list(range(len(found))), context  # no duplicate, no gap, in order
        assert found[-1] >= acknowledged, context  # every fsynced record survived
        after = segment_files(tmp_path)
        for sequence, (sealed, data) in before.items():
            if sealed:  # a sealed segment is never written again
                assert after[sequence] == (True, data), context
        new = set(after) - set(before)
        assert min(new, default=max(after)) >= max(before, default=0), context  # numbers grow
        before = after
    SpoolWriter(tmp_path).close()  # a last recovery seals what the last kill left
    assert list(tmp_path.glob("segment-*.open")) == []
    final = [r["index"] for path in sealed_segments(tmp_path) for r in read_segment(path)]
    assert final == list(range(len(final)))
    assert final[-1] >= acknowledged
