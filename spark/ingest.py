"""Load a spool's sealed segments into the table, exactly once (``grstats spark ingest``).

One run:

1. takes the table's lock and reads its commit log; refuses rollup settings
   (:class:`RollupSettings`) other than those the table's rollups were made with (a table
   keeps one setting); finishes putting in place the files of a commit whose run stopped
   before it had (:meth:`TableLog.finish_publishing`), then deletes what an interrupted,
   uncommitted run left (:meth:`TableLog.clean`);
2. lists the spool's sealed segments and keeps those no commit of this spool names (a
   segment a commit names but whose size changed is an error: the spool is not the one this
   table loads). Several spools (one per collector) load into one table: a spool is known by
   its directory's absolute path, so it must keep that path;
3. runs one Spark job whose tasks each take a few consecutive segments (:func:`task_sizes`):
   the executors read each segment's rows (from its columns file, which the collector wrote
   at the seal, else by decoding its records) and stage their Parquet files, data and
   per-minute rollups (:mod:`grstats.spark.stage`, :mod:`grstats.spark.rollup`), so the work
   scales with the executors;
4. refuses the whole run if a record has an unknown schema version (nothing is committed;
   the message names the version and the file); copies corrupt segments to the quarantine;
5. renames the staged files, inside the staging directory, to the paths the commit names
   (one ``commit=N`` directory per dataset), writes there the events of the loaded segments
   that no earlier commit holds, each once (:mod:`grstats.spark.events`), and their GR log
   lines likewise (:mod:`grstats.spark.member_log`), and commits one log entry naming the
   segments loaded and quarantined, their files, the events and lines files and the rollups'
   settings: that rename is the commit;
6. renames each dataset's ``commit=N`` directory into place (``data/``,
   ``rollups/members/``, ``rollups/groups/``, ``events/``, ``log/``), then deletes the staging
   directory and the quarantined segments from the spool.

A run stopped anywhere, however abruptly, loses nothing and duplicates nothing: before 5's
commit no entry names the new files, so the next run deletes them and loads the same
segments again; after it they are loaded and are skipped, and the next run finishes 6.
No dataset directory ever holds a file of an uncommitted load (:mod:`grstats.spark.table`).
On a cluster the spool and the table must be on
storage that the driver and every executor see at the same paths (NFS, a shared volume).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grstats.collector.columns import columns_path
from grstats.collector.spool import sealed_segments
from grstats.collector.table_log import Commit, fsync_directory
from grstats.spark.compact_settings import COMPACT_OVER
from grstats.spark.compact_settings import TARGET_MIB as COMPACT_TARGET_MIB
from grstats.spark.delta import DeltaTableError, compact, crowded_days
from grstats.spark.events import events_table, new_events, write_events
from grstats.spark.member_log import log_table, new_lines, write_log
from grstats.spark.publish import PublishError, publish
from grstats.spark.rollup import (
    DEFAULT_SETTINGS,
    ROLLUPS_DIR,
    RollupSettings,
    RollupSettingsError,
)
from grstats.spark.schema import PARTITION_COLUMN
from grstats.spark.stage import CORRUPT, LOADED, UNKNOWN_SCHEMA, StagedSegment, stage_partition
from grstats.spark.table import (
    DATA_DIR,
    DATASETS,
    PUBLISH_DIR,
    QUARANTINE_DIR,
    TableError,
    TableLock,
    TableLog,
    check_table_dir,
    commit_dir_name,
    data_file_name,
    events_file_name,
    log_file_name,
    now_text,
    quarantine_copy_name,
    read_events,
    read_log,
    staging_dir,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    import pyarrow as pa
    from pyspark.sql import SparkSession

    from grstats.spark.stage import StageTask


#: Segments a task stages at most: each task costs Spark and its Python worker a fixed amount on
#: top of its segments, so a few per task keep that cost small while a retried task redoes
#: little and progress still moves (docs/benchmarks.md, "Spark ingest", has the figures).
SEGMENTS_PER_TASK = 4
#: Tasks per core that small spools are split into, so that every core has work to the end.
TASKS_PER_CORE = 3


def task_sizes(segments: int, cores: int) -> list[int]:
    """Return how many consecutive segments each task stages, the larger tasks first.

    As many tasks as SEGMENTS_PER_TASK needs, but at least TASKS_PER_CORE per core (one
    segment each when there are fewer segments); sizes differ by one at most.
    """
    if segments <= 0:
        return []
    tasks = max(-(-segments // SEGMENTS_PER_TASK), min(segments, TASKS_PER_CORE * max(cores, 1)))
    size, larger = divmod(segments, tasks)
    return [size + 1] * larger + [size] * (tasks - larger)


#: What ``rows_per_second`` divides by, in the JSON summary.
RATE_NOTE = (
    "job_seconds: the Spark job that read and staged the segments; not starting Spark, the "
    "log, the commit, nor the class archive a machine's first command writes as it exits"
)


class IngestError(Exception):
    """Ingest cannot go on: the message says what and where; nothing was committed."""


class SettingsRefused(IngestError):
    """The rollup settings asked for differ from those the table keeps; nothing was loaded."""


@dataclass(frozen=True, slots=True)
class Quarantined:
    """A corrupt segment set aside: where it was, the bad frame's offset, what is wrong."""

    name: str
    bytes: int
    offset: int
    reason: str
    copy: str


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestResult:
    """What one ingest run did.

    Attributes:
        commit: the commit it made, or None when there was nothing new.
        segments_total: sealed segments in the spool.
        segments_skipped: those an earlier commit had loaded or quarantined.
        segments_loaded: those this run loaded.
        records: records (snapshots) loaded.
        rows: member rows loaded.
        from_columns: loaded segments whose rows came from their columns file (the others'
            records were decoded).
        quarantined: the corrupt segments this run set aside.
        seconds: wall time of the load: reading the log, the Spark job, the commit and
            putting its files in place; not starting Spark, nor the class archive a
            machine's first command writes as it exits (:mod:`grstats.spark.class_archive`).
        job_seconds: of ``seconds``, the Spark job that read and staged the segments.
        cleaned: leftovers of an interrupted, uncommitted run that were deleted first.
        finished: commits whose run stopped before their files were all in place, which this
            run put in place first (no leftovers: their rows were committed).
        files: data files this run added.
        events: events this run added: those of its segments no earlier commit holds.
        log_lines: GR log lines this run added, likewise.
        compacted: files this run compacted, in the datasets and dates it added to that held
            more than ``compact_over`` files (:func:`_compact_crowded`).
        published: Delta versions copied to ``publish_to`` (:mod:`grstats.spark.publish`).
    """

    commit: int | None
    segments_total: int
    segments_skipped: int
    segments_loaded: int
    records: int
    rows: int
    from_columns: int = 0
    quarantined: tuple[Quarantined, ...] = ()
    seconds: float = 0.0
    job_seconds: float = 0.0
    cleaned: int = 0
    finished: int = 0
    files: int = 0
    events: int = 0
    log_lines: int = 0
    compacted: int = 0
    published: int = 0

    @property
    def rows_per_second(self) -> float:
        """Member rows loaded per second of the Spark job (``job_seconds``)."""
        return self.rows / self.job_seconds if self.job_seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        """Return the summary scripts get with ``--format json``."""
        return {
            "commit": self.commit,
            "segments": {
                "total": self.segments_total,
                "skipped": self.segments_skipped,
                "loaded": self.segments_loaded,
                "from_columns": self.from_columns,
                "quarantined": len(self.quarantined),
            },
            "records": self.records,
            "rows": self.rows,
            "events": self.events,
            "log_lines": self.log_lines,
            "files": self.files,
            "compacted": self.compacted,
            "published": self.published,
            "quarantined": [
                {"segment": q.name, "offset": q.offset, "reason": q.reason, "copy": q.copy}
                for q in self.quarantined
            ],
            "cleaned": self.cleaned,
            "finished": self.finished,
            "seconds": round(self.seconds, 3),
            "job_seconds": round(self.job_seconds, 3),
            "rows_per_second": round(self.rows_per_second),
            "rows_per_second_of": RATE_NOTE,
        }


