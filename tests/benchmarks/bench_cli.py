"""The command line's start-up: ``grstats --version`` and ``grstats query members`` beside ``mariadb``.

Issue 50's targets: ``grstats --version`` at most 60 ms and ``grstats query members`` against
a local agent at most 150 ms end to end (wall time, median and max of 20 runs), beside
``mariadb -e 'SELECT 1'`` against a local server measured in the same run.

One ``grstats agent`` of a simulated 3-member steady group runs on 127.0.0.1 (started from
the same ``grstats``), and a throwaway MariaDB server (as the tests start one,
:mod:`tests.mariadb`); the client logs in as root through its socket. The commands are run
in rounds, each command once a round, so that a change of the machine's load falls on all of
them alike; one round before the measured ones writes the bytecode caches (the environment
the commands run in keeps them, as a user's shell does) and warms the page cache. Also shown:
``grstats query --help`` (no agent asked) and ``python -c pass`` with the same interpreter,
the floor under any Python command; and each command's CPU time (user and system), its own
cost whatever else the machine is doing, which its wall time on a busy machine is not.

Which ``grstats``: ``--grstats PATH``, else the one beside this interpreter (the virtual
environment's). ``--bundle PATH`` (else the directory bundle ``make dist`` wrote in dist/, if
any: the executable the Debian package installs as /usr/lib/grstats/grstats) adds the
package's ``--version`` and ``query members``, held to the same targets. ``--binary PATH``
(else the single-file executable of dist/, if any) adds the single file's, shown without a
target: it unpacks its whole bundle into a temporary directory at every start (half a
second), for hosts without dpkg, not for a shell loop.

Run it from the repository's root as ``python -m tests.benchmarks.bench_cli``
(``--json PATH`` also writes the figures). The script exits 0 even when a target is missed
(it prints FAIL).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grstats.cli.demo import free_ports
from tests.benchmarks.heading import print_heading
from tests.mariadb import MariaDB, require_server_binaries

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
RUNS = 20
#: The targets, in seconds of wall time (the median and the max must both hold).
TARGETS = {"grstats --version": 0.060, "grstats query members": 0.150}
READY_TIMEOUT_S = 60.0


def environment(home: Path) -> dict[str, str]:
    """The commands' environment: bytecode kept, no client settings but ``--node``'s."""
    drop = ("PYTHONDONTWRITEBYTECODE", "GRPC_VERBOSITY")
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in drop and not key.startswith("GRSTATS_")
    }
    env["HOME"] = str(home)  # no ~/.config/grstats/client.toml
    env.pop("XDG_CONFIG_HOME", None)
    return env


def start_agent(
    grstats: list[str], workdir: Path, env: dict[str, str]
) -> tuple[subprocess.Popen[bytes], str]:
    """Start a simulated agent on a free port; return its process and address once it answers."""
    port = free_ports(1)[0]
    address = f"127.0.0.1:{port}"
    log = (workdir / "agent.log").open("wb")
    process = subprocess.Popen(
        [
            *grstats,
            *("agent", "--source", "simulated", "--member-index", "0"),
            *("--group-start", str(int(time.time()) - 5)),
            *("--listen", address, "--peers", address),
            *("--state-dir", str(workdir / "state"), "--log-format", "json"),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    log.close()
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        done = subprocess.run(
            [*grstats, "query", "members", "--node", address],
            capture_output=True,
            env=env,
            check=False,
        )
        if done.returncode == 0 and done.stdout.count(b"ONLINE") == 3:
            return process, address
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            tail = (workdir / "agent.log").read_text(errors="replace")[-2000:]
            raise SystemExit(f"the agent did not answer with 3 members:\n{tail}")
        time.sleep(0.2)


def commands(
    grstats: list[str], bundle: Path | None, binary: Path | None, address: str, server: MariaDB
) -> dict[str, list[str]]:
    """The commands to time, by the name the table shows."""
    members = ["query", "members", "--node", address]
    mariadb = [
        *("mariadb", "--no-defaults", f"--socket={server.socket}", "--user=root"),
        *("-e", "SELECT 1"),
    ]
    timed = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "grstats --version": [*grstats, "--version"],
        "grstats query --help": [*grstats, "query", "--help"],
        "grstats query members": [*grstats, *members],
        "mariadb -e 'SELECT 1'": mariadb,
    }
    if bundle is not None:
        timed["package: grstats --version"] = [str(bundle), "--version"]
        timed["package: grstats query members"] = [str(bundle), *members]
    if binary is not None:
        timed["single file: grstats --version"] = [str(binary), "--version"]
        timed["single file: grstats query members"] = [str(binary), *members]
    return timed


def measure(
    timed: dict[str, list[str]], runs: int, env: dict[str, str]
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds of each command, ``runs`` rounds after one unmeasured round.

    The CPU time (user and system, of the command and its children) shows the command's own
    cost apart from the machine's load, which a wall time on a busy machine includes.
    """
    walls: dict[str, list[float]] = {name: [] for name in timed}
    cpus: dict[str, list[float]] = {name: [] for name in timed}
    for round_ in range(runs + 1):
        for name, command in timed.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            began = time.perf_counter()
            done = subprocess.run(command, capture_output=True, env=env, check=False)
            elapsed = time.perf_counter() - began
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if done.returncode != 0:
                raise SystemExit(f"{name} exited with {done.returncode}:\n{done.stderr[-2000:]!r}")
            if round_:
                walls[name].append(elapsed)
                cpus[name].append(
                    after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                )
    return walls, cpus


