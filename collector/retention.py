"""Spool retention: remove the sealed segments that the table's commit log says are loaded.

The collector never deletes what it spools; ``grstats spark ingest`` loads the sealed
segments into a table and records each load in the table's commit log. This module reads
that log and removes from the spool the segments it names (``grstats spool prune``), so it
imports neither pyspark nor pyarrow: it runs on the collector's host.

The log (:mod:`grstats.collector.table_log`, the one reader and writer ingest uses too) is
``TABLE/_grstats/log/<commit>.json``, one entry per commit; an entry names the spool it loaded
and the segments it loaded or quarantined, with their sizes. A segment is the table's once an
entry of *this spool* names it, with all its rows (or, quarantined, with its copy under
``TABLE/_grstats/quarantine/``).

What :func:`prune` removes, and what never:

* removed: a sealed segment that a committed entry of this spool names as loaded or
  quarantined, whose size is the size the entry recorded, and whose commit is at least
  ``keep_days`` old; with it its columns file. A quarantined segment may go: the table keeps
  its copy, and ingest itself removes it from the spool (prune finishes the job where ingest
  could not, e.g. on a read-only mount).
* never: an ``.open`` segment; a sealed one that no committed entry of this spool names
  (not yet loaded, being loaded, or loaded from another spool of the same names); one
  whose size differs from the entry's (then the spool is not the one the table loaded, and
  the segment is reported); any other file of the spool.
* a columns file whose segment is already gone is removed when the log names that segment
  as loaded (a prune stopped between the two removals); otherwise it stays.

A shared ingest (``grstats spark ingest --shared``) keeps no entry: it marks how far it
loaded a spool in ``data/``'s Delta log (:func:`grstats.collector.table_log.shared_marks`),
and a sealed segment of this spool up to that mark counts as loaded, committed when the Delta
commit that carried the mark was (the mark records no size, so none is compared).

While an ingest runs it holds the table's lock (``TABLE/_grstats/.lock``); prune takes the
same lock, shared, for its removals, and removes nothing while an ingest holds it (the next
run prunes). Where the lock cannot be opened (a read-only table without one), it goes by the
commit point alone, which is enough: a segment an ingest is loading is in no committed
entry. Shared ingests take no table lock: the same holds of their mark, which a segment
passes only once the Delta commit of its rows is made.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grstats.collector.columns import SUFFIX as COLUMNS_SUFFIX
from grstats.collector.columns import columns_path
from grstats.collector.errors import CollectorError
from grstats.collector.spool import parse_segment_name
from grstats.collector.table_log import (
    LOCK_NAME,
    TableLogError,
    read_commits,
    shared_marks,
    spool_app_id,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator


class RetentionError(CollectorError):
    """The table's log cannot be read, or the spool cannot be listed: nothing was removed."""


@dataclass(frozen=True, slots=True)
class LoggedSegment:
    """A segment a committed entry names: loaded, or quarantined (then the table has a copy).

    Attributes:
        name: its file name in the spool.
        bytes: its size when ingest read it; None for a shared ingest's (its mark records
            no size).
        commit: the commit that named it (the last one, if several did); for a shared
            ingest's, the Delta version of ``data/`` that carried its mark.
        committed_at: when that commit was made.
        quarantined: whether the commit set it aside as corrupt instead of loading it.
    """

    name: str
    bytes: int | None
    commit: int
    committed_at: dt.datetime
    quarantined: bool


@dataclass(frozen=True, slots=True)
class TableSegments:
    """What the committed entries of a table say of one spool.

    Attributes:
        segments: the segments the entries of that spool name, by name.
        spools: every spool any entry names (to tell a person which ones the table knows).
        commits: how many commits the log holds.
    """

    segments: dict[str, LoggedSegment]
    spools: frozenset[str]
    commits: int


