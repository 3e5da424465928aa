"""``SqliteRegistry``: the member registry in one SQLite file in the agent's state directory.

Layout, schema version 1::

    meta     key TEXT PRIMARY KEY, value TEXT       ('schema_version', '1')
    members  member_id TEXT PRIMARY KEY COLLATE NOCASE, record_version, member_host,
             member_port, agent_address, first_seen_us, last_seen_us (indexed), last_state,
             stats BLOB, applier BLOB, gtid_executed, events BLOB, later BLOB
    forgotten member_id TEXT PRIMARY KEY COLLATE NOCASE     (``grstats members forget``)

``forgotten``, ``members.events`` and ``members.later`` were appended to version 1: each is
created in any version-1 file that lacks it, and an older grstats, which names the columns it
reads and writes, reads the file as before (and leaves the values it does not know as they
were).
``events`` holds the member's events as a msgpack array of arrays (EVENT_TIME, MEMBER_ID,
EVENT_TYPE, OLD_VALUE, NEW_VALUE, VIEW_ID, DETAIL; REPORTED_BY is the record's member), NULL
for none.
``stats`` and ``applier`` hold a row as a msgpack array of its values in column order (NULL when
there is no row); decoding builds the row class again, so a stored row is checked like a fresh
one. They hold at most the values the release before this one reads (:data:`_EARLIER_WIDTHS`),
which refuses a longer array: a value appended to a row after it goes to ``later``, a msgpack
map ``{"stats": [...], "applier": [...], "of": CRC}`` of each row's values after those (NULL when
there are none), CRC being the CRC-32 of the ``stats`` and ``applier`` bytes saved with it. An
older release that saves the record rewrites those two and leaves ``later`` as it was: the CRC
then differs, and the values ``later`` holds, which describe the row before, are not read (they
read as their defaults). So a rollback reads this release's file, and an upgrade after it
loses only the appended values of the rows the older release saved meanwhile. A save is one
transaction, so the file never holds part of one (WL#2775).

A file SQLite finds corrupt or not a database, or one of 0 bytes, raises RegistryDamaged;
:meth:`SqliteRegistry.set_aside` moves it aside, named with the time, for a new one.

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
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

import msgpack  # type: ignore[import-untyped]

from grstats.agent.registry.base import (
    MAX_TIME_US,
    MemberRecord,
    RegistryDamaged,
    RegistryError,
)
from grstats.core.rows import ApplierStatusRow, EventRow, MemberStatsRow

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from types import TracebackType

    from grstats.core.rows import Row

#: The version of the tables, kept in ``meta``; a file of another version is refused.
SCHEMA_VERSION = 1
#: The version of a stored record's values, kept in each row.
RECORD_VERSION = 1
#: The registry's file name in the agent's state directory.
REGISTRY_FILENAME = "members.sqlite3"

# How many values each array had when record version 1 was defined: later rows may be longer
# (columns are only appended), never shorter.
_V1_WIDTHS: dict[type[Row], int] = {MemberStatsRow: 13, ApplierStatusRow: 21}
# The most values of each array that the release before this one reads (main at e5928da: the
# rows' widths then, its ``newest``); a row's values after them are stored in ``later``.
_EARLIER_WIDTHS: dict[type[Row], int] = {MemberStatsRow: 13, ApplierStatusRow: 25}
# The values of each stored event (the columns of replication_group_events but REPORTED_BY).
# Earlier releases read exactly these: a value appended to an event goes to ``later`` too.
_EVENT_WIDTH = 7

# Opening. A full, read-only or vanished disk must give an error, never kill the agent. SQLite
# reads and writes through write(2), which reports a full disk as ENOSPC (SQLITE_FULL), unless
# it maps a file: a store into a mapped page that the file system cannot allocate is reported
# by SIGBUS, which kills the process. Two things map files: mmap_size > 0 maps the database
# (0 is SQLite's default unless built otherwise; it is set anyway), and WAL mode maps the
# -shm file that holds the WAL index. SQLite extends -shm by writing one byte at the end of
# each 4 KiB page (os_unix.c, unixShmMap), so on a nearly full file system of 1 KiB blocks
# the rest of each page stays a hole, and the first store into it is a SIGBUS: the agent died
# so at a flush, at SIGTERM and at a restart. Hence a rollback journal: no shared memory.
#
# TRUNCATE rather than DELETE: with synchronous=FULL, SQLite fsyncs the journal after
# truncating it at COMMIT (pager.c, pager_end_transaction: "Otherwise the journal might
# resurrect following a power loss"), so a save that returned survives kill -9 and power
# loss; DELETE would need synchronous=EXTRA to sync the directory after the unlink. WAL with
# locking_mode=EXCLUSIVE would keep the WAL index in heap memory instead, but would lock
# `grstats members forget` out of the file for as long as the agent runs. A reader now holds
# the file for the few ms of its read; a writer waits for it (busy_timeout_s). fullfsync asks
# macOS to flush the drive's cache too (plain fsync does not); elsewhere it is ignored.
#
# A file of an older grstats is in WAL mode (its header says so). Opening it the usual way
# would map its -shm, so the connection first takes locking_mode=EXCLUSIVE, with which SQLite
# keeps the WAL index in heap memory ("WAL databases can be created, read, and written even
# if shared memory is unavailable as long as the locking_mode is set to EXCLUSIVE before the
# first attempted access", sqlite.org/wal.html), then leaves WAL for TRUNCATE (checkpointing
# the WAL into the file), then returns to NORMAL locking. If the checkpoint cannot be made (a
# full disk), the connection stays in WAL with the index in heap memory, holding the file
# until it is closed, and the next connection tries again.
_PRAGMAS = (
    "PRAGMA locking_mode = EXCLUSIVE",  # first: before anything reads the file (see above)
    "PRAGMA mmap_size = 0",
    "PRAGMA synchronous = FULL",
    "PRAGMA fullfsync = ON",
)

# The members ``grstats members forget`` removed, until some save lists them again (appended).
_FORGOTTEN = "CREATE TABLE IF NOT EXISTS forgotten (member_id TEXT PRIMARY KEY COLLATE NOCASE)"

# The member's events (appended to version 1): NULL in the rows of a file written before.
_EVENTS = "ALTER TABLE members ADD COLUMN events BLOB"
# The values appended to the rows after the release before (appended to version 1, see above).
_LATER = "ALTER TABLE members ADD COLUMN later BLOB"

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
    _LATER,
)

_SELECT = """SELECT member_id, record_version, member_host, member_port, agent_address,
    first_seen_us, last_seen_us, last_state, stats, applier, gtid_executed, events, later
    FROM members ORDER BY member_id"""

_UPSERT = """INSERT INTO members (member_id, record_version, member_host, member_port,
    agent_address, first_seen_us, last_seen_us, last_state, stats, applier, gtid_executed,
    events, later)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (member_id) DO UPDATE SET
        member_id = excluded.member_id, record_version = excluded.record_version,
        member_host = excluded.member_host, member_port = excluded.member_port,
        agent_address = excluded.agent_address, first_seen_us = excluded.first_seen_us,
        last_seen_us = excluded.last_seen_us, last_state = excluded.last_state,
        stats = excluded.stats, applier = excluded.applier,
        gtid_executed = excluded.gtid_executed, events = excluded.events,
        later = excluded.later"""

_DEFAULT_BUSY_TIMEOUT_S = 5.0

# SQLite's primary result codes that say the file is damaged: SQLITE_CORRUPT ("database disk
# image is malformed") and SQLITE_NOTADB ("file is not a database").
_DAMAGE_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})

# The files SQLite keeps beside the database, named by it: the rollback journal, and the WAL
# and its index of a file an older grstats wrote.
_JOURNAL_SUFFIXES = ("-journal", "-wal", "-shm")

_R = TypeVar("_R", MemberStatsRow, ApplierStatusRow)
_M = TypeVar("_M", list[Any], dict[str, Any])


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
        self._identity: tuple[int, int] | None = None  # the open file's (device, inode)
        self._writable = True  # whether the open file could be written when it was opened
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

    def set_aside(self, at_us: int) -> str:
        """Move the damaged file and its journals aside, named with the UTC time ``at_us``.

        They become ``members.sqlite3.damaged-YYYYMMDDTHHMMSSZ`` and the same name with
        ``-journal``, ``-wal`` and ``-shm``, as SQLite names them, so the set-aside file opens
        with its journal; the journals go first, so that a new file never finds an old hot
        journal beside it. The next call starts a new, empty registry. Returns the new name.
        """
        with self._lock:
            self._drop()
            target = _aside_path(self.path, at_us)
            try:
                for suffix in (*_JOURNAL_SUFFIXES, ""):
                    source = Path(f"{self.path}{suffix}")
                    if suffix == "" or source.exists():
                        source.replace(f"{target}{suffix}")
                _sync_directory(self.path.parent)
            except OSError as exc:
                raise RegistryError(
                    f"member registry {self.path}: cannot move it aside to {target}: {exc}"
                ) from exc
            return str(target)

    @contextlib.contextmanager
    def _session(self, action: str) -> Iterator[sqlite3.Connection]:
        """Hold the lock and the open connection; translate sqlite3's and the OS's errors.

        A connection whose file is no longer at ``path`` (removed, or its directory) is
        dropped: its saves would land in a file no one can open. So is a connection SQLite
        opened read-only (a read-only disk) once the file may be written again.
        """
        with self._lock:
            if self._closed:
                raise RegistryError(f"member registry {self.path}: {action} after close")
            try:
                if self._db is not None and self._stale():
                    self._drop()
                if self._db is None:
                    self._db = self._open()
                yield self._db
            except RegistryError:
                self._drop()
                raise
            except (sqlite3.Error, OSError) as exc:
                self._drop()
                message = f"member registry {self.path}: {action} failed: {exc}{self._hint()}"
                if _is_damage(exc):
                    raise RegistryDamaged(message) from exc
                raise RegistryError(message) from exc

    def _stale(self) -> bool:
        """Whether the open connection is to another file, or read-only and need not be."""
        if _identity(self.path) != self._identity:
            return True
        return not self._writable and os.access(self.path, os.W_OK)

    def _hint(self) -> str:
        """Say that the directory is gone, when it is: SQLite says only 'unable to open'."""
        directory = self.path.parent
        return "" if directory.is_dir() else f" (the directory {directory} does not exist)"

    def _open(self) -> sqlite3.Connection:
        """Open the file, set the journal and durability, create or check the tables.

        A file that exists with 0 bytes is damaged: the registry creates a file and its tables
        in one go, and removes a file it created whose tables could not be made.
        """
        identity = _identity(self.path)
        if identity is not None and self.path.stat().st_size == 0:
            raise RegistryDamaged(
                f"member registry {self.path}: the file is empty (0 bytes), but a registry"
                " holds its tables from its creation on: it was truncated"
            )
        db = sqlite3.connect(
            self.path,
            timeout=self._busy_timeout_s,
            isolation_level=None,  # no implicit transactions: _transaction says BEGIN and COMMIT
            check_same_thread=False,
        )
        try:
            for pragma in _PRAGMAS:
                db.execute(pragma)
            _leave_wal(db)
            if _create_or_check_schema(db, self.path):
                _sync_directory(self.path.parent)
            _check_integrity(db, self.path)
        except BaseException:
            db.close()
            if identity is None:
                _remove_created(self.path)
            raise
        self._identity = _identity(self.path)
        self._writable = os.access(self.path, os.W_OK)  # else SQLite opened it read-only
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


def _identity(path: Path) -> tuple[int, int] | None:
    """The (device, inode) of the file at ``path``, None if there is none."""
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    return (status.st_dev, status.st_ino)


def _primary_code(exc: BaseException) -> int | None:
    """SQLite's primary result code of ``exc`` (the low byte of an extended one), if any."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def _is_damage(exc: BaseException) -> bool:
    """Whether SQLite found the file corrupt or not a database (SQLITE_CORRUPT, SQLITE_NOTADB)."""
    return _primary_code(exc) in _DAMAGE_CODES


