"""A table's commit log written by hand, as ``grstats spark ingest`` writes it, without Spark.

Written by hand, not through ``grstats.collector.table_log``, so that a change of the format
there fails the tests that read these entries.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING

from grstats.collector.table_log import LOCK_NAME, LOG_DIR

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

#: A moment long before any test runs: its commits are older than any --keep-days.
LONG_AGO = dt.datetime(2026, 1, 5, tzinfo=dt.UTC)


def entry_text(
    number: int,
    spool: Path | str,
    loaded: Sequence[Path] = (),
    *,
    quarantined: Sequence[Path] = (),
    committed_at: dt.datetime = LONG_AGO,
    sizes: dict[str, int] | None = None,
) -> str:
    """The JSON of commit ``number`` of ``spool`` that loaded and quarantined these segments."""
    sizes = sizes or {}

    def size(path: Path) -> int:
        return sizes.get(path.name, path.stat().st_size)

    return json.dumps(
        {
            "format": 1,
            "commit": number,
            "committed_at": committed_at.isoformat(timespec="seconds"),
            "spool": str(spool),
            "segments": [
                {"name": p.name, "bytes": size(p), "records": 1, "rows": 3, "files": []}
                for p in loaded
            ],
            "quarantined": [
                {
                    "name": p.name,
                    "bytes": size(p),
                    "offset": 8,
                    "reason": "CRC mismatch",
                    "copy": f"_grstats/quarantine/c{number:020d}-{p.name}",
                }
                for p in quarantined
            ],
        },
        indent=1,
        sort_keys=True,
    )


def commit(
    table: Path,
    number: int,
    spool: Path | str,
    loaded: Sequence[Path] = (),
    *,
    quarantined: Sequence[Path] = (),
    committed_at: dt.datetime = LONG_AGO,
) -> Path:
    """Write commit ``number``'s entry as ingest does: a ``.tmp`` file renamed into place."""
    log = table / LOG_DIR
    log.mkdir(parents=True, exist_ok=True)
    (table / LOCK_NAME).touch()  # ingest's lock file, made by its first run
    target = log / f"{number:020d}.json"
    temporary = log / f"{target.name}.tmp"
    text = entry_text(number, spool, loaded, quarantined=quarantined, committed_at=committed_at)
    temporary.write_text(text, encoding="utf-8")
    temporary.rename(target)
    return target
