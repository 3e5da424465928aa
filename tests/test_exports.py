"""Public API modules declare a sorted, complete __all__ (httpx's test_exported_members)."""

from __future__ import annotations

import importlib
import inspect

import pytest

PUBLIC_MODULES = [
    "grstats.core.gtid",
    "grstats.core.rows",
    "grstats.agent.sources",
    "grstats.agent.registry",
    "grstats.agent.gossip",
    "grstats.agent.transports",
]


def isort_key(name: str) -> tuple[int, str]:
    """Order names as ruff's RUF022 does: CONSTANTS, then Classes, then functions."""
    if name.isupper():
        return (0, name)
    return (1, name) if name[0].isupper() else (2, name)


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_sorted_and_complete(name: str) -> None:
    """__all__ lists every public name the package re-exports, in ruff's order.

    A name the package loads on first use (its module ``__getattr__``) counts when it resolves.
    """
    module = importlib.import_module(name)
    public = {
        attribute
        for attribute, value in vars(module).items()
        if not attribute.startswith("_")
        and not inspect.ismodule(value)
        and attribute != "annotations"
    }
    lazy = "__getattr__" in vars(module)
    public |= {n for n in module.__all__ if lazy and n not in public and hasattr(module, n)}
    assert module.__all__ == sorted(module.__all__, key=isort_key)
    assert set(module.__all__) == public
