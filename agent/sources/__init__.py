"""Stats sources: how an agent reads its own member (a real server or the simulator).

``SimulatedSource`` lives in :mod:`agent.sources.simulated`, imported on demand, so that an
agent reading a real server does not load the simulator.
"""

from __future__ import annotations

from agent.sources.base import StatsSource
from agent.sources.memory import MemorySource
from agent.sources.mysql import MySQLSource, MySQLSourceConfig
from agent.sources.snapshot import (
    FLOW_CONTROL_MODES,
    FlowControlSettings,
    GroupView,
    MemberSnapshot,
    SourceHealth,
)

__all__ = [
    "FLOW_CONTROL_MODES",
    "FlowControlSettings",
    "GroupView",
    "MemberSnapshot",
    "MemorySource",
    "MySQLSource",
    "MySQLSourceConfig",
    "SourceHealth",
    "StatsSource",
]
