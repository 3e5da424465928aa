"""The single-file executable against a virtual environment: size, start-up, and agents' RSS and CPU.

Run from the repository's root: ``python -m tests.benchmarks.bench_release`` (about 2 minutes;
``--json PATH`` also writes the raw figures). Linux only (/proc).

- **Size**: the executable's bytes, against ``du -sb`` of the virtual environment (pip and
  the venv's own setuptools included, as docs/benchmarks.md's install size counts it); and
  what the executable unpacks into ``$TMPDIR`` while it runs (it removes it at exit).
- **Start-up**: wall time of ``grstats --version``, each way, best and median of several runs
  (the executable unpacks itself at each start).
- **Agents**: a simulated 3-member ``steady`` group (500 tps, 1 s period) of agent processes on
  127.0.0.1 started from the executable, then another from the virtual environment's
  ``grstats``. Once every agent lists every member as connected and after a warm-up, CPU time
  (utime + stime of /proc/PID/stat, every thread) over the window as a share of one core, and
  the largest VmRSS and Pss sampled. An agent of the executable is two processes: the
  bootloader, which unpacked the executable and waits for its child, and the Python process
  that runs the agent; both are shown, and their sum.

Which executable: ``--binary PATH``, else ``$GRSTATS_RELEASE_BINARY``, else the one ``make dist``
wrote in dist/. Which virtual environment: ``--venv DIR`` (an existing one), or ``--wheel PATH``
(a new one, with that wheel and no extras, as ``pip install grstats``), else the wheel in dist/,
else the virtual environment running this script (with every extra: a larger size).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from grstats.cli.demo import free_ports
from grstats.core.query_wire import table_from_wire
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
MEMBERS = 3
SCENARIO = "steady"  # single-primary, 500 tps
WARMUP_S = 10.0
WINDOW_S = 30.0
STARTS = 7  # runs of grstats --version each way
CONNECT_TIMEOUT_S = 60.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
MB = 1000 * 1000
MIB = 1024 * 1024


@dataclass
class Agent:
    """One agent: the process started, and for the executable its Python child."""

    process: subprocess.Popen[bytes]
    address: str
    log: Path
    child: int | None = None
    rss_kib: dict[str, int] = field(default_factory=dict)  # largest VmRSS: parent, child
    pss_kib: dict[str, int] = field(default_factory=dict)  # largest Pss: parent, child


def children(pid: int) -> list[int]:
    """The pids whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="ascii")
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def cpu_ticks(pid: int) -> int:
    """utime + stime of the process (every thread), in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def status_kib(pid: int, path: str, key: str) -> int:
    """The ``key:`` figure, in KiB, of /proc/PID/``path``."""
    for line in Path(f"/proc/{pid}/{path}").read_text(encoding="ascii").splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    return 0


def du_bytes(path: Path) -> int:
    """The bytes of every file under ``path`` (``du -sb``)."""
    du = shutil.which("du")
    if du is None:
        raise SystemExit("du is not installed")
    done = subprocess.run([du, "-sb", str(path)], capture_output=True, text=True, check=True)
    return int(done.stdout.split()[0])


def processes(agent: Agent) -> dict[str, int]:
    """The agent's processes by role: ``python`` alone, or ``bootloader`` and ``python``."""
    if agent.child is None:
        return {"python": agent.process.pid}
    return {"bootloader": agent.process.pid, "python": agent.child}


def start_group(command: list[str], workdir: Path, env: dict[str, str]) -> list[Agent]:
    """Start the agents of a simulated 3-member group, each ``command agent ...``."""
    ports = free_ports(MEMBERS)
    peers = ",".join(f"127.0.0.1:{port}" for port in ports)
    start = int(time.time())
    agents = []
    for index, port in enumerate(ports):
        log = workdir / f"agent-{index}.log"
        arguments = [
            *command,
            *("agent", "--source", "simulated", "--scenario", SCENARIO),
            *("--members", str(MEMBERS), "--member-index", str(index)),
            *("--group-start", str(start), "--listen", f"127.0.0.1:{port}", "--peers", peers),
            *("--state-dir", str(workdir / f"state-{index}"), "--log-format", "json"),
        ]
        with log.open("wb") as out:
            process = subprocess.Popen(
                arguments, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=workdir
            )
        agents.append(Agent(process, f"127.0.0.1:{port}", log))
    return agents


def stop_group(agents: list[Agent]) -> list[int | None]:
    """SIGTERM every agent, wait (SIGKILL after 10 s); their exit statuses."""
    for agent in agents:
        if agent.process.poll() is None:
            agent.process.send_signal(signal.SIGTERM)
    for agent in agents:
        try:
            agent.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            agent.process.kill()
            agent.process.wait()
    return [agent.process.returncode for agent in agents]


