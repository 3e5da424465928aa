"""A class-data sharing archive for the driver JVM that a grstats Spark command starts.

Starting Spark's driver loads and verifies some twenty thousand classes from Spark's jars,
and the first queries load thousands more: on 2 cores that was about 4 of the 9.5 s before a
session was ready, and half of a first small query's 5 s (docs/benchmarks.md, "Spark
report"). The JDK can write the classes one run loaded into an archive when that JVM exits
(dynamic class-data sharing, JDK 13 and later: ``-XX:ArchiveClassesAtExit``) and map it into
later JVMs (``-XX:SharedArchiveFile``), which then skip parsing and verifying them.

The first command that finds no archive for its JDK and pyspark writes one: its JVM dumps
the classes to a temporary file as it exits, and :func:`finish`, run as the command exits,
waits for that and renames the file into place, so no command maps a half-written archive.
Later commands map it. The JVM checks an archive against its own build and class path and
runs without it when they differ; the archive's name holds the JDK's and pyspark's identity,
so an upgrade writes a new one. An archive is about 150 MB.

``GRSTATS_SPARK_CLASS_ARCHIVE=off`` turns this off; ``=DIR`` keeps the archives in DIR
(default: ``$XDG_CACHE_HOME/grstats``, else ``~/.cache/grstats``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

#: The environment variable that turns the archive off ("off") or names its directory.
ENV = "GRSTATS_SPARK_CLASS_ARCHIVE"
#: How long :func:`finish` waits for the JVM to write the archive and exit.
DUMP_TIMEOUT_S = 300.0
#: The JVM's own warnings go to stderr (by default they go to stdout, which holds a command's
#: JSON), and class-data sharing's notes about the classes it cannot archive are not shown.
LOG_OPTIONS = "-Xlog:all=off:stdout -Xlog:all=warning,cds*=off:stderr"


@dataclass(frozen=True)
class ArchivePlan:
    """What the driver JVM does with the archive.

    Attributes:
        options: its JVM options (empty when the archive is off or cannot be named).
        pending: the temporary file the JVM writes the archive to at exit (None: it maps an
            archive, or does nothing).
        archive: where :func:`finish` moves ``pending``.
    """

    options: str
    pending: Path | None = None
    archive: Path | None = None


def plan(environ: Mapping[str, str] | None = None) -> ArchivePlan:
    """Return the archive options for a driver JVM this process is about to start."""
    environ = os.environ if environ is None else environ
    setting = environ.get(ENV, "")
    if setting.lower() == "off":
        return ArchivePlan("")
    identity = _identity(environ)
    if identity is None:
        return ArchivePlan("")
    directory = Path(setting) if setting else _cache_home(environ) / "grstats"
    archive = directory / f"spark-classes-{identity}.jsa"
    if archive.is_file():
        return ArchivePlan(f"{LOG_OPTIONS} -XX:SharedArchiveFile={archive}")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return ArchivePlan("")
    _remove_abandoned(directory)
    pending = directory / f".{archive.name}.{os.getpid()}.tmp"
    return ArchivePlan(f"{LOG_OPTIONS} -XX:ArchiveClassesAtExit={pending}", pending, archive)


def finish(archive_plan: ArchivePlan) -> None:
    """At the exit of a process whose JVM writes an archive: end the JVM, wait, keep the archive.

    Does nothing for a plan that writes none. The JVM ends when its standard input closes
    (pyspark's gateway watches it); one that does not end within DUMP_TIMEOUT_S leaves no
    archive.
    """
    if archive_plan.pending is None or archive_plan.archive is None:
        return
    from pyspark import SparkContext  # noqa: PLC0415 (only where Spark runs)

    gateway = SparkContext._gateway  # noqa: SLF001 (pyspark keeps the JVM's gateway there)
    process: subprocess.Popen[bytes] | None = getattr(gateway, "proc", None)
    try:
        if gateway is None or process is None:
            return
        print(
            f"grstats: writing Spark's class archive for later commands, once "
            f"({archive_plan.archive}; {ENV}=off turns this off)",
            file=sys.stderr,
            flush=True,
        )
        with contextlib.suppress(Exception):
            gateway.shutdown()
        SparkContext._gateway = None  # noqa: SLF001
        SparkContext._jvm = None  # noqa: SLF001
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        try:
            process.wait(timeout=DUMP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return
        if archive_plan.pending.is_file() and archive_plan.pending.stat().st_size > 0:
            archive_plan.pending.replace(archive_plan.archive)
    finally:
        archive_plan.pending.unlink(missing_ok=True)


def _identity(environ: Mapping[str, str]) -> str | None:
    """A short hash of the JDK's build (its libjvm file) and pyspark's jars, or None."""
    java_home = environ.get("JAVA_HOME")
    java = Path(java_home, "bin", "java") if java_home else None
    if java is None or not java.exists():
        found = shutil.which("java", path=environ.get("PATH", os.defpath))
        if found is None:
            return None
        java = Path(found)
    home = java.resolve().parent.parent
    libjvm = next((p for p in (home / "lib" / "server" / "libjvm.so",) if p.is_file()), java)
    try:
        import pyspark  # noqa: PLC0415 (only where Spark runs)
    except ImportError:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    stat = libjvm.stat()
    text = f"{libjvm.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{pyspark.__version__}|{jars}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _cache_home(environ: Mapping[str, str]) -> Path:
    cache = environ.get("XDG_CACHE_HOME")
    return Path(cache) if cache else Path.home() / ".cache"


def _remove_abandoned(directory: Path) -> None:
    """Remove temporary archives whose writing process is gone (killed while it dumped)."""
    for path in directory.glob(".spark-classes-*.tmp"):
        pid = path.name.rsplit(".", 2)[-2]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                path.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True
