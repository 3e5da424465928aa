"""grstats agent: one per Group Replication member; reads it and gossips its rows to the others."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
