"""A throwaway MariaDB server for tests: found or installed, started from a temporary data dir.

``MariaDB.start(workdir)`` creates a data dir with ``mariadb-install-db`` and runs ``mariadbd``
on 127.0.0.1 with a free port, a socket in ``workdir`` and TLS (a CA, a server certificate
for 127.0.0.1 and a client certificate, made with ``openssl``). Root logs in through the
socket without a password; tests create least-privilege accounts with :meth:`MariaDB.execute`.

When the server is missing, :func:`require_server_binaries` fails under CI (``CI=true``: a
missing dependency is a failure), installs ``mariadb-server`` with apt-get when running as
root, or skips with the reason.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pymysql  # type: ignore[import-untyped]
import pytest
from pymysql.constants import CLIENT  # type: ignore[import-untyped]

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

SERVER_NAMES = ("mariadbd", "mysqld")
INSTALL_DB_NAMES = ("mariadb-install-db", "mysql_install_db")
SEARCH_PATH = ("/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/usr/libexec")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
#: The server's default time zone: not UTC, so a client that forgets to read in UTC is caught.
SERVER_TIME_ZONE = "+02:00"


def in_ci() -> bool:
    """Whether the tests run under CI, where a missing dependency is a failure."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def missing(reason: str) -> None:
    """Fail under CI, else skip, because a test dependency is missing."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true: a missing test dependency is a failure)")
    pytest.skip(reason)


@dataclass(frozen=True)
class Binaries:
    """The server and data-dir installer programs."""

    server: Path
    install_db: Path


def find_server_binaries() -> Binaries | None:
    """Return the MariaDB (or MySQL) server programs on PATH or in the usual places."""
    search = os.pathsep.join([os.environ.get("PATH", ""), *SEARCH_PATH])
    server = next(filter(None, (shutil.which(name, path=search) for name in SERVER_NAMES)), None)
    install = next(
        filter(None, (shutil.which(name, path=search) for name in INSTALL_DB_NAMES)), None
    )
    if server is None or install is None:
        return None
    return Binaries(Path(server), Path(install))


def require_server_binaries() -> Binaries:
    """Return the server programs, installing mariadb-server as root outside CI if missing."""
    found = find_server_binaries()
    if found is not None:
        return found
    if in_ci():
        pytest.fail(
            "mariadbd not found: install the Debian package mariadb-server "
            "(CI=true: a missing test dependency is a failure)"
        )
    apt = shutil.which("apt-get")
    if os.geteuid() == 0 and apt is not None:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for command in ([apt, "update", "-qq"], [apt, "install", "-y", "-qq", "mariadb-server"]):
            subprocess.run(command, env=env, check=False, capture_output=True, timeout=900)
        found = find_server_binaries()
        if found is not None:
            return found
    pytest.skip("mariadbd not found: install mariadb-server to run the MySQL source tests")


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on (just now)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@dataclass(frozen=True)
class Tls:
    """Certificates for the server and for clients (all signed by ``ca``, except ``other_ca``)."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path


def make_tls(directory: Path) -> Tls | None:
    """Create a test CA, a server certificate for 127.0.0.1 and a client certificate.

    Returns None when ``openssl`` is missing.
    """
    openssl = shutil.which("openssl")
    if openssl is None:
        return None
    directory.mkdir(parents=True, exist_ok=True)

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], check=True, capture_output=True, cwd=directory)

    newkey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    ca_extensions = [
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]
    for name in ("ca", "other-ca"):
        run("req", "-x509", *newkey, *ca_extensions, "-days", "2", "-subj", f"/CN=grstats {name}",
            "-keyout", f"{name}.key", "-out", f"{name}.pem")  # fmt: skip
    for name, usage, alt in (
        ("server", "serverAuth", "subjectAltName=IP:127.0.0.1"),
        ("client", "clientAuth", "subjectAltName=DNS:grstats"),
    ):
        extensions = directory / f"{name}.ext"
        extensions.write_text(
            f"basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
            f"extendedKeyUsage={usage}\n{alt}\nauthorityKeyIdentifier=keyid\n"
            "subjectKeyIdentifier=hash\n",
            encoding="ascii",
        )
        run("req", *newkey, "-subj", f"/CN=grstats {name}", "-keyout", f"{name}.key",
            "-out", f"{name}.csr")  # fmt: skip
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", extensions.name, "-out", f"{name}.pem")  # fmt: skip
    return Tls(
        ca=directory / "ca.pem",
        server_cert=directory / "server.pem",
        server_key=directory / "server.key",
        client_cert=directory / "client.pem",
        client_key=directory / "client.key",
        other_ca=directory / "other-ca.pem",
    )


