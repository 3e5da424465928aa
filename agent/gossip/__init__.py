"""The gossip core: what each agent knows of every member, and how news merges. Pure: no I/O."""

from __future__ import annotations

from grstats.agent.gossip.relays import RelayRule
from grstats.agent.gossip.state import (
    LOCAL,
    REGISTRY,
    Digest,
    GossipState,
    Heard,
    MergeResult,
    Origin,
)
from grstats.agent.gossip.updates import (
    ClockOffset,
    Counts,
    Events,
    Key,
    LogLines,
    Stamp,
    Update,
)

__all__ = [
    "LOCAL",
    "REGISTRY",
    "ClockOffset",
    "Counts",
    "Digest",
    "Events",
    "GossipState",
    "Heard",
    "Key",
    "LogLines",
    "MergeResult",
    "Origin",
    "RelayRule",
    "Stamp",
    "Update",
]
