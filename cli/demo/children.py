"""The processes the demo starts: each in a process group of its own, all stopped at the end.

Every child is started as the leader of a new session (``start_new_session``), so the
terminal's Ctrl-C reaches the demo alone and the demo stops its children in order; a signal
sent to a child's group also reaches what the child started (the JVM of a Spark job).
SIGTERM and SIGHUP to the demo are turned into :class:`Interrupted`, so that they stop the
children too, like Ctrl-C (KeyboardInterrupt) does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grstats.cli.errors import CliError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence
    from pathlib import Path
    from types import FrameType

#: Seconds a child gets to stop after SIGTERM before its group is killed.
STOP_GRACE_S = 10.0
#: Lines of a failed child's log shown in the error.
LOG_TAIL_LINES = 15


class Interrupted(BaseException):
    """The demo got SIGTERM or SIGHUP: stop everything and exit with 128 + the signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass(frozen=True, slots=True)
class Child:
    """One process the demo started, with the file its output goes to."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        """The child's pid, also its process group id."""
        return self.process.pid


def grstats_command(*args: str) -> list[str]:
    """The command line of ``grstats ARGS`` run by this very grstats.

    In the single-file executable (frozen: ``sys.frozen`` is set) ``sys.executable`` is that
    executable, which runs ``grstats`` and knows no ``-m``; elsewhere it is the interpreter,
    which runs the installed package as ``-m grstats``.
    """
    if getattr(sys, "frozen", False):
        return [sys.executable, *args]
    return [sys.executable, "-m", "grstats", *args]


class Children:
    """The demo's child processes by name; :meth:`stop_all` ends every one of them."""

    def __init__(self) -> None:
        self._children: dict[str, Child] = {}
        self._gone: set[str] = set()  #: children whose process group is known to be empty

    def __getitem__(self, name: str) -> Child:
        return self._children[name]

    def start(
        self,
        name: str,
        argv: Sequence[str],
        log: Path,
        stdout: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Child:
        """Start ``argv`` in a new process group, its stderr (and stdout) to ``log``.

        With ``stdout``, the standard output goes to that file instead; ``env`` adds to (or
        overrides) this process's environment.
        """
        log.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as files:
            errors = files.enter_context(log.open("wb"))
            output = errors if stdout is None else files.enter_context(stdout.open("wb"))
            process = subprocess.Popen(  # noqa: S603  (this very grstats: grstats_command)
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=errors,
                start_new_session=True,
                env=None if env is None else {**os.environ, **env},
            )
        child = Child(name, process, log)
        self._children[name] = child
        return child

    def running(self) -> list[Child]:
        """The children that have not exited."""
        return [child for child in self._children.values() if child.process.poll() is None]

    def check(self) -> None:
        """Raise CliError, with the end of its log, if a child exited that should be running."""
        for name, child in self._children.items():
            code = child.process.poll()
            if code is not None and name not in self._gone:
                raise CliError(
                    f"{name} (pid {child.pid}) exited with status {code}; "
                    f"the end of {child.log}:\n{log_tail(child.log)}"
                )

    def kill(self, name: str) -> Child:
        """Kill ``name`` and its group with SIGKILL (a crash: it cleans nothing up)."""
        child = self._children[name]
        _signal_group(child, signal.SIGKILL)
        child.process.wait()
        _wait_group_gone(child, STOP_GRACE_S)
        self._gone.add(name)
        return child

    def stop(self, name: str, grace_s: float = STOP_GRACE_S) -> int:
        """Stop ``name`` with SIGTERM (SIGKILL after ``grace_s``) and return its exit status."""
        child = self._children[name]
        _stop([child], grace_s)
        self._gone.add(name)
        code = child.process.returncode
        return code if code is not None else -signal.SIGKILL

    def wait(self, name: str, poll: Callable[[], None] | None = None) -> int:
        """Wait until ``name`` exits (calling ``poll`` meanwhile) and return its exit status.

        What it left in its group (a JVM that outlives its driver) is stopped too.
        """
        child = self._children[name]
        while child.process.poll() is None:
            if poll is not None:
                poll()
            time.sleep(0.2)
        if poll is not None:
            poll()
        _stop([child], STOP_GRACE_S)
        self._gone.add(name)
        return child.process.returncode

    def stop_all(self, grace_s: float = STOP_GRACE_S) -> list[Child]:
        """Stop every child still running, and what any child left in its group.

        Returns the children that were still running.
        """
        running = self.running()
        left = [c for c in self._children.values() if c.name not in self._gone]
        _stop(left, grace_s)
        self._gone.update(child.name for child in left)
        return running


def _stop(children: Sequence[Child], grace_s: float) -> None:
    for child in children:
        _signal_group(child, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for child in children:
        try:
            child.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal_group(child, signal.SIGKILL)
            child.process.wait()
        _signal_group(child, signal.SIGTERM)  # a JVM its leader left behind
    for child in children:
        _wait_group_gone(child, grace_s)


def _signal_group(child: Child, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signum)


def _wait_group_gone(child: Child, grace_s: float) -> None:
    deadline = time.monotonic() + grace_s
    while group_alive(child.pid):
        if time.monotonic() > deadline:
            _signal_group(child, signal.SIGKILL)
            deadline = time.monotonic() + grace_s
        time.sleep(0.05)


def group_alive(pgid: int) -> bool:
    """Whether any process is left in process group ``pgid``."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def log_tail(log: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of ``log``, indented."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"    (cannot read it: {exc})"
    return "\n".join(f"    {line}" for line in text.splitlines()[-lines:])


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Interrupted` (Ctrl-C raises as usual)."""

    def interrupt(signum: int, _frame: FrameType | None) -> None:
        raise Interrupted(signum)

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def signals_ignored() -> Iterator[None]:
    """Within the block, Ctrl-C, SIGTERM and SIGHUP wait (cleanup is not cut short)."""
    caught = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in caught}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
