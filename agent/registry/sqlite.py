"""``SqliteRegistry``: the member registry in one SQLite file in the agent's state directory.

Layout, schema version 1::

    meta     key TEXT PRIMARY KEY, value TEXT       ('schema_version', '1')
    members  member_id TEXT PRIMARY KEY COLLATE NOCASE, record_version, member_host,
             member_port, agent_address, first_seen_us, last_seen_us (indexed), last_state,
             stats BLOB, applier BLOB, gtid_executed, events BLOB
    forgotten member_id TEXT PRIMARY KEY COLLATE NOCASE     (``grstats members forget``)

``forgotten`` and ``members.events`` were appended to version 1: each is created in any
version-1 file that lacks it, and an older grstats, which names the columns it reads and
writes, reads the file as before (and leaves the events it does not know as they were).
``events`` holds the member's events as a msgpack array of arrays (EVENT_TIME, MEMBER_ID,
EVENT_TYPE, OLD_VALUE, NEW_VALUE, VIEW_ID, DETAIL; REPORTED_BY is the record's member), NULL
for none.
``stats`` and ``applier`` hold a row as a msgpack array of its values in column order (NULL when
there is no row); decoding builds the row class again, so a stored row is checked like a fresh
one. A save is one transaction, so the file never holds part of one (WL#2775).

Foreign errors are translated once: sqlite3's (and the OS's) in
:meth:`SqliteRegistry._session`, msgpack's and the row model's in :func:`_encode` and
:func:`_decode`.

WARNING: ONLY APPEND. Columns of ``members`` and values of the arrays are only ever added (rows
written before a column was appended are read with its default); bump SCHEMA_VERSION when
the tables change and RECORD_VERSION when a stored value changes meaning.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

import msgpack  # type: ignore[import-untyped]

from grstats.agent.registry.base import MAX_TIME_US, MemberRecord, RegistryError
from grstats.agent.rows import ApplierStatusRow, EventRow, MemberStatsRow

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from types import TracebackType

    from grstats.agent.rows import Row

#: The version of the tables, kept in ``meta``; a file of another version is refused.
SCHEMA_VERSION = 1
#: The version of a stored record's values, kept in each row.
RECORD_VERSION = 1
#: The registry's file name in the agent's state directory.
REGISTRY_FILENAME = "members.sqlite3"

# How many values each array had when record version 1 was defined: later rows may be longer
# (columns are only appended), never shorter.
_V1_WIDTHS: dict[type[Row], int] = {MemberStatsRow: 13, ApplierStatusRow: 21}
# The values of each stored event (the columns of replication_group_events but REPORTED_BY).
_EVENT_WIDTH = 7

# Durability. WAL with synchronous=FULL fsyncs the write-ahead log at every COMMIT, so a save
# that returned survives both kill -9 and power loss. synchronous=NORMAL would survive kill -9
# (the log is in the OS cache) but may lose the last saves on power loss; EXTRA adds nothing
# over FULL in WAL mode (it syncs the directory after deleting a rollback journal). fullfsync
# asks macOS to flush the drive's cache too (plain fsync does not); elsewhere it is ignored.
# WAL rather than a rollback journal: one sequential fsync a commit, and `grstats members`
# reading the file never blocks the agent's save. WAL needs a local file system, which the
# state directory is.
_PRAGMAS = (
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = FULL",
    "PRAGMA fullfsync = ON",
    "PRAGMA checkpoint_fullfsync = ON",
)

# The members ``grstats members forget`` removed, until some save lists them again (appended).
_FORGOTTEN = "CREATE TABLE IF NOT EXISTS forgotten (member_id TEXT PRIMARY KEY COLLATE NOCASE)"

# The member's events (appended to version 1): NULL in the rows of a file written before.
_EVENTS = "ALTER TABLE members ADD COLUMN events BLOB"

_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE members (
        member_id TEXT PRIMARY KEY COLLATE NOCASE,
        record_version INTEGER NOT NULL,
        member_host TEXT NOT NULL,
        member_port INTEGER,
        agent_address TEXT NOT NULL,
        first_seen_us INTEGER NOT NULL,
        last_seen_us INTEGER NOT NULL,
        last_state TEXT NOT NULL,
        stats BLOB,
        applier BLOB,
        gtid_executed TEXT NOT NULL
    )""",
    "CREATE INDEX members_by_last_seen ON members (last_seen_us)",
    _FORGOTTEN,
    _EVENTS,
)

