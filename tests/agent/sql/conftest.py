"""Fixtures of the SQL endpoint's tests: a group of agents whose tables the endpoint serves."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.agent.test_runtime import start_group, stop_all

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.agent.test_runtime import Group


@pytest.fixture(name="group")
async def _group() -> AsyncIterator[Group]:
    """Three agents on an in-memory network, their tables filled by two rounds."""
    group = await start_group(3, memory=True)
    await group.rounds(2)
    yield group
    await stop_all(group)
