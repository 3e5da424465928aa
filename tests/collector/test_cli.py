"""grstats collect as a process against agent processes: failover, SIGTERM seals; its arguments.

Arguments, --help and the runs that stop by themselves (--count) call ``grstats.cli.main``
in-process; the runs stopped by SIGTERM and Ctrl-C start the collector as a process.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
import urllib.request
from typing import TYPE_CHECKING, Any

import pytest

from grstats.cli.demo import free_ports
from grstats.collector.columns import columns_path
from grstats.collector.errors import SegmentCorrupt
from grstats.collector.records import table_rows
from grstats.collector.spool import read_segment, sealed_segments
from tests.cli.test_agent_processes import members, start_agent
from tests.inprocess import run_main
from tests.waiting import wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

PYTHON = [sys.executable, "-m", "grstats"]


def collect(log: Path, *args: str) -> subprocess.Popen[str]:
    """Start grstats collect with JSON logs written to ``log``, to be read while it runs."""
    with log.open("w") as stderr:
        return subprocess.Popen(
            [*PYTHON, "collect", *args, "--log-format", "json"],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )


def run_collect(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run grstats collect in-process to the end, with JSON logs, and capture its output."""
    return run_main(["collect", *args, "--log-format", "json"], capsys)


def log_events(stderr: str) -> list[dict[str, Any]]:
    """The JSON log lines of a run."""
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def records(spool: Path) -> list[dict[str, Any]]:
    """Every record of the sealed segments."""
    return [r for path in sealed_segments(spool) for r in read_segment(path)]


def poll_errors(address: str) -> float:
    """The collector's count of polls no agent answered, scraped from its /metrics."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    prefix = "grstats_collector_poll_errors_total"
    (line,) = [line for line in text.splitlines() if line.startswith(prefix)]
    return float(line.rpartition(" ")[2])


def agents_of_open_segment(spool: Path) -> list[str]:
    """The agent of each whole record written so far to the open segment (a torn end is left)."""
    asked: list[str] = []
    for path in spool.glob("segment-*.open"):
        with contextlib.suppress(SegmentCorrupt):  # the collector is writing the next frame
            asked += [record["agent"] for record in read_segment(path)]
    return asked


Agents = tuple[list[int], list[subprocess.Popen[bytes]]]
#: The agents of the shared fixture name their group (QueryResponse.group_label).
AGENTS_LABEL = ("--group-label", "orders")


@contextlib.contextmanager
def three_agents(directory: Path, *extra: str) -> Iterator[Agents]:
    """Three agent processes of a simulated group that all hear each other (``extra``: flags)."""
    ports = free_ports(3)
    start = int(time.time())
    processes = [start_agent(i, ports, start, directory, *extra) for i in range(3)]
    try:
        wait_until(
            lambda: all(len(members(port)) == 3 for port in ports),
            60,
            "three agents that hear each other",
        )
        yield ports, processes
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=15)


@pytest.fixture(name="agents", scope="module")
def _agents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agents]:
    """Three agents shared by the tests that only read from them; they name their group orders."""
    with three_agents(tmp_path_factory.mktemp("agents"), *AGENTS_LABEL) as agents:
        yield agents


@pytest.fixture(name="own_agents")
def _own_agents(tmp_path: Path) -> Iterator[Agents]:
    """Three agents for a test that stops one of them."""
    with three_agents(tmp_path / "agents") as agents:
        yield agents


@pytest.mark.slow
def test_failover_and_sigterm_seal(tmp_path: Path, own_agents: Agents) -> None:
    """Past a dead first node, then over a stopped agent; SIGTERM seals every snapshot, exit 0."""
    ports, processes = own_agents
    dead = f"127.0.0.1:{free_ports(1)[0]}"
    first, second = (f"127.0.0.1:{port}" for port in ports[:2])
    spool = tmp_path / "spool"
    log = tmp_path / "collect.log"
    collector = collect(
        log,
        *("--node", dead, "--node", first, "--node", second),
        *("--spool", str(spool), "--interval", "1", "--summary-every", "2"),
    )
    try:
        wait_until(
            lambda: agents_of_open_segment(spool).count(first) >= 2, 60, "two snapshots of first"
        )
        processes[0].send_signal(signal.SIGTERM)  # the agent being polled stops
        processes[0].wait(timeout=15)
        wait_until(
            lambda: (asked := agents_of_open_segment(spool)).count(second) >= 2 and len(asked) >= 5,
            60,
            "five snapshots, two of them of second",
        )
        wait_until(lambda: "collector_summary" in log.read_text(), 30, "a collector_summary")
    finally:
        collector.send_signal(signal.SIGTERM)
        out, _ = collector.communicate(timeout=30)
    err = log.read_text()
    assert collector.returncode == 0, err
    events = log_events(err)
    failovers = [(e["node"], e["next"]) for e in events if e["event"] == "agent_failover"]
    assert failovers == [(dead, first), (first, second)]
    sealed = [e for e in events if e["event"] == "segment_sealed"]
    assert [e["reason"] for e in sealed] == ["closed"]
    assert any(e["event"] == "collector_summary" for e in events)
    assert list(spool.glob("segment-*.open")) == []
    found = records(spool)
    assert sealed[0]["records"] == len(found) >= 5
    agents_asked = [r["agent"] for r in found]
    assert agents_asked == sorted(agents_asked, key=[first, second].index)  # first, then second
    assert {first, second} == set(agents_asked)
    for record in found:
        assert len(table_rows(record, "replication_group_members")) == 3
    stamps = [r["collected_at_us"] for r in found]
    assert stamps == sorted(stamps)
    assert f"collected {len(found)} snapshots" in out


def test_count_and_json_summary(
    tmp_path: Path, agents: Agents, capsys: pytest.CaptureFixture[str]
) -> None:
    """--count 2 --format json stops after two snapshots, sealed, named by the agents' label."""
    ports, _ = agents
    spool = tmp_path / "spool"
    done = run_collect(
        capsys,
        *("--node", f"127.0.0.1:{ports[2]}", "--spool", str(spool), "--count", "2"),
        *("--format", "json", "--interval", "1"),
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["snapshots"], summary["segments_sealed"], summary["spool"]) == (
        2,
        1,
        str(spool),
    )
    found = records(spool)
    assert [(r["group_label"], r["agent_group_label"]) for r in found] == [("orders", "orders")] * 2
    assert summary["groups"]["default"]["group_label"] == "orders"  # keyed as the metrics are
    (segment,) = sealed_segments(spool)
    assert columns_path(segment).exists()  # the member rows as columns, for ingest