_SELECT = """SELECT member_id, record_version, member_host, member_port, agent_address,
    first_seen_us, last_seen_us, last_state, stats, applier, gtid_executed, events
    FROM members ORDER BY member_id"""

_UPSERT = """INSERT INTO members (member_id, record_version, member_host, member_port,
    agent_address, first_seen_us, last_seen_us, last_state, stats, applier, gtid_executed,
    events)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (member_id) DO UPDATE SET
        member_id = excluded.member_id, record_version = excluded.record_version,
        member_host = excluded.member_host, member_port = excluded.member_port,
        agent_address = excluded.agent_address, first_seen_us = excluded.first_seen_us,
        last_seen_us = excluded.last_seen_us, last_state = excluded.last_state,
        stats = excluded.stats, applier = excluded.applier,
        gtid_executed = excluded.gtid_executed, events = excluded.events"""

_DEFAULT_BUSY_TIMEOUT_S = 5.0

_R = TypeVar("_R", MemberStatsRow, ApplierStatusRow)


class SqliteRegistry:
    """A :class:`~grstats.agent.registry.base.MemberRegistry` in the SQLite file at ``path``.

    Nothing touches the disk before the first call, so constructing one never blocks; that
    call creates the file and its tables if there is no file yet, and refuses a file that is
    not a registry or is of an unknown schema version. Another process (``grstats members
    forget``) may open the same file: a writer waits up to ``busy_timeout_s`` for the other's
    transaction before failing with RegistryError.

    Threads: one connection, opened with ``check_same_thread=False`` and used under a lock,
    so any thread may call and calls are serialised. After an SQLite error the connection is
    closed (rolling back whatever was open) and the next call opens a new one.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, busy_timeout_s: float = _DEFAULT_BUSY_TIMEOUT_S
    ) -> None:
        self.path = Path(path)
        self._busy_timeout_s = busy_timeout_s
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._closed = False

    @classmethod
    def in_directory(cls, state_dir: str | os.PathLike[str]) -> SqliteRegistry:
        """Return the registry of the agent whose state directory is ``state_dir``."""
        return cls(Path(state_dir) / REGISTRY_FILENAME)

    def load(self) -> list[MemberRecord]:
        """Return every record, ordered by member_id; RegistryError names a corrupt one."""
        with self._session("load") as db:
            rows = db.execute(_SELECT).fetchall()
        return [_decode(row) for row in rows]

    def save(self, records: Sequence[MemberRecord]) -> None:
        """Insert or replace each record by member_id, all in one durable transaction."""
        params = [_encode(record) for record in records]
        with self._session("save") as db, _transaction(db):
            db.executemany(_UPSERT, params)
            db.executemany("DELETE FROM forgotten WHERE member_id = ?", [(p[0],) for p in params])

    def forget(self, member_id: str) -> bool:
        """Remove the member; return whether it was there."""
        if not _is_utf8(member_id):
            return False  # a command line's undecodable bytes: no stored id is like that
        with self._session("forget") as db, _transaction(db):
            cursor = db.execute("DELETE FROM members WHERE member_id = ?", (member_id,))
            if cursor.rowcount == 0:
                return False
            db.execute("INSERT OR IGNORE INTO forgotten (member_id) VALUES (?)", (member_id,))
            return True

    def forgotten(self) -> list[str]:
        """Return the members forgotten and not saved since, ordered (lower case)."""
        with self._session("load") as db:
            rows = db.execute("SELECT lower(member_id) FROM forgotten ORDER BY 1").fetchall()
        return [member_id for (member_id,) in rows]

    def purge(self, last_seen_before_us: int) -> int:
        """Remove every member last seen before ``last_seen_before_us``; return how many."""
        # Every stored time fits in SQLite's INTEGER; a bound beyond them all removes all.
        bound = min(max(last_seen_before_us, 0), MAX_TIME_US)
        everything = last_seen_before_us > MAX_TIME_US
        with self._session("purge") as db, _transaction(db):
            cursor = db.execute(
                "DELETE FROM members WHERE last_seen_us < ? OR ?", (bound, everything)
            )
            return cursor.rowcount

    def close(self) -> None:
        """Close the file (idempotent); later calls raise RegistryError."""
        with self._lock:
            self._closed = True
            self._drop()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @contextlib.contextmanager
    def _session(self, action: str) -> Iterator[sqlite3.Connection]:
        """Hold the lock and the open connection; translate sqlite3's and the OS's errors."""
        with self._lock:
            if self._closed:
                raise RegistryError(f"member registry {self.path}: {action} after close")
            try:
                if self._db is None:
                    self._db = self._open()
                yield self._db
            except (sqlite3.Error, OSError) as exc:
                self._drop()
                raise RegistryError(f"member registry {self.path}: {action} failed: {exc}") from exc

    def _open(self) -> sqlite3.Connection:
        """Open the file, set durability, create or check the tables."""
        db = sqlite3.connect(
            self.path,
            timeout=self._busy_timeout_s,
            isolation_level=None,  # no implicit transactions: _transaction says BEGIN and COMMIT
            check_same_thread=False,
        )
        try:
            for pragma in _PRAGMAS:
                db.execute(pragma)
            if _create_or_check_schema(db, self.path):
                _sync_directory(self.path.parent)
        except BaseException:
            db.close()
            raise
        return db

    def _drop(self) -> None:
        """Close the connection, if open; closing rolls back an unfinished transaction."""
        db, self._db = self._db, None
        if db is not None:
            # Best effort: the connection is being discarded because of an error already
            # reported, or at close, where nothing is left to commit.
            with contextlib.suppress(sqlite3.Error):
                db.close()


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """Run the block in one write transaction: COMMIT if it returns, ROLLBACK if it raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if db.in_transaction:
            # The block's error says what went wrong; if the rollback fails too, the
            # connection is dropped and closing it rolls back.
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _create_or_check_schema(db: sqlite3.Connection, path: Path) -> bool:
    """Create the tables in an empty file, or check a registry's version; True if created."""
    with _transaction(db):
        tables = {
            name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if not tables:
            for statement in _SCHEMA:
                db.execute(statement)
            db.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
            return True
        if "meta" not in tables:
            raise RegistryError(
                f"member registry {path}: not a grstats registry"
                f" (no meta table; tables: {', '.join(sorted(tables))})"
            )
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = None if row is None else row[0]
        if str(version) != str(SCHEMA_VERSION):
            raise RegistryError(f"member registry {path}: {_version_problem(version)}")
        if "forgotten" not in tables:
            db.execute(_FORGOTTEN)  # a version-1 file of a grstats before the table was appended
        columns = {row[1] for row in db.execute("PRAGMA table_info(members)")}
        if "events" not in columns:
            db.execute(_EVENTS)  # a version-1 file of a grstats before events were appended
        return False


def _version_problem(version: object) -> str:
    """Say why a file of schema ``version`` is refused."""
    if version is None:
        return "no schema_version in its meta table"
    if str(version).isdecimal() and int(str(version)) > SCHEMA_VERSION:
        return (
            f"schema version {version} was written by a newer grstats"
            f" (this one reads version {SCHEMA_VERSION}); upgrade grstats"
        )
    return f"unknown schema version {version!r} (this grstats reads version {SCHEMA_VERSION})"


def _is_utf8(text: str) -> bool:
    """Return whether ``text`` can be stored: it has no lone surrogates."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _sync_directory(directory: Path) -> None:
    """Fsync ``directory`` so that a new file's name survives power loss (POSIX only).

    SQLite syncs the directory of the journal files it creates, not of the database file.
    """
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _encode(record: MemberRecord) -> tuple[Any, ...]:
    """Return the ``members`` values of ``record``; RegistryError names it if it cannot be."""
    try:
        stats = _pack(record.stats)
        applier = _pack(record.applier)
        events = _pack_events(record.events)
    except (TypeError, ValueError, OverflowError) as exc:
        raise RegistryError(f"member {record.member_id}: its rows cannot be stored: {exc}") from exc
    return (
        record.member_id,
        RECORD_VERSION,
        record.member_host,
        record.member_port,
        record.agent_address,
        record.first_seen_us,
        record.last_seen_us,
        record.last_state,
        stats,
        applier,
        record.gtid_executed,
        events,
    )


def _pack_events(events: Sequence[EventRow]) -> bytes | None:
    """Return the events as a msgpack array of arrays (REPORTED_BY left out), or None."""
    if not events:
        return None
    packed: bytes = msgpack.packb(
        [
            [e.event_time, e.member_id, e.event_type, e.old_value, e.new_value, e.view_id, e.detail]
            for e in events
        ],
        use_bin_type=True,
    )
    return packed


def _unpack_events(member_id: str, stored: object) -> tuple[EventRow, ...]:
    """Return the events stored for ``member_id``; _Unreadable says the fault."""
    values = _unpacked("events", stored)
    if values is None:
        return ()
    if not all(isinstance(v, list) and len(v) == _EVENT_WIDTH for v in values):
        raise _Unreadable(f"events: not an array of arrays of {_EVENT_WIDTH} values")
    try:
        return tuple(
            EventRow(at, member, kind, old, new, view, member_id, detail)
            for at, member, kind, old, new, view, detail in values
        )
    except ValueError as exc:
        raise _Unreadable(f"events: {exc}") from exc


def _pack(row: Row | None) -> bytes | None:
    """Return ``row``'s values in column order as a msgpack array, or None."""
    if row is None:
        return None
    packed: bytes = msgpack.packb(list(row.values()), use_bin_type=True)
    return packed


class _Unreadable(Exception):
    """A stored value that cannot be read back; the message says which and why."""


def _decode(values: tuple[Any, ...]) -> MemberRecord:
    """Return the record stored as ``values``; RegistryError names the member and the fault."""
    try:
        return _record(values)
    except (_Unreadable, ValueError, TypeError) as exc:
        member_id = values[0]
        raise RegistryError(
            f"member registry: the record of member {member_id!r} is unreadable: {exc}"
            f" (`grstats members forget {member_id}` removes it)"
        ) from exc


def _record(values: tuple[Any, ...]) -> MemberRecord:
    """Build the record stored as ``values``, raising _Unreadable or RowValueError."""
    member_id, version, host, port, address, first_seen, last_seen, state = values[:8]
    stats, applier, gtids, events = values[8:]
    if version != RECORD_VERSION:
        if isinstance(version, int) and version > RECORD_VERSION:
            problem = f"record version {version} is newer than this grstats reads"
            raise _Unreadable(f"{problem} ({RECORD_VERSION})")
        raise _Unreadable(f"unknown record version {version!r}")
    return MemberRecord(
        member_id=member_id,
        member_host=host,
        member_port=port,
        agent_address=address,
        first_seen_us=first_seen,
        last_seen_us=last_seen,
        last_state=state,
        stats=_unpack(MemberStatsRow, "stats", stats),
        applier=_unpack(ApplierStatusRow, "applier", applier),
        gtid_executed=gtids,
        events=_unpack_events(member_id, events),
    )


def _unpacked(field: str, stored: object) -> list[Any] | None:
    """The msgpack array stored in ``field``, None for NULL; _Unreadable says the fault."""
    if stored is None:
        return None
    if not isinstance(stored, bytes):
        raise _Unreadable(f"{field}: stored as {type(stored).__name__}, not as msgpack bytes")
    try:
        values = msgpack.unpackb(stored, raw=False)
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise _Unreadable(f"{field}: not msgpack ({exc})") from exc
    if not isinstance(values, list):
        raise _Unreadable(f"{field}: a msgpack {type(values).__name__}, not an array of values")
    return values


def _unpack(cls: type[_R], field: str, stored: object) -> _R | None:
    """Return the row of type ``cls`` stored in ``field``, or None; _Unreadable says the fault."""
    values = _unpacked(field, stored)
    if values is None:
        return None
    width, newest = _V1_WIDTHS[cls], len(cls.TABLE.columns)
    if not width <= len(values) <= newest:
        raise _Unreadable(f"{field}: {len(values)} values, not {width}..{newest}")
    try:
        return cls(*values)
    except ValueError as exc:
        raise _Unreadable(f"{field}: {exc}") from exc
