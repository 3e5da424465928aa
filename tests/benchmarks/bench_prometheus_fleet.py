"""Prometheus at the fleet's size: head series and memory scraping 10 groups of 9 agents (issue 46).

``--groups`` simulated groups of ``--members`` agents (10 of 9 by default: 90 agents) run in
``--processes`` processes (5 by default, the groups spread over them), each agent an
:class:`~grstats.agent.runtime.Agent` on its process's loop, over real gRPC on 127.0.0.1,
serving ``/metrics`` on a port of its own. Each group is a simulated single-primary group of a
name of its own (so a UUID of its own) writing ``--rate`` transactions a second (20 by default:
the counters move, and the 90 simulators stay cheap on a small machine), read every
``--period`` seconds. Once every agent hears all its peers, a real ``prometheus`` (Debian's
package) scrapes all 90 in one job at ``--scrape-interval`` (15 s), evaluates the rules as
shipped (deploy/prometheus/grstats.rules.yml) at the same interval, and runs ``--minutes``;
its own ``/metrics`` is read at every interval: ``prometheus_tsdb_head_series`` and
``process_resident_memory_bytes`` (and the Go heap in use), and the samples of one round of
scrapes (``sum(scrape_samples_scraped)``).

One pass per ``metrics.scope``: ``all`` (every agent exports every member's series and the
group's: the behaviour before issue 46) and ``own`` (each series from one agent), each with a
fresh Prometheus and fresh agents. The figures are printed as a markdown table; nothing is
asserted.

Run it from the repository's root, not in the suite (about 2 x (1 + ``--minutes``) minutes):
``.venv/bin/python -m tests.benchmarks.bench_prometheus_fleet [--minutes 3] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from grstats.agent.config import load_config
from grstats.agent.metrics_scope import ALL, OWN, agents_heard
from grstats.agent.runtime import Agent
from grstats.cli.demo import free_ports
from grstats.core.log import configure_logging

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "grstats.rules.yml"
SERVE = "--serve"  # run as one process of agents (see main)
#: The simulated groups' shape: single-primary, --rate transactions a second.
SCENARIO = """\
name = "fleet"
description = "Single-primary group of the fleet benchmark."
mode = "single-primary"
members = {members}

