"""``grstats`` that kills itself with SIGKILL at one point of ``grstats spark ingest`` (tests only).

Run from the repository's root::

    python -m tests.spark.crashing_ingest POINT spark ingest --spool DIR --table DIR

It wraps the ingest's own steps (the functions of grstats.spark.ingest and grstats.spark.table,
nothing copied) so that the process kills itself at POINT, then runs grstats's command line
with the other arguments. SIGKILL runs no cleanup: no ``finally``, no ``atexit``, no Spark
shutdown, as a power cut. The points, in the order a load passes them:

``job:N``
    once N of the Spark job's tasks are done; the tasks from the N-th partition on wait in
    their workers, so that the job is still running when the driver dies
``staged``
    after the job: every segment's files are staged, nothing is in ``data/``
``quarantined``
    after the corrupt segments were copied to the quarantine
``arranged``
    after the staged files were renamed, inside staging, to the paths the commit names
``committed``
    after the commit's log entry was written, before its files were put in place
``publishing:N``
    after N of the commit's ``commit=N`` directories were renamed into their datasets (of
    more than N: ``data/`` first)

Just before the kill it prints ``crashing at POINT`` on stderr, so that a test can tell its
kill from any other death of the process.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark import TaskContext

from grstats.cli import main as grstats_main
from grstats.spark import ingest
from grstats.spark.stage import stage_partition
from grstats.spark.table import COMMIT_COLUMN, TableLog

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from pyspark.sql import SparkSession

    from grstats.spark.stage import StageTask

#: How long a held task waits: longer than any test, shorter than forever.
HOLD_S = 600.0
#: Points that take a count (``job:N``, ``publishing:N``).
COUNTED = ("job", "publishing")
#: Points after one step of the ingest: (object, attribute) of the function wrapped.
AFTER: dict[str, tuple[object, str]] = {
    "staged": (ingest, "_stage"),
    "quarantined": (ingest, "_quarantine"),
    "arranged": (ingest, "_arrange"),
    "committed": (TableLog, "commit"),
}


def crash(point: str) -> None:
    """Say where, then SIGKILL this process (all its threads; Spark's JVM is left behind)."""
    print(f"crashing at {point}", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(HOLD_S)  # SIGKILL ends the process before this returns


def replace(owner: object, name: str, make: Callable[[Any], Any]) -> None:
    """Set ``owner.name`` to ``make(original)``; a missing name (a renamed step) is an error."""
    original = getattr(owner, name)  # AttributeError: the step this point wraps is gone
    setattr(owner, name, make(original))


def crash_after(point: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """``original``, followed by the kill at ``point`` once it has returned."""

    @functools.wraps(original)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        crash(point)
        return result

    return wrapped


def held_from(count: int) -> Callable[[Iterable[StageTask]], Iterator[Any]]:
    """stage_partition, except that partitions ``count`` and later wait before staging.

    Runs in Spark's Python workers: this module runs as ``__main__``, so Spark's pickler ships
    this closure by value, and the workers need not import the tests.
    """

    def stage(tasks: Iterable[StageTask]) -> Iterator[Any]:
        context = TaskContext.get()
        if context is not None and context.partitionId() >= count:
            time.sleep(HOLD_S)
        return stage_partition(tasks)

    return stage


def watch_tasks(spark: SparkSession, count: int) -> None:
    """Kill the process once the running job's stages have ``count`` tasks done."""
    tracker = spark.sparkContext.statusTracker()
    while True:
        done = 0
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                done += info.numCompletedTasks
        if done >= count:
            crash(f"job:{count}")
        time.sleep(0.05)


def crash_during_job(count: int) -> None:
    """Arm ``job:N``: hold the partitions from N on, and watch the job from the driver."""
    replace(ingest, "stage_partition", lambda _original: held_from(count))

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def stage(spark: SparkSession, *args: Any, **kwargs: Any) -> Any:
            threading.Thread(target=watch_tasks, args=(spark, count), daemon=True).start()
            return original(spark, *args, **kwargs)

        return stage

    replace(ingest, "_stage", make)


def crash_while_publishing(count: int) -> None:
    """Arm ``publishing:N``: kill once the N-th ``commit=N`` directory was renamed into place."""
    moved = 0

    def make(original: Callable[[Path, Any], Path]) -> Callable[[Path, Any], Path]:
        @functools.wraps(original)
        def rename(self: Path, target: Any) -> Path:
            nonlocal moved
            result = original(self, target)
            if Path(target).name.startswith(f"{COMMIT_COLUMN}="):  # <dataset>/commit=N
                moved += 1
                if moved >= count:
                    crash(f"publishing:{count}")
            return result

        return rename

    replace(Path, "rename", make)


def arm(point: str) -> None:
    """Wrap the ingest's steps so that the process kills itself at ``point``."""
    name, colon, count = point.partition(":")
    if name in COUNTED and colon and count.isdigit() and int(count) > 0:
        (crash_during_job if name == "job" else crash_while_publishing)(int(count))
    elif name in AFTER and not colon:
        owner, attribute = AFTER[name]
        replace(owner, attribute, functools.partial(crash_after, point))
    else:
        points = ", ".join([*(f"{counted}:N" for counted in COUNTED), *AFTER])
        raise SystemExit(f"crashing_ingest: unknown point {point!r} (one of {points})")


def main(argv: list[str]) -> int:
    """Arm ``argv[0]``, then run ``grstats`` with the rest."""
    if not argv:
        raise SystemExit("usage: python -m tests.spark.crashing_ingest POINT GRSTATS-ARGS...")
    arm(argv[0])
    return grstats_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
