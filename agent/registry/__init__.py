"""The member registry: every member the agent has seen, kept across restarts (WL#2860).

``SqliteRegistry`` keeps it in the agent's state directory, each save one transaction
(WL#2775); ``MemoryRegistry`` keeps the same contract in memory for tests of the agent, and
loads on first use.
"""

from __future__ import annotations

import typing

from grstats.agent.registry.base import (
    DEFAULT_RETENTION_S,
    MemberRecord,
    MemberRegistry,
    RegistryDamaged,
    RegistryError,
)
from grstats.agent.registry.sqlite import REGISTRY_FILENAME, SqliteRegistry

__all__ = [
    "DEFAULT_RETENTION_S",
    "REGISTRY_FILENAME",
    "MemberRecord",
    "MemberRegistry",
    "MemoryRegistry",
    "RegistryDamaged",
    "RegistryError",
    "SqliteRegistry",
]

if typing.TYPE_CHECKING:
    from grstats.agent.registry.memory import MemoryRegistry


def __getattr__(name: str) -> object:
    """Load ``MemoryRegistry`` the first time it is asked for."""
    if name == "MemoryRegistry":
        from grstats.agent.registry.memory import MemoryRegistry  # noqa: PLC0415

        return MemoryRegistry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