[workload]
rate_tps = {rate}
"""
#: What is read from Prometheus' own /metrics at every interval.
FIGURES = (
    "prometheus_tsdb_head_series",
    "process_resident_memory_bytes",
    "go_memstats_heap_inuse_bytes",
)


# -- the agent processes --------------------------------------------------------------------


async def serve(groups: list[int], options: dict[str, Any], workdir: Path) -> None:
    """Run the agents of ``groups``; print their /metrics addresses once all hear each other.

    The processes start one after the other, so that no two pick the same free ports at once.
    Runs until the standard input ends, then stops them.
    """
    members, scope = options["members"], options["scope"]
    scenario = workdir / "fleet.toml"
    start = time.time() - 5
    agents: list[Agent] = []
    for group in groups:
        ports = free_ports(2 * members)  # gossip, then /metrics; bound at once below
        metrics = ports[members:]
        peers = ",".join(f"127.0.0.1:{port}" for port in ports[:members])
        started = len(agents)
        for index, port in enumerate(ports[:members]):
            config = load_config(
                None,
                {
                    "source": "simulated",
                    "listen": f"127.0.0.1:{port}",
                    "peers": peers,
                    "period_s": options["period"],
                    "state_dir": str(workdir / f"state-{group}-{index}"),
                    "metrics_listen": f"127.0.0.1:{metrics[index]}",
                    "metrics.scope": scope,
                    "simulated.scenario": str(scenario),
                    "simulated.members": members,
                    "simulated.member_index": index,
                    "simulated.group_start_s": start,
                    "simulated.group_name": f"fleet-{group}",
                },
            )
            assert config.simulated is not None
            agents.append(Agent(config, config.simulated.build()))
        for agent in agents[started:]:
            await agent.start()
    try:
        deadline = time.monotonic() + 20 * options["period"]
        while not all(hears_all(agent, members, options["period"]) for agent in agents):
            assert time.monotonic() < deadline, "the agents do not all hear each other"
            await asyncio.sleep(0.5)
        print(json.dumps([agent.metrics_address for agent in agents]), flush=True)
        await asyncio.to_thread(sys.stdin.read)
    finally:
        for agent in agents:
            await agent.stop(grace_s=0)


def hears_all(agent: Agent, members: int, period_s: float) -> bool:
    """Whether ``agent`` read its member and hears every agent of its group."""
    silence_us = round(10 * period_s * 1_000_000)
    heard = agents_heard(agent.member.state, time.time_ns() // 1000, silence_us)
    return bool(agent.member_id) and len(heard) == members


def start_agents(
    args: argparse.Namespace, scope: str, workdir: Path
) -> tuple[list[Any], list[str]]:
    """Start ``--processes`` agent processes of ``scope``; their processes and /metrics addresses."""
    (workdir / "fleet.toml").write_text(
        SCENARIO.format(members=args.members, rate=args.rate), encoding="utf-8"
    )
    options = {"members": args.members, "scope": scope, "period": args.period}
    processes: list[Any] = []
    addresses: list[str] = []
    for part in range(args.processes):  # one at a time: see serve()
        groups = list(range(part, args.groups, args.processes))
        command = [
            *(sys.executable, "-m", "tests.benchmarks.bench_prometheus_fleet", SERVE),
            *(",".join(map(str, groups)), json.dumps(options), str(workdir)),
        ]
        with (workdir / f"agents-{part}.log").open("wb") as log:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=ROOT,
                env={**os.environ, "GRPC_VERBOSITY": "ERROR"},
            )
        processes.append(process)
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            stop_agents(processes)
            logs = "".join(p.read_text()[-2000:] for p in workdir.glob("agents-*.log"))
            raise AssertionError(f"an agent process ended:\n{logs}")
        addresses.extend(json.loads(line))
    return processes, addresses


def stop_agents(processes: list[Any]) -> None:
    """End the agent processes' standard input (they stop their agents), then wait."""
    for process in processes:
        if process.stdin is not None:
            process.stdin.close()
    for process in processes:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- Prometheus ---------------------------------------------------------------------------


