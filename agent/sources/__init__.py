"""Stats sources: how an agent reads its own member (a real server or the simulator).

Each source has a config beside it: :class:`MySQLSourceConfig` (``[mysql]``) and
:class:`SimulatedSourceConfig` (``[simulated]``), both exported here and both light.
``SimulatedSource`` lives in :mod:`grstats.agent.sources.simulated`, imported on demand (by
``SimulatedSourceConfig.build``), so that an agent reading a real server does not load the
simulator. ``MySQLSource`` is loaded on first use too, so that what only needs the snapshot
types (the gossip core, the collector's records, Spark's workers) does not load the MySQL
driver; so is ``MemorySource`` (the tests' fixed snapshots), which no running agent reads.
"""

from __future__ import annotations

import typing

from grstats.agent.sources.base import StatsSource
from grstats.agent.sources.mysql_config import MySQLSourceConfig
from grstats.agent.sources.simulated_config import SimulatedSourceConfig
from grstats.core.model import (
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
    "SimulatedSourceConfig",
    "SourceHealth",
    "StatsSource",
]


if typing.TYPE_CHECKING:
    from grstats.agent.sources.memory import MemorySource
    from grstats.agent.sources.mysql import MySQLSource


def __getattr__(name: str) -> object:
    """Load ``MySQLSource`` (and with it the MySQL driver) or ``MemorySource`` when first asked."""
    if name == "MySQLSource":
        from grstats.agent.sources.mysql import MySQLSource  # noqa: PLC0415 (the driver on demand)

        return MySQLSource
    if name == "MemorySource":
        from grstats.agent.sources.memory import MemorySource  # noqa: PLC0415

        return MemorySource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
