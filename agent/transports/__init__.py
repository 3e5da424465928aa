"""Transports: how an agent carries exchanges to its peers."""

from __future__ import annotations

from agent.transports.base import Transport
from agent.transports.faulty import FaultyTransport
from agent.transports.rpc import GrpcTransport

__all__ = ["FaultyTransport", "GrpcTransport", "Transport"]
