"""The registry on a real, small, full file system: errors, never SIGBUS, nothing saved lost.

SQLite in WAL mode maps its -shm file and extends it by writing one byte at the end of each
4 KiB page (os_unix.c, unixShmMap); on a nearly full ext4 of 1 KiB blocks the rest of a page
stays a hole, and the first store into it killed the agent with SIGBUS. A SIGBUS kills the
process, so the registry runs in a probe process, as the agent uses it (load, save, purge,
close, and a restart), over a sweep of how much room is left; the test reads its exit
status and its report. The file system is a loop-mounted 4 MiB ext4 the test makes and
removes (root only; under CI a missing capability fails instead of skipping).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from grstats.agent.registry import REGISTRY_FILENAME, RegistryError, SqliteRegistry
from tests import waiting
from tests.agent.registry.records import generation
from tests.mariadb import missing
from tests.programs import require

if TYPE_CHECKING:
    from collections.abc import Iterator

    from grstats.agent.registry import MemberRecord

ROOT = Path(__file__).resolve().parents[3]

#: The room left on the file system at each step of the sweep, in KiB.
ROOM_KIB = range(0, 160, 8)

PROBE = """
    import errno, json, os, sys
    from pathlib import Path
    from grstats.agent.registry import RegistryError, SqliteRegistry
    from tests.agent.registry.records import generation

    mount = Path(sys.argv[1])
    rooms = [int(room) for room in sys.argv[2:]]
    filler = mount / "filler"

    def leave(room_kib):
        # Fill the file system to ENOSPC, then free room_kib KiB of it.
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            while True:
                os.write(fd, bytes(16384))
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
            while True:
                try:
                    os.write(fd, bytes(1024))
                except OSError:
                    break
        finally:
            os.close(fd)
        os.truncate(filler, max(0, filler.stat().st_size - room_kib * 1024))
        os.sync()

    def report(**fields):
        print(json.dumps(fields), flush=True)

    directories = {room: mount / f"state-{room}" for room in rooms}
    for directory in directories.values():
        directory.mkdir()
    saved = {}  # room -> the generation last saved there
    for room, directory in directories.items():
        leave(room)
        registry = SqliteRegistry.in_directory(directory)  # the agent's start
        errors = []
        for step, call in enumerate([
            registry.load,
            registry.forgotten,
            lambda: registry.save(generation(room * 10)),
            registry.load,  # the flush: load, save, purge
            lambda: registry.save(generation(room * 10 + 1)),
            lambda: registry.purge(0),
        ]):
            try:
                call()
            except RegistryError as exc:
                errors.append(str(exc))
            else:
                if step in (2, 4):
                    saved[room] = step // 2 - 1 + room * 10
        registry.close()  # SIGTERM: the last flush, then close
        report(step="run", room=room, errors=errors)
    leave(0)
    for room, directory in directories.items():  # a restart while full
        registry = SqliteRegistry.in_directory(directory)
        try:
            registry.load()
            report(step="restart", room=room, error=None)
        except RegistryError as exc:
            report(step="restart", room=room, error=str(exc))
        finally:
            registry.close()
    filler.unlink()
    os.sync()
    for room, directory in directories.items():  # room again: nothing saved is lost
        with SqliteRegistry.in_directory(directory) as registry:
            held = registry.load()
        expected = generation(saved[room]) if room in saved else []
        report(step="kept", room=room, kept=held == expected)
