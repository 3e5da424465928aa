"""The MemberRegistry contract, run against SqliteRegistry and MemoryRegistry alike."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import pytest

from grstats.agent.registry import MemberRegistry, MemoryRegistry, RegistryError, SqliteRegistry
from grstats.agent.registry import sqlite as sqlite_registry
from tests.agent.registry.records import NOW_US, A, B, C, bare, full

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from grstats.core.rows import Row


@pytest.fixture(name="registry", params=["sqlite", "memory"])
def _registry(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemberRegistry]:
    registry: MemberRegistry
    if request.param == "sqlite":
        registry = SqliteRegistry(tmp_path / "members.sqlite3")
    else:
        registry = MemoryRegistry()
    yield registry
    registry.close()


def make_unstorable(
    registry: MemberRegistry, member_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Make ``member_id``'s record fail to be stored: its encoding raises, or the fake fails."""
    if isinstance(registry, MemoryRegistry):
        registry.fail("cannot be stored", member_id=member_id)
        return
    pack = sqlite_registry._pack

    def failing_pack(row: Row | None) -> tuple[bytes | None, list[Any]]:
        if row is not None and getattr(row, "member_id", "") == member_id:
            raise TypeError("can not serialize 'Decimal' object")
        return pack(row)

    monkeypatch.setattr(sqlite_registry, "_pack", failing_pack)


class TestContract:
    def test_set_aside_leaves_an_empty_registry(self, registry: MemberRegistry) -> None:
        """After set_aside the registry holds no record and no forgotten member, and saves."""
        registry.save([full(A), bare(B)])
        assert registry.forget(B) is True
        assert registry.set_aside(NOW_US)
        assert registry.load() == []
        assert registry.forgotten() == []
        registry.save([bare(C)])
        assert registry.load() == [bare(C)]

    def test_empty_registry_loads_nothing(self, registry: MemberRegistry) -> None:
        """A new registry holds no members."""
        assert registry.load() == []

    def test_round_trip_of_full_records(self, registry: MemberRegistry) -> None:
        """Records with every row come back equal, ordered by member_id."""
        records = [full(B, checked=9), full(A)]
        registry.save(records)
        assert registry.load() == [full(A), full(B, checked=9)]

    def test_round_trip_of_records_without_rows(self, registry: MemberRegistry) -> None:
        """Records with no rows, no port, no agent and no GTIDs come back equal."""
        registry.save([bare(A), bare(B)])
        assert registry.load() == [bare(A), bare(B)]

    def test_save_upserts_and_keeps_others(self, registry: MemberRegistry) -> None:
        """A save replaces the records it holds and keeps members it does not mention."""
        registry.save([full(A, checked=1), bare(B)])
        registry.save([full(A, seen_us=NOW_US + 5, checked=2)])
        assert registry.load() == [full(A, seen_us=NOW_US + 5, checked=2), bare(B)]

    def test_later_duplicate_in_one_save_wins(self, registry: MemberRegistry) -> None:
        """When one save holds a member twice, the later record is kept."""
        registry.save([full(A, checked=1), full(A, checked=2)])
        assert registry.load() == [full(A, checked=2)]

    def test_save_is_all_or_nothing(
        self, registry: MemberRegistry, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A save whose second record cannot be stored leaves the registry exactly as it was."""
        registry.save([full(A, checked=1)])
        make_unstorable(registry, B, monkeypatch)
        with pytest.raises(RegistryError, match=B):
            registry.save([full(A, checked=2), full(B), full(C)])
        assert registry.load() == [full(A, checked=1)]

    def test_forget_removes_one_member(self, registry: MemberRegistry) -> None:
        """Forgetting removes the member and says whether it was there; others stay."""
        registry.save([bare(A), bare(B)])
        assert registry.forget(A) is True
        assert registry.forget(A) is False
        assert registry.load() == [bare(B)]

    def test_forget_ignores_case(self, registry: MemberRegistry) -> None:
        """A UUID typed in upper case forgets the member, as MySQL compares UUIDs."""
        registry.save([bare(A)])
        assert registry.forget(A.upper()) is True
        assert registry.load() == []

    def test_forgotten_members_stay_forgotten_until_saved_again(
        self, registry: MemberRegistry
    ) -> None:
        """A forgotten member is listed as forgotten (lower case) until a save holds it again."""
        registry.save([bare(A), bare(B), bare(C)])
        assert registry.forget(B.upper()) is True
        assert registry.forget(A) is True
        assert registry.forget(C.replace("c", "d")) is False  # never there: not listed
        assert registry.forgotten() == sorted([A.lower(), B.lower()])
        registry.save([bare(C)])
        assert registry.forgotten() == sorted([A.lower(), B.lower()])
        registry.save([bare(B)])  # a view lists it again
        assert registry.forgotten() == [A.lower()]

    def test_upsert_ignores_case(self, registry: MemberRegistry) -> None:
        """The same UUID in another case replaces the record instead of adding one."""
        registry.save([bare(A)])
        registry.save([dataclasses.replace(bare(A), member_id=A.upper())])
        assert [record.member_id for record in registry.load()] == [A.upper()]

    def test_purge_removes_members_last_seen_before(self, registry: MemberRegistry) -> None:
        """Purging removes members last seen strictly before the bound and counts them."""
        registry.save([bare(A, seen_us=10), bare(B, seen_us=20), bare(C, seen_us=30)])
        assert registry.purge(20) == 1
        assert registry.purge(20) == 0
        assert registry.load() == [bare(B, seen_us=20), bare(C, seen_us=30)]

    def test_purge_bounds_beyond_any_time(self, registry: MemberRegistry) -> None:
        """A bound before every time removes nothing; one beyond 64 bits removes everything."""
        registry.save([bare(A, seen_us=0), bare(B, seen_us=(1 << 63) - 1)])
        assert registry.purge(-1) == 0
        assert registry.purge(1 << 64) == 2
        assert registry.load() == []

    def test_forget_of_text_that_is_no_uuid(self, registry: MemberRegistry) -> None:
        """Forgetting a command line's undecodable bytes finds nothing and raises nothing."""
        registry.save([bare(A)])
        assert registry.forget("\udcff-not-a-uuid") is False
        assert registry.load() == [bare(A)]

    def test_calls_after_close_fail(self, registry: MemberRegistry) -> None:
        """Closing twice is harmless, and a call after closing raises RegistryError."""
        registry.save([bare(A)])
        registry.close()
        registry.close()
        with pytest.raises(RegistryError, match="load after close"):
            registry.load()


class TestMemoryRegistry:
    def test_fails_until_recovered(self) -> None:
        """After fail() every call raises RegistryError with the message, until recover()."""
        registry = MemoryRegistry([bare(A)])
        registry.fail("disk full")
        with pytest.raises(RegistryError, match="disk full"):
            registry.save([])
        with pytest.raises(RegistryError, match="disk full"):
            registry.load()
        registry.recover()
        assert registry.load() == [bare(A)]
        assert registry.saves == 0

    def test_member_failure_spares_other_saves(self) -> None:
        """With a member_id, fail() fails only the saves that hold that member."""
        registry = MemoryRegistry()
        registry.fail("cannot be stored", member_id=B)
        registry.save([bare(A)])
        with pytest.raises(RegistryError, match="cannot be stored"):
            registry.save([bare(B)])
        assert registry.load() == [bare(A)]
