"""Transports: how an agent carries gossip to its peers, over gRPC or in memory.

``GrpcTransport`` is the agent's; the in-memory ones (``MemoryNetwork``, ``MemoryTransport``
and the fault injector ``FaultyTransport``, for agents in one process, as the tests run them)
load on first use, so that an agent over gRPC does not hold their code.
"""

from __future__ import annotations

import typing

from grstats.agent.transports.base import Receiver, ServingTransport, Transport
from grstats.agent.transports.rpc import GrpcTransport

__all__ = [
    "FaultyTransport",
    "GrpcTransport",
    "MemoryNetwork",
    "MemoryTransport",
    "Receiver",
    "ServingTransport",
    "Transport",
]

if typing.TYPE_CHECKING:
    from grstats.agent.transports.faulty import FaultyTransport
    from grstats.agent.transports.memory import MemoryNetwork, MemoryTransport


def __getattr__(name: str) -> object:
    """Load the in-memory transports the first time one is asked for."""
    if name == "FaultyTransport":
        from grstats.agent.transports.faulty import FaultyTransport  # noqa: PLC0415

        return FaultyTransport
    if name in {"MemoryNetwork", "MemoryTransport"}:
        from grstats.agent.transports import memory  # noqa: PLC0415

        return getattr(memory, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
