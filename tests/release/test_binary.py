"""The single-file executable runs on a bare host: no Python, no virtual environment, no PATH.

The bare host is a root folder the tests make and enter with chroot (this needs root, as CI
runs). It holds the executable, the host's shared libraries the executable loads and nothing
else of the host's software: found with ``ldd`` on the executable and ``LD_DEBUG=libs`` on one
run of it, they are glibc's (the loader, libc, libm, libdl, libpthread, librt) and zlib's;
every other library, libpython's included, is inside the executable. Besides them the root has
``/tmp`` (where the executable unpacks itself), ``/dev/null``, ``/dev/urandom`` (gRPC seeds its
random numbers from it and aborts without it) and an ``/etc/passwd`` naming root (with no
$HOME, ``grstats query`` looks for its client config in root's home, found there); no
``/proc``, no shell, no Python. Every command runs there with an empty environment.

A minimal Debian root made by ``debootstrap --variant=minbase`` would be closer to a real host,
but making one takes about a minute and the Debian mirror: these tests do not use one (the same
three agents and queries were run by hand in one, and worked).
"""

from __future__ import annotations

import functools
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from grstats import __version__
from grstats.cli.demo import free_ports
from grstats.cli.demo.children import grstats_command
from tests.programs import require
from tests.release.listeners import Frozen, furnish, need_root, serve_everything
from tests.waiting import wait_until

if TYPE_CHECKING:
    from collections.abc import Callable

#: The executable's size limit (it is about 40 MB).
SIZE_LIMIT_BYTES = 60 * 1000 * 1000
#: Where the executable is in the bare root.
EXECUTABLE = "/usr/local/bin/grstats"
#: The only host libraries the executable may load: glibc's and zlib's, which every Linux has.
BASE_LIBRARY = re.compile(r"ld-linux[-\w.]*\.so\.\d+|lib(c|m|dl|pthread|rt|util|resolv|z)\.so\.\d+")
MEMBERS = 3
SPARK_HINT = "pip install 'grstats[spark]'"
#: Seconds the agents in the bare root get to start, and then each to serve the whole group
#: (it takes a few; more on a busy machine, as each start and query unpacks the executable).
SERVE_TIMEOUT_S = 60.0

#: The packaging worker builds the executable once for this module and test_deb.py.
pytestmark = pytest.mark.xdist_group("packaging")


