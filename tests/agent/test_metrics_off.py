"""An agent given ``NoMetrics``: it runs and counts nothing, and refuses to serve /metrics."""

from __future__ import annotations

import time

import pytest

from grstats.agent.metrics_off import NoMetrics
from grstats.agent.runtime import Agent
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.transports import MemoryNetwork
from grstats.core.errors import ConfigError
from tests.agent.test_runtime import settings

ADDRESS = "agent-0:7400"


def quiet_agent(metrics_listen: str | None = None) -> Agent:
    """Member 0 of a simulated group of 3, alone on its in-memory network, given NoMetrics."""
    source = SimulatedSource(load_scenario("steady"), 0, seed=1, group_start_s=time.time() - 10)
    config = settings(advertise=ADDRESS, peers=(ADDRESS,), metrics_listen=metrics_listen)
    transport = MemoryNetwork().transport(ADDRESS)
    return Agent(config, source, transport=transport, figures=NoMetrics())


async def test_an_agent_given_no_metrics_reads_and_serves_its_member() -> None:
    """Its periods read the member and serve its row; it has no AgentMetrics to hand out."""
    agent = quiet_agent()
    await agent.start()
    try:
        await agent.run_period()
        _, rows = agent.tables(extended=False)["replication_group_members"]
        assert agent.member_id
        assert agent.member_id in {row[1] for row in rows}
        with pytest.raises(TypeError, match="figures: the agent counts with a NoMetrics"):
            _ = agent.metrics
    finally:
        await agent.stop(grace_s=0)


async def test_an_agent_given_no_metrics_refuses_metrics_listen() -> None:
    """With metrics_listen set, start raises a ConfigError naming the key and its value."""
    agent = quiet_agent(metrics_listen="127.0.0.1:0")
    with pytest.raises(ConfigError, match=r"metrics_listen: '127\.0\.0\.1:0' needs the agent's"):
        await agent.start()