def get(url: str) -> bytes:
    """The body of ``url`` (http://127.0.0.1 only)."""
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 (http://127.0.0.1)
        body: bytes = response.read()
    return body


def query(web: str, expr: str) -> float:
    """The value of a one-element instant vector ``expr``; NaN when it is empty."""
    answer = json.loads(get(f"http://{web}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"))
    result = answer["data"]["result"]
    return float(result[0]["value"][1]) if result else float("nan")


def own_figures(web: str) -> dict[str, float]:
    """FIGURES as Prometheus' own /metrics gives them now."""
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(get(f"http://{web}/metrics").decode()):
        for sample in family.samples:
            if sample.name in FIGURES:
                found[sample.name] = sample.value
    return found


def run_pass(prometheus: str, args: argparse.Namespace, scope: str) -> dict[str, Any]:
    """One pass of ``scope``: agents, a fresh Prometheus scraping them, its figures over time."""
    with tempfile.TemporaryDirectory(prefix=f"grstats-bench-prometheus-{scope}-") as name:
        workdir = Path(name)
        began = time.monotonic()
        processes, targets = start_agents(args, scope, workdir)
        connected_s = time.monotonic() - began
        (web_port,) = free_ports(1)
        web = f"127.0.0.1:{web_port}"
        interval = f"{args.scrape_interval}s"
        config = {
            "global": {
                "scrape_interval": interval,
                "scrape_timeout": f"{min(10, args.scrape_interval)}s",
                "evaluation_interval": interval,
            },
            "rule_files": [str(RULES)],
            "scrape_configs": [{"job_name": "grstats", "static_configs": [{"targets": targets}]}],
        }
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
        log = (workdir / "prometheus.log").open("wb")
        server = subprocess.Popen(
            [
                prometheus,
                *("--config.file", "prometheus.yml", "--storage.tsdb.path", "data"),
                *("--web.listen-address", web, "--log.level", "warn"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=workdir,
        )
        samples: list[dict[str, float]] = []
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    get(f"http://{web}/-/ready")
                    break
                except OSError:
                    assert time.monotonic() < deadline, (workdir / "prometheus.log").read_text()
                    time.sleep(0.5)
            started = time.monotonic()
            while (elapsed := time.monotonic() - started) < args.minutes * 60:
                time.sleep(args.scrape_interval)
                figures = own_figures(web)
                figures["elapsed_s"] = time.monotonic() - started
                figures["targets_up"] = query(web, 'sum(up{job="grstats"})')
                figures["samples_scraped"] = query(
                    web, 'sum(scrape_samples_scraped{job="grstats"})'
                )
                samples.append(figures)
                print(
                    f"  {scope}: {elapsed:5.0f} s, {figures['targets_up']:.0f} targets up, "
                    f"{figures['prometheus_tsdb_head_series']:,.0f} head series, "
                    f"RSS {figures['process_resident_memory_bytes'] / 2**20:.1f} MiB",
                    flush=True,
                )
            series_per_member = query(
                web,
                "max(count by (group_name, member_id) "
                '({__name__=~"grstats_.+", member_id!="", job="grstats"}))',
            )
            agent_series = query(web, 'count({job="grstats"})')
        finally:
            server.terminate()
            server.wait(timeout=30)
            stop_agents(processes)
    return {
        "scope": scope,
        "connected_s": connected_s,
        "samples": samples,
        "series_per_member": series_per_member,
        "series_now": agent_series,
    }


def row(found: dict[str, Any]) -> str:
    """The markdown row of one pass: the last sample's figures, and the largest RSS."""
    last = found["samples"][-1]
    rss = max(sample["process_resident_memory_bytes"] for sample in found["samples"])
    return (
        f"| `{found['scope']}` | {last['targets_up']:.0f} | {last['samples_scraped']:,.0f} | "
        f"{found['series_now']:,.0f} | {last['prometheus_tsdb_head_series']:,.0f} | "
        f"{last['process_resident_memory_bytes'] / 2**20:.1f} MiB | {rss / 2**20:.1f} MiB | "
        f"{last['go_memstats_heap_inuse_bytes'] / 2**20:.1f} MiB |"
    )


def main(argv: list[str] | None = None) -> int:
    """Run a pass per scope and print the figures; exit 0 whatever they are."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == SERVE:
        groups, options, workdir = argv[1:]
        configure_logging("json", "warning", stream=sys.stderr)  # stdout: the addresses
        asyncio.run(serve([int(g) for g in groups.split(",")], json.loads(options), Path(workdir)))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=10, help="simulated groups (default 10)")
    parser.add_argument("--members", type=int, default=9, help="agents per group (default 9)")
    parser.add_argument("--processes", type=int, default=5, help="agent processes (default 5)")
    parser.add_argument("--rate", type=int, default=20, help="each group's tps (default 20)")
    parser.add_argument("--period", type=float, default=5.0, help="agents' period_s (default 5)")
    parser.add_argument("--scrape-interval", type=int, default=15, help="seconds (default 15)")
    parser.add_argument("--minutes", type=float, default=3.0, help="of each pass (default 3)")
    parser.add_argument("--scopes", default=f"{ALL},{OWN}", help="passes (default all,own)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results here")
    args = parser.parse_args(argv)
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        print("prometheus is not installed (Debian's package prometheus)", file=sys.stderr)
        return 2
    version = subprocess.run(
        [prometheus, "--version"], capture_output=True, text=True, check=False
    ).stdout.splitlines()[0]
    print(
        f"# Prometheus at the fleet's size\n\n{version}; Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start; "
        f"{args.groups} groups of {args.members} agents in {args.processes} processes "
        f"(period {args.period:g} s, {args.rate} tps each), scraped every "
        f"{args.scrape_interval} s for {args.minutes:g} minutes a pass\n",
        flush=True,
    )
    passes = [run_pass(prometheus, args, scope) for scope in args.scopes.split(",")]
    print(
        "\n| metrics.scope | targets up | samples per round of scrapes | series of the agents | "
        "head series | RSS at the end | RSS max | Go heap in use |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    for found in passes:
        print(row(found))
    per_member = ", ".join(f"{p['scope']} {p['series_per_member']:.0f}" for p in passes)
    print(
        f"\nLoad average {os.getloadavg()[0]:.2f} at the end; the series of one member (all "
        f"agents', the most of any member): {per_member}"
    )
    if args.json:
        args.json.write_text(json.dumps({"passes": passes}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