def _leave_wal(db: sqlite3.Connection) -> None:
    """Set the TRUNCATE journal, leaving WAL without mapping its -shm (see _PRAGMAS).

    The connection is in EXCLUSIVE locking mode already; it returns to NORMAL once out of WAL.
    Leaving WAL writes the file; if that fails (a full or read-only disk), the connection
    stays in WAL with the index in heap memory, and the next one tries again. A damaged or
    busy file fails the open instead.
    """
    try:
        (mode,) = db.execute("PRAGMA journal_mode = TRUNCATE").fetchone()
    except sqlite3.OperationalError as exc:
        if _is_damage(exc) or _primary_code(exc) == sqlite3.SQLITE_BUSY:
            raise
        (mode,) = db.execute("PRAGMA journal_mode").fetchone()
    if mode != "wal":
        db.execute("PRAGMA locking_mode = NORMAL")


def _check_integrity(db: sqlite3.Connection, path: Path) -> None:
    """Raise RegistryDamaged if SQLite's quick_check finds the file damaged.

    A file truncated or overwritten in part may open and fail only at the page that was
    lost; quick_check reads every page (the registry is a few hundred KiB at most).
    """
    problems = [problem for (problem,) in db.execute("PRAGMA quick_check")]
    if problems != ["ok"]:
        raise RegistryDamaged(f"member registry {path}: the file is damaged: {problems[0]}")


