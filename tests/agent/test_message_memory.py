"""Large gossip messages from one host: the agent keeps its period, and gives the memory back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grstats.agent.limits import ByteBudget, LimitsConfig
from grstats.core.errors import ConfigError
from tests.agent.message_memory_probe import MARGIN_MB

ROOT = Path(__file__).resolve().parents[2]


def test_large_messages_keep_the_period_and_memory_returns() -> None:
    """8 x (15 MiB, GTID texts of 3 MiB and 192 KiB) from one host: no stall of 0.5 s, RSS back within 20 MB."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.agent.message_memory_probe", "8"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    answers: list[str] = seen["answers"]
    assert seen["longest_gap_s"] < 0.5, seen
    assert any(a.startswith("RESOURCE_EXHAUSTED") for a in answers)
    assert any(a.startswith("INVALID_ARGUMENT") and "gtid_executed" in a for a in answers)
    assert "OK" in answers
    # The flood took memory (70-110 MB over idle at its peak here), and the agent's trims
    # (every TRIM_EVERY_S) hand it back: measured in a process of its own, as a test worker's
    # RSS after thousands of tests moved by tens of MB on its own.
    assert seen["peak_mb"] > seen["idle_mb"] + MARGIN_MB, seen
    assert seen["after_mb"] < seen["idle_mb"] + MARGIN_MB, seen


def test_bytes_in_flight_are_counted_per_host_and_given_back() -> None:
    """One host's connections share its budget, other hosts have their own, and bytes given back free it."""
    budget = ByteBudget(100)
    assert budget.take("ipv4:10.0.0.1:5000", 60)
    assert not budget.take("ipv4:10.0.0.1:5001", 41)  # the same host on another connection
    assert budget.take("ipv4:10.0.0.2:5000", 100)
    budget.give("ipv4:10.0.0.1:5000", 60)
    assert budget.held("ipv4:10.0.0.1:9") == 0
    assert budget.take("ipv4:10.0.0.1:5001", 100)


def test_bytes_in_flight_hold_at_least_one_message() -> None:
    """gossip_bytes_in_flight below max_message_bytes is refused, naming the key and its range."""
    with pytest.raises(
        ConfigError, match=r"limits\.gossip_bytes_in_flight: 1000 is not in 4194304\.\."
    ):
        LimitsConfig(gossip_bytes_in_flight=1000)
