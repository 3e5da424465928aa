"""The README's fleet example runs as written, against its two simulated groups of agent processes."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import shlex
import subprocess
import time
from typing import TYPE_CHECKING, Any

import pytest

from grstats.cli import build_parser
from grstats.cli.agent import config_from
from grstats.cli.demo import free_ports
from tests.cli.test_agent_processes import PYTHON, members
from tests.inprocess import run_main
from tests.test_readme import README
from tests.waiting import wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from pyspark.sql import SparkSession

    from grstats.agent.sim.group import SimulatedGroup

SECTION = "## A fleet: many groups, one history"
#: The README's agents -> (group label, member index); db3 is not in the example.
HOSTS = {"db1": ("east", 0), "db2": ("east", 1), "db4": ("west", 0)}
#: The README's simulated agents: listen address -> (group name, member index).
SIMULATED = {
    "127.0.0.1:7400": ("east", 0),
    "127.0.0.1:7401": ("east", 1),
    "127.0.0.1:7410": ("west", 0),
    "127.0.0.1:7411": ("west", 1),
}
#: How the README's collect command reaches its hosts on one machine, as its prose says.
LOCAL = {"db1": "127.0.0.1:7400", "db2": "127.0.0.1:7401", "db4": "127.0.0.1:7410"}
START = "$start"  #: the README's group start, one shell variable for every agent


def _blocks() -> list[str]:
    """The ``sh`` blocks of the README's fleet section, continuation lines joined."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index(SECTION) + len(SECTION) :]
    section = section[: section.index("\n## ")]
    return [
        block.replace("\\\n", " ") for block in re.findall(r"```sh\n(.*?)```", section, re.DOTALL)
    ]


def fleet_commands() -> list[list[str]]:
    """The commands of the README's fleet example, each as its arguments (comments dropped)."""
    block = _blocks()[0]
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]


def agent_commands() -> list[list[str]]:
    """The README's simulated agents, each as its arguments (the trailing ``&`` dropped)."""
    block = _blocks()[1]
    commands = [shlex.split(line, comments=True) for line in block.splitlines()]
    return [command[:-1] for command in commands if command and command[0] == "grstats"]


def _flag(command: list[str], name: str) -> str:
    """The value of ``--name`` in ``command``."""
    return command[command.index(f"--{name}") + 1]


def simulated_group(command: list[str], start: int, **changes: Any) -> SimulatedGroup:
    """The simulated group the agent of ``command`` reads, as its config builds it.

    ``changes`` replace keys of its ``[simulated]`` section (``group_name=None``, ``scenario=``).
    """
    args = build_parser().parse_args([arg.replace(START, str(start)) for arg in command[1:]])
    config = config_from(args)
    assert config.simulated is not None
    section = dataclasses.replace(config.simulated, **changes)
    return section.build(clock=lambda: start).group


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


def test_the_simulated_groups_are_the_examples() -> None:
    """The README's agents are east's two and west's two, with the collect command's hosts among them."""
    commands = agent_commands()
    assert [command[:4] for command in commands] == [
        ["grstats", "agent", "--source", "simulated"]
    ] * 4
    assert {
        _flag(command, "listen"): (
            _flag(command, "group-name"),
            int(_flag(command, "member-index")),
        )
        for command in commands
    } == SIMULATED
    assert {host: SIMULATED[address] for host, address in LOCAL.items()} == HOSTS
    for command in commands:
        assert _flag(command, "group-start") == START
        group = _flag(command, "group-name")
        ports = [address for address, (name, _) in SIMULATED.items() if name == group]
        assert _flag(command, "peers").split(",") == ports


