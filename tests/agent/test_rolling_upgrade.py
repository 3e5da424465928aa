"""A rolling upgrade caught halfway: an agent of an earlier commit of main beside agents of this checkout, in one group (docs/upgrades.md).

The earlier agent runs main at :data:`BASE`, the last commit before agents said their version
and protocol revision (revision 1): ``git archive`` extracts it as a package ``grstats`` of its
own, which its process imports instead of this checkout's.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from grstats import __version__
from grstats.agent.convert import query_build_from_wire, uuid_from_bytes
from grstats.cli.demo import free_ports
from grstats.core.build import OWN_BUILD, PROTOCOL_REVISION, UNSAID_BUILD
from grstats.core.query_wire import table_from_wire
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc
from tests import waiting
from tests.mariadb import missing

if TYPE_CHECKING:
    from collections.abc import Iterator

#: main before protocol revision 2: its agents send neither agent_version nor protocol_revision.
BASE = "d38a8b362e32cb1e516473ceff70f738a090aba1"
#: The checkout: the repository's root is the package grstats.
ROOT = Path(__file__).resolve().parents[2]
#: The tables whose rows every agent serves of every member (gtid_executed is sampled each 60 s).
TABLES = (
    "replication_group_members",
    "replication_group_member_stats",
    "replication_group_member_lag",
)


def base_tree(into: Path) -> Path:
    """Extract main at :data:`BASE` as ``into/grstats``; return ``into``, which imports it.

    Fails under CI, skips elsewhere, when git or the commit is missing (a shallow clone).
    """
    git, tar = shutil.which("git"), shutil.which("tar")
    if git is None or tar is None:
        missing("git and tar are needed: the test extracts an earlier commit of main")
    assert git is not None
    assert tar is not None
    found = subprocess.run(
        [git, "-C", str(ROOT), "cat-file", "-e", f"{BASE}^{{commit}}"],
        capture_output=True,
        check=False,
        timeout=30,
    )
    if found.returncode != 0:
        missing(f"commit {BASE[:12]} is not in {ROOT} (a shallow clone? fetch main's history)")
    package = into / "grstats"
    package.mkdir(parents=True)
    archive = subprocess.run(
        [git, "-C", str(ROOT), "archive", "--format=tar", BASE],
        capture_output=True,
        check=True,
        timeout=60,
    )
    subprocess.run([tar, "-x", "-C", str(package)], input=archive.stdout, check=True, timeout=60)
    return into


def old_env(tree: Path) -> dict[str, str]:
    """The environment of a process that imports grstats from ``tree`` (with cwd ``tree``)."""
    return {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}


def start_agent(
    index: int, ports: list[int], start: int, state: Path, tree: Path | None, *extra: str
) -> subprocess.Popen[bytes]:
    """Agent ``index`` of a simulated 3-member group; of :data:`BASE` when ``tree`` is given."""
    peers = ",".join(f"127.0.0.1:{port}" for port in ports)
    log = (state / f"agent-{index}.log").open("wb")
    try:
        return subprocess.Popen(
            [
                *(sys.executable, "-m", "grstats", "agent"),
                *("--source", "simulated", "--scenario", "steady"),
                *("--members", "3", "--member-index", str(index), "--group-start", str(start)),
                *("--listen", f"127.0.0.1:{ports[index]}", "--peers", peers, "--period", "1"),
                *("--state-dir", str(state / str(index)), "--log-format", "json"),
                *extra,
            ],
            cwd=tree,
            env=old_env(tree) if tree is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    finally:
        log.close()


@pytest.fixture(name="agents")
def _agents() -> Iterator[list[subprocess.Popen[bytes]]]:
    """The agent processes the test starts; each is stopped at the end (SIGTERM, then SIGKILL)."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in started:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def read(port: int) -> pb.QueryResponse | None:
    """The agent's extended tables (Query.Read), or None while it does not answer."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            response: pb.QueryResponse = pb_grpc.QueryStub(channel).Read(
                pb.QueryRequest(tables=TABLES, extended=True), timeout=2
            )
        except grpc.RpcError:
            return None
        return response


def rows_by_member(response: pb.QueryResponse) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Table name -> MEMBER_ID -> its rows as dicts by column name."""
    found: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for table in response.tables:
        columns, rows = table_from_wire(table)
        by_member = found.setdefault(table.name, {})
        for row in rows:
            named = dict(zip(columns, row, strict=True))
            by_member.setdefault(str(named["MEMBER_ID"]), []).append(named)
    return found


