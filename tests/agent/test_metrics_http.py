"""/metrics over HTTP: the text format, gzip, and one rendering per build of the series."""

from __future__ import annotations

import asyncio
import gzip
import urllib.request
from typing import TYPE_CHECKING

import pytest
from prometheus_client import generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from grstats.agent.errors import ConfigError
from grstats.agent.metrics import TablesCollector
from grstats.agent.metrics_http import (
    Exposition,
    render_text,
    serve_metrics,
    start_metrics_server,
)
from tests.agent.test_metrics_health import lone_agent

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from grstats.agent.runtime import Agent


@pytest.fixture(name="agent")
async def _agent() -> AsyncIterator[Agent]:
    """A lone agent (its peers absent) after one period."""
    agent, _, clock = await lone_agent()
    clock.seconds += 1
    await agent.run_period()
    yield agent
    await agent.stop(grace_s=0)


def get(address: str, **headers: str) -> tuple[dict[str, str], bytes]:
    """GET /metrics at ``address``: the answer's headers and body as sent."""
    request = urllib.request.Request(f"http://{address}/metrics", headers=headers)
    with urllib.request.urlopen(request, timeout=5) as answer:  # noqa: S310  (http, 127.0.0.1)
        return dict(answer.headers.items()), answer.read()


async def test_text_format_plain_and_gzipped(agent: Agent) -> None:
    """Text 0.0.4 whatever is accepted; gzipped on request, the same text; no _created series."""
    server, _, port = serve_metrics(agent.metrics, "127.0.0.1", 0)
    try:
        address = f"127.0.0.1:{port}"
        headers, plain = await asyncio.to_thread(get, address)
        assert headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        assert "Content-Encoding" not in headers
        zipped_headers, zipped = await asyncio.to_thread(
            get, address, Accept="application/openmetrics-text", **{"Accept-Encoding": "gzip"}
        )
        assert zipped_headers["Content-Encoding"] == "gzip"
        assert zipped_headers["Content-Type"] == headers["Content-Type"]
        assert gzip.decompress(zipped) == plain
        assert len(zipped) < len(plain) / 4
        text = plain.decode("utf-8")
        assert "grstats_source_read_errors_total 0.0" in text
        assert "_created" not in text
        assert b'grstats_agent_up{group_name="' in plain
    finally:
        server.shutdown()
        server.server_close()


async def test_rendered_once_per_build(agent: Agent) -> None:
    """Scrapes without a new build get the same bytes; a build (new version) renders again."""
    now, version = [100.0], [1]
    tables = TablesCollector(
        agent._series_input, lambda: version[0], asyncio.get_running_loop(), clock=lambda: now[0]
    )
    assert agent.metrics.tables is not None
    agent.metrics.registry.unregister(agent.metrics.tables)
    agent.metrics.registry.register(tables)
    agent.metrics.tables = tables
    exposition = Exposition(agent.metrics)
    first = await asyncio.to_thread(exposition.render)
    agent.metrics.failed("db9:7400", "push")  # an own counter moves; the build does not
    assert await asyncio.to_thread(exposition.render) is first
    assert await asyncio.to_thread(exposition.render, gzipped=True) is not first
    assert (exposition.renders, tables.builds) == (1, 1)
    version[0] = 2
    second = await asyncio.to_thread(exposition.render)
    assert b'grstats_gossip_errors_total{kind="push",peer="db9:7400"} 1.0' in second
    assert (exposition.renders, tables.builds) == (2, 2)


async def test_the_text_is_prometheus_clients_own(agent: Agent) -> None:
    """render_text writes what generate_latest writes, but the *_created series."""
    families = list(agent.metrics.registry.collect())
    theirs = generate_latest(agent.metrics.registry).decode("utf-8")
    kept = [
        block
        for block in theirs.split("# HELP ")
        if block and not block.split(" ", 1)[0].endswith("_created")
    ]
    assert render_text(families).decode("utf-8") == "".join(f"# HELP {b}" for b in kept)
    assert "_created" in theirs  # there was something to leave out


def test_escaping_of_help_and_label_values() -> None:
    """Backslashes, quotes and newlines are escaped as the text format wants, like the client."""
    odd = GaugeMetricFamily("grstats_odd", 'a \\ "help"\nline', labels=("a",))
    odd.add_metric(['back\\slash "quoted"\nnew'], 1.5)
    many = CounterMetricFamily("grstats_many", "plain", labels=())
    many.add_metric([], 12345678.0)

    class Registry:
        def collect(self) -> list[GaugeMetricFamily | CounterMetricFamily]:
            return [odd, many]

    assert render_text(Registry().collect()) == generate_latest(Registry())


def test_a_port_in_use_names_metrics_listen() -> None:
    """An address that cannot be bound is a ConfigError naming metrics_listen and the address."""
    from grstats.agent.metrics import AgentMetrics  # noqa: PLC0415  (only this test needs it)

    server, _ = start_metrics_server(AgentMetrics(), "127.0.0.1:0")
    try:
        taken = f"127.0.0.1:{server.server_port}"
        with pytest.raises(ConfigError, match=rf"^metrics_listen: cannot bind {taken}: "):
            start_metrics_server(AgentMetrics(), taken)
    finally:
        server.server_close()