def run_ingest(  # noqa: PLR0913  (the options are keyword-only, each with its default)
    spark: SparkSession,
    spool_dir: Path | str,
    table_dir: Path | str,
    *,
    progress: Callable[[str], None] | None = None,
    rollups: RollupSettings = DEFAULT_SETTINGS,
    use_columns: bool = True,
    compact_over: int | None = COMPACT_OVER,
    publish_to: str | None = None,
) -> IngestResult:
    """Load the sealed segments of ``spool_dir`` that ``table_dir`` lacks; see the module doc.

    The rollups are made with ``rollups``: a table keeps the settings of its first commit
    that made rollups, so other settings are refused before anything is loaded. A segment's
    rows are read from its columns file where it has a good one, unless ``use_columns`` is
    False (then every segment's records are decoded; the rows are the same). After its
    commit, each dataset's dates it added to that hold more than ``compact_over`` files are
    compacted (None: never; ``grstats spark compact`` does it on demand). With ``publish_to``
    (``s3://bucket/prefix``), the datasets' Delta versions the copy there lacks are then
    copied to it, still under the lock (:mod:`grstats.spark.publish`), also when there was
    nothing to load, so that a copy a failed run left behind catches up.

    Raises:
        SettingsRefused: ``rollups`` differ from the settings of the table's rollups.
        IngestError: a record of an unknown schema version, or a loaded segment that changed.
        TableError: the table directory is not a grstats table, its log is broken, or another
            ingest holds its lock.
        SpoolError: the spool is not a directory.
    """
    began = time.monotonic()
    say = progress or (lambda _message: None)
    spool, table = Path(spool_dir).resolve(), Path(table_dir).resolve()
    sealed_segments(spool)  # a spool that is not a directory fails before the table is locked
    check_table_dir(table)
    with TableLock(table):
        # Listed under the lock: ``grstats spool prune`` removes loaded segments only while it
        # holds the lock (shared), so none of these vanishes before this run has read it.
        segments = sealed_segments(spool)
        log = TableLog(table)
        _check_settings(log, rollups)
        finished = log.finish_publishing()
        for number in finished:
            say(f"put commit {number}'s files in place: the run that committed it had not")
        cleaned = log.clean()
        if cleaned:
            say(f"deleted {len(cleaned)} leftovers of an uncommitted ingest")
        _catch_up(log, say)
        known = log.known_segments(str(spool))
        pending = _pending(spool, segments, known)
        skipped = len(segments) - len(pending)
        _remove_quarantined(segments, known, say)
        if not pending:
            say(f"nothing to load: all {len(segments)} sealed segments are in the table")
            published = _publish(table, publish_to, None, say)
            return IngestResult(
                commit=None,
                segments_total=len(segments),
                segments_skipped=skipped,
                segments_loaded=0,
                records=0,
                rows=0,
                seconds=time.monotonic() - began,
                cleaned=len(cleaned),
                finished=len(finished),
                published=published,
            )
        number = log.next_number
        staging = staging_dir(table, number)
        staging.mkdir(parents=True)
        say(f"loading {len(pending)} of {len(segments)} sealed segments (commit {number})")
        job_began = time.monotonic()
        staged = _stage(spark, pending, staging, (rollups, use_columns), say)
        job_seconds = time.monotonic() - job_began
        refused = [s for s in staged if s.status == UNKNOWN_SCHEMA]
        if refused:
            shutil.rmtree(staging)
            details = "; ".join(str(s.reason) for s in refused)
            raise IngestError(
                f"{len(refused)} segment(s) hold records of a schema version this grstats "
                f"does not read; nothing was loaded. {details}"
            )
        quarantined = _quarantine(
            table, spool, number, [s for s in staged if s.status == CORRUPT], say
        )
        loaded = [s for s in staged if s.status == LOADED]
        entries = _arrange(staging, number, loaded)
        events_files, events = _stage_rows(_EVENTS, table, staging, number, loaded, say)
        log_files, log_lines = _stage_rows(_LOG, table, staging, number, loaded, say)
        commit = Commit(
            number,
            now_text(),
            str(spool),
            tuple(entries),
            tuple(
                {
                    "name": q.name,
                    "bytes": q.bytes,
                    "offset": q.offset,
                    "reason": q.reason,
                    "copy": q.copy,
                }
                for q in quarantined
            ),
            rollups.to_json(),
            events_files,
            log_files,
        )
        log.commit(commit)
        log.publish(number)
        compacted = _compact_crowded(table, commit, compact_over, say)
        _remove_quarantined(segments, log.known_segments(str(spool)), say)
        published = _publish(table, publish_to, number, say)
        return IngestResult(
            commit=number,
            segments_total=len(segments),
            segments_skipped=skipped,
            segments_loaded=len(loaded),
            records=sum(s.records for s in loaded),
            rows=sum(s.rows for s in loaded),
            from_columns=sum(s.from_columns for s in loaded),
            quarantined=tuple(quarantined),
            seconds=time.monotonic() - began,
            job_seconds=job_seconds,
            cleaned=len(cleaned),
            finished=len(finished),
            files=sum(len(s.files) for s in loaded),
            events=events,
            log_lines=log_lines,
            compacted=compacted,
            published=published,
        )


