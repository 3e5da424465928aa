"""The ingested table on disk: Parquet datasets that hold only committed files, and a commit log.

Layout of ``--table DIR``::

    data/commit=3/collected_date=2026-01-05/c00000000000000000003-segment-00000000000000000007.parquet
    rollups/members/commit=3/collected_date=2026-01-05/c00000000000000000003-segment-...7.parquet
    rollups/groups/commit=3/collected_date=2026-01-05/c00000000000000000003-segment-...7.parquet
                                              the segment's per-minute partials
                                              (:mod:`grstats.spark.rollup`)
    events/commit=3/c00000000000000000003-events.parquet
                                              the events commit 3 found new, each once
                                              (:mod:`grstats.spark.events`)
    log/commit=3/c00000000000000000003-log.parquet
                                              the GR log lines commit 3 found new, each
                                              once (:mod:`grstats.spark.member_log`)
    _grstats/log/00000000000000000003.json   commit 3: the segments it loaded, its files
    _grstats/staging/commit-00000000000000000004/   a load in progress (never read)
    _grstats/quarantine/c00000000000000000003-segment-00000000000000000009.sealed
                                              a corrupt segment's copy, set aside by commit 3
    _grstats/.lock                            held by the one ingest that may run

The log is the table's truth (the idea of WL#2775: the record of what was applied is stored
atomically with what was applied). A commit's entry names the segments it loaded or
quarantined and the files it added; it is written to a temporary file, fsynced and renamed
into place, and that rename is the commit. Its files are staged under
``_grstats/staging/commit-N/publish/`` at the very paths the entry names, one ``commit=N``
directory per dataset, and only after the commit is each of those directories renamed into
its dataset (:meth:`TableLog.publish`; a directory's rename is atomic, POSIX rename(2)).

So each dataset directory, ``data/`` (member rows), ``rollups/members/``,
``rollups/groups/``, ``events/`` and ``log/`` (GR's log lines), holds only committed files,
each commit's whole or none of them, and is a plain Hive-partitioned Parquet dataset (columns
``commit`` and ``collected_date`` from the directory names; ``events/`` and ``log/`` have
``commit`` alone) that Spark, DuckDB and pyarrow read without grstats' log
(docs/architecture.md, "Reading the table with other tools"). Read each dataset's directory,
not the table's root: the root holds five datasets of different schemas. An interrupted load
leaves at most a staging directory no entry names, which the next ingest deletes
(:meth:`TableLog.clean`); a run stopped after its commit but before its directories were all
renamed leaves a committed staging directory, whose renames the next ingest finishes
(:meth:`TableLog.finish_publishing`) before anything else, so nothing committed is lost.
A segment is therefore either in exactly one commit, with all its rows, or in none.
grstats' own readers (:func:`read_member_rows`, :func:`data_files`, ...) read the files the
log names, of the commits that are published: what a log-ignoring reader sees too.

Tables loaded before the ``commit=N`` directories keep their first commits' files at
``data/collected_date=D/...`` (and ``rollups/<kind>/collected_date=D/...``), as their entries
say; grstats reads both, other tools need a table loaded by this version (load the spool into
a new table).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import os
import re
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)

from grstats.collector.table_log import (
    LOCK_NAME,
    LOG_DIR,
    META_DIR,
    Commit,
    TableLogError,
    fsync_directory,
    read_commits,
    write_entry,
)
from grstats.spark import rollup
from grstats.spark.delta import (
    DeltaTableError,
    catch_up,
    dataset_files,
    files_of,
    held_commit,
)
from grstats.spark.events import read_event_files
from grstats.spark.member_log import read_log_files
from grstats.spark.schema import (
    GROUP_ROLLUPS,
    LATER_COLUMNS,
    MEMBER_ROLLUPS,
    MEMBER_ROW_COLUMNS,
    MEMBER_ROWS,
)

if TYPE_CHECKING:
    from types import TracebackType

    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

DATA_DIR = "data"
STAGING_DIR = f"{META_DIR}/staging"
QUARANTINE_DIR = f"{META_DIR}/quarantine"
#: The rollup files' directory: ``rollups/members/...`` and ``rollups/groups/...``.
ROLLUPS_DIR = rollup.ROLLUPS_DIR
#: The kinds of rollup, each a folder of ROLLUPS_DIR.
ROLLUP_KINDS = ("members", "groups")
#: The events' dataset: each event once, in the commit that first loaded it.
EVENTS_DIR = "events"
#: The GR log lines' dataset: each line once, in the commit that first loaded it.
GR_LOG_DIR = "log"
#: The table's Parquet datasets: the member rows, each kind of rollup, the events, the lines.
DATASETS = (
    DATA_DIR,
    *(f"{ROLLUPS_DIR}/{kind}" for kind in ROLLUP_KINDS),
    EVENTS_DIR,
    GR_LOG_DIR,
)
#: The partition column that a commit's directory in each dataset names.
COMMIT_COLUMN = "commit"
#: A load's staging directory holds, under this, its files at the paths its entry names.
PUBLISH_DIR = "publish"

_STAGING = re.compile(r"commit-(\d{20})")


class TableError(Exception):
    """The table directory cannot be used: not a grstats table, a broken log, or in use."""


def check_table_dir(table: Path) -> None:
    """Refuse a ``--table`` that is no directory, or a directory of other files than a table's.

    Raises:
        TableError: naming ``--table`` and the path.
    """
    if table.exists() and not table.is_dir():
        raise TableError(f"--table: {table} is not a directory")
    if table.is_dir() and any(table.iterdir()) and not (table / META_DIR).is_dir():
        raise TableError(
            f"--table: {table} is not a grstats table (it holds other files and no {META_DIR}/)"
        )


def data_file_name(number: int, segment: str) -> str:
    """Return the name under ``data/`` of the file commit ``number`` adds for ``segment``."""
    return f"c{number:020d}-{segment.rsplit('.', 1)[0]}.parquet"


def events_file_name(number: int) -> str:
    """The events file of commit ``number``, relative to the table directory."""
    return f"{EVENTS_DIR}/{commit_dir_name(number)}/c{number:020d}-events.parquet"


def log_file_name(number: int) -> str:
    """The GR log file of commit ``number``, relative to the table directory."""
    return f"{GR_LOG_DIR}/{commit_dir_name(number)}/c{number:020d}-log.parquet"


def commit_dir_name(number: int) -> str:
    """Return the directory that holds commit ``number``'s files in each dataset."""
    return f"{COMMIT_COLUMN}={number}"


