"""The agent over a failing or damaged registry: it serves from memory, says so once, recovers.

A failing registry (a full, read-only or vanished disk) is logged when the fault begins and
when a flush succeeds again; a damaged one is set aside and the group relearned from the
peers. The full disk itself, and SIGBUS, are in tests/agent/registry/test_full_disk.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from structlog.testing import capture_logs

from grstats.agent.registry import MemoryRegistry, SqliteRegistry
from grstats.agent.registry_sync import DAMAGED_EFFECT
from tests.agent.registry.records import generation
from tests.agent.registry.test_sqlite import empty, garbage, half
from tests.agent.test_runtime import members_of, start_group, stop_all

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

FULL = "member registry /srv/grstats/members.sqlite3: save failed: database or disk is full"


def lines(logs: Sequence[Mapping[str, Any]], event: str) -> list[Mapping[str, Any]]:
    """The captured log lines of ``event``."""
    return [line for line in logs if line["event"] == event]


async def test_failing_registry_is_said_once_and_its_recovery_once() -> None:
    """Five failing flushes log one registry_fault; the first good one logs registry_recovered.

    Meanwhile the agent serves every member from memory, and what was saved before is kept.
    """
    registry = MemoryRegistry()
    group = await start_group(3, memory=True, registries={0: registry})
    agent = group.agents[0]
    try:
        await group.rounds(2)
        await agent.flush()
        saved = registry.load()
        assert len(saved) == 3
        registry.fail(FULL)
        with capture_logs() as logs:
            for _ in range(5):
                await group.rounds(1)
                await agent.flush()
            assert members_of(agent) == {a.member_id for a in group.agents}
            registry.recover()
            await agent.flush()
            await agent.flush()
        (fault,) = lines(logs, "registry_fault")
        assert fault["log_level"] == "warning"
        assert fault["error"] == f"member registry: load failed: {FULL}"
        assert fault["retry_every_s"] == agent.config.flush_interval_s
        (recovered,) = lines(logs, "registry_recovered")
        assert recovered["failed_flushes"] == 5
        assert recovered["lasted_s"] == 4.0  # from the first failed round to the fifth, 1 s each
        assert {record.member_id for record in registry.load()} == {
            record.member_id for record in saved
        }
        assert registry.load() != saved  # the flush after recovery saved the news
    finally:
        await stop_all(group)


async def test_a_changed_error_is_said_again() -> None:
    """A fault whose error changes (full, then read-only) is logged again, naming the one before."""
    registry = MemoryRegistry()
    group = await start_group(1, memory=True, registries={0: registry})
    agent = group.agents[0]
    try:
        with capture_logs() as logs:
            registry.fail("database or disk is full")
            await agent.flush()
            await agent.flush()
            registry.fail("attempt to write a readonly database")
            await agent.flush()
        first, second = lines(logs, "registry_fault")
        assert "replaces" not in first
        assert second["replaces"] == first["error"]
        assert "readonly" in second["error"]
    finally:
        await stop_all(group)


async def test_registry_failing_at_start_does_not_stop_the_agent() -> None:
    """A registry that cannot be read at start is logged; the agent starts and saves later."""
    registry = MemoryRegistry()
    registry.fail("unable to open database file")
    with capture_logs() as logs:
        group = await start_group(3, memory=True, registries={0: registry})
    agent = group.agents[0]
    try:
        assert agent.serving
        (fault,) = lines(logs, "registry_fault")
        assert "unable to open database file" in fault["error"]
        registry.recover()
        await group.rounds(2)
        await agent.flush()
        assert len(registry.load()) == 3
    finally:
        await stop_all(group)


async def test_stop_while_failing_says_what_is_not_saved() -> None:
    """Stopped while its registry fails, the agent warns that the news since its last save is lost."""
    registry = MemoryRegistry()
    group = await start_group(1, memory=True, registries={0: registry})
    agent = group.agents[0]
    registry.fail(FULL)
    with capture_logs() as logs:
        await agent.flush()
        await agent.stop(grace_s=0)
    (unsaved,) = lines(logs, "registry_unsaved_at_stop")
    assert unsaved["log_level"] == "warning"
    assert FULL in unsaved["error"]


async def test_registry_damaged_while_running_is_set_aside_and_saved_anew() -> None:
    """A registry found damaged at a flush is set aside, and the same flush saves every member."""
    registry = MemoryRegistry()
    group = await start_group(3, memory=True, registries={0: registry})
    agent = group.agents[0]
    try:
        await group.rounds(2)
        registry.damage()
        with capture_logs() as logs:
            await agent.flush()
        (damaged,) = lines(logs, "registry_damaged")
        assert damaged["log_level"] == "warning"
        assert damaged["effect"] == DAMAGED_EFFECT
        assert registry.set_aside_at == [group.clock.us()]
        assert {record.member_id for record in registry.load()} == members_of(agent)
        assert not lines(logs, "registry_fault")
    finally:
        await stop_all(group)


def exists(name: str) -> bool:
    """Whether there is a file called ``name``."""
    return Path(name).exists()


@pytest.mark.parametrize("damage", [half, garbage, empty], ids=["half", "garbage", "empty"])
async def test_damaged_registry_at_start_is_set_aside_and_the_group_relearned(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    """An agent whose registry file is damaged starts, warns, and lists the group in 2 periods.

    The file goes aside named with the time; the warning names it, SQLite's error and what
    is lost. SQLite says "database disk image is malformed" (SQLITE_CORRUPT) or "file is not
    a database" (SQLITE_NOTADB); a 0-byte file is damage too.
    """
    path = tmp_path / "members.sqlite3"
    with SqliteRegistry(path) as registry:
        registry.save(generation(1))
    damage(path)
    with capture_logs() as logs:
        group = await start_group(3, memory=True, registries={1: SqliteRegistry(path)})
    agent = group.agents[1]
    try:
        assert agent.serving
        (damaged,) = lines(logs, "registry_damaged")
        assert damaged["log_level"] == "warning"
        assert str(path) in damaged["error"]
        assert damaged["moved_to"].startswith(f"{path}.damaged-")
        assert exists(damaged["moved_to"])
        assert "relearned from the peers" in damaged["effect"]
        (loaded,) = lines(logs, "registry_loaded")
        assert loaded["members"] == 0
        await group.rounds(2)
        assert members_of(agent) == {a.member_id for a in group.agents}
        await agent.flush()
        with SqliteRegistry(path) as registry:
            assert {record.member_id for record in registry.load()} == members_of(agent)
    finally:
        await stop_all(group)