def _publish(table: Path, uri: str | None, number: int | None, say: Callable[[str], None]) -> int:
    """Copy the Delta versions ``uri`` lacks (none without it); return how many were copied.

    Raises:
        IngestError: the copy failed; commit ``number`` (if any) stands, the next run copies it.
    """
    if uri is None:
        return 0
    try:
        return publish(table, uri, say=say)["versions"]
    except PublishError as exc:
        kept = f"commit {number} is in the table; " if number is not None else ""
        raise IngestError(f"{exc} ({kept}the next run publishes what is missing)") from exc


def _pending(spool: Path, segments: list[Path], known: dict[str, dict[str, Any]]) -> list[Path]:
    """The sealed segments no commit names; an IngestError for one whose size changed."""
    pending = []
    for path in segments:
        earlier = known.get(path.name)
        if earlier is None:
            pending.append(path)
            continue
        size = path.stat().st_size
        if size != earlier["bytes"]:
            raise IngestError(
                f"{path}: commit {earlier['commit']} loaded this segment with "
                f"{earlier['bytes']} bytes, it now has {size}: is {spool} the spool "
                f"this table was loaded from?"
            )
    return pending


def _compact_crowded(
    table: Path, commit: Commit, over: int | None, say: Callable[[str], None]
) -> int:
    """Compact each dataset's dates that ``commit`` added to once they hold over ``over`` files.

    So that frequent ingests (segments sealed every minute) keep the table at most about
    ``over`` files a dataset and date, with no schedule of its own; the replaced files stay
    until ``grstats spark compact --vacuum-hours``. Returns the files compacted.
    """
    if over is None:
        return 0
    days = [
        dt.date.fromisoformat(part.split("=", 1)[1])
        for path in (*commit.files, *commit.rollup_files)
        for part in Path(path).parts
        if part.startswith(f"{PARTITION_COLUMN}=")
    ]
    removed = 0
    try:
        for dataset in DATASETS:
            crowded = crowded_days(table, dataset, days, over)
            if crowded is None:
                continue
            done = compact(table, dataset, COMPACT_TARGET_MIB * 2**20, crowded or None)
            removed += done["removed"]
            say(f"compacted {done['removed']} files of {dataset}/ into {done['added']}")
    except DeltaTableError as exc:
        raise TableError(str(exc)) from exc
    return removed