"""


@pytest.fixture(name="small_fs")
def _small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB ext4 of 1 KiB blocks, loop-mounted under ``tmp_path``; unmounted afterwards."""
    if os.geteuid() != 0:
        missing("a loop-mounted file system needs root")
    mkfs, mount, umount = require("mkfs.ext4", "e2fsprogs"), require("mount"), require("umount")
    # The image in memory when Linux's tmpfs is there: the registry's fsyncs then cost little.
    memory = Path("/dev/shm")  # noqa: S108  (mkstemp makes a file of its own there)
    fd, name = tempfile.mkstemp(suffix=".img", dir=memory if memory.is_dir() else tmp_path)
    os.close(fd)
    image = Path(name)
    point = tmp_path / "mnt"
    point.mkdir()
    with image.open("wb") as file:
        file.truncate(4 * 1024 * 1024)
    subprocess.run([mkfs, "-q", "-b", "1024", "-m", "0", str(image)], check=True, timeout=30)
    done = subprocess.run(
        [mount, "-o", "loop", str(image), str(point)],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    try:
        if done.returncode != 0:
            missing(f"cannot loop-mount a file system: {done.stderr.strip()}")
        try:
            yield point
        finally:
            subprocess.run([umount, str(point)], check=True, timeout=30)
    finally:
        image.unlink()


def test_full_disk_gives_errors_never_sigbus_and_keeps_what_was_saved(small_fs: Path) -> None:
    """Over a sweep of the room left, the registry fails with errors and never dies of SIGBUS.

    With some room its saves succeed, with none they fail with SQLite's "database or disk is
    full" (SQLITE_FULL), a restart while full loads or fails the same way, and once there is
    room again each registry holds the last save that returned, or nothing if none did.
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PROBE), str(small_fs), *map(str, ROOM_KIB)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    reports = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0, (
        f"the probe exited {done.returncode} (-7 is SIGBUS) after {reports[-1:]}:\n"
        f"{done.stderr[-3000:]}"
    )
    runs = [report for report in reports if report["step"] == "run"]
    assert [report["room"] for report in runs] == list(ROOM_KIB)
    errors = [error for report in runs for error in report["errors"]]
    assert any("database or disk is full" in error for error in errors)
    assert any(not report["errors"] for report in runs)  # enough room: everything worked
    assert all(error.startswith("member registry ") for error in errors)
    restarts = [report for report in reports if report["step"] == "restart"]
    assert len(restarts) == len(ROOM_KIB)
    kept = [report for report in reports if report["step"] == "kept"]
    assert [report["room"] for report in kept if not report["kept"]] == []
    assert len(kept) == len(ROOM_KIB)


def test_read_only_disk_fails_saves_keeps_reads_and_recovers(small_fs: Path) -> None:
    """On a file system remounted read-only saves fail, loads still work; read-write, saves do.

    SQLite says "attempt to write a readonly database" (SQLITE_READONLY); the save that
    failed changed nothing. (Linux refuses to remount read-only while a file is open for
    writing, so the registry is closed first, as after the error that drops its connection.)
    """
    mount = require("mount")
    with SqliteRegistry.in_directory(small_fs) as registry:
        registry.save(generation(1))
    subprocess.run([mount, "-o", "remount,ro", str(small_fs)], check=True, timeout=30)
    with SqliteRegistry.in_directory(small_fs) as registry:
        try:
            assert registry.load() == generation(1)
            with pytest.raises(RegistryError, match="readonly database"):
                registry.save(generation(2))
            assert registry.load() == generation(1)
        finally:
            subprocess.run([mount, "-o", "remount,rw", str(small_fs)], check=True, timeout=30)
        registry.save(generation(2))
        assert registry.load() == generation(2)


def fill(mount: Path) -> Path:
    """Fill the file system at ``mount`` to ENOSPC with one file; return it."""
    filler = mount / "filler"
    with filler.open("ab", buffering=0) as file:
        for size in (65536, 1024, 1):
            with contextlib.suppress(OSError):  # ENOSPC
                while True:
                    file.write(bytes(size))
    return filler


def start_agent(state_dir: Path, config: Path, log: Path) -> subprocess.Popen[bytes]:
    """An agent of a 1-member simulated group, its state in ``state_dir``, JSON lines to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [
                *(sys.executable, "-m", "grstats", "agent", "--config", str(config)),
                *("--source", "simulated", "--members", "1", "--member-index", "0"),
                *("--group-start", str(int(time.time())), "--listen", "127.0.0.1:0"),
                *("--state-dir", str(state_dir), "--log-format", "json"),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def events(log: Path) -> list[str]:
    """The events of the agent's JSON log lines so far (other lines, such as a traceback, as-is)."""
    found = []
    for line in log.read_text().splitlines():
        try:
            found.append(str(json.loads(line)["event"]))
        except (ValueError, KeyError, TypeError):
            found.append(line)
    return found


def stop(agent: subprocess.Popen[bytes]) -> int:
    """SIGTERM the agent; return its exit status."""
    agent.send_signal(signal.SIGTERM)
    return agent.wait(timeout=30)


@pytest.mark.slow
def test_agent_on_a_full_disk_serves_stops_and_restarts(small_fs: Path, tmp_path: Path) -> None:
    """An agent whose state disk fills says so once, exits 0 at SIGTERM, restarts while full.

    Once there is room again it says so and saves: what it had saved is kept throughout.
    """
    state_dir, config, log = small_fs / "state", tmp_path / "agent.toml", tmp_path / "agent.log"
    config.write_text("flush_interval_s = 1.0\n")
    agent = start_agent(state_dir, config, log)
    try:

        def saved() -> list[MemberRecord]:
            if not (state_dir / REGISTRY_FILENAME).exists():
                return []  # not yet: opening it here would make it
            with SqliteRegistry.in_directory(state_dir) as registry:
                try:
                    return registry.load()
                except RegistryError:  # the agent is making it
                    return []

        first = waiting.wait_until(saved, 30, "the agent's first save", detail=log.read_text)
        filler = fill(small_fs)
        waiting.wait_until(
            lambda: "registry_fault" in events(log), 10, "registry_fault", detail=log.read_text
        )
        assert stop(agent) == 0, log.read_text()
        assert events(log).count("registry_fault") == 1
        assert "registry_unsaved_at_stop" in events(log)
        fill(small_fs)  # what the stopped agent's journal freed
        agent = start_agent(state_dir, config, log)  # a restart while full
        waiting.wait_until(
            lambda: events(log).count("registry_fault") == 2,
            30,
            "the restarted agent's registry_fault",
            detail=log.read_text,
        )
        assert events(log).count("agent_started") == 2
        filler.unlink()
        waiting.wait_until(
            lambda: "registry_recovered" in events(log), 10, "recovery", detail=log.read_text
        )
        assert stop(agent) == 0, log.read_text()
        assert [record.member_id for record in saved()] == [record.member_id for record in first]
        assert not [line for line in events(log) if "Traceback" in line]
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait(timeout=30)
