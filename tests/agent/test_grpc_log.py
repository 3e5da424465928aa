"""gRPC C-core's own stderr lines: off by default, on with GRPC_VERBOSITY; grstats says it itself.

Two agent processes whose certificates come from two different CAs dial each other and fail
the TLS handshake, as two members given the wrong CA would; ``grstats query`` given the wrong
CA fails the same way.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest

from grstats.agent.sim.group import member_uuid
from grstats.cli.demo import free_ports
from grstats.core.log import GRPC_VERBOSITY, quiet_grpc_core
from tests.certs import make_certs

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

PYTHON = [sys.executable, "-m", "grstats"]
UUIDS = [member_uuid("steady", 1, index) for index in range(2)]
#: A line of gRPC's C core: severity, date, time, thread, file:line (absl's log prefix).
CORE_LINE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w.]+:\d+\] ", re.MULTILINE)


def environment(**extra: str) -> dict[str, str]:
    """The test's environment without GRPC_VERBOSITY, plus ``extra``."""
    return {**{k: v for k, v in os.environ.items() if k != GRPC_VERBOSITY}, **extra}


class TestQuietGrpcCore:
    def test_sets_none_when_unset(self) -> None:
        """Unset (or empty), and grpc not imported yet: GRPC_VERBOSITY becomes NONE."""
        for environ in ({}, {GRPC_VERBOSITY: ""}):
            assert quiet_grpc_core(environ, modules={})
            assert environ == {GRPC_VERBOSITY: "NONE"}

    def test_keeps_the_users_level(self) -> None:
        """A level the user set is left as it is."""
        environ = {GRPC_VERBOSITY: "INFO"}
        assert not quiet_grpc_core(environ, modules={})
        assert environ == {GRPC_VERBOSITY: "INFO"}

    def test_too_late_once_grpc_is_imported(self) -> None:
        """After grpc is imported the variable would change nothing, so it is not set."""
        environ: dict[str, str] = {}
        assert not quiet_grpc_core(environ, modules={"grpc": object()})
        assert environ == {}


