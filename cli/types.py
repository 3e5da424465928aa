"""Typing aliases shared by the subcommand modules."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    import argparse

#: What ``register(subparsers)`` receives: the object ``add_subparsers()`` returned.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"  # noqa: SLF001
