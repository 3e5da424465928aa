"""``grstats demo``: a 3-member simulated group, its agents as processes, shown from two agents."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from agent.cli.main import CliError

if TYPE_CHECKING:
    import argparse

    from agent.cli.types import Subparsers

MEMBERS = 3


def register(subparsers: Subparsers) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo",
        help="start a simulated 3-member group with its agents and show what they serve",
        description="Start a simulated Group Replication group of 3 members, one agent process "
        "each on 127.0.0.1, wait until they all hear each other, then show "
        "replication_group_member_stats from one agent and replication_group_members (with "
        "the freshness columns) from another. Every process started is stopped at the end, "
        "also on Ctrl-C.",
    )
    parser.add_argument("--scenario", default="steady", metavar="NAME|PATH", help="default steady")
    parser.add_argument(
        "--keep-running", action="store_true", help="leave the agents up until Ctrl-C"
    )
    parser.set_defaults(handler=run)


def free_ports(count: int) -> list[int]:
    """Return ``count`` ports that are free on 127.0.0.1 now."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _say(text: str) -> None:
    print(f"== {text}", file=sys.stderr, flush=True)


def _grstats(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603  (our own interpreter and module)
        [sys.executable, "-m", "agent", *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def run(args: argparse.Namespace) -> int:
    """Run the demo; always stop every agent started."""
    ports = free_ports(MEMBERS)
    peers = ",".join(f"127.0.0.1:{port}" for port in ports)
    start = int(time.time())
    processes: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="grstats-demo-") as workdir:
        try:
            _say(f"starting {MEMBERS} agents of a simulated '{args.scenario}' group on 127.0.0.1")
            for index, port in enumerate(ports):
                log = Path(workdir, f"agent-{index}.log").open("wb")  # noqa: SIM115  (closed with the process)
                processes.append(
                    subprocess.Popen(  # noqa: S603  (our own interpreter and module)
                        [
                            sys.executable,
                            "-m",
                            "agent",
                            "agent",
                            "--source",
                            "simulated",
                            "--scenario",
                            args.scenario,
                            "--members",
                            str(MEMBERS),
                            "--member-index",
                            str(index),
                            "--group-start",
                            str(start),
                            "--listen",
                            f"127.0.0.1:{port}",
                            "--peers",
                            peers,
                            "--state-dir",
                            str(Path(workdir, f"state-{index}")),
                            "--log-format",
                            "json",
                        ],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )
            _wait_connected(ports, processes)
            first, second = (f"127.0.0.1:{port}" for port in ports[:2])
            _say(f"replication_group_member_stats as agent {first} serves it")
            print(_show("stats", first, "vertical"), end="")
            _say(f"replication_group_members as agent {second} serves it, with freshness columns")
            print(_show("members", second, "table", "--extended"), end="")
            if args.keep_running:
                _say(f"agents running on {peers}; Ctrl-C to stop")
                with contextlib.suppress(KeyboardInterrupt):
                    while all(p.poll() is None for p in processes):
                        time.sleep(0.5)
        finally:
            _stop(processes)
    return 0


def _show(what: str, node: str, output_format: str, *extra: str) -> str:
    done = _grstats("query", what, "--node", node, "--format", output_format, *extra)
    if done.returncode != 0:
        raise CliError(done.stderr.strip() or f"query {what} failed")
    return done.stdout


def _wait_connected(
    ports: list[int], processes: list[subprocess.Popen[bytes]], timeout_s: float = 30
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(process.poll() is not None for process in processes):
            raise CliError("an agent exited early: see its log above")
        ready = 0
        for port in ports:
            done = _grstats(
                "query",
                "members",
                "--node",
                f"127.0.0.1:{port}",
                "--format",
                "json",
                "--extended",
                "--timeout",
                "1",
            )
            if done.returncode == 0:
                rows = json.loads(done.stdout)
                ready += len(rows) == len(ports) and all(row["CONNECTED"] == "YES" for row in rows)
        if ready == len(ports):
            _say("every agent lists every member, all connected")
            return
        time.sleep(0.5)
    raise CliError(f"the agents did not all connect within {timeout_s:g} s")


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if processes:
        _say(f"stopped {len(processes)} agents")