def check_running(agents: list[Agent]) -> None:
    """Raise if an agent exited."""
    for agent in agents:
        if agent.process.poll() is not None:
            tail = agent.log.read_text(errors="replace").splitlines()[-5:]
            raise RuntimeError(f"agent {agent.address} exited:\n" + "\n".join(tail))


def connected(address: str) -> bool:
    """Whether the agent at ``address`` lists every member as connected."""
    request = pb.QueryRequest(tables=["replication_group_members"], extended=True)
    with grpc.insecure_channel(address) as channel:
        try:
            response = pb_grpc.QueryStub(channel).Read(request, timeout=1)
        except grpc.RpcError:
            return False
    names, rows = table_from_wire(response.tables[0])
    at = names.index("CONNECTED")
    return len(rows) == MEMBERS and all(row[at] == "YES" for row in rows)


def wait_connected(agents: list[Agent]) -> float:
    """Wait until every agent lists every member as connected; the seconds it took."""
    began = time.monotonic()
    while time.monotonic() - began < CONNECT_TIMEOUT_S:
        check_running(agents)
        if all(connected(agent.address) for agent in agents):
            return time.monotonic() - began
        time.sleep(0.5)
    raise RuntimeError(f"the agents did not all connect within {CONNECT_TIMEOUT_S:g} s")


def sample_memory(agents: list[Agent]) -> None:
    """Keep the largest VmRSS and Pss of each agent's processes."""
    for agent in agents:
        for role, pid in processes(agent).items():
            rss = status_kib(pid, "status", "VmRSS")
            pss = status_kib(pid, "smaps_rollup", "Pss")
            agent.rss_kib[role] = max(agent.rss_kib.get(role, 0), rss)
            agent.pss_kib[role] = max(agent.pss_kib.get(role, 0), pss)


def measure_group(
    name: str, command: list[str], workdir: Path, args: argparse.Namespace, *, frozen: bool
) -> dict[str, Any]:
    """Start a group from ``command``, measure its agents over the window, stop it."""
    workdir.mkdir()
    unpacked = workdir / "tmp"
    unpacked.mkdir()
    env = {**os.environ, "TMPDIR": str(unpacked)}
    env.pop("PYTHONPATH", None)
    print(f"{name}: starting {MEMBERS} agents", file=sys.stderr, flush=True)
    agents = start_group(command, workdir, env)
    try:
        connect_s = wait_connected(agents)
        if frozen:
            for agent in agents:
                (agent.child,) = children(agent.process.pid)
        print(
            f"{name}: connected in {connect_s:.1f} s; warm-up {args.warmup:g} s, "
            f"window {args.seconds:g} s",
            file=sys.stderr,
            flush=True,
        )
        time.sleep(args.warmup)
        check_running(agents)
        sample_memory(agents)
        pids = [processes(agent) for agent in agents]
        before = [{role: cpu_ticks(pid) for role, pid in roles.items()} for roles in pids]
        began = time.monotonic()
        while (left := began + args.seconds - time.monotonic()) > 0:
            time.sleep(min(5.0, left))
            sample_memory(agents)
        elapsed = time.monotonic() - began
        after = [{role: cpu_ticks(pid) for role, pid in roles.items()} for roles in pids]
        check_running(agents)
        unpacked_bytes = du_bytes(unpacked) // MEMBERS if frozen else 0
    finally:
        codes = stop_group(agents)
    cpu = [
        {role: 100 * (end[role] - start[role]) / CLOCK_TICKS / elapsed for role in end}
        for start, end in zip(before, after, strict=True)
    ]
    return {
        "connect_s": connect_s,
        "window_s": elapsed,
        "exit_codes": codes,
        "unpacked_bytes_per_agent": unpacked_bytes,
        "agents": [
            {"cpu_percent": c, "rss_kib": a.rss_kib, "pss_kib": a.pss_kib}
            for c, a in zip(cpu, agents, strict=True)
        ],
    }


def startup(command: list[str], runs: int) -> dict[str, float]:
    """Wall seconds of ``command --version``: best and median of ``runs``."""
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run([*command, "--version"], capture_output=True, check=True)
        times.append(time.perf_counter() - began)
    return {"best_s": min(times), "median_s": statistics.median(times)}


def find_binary(given: Path | None) -> Path:
    """The executable to measure (see the module docstring)."""
    if given is not None:
        return given
    if os.environ.get("GRSTATS_RELEASE_BINARY"):
        return Path(os.environ["GRSTATS_RELEASE_BINARY"])
    built = sorted(DIST.glob(f"grstats-*-linux-{platform.machine()}"))
    if not built:
        raise SystemExit("no executable: run make dist, or pass --binary PATH")
    return built[-1]


def make_venv(wheel: Path, into: Path) -> Path:
    """A new virtual environment holding ``wheel`` without extras, as ``pip install grstats``."""
    print(f"installing {wheel.name} into a new virtual environment", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(into)], check=True)
    subprocess.run(
        [
            str(into / "bin" / "pip"),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(wheel),
        ],
        check=True,
    )
    return into