@pytest.fixture(name="cas", scope="module")
def _cas(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two certificate directories for the same members, signed by two different CAs."""
    members = [f"m{index}={uuid}@127.0.0.1" for index, uuid in enumerate(UUIDS)]
    return (
        make_certs(tmp_path_factory.mktemp("ca-a"), *members),
        make_certs(tmp_path_factory.mktemp("ca-b"), *members),
    )


def start(
    index: int, certs: Path, ports: list[int], log: Path, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """Agent ``index`` with ``certs``'s certificate and CA, the other agent its peer."""
    with log.open("wb") as out:  # the child keeps its own copy
        return subprocess.Popen(
            [*PYTHON, "agent", "--source", "simulated", "--members", "2",
             "--member-index", str(index), "--group-start", str(int(time.time())),
             "--listen", f"127.0.0.1:{ports[index]}",
             "--peers", ",".join(f"127.0.0.1:{port}" for port in ports),
             "--state-dir", str(log.parent / f"state-{index}"), "--log-format", "json",
             "--tls-cert", str(certs / f"m{index}.pem"), "--tls-key", str(certs / f"m{index}.key"),
             "--tls-ca", str(certs / "ca.pem"), "--tls-require-client-cert"],
            stdout=subprocess.DEVNULL,
            stderr=out,
            env=env,
        )  # fmt: skip


def handshake_failures(log: Path) -> list[dict[str, object]]:
    """The agent's own peer_exchange_failed events that name a failed TLS handshake."""
    events = []
    for line in log.read_text(encoding="utf-8").splitlines():
        if line.startswith("{"):
            event = json.loads(line)
            if event["event"] == "peer_exchange_failed" and "handshake" in str(event["error"]):
                events.append(event)
    return events


def test_agents_with_the_wrong_ca(cas: tuple[Path, Path], tmp_path: Path) -> None:
    """By default only JSON lines, the failure among them; with GRPC_VERBOSITY=INFO, gRPC's too."""
    ports = free_ports(2)
    logs = [tmp_path / "quiet.log", tmp_path / "verbose.log"]
    agents = [
        start(0, cas[0], ports, logs[0], environment()),
        start(1, cas[1], ports, logs[1], environment(GRPC_VERBOSITY="INFO")),
    ]
    try:
        deadline = time.monotonic() + 30
        while not (
            handshake_failures(logs[0])
            and handshake_failures(logs[1])  # each side's own failed dial, logged
            and CORE_LINE.search(logs[1].read_text())
        ):
            assert all(agent.poll() is None for agent in agents), [p.read_text() for p in logs]
            assert time.monotonic() < deadline, [p.read_text() for p in logs]
            time.sleep(0.2)
        time.sleep(2)  # more dials, more chances for a stray line
    finally:
        for agent in agents:
            agent.send_signal(signal.SIGTERM)
        assert [agent.wait(timeout=30) for agent in agents] == [0, 0]
    quiet, verbose = (log.read_text(encoding="utf-8") for log in logs)
    assert CORE_LINE.search(quiet) is None
    assert all(line.startswith("{") for line in quiet.splitlines()), quiet
    (failure, *_) = handshake_failures(logs[0])
    assert failure["peer"] == f"127.0.0.1:{ports[1]}"
    assert "CERTIFICATE_VERIFY_FAILED" in str(failure["error"])
    assert "ssl_transport_security" in verbose
    assert handshake_failures(logs[1])


class TestQueryWithTheWrongCa:
    @pytest.fixture(name="port")
    def _port(self, cas: tuple[Path, Path], tmp_path: Path) -> Iterator[int]:
        """The port of agent 0, over mutual TLS with the first CA (its peer never answers)."""
        ports = free_ports(2)
        process = start(0, cas[0], ports, tmp_path / "agent.log", environment())
        yield ports[0]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0

    def query(
        self, port: int, *flags: str, env: dict[str, str]
    ) -> subprocess.CompletedProcess[str]:
        """``grstats query members`` of the agent on ``port``, until it is listening."""
        deadline = time.monotonic() + 30
        while True:
            done = subprocess.run(
                [*PYTHON, "query", "members", "--node", f"127.0.0.1:{port}", "--timeout", "3", *flags],
                capture_output=True, text=True, timeout=60, check=False, env=env,
            )  # fmt: skip
            if "is a grstats agent listening there?" not in done.stderr:
                return done
            assert time.monotonic() < deadline, done.stderr
            time.sleep(0.2)

    def test_the_one_error_line_says_the_handshake_failed(
        self, port: int, cas: tuple[Path, Path]
    ) -> None:
        """The wrong CA: one line naming the handshake and OpenSSL's reason; gRPC's only on request."""
        wrong = ("--tls-ca", str(cas[1] / "ca.pem"))
        done = self.query(port, *wrong, env=environment())
        assert done.returncode == 1
        assert done.stderr == (
            f"grstats: error: 127.0.0.1:{port}: unreachable: the TLS handshake failed "
            "(CERTIFICATE_VERIFY_FAILED: unable to get local issuer certificate): is the CA "
            "(--tls-ca) the one that signed the agent's certificate, and does the agent serve "
            "over TLS?\n"
        )
        verbose = self.query(port, *wrong, env=environment(GRPC_VERBOSITY="INFO"))
        assert verbose.returncode == 1
        assert CORE_LINE.search(verbose.stderr) is not None
        assert verbose.stderr.endswith(done.stderr)

    def test_a_missing_client_certificate(self, port: int, cas: tuple[Path, Path]) -> None:
        """The agent requires a client certificate and gets none: the line says so."""
        done = self.query(port, "--tls-ca", str(cas[0] / "ca.pem"), env=environment())
        assert done.returncode == 1
        assert done.stderr == (
            f"grstats: error: 127.0.0.1:{port}: unreachable: the agent closed the connection: "
            "does it require a client certificate (--tls-cert, --tls-key) signed by its CA?\n"
        )