def test_the_example_groups_have_distinct_uuids() -> None:
    """Same scenario and seed: --group-name alone gives east and west their own UUIDs and labels."""
    start = int(time.time())
    commands = agent_commands()
    groups = {_flag(c, "listen"): simulated_group(c, start) for c in commands}
    assert len({(g.scenario.name, g.seed) for g in groups.values()}) == 1  # only the name differs
    by_name: dict[str, set[tuple[str, tuple[str, ...]]]] = {}
    for address, (name, _) in SIMULATED.items():
        group = groups[address]
        assert group.name == name
        by_name.setdefault(name, set()).add(
            (group.group_name, tuple(m.uuid for m in group.members))
        )
    # every agent of a group computes the same UUIDs
    ((east_name, east_members),) = by_name["east"]
    ((west_name, west_members),) = by_name["west"]
    assert east_name != west_name
    assert not set(east_members) & set(west_members)


def test_without_group_names_only_another_scenario_tells_them_apart() -> None:
    """Without --group-name the README's groups would be one; another scenario tells them apart."""
    start = int(time.time())
    east, west = (
        next(c for c in agent_commands() if _flag(c, "group-name") == name)
        for name in ("east", "west")
    )
    same = [simulated_group(c, start, group_name=None) for c in (east, west)]
    assert same[0].group_name == same[1].group_name
    assert [m.uuid for m in same[0].members] == [m.uuid for m in same[1].members]
    apart = [
        simulated_group(east, start, group_name=None),
        simulated_group(west, start, group_name=None, scenario="primary-failover"),
    ]
    assert apart[0].name == apart[1].name == ""
    assert apart[0].group_name != apart[1].group_name
    assert not {m.uuid for m in apart[0].members} & {m.uuid for m in apart[1].members}


def start_agent(
    command: list[str], start: int, ports: dict[str, int], state: Path
) -> subprocess.Popen[bytes]:
    """One agent process of the README's simulated groups: its addresses made free ports."""

    def local(arg: str) -> str:
        return re.sub(r"127\.0\.0\.1:\d+", lambda m: f"127.0.0.1:{ports[m[0]]}", arg)

    listen = _flag(command, "listen")
    return subprocess.Popen(
        [
            *PYTHON,
            *(local(arg.replace(START, str(start))) for arg in command[1:]),
            "--state-dir",
            str(state / listen.replace(":", "-")),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _lists(port: int, size: int) -> bool:
    """Whether the agent on ``port`` lists ``size`` members."""
    return len(members(port)) == size


@pytest.fixture(name="ports")
def _groups(tmp_path: Path) -> Iterator[dict[str, int]]:
    """The README's agents as processes, each listing its group's members; README address -> port."""
    ports = dict(zip(SIMULATED, free_ports(len(SIMULATED)), strict=True))
    start = int(time.time())
    agents = [
        start_agent(command, start, ports, tmp_path / "state") for command in agent_commands()
    ]
    try:
        for address, port in ports.items():
            name = SIMULATED[address][0]
            size = sum(1 for group, _ in SIMULATED.values() if group == name)
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
def test_the_readme_fleet_example_runs(
    ports: dict[str, int],
    tmp_path: Path,
    spark: SparkSession,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Run as written (hosts made local): one fleet report of east and west, and west alone.

    The commands run in this process (``grstats.cli.main``, as the console script calls it),
    the Spark ones on the test run's session: the agents are the processes.
    """
    monkeypatch.chdir(tmp_path)
    local = {host: f"127.0.0.1:{ports[address]}" for host, address in LOCAL.items()}
    for command in fleet_commands():
        args = [re.sub(r"\b(db\d+):7400", lambda m: local[m[1]], arg) for arg in command[1:]]
        done = run_main(args, capsys)
        assert done.returncode == 0, (command, done.stderr)
    assert spark.range(3).count() == 3  # the commands used the caller's session and left it up
    # the groups' UUIDs, as their agents computed them (they do not depend on the start)
    truth = {_flag(c, "group-name"): simulated_group(c, 0) for c in agent_commands()}
    fleet = _summary(tmp_path / "fleet-report" / "summary.json")
    assert [(g["group_label"], g["group_name"]) for g in fleet["groups"]] == [
        (label, truth[label].group_name) for label in ("east", "west")
    ]
    for entry in fleet["groups"]:
        group = truth[entry["group_label"]]
        assert {m["member_id"] for m in entry["members"]} == {m.uuid for m in group.members}
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
