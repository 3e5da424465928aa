"""The doctor starts the servers of the free ports as the agent would, and a server that does not start fails."""

from __future__ import annotations

import socket
import sys
from importlib.metadata import files
from typing import TYPE_CHECKING

import pytest

from grstats.agent.doctor.checklist import FAILED, OK
from grstats.agent.doctor.ports import check_ports
from grstats.agent.doctor.start import start_listeners
from grstats.cli.demo import free_ports
from grstats.core.security import Security
from tests.agent.test_runtime import settings

if TYPE_CHECKING:
    from collections.abc import Iterator

    from grstats.agent.config import AgentConfig
    from grstats.agent.doctor import Check


async def port_lines(config: AgentConfig) -> dict[str, Check]:
    """The doctor's port lines for ``config``, by name."""
    return {check.name: check for check in await check_ports(config, Security(), timeout_s=2)}


def ports_config() -> AgentConfig:
    """A config with listen, metrics_listen and sql_listen on free ports of 127.0.0.1."""
    listen, metrics, sql = free_ports(3)
    return settings(
        listen=f"127.0.0.1:{listen}",
        metrics_listen=f"127.0.0.1:{metrics}",
        sql_listen=f"127.0.0.1:{sql}",
    )


def bindable(address: str) -> bool:
    """Whether a listening socket can take ``address`` (host:port) now."""
    host, _, port = address.rpartition(":")
    with socket.socket() as sock:
        try:
            sock.bind((host, int(port)))
            sock.listen(1)
        except OSError:
            return False
    return True


def mypyc_module() -> str:
    """The name of mysql-mimic's shared mypyc module (a hash of its build), from its files."""
    (name,) = {
        path.name.split(".")[0]
        for path in files("mysql-mimic") or []
        if len(path.parts) == 1 and path.name.split(".")[0].endswith("__mypyc")
    }
    return name


@pytest.fixture(name="without_mypyc_module")
def _without_mypyc_module() -> Iterator[str]:
    """mysql-mimic as a frozen build that lacks its mypyc module has it: it does not import."""
    saved = dict(sys.modules)
    for name in list(sys.modules):
        if name.startswith(("mysql_mimic", "grstats.agent.sql")):
            del sys.modules[name]
    missing = mypyc_module()
    sys.modules[missing] = None  # type: ignore[assignment]  # its import fails, as in the bundle
    try:
        yield missing
    finally:
        sys.modules.clear()
        sys.modules.update(saved)


async def test_every_server_starts_and_is_stopped_again() -> None:
    """The gRPC, /metrics and SQL servers start on free ports, and the ports are free after."""
    config = ports_config()
    failures = await start_listeners(config, Security(), ("listen", "metrics_listen", "sql_listen"))
    assert failures == {}
    addresses = (config.listen, config.metrics_listen, config.sql_listen)
    assert [bindable(address) for address in addresses if address] == [True, True, True]


async def test_sql_listen_on_listens_port_under_another_name_fails() -> None:
    """sql_listen localhost:P beside listen 127.0.0.1:P: each bind alone passes, the SQL endpoint does not start."""
    (port,) = free_ports(1)
    config = settings(listen=f"127.0.0.1:{port}", sql_listen=f"localhost:{port}")
    lines = await port_lines(config)
    assert lines["port.listen"].status == OK
    line = lines["port.sql_listen"]
    assert line.status == FAILED
    assert line.message.startswith(
        f"sql_listen localhost:{port} is free, but the agent's server does not start there: "
        f"cannot bind localhost:{port}: "
    ), line.message
    assert "address already in use" in line.message.lower()
    assert line.fix == "stop what holds that port, or choose another sql_listen"
    assert bindable(f"127.0.0.1:{port}")


async def test_sql_endpoint_without_its_compiled_module_fails(without_mypyc_module: str) -> None:
    """A build lacking mysql-mimic's mypyc module fails sql_listen, naming the module; the other ports pass."""
    lines = await port_lines(ports_config())
    assert lines["port.listen"].status == OK
    assert lines["port.metrics_listen"].status == OK
    line = lines["port.sql_listen"]
    assert line.status == FAILED
    assert without_mypyc_module in line.message
    assert "ModuleNotFoundError" in line.message
    assert line.fix.startswith("reinstall grstats: this installation lacks a module sql_listen")
