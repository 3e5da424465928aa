"""grstats collect as a process against agent processes: failover, SIGTERM seals, bad arguments."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

import pytest

from grstats.agent.cli.demo import free_ports
from grstats.collector.columns import columns_path
from grstats.collector.records import table_rows
from grstats.collector.spool import read_segment, sealed_segments
from tests.agent.cli.test_agent_processes import members, start_agent, wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

PYTHON = [sys.executable, "-m", "grstats"]


def collect(*args: str) -> subprocess.Popen[str]:
    """Start grstats collect with JSON logs."""
    return subprocess.Popen(
        [*PYTHON, "collect", *args, "--log-format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_collect(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run grstats collect to the end and capture its output."""
    return subprocess.run(
        [*PYTHON, "collect", *args, "--log-format", "json"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def log_events(stderr: str) -> list[dict[str, Any]]:
    """The JSON log lines of a run."""
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def records(spool: Path) -> list[dict[str, Any]]:
    """Every record of the sealed segments."""
    return [r for path in sealed_segments(spool) for r in read_segment(path)]


@pytest.fixture(name="agents")
def _agents(tmp_path: Path) -> Iterator[tuple[list[int], list[subprocess.Popen[bytes]]]]:
    """Three agent processes of a simulated group that all hear each other."""
    ports = free_ports(3)
    start = int(time.time())
    processes = [start_agent(i, ports, start, tmp_path / "agents") for i in range(3)]
    try:
        wait_until(lambda: all(len(members(port)) == 3 for port in ports), 60)
        yield ports, processes
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=15)


@pytest.mark.slow
def test_failover_and_sigterm_seal(
    tmp_path: Path, agents: tuple[list[int], list[subprocess.Popen[bytes]]]
) -> None:
    """Past a dead first node, then over a stopped agent; SIGTERM seals every snapshot, exit 0."""
    ports, processes = agents
    dead = f"127.0.0.1:{free_ports(1)[0]}"
    first, second = (f"127.0.0.1:{port}" for port in ports[:2])
    spool = tmp_path / "spool"
    collector = collect(
        *("--node", dead, "--node", first, "--node", second),
        *("--spool", str(spool), "--interval", "1", "--summary-every", "2"),
    )
    try:
        wait_until(lambda: len(list(spool.glob("segment-*.open"))) == 1, 30)
        time.sleep(2.5)
        processes[0].send_signal(signal.SIGTERM)  # the agent being polled stops
        processes[0].wait(timeout=15)
        time.sleep(3.5)
    finally:
        collector.send_signal(signal.SIGTERM)
        out, err = collector.communicate(timeout=30)
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
    tmp_path: Path, agents: tuple[list[int], list[subprocess.Popen[bytes]]]
) -> None:
    """--count 2 --format json stops by itself after two snapshots, sealed, with a JSON summary."""
    ports, _ = agents
    spool = tmp_path / "spool"
    done = run_collect(
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
    assert len(records(spool)) == 2
    (segment,) = sealed_segments(spool)
    assert columns_path(segment).exists()  # the member rows as columns, for ingest


def test_no_columns_seals_segments_without_them(
    tmp_path: Path, agents: tuple[list[int], list[subprocess.Popen[bytes]]]
) -> None:
    """--no-columns: the segment is sealed with no columns file beside it."""
    ports, _ = agents
    spool = tmp_path / "spool"
    done = run_collect(
        *("--node", f"127.0.0.1:{ports[2]}", "--spool", str(spool), "--count", "1"),
        "--no-columns",
    )
    assert done.returncode == 0, done.stderr
    (segment,) = sealed_segments(spool)
    assert not columns_path(segment).exists()


def test_groups_of_a_config_file_and_flags(
    tmp_path: Path, agents: tuple[list[int], list[subprocess.Popen[bytes]]]
) -> None:
    """Groups from --config and --group share one spool; each record and the summary name theirs."""
    ports, _ = agents
    dead = f"127.0.0.1:{free_ports(1)[0]}"
    config = tmp_path / "collector.toml"
    config.write_text(f'[[groups]]\nlabel = "down"\nnodes = ["{dead}"]\n')
    spool = tmp_path / "spool"
    done = run_collect(
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
    assert [r["group_label"] for r in found] == ["up", "up"]
    assert len({r["group_name"] for r in found}) == 1
    assert found[0]["group_name"]
    unanswered = [e for e in log_events(done.stderr) if e["event"] == "no_agent_answered"]
    assert [e["group_label"] for e in unanswered] == ["down"]


def test_sigint_with_no_agent_and_a_busy_spool(tmp_path: Path) -> None:
    """With no agent up it keeps trying; a second collector on its spool exits 1; Ctrl-C exits 0."""
    spool = tmp_path / "spool"
    dead = f"127.0.0.1:{free_ports(1)[0]}"
    first = collect("--node", dead, "--spool", str(spool), "--timeout", "0.5")
    try:
        wait_until(lambda: (spool / ".lock").exists() and (spool / ".lock").read_text(), 30)
        second = run_collect("--node", dead, "--spool", str(spool))
        assert second.returncode == 1
        assert f"{spool} is in use by another writer" in second.stderr
        time.sleep(2)
    finally:
        first.send_signal(signal.SIGINT)
        out, err = first.communicate(timeout=30)
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
        (["--group", "a b=h:1"], "--group: 'a b=h:1': label: 'a b' is not a label of 1 to 64"),
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
    tmp_path: Path, args: list[str], message: str
) -> None:
    """An invalid flag exits 2 with a message naming the flag and its value; nothing is created."""
    base = ["--spool", str(tmp_path / "spool")]
    if args and not {"--node", "--group", "--config"} & set(args):
        base += ["--node", "127.0.0.1:7400"]
    done = run_collect(*base, *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "spool").exists()


def test_help_explains() -> None:
    """--help describes the spool, failover and the exit statuses."""
    done = subprocess.run(
        [*PYTHON, "collect", "--help"], capture_output=True, text=True, check=False, timeout=30
    )
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