def _catch_up(log: TableLog, say: Callable[[str], None]) -> None:
    """Write the Delta logs of the commits an earlier grstats (or a stopped run) loaded."""
    converted = log.catch_up()
    if converted:
        say(
            "wrote the Delta logs of commits loaded before: "
            + ", ".join(f"{dataset}/ {files} files" for dataset, files in converted.items())
        )


def _check_settings(log: TableLog, asked: RollupSettings) -> None:
    """Refuse ``asked`` when a commit that loaded segments made its rollups otherwise.

    Commits written before rollups existed record no settings and refuse nothing; nor does a
    commit that only quarantined segments (it made no rollups).
    """
    tail = "a table keeps one setting: load into a new table"
    for commit in log.commits:
        kept = commit.rollup_settings
        if kept is None or not commit.segments:
            continue
        try:
            made = RollupSettings.from_json(kept)
        except RollupSettingsError:
            raise SettingsRefused(
                f"commit {commit.number} made this table's rollups with {kept}, which this "
                f"grstats does not make; {tail}"
            ) from None
        if made == asked:
            continue
        differences = [
            f"{flag}: {mine} differs from the {theirs} this table's rollups were made with"
            for flag, mine, theirs in (
                (
                    "--flow-control-threshold",
                    asked.flow_control_threshold,
                    made.flow_control_threshold,
                ),
                ("--max-gap", f"{asked.max_gap_s:g}", f"{made.max_gap_s:g}"),
            )
            if mine != theirs
        ]
        raise SettingsRefused("; ".join([*differences, tail]))


