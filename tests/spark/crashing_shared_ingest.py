"""``grstats`` that kills itself with SIGKILL at one point of a shared ingest (tests only).

Run from the repository's root::

    python -m tests.spark.crashing_shared_ingest POINT spark ingest --shared --spool DIR ...

As tests/spark/crashing_ingest.py does for the single-writer ingest, it wraps the shared
ingest's own steps (grstats.spark.shared_ingest's and grstats.spark.delta's functions, nothing
copied) so that the process kills itself at POINT, and loads two segments a commit, so that a
spool of several segments takes several commits. The points, in the order a load passes them:

``read:N``
    after the N-th batch's rows were read, before its commit
``writing:N``
    in the N-th commit attempt, as soon as delta-rs has written a new file into ``data/``
    (before its commit, or just after; when it writes none, after its commit: each must
    come out right)
``committed:N``
    after the N-th batch's Delta commit

Just before the kill it prints ``crashing at POINT`` on stderr.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grstats.cli import main as grstats_main
from grstats.spark import delta, shared_ingest
from tests.spark.crashing_ingest import crash, replace

if TYPE_CHECKING:
    from collections.abc import Callable

#: Segments a commit loads in these runs.
SEGMENTS_PER_COMMIT = 2
#: Point -> (object, attribute) of the function whose N-th call it follows.
AFTER: dict[str, tuple[object, str]] = {
    "read": (shared_ingest, "_read_batch"),
    "committed": (shared_ingest, "append_new"),
}


def after_call(point: str, count: int, original: Callable[..., Any]) -> Callable[..., Any]:
    """``original``, followed by the kill once its ``count``-th call has returned."""
    calls = 0

    @functools.wraps(original)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        result = original(*args, **kwargs)
        calls += 1
        if calls >= count:
            crash(point)
        return result

    return wrapped


def files_of(directory: Path) -> set[Path]:
    """The Parquet files under ``directory``."""
    return set(directory.rglob("*.parquet"))


def kill_on_new_file(point: str, directory: Path, before: set[Path]) -> None:
    """Poll ``directory`` and kill the process as soon as a Parquet file not in ``before`` is there."""
    while not files_of(directory) - before:
        time.sleep(0.0005)
    crash(point)


def while_writing(point: str, count: int, original: Callable[..., Any]) -> Callable[..., Any]:
    """delta-rs' ``write_deltalake``, killed during its ``count``-th call once a file is written."""
    calls = 0

    @functools.wraps(original)
    def wrapped(table_or_uri: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == count:
            uri = table_or_uri if isinstance(table_or_uri, str) else table_or_uri.table_uri
            directory = Path(str(uri).removeprefix("file://"))
            watcher = threading.Thread(
                target=kill_on_new_file,
                args=(point, directory, files_of(directory)),
                daemon=True,
            )
            watcher.start()
            original(table_or_uri, *args, **kwargs)
            crash(point)  # it wrote no file (no new row), or the watcher was slower than it
        return original(table_or_uri, *args, **kwargs)

    return wrapped


def arm(point: str) -> None:
    """Wrap the shared ingest's steps so that the process kills itself at ``point``."""
    name, _, count = point.partition(":")
    if not count.isdigit() or int(count) < 1 or name not in (*AFTER, "writing"):
        raise SystemExit(f"crashing_shared_ingest: unknown point {point!r}")
    if name == "writing":
        replace(delta, "write_deltalake", functools.partial(while_writing, point, int(count)))
    else:
        owner, attribute = AFTER[name]
        replace(owner, attribute, functools.partial(after_call, point, int(count)))
    replace(
        shared_ingest,
        "run_shared_ingest",
        lambda run: functools.partial(run, segments_per_commit=SEGMENTS_PER_COMMIT),
    )


def main(argv: list[str]) -> int:
    """Arm ``argv[0]`` (``none``: no kill), then run ``grstats`` with the rest."""
    if not argv:
        raise SystemExit("usage: python -m tests.spark.crashing_shared_ingest POINT GRSTATS-ARGS")
    if argv[0] != "none":
        arm(argv[0])
    else:
        replace(
            shared_ingest,
            "run_shared_ingest",
            lambda run: functools.partial(run, segments_per_commit=SEGMENTS_PER_COMMIT),
        )
    return grstats_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
