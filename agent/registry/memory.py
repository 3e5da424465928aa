"""``MemoryRegistry``: the registry contract in memory, for unit tests of the agent."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Self

from grstats.agent.registry.base import RegistryDamaged, RegistryError

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import TracebackType

    from grstats.agent.registry.base import MemberRecord


class MemoryRegistry:
    """A :class:`~grstats.agent.registry.base.MemberRegistry` in a dict; nothing outlives it.

    It keeps the real registry's contract (upsert by member_id, all-or-nothing saves,
    case-insensitive forget, RegistryError after close) and can play a failing disk:
    :meth:`fail` makes calls raise RegistryError until :meth:`recover`, and :meth:`damage`
    plays a damaged file, raising RegistryDamaged until :meth:`set_aside`. Calls are
    serialised by a lock, so any thread may make them.
    """

    def __init__(self, records: Sequence[MemberRecord] = ()) -> None:
        self._lock = threading.Lock()
        self._records = {record.member_id.lower(): record for record in records}
        self._forgotten: set[str] = set()
        self._failure: tuple[str, str | None] | None = None
        self._damaged = False
        self._closed = False
        self.saves = 0
        self.set_aside_at: list[int] = []  # the times of set_aside calls

    def fail(self, message: str = "disk I/O error", *, member_id: str | None = None) -> None:
        """Make calls raise RegistryError(``message``) until :meth:`recover`.

        With ``member_id``, only a save that holds that member fails, as if its record could
        not be stored; the records before it are not applied either.
        """
        self._failure = (message, member_id.lower() if member_id is not None else None)

    def recover(self) -> None:
        """Let calls succeed again."""
        self._failure = None

    def damage(self) -> None:
        """Make calls raise RegistryDamaged until :meth:`set_aside`, as a damaged file does."""
        self._damaged = True

    def set_aside(self, at_us: int) -> str:
        """Drop every record and forgotten member, as if the file were moved aside."""
        with self._lock:
            self._check("set aside")
            self._records, self._forgotten, self._damaged = {}, set(), False
            self.set_aside_at.append(at_us)
            return f"memory.damaged-{at_us}"

    def load(self) -> list[MemberRecord]:
        """Return every record, ordered by member_id."""
        with self._lock:
            self._check("load")
            return [self._records[key] for key in sorted(self._records)]

    def save(self, records: Sequence[MemberRecord]) -> None:
        """Insert or replace each record by member_id; all of them or, on failure, none."""
        with self._lock:
            self._check("save")
            staged = dict(self._records)
            for record in records:
                self._check("save", record.member_id)
                staged[record.member_id.lower()] = record
            self._records = staged
            self._forgotten -= {record.member_id.lower() for record in records}
            self.saves += 1

    def forget(self, member_id: str) -> bool:
        """Remove the member; return whether it was there."""
        with self._lock:
            self._check("forget")
            if self._records.pop(member_id.lower(), None) is None:
                return False
            self._forgotten.add(member_id.lower())
            return True

    def forgotten(self) -> list[str]:
        """Return the members forgotten and not saved since, ordered (lower case)."""
        with self._lock:
            self._check("load")
            return sorted(self._forgotten)

    def purge(self, last_seen_before_us: int) -> int:
        """Remove every member last seen before ``last_seen_before_us``; return how many."""
        with self._lock:
            self._check("purge")
            kept = {k: r for k, r in self._records.items() if r.last_seen_us >= last_seen_before_us}
            removed = len(self._records) - len(kept)
            self._records = kept
            return removed

    def close(self) -> None:
        """Mark the registry closed; later calls raise RegistryError."""
        self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _check(self, action: str, member_id: str | None = None) -> None:
        """Raise RegistryError if closed or failing (for ``member_id``, when given)."""
        if self._closed:
            raise RegistryError(f"member registry: {action} after close")
        if self._damaged and action != "set aside":
            raise RegistryDamaged(f"member registry: {action} failed: file is not a database")
        if self._failure is None:
            return
        message, failing = self._failure
        if failing is None:
            raise RegistryError(f"member registry: {action} failed: {message}")
        if member_id is not None and member_id.lower() == failing:
            raise RegistryError(f"member registry: {action} failed: member {member_id}: {message}")
