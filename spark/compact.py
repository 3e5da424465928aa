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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grstats.spark.compact_settings import TARGET_MIB
from grstats.spark.delta import DeltaTableError, compact, vacuum
from grstats.spark.table import DATASETS, TableError, TableLock, TableLog

#: The compacted files' size, in bytes.
TARGET_BYTES = TARGET_MIB * 2**20


@dataclass
class CompactResult:
    """What one run did, by dataset: files added and removed by compaction, files vacuumed."""

    added: dict[str, int] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)
    vacuumed: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The result for scripts."""
        return {"added": self.added, "removed": self.removed, "vacuumed": self.vacuumed}


def compact_table(
    table_dir: Path | str, *, target_bytes: int = TARGET_BYTES, vacuum_hours: int | None = None
) -> CompactResult:
    """Compact every dataset of the table, then vacuum it when ``vacuum_hours`` is given.

    Raises:
        TableError: the table cannot be used (not a table, a broken log, an ingest running).
    """
    table = Path(table_dir)
    if not (table / "_grstats").is_dir():
        raise TableError(f"{table}: not a grstats table (no _grstats/)")
    result = CompactResult()
    with TableLock(table):
        log = TableLog(table)
        log.finish_publishing()
        log.catch_up()
        try:
            for dataset in DATASETS:
                done = compact(table, dataset, target_bytes)
                result.added[dataset], result.removed[dataset] = done["added"], done["removed"]
                if vacuum_hours is not None:
                    result.vacuumed[dataset] = vacuum(table, dataset, vacuum_hours)
        except DeltaTableError as exc:
            raise TableError(str(exc)) from exc
    return result
