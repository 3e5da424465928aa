"""The member registry seam: ``MemberRegistry``, the ``MemberRecord`` it keeps, ``RegistryError``.

The registry is the agent's memory of every member it has seen (WL#2860: members that are gone
are still listed), kept across restarts: after one, the agent lists them at once, as not
connected until it hears from them again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from grstats.core.errors import AgentError
from grstats.core.gtid import GtidSet
from grstats.core.rows import (
    ApplierStatusRow,
    EventRow,
    MemberState,
    MemberStatsRow,
    RowValueError,
)
from grstats.core.rows.domains import canonical_gtid_text, is_uuid

if TYPE_CHECKING:
    from collections.abc import Sequence

#: How long a member that is no longer heard stays listed, by default: 24 hours.
DEFAULT_RETENTION_S = 24 * 60 * 60

#: The largest time a record holds: SQLite's INTEGER is a signed 64-bit integer.
MAX_TIME_US = (1 << 63) - 1

_MAX_HOST_LENGTH = 255  # MEMBER_HOST is CHAR(255)


class RegistryError(AgentError):
    """The member registry could not be read or written; the message says where and what.

    A corrupt record names the member and what is wrong with it.
    """


class RegistryDamaged(RegistryError):
    """The registry's storage is damaged as a whole (truncated, overwritten, not a database).

    Unlike a corrupt record, which ``grstats members forget`` removes, nothing in it can be
    trusted: the agent sets it aside (:meth:`MemberRegistry.set_aside`) and starts anew.
    """


@dataclass(frozen=True, slots=True)
class MemberRecord:
    """What the agent remembers of one member it has seen.

    Times are µs since the epoch. ``agent_address`` is the member's agent as ``host:port``, or
    ``''`` if no agent of it was heard. ``last_state`` is the MEMBER_STATE last seen;
    ``stats`` and ``applier`` are its last rows (None if none was heard), and
    ``gtid_executed`` its last GTID set (``''`` if unknown), kept in MySQL's canonical text;
    ``events`` the member's events as its agent keeps them (:mod:`grstats.core.events`),
    each reported by this member. Construction raises
    :class:`~grstats.core.rows.RowValueError` naming the field.
    """

    member_id: str
    member_host: str
    member_port: int | None
    agent_address: str
    first_seen_us: int
    last_seen_us: int
    last_state: str
    stats: MemberStatsRow | None = None
    applier: ApplierStatusRow | None = None
    gtid_executed: str = ""
    events: tuple[EventRow, ...] = ()

    def __post_init__(self) -> None:
        _check_member(self)
        _check_times(self)
        if self.last_state not in MemberState.__members__:
            raise RowValueError("last_state", self.last_state, "a MEMBER_STATE")
        object.__setattr__(self, "last_state", MemberState(self.last_state).value)
        _check_rows(self)
        if not isinstance(self.gtid_executed, str):
            raise RowValueError("gtid_executed", self.gtid_executed, "GTID set text")
        text = canonical_gtid_text("gtid_executed", self.gtid_executed, GtidSet.parse, "a GTID set")
        object.__setattr__(self, "gtid_executed", text)
        for event in self.events:
            if not isinstance(event, EventRow) or event.reported_by != self.member_id:
                raise RowValueError("events", event, f"events reported by {self.member_id}")


def _check_member(record: MemberRecord) -> None:
    """Check the member's identity and addresses."""
    if not isinstance(record.member_id, str) or not is_uuid(record.member_id):
        raise RowValueError("member_id", record.member_id, "a 36-character UUID")
    host = record.member_host
    if not isinstance(host, str) or not host.isascii() or len(host) > _MAX_HOST_LENGTH:
        raise RowValueError("member_host", host, "ASCII text of at most 255 characters")
    if record.member_port is not None and not _is_port(record.member_port):
        raise RowValueError("member_port", record.member_port, "a port in 1..65535 or None")
    address = record.agent_address
    if not isinstance(address, str) or not address.isascii() or not _is_address(address):
        raise RowValueError("agent_address", address, "'host:port' (ASCII) or ''")