def summary(
    walls: dict[str, list[float]], cpus: dict[str, list[float]]
) -> dict[str, dict[str, float]]:
    """Median and max of each command, its median's ratio to the ``mariadb`` client's, its CPU."""
    client = statistics.median(walls["mariadb -e 'SELECT 1'"])
    result = {}
    for name, times in walls.items():
        median = statistics.median(times)
        result[name] = {
            "median_s": median,
            "max_s": max(times),
            "ratio": median / client,
            "cpu_median_s": statistics.median(cpus[name]),
        }
    return result


def print_table(figures: dict[str, dict[str, float]], runs: int) -> None:
    """Print the figures as a markdown table, with the targets."""
    print(f"| command ({runs} runs) | median | max | median / mariadb's | CPU, median | target |")
    print("|---|--:|--:|--:|--:|---|")
    for name, figure in figures.items():
        target = TARGETS.get(name.removeprefix("package: "))
        verdict = ""
        if target is not None:
            held = figure["median_s"] <= target and figure["max_s"] <= target
            verdict = f"<= {target * 1000:.0f} ms: {'ok' if held else 'FAIL'}"
        print(
            f"| {name} | {figure['median_s'] * 1000:.1f} ms | {figure['max_s'] * 1000:.1f} ms "
            f"| {figure['ratio']:.1f} | {figure['cpu_median_s'] * 1000:.1f} ms | {verdict} |"
        )


def find_built(given: Path | None, pattern: str) -> Path | None:
    """``given``, else the file of dist/ matching ``pattern`` built last (see the module docstring)."""
    if given is not None:
        return given
    built = sorted(
        DIST.glob(pattern.format(arch=platform.machine())), key=lambda p: p.stat().st_mtime
    )
    return built[-1] if built else None


def main(argv: list[str] | None = None) -> int:
    """Run the measurement, print the table and optionally write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=RUNS, help=f"runs measured (default {RUNS})")
    parser.add_argument("--grstats", type=Path, help="the grstats to time (default: this venv's)")
    parser.add_argument("--bundle", type=Path, help="the package's executable to time too")
    parser.add_argument("--binary", type=Path, help="a single-file executable to time too")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    grstats = [str(args.grstats or Path(sys.executable).with_name("grstats"))]
    bundle = find_built(args.bundle, "grstats-*-linux-{arch}.dir/grstats")
    binary = find_built(args.binary, "grstats-*-linux-{arch}")
    load_before = print_heading(
        "The command line's start-up (grstats --version, grstats query members)"
    )
    with (
        tempfile.TemporaryDirectory(prefix="grstats-bench-cli-") as scratch,
        MariaDB.running(require_server_binaries(), Path(scratch) / "db") as server,
    ):
        workdir = Path(scratch)
        env = environment(workdir)
        agent, address = start_agent(grstats, workdir, env)
        try:
            walls, cpus = measure(
                commands(grstats, bundle, binary, address, server), args.runs, env
            )
        finally:
            agent.terminate()
            agent.wait(15)
    figures = summary(walls, cpus)
    print_table(figures, args.runs)
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        document = {
            "runs": args.runs,
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average": {"start": load_before, "end": os.getloadavg()[0]},
            "bundle": None if bundle is None else str(bundle),
            "binary": None if binary is None else str(binary),
            "targets_s": TARGETS,
            "commands": figures,
            "walls_s": walls,
            "cpus_s": cpus,
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
