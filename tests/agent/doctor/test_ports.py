"""The doctor's port lines: free, held by another program, held by this agent or another one."""

from __future__ import annotations

import dataclasses
import socket
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import pytest

from grstats.agent.doctor.checklist import FAILED, OK, SKIPPED
from grstats.agent.doctor.ports import check_ports
from grstats.agent.runtime import Agent
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.simulated import SimulatedSource
from grstats.cli.demo import free_ports
from grstats.core.security import Security
from tests.agent.test_runtime import settings

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from grstats.agent.config import AgentConfig
    from grstats.agent.doctor import Check


def ports_config() -> AgentConfig:
    """A config with listen, metrics_listen and sql_listen on free ports of 127.0.0.1."""
    listen, metrics, sql = free_ports(3)
    return settings(
        listen=f"127.0.0.1:{listen}",
        metrics_listen=f"127.0.0.1:{metrics}",
        sql_listen=f"127.0.0.1:{sql}",
    )


async def port_lines(config: AgentConfig) -> dict[str, Check]:
    """The doctor's port lines for ``config``, by name."""
    return {check.name: check for check in await check_ports(config, Security(), timeout_s=2)}


@pytest.fixture(name="holder")
def _holder() -> Iterator[socket.socket]:
    """A plain listening socket on a free port of 127.0.0.1: another program."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(4)
        yield sock


@asynccontextmanager
async def running(config: AgentConfig) -> AsyncIterator[Agent]:
    """An agent serving with ``config`` (gRPC, /metrics and SQL), no loop; stopped after."""
    source = SimulatedSource(load_scenario("steady").with_members(3), 0, 1, 0.0)
    agent = Agent(config, source)
    await agent.start()
    assert agent._task is not None
    agent._task.cancel()
    try:
        yield agent
    finally:
        await agent.stop(grace_s=0)


class TestFree:
    async def test_free_ports_pass(self) -> None:
        """Ports nothing holds pass, each line naming its key."""
        config = ports_config()
        lines = await port_lines(config)
        assert {name: line.status for name, line in lines.items()} == {
            "port.listen": OK,
            "port.metrics_listen": OK,
            "port.sql_listen": OK,
        }
        assert lines["port.listen"].message == f"listen {config.listen} is free"

    async def test_port_zero_is_skipped(self) -> None:
        """Port 0 takes any free port: nothing to check."""
        lines = await port_lines(settings(listen="127.0.0.1:0"))
        assert lines["port.listen"].status == SKIPPED

    async def test_shared_port_fails(self) -> None:
        """Two settings on one port fail: the agent cannot bind both."""
        (port,) = free_ports(1)
        config = settings(listen=f"127.0.0.1:{port}", metrics_listen=f"0.0.0.0:{port}")
        line = (await port_lines(config))["port.shared"]
        assert line.status == FAILED
        assert line.message == (
            f"listen 127.0.0.1:{port} and metrics_listen 0.0.0.0:{port} are the same port"
        )

    async def test_not_an_address_of_this_host(self) -> None:
        """An address of another host (TEST-NET-1) cannot be bound."""
        line = (await port_lines(settings(metrics_listen="192.0.2.1:9474")))["port.metrics_listen"]
        assert line.status == FAILED
        assert "192.0.2.1 is not an address of this host" in line.message


class TestTaken:
    async def test_held_by_another_program(self, holder: socket.socket) -> None:
        """A listen port held by a plain socket fails: stop it or choose another listen."""
        port = holder.getsockname()[1]
        line = (await port_lines(settings(listen=f"127.0.0.1:{port}")))["port.listen"]
        assert line.status == FAILED
        assert line.message.startswith(
            f"listen 127.0.0.1:{port}: port {port} is in use by another program ("
        )
        assert line.fix == "stop it or choose another listen"

    async def test_metrics_port_of_another_program(self, holder: socket.socket) -> None:
        """A metrics port held by a socket that speaks no HTTP fails."""
        port = holder.getsockname()[1]
        config = dataclasses.replace(ports_config(), metrics_listen=f"127.0.0.1:{port}")
        line = (await port_lines(config))["port.metrics_listen"]
        assert line.status == FAILED
        assert f"port {port} is in use by another program" in line.message

    async def test_held_by_this_agent(self) -> None:
        """The ports of an agent running with the same config are held by this agent."""
        config = ports_config()
        async with running(config):
            lines = await port_lines(config)
        assert {name: line.status for name, line in lines.items()} == {
            "port.listen": OK,
            "port.metrics_listen": OK,
            "port.sql_listen": OK,
        }
        assert lines["port.listen"].message == (
            f"listen {config.listen} is held by this agent (it answers as {config.listen})"
        )
        assert (
            lines["port.sql_listen"].message
            == f"sql_listen {config.sql_listen} is held by this agent"
        )

    async def test_held_by_another_agent(self) -> None:
        """The same ports held by an agent that advertises another address fail."""
        config = ports_config()
        async with running(dataclasses.replace(config, advertise="127.0.0.1:7999")):
            lines = await port_lines(config)
        assert {name: line.status for name, line in lines.items()} == {
            "port.listen": FAILED,
            "port.metrics_listen": FAILED,
            "port.sql_listen": FAILED,
        }
        assert "held by another grstats agent, which answers as 127.0.0.1:7999" in (
            lines["port.listen"].message
        )
        assert "held by a grstats agent, but not by this one" in lines["port.sql_listen"].message