def _remove_created(path: Path) -> None:
    """Remove the file ``_open`` created and could not make a registry (best effort).

    Left behind, its 0 bytes would be taken for a truncated registry at the next start.
    """
    for suffix in (*_JOURNAL_SUFFIXES, ""):
        with contextlib.suppress(OSError):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


def _aside_path(path: Path, at_us: int) -> Path:
    """Where the damaged file at ``path`` goes: its name, ``.damaged-`` and the UTC time.

    A second file damaged in the same second gets ``-2``, ``-3``, ... after the time.
    """
    stamp = datetime.fromtimestamp(at_us / 1_000_000, UTC).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    number = 1
    while any(Path(f"{target}{suffix}").exists() for suffix in (*_JOURNAL_SUFFIXES, "")):
        number += 1
        target = path.with_name(f"{path.name}.damaged-{stamp}-{number}")
    return target


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
        if "later" not in columns:
            db.execute(_LATER)  # a version-1 file of a grstats before later was appended
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
        stats, stats_after = _pack(record.stats)
        applier, applier_after = _pack(record.applier)
        events = _pack_events(record.events)
        later = _pack_later(stats, applier, {"stats": stats_after, "applier": applier_after})
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
        later,
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


def _pack(row: Row | None) -> tuple[bytes | None, list[Any]]:
    """Return the values of ``row`` the earlier release reads, packed (or None), and the rest."""
    if row is None:
        return None, []
    values = list(row.values())
    width = _EARLIER_WIDTHS[type(row)]
    packed: bytes = msgpack.packb(values[:width], use_bin_type=True)
    return packed, values[width:]