def find_venv(args: argparse.Namespace, scratch: Path) -> tuple[Path, str]:
    """The virtual environment to measure, and how it was chosen."""
    if args.venv is not None:
        return args.venv.absolute(), "given"
    wheels = [args.wheel] if args.wheel is not None else sorted(DIST.glob("grstats-*.whl"))
    if wheels:
        return make_venv(wheels[-1], scratch / "venv"), f"new, {wheels[-1].name}, no extras"
    return Path(sys.prefix), "this script's (every extra installed)"


def summary(agents: list[dict[str, Any]], key: str, role: str) -> float:
    """The mean over the agents of ``key`` for ``role`` (``sum``: every process)."""
    values = [
        sum(agent[key].values()) if role == "sum" else agent[key].get(role, 0) for agent in agents
    ]
    return float(statistics.mean(values))


def print_table(result: dict[str, Any]) -> None:
    """Print the figures as markdown tables."""
    size, venv = result["binary_bytes"], result["venv_bytes"]
    print("| install | size | grstats --version, best | median |")
    print("|---|--:|--:|--:|")
    for name, bytes_, start in (
        ("single-file executable", size, result["startup"]["binary"]),
        (f"virtual environment ({result['venv_how']})", venv, result["startup"]["venv"]),
    ):
        print(
            f"| {name} | {bytes_ / MB:.1f} MB | {start['best_s']:.2f} s | "
            f"{start['median_s']:.2f} s |"
        )
    unpacked = result["groups"]["binary"]["unpacked_bytes_per_agent"]
    print(f"\nthe executable unpacks {unpacked / MB:.1f} MB into $TMPDIR per running process\n")
    print("| agent (3-member steady group, 1 s period), mean of 3 | CPU | RSS | Pss |")
    print("|---|--:|--:|--:|")
    rows = [
        ("executable: bootloader process", "binary", "bootloader"),
        ("executable: Python process", "binary", "python"),
        ("executable: both", "binary", "sum"),
        ("virtual environment", "venv", "sum"),
    ]
    for name, group, role in rows:
        agents = result["groups"][group]["agents"]
        print(
            f"| {name} | {summary(agents, 'cpu_percent', role):.2f}% | "
            f"{summary(agents, 'rss_kib', role) * 1024 / MIB:.1f} MiB | "
            f"{summary(agents, 'pss_kib', role) * 1024 / MIB:.1f} MiB |"
        )
    for group in ("binary", "venv"):
        figures = result["groups"][group]
        print(
            f"\n{group}: connected in {figures['connect_s']:.1f} s, window "
            f"{figures['window_s']:.1f} s, exit statuses {figures['exit_codes']}; per agent CPU "
            + ", ".join(f"{sum(agent['cpu_percent'].values()):.2f}%" for agent in figures["agents"])
        )


def main(argv: list[str] | None = None) -> int:
    """Measure both ways, print the tables, write --json if asked."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", type=Path, metavar="PATH", help="the executable")
    parser.add_argument("--venv", type=Path, metavar="DIR", help="an existing venv")
    parser.add_argument("--wheel", type=Path, metavar="PATH", help="a wheel for a new venv")
    parser.add_argument("--seconds", type=float, default=WINDOW_S, help="CPU window")
    parser.add_argument("--warmup", type=float, default=WARMUP_S, help="before the window")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write raw figures here")
    args = parser.parse_args(argv)
    binary = find_binary(args.binary).resolve()
    load_at_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="grstats-bench-release-") as scratch_dir:
        scratch = Path(scratch_dir)
        venv, venv_how = find_venv(args, scratch)
        script = venv / "bin" / "grstats"
        if not script.exists():
            raise SystemExit(f"{script} does not exist: is {venv} a venv with grstats?")
        result: dict[str, Any] = {
            "binary": binary.name,
            "binary_bytes": binary.stat().st_size,
            "venv_how": venv_how,
            "venv_bytes": du_bytes(venv),
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "startup": {
                "binary": startup([str(binary)], STARTS),
                "venv": startup([str(script)], STARTS),
            },
            "groups": {
                "binary": measure_group(
                    "executable", [str(binary)], scratch / "b", args, frozen=True
                ),
                "venv": measure_group("venv", [str(script)], scratch / "v", args, frozen=False),
            },
        }
    result["load_average"] = {"start": load_at_start, "end": os.getloadavg()[0]}
    print("# The single-file executable and a virtual environment")
    print(
        f"{result['binary']}, Python {result['python']}, {result['machine']}, "
        f"{result['cpus']} CPUs, load average {load_at_start:.2f} at start and "
        f"{result['load_average']['end']:.2f} at the end\n"
    )
    print_table(result)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
