"""Transports: how an agent carries gossip to its peers, over gRPC or in memory."""

from __future__ import annotations

from grstats.agent.transports.base import Receiver, ServingTransport, Transport
from grstats.agent.transports.faulty import FaultyTransport
from grstats.agent.transports.memory import MemoryNetwork, MemoryTransport
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
