"""The registry stores what the release before reads where it reads it, and a row's later values apart.

The release before reads at most ``_EARLIER_WIDTHS`` values of each stored row and refuses a
longer array; these tests narrow the applier's width to 22 of its 25 values, as if its last
three (the lag by stage) had been appended after that release, and check what each side reads.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from contextlib import closing
from typing import TYPE_CHECKING

import msgpack  # type: ignore[import-untyped]

from grstats.agent.registry import SqliteRegistry
from grstats.agent.registry import sqlite as sqlite_registry
from grstats.core.rows import ApplierStatusRow
from tests.agent.registry.records import A, full

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

    from grstats.agent.registry import MemberRecord

#: The applier's values that the narrowed earlier release reads.
NARROW = 22


def staged(record: MemberRecord) -> MemberRecord:
    """``record`` with its applier's lag by stage set (its values after :data:`NARROW`)."""
    assert record.applier is not None
    applier = dataclasses.replace(
        record.applier, transport_seconds=0.5, waiting_seconds=0.25, apply_seconds=0.125
    )
    return dataclasses.replace(record, applier=applier)


def stored(path: Path) -> tuple[list[object], bytes | None]:
    """The applier array and the ``later`` bytes of member A's row, as the file holds them."""
    with closing(sqlite3.connect(path)) as db:
        applier, later = db.execute(
            "SELECT applier, later FROM members WHERE member_id = ?", (A,)
        ).fetchone()
    return msgpack.unpackb(applier), later


def test_appended_values_go_where_the_earlier_release_does_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The applier column holds the 22 values the earlier release reads, ``later`` the rest; this release reads the whole row back."""
    monkeypatch.setitem(sqlite_registry._EARLIER_WIDTHS, ApplierStatusRow, NARROW)
    path = tmp_path / "members.sqlite3"
    record = staged(full(A))
    registry = SqliteRegistry(path)
    registry.save([record])
    applier, later = stored(path)
    assert len(applier) == NARROW
    assert later is not None
    assert registry.load() == [record]
    registry.close()


def test_an_earlier_save_makes_the_later_values_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save by the earlier release rewrites the row but not ``later``: its stale values read as defaults, the new ones as saved."""
    monkeypatch.setitem(sqlite_registry._EARLIER_WIDTHS, ApplierStatusRow, NARROW)
    path = tmp_path / "members.sqlite3"
    registry = SqliteRegistry(path)
    registry.save([staged(full(A, checked=7))])
    registry.close()
    newer = full(A, checked=9)  # what the earlier release saves: no lag by stage
    assert newer.applier is not None
    values = list(newer.applier.values())[:NARROW]
    with closing(sqlite3.connect(path)) as db, db:
        db.execute(  # as that release's upsert does: it names the columns it knows
            "UPDATE members SET applier = ? WHERE member_id = ?",
            (msgpack.packb(values, use_bin_type=True), A),
        )
    (loaded,) = SqliteRegistry(path).load()
    assert loaded.applier == newer.applier
    assert loaded.applier.transport_seconds is None  # not the stale 0.5