def logged_segments(
    table_dir: Path | str, spool: str, names: Iterable[str] | None = None
) -> TableSegments:
    """Return the segments the committed entries of ``table_dir`` name for spool ``spool``.

    ``spool`` is the spool's path as the entries record it (its absolute path when ingest
    ran). A table without a log names nothing. The segments shared ingests loaded (their
    mark in ``data/``'s Delta log, :func:`_shared_segments`) are those of the spool's
    file names ``names`` (None: those of the directory ``spool``).

    Raises:
        RetentionError: an entry is missing from the sequence, unreadable, of another format,
            or not what this reader expects (the message names the file and the field).
    """
    try:
        commits = read_commits(table_dir)
    except TableLogError as exc:
        raise RetentionError(f"--table: {exc}") from exc
    segments = _shared_segments(table_dir, spool, names)
    for entry in commits:
        if entry.spool != spool:
            continue
        for listed, quarantined in ((entry.segments, False), (entry.quarantined, True)):
            for segment in listed:
                name = segment["name"]
                segments[name] = LoggedSegment(
                    name, segment["bytes"], entry.number, entry.committed_time, quarantined
                )
    return TableSegments(segments, frozenset(entry.spool for entry in commits), len(commits))


def _shared_segments(
    table_dir: Path | str, spool: str, listed: Iterable[str] | None
) -> dict[str, LoggedSegment]:
    """The sealed segments of ``spool`` that shared ingests loaded, by the Delta log's mark.

    A shared ingest (``grstats spark ingest --shared``) marks how far it loaded a spool in
    ``data/``'s Delta log (:func:`grstats.collector.table_log.shared_marks`): every sealed
    segment whose sequence number is at most the mark. Only the segments of ``listed`` (None:
    of the directory ``spool``) are returned: the mark names none.

    Raises:
        RetentionError: the Delta log cannot be read.
    """
    try:
        mark = shared_marks(table_dir).get(spool_app_id(spool))
    except TableLogError as exc:
        raise RetentionError(f"--table: {exc}") from exc
    if mark is None:
        return {}
    if listed is None:
        try:
            listed = [entry.name for entry in os.scandir(spool)]
        except OSError:
            return {}
    found: dict[str, LoggedSegment] = {}
    for name in listed:
        parsed = parse_segment_name(name)
        load = None if parsed is None or not parsed[1] else mark.load_of(parsed[0])
        if load is not None:
            found[name] = LoggedSegment(name, None, load[1], load[0], quarantined=False)
    return found


@dataclass(frozen=True, slots=True)
class Removal:
    """One segment prune removed (or, in a dry run, would remove), with its columns file."""

    name: str
    bytes: int
    commit: int
    quarantined: bool


@dataclass(slots=True)
class PruneResult:
    """What one prune did.

    Attributes:
        spool: the spool's path as the table's log names it.
        removed: the segments removed (a dry run: that would be).
        kept_unloaded: sealed segments no committed entry of this spool names.
        kept_recent: loaded ones whose commit is younger than ``keep_days``.
        mismatched: loaded ones whose size differs from the entry's (kept; see the message).
        open: ``.open`` segments (never removed).
        orphan_columns: columns files of loaded segments already gone, removed.
        ingest_running: an ingest held the table's lock: nothing was removed.
        dry_run: nothing was removed, only listed.
        other_spools: the spools the log names when it names none of this one's segments.
    """

    spool: str
    removed: list[Removal] = field(default_factory=list)
    kept_unloaded: list[str] = field(default_factory=list)
    kept_recent: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)
    open: list[str] = field(default_factory=list)
    orphan_columns: list[str] = field(default_factory=list)
    ingest_running: bool = False
    dry_run: bool = False
    other_spools: list[str] = field(default_factory=list)

    @property
    def removed_bytes(self) -> int:
        """The bytes of the removed segments (their columns files not counted)."""
        return sum(removal.bytes for removal in self.removed)

    def to_json(self) -> dict[str, Any]:
        """Return the summary scripts get with ``--format json``."""
        return {
            "spool": self.spool,
            "dry_run": self.dry_run,
            "ingest_running": self.ingest_running,
            "removed": [
                {
                    "segment": r.name,
                    "bytes": r.bytes,
                    "commit": r.commit,
                    "quarantined": r.quarantined,
                }
                for r in self.removed
            ],
            "removed_bytes": self.removed_bytes,
            "kept": {
                "not_loaded": self.kept_unloaded,
                "recent": self.kept_recent,
                "size_differs": self.mismatched,
                "open": self.open,
            },
            "orphan_columns_removed": self.orphan_columns,
            "other_spools": self.other_spools,
        }