def _run(args: list[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``args`` with an empty environment (as ``env -i``) and capture its output."""
    return subprocess.run(
        args, env={}, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def host_libraries(binary: Path, scratch: Path, bundle: Path | None = None) -> set[Path]:
    """The host's shared libraries ``binary`` loads: its own (ldd) and its Python's.

    The Python half comes from ``LD_DEBUG=libs`` on a query (which imports gRPC, protobuf,
    SSL and SQLite) to a port nothing listens on; what it loads from where it unpacked itself
    (the single file) or from ``bundle`` (the directory bundle's folder) is its own.
    """
    linked = subprocess.run(
        [require("ldd", "libc-bin"), str(binary)],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    found = {Path(path) for path in re.findall(r"(/\S+) \(0x[0-9a-f]+\)", linked)}
    unpacked = scratch / "tmp"
    unpacked.mkdir(parents=True)
    (port,) = free_ports(1)
    query = ["query", "stats", "--node", f"127.0.0.1:{port}", "--timeout", "1", "--format", "json"]
    subprocess.run(
        [str(binary), *query],
        env={
            "TMPDIR": str(unpacked),
            "HOME": str(scratch),
            "LD_DEBUG": "libs",
            "LD_DEBUG_OUTPUT": str(scratch / "ld"),
        },
        capture_output=True,
        timeout=60,
        check=False,
    )
    loaded = {
        Path(path)
        for trace in scratch.glob("ld.*")
        for path in re.findall(r"calling init: (/\S+)", trace.read_text(errors="replace"))
    }
    own = {path for path in loaded if path.is_relative_to(bundle or unpacked)}
    assert any(path.name.startswith("libpython") for path in own), f"no libpython among {own}"
    return found | (loaded - own)


@pytest.fixture(scope="module")
def bare_root(release_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root folder holding the executable, glibc, zlib, /tmp, two devices and /etc/passwd."""
    need_root()
    require("chroot", "coreutils")
    scratch = tmp_path_factory.mktemp("bare")
    root = scratch / "root"
    executable = root / EXECUTABLE.lstrip("/")
    executable.parent.mkdir(parents=True)
    shutil.copyfile(release_binary, executable)
    executable.chmod(0o755)
    furnish(root, host_libraries(release_binary, scratch / "libraries"))
    return root


def in_root(root: Path, *args: str) -> list[str]:
    """The command line of ``grstats ARGS`` run in ``root``."""
    return [require("chroot", "coreutils"), str(root), EXECUTABLE, *args]


def _files(root: Path) -> list[str]:
    """Every file in ``root``, relative to it."""
    return sorted(str(path.relative_to(root)) for path in root.rglob("*") if not path.is_dir())


def test_the_bare_root_holds_the_executable_glibc_and_zlib_only(bare_root: Path) -> None:
    """The root holds no Python and no host library but glibc's and zlib's."""
    files = _files(bare_root)
    assert not [name for name in files if "python" in name.lower()]
    libraries = {name.rsplit("/", 1)[-1] for name in files if ".so" in name}
    assert {name for name in libraries if not BASE_LIBRARY.fullmatch(name)} == set()
    assert {"libc.so.6", "libz.so.1"} <= libraries
    assert EXECUTABLE.lstrip("/") in files
    assert not (bare_root / "proc").exists()
    assert not (bare_root / "bin").exists()


def test_it_prints_its_version_on_the_bare_host(bare_root: Path, tmp_path: Path) -> None:
    """``grstats --version`` works in the bare root."""
    done = _run(in_root(bare_root, "--version"), tmp_path)
    assert (done.returncode, done.stdout.strip()) == (0, f"grstats {__version__}"), done.stderr


def test_an_agent_on_the_bare_host_serves_every_listener(bare_root: Path, tmp_path: Path) -> None:
    """An agent in the bare root serves gRPC (mTLS), SQL (TLS) and /metrics, each read by its client."""
    serve_everything(Frozen(bare_root, EXECUTABLE), tmp_path)


def test_spark_on_the_bare_host_says_what_to_install(bare_root: Path, tmp_path: Path) -> None:
    """A Spark job in the bare root exits 1 naming the wheel's extra to install."""
    done = _run(
        in_root(bare_root, "spark", "ingest", "--spool", "/spool", "--table", "/t"), tmp_path
    )
    assert done.returncode == 1, done.stderr
    assert SPARK_HINT in done.stderr
    assert "Traceback" not in done.stderr


def _rows(root: Path, port: int, table: str) -> dict[str, dict[str, Any]]:
    """``table``'s rows by MEMBER_ID, as the agent on ``port`` serves them, asked in ``root``."""
    done = subprocess.run(
        in_root(root, "query", table, "--node", f"127.0.0.1:{port}", "--format", "json"),
        env={},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        return {}
    return {row["MEMBER_ID"]: row for row in json.loads(done.stdout)["rows"]}


def _whole_group(root: Path, port: int) -> dict[str, dict[str, Any]]:
    """The agent's member stats once they have a row for every member, else nothing."""
    rows = _rows(root, port, "stats")
    return rows if len(rows) == MEMBERS else {}


def _logs(logs: list[Path]) -> str:
    """The agents' logs' last lines, for a failure."""
    return "\n".join(
        f"{log.name}:\n" + "\n".join(log.read_text(errors="replace").splitlines()[-10:])
        for log in logs
    )


def test_three_agents_on_the_bare_host_serve_the_whole_group(
    bare_root: Path, tmp_path: Path
) -> None:
    """Three agents of one simulated group run in the bare root, each serves every member's rows, and SIGTERM stops them cleanly."""
    ports = free_ports(MEMBERS)
    peers = ",".join(f"127.0.0.1:{port}" for port in ports)
    start = str(int(time.time()))
    logs = [tmp_path / f"agent-{index}.log" for index in range(MEMBERS)]
    agents: list[subprocess.Popen[bytes]] = []
    try:
        for index, port in enumerate(ports):
            with logs[index].open("wb") as log:
                agents.append(
                    subprocess.Popen(
                        in_root(
                            bare_root,
                            "agent",
                            "--source",
                            "simulated",
                            "--scenario",
                            "steady",
                            "--members",
                            str(MEMBERS),
                            "--member-index",
                            str(index),
                            "--group-start",
                            start,
                            "--listen",
                            f"127.0.0.1:{port}",
                            "--peers",
                            peers,
                            "--state-dir",
                            f"/var/lib/grstats/{index}",
                            "--log-format",
                            "json",
                        ),
                        env={},
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )

        def started() -> bool:
            assert [agent.poll() for agent in agents] == [None] * MEMBERS, _logs(logs)
            return all('"agent_started"' in log.read_text() for log in logs)

        # Each start unpacks the executable, and so does each query: the queries wait for the
        # starts (in the logs) so as not to slow them down on a busy machine.
        wait_until(started, SERVE_TIMEOUT_S, "the agents in the bare root have started")
        stats = [
            wait_until(
                functools.partial(_whole_group, bare_root, port),
                SERVE_TIMEOUT_S,
                f"the agent on port {port}, asked in the bare root, serves {MEMBERS} members' stats",
                detail=lambda: _logs(logs),
            )
            for port in ports
        ]
        members = [_rows(bare_root, ports[-1], "members")]
        assert [agent.poll() for agent in agents] == [None] * MEMBERS, _logs(logs)
        uuids = set(stats[0])
        assert all(set(rows) == uuids for rows in stats + members)
        assert all(row["MEMBER_STATE"] == "ONLINE" for rows in members for row in rows.values())

        for agent in agents:
            agent.send_signal(signal.SIGTERM)
        codes = [agent.wait(timeout=30) for agent in agents]
        assert codes == [0] * MEMBERS, _logs(logs)
        assert all('"agent_stopped"' in log.read_text() for log in logs), _logs(logs)
        # Every run (agents and queries) removed what it unpacked.
        assert list((bare_root / "tmp").iterdir()) == []
    finally:
        for agent in agents:
            if agent.poll() is None:
                agent.kill()
                agent.wait()


def test_the_executable_is_one_file_of_bounded_size(
    release_binary: Path, record_property: Callable[[str, object], None]
) -> None:
    """The executable is one file, named by version and machine, of at most 60 MB (its size is recorded)."""
    size = release_binary.stat().st_size
    record_property("executable_bytes", size)
    print(f"{release_binary.name}: {size} bytes ({size / 1e6:.1f} MB)")
    assert release_binary.name == f"grstats-{__version__}-linux-{platform.machine()}"
    assert release_binary.is_file()
    assert os.access(release_binary, os.X_OK)
    assert size <= SIZE_LIMIT_BYTES, f"{size} bytes, more than {SIZE_LIMIT_BYTES}"


@pytest.mark.parametrize("form", ["single file", "bundle"])
def test_no_runtime_hook_loads_what_the_command_line_does_not_use(
    form: str, release_binary: Path, release_bundle: Path
) -> None:
    """Neither form runs PyInstaller's multiprocessing or inspect hooks at start (issue 50: 27 ms of --version); pkgutil's stays."""
    executable = release_binary if form == "single file" else release_bundle / "grstats"
    held = executable.read_bytes()  # the archive's table names its scripts uncompressed
    assert b"pyi_rth_pkgutil" in held  # the hooks kept are named where the test looks
    assert b"pyi_rth_multiprocessing" not in held
    assert b"pyi_rth_inspect" not in held


def test_an_empty_environment_runs_it_as_the_package_runs(
    release_binary: Path, tmp_path: Path
) -> None:
    """With an empty environment (as ``env -i``: no PATH, no HOME) it prints its version and simulates a group exactly as the package does."""
    version = _run([str(release_binary), "--version"], tmp_path)
    assert (version.returncode, version.stdout.strip()) == (0, f"grstats {__version__}")
    simulate = ["simulate", "--scenario", "steady", "--seconds", "5", "--format", "json"]
    frozen = _run([str(release_binary), *simulate], tmp_path)
    assert frozen.returncode == 0, frozen.stderr
    package = subprocess.run(
        [sys.executable, "-m", "grstats", *simulate],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    tables = json.loads(frozen.stdout)
    assert tables == json.loads(package.stdout)
    assert tables
    assert all(len({row["MEMBER_ID"] for row in rows}) == MEMBERS for rows in tables.values())


def test_the_demo_starts_its_children_with_the_executable_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Frozen, the demo's children run the executable with grstats's arguments, not ``-m grstats``."""
    assert grstats_command("agent") == [sys.executable, "-m", "grstats", "agent"]
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", "grstats-frozen")
    assert grstats_command("agent", "--help") == ["grstats-frozen", "agent", "--help"]
