"""deploy/examples/haproxy.cfg against a real HAProxy checking three agents' /member/ready.

HAProxy's own health checks (``option httpchk``) run as the example writes them; only the
server addresses, the check ports (each agent's metrics listener on 127.0.0.1) and the check
interval are the test's. The verdict each agent serves comes from the in-memory group of
tests.agent.test_runtime, driven on the test clock.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import shutil
import socket
import subprocess
from typing import TYPE_CHECKING

import pytest

from tests.agent.test_runtime import _start_without_loop, start_group, stop_all
from tests.deploy.files import DEPLOY, free_port
from tests.waiting import wait_until_async

if TYPE_CHECKING:
    from pathlib import Path

    from tests.agent.test_runtime import Group

EXAMPLE = DEPLOY / "examples" / "haproxy.cfg"
_SERVER = re.compile(r"^(\s+)server (db\d) \S+ check port 9474$", re.MULTILINE)


def haproxy() -> str:
    """The haproxy binary (Debian's haproxy package; .ci/run installs it)."""
    found = shutil.which("haproxy")
    if found is None:
        pytest.fail("haproxy is not installed (apt-get install haproxy)")
    return found


def test_the_example_is_valid() -> None:
    """``haproxy -c`` accepts the example as shipped."""
    done = subprocess.run(
        [haproxy(), "-c", "-f", str(EXAMPLE)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def server_states(sock: Path) -> dict[tuple[str, str], str]:
    """(backend, server) -> UP or DOWN, from HAProxy's stats socket (``show stat``)."""
    with socket.socket(socket.AF_UNIX) as client:
        client.connect(str(sock))
        client.sendall(b"show stat\n")
        text = b"".join(iter(lambda: client.recv(65536), b"")).decode()
    lines = [line.split(",") for line in text.splitlines() if line and not line.startswith("#")]
    return {(f[0], f[1]): f[17] for f in lines if f[1] not in ("FRONTEND", "BACKEND")}


async def started_group() -> Group:
    """Three agents, each serving its probes on a free port of 127.0.0.1."""
    group = await start_group(3, memory=True, started=0)
    for agent in group.agents:
        agent.config = dataclasses.replace(agent.config, metrics_listen="127.0.0.1:0")
        await _start_without_loop(agent)
    await group.rounds(3)
    return group


async def test_haproxy_routes_writes_to_the_primary_and_reads_to_ready_members(
    tmp_path: Path,
) -> None:
    """The writer backend holds the primary alone, the readers every ready member."""
    group = await started_group()
    process = None
    try:
        ports = {
            f"db{i + 1}": str(agent.metrics_address).rpartition(":")[2]
            for i, agent in enumerate(group.agents)
        }
        config = _SERVER.sub(
            lambda m: f"{m[1]}server {m[2]} 127.0.0.1:9 check port {ports[m[2]]}",
            EXAMPLE.read_text(),
        )
        sock = tmp_path / "stats.sock"
        config = config.replace("maxconn 4096", f"maxconn 64\n    stats socket {sock}")
        config = config.replace("inter 2s fall 2 rise 3", "inter 200ms fall 1 rise 1")
        config = config.replace("inter 2s fall 2 rise 2", "inter 200ms fall 1 rise 1")
        config = re.sub(r"bind :330\d", lambda _: f"bind 127.0.0.1:{free_port()}", config)
        path = tmp_path / "haproxy.cfg"
        path.write_text(config)
        process = subprocess.Popen(  # noqa: ASYNC220  (the real HAProxy, stopped below)
            [haproxy(), "-db", "-f", str(path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        answers = [agent.probe("/member/ready") for agent in group.agents]
        writers = [f"db{i + 1}" for i, a in enumerate(answers) if a and a.body["role"] == "PRIMARY"]
        assert len(writers) == 1
        primary = writers[0]
        expected = {
            **{("gr_ready_members", f"db{i}"): "UP" for i in (1, 2, 3)},
            **{("gr_writer", f"db{i}"): "UP" if f"db{i}" == primary else "DOWN" for i in (1, 2, 3)},
        }

        seen: list[dict[tuple[str, str], str]] = [{}]

        async def settled() -> bool:
            if not sock.exists():
                return False
            seen[0] = await asyncio.to_thread(server_states, sock)
            return seen[0] == expected

        await wait_until_async(
            settled, 15, "HAProxy's checks to see the group's verdict", detail=lambda: str(seen)
        )
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=10)
        await stop_all(group)