def _crc(stats: object, applier: object) -> int:
    """The CRC-32 that ties ``later`` to the ``stats`` and ``applier`` saved with it."""
    crc = 0
    for stored in (stats, applier):
        crc = zlib.crc32(stored if isinstance(stored, bytes) else b"\0", crc)
    return crc


def _pack_later(
    stats: bytes | None, applier: bytes | None, after: dict[str, list[Any]]
) -> bytes | None:
    """Return ``later`` of a record: its rows' appended values, None when there are none."""
    kept: dict[str, Any] = {field: values for field, values in after.items() if values}
    if not kept:
        return None
    kept["of"] = _crc(stats, applier)
    packed: bytes = msgpack.packb(kept, use_bin_type=True)
    return packed


def _unpack_later(stats: object, applier: object, stored: object) -> dict[str, list[Any]]:
    """Return each row's appended values in ``later``; none if an older release saved the rows."""
    values = _msgpack("later", stored, dict, "a map")
    if values is None:
        return {}
    if values.get("of") != _crc(stats, applier):
        return {}  # the rows were saved again by a release that does not know ``later``
    after = {field: values.get(field, []) for field in ("stats", "applier")}
    if not all(isinstance(value, list) for value in after.values()):
        raise _Unreadable("later: a row's values are not an array")
    return after


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
    stats, applier, gtids, events, later = values[8:]
    if version != RECORD_VERSION:
        if isinstance(version, int) and version > RECORD_VERSION:
            problem = f"record version {version} is newer than this grstats reads"
            raise _Unreadable(f"{problem} ({RECORD_VERSION})")
        raise _Unreadable(f"unknown record version {version!r}")
    after = _unpack_later(stats, applier, later)
    return MemberRecord(
        member_id=member_id,
        member_host=host,
        member_port=port,
        agent_address=address,
        first_seen_us=first_seen,
        last_seen_us=last_seen,
        last_state=state,
        stats=_unpack(MemberStatsRow, "stats", stats, after.get("stats", [])),
        applier=_unpack(ApplierStatusRow, "applier", applier, after.get("applier", [])),
        gtid_executed=gtids,
        events=_unpack_events(member_id, events),
    )


def _unpacked(field: str, stored: object) -> list[Any] | None:
    """The msgpack array stored in ``field``, None for NULL; _Unreadable says the fault."""
    return _msgpack(field, stored, list, "an array of values")


def _msgpack(field: str, stored: object, kind: type[_M], expected: str) -> _M | None:
    """The msgpack ``kind`` stored in ``field``, None for NULL; _Unreadable says the fault."""
    if stored is None:
        return None
    if not isinstance(stored, bytes):
        raise _Unreadable(f"{field}: stored as {type(stored).__name__}, not as msgpack bytes")
    try:
        values = msgpack.unpackb(stored, raw=False)
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise _Unreadable(f"{field}: not msgpack ({exc})") from exc
    if not isinstance(values, kind):
        raise _Unreadable(f"{field}: a msgpack {type(values).__name__}, not {expected}")
    return values


def _unpack(cls: type[_R], field: str, stored: object, after: list[Any]) -> _R | None:
    """Return the row of type ``cls`` stored in ``field`` then ``after``, or None.

    _Unreadable says the fault.
    """
    values = _unpacked(field, stored)
    if values is None:
        return None
    values += after
    width, newest = _V1_WIDTHS[cls], len(cls.TABLE.columns)
    if not width <= len(values) <= newest:
        raise _Unreadable(f"{field}: {len(values)} values, not {width}..{newest}")
    try:
        return cls(*values)
    except ValueError as exc:
        raise _Unreadable(f"{field}: {exc}") from exc