def staging_dir(table_dir: Path | str, number: int) -> Path:
    """Return the directory where the load that becomes commit ``number`` stages its files."""
    return Path(table_dir) / STAGING_DIR / f"commit-{number:020d}"


def quarantine_copy_name(number: int, segment: str) -> str:
    """Return the name under the quarantine of commit ``number``'s copy of ``segment``.

    The commit number keeps apart the copies of segments of one name from several spools
    (each commit loads one spool, which its entry names).
    """
    return f"c{number:020d}-{segment}"


class TableLog:
    """The commit log of the table at ``table_dir`` (read once, when created)."""

    def __init__(self, table_dir: Path | str) -> None:
        self.table_dir = Path(table_dir)
        self.commits = self._read()

    # -- reading -----------------------------------------------------------------------

    def _read(self) -> list[Commit]:
        try:
            return read_commits(self.table_dir)
        except TableLogError as exc:
            raise TableError(str(exc)) from exc

    @property
    def next_number(self) -> int:
        """The number the next commit gets."""
        return len(self.commits) + 1

    def unpublished(self) -> list[int]:
        """The commits whose files are not all in their datasets yet (their run stopped)."""
        staging = self.table_dir / STAGING_DIR
        if not staging.is_dir():
            return []
        return sorted(
            number
            for path in staging.iterdir()
            if (match := _STAGING.fullmatch(path.name)) is not None
            and (number := int(match.group(1))) <= len(self.commits)
        )

    def _published(self) -> list[Commit]:
        waiting = set(self.unpublished())
        return [commit for commit in self.commits if commit.number not in waiting]

    def committed_files(self) -> list[Path]:
        """Every data file of every published commit, absolute, in commit order."""
        return [self.table_dir / path for commit in self._published() for path in commit.files]

    def committed_rollup_files(self, kind: str) -> list[Path]:
        """Every rollup file of ``kind`` ("members" or "groups") of every commit, absolute."""
        if kind not in ROLLUP_KINDS:
            raise ValueError(f"kind: {kind!r} is not one of {', '.join(ROLLUP_KINDS)}")
        prefix = f"{ROLLUPS_DIR}/{kind}/"
        return [
            self.table_dir / path
            for commit in self._published()
            for path in commit.rollup_files
            if path.startswith(prefix)
        ]

    def committed_event_files(self) -> list[Path]:
        """Every events file of every published commit, absolute, in commit order."""
        return [self.table_dir / path for commit in self._published() for path, _ in commit.events]

    def rollup_settings(self) -> dict[str, Any] | None:
        """The settings every loaded segment's rollups were made with, or None.

        None unless every commit that loaded segments has rollups for each of them and all
        those commits recorded the same settings: a table loaded in part before rollups
        existed (or with other settings) must be reported from its rows. A commit that only
        quarantined segments made no rollups and counts for nothing. None for a table that
        loaded nothing.
        """
        loading = [commit for commit in self.commits if commit.segments]
        if not loading:
            return None
        settings = loading[0].rollup_settings
        if settings is None:
            return None
        for commit in loading:
            if commit.rollup_settings != settings:
                return None
            if any("rollups" not in segment for segment in commit.segments):
                return None
        return dict(settings)

    def known_segments(self, spool: str | None = None) -> dict[str, dict[str, Any]]:
        """The segments loaded or quarantined by some commit, by name.

        With ``spool``, only those of commits that loaded that spool directory: the segments
        of several spools (one per collector) have the same names.
        """
        known: dict[str, dict[str, Any]] = {}
        for commit in self.commits:
            if spool is not None and commit.spool != spool:
                continue
            for segment in (*commit.segments, *commit.quarantined):
                known[segment["name"]] = {**segment, "commit": commit.number}
        return known

    # -- writing -----------------------------------------------------------------------

    def publish(self, number: int) -> None:
        """Rename committed ``number``'s staged directories into their datasets; drop its staging.

        Each dataset gets the commit's ``commit=N`` directory in one rename; one already renamed
        (by a run that stopped half-way) is left. Only an ingest holding the table's lock may
        call this, and only for a commit the log holds.
        """
        if not 1 <= number <= len(self.commits):
            raise TableError(f"{self.table_dir}: commit {number} is not in the log")
        staging = staging_dir(self.table_dir, number)
        for dataset in DATASETS:
            staged = staging / PUBLISH_DIR / dataset / commit_dir_name(number)
            if not staged.is_dir():
                continue
            target = self.table_dir / dataset / commit_dir_name(number)
            created = not target.parent.is_dir()
            target.parent.mkdir(parents=True, exist_ok=True)
            staged.rename(target)
            fsync_directory(target.parent)
            if created:
                for directory in (target.parent.parent, target.parent.parent.parent):
                    if directory.is_relative_to(self.table_dir):
                        fsync_directory(directory)
        # Each dataset's Delta table, of this commit and any earlier one it lacks: before the
        # staging goes, so that a run stopped here is finished by finish_publishing.
        self.catch_up(self.commits[:number])
        shutil.rmtree(staging)
        with contextlib.suppress(OSError):  # not empty: another load's staging
            staging.parent.rmdir()

    def finish_publishing(self) -> list[int]:
        """Publish the commits whose run stopped before it had; return their numbers.

        Only an ingest holding the table's lock may call this.
        """
        numbers = self.unpublished()
        for number in numbers:
            self.publish(number)
        return numbers

    def clean(self) -> list[Path]:
        """Delete what no commit names: uncommitted staging, stray data and rollup files, copies.

        Only an ingest holding the table's lock may call this, after
        :meth:`finish_publishing` (committed staging directories are kept). Returns what was
        deleted: each uncommitted load's staging directory, each stray file.
        """
        removed = self._clean_staging()
        named = {
            self.table_dir / path
            for commit in self.commits
            for path in (
                *commit.files,
                *commit.rollup_files,
                *(path for path, _ in commit.events),
                *(path for path, _ in commit.log_lines),
            )
        }
        named |= {
            self.table_dir / entry["copy"]
            for commit in self.commits
            for entry in commit.quarantined
        }
        for top in (DATA_DIR, ROLLUPS_DIR, EVENTS_DIR, GR_LOG_DIR, QUARANTINE_DIR):
            directory = self.table_dir / top
            if not directory.is_dir():
                continue
            for path in sorted(directory.rglob("*")):
                if top != QUARANTINE_DIR and not _in_commit_dir(path.relative_to(directory)):
                    continue  # Delta's own: its log, files compaction wrote (vacuum's to drop)
                if path.is_file() and path not in named:
                    path.unlink()
                    removed.append(path)
        log_dir = self.table_dir / LOG_DIR
        if log_dir.is_dir():
            for path in log_dir.glob("*.tmp"):
                path.unlink()
                removed.append(path)
        return removed

    def _clean_staging(self) -> list[Path]:
        """Delete the staging directories of uncommitted loads (and the staging's strays)."""
        staging = self.table_dir / STAGING_DIR
        if not staging.is_dir():
            return []
        removed = []
        committed = set(self.unpublished())
        for path in sorted(staging.iterdir()):
            match = _STAGING.fullmatch(path.name)
            if match is not None and int(match.group(1)) in committed:
                continue
            removed.append(path)
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        with contextlib.suppress(OSError):  # an empty staging directory is no leftover
            staging.rmdir()
        return removed

    def catch_up(self, commits: list[Commit] | None = None) -> dict[str, int]:
        """Add to the datasets' Delta tables what they lack of ``commits`` (None: the published).

        Only an ingest holding the table's lock, or ``grstats spark convert``, may call this.
        Returns the files added, by dataset (:func:`grstats.spark.delta.catch_up`).
        """
        try:
            return catch_up(self.table_dir, self._published() if commits is None else commits)
        except DeltaTableError as exc:
            raise TableError(str(exc)) from exc

    def check_delta(self, dataset: str) -> None:
        """Refuse to read ``dataset`` when its Delta table lacks a published commit's files.

        A table loaded by an earlier grstats has the log and no Delta log: reading it as
        empty would be wrong, so the reader is told to convert it.
        """
        adding = [commit.number for commit in self._published() if files_of(commit, dataset)]
        try:
            held = held_commit(self.table_dir, dataset)
        except DeltaTableError as exc:
            raise TableError(str(exc)) from exc
        if adding and held < adding[-1]:
            raise TableError(
                f"{self.table_dir}: {dataset}/ lacks the Delta log of commit {adding[-1]} "
                "(a table of an earlier grstats): run 'grstats spark convert --table "
                f"{self.table_dir}' (or an ingest) to write it"
            )

    def commit(self, commit: Commit) -> Path:
        """Write ``commit``'s entry atomically (the commit point) and return its path."""
        if commit.number != self.next_number:
            raise TableError(
                f"{self.table_dir}: commit {commit.number} is not the next one ({self.next_number})"
            )
        target = write_entry(self.table_dir, commit)
        self.commits.append(commit)
        return target