def serves_everyone(port: int) -> bool:
    """Whether the agent serves 3 members CONNECTED YES, each with rows in every table."""
    response = read(port)
    if response is None:
        return False
    tables = rows_by_member(response)
    members = tables.get("replication_group_members", {})
    if len(members) != 3 or any(rows[0]["CONNECTED"] != "YES" for rows in members.values()):
        return False
    return all(set(tables.get(name, {})) == set(members) for name in TABLES)


def peer_info(port: int) -> dict[str, tuple[str, str]]:
    """grstats_peer_info as the agent's /metrics serves it: member_id -> (version, revision)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as answer:
            text = answer.read().decode("utf-8")
    except OSError:
        return {}
    return {
        sample.labels["member_id"]: (sample.labels["version"], sample.labels["protocol_revision"])
        for family in text_string_to_metric_families(text)
        if family.name == "grstats_peer_info"
        for sample in family.samples
        if sample.value == 1
    }


def peer_info_is(port: int, expected: dict[str, tuple[str, str]]) -> bool:
    """Whether the agent's grstats_peer_info is ``expected``."""
    return peer_info(port) == expected


def shown_peer_info(port: int) -> str:
    """The agent's grstats_peer_info, for a failure's message."""
    return repr(peer_info(port))


def logged(path: Path, event: str) -> list[dict[str, Any]]:
    """The JSON log lines of ``event`` in an agent's log file."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("event") == event]


def refusals(path: Path) -> list[dict[str, Any]]:
    """The log lines of an agent that refused what a peer sent, or was refused by one."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]
    return [
        line
        for line in lines
        if "refused" in line.get("event", "") or "INVALID_ARGUMENT" in str(line.get("error", ""))
    ]


@pytest.mark.slow
def test_an_earlier_agent_and_agents_of_this_checkout_serve_one_group(
    tmp_path: Path, agents: list[subprocess.Popen[bytes]]
) -> None:
    """Member 0's agent runs main at BASE, members 1 and 2 this checkout: every agent serves every member's rows, and the new ones see revision 1 beside 2."""
    tree = base_tree(tmp_path / "base")
    imported = subprocess.run(
        [sys.executable, "-c", "import grstats; print(grstats.__file__)"],
        cwd=tree,
        env=old_env(tree),
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert Path(imported.stdout.strip()) == tree / "grstats" / "__init__.py"
    ports = free_ports(5)  # 3 agents, then /metrics of the two new ones
    gossip, metrics = ports[:3], {1: ports[3], 2: ports[4]}
    start = int(time.time())
    agents.append(start_agent(0, gossip, start, tmp_path, tree))
    for index, port in metrics.items():
        agents.append(
            start_agent(
                index, gossip, start, tmp_path, None, "--metrics-listen", f"127.0.0.1:{port}"
            )
        )

    def logs() -> str:
        return "\n".join(
            f"--- agent {i} (exit {p.poll()}):\n{(tmp_path / f'agent-{i}.log').read_text()[-3000:]}"
            for i, p in enumerate(agents)
        )

    for index in range(3):
        waiting.wait_until(
            functools.partial(serves_everyone, gossip[index]),
            45,
            f"agent {index} serves all 3 members CONNECTED YES, with rows in every table",
            detail=logs,
        )

    answers = [read(port) for port in gossip]
    assert all(answer is not None for answer in answers)
    members = [uuid_from_bytes(answer.member, "member") for answer in answers if answer is not None]
    assert len(set(members)) == 3
    builds = [query_build_from_wire(answer) for answer in answers if answer is not None]
    assert builds == [UNSAID_BUILD, OWN_BUILD, OWN_BUILD]  # BASE's answer has no version
    for index, port in metrics.items():
        expected = {
            members[0]: ("unknown", "1"),
            members[index]: (__version__, str(PROTOCOL_REVISION)),
        }
        waiting.wait_until(
            functools.partial(peer_info_is, port, expected),
            15,
            f"agent {index}'s grstats_peer_info: member 0 of revision 1, its own of {PROTOCOL_REVISION}",
            detail=functools.partial(shown_peer_info, port),
        )
        seen = logged(tmp_path / f"agent-{index}.log", "peer_version")
        first = {line["member"]: line for line in seen}
        assert (first[members[0]]["version"], first[members[0]]["protocol_revision"]) == (None, 1)
        assert first[members[3 - index]]["protocol_revision"] == PROTOCOL_REVISION
        assert len(seen) == 2, seen  # once per peer: no build changed
        assert not logged(tmp_path / f"agent-{index}.log", "peer_protocol_newer")
    for index in range(3):  # nothing any agent sent was refused, the earlier one's included
        log = tmp_path / f"agent-{index}.log"
        assert not refusals(log), logs()
    assert all(process.poll() is None for process in agents), logs()
