"""spark.stage: what runs in Spark's Python workers, checked in a process of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

from tests.spark.spool import make_record, write_spool

if TYPE_CHECKING:
    from pathlib import Path

# Runs two tasks the way a reused worker does, reporting gc's frozen count after each.
_TWO_TASKS = """
import gc, json, sys
from grstats.spark.stage import stage_partition
first, second, staging = sys.argv[1:]
counts = []
for segment in (first, second):
    results = list(stage_partition([[(segment, staging)]]))
    counts.append((gc.get_freeze_count(), results[0]["status"]))
print(json.dumps(counts))
"""


def test_a_worker_freezes_its_imported_objects_once(tmp_path: Path) -> None:
    """The first task moves the worker's objects out of gc's scans; the second adds none."""
    first, second = write_spool(tmp_path / "spool", [[make_record(1)], [make_record(2)]])
    staging = tmp_path / "staging"
    staging.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _TWO_TASKS, str(first), str(second), str(staging)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    (after_first, first_status), (after_second, second_status) = json.loads(done.stdout)
    assert (first_status, second_status) == ("loaded", "loaded")
    assert after_first > 10_000  # pyarrow, msgpack and grstats's modules
    assert after_second <= after_first  # not frozen again (a frozen object may be freed)