def _stage(
    spark: SparkSession,
    pending: list[Path],
    staging: Path,
    how: tuple[RollupSettings, bool],
    say: Callable[[str], None],
) -> list[StagedSegment]:
    """Run the Spark job: each task stages a few consecutive segments; return the outcomes."""
    context = spark.sparkContext
    group = f"grstats-ingest-{staging.name}"
    context.setJobGroup(group, f"grstats ingest: {len(pending)} segments", interruptOnCancel=True)
    sizes = task_sizes(len(pending), context.defaultParallelism)
    rollups, use_columns = how
    settings = rollups.to_json()  # plain values: what travels to the executors
    tasks: list[StageTask] = []
    start = 0
    for size in sizes:
        segments = [(str(path), str(staging)) for path in pending[start : start + size]]
        tasks.append((settings, use_columns, segments))
        start += size
    done = threading.Event()
    watcher = threading.Thread(target=_watch, args=(spark, group, sizes, done, say), daemon=True)
    watcher.start()
    try:
        rdd = context.parallelize(tasks, len(tasks))  # one task (list of segments) a partition
        results = rdd.mapPartitions(stage_partition).collect()
    except Exception as exc:  # Py4JJavaError: a task failed for a reason a segment cannot explain
        first = next((line for line in str(exc).splitlines() if line.strip()), repr(exc))
        raise IngestError(f"the Spark job that stages the segments failed: {first}") from exc
    finally:
        done.set()
        watcher.join()
    staged = [StagedSegment.from_dict(result) for result in results]
    say(f"staged {len(staged)}/{len(pending)} segments, {sum(s.rows for s in staged):,} rows")
    return staged


def _watch(
    spark: SparkSession,
    group: str,
    sizes: list[int],
    done: threading.Event,
    say: Callable[[str], None],
) -> None:
    """Report the job's progress every few seconds until ``done``.

    Spark counts finished tasks, not which: the segments reported are those of that many of
    the smallest tasks, a count that is surely staged.
    """
    tracker = spark.sparkContext.statusTracker()
    smallest_first = sorted(sizes)
    reported, last_report = -1, time.monotonic()
    while not done.wait(0.2):
        finished = 0
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            for stage in info.stageIds if info else ():
                stage_info = tracker.getStageInfo(stage)
                if stage_info is not None:
                    finished += stage_info.numCompletedTasks
        if finished != reported and time.monotonic() - last_report >= 2.0:
            staged = sum(smallest_first[:finished])
            say(f"{staged}/{sum(sizes)} segments staged ({finished}/{len(sizes)} tasks)")
            reported, last_report = finished, time.monotonic()


def _quarantine(
    table: Path,
    spool: Path,
    number: int,
    corrupt: list[StagedSegment],
    say: Callable[[str], None],
) -> list[Quarantined]:
    """Copy each corrupt segment to the quarantine; commit ``number`` will record it."""
    if not corrupt:
        return []
    directory = table / QUARANTINE_DIR
    directory.mkdir(parents=True, exist_ok=True)
    quarantined = []
    for staged in corrupt:
        copy = directory / quarantine_copy_name(number, staged.name)
        with (spool / staged.name).open("rb") as source, copy.open("wb") as target:
            shutil.copyfileobj(source, target)
            target.flush()
            os.fsync(target.fileno())
        offset = staged.offset if staged.offset is not None else 0
        quarantined.append(
            Quarantined(
                staged.name, staged.bytes, offset, str(staged.reason), str(copy.relative_to(table))
            )
        )
        say(
            f"quarantined {spool / staged.name}: offset {offset}: {staged.reason} "
            f"(copied to {copy}; the other segments load)"
        )
    fsync_directory(directory)
    return quarantined


