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

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, WriterProperties
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import DeltaError
from deltalake.transaction import AddAction, RemoveAction, create_table_with_add_actions

from grstats.spark.decode import ARROW_MEMBER_ROWS
from grstats.spark.events import ARROW_EVENTS
from grstats.spark.member_log import ARROW_LOG
from grstats.spark.rollup import ARROW_GROUP_ROLLUPS, ARROW_MEMBER_ROLLUPS, ROLLUPS_DIR
from grstats.spark.schema import PARTITION_COLUMN

if TYPE_CHECKING:
    import datetime as dt
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
    arrow, partitions = SCHEMAS[dataset]
    schema = DeltaSchema.from_arrow(arrow)
    try:
        existing = _open(table, dataset)
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
        else:
            existing.create_write_transaction(
                actions,
                mode="append",
                schema=schema,
                partition_by=list(partitions) or None,
                commit_properties=properties,
            )
    except DeltaError as exc:
        raise DeltaTableError(f"{uri}: the Delta commit failed: {exc}") from exc


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

    The files compaction replaced, once older than the retention. Returns how many went.
    Only a holder of the table's lock calls it, after every commit's files are in the Delta
    log (a file the log does not list yet is one vacuum would take as garbage).

    Raises:
        DeltaTableError: the Delta log cannot be read or written.
    """
    table = _open(table_dir, dataset)
    if table is None:
        return 0
    try:
        removed = table.vacuum(
            retention_hours=retention_hours, dry_run=False, enforce_retention_duration=False
        )
    except DeltaError as exc:
        raise DeltaTableError(f"{table.table_uri}: vacuum failed: {exc}") from exc
    return len(removed)
