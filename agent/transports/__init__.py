"""Transports: how an agent carries exchanges to its peers."""

from __future__ import annotations

from grstats.agent.transports.base import Transport
from grstats.agent.transports.faulty import FaultyTransport
from grstats.agent.transports.rpc import GrpcTransport

__all__ = ["FaultyTransport", "GrpcTransport", "Transport"]