def _arrange(staging: Path, number: int, loaded: list[StagedSegment]) -> list[dict[str, Any]]:
    """Rename the staged files to the paths commit ``number`` names; return its entries.

    Inside the staging directory, under PUBLISH_DIR: a data file
    ``collected_date=D/<stem>.parquet`` goes to ``data/commit=N/collected_date=D/``, a rollup
    file ``rollups/<kind>/collected_date=D/<stem>.parquet`` to
    ``rollups/<kind>/commit=N/collected_date=D/``, each named by the commit
    (:func:`data_file_name`), so that :meth:`TableLog.publish` renames one directory per
    dataset into place.
    """
    touched: set[Path] = set()
    publish = staging / PUBLISH_DIR

    def move(relative: str, rows: int, dataset: str, segment: str) -> tuple[str, int]:
        partition = Path(relative).parent.name  # collected_date=YYYY-MM-DD
        path = Path(dataset, commit_dir_name(number), partition, data_file_name(number, segment))
        target = publish / path
        target.parent.mkdir(parents=True, exist_ok=True)
        (staging / relative).rename(target)
        touched.add(target.parent)
        return str(path), rows

    entries = []
    for staged in loaded:
        files = [move(relative, rows, DATA_DIR, staged.name) for relative, rows in staged.files]
        rollups = [
            move(relative, rows, f"{ROLLUPS_DIR}/{Path(relative).parts[1]}", staged.name)
            for relative, rows in staged.rollups  # rollups/<kind>/collected_date=.../...
        ]
        entries.append(
            {
                "name": staged.name,
                "bytes": staged.bytes,
                "records": staged.records,
                "rows": staged.rows,
                "files": files,
                "rollups": rollups,
            }
        )
    directories = set(touched)
    for directory in touched:  # and the directories made for them, up to the staging's
        directories |= {parent for parent in directory.parents if parent.is_relative_to(staging)}
    for directory in sorted(directories, reverse=True):  # durable before the commit
        fsync_directory(directory)
    return entries


@dataclass(frozen=True, slots=True)
class _Dataset:
    """A dataset whose rows travel beside the segments' (the events, the GR log lines)."""

    noun: str  #: what the progress calls its rows
    rows_of: Callable[[StagedSegment], Iterable[Sequence[Any]]]
    table_of: Callable[[Iterable[Sequence[Any]]], pa.Table]
    new: Callable[[pa.Table, pa.Table], pa.Table]
    committed: Callable[[Path], pa.Table]
    file_name: Callable[[int], str]
    write: Callable[[Path, str, pa.Table], tuple[str, int] | None]


_EVENTS = _Dataset(
    "events",
    lambda staged: staged.events,
    events_table,
    new_events,
    read_events,
    events_file_name,
    write_events,
)
_LOG = _Dataset(
    "GR log lines",
    lambda staged: staged.log_lines,
    log_table,
    new_lines,
    read_log,
    log_file_name,
    write_log,
)


def _stage_rows(  # noqa: PLR0913, PLR0917  (the dataset, the commit's place, its segments)
    dataset: _Dataset,
    table: Path,
    staging: Path,
    number: int,
    loaded: list[StagedSegment],
    say: Callable[[str], None],
) -> tuple[tuple[tuple[str, int], ...], int]:
    """Write commit ``number``'s file of ``dataset``: the loaded segments' rows the table lacks.

    Returns the commit's files of it (none when no row is new) and its count of rows. The file
    is durable before the commit, as the data files are.
    """
    found = dataset.table_of(row for staged in loaded for row in dataset.rows_of(staged))
    if not found.num_rows:
        return (), 0
    rows = dataset.new(found, dataset.committed(table))
    publish = staging / PUBLISH_DIR
    written = dataset.write(publish, dataset.file_name(number), rows)
    if written is None:
        say(f"{found.num_rows:,} {dataset.noun}, all in the table already")
        return (), 0
    directory = (publish / written[0]).parent
    for each in (directory, directory.parent, publish):  # <dataset>/commit=N, <dataset>, publish
        fsync_directory(each)
    say(f"{rows.num_rows:,} new {dataset.noun} of {found.num_rows:,} spooled")
    return (written,), rows.num_rows


def _remove_quarantined(
    segments: list[Path], known: dict[str, dict[str, Any]], say: Callable[[str], None]
) -> None:
    """Delete from the spool the segments a commit quarantined (their copy is kept)."""
    for path in segments:
        entry = known.get(path.name)
        if entry is not None and "copy" in entry:
            try:
                columns_path(path).unlink(missing_ok=True)
                path.unlink()
            except OSError as exc:  # a read-only spool: the commit still skips it
                say(f"could not remove quarantined {path} from the spool: {exc}")
