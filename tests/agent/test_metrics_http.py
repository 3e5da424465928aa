"""/metrics over HTTP: the text format, gzip, and one rendering per build of the series."""

from __future__ import annotations

import asyncio
import gzip
import time
import urllib.request
from typing import TYPE_CHECKING

import pytest
from prometheus_client import generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from grstats.agent.metrics import TablesCollector
from grstats.agent.metrics_http import (
    Exposition,
    render_text,
    serve_metrics,
    start_metrics_server,
)
from grstats.agent.runtime import Agent
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.transports import MemoryNetwork
from grstats.core.errors import ConfigError
from tests.agent.test_metrics_health import lone_agent
from tests.agent.test_runtime import settings

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


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


async def test_rendered_ahead_while_scraped_and_served_without_the_loop(agent: Agent) -> None:
    """Prepare renders only once scraped; its bytes hold for valid_s whatever changed, then not."""
    version = [1]
    tables = TablesCollector(agent._series_input, lambda: version[0], asyncio.get_running_loop())
    assert agent.metrics.tables is not None
    agent.metrics.registry.unregister(agent.metrics.tables)
    agent.metrics.registry.register(tables)
    agent.metrics.tables = tables
    exposition = Exposition(agent.metrics)
    agent.metrics.prepare(valid_s=60)  # nobody scraped yet: nothing rendered
    assert (exposition.renders, tables.builds) == (0, 0)
    await asyncio.to_thread(exposition.render)
    version[0] = 2
    agent.metrics.prepare(valid_s=60)  # on the loop, as the agent does mid-period
    assert (exposition.renders, tables.builds) == (2, 2)
    version[0] = 3  # the state changed since: the prepared bytes still hold
    ahead = await asyncio.to_thread(exposition.render)
    assert await asyncio.to_thread(exposition.render) is ahead
    assert (exposition.renders, tables.builds) == (2, 2)
    agent.metrics.prepare(valid_s=0.05)
    await asyncio.sleep(0.1)  # past valid_s: the next scrape builds for itself
    version[0] = 4
    await asyncio.to_thread(exposition.render)
    assert (exposition.renders, tables.builds) == (4, 4)


def metrics_agent(members: int) -> Agent:
    """An agent of a simulated group of ``members`` (member 0) serving /metrics on a free port.

    Its loop runs at a 1 s period once started; it alone is on its in-memory network.
    """
    address = "agent-0:7400"
    source = SimulatedSource(
        load_scenario("steady").with_members(members), 0, seed=1, group_start_s=time.time() - 10
    )
    config = settings(
        advertise=address,
        peers=(address,),
        period_s=1.0,
        rpc_timeout_s=0.5,
        metrics_listen="127.0.0.1:0",
    )
    return Agent(config, source, transport=MemoryNetwork().transport(address))


async def test_the_agent_renders_ahead_mid_period() -> None:
    """A running agent serving /metrics renders it once a period after a first scrape, not before."""
    agent = metrics_agent(3)
    await agent.start()
    try:
        exposition = agent.metrics.exposition
        assert isinstance(exposition, Exposition)
        assert agent.metrics_address is not None
        await asyncio.sleep(1.2)  # a mid-period passed
        assert exposition.renders == 0  # nobody scraped: nothing rendered ahead
        await asyncio.to_thread(get, agent.metrics_address)
        scraped = exposition.renders
        await asyncio.sleep(3.0)  # 3 mid-periods, no scrape
        assert exposition.renders >= scraped + 2
    finally:
        await agent.stop(grace_s=0)


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
