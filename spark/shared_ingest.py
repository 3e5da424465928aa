"""Several collectors' spools into one table at once (``grstats spark ingest --shared``).

The single-writer ingest (:mod:`grstats.spark.ingest`) holds the table's lock and loads one
spool at a time; two collectors of one group would load the same member rows twice. A shared
ingest holds no table-wide lock: each run loads one spool's new sealed segments, in batches of
:data:`SEGMENTS_PER_COMMIT`, each batch one Delta commit to ``data/`` made by
:func:`grstats.spark.delta.append_new`: Delta's optimistic commit, retried on a concurrent
writer's commit after re-reading the table, and of the batch's member rows only those whose
identity (:data:`grstats.spark.delta.ROW_IDENTITY`: group, member, the member's own
LAST_SEEN) the table lacks. So each member row is loaded once, whichever collectors spooled it.

Each commit carries the spool's mark, Delta's application transaction (the ``txn`` action,
PROTOCOL.md "Transaction Identifiers") of :func:`grstats.collector.table_log.spool_app_id` at
the batch's last segment sequence number: every sealed segment up to it is loaded. A run loads
the segments after the mark, so a run killed anywhere loses and doubles nothing: before its
commit nothing of the batch is in the table (the files delta-rs wrote for an attempt that was
not committed are in no Delta version: no reader sees them, and delta-rs'
``vacuum(full=True)`` deletes them), after it the mark skips the batch. Only one
run of a spool at a time: it holds ``<table>/_grstats/spools/<app id>.lock`` (``flock``,
released by the kernel when the process dies); runs of different spools go concurrently.

Member rows only: no rollups, events or GR log lines (the single-writer ingest makes those;
the report reads every member row of a table without rollups). The rows are read in this
process (the segments' columns files, else their records), without Spark: run one shared
ingest per spool, on the collectors' hosts or beside the table. A corrupt segment is copied to
``<table>/_grstats/quarantine/<app id>-<segment>`` and counted under the mark, as the
single-writer ingest quarantines; a record of a schema version this grstats does not read
stops the run before that batch (the batches before it stand). A table that the single-writer
ingest has loaded (its commit log has entries) is refused: the two would not know each other's
rows.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from grstats.collector.errors import SegmentCorrupt, UnknownSchema
from grstats.collector.spool import parse_segment_name, sealed_segments
from grstats.collector.table_log import SPOOLS_DIR, read_commits, spool_app_id
from grstats.spark.decode import ARROW_MEMBER_ROWS, ColumnsUnusable, decode_segment, read_columns
from grstats.spark.delta import DeltaTableError, app_mark, append_new
from grstats.spark.table import QUARANTINE_DIR, TableError, check_table_dir

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

#: Sealed segments one Delta commit loads at most: fewer commits (and files) against less to
#: redo after a crash and less memory (a segment of an hour of a 3-member group at 1 s is
#: about 10,800 rows).
SEGMENTS_PER_COMMIT = 8


class SharedIngestError(Exception):
    """A shared ingest cannot go on: the message says what and where."""


@dataclass(slots=True)
class SharedIngestResult:
    """What one shared ingest of a spool did.

    Attributes:
        spool: the spool's resolved path.
        app_id: its Delta application id (the mark's).
        segments_total: sealed segments in the spool.
        segments_skipped: those at or before the mark (loaded before).
        segments_loaded: those this run loaded (quarantined ones included).
        rows_read: member rows read from them.
        rows_added: of those, rows the table lacked (the rest another spool loaded first).
        commits: Delta commits made.
        tries: commit attempts (more than ``commits``: concurrent commits met).
        quarantined: the corrupt segments set aside, by name.
        mark: the spool's mark after the run (0: none yet).
        seconds: the run's wall time.
    """

    spool: str
    app_id: str
    segments_total: int = 0
    segments_skipped: int = 0
    segments_loaded: int = 0
    rows_read: int = 0
    rows_added: int = 0
    commits: int = 0
    tries: int = 0
    quarantined: list[str] = field(default_factory=list)
    mark: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """Return the summary scripts get with ``--format json``."""
        return {
            "shared": True,
            "spool": self.spool,
            "app_id": self.app_id,
            "segments": {
                "total": self.segments_total,
                "skipped": self.segments_skipped,
                "loaded": self.segments_loaded,
                "quarantined": len(self.quarantined),
            },
            "rows": {"read": self.rows_read, "added": self.rows_added},
            "commits": self.commits,
            "tries": self.tries,
            "quarantined": self.quarantined,
            "mark": self.mark,
            "seconds": round(self.seconds, 3),
        }

    def text(self) -> str:
        """The summary people read."""
        if not self.segments_loaded:
            return (
                f"nothing to load: the table holds all {self.segments_total} sealed segments "
                f"of {self.spool} ({self.seconds:.1f} s)"
            )
        doubles = self.rows_read - self.rows_added
        return (
            f"shared: loaded {self.segments_loaded} segments of {self.spool} in "
            f"{self.commits} commits ({self.tries} attempts), {self.rows_added:,} new member "
            f"rows of {self.rows_read:,} read ({doubles:,} the table held already) in "
            f"{self.seconds:.1f} s; {self.segments_skipped} segments were loaded before"
            + "".join(f"\nquarantined {name}" for name in self.quarantined)
        )


def run_shared_ingest(
    spool_dir: Path | str,
    table_dir: Path | str,
    *,
    progress: Callable[[str], None] | None = None,
    use_columns: bool = True,
    segments_per_commit: int = SEGMENTS_PER_COMMIT,
) -> SharedIngestResult:
    """Load the sealed segments of ``spool_dir`` after its mark into ``table_dir``'s ``data/``.

    See the module's doc. ``use_columns`` False decodes every segment's records.

    Raises:
        SharedIngestError: another shared ingest of this spool runs, the table is not one a
            shared ingest loads, or a record has a schema version this grstats does not read.
        DeltaTableError: the Delta table cannot be read or written.
        SpoolError: the spool is not a directory.
    """
    began = time.monotonic()
    say = progress or (lambda _message: None)
    spool, table = Path(spool_dir).resolve(), Path(table_dir).resolve()
    sealed_segments(spool)  # a spool that is not a directory fails before anything is made
    _check_table(table)
    app_id = spool_app_id(spool)
    result = SharedIngestResult(str(spool), app_id)
    with _spool_lock(table, app_id, spool):
        segments = sealed_segments(spool)
        mark = app_mark(table, app_id)
        pending = [path for path in segments if _sequence(path) > mark]
        result.segments_total, result.segments_skipped = len(segments), len(segments) - len(pending)
        result.mark = mark
        if pending:
            say(f"loading {len(pending)} of {len(segments)} sealed segments of {spool}")
        for start in range(0, len(pending), max(segments_per_commit, 1)):
            batch = pending[start : start + max(segments_per_commit, 1)]
            rows = _read_batch(table, app_id, batch, result, say, use_columns=use_columns)
            upto = _sequence(batch[-1])
            appended = append_new(table, rows, app_id, upto)
            result.segments_loaded += len(batch)
            result.rows_read += rows.num_rows
            result.rows_added += appended.rows
            result.commits += 0 if appended.already else 1
            result.tries += appended.tries
            result.mark = upto
            say(
                f"committed segments up to {upto}: {appended.rows:,} new rows of "
                f"{rows.num_rows:,} ({appended.tries} attempts)"
            )
    result.seconds = time.monotonic() - began
    return result


def _check_table(table: Path) -> None:
    """Refuse a table directory a shared ingest must not load (naming ``--table``)."""
    try:
        check_table_dir(table)
    except TableError as exc:
        raise SharedIngestError(str(exc)) from exc
    commits = read_commits(table)
    if commits:
        raise SharedIngestError(
            f"--shared: {table} was loaded by the single-writer ingest ({len(commits)} commits "
            "in its log); shared ingests load a table of their own: load into a new table"
        )


def _sequence(path: Path) -> int:
    """A sealed segment's sequence number (its name says it)."""
    parsed = parse_segment_name(path.name)
    if parsed is None:  # sealed_segments lists only segments
        raise SharedIngestError(f"{path}: not a segment's name")
    return parsed[0]


@contextlib.contextmanager
def _spool_lock(table: Path, app_id: str, spool: Path) -> Iterator[None]:
    """Hold the spool's lock of shared ingests for the block; refuse while another holds it."""
    directory = table / SPOOLS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{app_id}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SharedIngestError(
                f"--spool: another shared ingest of {spool} holds {path}; the next run loads "
                "what it leaves"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{spool}\n".encode())  # which spool this id is, for people
        yield
    finally:
        os.close(fd)


def _read_batch(  # noqa: PLR0913  (where, what, and what to tell)
    table: Path,
    app_id: str,
    batch: list[Path],
    result: SharedIngestResult,
    say: Callable[[str], None],
    *,
    use_columns: bool,
) -> pa.Table:
    """The member rows of ``batch``'s segments; corrupt ones are quarantined, not read."""
    tables = []
    for path in batch:
        try:
            tables.append(_read_segment(path, use_columns=use_columns))
        except SegmentCorrupt as exc:
            copy = _quarantine(table, app_id, path)
            result.quarantined.append(path.name)
            say(f"quarantined {path}: offset {exc.offset}: {exc.reason} (copied to {copy})")
        except UnknownSchema as exc:
            raise SharedIngestError(
                f"{path}: {exc}; nothing of this segment or those after it was loaded: "
                "upgrade grstats"
            ) from exc
    if not tables:
        return ARROW_MEMBER_ROWS.empty_table()
    return pa.concat_tables(tables)


def _read_segment(path: Path, *, use_columns: bool) -> pa.Table:
    """A sealed segment's member rows: from its columns file where good, else its records."""
    if use_columns:
        try:
            return read_columns(path, path.stat().st_size).rows
        except ColumnsUnusable:
            pass
    return decode_segment(path).rows


def _quarantine(table: Path, app_id: str, path: Path) -> Path:
    """Copy a corrupt segment to the table's quarantine (the spool keeps it; prune removes it)."""
    directory = table / QUARANTINE_DIR
    directory.mkdir(parents=True, exist_ok=True)
    copy = directory / f"{app_id}-{path.name}"
    shutil.copyfile(path, copy)
    return copy


__all__ = [
    "SEGMENTS_PER_COMMIT",
    "DeltaTableError",
    "SharedIngestError",
    "SharedIngestResult",
    "run_shared_ingest",
]
