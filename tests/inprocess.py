"""Run ``grstats`` in the test's own process: ``grstats.cli.main`` with captured output.

Arguments, exit statuses and output are checked this way in milliseconds; each command keeps
one test that starts the installed script as a process (its smoke test).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import time
from typing import TYPE_CHECKING

import pytest
import structlog

from grstats.cli import main

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator, Sequence

    #: ``await grstats(*args)``: the status and output of ``grstats ARGS``, run in-process.
    Grstats = Callable[..., Awaitable[subprocess.CompletedProcess[str]]]


@contextlib.contextmanager
def kept_process_settings() -> Iterator[None]:
    """Restore what a command changes for the whole process: logging and GRPC_VERBOSITY.

    The commands that run a loop (agent, collect) call configure_logging, which configures
    structlog and puts a handler on the root logger, writing to the standard error of the
    run (the capture); main() sets GRPC_VERBOSITY when grpc is not imported yet.
    """
    structlog_config, configured = structlog.get_config(), structlog.is_configured()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    verbosity = os.environ.get("GRPC_VERBOSITY")
    try:
        yield
    finally:
        if configured:
            structlog.configure(**structlog_config)
        else:
            structlog.reset_defaults()
        root.handlers[:] = handlers
        root.setLevel(level)
        if verbosity is None:
            os.environ.pop("GRPC_VERBOSITY", None)
        else:
            os.environ["GRPC_VERBOSITY"] = verbosity


def run_main(
    args: Sequence[str], capsys: pytest.CaptureFixture[str]
) -> subprocess.CompletedProcess[str]:
    """Call ``main(args)``; the status is what ``grstats ARGS`` would exit with.

    ``main`` returns the status, or argparse raises SystemExit (``--help``, usage errors),
    as ``python -m grstats`` (``sys.exit(main())``) turns either into the process's status.
    """
    capsys.readouterr()  # only this run's output
    with kept_process_settings():
        try:
            code: int | str | None = main(list(args))
        except SystemExit as exc:
            code = exc.code
    out, err = capsys.readouterr()
    assert isinstance(code, int), f"grstats {' '.join(args)} exited with {code!r}"
    return subprocess.CompletedProcess(list(args), code, out, err)


async def run_main_async(
    args: Sequence[str], capsys: pytest.CaptureFixture[str]
) -> subprocess.CompletedProcess[str]:
    """:func:`run_main` in a thread, so agents on the test's event loop keep serving."""
    return await asyncio.to_thread(run_main, args, capsys)


def grstats_in_thread(capsys: pytest.CaptureFixture[str]) -> Grstats:
    """Return ``await grstats(*args)``: :func:`run_main_async` for a test's fixture."""

    async def grstats(*args: str) -> subprocess.CompletedProcess[str]:
        return await run_main_async(args, capsys)

    return grstats


@contextlib.contextmanager
def machine_zone(tz: str) -> Iterator[None]:
    """Make ``tz`` the process's local zone (the ``TZ`` variable) for the block, then restore it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TZ", tz)
        time.tzset()
        try:
            yield
        finally:
            patch.undo()
            time.tzset()
