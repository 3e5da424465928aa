"""Keep the table's file count bounded: compact each dataset's Delta table, vacuum what it replaced.

Every ingest adds a few files per segment and date to each dataset (:mod:`grstats.spark.ingest`);
over a day of frequent ingests that is hundreds of small files, which every reader lists and
opens. :func:`compact_table` takes the table's lock (so no ingest commits beside it), finishes
what a stopped ingest left (its renames and Delta commits, so vacuum never takes a committed
file for garbage), then runs Delta's OPTIMIZE on each dataset (one file of about
``target_bytes`` per date where the small ones were) and, with ``vacuum_hours``, VACUUM: the
files the compactions replaced are deleted once no version of the last ``vacuum_hours`` reads
them. Readers that started before a compaction keep reading the files they listed until then.
No Spark: delta-rs does the work in this process.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grstats.collector.table_log import META_DIR, SPOOLS_DIR
from grstats.spark.compact_settings import TARGET_MIB
from grstats.spark.delta import DeltaTableError, compact, vacuum
from grstats.spark.publish import PublishError, publish
from grstats.spark.table import DATASETS, TableError, TableLock, TableLog

if TYPE_CHECKING:
    from collections.abc import Iterator

#: The compacted files' size, in bytes.
TARGET_BYTES = TARGET_MIB * 2**20


@dataclass
class CompactResult:
    """What one run did, by dataset: files added and removed by compaction, files vacuumed.

    With a copy on object storage: the Delta versions copied to it, the files pruned from it.
    """

    added: dict[str, int] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)
    vacuumed: dict[str, int] = field(default_factory=dict)
    published: int = 0
    pruned: int = 0

    def to_json(self) -> dict[str, Any]:
        """The result for scripts."""
        return {
            "added": self.added,
            "removed": self.removed,
            "vacuumed": self.vacuumed,
            "published": self.published,
            "pruned": self.pruned,
        }


class NotATable(TableError):
    """``--table`` names a directory without grstats' metadata (an invalid argument)."""


#: The shortest vacuum retention, in hours, of a table that shared ingests load: their
#: attempts' files are in no Delta version until the attempt commits (seconds to minutes
#: later), and a vacuum of a shorter retention would delete them under it.
SHARED_VACUUM_HOURS = 1


class RetentionRefused(TableError):
    """A vacuum retention the table cannot take: the message names ``--vacuum-hours``."""


@contextlib.contextmanager
def _settled(table: Path) -> Iterator[TableLog]:
    """The table's log under its lock, with what a stopped ingest left finished first.

    Its renames and its Delta commits (:meth:`TableLog.catch_up`): the Delta logs then list
    every committed file, so that vacuum never takes one for garbage.
    """
    if not (table / META_DIR).is_dir():
        raise NotATable(f"--table: {str(table)!r} is not a grstats table (no {META_DIR}/)")
    with TableLock(table):
        log = TableLog(table)
        log.finish_publishing()
        yield log


def convert_table(table_dir: Path | str) -> tuple[int, dict[str, int]]:
    """Write the Delta logs of a table an earlier grstats loaded: its commits, files added.

    Raises:
        NotATable: the directory is no grstats table.
        TableError: the table cannot be used (a broken log, an ingest running).
    """
    with _settled(Path(table_dir)) as log:
        return len(log.commits), log.catch_up()


def compact_table(
    table_dir: Path | str,
    *,
    target_bytes: int = TARGET_BYTES,
    vacuum_hours: int | None = None,
    publish_to: str | None = None,
) -> CompactResult:
    """Compact every dataset of the table, then vacuum it when ``vacuum_hours`` is given.

    With ``publish_to`` (``s3://bucket/prefix``), the new Delta versions are then copied there
    and, after a vacuum, the remote copies of the files it deleted are deleted too
    (:func:`grstats.spark.publish.publish`), under the same lock.

    Raises:
        NotATable: the directory is no grstats table.
        RetentionRefused: ``vacuum_hours`` is under :data:`SHARED_VACUUM_HOURS` on a table
            that shared ingests load.
        TableError: the table cannot be used (a broken log, an ingest running), or the
            copy at ``publish_to`` cannot be written.
    """
    table = Path(table_dir)
    result = CompactResult()
    shared = (table / SPOOLS_DIR).is_dir()
    if shared and vacuum_hours is not None and vacuum_hours < SHARED_VACUUM_HOURS:
        raise RetentionRefused(
            f"--vacuum-hours: {vacuum_hours} is less than {SHARED_VACUUM_HOURS} for {table}, "
            "which shared ingests load: a running one's files are in no Delta version until "
            "it commits, and a vacuum would delete them"
        )
    with _settled(table) as log:
        log.catch_up()
        try:
            for dataset in DATASETS:
                done = compact(table, dataset, target_bytes)
                result.added[dataset], result.removed[dataset] = done["added"], done["removed"]
                if vacuum_hours is not None:
                    result.vacuumed[dataset] = vacuum(table, dataset, vacuum_hours)
        except DeltaTableError as exc:
            raise TableError(str(exc)) from exc
        if publish_to is not None:
            try:
                done = publish(table, publish_to, prune=vacuum_hours is not None)
            except PublishError as exc:
                raise TableError(str(exc)) from exc
            result.published, result.pruned = done["versions"], done["pruned"]
    return result
