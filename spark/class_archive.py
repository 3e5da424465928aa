"""A class-data sharing archive for the driver JVM that a grstats Spark command starts.

Starting Spark's driver loads and verifies some twenty thousand classes from Spark's jars,
and the first queries load thousands more: on 2 cores that was about 4 of the 9.5 s before a
session was ready, and half of a first small query's 5 s (docs/benchmarks.md, "Spark
report"). The JDK can write the classes one run loaded into an archive when that JVM exits
(dynamic class-data sharing, JDK 13 and later: ``-XX:ArchiveClassesAtExit``) and map it into
later JVMs (``-XX:SharedArchiveFile``), which then skip parsing and verifying them.

The first command that finds no archive for its JDK and pyspark writes one: its JVM dumps
the classes to a temporary file as it exits. :func:`finish`, run as the command exits, ends
the JVM and leaves a detached process (:func:`keep`) that waits for the dump and renames the
file into place, so the command returns at once rather than after the dump (about 30 s on
2 cores: docs/benchmarks.md, "The class archive in the background"), and no command maps a
half-written archive. Later commands map it.
The JVM checks an archive against its own build and class path and
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
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

#: The environment variable that turns the archive off ("off") or names its directory.
ENV = "GRSTATS_SPARK_CLASS_ARCHIVE"
#: How long :func:`keep` waits for the JVM to write the archive and exit; a temporary archive
#: unchanged this long whose command is gone is abandoned.
DUMP_TIMEOUT_S = 300.0
#: The first four bytes of a finished dynamic archive (JDK 17's CDS_DYNAMIC_ARCHIVE_MAGIC,
#: in the machine's byte order). The JDK writes the header last, after the regions
#: (ArchiveBuilder::write_archive, src/hotspot/share/cds/archiveBuilder.cpp), so a dump cut
#: short has no magic.
DYNAMIC_MAGIC = 0xF00BABA8.to_bytes(4, sys.byteorder)
#: How often :func:`keep` looks whether the JVM has exited.
POLL_S = 0.2
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
    """At the exit of a process whose JVM writes an archive: end the JVM, leave :func:`keep`.

    Does nothing for a plan that writes none. The JVM ends when its standard input closes
    (pyspark's gateway watches it) and dumps as it ends; a detached ``python -m
    grstats.spark.class_archive`` keeps the archive once the JVM is gone, so this process
    exits without waiting for the dump.
    """
    if archive_plan.pending is None or archive_plan.archive is None:
        return
    from pyspark import SparkContext  # noqa: PLC0415 (only where Spark runs)

    gateway = SparkContext._gateway  # noqa: SLF001 (pyspark keeps the JVM's gateway there)
    process: subprocess.Popen[bytes] | None = getattr(gateway, "proc", None)
    handed = False
    try:
        if gateway is None or process is None:
            return
        with contextlib.suppress(Exception):
            gateway.shutdown()
        SparkContext._gateway = None  # noqa: SLF001
        SparkContext._jvm = None  # noqa: SLF001
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        subprocess.Popen(  # noqa: S603 (this interpreter, this module, our own paths)
            [
                sys.executable,
                "-m",
                __name__,
                str(archive_plan.pending),
                str(archive_plan.archive),
                str(process.pid),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # outlives this process and its terminal's signals
        )
        print(
            f"grstats: writing Spark's class archive for later commands, once, in the "
            f"background ({archive_plan.archive}; {ENV}=off turns this off)",
            file=sys.stderr,
            flush=True,
        )
        handed = True  # keep() owns the temporary archive now
    finally:
        if not handed:
            archive_plan.pending.unlink(missing_ok=True)


def keep(pending: Path, archive: Path, pid: int) -> bool:
    """Wait until process ``pid`` (the dumping JVM) is gone; move a finished dump to ``archive``.

    A dump that is missing, cut short (no DYNAMIC_MAGIC) or not done within DUMP_TIMEOUT_S is
    deleted. Returns whether ``archive`` was written.
    """
    deadline = time.monotonic() + DUMP_TIMEOUT_S
    while _running(pid):
        if time.monotonic() > deadline:
            pending.unlink(missing_ok=True)
            return False
        time.sleep(POLL_S)
    try:
        with pending.open("rb") as file:
            finished = file.read(len(DYNAMIC_MAGIC)) == DYNAMIC_MAGIC
        if finished:
            pending.replace(archive)
            return True
        pending.unlink()
    except OSError:
        pending.unlink(missing_ok=True)
    return False


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, exited but not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        return _alive(pid)
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


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
    """Remove temporary archives abandoned by a dump that was killed.

    Abandoned: the command that made it is gone, and it has not changed for DUMP_TIMEOUT_S
    (a JVM dumping after its command returned writes it, and :func:`keep` moves it).
    """
    for path in directory.glob(".spark-classes-*.tmp"):
        pid = path.name.rsplit(".", 2)[-2]
        with contextlib.suppress(OSError):
            idle = time.time() - path.stat().st_mtime
            if pid.isdigit() and not _alive(int(pid)) and idle > DUMP_TIMEOUT_S:
                path.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


if __name__ == "__main__":  # the detached process finish() leaves: PENDING ARCHIVE PID
    keep(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
