"""The README's fleet example runs as written, against two simulated groups of agent processes."""

from __future__ import annotations

import functools
import json
import re
import shlex
import subprocess
import time
from typing import TYPE_CHECKING, Any

import pytest

from grstats.agent.cli.demo import free_ports
from grstats.agent.sim.group import stable_uuid
from tests.agent.cli.test_agent_processes import PYTHON, members
from tests.test_readme import README
from tests.waiting import wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

SECTION = "## A fleet: many groups, one history"
#: The README's agents -> (group label, member index); db3 is not in the example.
HOSTS = {"db1": ("east", 0), "db2": ("east", 1), "db4": ("west", 0)}
#: label -> (built-in scenario, members, seed)
GROUPS = {"east": ("steady", 2, 1), "west": ("steady", 2, 2)}


def fleet_commands() -> list[list[str]]:
    """The commands of the README's fleet example, each as its arguments (comments dropped)."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    block = section[section.index("```sh\n") + len("```sh\n") :]
    block = block[: block.index("```")].replace("\\\n", " ")
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]


def test_the_example_is_four_commands_of_the_two_groups() -> None:
    """The example collects east and west with one collector, ingests, reports, and reports west."""
    commands = fleet_commands()
    assert [command[:3] for command in commands] == [
        ["grstats", "collect", "--group"],
        ["grstats", "spark", "ingest"],
        ["grstats", "spark", "report"],
        ["grstats", "spark", "report"],
    ]
    assert set(re.findall(r"\b(db\d+):7400", " ".join(commands[0]))) == set(HOSTS)
    assert commands[3][-2:] == ["--group", "west"]


def start_agent(
    label: str, index: int, ports: list[int], start: int, state: Path
) -> subprocess.Popen[bytes]:
    """One agent process of the simulated group ``label`` (its scenario, size and seed)."""
    scenario, size, seed = GROUPS[label]
    return subprocess.Popen(
        [
            *PYTHON,
            "agent",
            "--source",
            "simulated",
            "--scenario",
            scenario,
            "--members",
            str(size),
            "--seed",
            str(seed),
            "--member-index",
            str(index),
            "--group-start",
            str(start),
            "--listen",
            f"127.0.0.1:{ports[index]}",
            "--peers",
            ",".join(f"127.0.0.1:{port}" for port in ports),
            "--state-dir",
            str(state / f"{label}-{index}"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _lists(port: int, size: int) -> bool:
    """Whether the agent on ``port`` lists ``size`` members."""
    return len(members(port)) == size


@pytest.fixture(name="ports")
def _groups(tmp_path: Path) -> Iterator[dict[str, list[int]]]:
    """Both groups' agents as processes, every agent listing its group's members; their ports."""
    ports = {label: free_ports(size) for label, (_, size, _) in GROUPS.items()}
    start = int(time.time())
    agents = [
        start_agent(label, index, ports[label], start, tmp_path / "state")
        for label in GROUPS
        for index in range(len(ports[label]))
    ]
    try:
        for label, (_, size, _) in GROUPS.items():
            for port in ports[label]:
                wait_until(
                    functools.partial(_lists, port, size),
                    30,
                    f"the agent on port {port} lists {size} members",
                )
        yield ports
    finally:
        for agent in agents:
            agent.terminate()
        for agent in agents:
            agent.wait(timeout=20)


def _summary(path: Path) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return summary


@pytest.mark.slow
@pytest.mark.spark
def test_the_readme_fleet_example_runs(ports: dict[str, list[int]], tmp_path: Path) -> None:
    """Run as written (hosts made local): one fleet report of east and west, and west alone."""
    local = {host: f"127.0.0.1:{ports[label][index]}" for host, (label, index) in HOSTS.items()}
    for command in fleet_commands():
        args = [re.sub(r"\b(db\d+):7400", lambda m: local[m[1]], arg) for arg in command[1:]]
        done = subprocess.run(
            [*PYTHON, *args],
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
            cwd=tmp_path,
        )
        assert done.returncode == 0, (command, done.stderr)
    fleet = _summary(tmp_path / "fleet-report" / "summary.json")
    assert [(g["group_label"], g["group_name"]) for g in fleet["groups"]] == [
        (label, stable_uuid("group", seed)) for label, (_, _, seed) in GROUPS.items()
    ]
    for entry in fleet["groups"]:
        size = GROUPS[entry["group_label"]][1]
        assert len(entry["members"]) == size
        assert entry["range"]["snapshots"] >= 10  # a snapshot a second for 20 s, both groups
        own = tmp_path / "fleet-report" / entry["dir"]
        assert (own / "report.html").is_file()
        assert _summary(own / "summary.json")["members"] == entry["members"]
    page = (tmp_path / "fleet-report" / "report.html").read_text(encoding="utf-8")
    assert "Fleet overview" in page
    west = _summary(tmp_path / "west-report" / "summary.json")
    assert "groups" not in west
    entry = next(g for g in fleet["groups"] if g["group_label"] == "west")
    assert west["group"] == entry["group"]
    assert west["members"] == entry["members"]
