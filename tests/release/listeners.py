"""A frozen agent with every listener on, in a bare root, and each listener read by its client.

:func:`serve_everything` starts ``grstats agent`` (the single file or the packaged bundle) in
a root folder it enters with chroot, with an empty environment, from a config that turns on
every listener: gRPC (``listen``), the MySQL-protocol endpoint (``sql_listen``) and
``/metrics`` (``metrics_listen``), with mutual TLS on gRPC and TLS on the SQL endpoint (the
certificates of deploy/tls/make-certs.sh, for the simulated member's UUID, at 127.0.0.1). It
first runs ``grstats doctor`` there, which starts each listener as the agent will, then starts
the agent and reads each listener with its real client: ``grstats query`` run in the root,
the host's ``mariadb`` client over TLS, and an HTTP scrape of ``/metrics``. The root shares
the host's network, so the host's clients reach the agent at 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from grstats.agent.sim.group import member_uuid
from grstats.cli.demo import free_ports
from tests.certs import make_certs
from tests.mariadb import missing
from tests.programs import require
from tests.waiting import wait_until

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

#: The simulated member the agent reads (scenario steady, seed 1, a group of one).
SEED = 1
MEMBER_UUID = member_uuid("steady", SEED, 0)
#: Where the config, the certificates and the state are inside the root.
CONFIG = "/etc/grstats/agent.toml"
TLS_DIR = "/etc/grstats/tls"
STATE_DIR = "/var/lib/grstats/agent"
#: The character devices of a bare root: name -> (major, minor).
DEVICES = {"null": (1, 3), "urandom": (1, 9)}
#: Seconds the agent gets to start and to serve its member, each listener alike.
SERVE_TIMEOUT_S = 60.0
BUILD_INFO = "grstats_build_info"
#: The doctor's lines of the listeners.
PORT_LINES = ("port.listen", "port.metrics_listen", "port.sql_listen")


def furnish(root: Path, libraries: Iterable[Path]) -> None:
    """Give ``root`` what a bare host has for grstats: the libraries, /tmp, /dev, root's passwd line.

    ``libraries`` are the host's shared libraries the executable loads (copied as files where
    the host has links); the devices are /dev/null and /dev/urandom (gRPC seeds its random
    numbers from it and aborts without it); /etc/passwd names root (``grstats query`` looks
    for its client config in root's home). Nothing else: no shell, no Python, no /proc.
    """
    for library in libraries:
        target = root / library.relative_to("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(library, target)
        target.chmod(0o755)
    (root / "tmp").mkdir(exist_ok=True)
    (root / "tmp").chmod(0o1777)
    (root / "dev").mkdir(exist_ok=True)
    for name, (major, minor) in DEVICES.items():
        os.mknod(root / "dev" / name, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
    try:
        with (root / "dev" / "urandom").open("rb") as device:
            device.read(1)
    except OSError as exc:
        pytest.fail(f"the device files the bare root needs do not open ({exc}): is it nodev?")
    passwd = root / "etc" / "passwd"
    passwd.parent.mkdir(exist_ok=True)
    known = passwd.read_text(encoding="utf-8") if passwd.exists() else ""
    if not known.startswith("root:") and "\nroot:" not in known:
        passwd.write_text("root:x:0:0:root:/root:/nonexistent\n" + known, encoding="utf-8")


def need_root() -> None:
    """Skip (fail under CI) unless running as root, which chroot and mknod need."""
    if os.geteuid() != 0:
        missing("the bare-host tests need root (chroot, device files); CI runs as root")


@dataclass(frozen=True)
class Frozen:
    """A frozen grstats inside a bare root.

    Attributes:
        root: the root folder, entered with chroot.
        executable: the program's path inside it.
    """

    root: Path
    executable: str

    def command(self, *args: str) -> list[str]:
        """The command line of ``grstats ARGS`` run in the root."""
        return [require("chroot", "coreutils"), str(self.root), self.executable, *args]

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run ``grstats ARGS`` in the root with an empty environment."""
        return subprocess.run(
            self.command(*args),
            env={},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


@dataclass(frozen=True)
class Listeners:
    """Where the agent serves: host ports on 127.0.0.1."""

    grpc: int
    sql: int
    metrics: int


def write_config(root: Path) -> Listeners:
    """The certificates and agent.toml with every listener on, written into ``root``."""
    certs = make_certs(root / TLS_DIR.lstrip("/"), f"db1={MEMBER_UUID}@127.0.0.1")
    assert (certs / "client.pem").is_file()
    grpc, sql, metrics = free_ports(3)
    config = root / CONFIG.lstrip("/")
    config.write_text(
        f"""source = "simulated"
listen = "127.0.0.1:{grpc}"
metrics_listen = "127.0.0.1:{metrics}"
sql_listen = "127.0.0.1:{sql}"
state_dir = "{STATE_DIR}"
log_format = "json"

[tls]
cert_file = "{TLS_DIR}/db1.pem"
key_file = "{TLS_DIR}/db1.key"
ca_file = "{TLS_DIR}/ca.pem"
require_client_cert = true

[simulated]
scenario = "steady"
members = 1
member_index = 0
seed = {SEED}
group_start_s = {int(time.time())}
""",
        encoding="utf-8",
    )
    return Listeners(grpc, sql, metrics)


@contextlib.contextmanager
def running_agent(frozen: Frozen, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``grstats agent --config CONFIG`` running in the root; SIGTERM, then SIGKILL, at the end."""
    with log.open("wb") as output:
        agent = subprocess.Popen(
            frozen.command("agent", "--config", CONFIG),
            env={},
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        yield agent
    finally:
        if agent.poll() is None:
            agent.send_signal(signal.SIGTERM)
            try:
                agent.wait(timeout=30)
            except subprocess.TimeoutExpired:
                agent.kill()
                agent.wait()


def query_members(frozen: Frozen, port: int) -> list[dict[str, Any]]:
    """The members ``grstats query`` in the root gets from the agent over mutual TLS."""
    done = frozen.run(
        "query",
        "members",
        "--node",
        f"127.0.0.1:{port}",
        "--tls-ca",
        f"{TLS_DIR}/ca.pem",
        "--tls-cert",
        f"{TLS_DIR}/client.pem",
        "--tls-key",
        f"{TLS_DIR}/client.key",
        "--format",
        "json",
    )
    if done.returncode != 0:
        return []
    rows: list[dict[str, Any]] = json.loads(done.stdout)["rows"]
    return rows


def mariadb(root: Path, port: int, sql: str) -> subprocess.CompletedProcess[str]:
    """The host's mariadb client, over TLS it verifies with the group's CA, running ``sql``."""
    return subprocess.run(
        [
            require("mariadb", "mariadb-client"),
            "-h",
            "127.0.0.1",
            "-P",
            str(port),
            "-u",
            "grstats",
            "--ssl",
            f"--ssl-ca={root / TLS_DIR.lstrip('/') / 'ca.pem'}",
            "--ssl-verify-server-cert",
            "-B",
            "-N",
            "-e",
            sql,
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            # the field after the command's closing parenthesis: state, then the parent's pid
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def scrape(port: int) -> str:
    """``/metrics`` of the agent, as Prometheus scrapes it."""
    url = f"http://127.0.0.1:{port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        body: bytes = response.read()
    return body.decode()


def serve_everything(
    frozen: Frozen,
    tmp_path: Path,
    while_serving: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> None:
    """Start the agent in the root with every listener on and read each with its client.

    ``while_serving`` is called with the agent's process once every listener has answered,
    before the agent stops.
    """
    listeners = write_config(frozen.root)
    # the doctor starts each listener as the agent will (then stops it): all start
    doctor = frozen.run("doctor", "--config", CONFIG, "--format", "json", "--timeout", "2")
    lines = {line["name"]: line for line in json.loads(doctor.stdout)["checks"]}
    ports = {name: line["status"] for name, line in lines.items() if name.startswith("port.")}
    assert ports == dict.fromkeys(PORT_LINES, "ok"), doctor.stdout + doctor.stderr
    log = tmp_path / "agent.log"

    def logged() -> str:
        return log.read_text(errors="replace")[-4000:]

    with running_agent(frozen, log) as agent:

        def started() -> bool:
            assert agent.poll() is None, f"the agent exited {agent.returncode}:\n{logged()}"
            return '"agent_started"' in log.read_text(errors="replace")

        wait_until(started, SERVE_TIMEOUT_S, "the agent in the bare root has started")

        def members() -> list[dict[str, Any]]:
            return [row for row in query_members(frozen, listeners.grpc) if row["MEMBER_STATE"]]

        rows = wait_until(
            members,
            SERVE_TIMEOUT_S,
            "grstats query in the bare root reads the agent's members over mutual TLS",
            detail=logged,
        )
        assert [row["MEMBER_ID"] for row in rows] == [MEMBER_UUID]

        sql = "SELECT MEMBER_ID, MEMBER_STATE FROM performance_schema.replication_group_members"
        done = mariadb(frozen.root, listeners.sql, sql)
        assert done.returncode == 0, done.stderr + logged()
        assert done.stdout.split() == [MEMBER_UUID, rows[0]["MEMBER_STATE"]]
        status = mariadb(frozen.root, listeners.sql, "status")
        assert status.returncode == 0, status.stderr
        assert "Cipher in use is TLS" in status.stdout, status.stdout

        metrics = scrape(listeners.metrics)
        assert any(line.startswith(BUILD_INFO + "{") for line in metrics.splitlines()), metrics

        if while_serving is not None:
            while_serving(agent)
        assert agent.poll() is None, logged()
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(timeout=30) == 0, logged()
    assert '"agent_stopped"' in log.read_text(errors="replace"), logged()