def _in_commit_dir(relative: Path) -> bool:
    """Whether a path in a dataset lies in a commit's directory (``[rollups/kind/]commit=N/``).

    Only those are ingest's: the rest of a dataset directory is the Delta table's (its
    ``_delta_log/``, the files compaction wrote), or an older table's first files, which
    the log names.
    """
    return any(part.startswith(f"{COMMIT_COLUMN}=") for part in relative.parts[:-1])


def now_text() -> str:
    """The current UTC time as ISO 8601 with seconds."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class TableLock:
    """The table's exclusive lock: one ingest at a time (``with TableLock(dir): ...``).

    ``grstats spool prune`` holds it shared for the milliseconds of its removals
    (:mod:`grstats.collector.retention`), so taking it waits up to WAIT_S before it calls
    the table busy: another ingest holds it for its whole load.
    """

    #: How long taking the lock waits for a shared holder, in seconds.
    WAIT_S = 2.0

    def __init__(self, table_dir: Path | str) -> None:
        self.path = Path(table_dir) / LOCK_NAME
        self._fd: int | None = None

    def __enter__(self) -> Self:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline = time.monotonic() + self.WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError as exc:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise TableError(
                        f"{self.path.parent.parent}: another ingest is loading this table "
                        f"(it holds {self.path})"
                    ) from exc
                time.sleep(0.02)
        self._fd = fd
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def read_member_rows(spark: SparkSession, table_dir: Path | str) -> DataFrame:
    """Return the table's committed member rows as a DataFrame with the MEMBER_ROWS schema.

    Only files named by a commit are read, so a load in progress or an interrupted one is never
    seen. A directory without commits gives an empty DataFrame. Data files written before a
    column of :data:`LATER_COLUMNS` existed read as that column's default (``group_label``
    ``default``, ``group_name`` and ``agent_group_label`` ""), so older tables need no
    migration.

    Raises:
        TableError: the log is broken (a missing commit, an unreadable entry).
    """
    table = Path(table_dir)
    files = delta_files(table, DATA_DIR)
    if not files:
        return spark.createDataFrame([], MEMBER_ROWS)
    frame = _read_parquet(spark, MEMBER_ROWS, table / DATA_DIR, files)
    return frame.select(
        *(
            # when/otherwise, not coalesce: the column stays nullable, as MEMBER_ROWS says
            F.when(F.col(name).isNull(), F.lit(LATER_COLUMNS[name]))
            .otherwise(F.col(name))
            .alias(name)
            if name in LATER_COLUMNS
            else F.col(name)
            for name in MEMBER_ROW_COLUMNS
        )
    )


def read_member_rollups(
    spark: SparkSession,
    table_dir: Path | str,
    first_day: dt.date | None = None,
    last_day: dt.date | None = None,
) -> DataFrame:
    """Return the table's committed member rollups, a DataFrame with the MEMBER_ROLLUPS schema.

    Only files named by a commit are read, and of those only the UTC dates from ``first_day``
    to ``last_day`` (None: unbounded), chosen by their partition directory before Spark lists
    anything; a table without any gives an empty DataFrame. Whether they cover every loaded
    segment is :meth:`TableLog.rollup_settings`'s answer.

    Raises:
        TableError: the log is broken (a missing commit, an unreadable entry).
    """
    return _read_rollups(spark, Path(table_dir), "members", MEMBER_ROLLUPS, (first_day, last_day))


def read_group_rollups(
    spark: SparkSession,
    table_dir: Path | str,
    first_day: dt.date | None = None,
    last_day: dt.date | None = None,
) -> DataFrame:
    """Return the table's committed group rollups, a DataFrame with the GROUP_ROLLUPS schema.

    As :func:`read_member_rollups`.
    """
    return _read_rollups(spark, Path(table_dir), "groups", GROUP_ROLLUPS, (first_day, last_day))


def rollup_files(
    table_dir: Path | str,
    kind: str,
    first_day: dt.date | None = None,
    last_day: dt.date | None = None,
) -> list[Path]:
    """Return the committed rollup files of ``kind`` ("members" or "groups") in a range of days.

    The UTC dates from ``first_day`` to ``last_day`` (None: unbounded), chosen by the files'
    partition directory.

    Raises:
        TableError: the log is broken (a missing commit, an unreadable entry).
    """
    if kind not in ROLLUP_KINDS:
        raise ValueError(f"kind: {kind!r} is not one of {', '.join(ROLLUP_KINDS)}")
    return delta_files(table_dir, f"{ROLLUPS_DIR}/{kind}", first_day, last_day)


def _read_rollups(
    spark: SparkSession,
    table: Path,
    kind: str,
    schema: StructType,
    days: tuple[dt.date | None, dt.date | None],
) -> DataFrame:
    files = rollup_files(table, kind, *days)
    if not files:
        return spark.createDataFrame([], schema)
    frame = _read_parquet(spark, schema, table / ROLLUPS_DIR / kind, files)
    return frame.select(*schema.fieldNames())  # not the partition column the paths add


def _read_parquet(
    spark: SparkSession, schema: StructType, dataset: Path, files: list[Path]
) -> DataFrame:
    """Read ``files`` of the ``dataset`` directory with ``schema`` and the paths' partitions.

    Files under ``commit=N/`` and those of older tables directly under ``collected_date=D/``
    are read apart (Spark refuses paths of two partition layouts in one read) and unioned.
    """
    layouts: dict[bool, list[Path]] = {}
    for path in files:
        layouts.setdefault(path.parent.parent.name.startswith(f"{COMMIT_COLUMN}="), []).append(path)
    frames = [
        spark.read.schema(schema)
        .option("basePath", str(dataset))
        .parquet(*(str(path) for path in group))
        .select(*schema.fieldNames())
        for group in layouts.values()
    ]
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.unionByName(other)
    return frame


def data_files(
    table_dir: Path | str, first_day: dt.date | None = None, last_day: dt.date | None = None
) -> list[Path]:
    """Return the committed member-row files of the UTC dates from ``first_day`` to ``last_day``.

    None is unbounded; the dates are the files' partition directories, as :func:`rollup_files`.

    Raises:
        TableError: the log is broken (a missing commit, an unreadable entry).
    """
    return delta_files(table_dir, DATA_DIR, first_day, last_day)


def read_events(table_dir: Path | str) -> pa.Table:
    """Every committed event of the table at ``table_dir`` (ARROW_EVENTS; none: empty).

    Raises:
        TableError: the log is broken, or the Delta table lags it (convert the table).
    """
    return read_event_files(delta_files(table_dir, EVENTS_DIR))


def read_log(table_dir: Path | str) -> pa.Table:
    """Every committed GR log line of the table at ``table_dir`` (ARROW_LOG; none: empty).

    Raises:
        TableError: the log is broken, or the Delta table lags it (convert the table).
    """
    return read_log_files(delta_files(table_dir, GR_LOG_DIR))


def delta_files(
    table_dir: Path | str,
    dataset: str,
    first_day: dt.date | None = None,
    last_day: dt.date | None = None,
) -> list[Path]:
    """The files of ``dataset``'s current Delta version, of the UTC dates asked (None: any).

    What every Delta reader reads (:func:`grstats.spark.delta.dataset_files`), once the log
    says the Delta table holds every published commit (:meth:`TableLog.check_delta`).

    Raises:
        TableError: the log is broken, or the Delta table lags it (convert the table).
    """
    TableLog(table_dir).check_delta(dataset)
    try:
        return dataset_files(table_dir, dataset, first_day, last_day)
    except DeltaTableError as exc:
        raise TableError(str(exc)) from exc