def prune(  # noqa: PLR0913  (the options are keyword-only, each with its default)
    spool_dir: Path | str,
    table_dir: Path | str,
    *,
    ingested_as: str | None = None,
    keep_days: float = 0.0,
    dry_run: bool = False,
    now: dt.datetime | None = None,
) -> PruneResult:
    """Remove from ``spool_dir`` the sealed segments ``table_dir``'s log names; see the module.

    ``ingested_as`` is the spool's path as the log records it (default: ``spool_dir``'s
    absolute path, as ingest on this host would record it); ``now`` is for tests.

    Raises:
        RetentionError: the spool cannot be listed, the log cannot be read, or a removal
            failed (the segments removed before it stay removed).
    """
    spool = Path(spool_dir)
    name = ingested_as if ingested_as is not None else str(spool.resolve())
    result = PruneResult(name, dry_run=dry_run)
    table = Path(table_dir)
    with _shared_lock(table) as locked:
        if not locked:
            result.ingest_running = True
            return result
        # Listed under the lock, after the log was read: what an ingest commits later is
        # simply not removed this time.
        files = _listing(spool)
        logged = logged_segments(table, name, files)
        if not logged.segments:
            result.other_spools = sorted(logged.spools - {name})
        cutoff = (now or dt.datetime.now(dt.UTC)) - dt.timedelta(days=keep_days)
        for path in sorted(files.values()):
            _judge(path, logged.segments, cutoff, result)
        _orphans(spool, files, logged.segments, result)
    return result


def _listing(spool: Path) -> dict[str, Path]:
    """The spool's files by name."""
    try:
        with os.scandir(spool) as entries:
            return {entry.name: Path(entry.path) for entry in entries}
    except (FileNotFoundError, NotADirectoryError):
        raise RetentionError(f"--spool: {str(spool)!r} is not a directory") from None
    except OSError as exc:
        raise RetentionError(f"--spool: cannot list {spool}: {exc}") from exc


def _judge(
    path: Path, logged: dict[str, LoggedSegment], cutoff: dt.datetime, result: PruneResult
) -> None:
    """Remove the segment at ``path`` if the rules let it go; note it in ``result`` either way."""
    parsed = parse_segment_name(path.name)
    if parsed is None:
        return  # not a segment: columns files go with theirs, anything else stays
    if not parsed[1]:
        result.open.append(path.name)
        return
    entry = logged.get(path.name)
    if entry is None:
        result.kept_unloaded.append(path.name)
        return
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return  # removed meanwhile (by ingest, a quarantined one, or another prune)
    if entry.bytes is not None and size != entry.bytes:
        result.mismatched.append(path.name)
        return
    if entry.committed_at > cutoff:
        result.kept_recent.append(path.name)
        return
    if not result.dry_run:
        # The columns file first: a prune stopped between the two leaves a loaded segment
        # without one (pruned next time), never a columns file without its segment.
        _remove(columns_path(path))
        _remove(path)
    result.removed.append(Removal(path.name, size, entry.commit, entry.quarantined))


def _orphans(
    spool: Path, files: dict[str, Path], logged: dict[str, LoggedSegment], result: PruneResult
) -> None:
    """Remove the columns files of loaded segments that are gone already."""
    for name in sorted(files):
        if not name.endswith(COLUMNS_SUFFIX) or not name.startswith("segment-"):
            continue
        stem = name.removesuffix(COLUMNS_SUFFIX)
        sealed, opened = f"{stem}.sealed", f"{stem}.open"
        if sealed not in logged or sealed in files or opened in files:
            continue
        if (spool / sealed).exists() or (spool / opened).exists():
            continue
        if not result.dry_run:
            _remove(files[name])
        result.orphan_columns.append(name)


def _remove(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise RetentionError(f"--spool: cannot remove {path}: {exc}") from exc


@contextlib.contextmanager
def _shared_lock(table: Path) -> Iterator[bool]:
    """Hold the table's ingest lock, shared, for the block; yield False while an ingest has it.

    Yields True, unlocked, when there is no lock file (no ingest ever ran) or it cannot be
    opened (a read-only table): the commit point alone then keeps loads in progress safe.
    """
    try:
        fd = os.open(table / LOCK_NAME, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.EACCES, errno.EPERM, errno.ENOTDIR):
            raise RetentionError(f"--table: cannot open {table / LOCK_NAME}: {exc}") from exc
        yield True
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
