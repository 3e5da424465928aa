"""The doctor starts the agent's listeners that are free, as the agent starts them, then stops them.

A port the doctor's own bind found free may still not serve: the agent's server binds every
address a host name resolves to (not one), two settings naming one port by different host
names clash only once both are bound, a TLS key may not load, and the SQL endpoint needs
mysql-mimic (a compiled module a frozen build can lack). So :func:`start_listeners` builds
each server the agent would build, in the agent's order (gRPC, ``/metrics``, SQL; as
:meth:`grstats.agent.runtime.Agent.start`), holds all of them until the last has started,
then stops them all; what failed to start is what the agent would stop on.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import TYPE_CHECKING

import grpc

from grstats.agent.metrics import AgentMetrics
from grstats.agent.metrics_http import start_metrics_server
from grstats.core.errors import ConfigError
from grstats.core.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

    from grstats.agent.config import AgentConfig
    from grstats.agent.served import Table
    from grstats.agent.sql.session import SqlIdentity
    from grstats.core.security import Security

#: The listeners in the order the agent starts them.
ORDER = ("listen", "metrics_listen", "sql_listen")


async def start_listeners(
    config: AgentConfig, security: Security, keys: Collection[str]
) -> dict[str, str]:
    """Start the listeners ``keys`` names as the agent does, all at once, then stop them.

    Returns:
        Why each listener that did not start failed, by key (empty when all started).
    """
    failures: dict[str, str] = {}
    async with contextlib.AsyncExitStack() as started:
        for key in ORDER:
            if key not in keys:
                continue
            try:
                await _START[key](config, security, started)
            except Exception as exc:  # noqa: BLE001  (whatever stops the agent's start is the finding)
                failures[key] = _reason(key, exc)
    return failures


def _reason(key: str, exc: BaseException) -> str:
    """What went wrong, without the key a ConfigError's message starts with."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, ConfigError) and text.startswith(f"{key}: "):
        return text.removeprefix(f"{key}: ")
    if isinstance(exc, ImportError):
        return f"{type(exc).__name__}: {text}"
    return text


async def _start_grpc(
    config: AgentConfig, security: Security, started: contextlib.AsyncExitStack
) -> None:
    """The gRPC server on ``listen``, with the agent's options and credentials."""
    server = grpc.aio.server(options=config.limits.channel_options)
    try:
        security.bind(server, config.listen)
    except RuntimeError as exc:
        raise ConfigError(f"listen: cannot bind {config.listen}: {exc}") from exc
    await server.start()
    started.push_async_callback(server.stop, 0)


async def _start_metrics(
    config: AgentConfig, _security: Security, started: contextlib.AsyncExitStack
) -> None:
    """The ``/metrics`` server on ``metrics_listen``."""
    assert config.metrics_listen is not None
    server, _ = start_metrics_server(AgentMetrics(), config.metrics_listen)

    async def stop() -> None:
        await asyncio.to_thread(server.shutdown)
        server.server_close()

    started.push_async_callback(stop)


async def _start_sql(
    config: AgentConfig, _security: Security, started: contextlib.AsyncExitStack
) -> None:
    """The MySQL-protocol endpoint on ``sql_listen``, serving no tables while it runs."""
    # Imported here, as the agent does: mysql-mimic and sqlglot load only for sql_listen.
    from grstats.agent.sql import SqlEndpoint  # noqa: PLC0415
    from grstats.agent.sql.session import SqlIdentity  # noqa: PLC0415

    class NoTables:
        """What the doctor's endpoint reads: nothing (no client is expected in its moment)."""

        def tables(self, extended: bool) -> Mapping[str, Table]:  # noqa: ARG002  (the protocol's parameter)
            """No table."""
            return {}

        @property
        def sql_identity(self) -> SqlIdentity:
            """An agent that has not read its member."""
            return SqlIdentity(member_id="", version=None, hostname=socket.gethostname(), port=0)

    endpoint = SqlEndpoint(NoTables(), config, get_logger())
    await endpoint.start()
    started.push_async_callback(endpoint.aclose)


_START = {"listen": _start_grpc, "metrics_listen": _start_metrics, "sql_listen": _start_sql}
