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
    after the N-th attempt's files were written into ``data/``, before its commit (when it
    has no new row, it writes none)
``committed:N``
    after the N-th batch's Delta commit

Just before the kill it prints ``crashing at POINT`` on stderr.
"""

from __future__ import annotations

import functools
import sys
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
    "writing": (delta, "_write_rows"),
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


def arm(point: str) -> None:
    """Wrap the shared ingest's steps so that the process kills itself at ``point``."""
    name, _, count = point.partition(":")
    if not count.isdigit() or int(count) < 1 or name not in AFTER:
        raise SystemExit(f"crashing_shared_ingest: unknown point {point!r}")
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
