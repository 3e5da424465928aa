"""``promtool check metrics`` on a real scrape of an agent's /metrics (issue 14, part 1).

promtool is Prometheus' own linter (Debian's ``prometheus`` package brings it): it parses the
text a real HTTP scrape returns and checks names, types, units and help texts. Missing, the
tests fail under CI (``CI=true``) and skip elsewhere, as for the MariaDB server.
"""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import urllib.request
from typing import TYPE_CHECKING

import pytest

from grstats.agent.metrics_scope import ALL, MetricsConfig
from tests.agent.test_metrics import MEMBER_SERIES
from tests.agent.test_metrics_series import GROUP_SERIES
from tests.agent.test_runtime import _start_without_loop, start_group, stop_all
from tests.programs import require

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.agent.test_runtime import Group


@pytest.fixture(name="promtool")
def _promtool() -> str:
    """The promtool program, or a failure (CI) or skip (elsewhere) saying how to get it."""
    return require("promtool", "prometheus")


@pytest.fixture(name="group")
async def _group() -> AsyncIterator[Group]:
    """Three agents over gRPC; the last serves every series' /metrics on a free port."""
    group = await start_group(3, started=2)
    last = group.agents[-1]
    last.config = dataclasses.replace(
        last.config, metrics_listen="127.0.0.1:0", metrics=MetricsConfig(scope=ALL)
    )
    await _start_without_loop(last)
    addresses = tuple(agent.address for agent in group.agents)
    for agent in group.agents:
        agent.config = dataclasses.replace(agent.config, peers=addresses)
    yield group
    await stop_all(group)


def check(promtool: str, text: bytes) -> subprocess.CompletedProcess[str]:
    """Run ``promtool check metrics`` on ``text``."""
    return subprocess.run(
        [promtool, "check", "metrics"],
        input=text.decode("utf-8"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_a_real_scrape_passes_promtool(group: Group, promtool: str) -> None:
    """GET /metrics over HTTP after some gossip: promtool finds nothing to say about it."""
    await group.rounds(3)
    group.transports[2].broken.add(group.agents[0].address)  # failures and their counters too
    await group.rounds(1)
    address = group.agents[-1].metrics_address

    def get() -> tuple[str, bytes]:
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as answer:
            return str(answer.headers["Content-Type"]), answer.read()

    content_type, text = await asyncio.to_thread(get)
    assert content_type.startswith("text/plain; version=0.0.4")
    body = text.decode("utf-8")
    for name in MEMBER_SERIES | GROUP_SERIES:
        assert f"\n{name}" in body, name  # every family is linted with its samples
    for name in ("grstats_build_info", "grstats_source_up", "grstats_peers_heard"):
        assert f"\n{name} " in body or f"\n{name}{{" in body, name
    done = check(promtool, text)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_promtool_finds_what_is_wrong(promtool: str) -> None:
    """The check can fail: a counter without _total and a series without help are reported."""
    done = check(promtool, b"# HELP foo a counter\n# TYPE foo counter\nfoo 1\nbar 2\n")
    assert done.returncode != 0
    assert '"_total" suffix' in done.stdout + done.stderr