def _check_times(record: MemberRecord) -> None:
    """Check that first and last seen are integers in 0..MAX_TIME_US."""
    for field in ("first_seen_us", "last_seen_us"):
        value = getattr(record, field)
        if isinstance(value, bool) or not isinstance(value, int):
            raise RowValueError(field, value, "an integer (µs since the epoch)")
        if not 0 <= value <= MAX_TIME_US:
            raise RowValueError(field, value, f"a time in 0..{MAX_TIME_US} µs")


def _check_rows(record: MemberRecord) -> None:
    """Check that the rows are of their class and of this member (or of no member)."""
    for field, kind in (("stats", MemberStatsRow), ("applier", ApplierStatusRow)):
        row = getattr(record, field)
        if row is None:
            continue
        if not isinstance(row, kind):
            raise RowValueError(field, row, f"a {kind.__name__} or None")
        if row.member_id not in ("", record.member_id):
            raise RowValueError(field, row.member_id, f"the row of {record.member_id} or ''")


def _is_port(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535


def _is_address(text: str) -> bool:
    """Return whether ``text`` is ``''`` or ``host:port`` (``[v6]:port`` too)."""
    if not text:
        return True
    host, colon, port = text.rpartition(":")
    return bool(host and colon and port.isdecimal() and port.isascii() and _is_port(int(port)))


class MemberRegistry(Protocol):
    """Where the agent keeps the members it has seen, across restarts.

    Calling contract:

    * :meth:`load`: once, when the agent starts, before it serves anything.
    * :meth:`save`: by the agent every flush interval (a few seconds) and once on shutdown, with
      every member it knows. All of them land in one transaction or none does: there is no
      moment where the registry holds part of a save (WL#2775).
    * :meth:`purge`: by the agent about once a minute, with ``now - retention``.
    * :meth:`forget`: by ``grstats members forget UUID`` or by the agent.
    * :meth:`forgotten`: once, when the agent starts, after :meth:`load`.
    * All methods may block on disk I/O: the agent calls them from a worker thread, never
      from the event loop. Calls are never concurrent; implementations still serialise them,
      so a misbehaving caller cannot interleave two transactions.
    * Expected failures (the file cannot be opened, is not a registry or is of a newer
      grstats, a disk error, a corrupt record) raise :class:`RegistryError` saying what failed
      and nothing else. A failed call changes nothing; a later call may succeed.
    * A call that finds the storage damaged as a whole raises :class:`RegistryDamaged`; the
      agent then calls :meth:`set_aside` and goes on with an empty registry.
    * :meth:`close` is called once, last; it is idempotent, and no call follows it.
    """

    def load(self) -> list[MemberRecord]:
        """Return every record, ordered by member_id."""
        ...

    def save(self, records: Sequence[MemberRecord]) -> None:
        """Insert or replace each record by member_id, all in one transaction.

        Members not in ``records`` are kept. If a member appears twice, the later record wins.
        """
        ...

    def forget(self, member_id: str) -> bool:
        """Remove the member (UUIDs compare case-insensitively); return whether it was there.

        A removed member is also kept as forgotten (:meth:`forgotten`) until a save holds it
        again, so that its own view does not bring it back after a restart.
        """
        ...

    def forgotten(self) -> list[str]:
        """Return the members forgotten and not saved since, in lower case, ordered."""
        ...

    def purge(self, last_seen_before_us: int) -> int:
        """Remove every member last seen before ``last_seen_before_us``; return how many."""
        ...

    def set_aside(self, at_us: int) -> str:
        """Keep the damaged storage under a name with the UTC time ``at_us``; return that name.

        The next call finds an empty registry. Raises RegistryError if it cannot be moved.
        """
        ...

    def close(self) -> None:
        """Release the storage."""
        ...