class MariaDB:
    """A MariaDB server of its own, on 127.0.0.1, for one test session."""

    host = "127.0.0.1"

    def __init__(self, binaries: Binaries, workdir: Path, tls: Tls | None) -> None:
        self.binaries = binaries
        self.workdir = workdir
        self.datadir = workdir / "data"
        self.socket = workdir / "mariadb.sock"
        self.log = workdir / "mariadb.log"
        # Its own tmpdir: a starting server deletes every #sql* file in its tmpdir (sql_base.cc,
        # mysql_rm_tmp_tables), so two servers sharing /tmp (two test workers) could delete
        # each other's temporary tables: a bootstrap failed with "Unknown table tmp_user_sys".
        self.tmpdir = workdir / "tmp"
        self.tls = tls
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @classmethod
    @contextlib.contextmanager
    def running(cls, binaries: Binaries, workdir: Path) -> Iterator[MariaDB]:
        """Create, start and finally stop a server in ``workdir``."""
        server = cls(binaries, workdir, make_tls(workdir / "tls"))
        server.install()
        server.start()
        try:
            yield server
        finally:
            server.stop()

    def _user_option(self) -> list[str]:
        return ["--user=root"] if os.geteuid() == 0 else []

    def install(self) -> None:
        """Create the data dir with the system tables; root has no password on the socket."""
        self.tmpdir.mkdir(parents=True, exist_ok=True)
        command = [
            str(self.binaries.install_db),
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--tmpdir={self.tmpdir}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            *self._user_option(),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
        if done.returncode != 0:
            pytest.fail(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")

    def start(self) -> None:
        """Start the server and wait until root can log in (bounded; the log tail on failure)."""
        options = [
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--tmpdir={self.tmpdir}",
            f"--socket={self.socket}",
            f"--port={self.port}",
            f"--bind-address={self.host}",
            f"--pid-file={self.workdir / 'mariadb.pid'}",
            f"--log-error={self.log}",
            f"--default-time-zone={SERVER_TIME_ZONE}",
            "--skip-name-resolve",
            "--skip-log-bin",
            "--performance-schema=OFF",
            "--innodb-buffer-pool-size=16M",
            "--innodb-flush-log-at-trx-commit=0",
            "--max-connections=60",
            *self._user_option(),
        ]
        if self.tls is not None:
            options += [
                f"--ssl-ca={self.tls.ca}",
                f"--ssl-cert={self.tls.server_cert}",
                f"--ssl-key={self.tls.server_key}",
            ]
        self._process = subprocess.Popen(
            [str(self.binaries.server), *options],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self._process.poll() is not None:
                pytest.fail(f"mariadbd exited with {self._process.returncode}:\n{self.log_tail()}")
            try:
                self._probe()
                self.execute("SELECT 1")
            except (OSError, pymysql.err.MySQLError):
                if time.monotonic() > deadline:
                    self.stop()
                    pytest.fail(f"mariadbd not ready in {START_TIMEOUT_S:g} s:\n{self.log_tail()}")
                time.sleep(0.05)
            else:
                return

    def _probe(self) -> None:
        """Raise OSError unless the socket accepts connections (pymysql leaks failed sockets)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(1.0)
            probe.connect(str(self.socket))

    def stop(self) -> None:
        """Stop the server: terminate, wait, and kill if it does not stop in time."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT_S)

    def log_tail(self, lines: int = 30) -> str:
        """Return the last lines of the server's error log."""
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            return f"(no log: {exc})"
        return "\n".join(text.splitlines()[-lines:])

    @contextlib.contextmanager
    def admin(self) -> Iterator[Any]:
        """Yield a root connection through the socket (autocommit, several statements per call)."""
        conn = pymysql.connect(
            unix_socket=str(self.socket),
            user="root",
            autocommit=True,
            client_flag=CLIENT.MULTI_STATEMENTS,
            connect_timeout=5,
        )
        try:
            yield conn
        finally:
            conn.close()

    def execute(self, sql: str, args: Sequence[object] | None = None) -> list[tuple[Any, ...]]:
        """Run ``sql`` (one or more statements) as root; return the last result's rows."""
        with self.admin() as conn, conn.cursor() as cursor:
            return run_script(cursor, sql, args)


def run_script(
    cursor: Any, sql: str, args: Sequence[object] | None = None
) -> list[tuple[Any, ...]]:
    """Run ``sql`` (one or more statements) on ``cursor``; return the last result's rows."""
    cursor.execute(sql, args)
    rows = list(cursor.fetchall())
    while cursor.nextset():
        rows = list(cursor.fetchall())
    return rows
