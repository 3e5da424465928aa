"""The table's datasets as Delta Lake tables: what every engine reads (delta-rs, no JVM).

Each dataset directory of the table (``data/``, ``rollups/members/``, ``rollups/groups/``,
``events/``, ``log/``, :data:`grstats.spark.table.DATASETS`) is a Delta table of its own: its
``_delta_log/`` lists the dataset's committed Parquet files, so Spark (with delta-spark),
DuckDB (its ``delta`` extension), Polars, pyarrow through ``deltalake`` and Trino read each
one as a table, and grstats' own Spark jobs read the files of its current version
(:func:`dataset_files`), needing no jar.

The log stays the ingest's record of what it loaded (:class:`grstats.spark.table.TableLog`):
a commit's files are put in their datasets (:meth:`TableLog.publish`), then added to each
dataset's Delta table by :func:`catch_up`, one Delta commit per dataset carrying the Delta
protocol's application transaction ``grstats-ingest`` at the log's commit number (the
``txn`` action: Delta's own exactly-once mark, PROTOCOL.md "Transaction Identifiers"). So a
run stopped between the two, or between two datasets, is finished by the next one without
adding a file twice, and a table of an earlier grstats, which has the log and no Delta log,
gets its Delta tables from the whole log at its next ingest or by ``grstats spark
convert``.

The Delta tables use the protocol's plainest features (reader 1, writer 2: no deletion
vectors, column mapping or timestamp without zone), so every reader reads them. A dataset
whose loads have added no file yet has no Delta table; readers take it as empty. The
partition column ``collected_date`` (the rows' UTC date) is the datasets' Hive directory
``collected_date=YYYY-MM-DD`` and the Delta partition value alike; ``events/`` and ``log/``
have none.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import (
    CommitProperties,
    DeltaTable,
    Transaction,
    WriterProperties,
)
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import CommitFailedError, DeltaError
from deltalake.transaction import AddAction, RemoveAction, create_table_with_add_actions

from grstats.spark.decode import ARROW_MEMBER_ROWS
from grstats.spark.events import ARROW_EVENTS
from grstats.spark.member_log import ARROW_LOG
from grstats.spark.rollup import ARROW_GROUP_ROLLUPS, ARROW_MEMBER_ROLLUPS, ROLLUPS_DIR
from grstats.spark.schema import PARTITION_COLUMN
from grstats.spark.stage import PARQUET_OPTIONS, write_by_date

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence


#: The Delta application transaction id that marks how far each dataset holds the log.
APP_ID = "grstats-ingest"
#: Each Delta table's log directory, in its dataset's directory (the protocol's name).
DELTA_LOG = "_delta_log"

_DATE = pa.field(PARTITION_COLUMN, pa.date32())


def _dated(schema: pa.Schema) -> pa.Schema:
    """``schema`` with the partition column last (the rollups' files do not hold it)."""
    if PARTITION_COLUMN in schema.names:
        return schema
    return schema.append(_DATE)


#: Each dataset's Delta schema and partition columns, by its directory under the table.
SCHEMAS: dict[str, tuple[pa.Schema, tuple[str, ...]]] = {
    "data": (ARROW_MEMBER_ROWS, (PARTITION_COLUMN,)),
    f"{ROLLUPS_DIR}/members": (_dated(ARROW_MEMBER_ROLLUPS), (PARTITION_COLUMN,)),
    f"{ROLLUPS_DIR}/groups": (_dated(ARROW_GROUP_ROLLUPS), (PARTITION_COLUMN,)),
    "events": (ARROW_EVENTS, ()),
    "log": (ARROW_LOG, ()),
}


class Commit(Protocol):
    """What this module reads of a log commit (:class:`grstats.spark.table.Commit`)."""

    @property
    def number(self) -> int:
        """1, 2, ... in commit order."""

    @property
    def segments(self) -> tuple[dict[str, Any], ...]:
        """The segments it loaded, with their ``files`` and ``rollups``."""

    @property
    def events(self) -> tuple[tuple[str, int], ...]:
        """Its events files with their row counts."""

    @property
    def log_lines(self) -> tuple[tuple[str, int], ...]:
        """Its GR log files with their row counts."""


class DeltaTableError(Exception):
    """A dataset's Delta table cannot be read or committed (the message names it)."""


def dataset_uri(table_dir: Path | str, dataset: str) -> str:
    """The Delta table URI of ``dataset`` (``data``, ``rollups/members``, ...) of a table."""
    return str(Path(table_dir) / dataset)


def _open(table_dir: Path | str, dataset: str) -> DeltaTable | None:
    """``dataset``'s Delta table, or None when none was made yet."""
    uri = dataset_uri(table_dir, dataset)
    if not DeltaTable.is_deltatable(uri):
        return None
    try:
        return DeltaTable(uri)
    except DeltaError as exc:
        raise DeltaTableError(f"{uri}: its Delta log cannot be read: {exc}") from exc


def held_commit(table_dir: Path | str, dataset: str) -> int:
    """The last log commit whose files ``dataset``'s Delta table holds (0: none)."""
    table = _open(table_dir, dataset)
    if table is None:
        return 0
    return table.transaction_version(APP_ID) or 0


def files_of(commit: Commit, dataset: str) -> list[tuple[str, int]]:
    """The files (relative to the table) and row counts that ``commit`` added to ``dataset``."""
    if dataset == "events":
        return list(commit.events)
    if dataset == "log":
        return list(commit.log_lines)
    key = "files" if dataset == "data" else "rollups"
    prefix = f"{dataset}/"
    return [
        (path, rows)
        for segment in commit.segments
        for path, rows in segment.get(key, ())
        if path.startswith(prefix)
    ]


def _add_action(table_dir: Path, dataset: str, path: str, rows: int) -> AddAction:
    """The Delta ``add`` of one committed file: its path in the dataset, size, date, rows."""
    file = table_dir / path
    stat = file.stat()
    relative = Path(path).relative_to(dataset)
    partition = {
        part.split("=", 1)[0]: part.split("=", 1)[1]
        for part in relative.parent.parts
        if part.startswith(f"{PARTITION_COLUMN}=")
    }
    _, partitions = SCHEMAS[dataset]
    return AddAction(
        path=relative.as_posix(),
        size=stat.st_size,
        partition_values={name: partition.get(name) for name in partitions},
        modification_time=stat.st_mtime_ns // 1_000_000,
        data_change=True,
        stats=json.dumps({"numRecords": rows}),
    )


def catch_up(table_dir: Path | str, commits: Sequence[Commit]) -> dict[str, int]:
    """Add to each dataset's Delta table the files of ``commits`` it does not hold yet.

    ``commits`` are the log's commits whose files are in their datasets, in order. Each
    dataset gets at most one Delta commit, of the files of the commits after the one it
    holds (:func:`held_commit`), marked with the last of them; a dataset they add nothing
    to is left as it is. Returns the files added, by dataset. Only an ingest holding the
    table's lock (or ``grstats spark convert``) calls this.

    Raises:
        DeltaTableError: a Delta log cannot be read or written.
    """
    table = Path(table_dir)
    if not commits:
        return {}
    last = commits[-1].number
    added: dict[str, int] = {}
    for dataset in SCHEMAS:
        held = held_commit(table, dataset)
        if held >= last:
            continue
        files = [
            pair for commit in commits if commit.number > held for pair in files_of(commit, dataset)
        ]
        if not files:
            continue
        actions: list[AddAction | RemoveAction] = [
            _add_action(table, dataset, path, rows) for path, rows in files
        ]
        properties = CommitProperties(
            app_transactions=[Transaction(APP_ID, last)],
            custom_metadata={"grstats.commit": str(last)},
        )
        _commit(table, dataset, actions, properties)
        added[dataset] = len(actions)
    return added


def _commit(
    table: Path,
    dataset: str,
    actions: list[AddAction | RemoveAction],
    properties: CommitProperties,
) -> None:
    """One Delta commit of ``actions`` to ``dataset``'s table, made with its first one."""
    uri = dataset_uri(table, dataset)
    try:
        _transact(uri, dataset, _open(table, dataset), actions, properties)
    except DeltaError as exc:
        raise DeltaTableError(f"{uri}: the Delta commit failed: {exc}") from exc


def _transact(
    uri: str,
    dataset: str,
    existing: DeltaTable | None,
    actions: Sequence[AddAction | RemoveAction],
    properties: CommitProperties,
) -> int:
    """Commit ``actions`` after ``existing``'s version (None: make the table); the new version.

    delta-rs' errors go through as they are (a ``CommitFailedError`` when a concurrent
    commit came first and ``properties`` allow no retry).
    """
    arrow, partitions = SCHEMAS[dataset]
    schema = DeltaSchema.from_arrow(arrow)
    if existing is None:
        create_table_with_add_actions(
            uri,
            schema,
            [action for action in actions if isinstance(action, AddAction)],
            mode="error",
            partition_by=list(partitions) or None,
            name=dataset.replace("/", "_"),
            commit_properties=properties,
        )
        return 0
    version = existing.version()
    existing.create_write_transaction(
        list(actions),
        mode="append",
        schema=schema,
        partition_by=list(partitions) or None,
        commit_properties=properties,
    )
    return version + 1


def dataset_files(
    table_dir: Path | str,
    dataset: str,
    first_day: dt.date | None = None,
    last_day: dt.date | None = None,
) -> list[Path]:
    """The files of ``dataset``'s current Delta version, of the UTC dates asked (None: any).

    The dates are the partition values, so nothing else is listed; ``events`` has none and
    ignores them. A dataset without a Delta table has none.

    Raises:
        DeltaTableError: the Delta log cannot be read.
    """
    table = _open(table_dir, dataset)
    if table is None:
        return []
    filters: list[tuple[str, str, str]] = []
    if SCHEMAS[dataset][1]:
        if first_day is not None:
            filters.append((PARTITION_COLUMN, ">=", first_day.isoformat()))
        if last_day is not None:
            filters.append((PARTITION_COLUMN, "<=", last_day.isoformat()))
    try:
        uris = table.file_uris(file_pruning_predicate=filters or None)
    except DeltaError as exc:
        raise DeltaTableError(f"{table.table_uri}: its files cannot be listed: {exc}") from exc
    return sorted(_local_path(uri) for uri in uris)


def _local_path(uri: str) -> Path:
    """A local file of a ``file_uris()`` answer (a path, or a ``file://`` URI)."""
    return Path(uri.removeprefix("file://"))


def crowded_days(
    table_dir: Path | str, dataset: str, days: Iterable[dt.date], over: int
) -> list[dt.date] | None:
    """Of ``days``, those on which ``dataset`` holds more than ``over`` files.

    For ``events`` (no dates): None when it holds at most ``over`` files, else ``[]`` (compact
    it whole).
    """
    if not SCHEMAS[dataset][1]:
        return [] if len(dataset_files(table_dir, dataset)) > over else None
    crowded = [
        day for day in sorted(set(days)) if len(dataset_files(table_dir, dataset, day, day)) > over
    ]
    return crowded or None


def datasets_present(table_dir: Path | str) -> Iterable[str]:
    """The datasets of the table that have a Delta table."""
    return [name for name in SCHEMAS if _open(table_dir, name) is not None]


def compact(
    table_dir: Path | str,
    dataset: str,
    target_bytes: int,
    days: Sequence[dt.date] | None = None,
) -> dict[str, int]:
    """Rewrite ``dataset``'s small files of each date (of ``days``; None: all) into larger ones.

    Files of about ``target_bytes``.

    Delta's OPTIMIZE (delta-rs ``optimize.compact``): one Delta commit that adds the new
    files and removes the old ones, which stay on disk, for readers of earlier versions,
    until :func:`vacuum`. Zstandard, level 3 (it runs seldom; the staged files use 1).
    Returns the files added and removed (none without a Delta table). Only a holder of the
    table's lock calls it.

    Raises:
        DeltaTableError: the Delta log cannot be read or written.
    """
    table = _open(table_dir, dataset)
    if table is None:
        return {"added": 0, "removed": 0}
    try:
        filters = None
        if days is not None and SCHEMAS[dataset][1]:
            filters = [(PARTITION_COLUMN, "in", [day.isoformat() for day in days])]
        metrics = table.optimize.compact(
            partition_filters=filters,
            target_size=target_bytes,
            writer_properties=WriterProperties(compression="ZSTD", compression_level=3),
        )
    except DeltaError as exc:
        raise DeltaTableError(f"{table.table_uri}: compaction failed: {exc}") from exc
    return {"added": int(metrics["numFilesAdded"]), "removed": int(metrics["numFilesRemoved"])}


def vacuum(table_dir: Path | str, dataset: str, retention_hours: int) -> int:
    """Delete ``dataset``'s files that no Delta version of the last ``retention_hours`` reads.

    The files compaction replaced, once older than the retention, and (Delta's full vacuum)
    the files of no version at all older than it: those of a shared ingest's attempt that met
    a concurrent commit, or was killed before its own. Returns how many went. Only a holder
    of the table's lock calls it, after every commit's files are in the Delta log (a file the
    log does not list yet is one vacuum would take as garbage), and on a table that shared
    ingests load only with a retention longer than any attempt takes
    (:data:`grstats.spark.compact.SHARED_VACUUM_HOURS`): their files are listed only at commit.

    Raises:
        DeltaTableError: the Delta log cannot be read or written.
    """
    table = _open(table_dir, dataset)
    if table is None:
        return 0
    try:
        removed = table.vacuum(
            retention_hours=retention_hours,
            dry_run=False,
            enforce_retention_duration=False,
            full=True,
        )
    except DeltaError as exc:
        raise DeltaTableError(f"{table.table_uri}: vacuum failed: {exc}") from exc
    return len(removed)


# -- shared ingests: appends by several writers at once (grstats.spark.shared_ingest) -------

#: A member row's identity: GR's group, the member, and the member's own row stamp (its
#: LAST_SEEN, the time of its last report that the agent read). Two collectors of one group
#: spool the same observation with the same identity, so a shared table holds it once.
ROW_IDENTITY = ("group_name", "member_id", "last_seen")
#: Two rows of one member whose LAST_SEEN are at most this far apart (µs) are one observation.
#: LAST_SEEN is on the serving agent's clock: a peer member's is its own stamp moved by that
#: agent's estimate of the peer's clock offset (agent/known.py, ``reported``), so two
#: collectors that read one observation through two agents see stamps a few ms apart. An
#: agent reads its member once a period, at multiples of it on the wall clock, and a period is
#: at least 1 s (agent/config.py), so two observations of one member are about a period apart:
#: a quarter of the shortest period tells the two cases apart.
SAME_OBSERVATION_US = 250_000
#: Commit attempts of one append before it gives up (each conflict re-reads the table).
MAX_TRIES = 50
#: A null LAST_SEEN, as a key: nulls are one value here, far from every stamp (and no
#: difference of two keys overflows).
_NO_STAMP = -(2**62)


@dataclass(frozen=True, slots=True)
class Appended:
    """What :func:`append_new` did: the Delta version, rows added, attempts it took."""

    version: int | None
    rows: int
    tries: int
    already: bool = False


def _identity_keys(rows: pa.Table) -> pa.Table:
    """``rows``' identity columns as plain keys (nulls filled, so that they match)."""
    stamp = rows.column("last_seen").cast(pa.int64())
    return pa.table(
        {
            "k_group": pc.fill_null(rows.column("group_name"), ""),
            "k_member": pc.fill_null(rows.column("member_id"), ""),
            "k_seen": pc.fill_null(stamp, _NO_STAMP),
        }
    )


def _firsts(keys: pa.Table, tolerance_us: int) -> pa.Array:
    """The ``k_index`` of each row of ``keys`` that no row before it repeats, in their order.

    In (group, member, stamp, index) order a row repeats the one before it when both are of
    one member and their stamps at most ``tolerance_us`` apart.
    """
    order = keys.sort_by(
        [(name, "ascending") for name in ("k_group", "k_member", "k_seen", "k_index")]
    )
    count = order.num_rows
    if count < 2:  # one row repeats nothing
        return order.column("k_index")
    head, tail = order.slice(0, count - 1), order.slice(1)
    repeats = pc.and_(
        pc.and_(
            pc.equal(tail.column("k_group"), head.column("k_group")),
            pc.equal(tail.column("k_member"), head.column("k_member")),
        ),
        pc.less_equal(pc.subtract(tail.column("k_seen"), head.column("k_seen")), tolerance_us),
    )
    kept = pa.concat_arrays([pa.array([True]), pc.invert(repeats).combine_chunks()])
    firsts = order.column("k_index").filter(kept)
    return pc.take(firsts, pc.sort_indices(firsts))


def _bucket(stamps: pa.ChunkedArray | pa.Array, tolerance_us: int) -> pa.Array:
    """Each stamp's bucket of ``tolerance_us``: stamps that far apart are in adjacent ones."""
    return pc.divide(stamps, tolerance_us)  # integer division (the null key's too)


def new_member_rows(
    rows: pa.Table, present: pa.Table, tolerance_us: int = SAME_OBSERVATION_US
) -> pa.Table:
    """The rows of ``rows`` that repeat no row of ``present`` nor one before them, in order.

    A row repeats another of the same group and member whose LAST_SEEN is at most
    ``tolerance_us`` from its own (:data:`SAME_OBSERVATION_US`); null stamps repeat each
    other. ``present`` holds at least the identity columns (:data:`ROW_IDENTITY`).
    """
    if not rows.num_rows:
        return rows
    keys = _identity_keys(rows).append_column("k_index", pa.array(range(rows.num_rows), pa.int64()))
    kept = keys.take(_firsts(keys, tolerance_us))
    if present.num_rows:
        known = _identity_keys(present)
        known = pa.table(
            {
                "k_group": known.column("k_group"),
                "k_member": known.column("k_member"),
                "k_bucket": _bucket(known.column("k_seen"), tolerance_us),
                "p_seen": known.column("k_seen"),
            }
        )
        bucket = _bucket(kept.column("k_seen"), tolerance_us)
        near = pa.concat_tables(
            kept.append_column("k_bucket", pc.add(bucket, step)) for step in (-1, 0, 1)
        )
        pairs = near.join(
            known, keys=["k_group", "k_member", "k_bucket"], join_type="inner", use_threads=False
        )
        apart = pc.abs(pc.subtract(pairs.column("k_seen"), pairs.column("p_seen")))
        repeated = pc.unique(pairs.column("k_index").filter(pc.less_equal(apart, tolerance_us)))
        kept = kept.filter(pc.invert(pc.is_in(kept.column("k_index"), value_set=repeated)))
    return rows.take(kept.column("k_index"))


def app_mark(table_dir: Path | str, app_id: str) -> int:
    """The version of application ``app_id``'s last transaction in ``data/`` (0: none)."""
    table = _open(table_dir, "data")
    return 0 if table is None else table.transaction_version(app_id) or 0


def _present(table: DeltaTable, rows: pa.Table) -> pa.Table:
    """The identities of the table's version that rows of ``rows`` may repeat.

    Those of ``rows``' groups whose LAST_SEEN is within :data:`SAME_OBSERVATION_US` of the
    batch's stamps (or null, when the batch has a null one), on the UTC dates of ``rows`` and
    the next to them: ``collected_date`` is the collector's date, so two collectors that read
    one observation on either side of midnight put it on two dates. The stamp's range lets
    pyarrow skip the row groups of other times by each Parquet file's own statistics (it
    still opens every file of those dates: delta-rs' dataset does not prune by Delta stats).
    """
    one = dt.timedelta(days=1)
    days = sorted(
        {
            near
            for day in pc.unique(rows.column(PARTITION_COLUMN)).to_pylist()
            if day is not None
            for near in (day - one, day, day + one)
        }
    )
    wanted = pc.field(PARTITION_COLUMN).isin(days) & pc.field("group_name").isin(
        pc.unique(rows.column("group_name")).drop_null()
    )
    seen = rows.column("last_seen")
    span = pc.min_max(seen)
    if span["min"].is_valid:
        margin = dt.timedelta(microseconds=SAME_OBSERVATION_US)
        within = (pc.field("last_seen") >= pc.scalar(span["min"].as_py() - margin)) & (
            pc.field("last_seen") <= pc.scalar(span["max"].as_py() + margin)
        )
        wanted &= within | pc.field("last_seen").is_null() if seen.null_count else within
    else:  # every stamp is null
        wanted &= pc.field("last_seen").is_null()
    return table.to_pyarrow_dataset().to_table(columns=list(ROW_IDENTITY), filter=wanted)


def append_new(table_dir: Path | str, rows: pa.Table, app_id: str, mark: int) -> Appended:
    """Append to ``data/`` the rows of ``rows`` it lacks, marking ``app_id``'s transaction ``mark``.

    Reads the table's newest version, drops the rows that repeat one it holds
    (:func:`new_member_rows`), writes the rest's files (:func:`_write_rows`) and commits them
    at the next version with no retry of delta-rs' own (``max_commit_retries=0``: its retry
    would commit a blind append over a concurrent one, doubling the rows both loaded). A
    concurrent writer's commit fails the attempt (``CommitFailedError``); the next one reads
    the table again and, when the written rows repeat none of what it now holds (collectors
    sharded by group never do), commits the same files; otherwise it deletes them and writes
    the rows that are still new. Up to :data:`MAX_TRIES` attempts. A version already carrying
    ``mark`` for ``app_id`` (Delta's application transaction) adds nothing. The commit is made
    even when no row is new, for the mark. Called by
    :func:`grstats.spark.shared_ingest.run_shared_ingest`, once per batch of segments.

    Raises:
        DeltaTableError: the table cannot be read or written, or every attempt conflicted.
    """
    table_dir = Path(table_dir)
    uri = dataset_uri(table_dir, "data")
    new = rows.select(ARROW_MEMBER_ROWS.names).cast(ARROW_MEMBER_ROWS)
    written: list[AddAction] | None = None  # the files of ``new``, once written
    # The last conflict's message, not the exception: its traceback holds this frame, whose
    # rows a reference cycle would keep until the collector's next full pass (GBs a batch).
    last = ""
    properties = CommitProperties(
        max_commit_retries=0,
        app_transactions=[Transaction(app_id, mark)],
        custom_metadata={"grstats.spool": app_id},
    )
    for attempt in range(1, MAX_TRIES + 1):
        table = _open(table_dir, "data")
        if table is not None and (table.transaction_version(app_id) or 0) >= mark:
            _delete(table_dir, written)
            return Appended(table.version(), 0, attempt, already=True)
        still = new_member_rows(new, new.slice(0, 0) if table is None else _present(table, new))
        if written is not None and still.num_rows != new.num_rows:  # a commit repeated some
            _delete(table_dir, written)
            written = None
        if written is None:
            new = still
            written = _write_rows(table_dir, new)
        try:
            version = _transact(uri, "data", table, written, properties)
        except CommitFailedError as exc:  # a concurrent writer's commit came first
            last = str(exc)
            continue
        except DeltaError as exc:
            if table is None:  # two writers made the table at once: the other one won
                last = str(exc)
                continue
            raise DeltaTableError(f"{uri}: the Delta commit failed: {exc}") from exc
        return Appended(version, new.num_rows, attempt)
    _delete(table_dir, written)
    raise DeltaTableError(
        f"{uri}: {MAX_TRIES} commit attempts of {app_id} (mark {mark}) each met a concurrent "
        f"commit; the last: {last}"
    )


def _write_rows(table_dir: Path, rows: pa.Table) -> list[AddAction]:
    """Write ``rows`` into ``data/``, a file per date, as a shared ingest's; their ``add``s.

    The files are in no Delta version until a commit lists them; the stats carry LAST_SEEN's
    range, for the Delta readers that skip files by it.
    """
    dates = rows.column(PARTITION_COLUMN)
    adds = []
    for path, count in write_by_date(
        rows.drop_columns([PARTITION_COLUMN]),
        dates,
        table_dir / "data",
        f"part-{uuid.uuid4()}.shared",
        PARQUET_OPTIONS,
    ):
        day = path.parent.name.split("=", 1)[1]
        on_day = pc.equal(dates, pa.scalar(dt.date.fromisoformat(day), pa.date32()))
        seen = pc.min_max(rows.filter(on_day).column("last_seen"))
        stats: dict[str, Any] = {"numRecords": count}
        if seen["min"].is_valid:
            stats["minValues"] = {"last_seen": _stat_time(seen["min"].as_py())}
            stats["maxValues"] = {"last_seen": _stat_time(seen["max"].as_py(), up=True)}
        stat = path.stat()
        adds.append(
            AddAction(
                path=path.relative_to(table_dir / "data").as_posix(),
                size=stat.st_size,
                partition_values={PARTITION_COLUMN: day},
                modification_time=stat.st_mtime_ns // 1_000_000,
                data_change=True,
                stats=json.dumps(stats),
            )
        )
    return adds


def _stat_time(value: dt.datetime, *, up: bool = False) -> str:
    """A timestamp as Delta's file statistics write it (ISO 8601, UTC, ms), ``up``: rounded up.

    The statistics keep milliseconds: a maximum cut down would exclude the file's last
    microseconds from a reader that skips files by it, so the maximum is rounded up.
    """
    if up and value.microsecond % 1000:
        value += dt.timedelta(microseconds=1000 - value.microsecond % 1000)
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _delete(table_dir: Path, written: list[AddAction] | None) -> None:
    """Delete the files of an attempt that is not committed (a killed run's are vacuum's)."""
    for add in written or ():
        (table_dir / "data" / add.path).unlink(missing_ok=True)
