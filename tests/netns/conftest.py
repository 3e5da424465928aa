"""Fixtures of the network namespace tests: the tools checked, leftovers swept, one network per test."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from tests.netns.hosts import FAMILY, Network, network, require_tools, sweep_leftovers, sweep_own

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture(name="faketime", scope="session")
def _faketime() -> Iterator[str]:
    """The path of libfaketime, once root, ip and iptables are known to be there; sweeps leftovers.

    Before the session: namespaces of earlier runs whose pytest died. After it: any of this
    run's that a test's own teardown missed.
    """
    path = require_tools()
    sweep_leftovers()
    yield path
    sweep_own(f"{FAMILY}{os.getpid()}-")


@pytest.fixture(name="net3")
def _net3(faketime: str, tmp_path: Path) -> Iterator[Network]:
    """Three hosts on one bridge, torn down after the test whatever happens."""
    with network(3, tmp_path, faketime) as net:
        yield net