def test_no_columns_seals_segments_without_them(
    tmp_path: Path, agents: Agents, capsys: pytest.CaptureFixture[str]
) -> None:
    """--no-columns: the segment is sealed with no columns file beside it."""
    ports, _ = agents
    spool = tmp_path / "spool"
    done = run_collect(
        capsys,
        *("--node", f"127.0.0.1:{ports[2]}", "--spool", str(spool), "--count", "1"),
        "--no-columns",
    )
    assert done.returncode == 0, done.stderr
    (segment,) = sealed_segments(spool)
    assert not columns_path(segment).exists()


def test_groups_of_a_config_file_and_flags(
    tmp_path: Path, agents: Agents, capsys: pytest.CaptureFixture[str]
) -> None:
    """Groups from --config and --group share one spool; each record and the summary name theirs."""
    ports, _ = agents
    dead = f"127.0.0.1:{free_ports(1)[0]}"
    config = tmp_path / "collector.toml"
    config.write_text(f'[[groups]]\nlabel = "down"\nnodes = ["{dead}"]\n')
    spool = tmp_path / "spool"
    done = run_collect(
        capsys,
        *("--config", str(config), "--group", f"up=127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}"),
        *("--spool", str(spool), "--count", "2", "--format", "json", "--timeout", "0.5"),
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert list(summary["groups"]) == ["down", "up"]
    assert summary["groups"]["up"]["snapshots"] == summary["snapshots"] == 2
    assert summary["groups"]["down"]["snapshots"] == 0
    assert summary["groups"]["down"]["failed_polls"] >= 1
    found = records(spool)
    assert [r["group_label"] for r in found] == ["up", "up"]  # the collector's label wins
    assert [r["agent_group_label"] for r in found] == ["orders", "orders"]
    assert len({r["group_name"] for r in found}) == 1
    assert found[0]["group_name"]
    unanswered = [e for e in log_events(done.stderr) if e["event"] == "no_agent_answered"]
    assert [e["group_label"] for e in unanswered] == ["down"]


def test_sigint_with_no_agent_and_a_busy_spool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no agent up it keeps trying; a second collector on its spool exits 1; Ctrl-C exits 0."""
    spool = tmp_path / "spool"
    dead = f"127.0.0.1:{free_ports(1)[0]}"
    log = tmp_path / "collect.log"
    first = collect(
        log,
        *("--node", dead, "--spool", str(spool), "--timeout", "0.5"),
        *("--metrics-listen", "127.0.0.1:0"),
    )
    try:
        wait_until(
            lambda: (spool / ".lock").exists() and (spool / ".lock").read_text(), 30, "the lock"
        )
        second = run_collect(capsys, "--node", dead, "--spool", str(spool))
        assert second.returncode == 1
        assert f"{spool} is in use by another writer" in second.stderr
        served = wait_until(
            lambda: [e for e in log_events(log.read_text()) if e["event"] == "metrics_served"],
            30,
            "the metrics address",
        )
        wait_until(lambda: poll_errors(served[0]["address"]) >= 3, 30, "three unanswered polls")
    finally:
        first.send_signal(signal.SIGINT)
        out, _ = first.communicate(timeout=30)
    err = log.read_text()
    assert first.returncode == 0, err
    events = [e["event"] for e in log_events(err)]
    assert events.count("no_agent_answered") == 1  # said once, not every second
    assert "collected 0 snapshots" in out
    assert sealed_segments(spool) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--node", "nope"], "--node: 'nope' is not host:port"),
        (["--node", "db1:7400", "--node", "db2"], "--node: 'db2' is not host:port"),
        (["--node", "db1:99999"], "--node: 'db1:99999' is not host:port"),
        (["--interval", "0"], "--interval: 0.0 is not a number of seconds from 1 to 3600"),
        (["--interval", "3601"], "--interval: 3601.0"),
        (["--interval", "soon"], "argument --interval: invalid float value: 'soon'"),
        (["--timeout", "0"], "--timeout: 0.0"),
        (["--segment-size", "12Q"], "--segment-size: '12Q' is not a size"),
        (["--segment-size", "100"], "--segment-size: '100' (100 is not a whole number of bytes"),
        (["--segment-age", "0"], "--segment-age: 0.0"),
        (["--count", "0"], "--count: 0 is not a whole number"),
        (["--duration", "-1"], "--duration: -1.0"),
        (["--fsync", "sometimes"], "argument --fsync: invalid choice: 'sometimes'"),
        (["--metrics-listen", "9475"], "--metrics-listen: '9475' is not host:port"),
        ([], "--node: no group to poll; give --node HOST:PORT, --group"),
        (["--group", "a\tb=h:1"], "--group: 'a\\tb=h:1': label: 'a\\tb' is not a group label"),
        (["--group", "a=h:1", "--group", "a=h:2"], "--group: 'a' names two groups"),
        (["--group", "a=h:1", "--node", "h:2"], "--node: cannot be combined with --group"),
        (["--config", "absent.toml"], "--config: cannot read 'absent.toml'"),
        (
            ["--metrics-listen", "127.0.0.1:65536"],
            "--metrics-listen: '127.0.0.1:65536' is not host:port with a port in 0..65535",
        ),
    ],
)
def test_bad_arguments_exit_2_naming_the_value(
    tmp_path: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An invalid flag exits 2 with a message naming the flag and its value; nothing is created."""
    base = ["--spool", str(tmp_path / "spool")]
    if args and not {"--node", "--group", "--config"} & set(args):
        base += ["--node", "127.0.0.1:7400"]
    done = run_main(["collect", *base, *args], capsys)
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "spool").exists()


def test_help_explains(capsys: pytest.CaptureFixture[str]) -> None:
    """--help describes the spool, failover and the exit statuses."""
    done = run_main(["collect", "--help"], capsys)
    assert done.returncode == 0
    for words in (
        "--node HOST:PORT",
        "fails over to the next --node",
        "kill -9",
        "exit status",
        "--metrics-listen HOST:PORT",
        "--group LABEL=HOST:PORT[,HOST:PORT...]",
        "[[groups]]",
    ):
        assert words in done.stdout
