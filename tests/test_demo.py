"""``grstats demo`` as a newcomer runs it: agents, a member crash, an agent kill, collector, report."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from grstats.agent.cli.demo.headlines import headlines
from grstats.agent.cli.demo.workdir import MARKER

PYTHON = [sys.executable, "-m", "grstats"]
PID = re.compile(r"\(pid (\d+)\)")
#: ``grstats`` with Ctrl-C's default action restored: a process started in the background
#: inherits SIGINT ignored, and Python then never raises KeyboardInterrupt.
WITH_SIGINT = [
    sys.executable,
    "-c",
    (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
        "os.execv(sys.executable, [sys.executable, '-m', 'grstats', *sys.argv[1:]])"
    ),
]
#: A group whose member 2 crashes sooner than in the demo's scenario, for a shorter test.
QUICK_SCENARIO = """\
name = "quick-crash"
description = "Member 2 crashes at 2 s, UNREACHABLE at 4 s, OFFLINE at 6 s, unread 10 s at 12 s."
members = 3

[group]
suspicion_s = 2
expel_timeout_s = 2

[[events]]
at = 2
action = "crash"
member = 2
"""


def boxed_tables(text: str) -> list[list[dict[str, str]]]:
    """The mysql-style boxed tables in ``text``, each as a list of rows (column -> cell)."""
    tables: list[list[dict[str, str]]] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        if lines[index].startswith("+-") and index + 2 < len(lines):
            header = [cell.strip() for cell in lines[index + 1].strip("|").split("|")]
            rows = []
            index += 3
            while not lines[index].startswith("+-"):
                cells = [cell.strip() for cell in lines[index].strip("|").split("|")]
                rows.append(dict(zip(header, cells, strict=True)))
                index += 1
            tables.append(rows)
        index += 1
    return tables


def vertical_tables(text: str) -> list[list[dict[str, str]]]:
    """The ``\\G`` tables in ``text``, each as a list of rows (column -> value)."""
    tables: list[list[dict[str, str]]] = []
    current: list[dict[str, str]] | None = None
    for line in text.splitlines():
        if line.startswith("*" * 27) and line.endswith("*" * 27):
            if current is None or line.split()[1] == "1.":
                current = []
                tables.append(current)
            current.append({})
        elif current is not None and ": " in line and not line.startswith("+"):
            column, _, value = line.partition(": ")
            current[-1][column.strip()] = value
        elif "rows in set" in line or "row in set" in line:
            current = None
    return tables


def gone(pid: int) -> bool:
    """Whether process ``pid`` and its whole process group have ended."""
    for probe in (os.kill, os.killpg):
        try:
            probe(pid, 0)
        except ProcessLookupError:
            continue
        return False
    return True


def java_in_group(pgid: int) -> bool:
    """Whether a java process runs in process group ``pgid``."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)
        except OSError:
            continue
        name = fields[0].partition("(")[2]
        if name == "java" and int(fields[1].split()[2]) == pgid:
            return True
    return False


@pytest.mark.slow
@pytest.mark.spark
def test_demo_shows_the_main_job_and_leaves_no_process(tmp_path: Path) -> None:
    """The demo shows stats from two agents, a crash, a killed agent, the report, and stops all."""
    out = tmp_path / "demo"
    started = time.monotonic()
    done = subprocess.run(
        [*PYTHON, "demo", "--collect-seconds", "10", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        cwd=tmp_path,
        start_new_session=True,
    )
    took = time.monotonic() - started
    log = done.stderr
    assert done.returncode == 0, log
    pids = [int(pid) for pid in PID.findall(log)]
    assert len(pids) >= 6, log  # 3 agents, the collector, ingest, report
    assert all(gone(pid) for pid in pids), f"left running: {[p for p in pids if not gone(p)]}"
    agents = re.findall(r"replication_group_member_stats as agent (\S+) serves it", log)
    assert len(set(agents)) == len(agents) == 2, log
    assert "serve 3 rows each: the same" in log
    stats = vertical_tables(done.stdout)
    assert [len(table) for table in stats[:2]] == [3, 3]
    assert [r["MEMBER_ID"] for r in stats[0]] == [r["MEMBER_ID"] for r in stats[1]]
    members = boxed_tables(done.stdout)
    assert len(members) == 4, done.stdout  # members three times, then the events
    crashed = next(r for r in members[0] if r["MEMBER_STATE"] == "UNREACHABLE")
    assert log.index("serves it: UNREACHABLE") < log.index("serves it: OFFLINE")
    after = next(r for r in members[1] if r["MEMBER_ID"] == crashed["MEMBER_ID"])
    # Its agent runs, but its server was not read for the silence: not connected (known.connected).
    assert (after["MEMBER_STATE"], after["CONNECTED"], after["IN_VIEW"]) == ("OFFLINE", "NO", "NO")
    killed = re.search(r"killed agent (\d) \(pid \d+\) with SIGKILL.*its member (\S+) keeps", log)
    assert killed is not None, log
    killed_row = next(r for r in members[2] if r["MEMBER_ID"] == killed[2])
    assert (killed_row["CONNECTED"], killed_row["IN_VIEW"]) == ("NO", "YES")
    assert int(killed_row["AGE_MS"]) >= 9000
    # Agent 0 again, with nothing remembered, lists the crash and its own kill (issue 34).
    assert "with an empty state directory: it saw neither the crash nor its own kill" in log
    events = members[3]
    assert any(
        e["MEMBER_ID"] == crashed["MEMBER_ID"] and e["NEW_VALUE"] == "UNREACHABLE" for e in events
    ), done.stdout
    silent = [
        e for e in events if e["EVENT_TYPE"] == "AGENT_SILENT" and e["MEMBER_ID"] == killed[2]
    ]
    assert silent, done.stdout
    assert {e["REPORTED_BY"] for e in silent} <= {r["MEMBER_ID"] for r in members[0]} - {killed[2]}
    last_row = stats[2]
    assert [r["MEMBER_ID"] for r in last_row] == [killed[2]]
    assert last_row[0]["CONNECTED"] == "NO"
    assert int(last_row[0]["AGE_MS"]) >= 9000
    report = out / "report"
    assert f"the report: {report / 'report.html'}" in log
    assert (report / "report.html").stat().st_size > 0
    summary = json.loads((report / "summary.json").read_text())
    assert summary["group"]["snapshots"] >= 8
    assert len(summary["members"]) == 3
    assert f"every process the demo started has ended; its output is in {out}/" in log
    assert (out / MARKER).exists()
    timed = [float(t) for t in re.findall(r"^== \[\s*([\d.]+) s\]", log, re.MULTILINE)]
    assert timed == sorted(timed)
    assert timed[-1] <= took


@pytest.mark.slow
@pytest.mark.spark
def test_ctrl_c_stops_every_process(tmp_path: Path) -> None:
    """SIGINT while the Spark ingest runs stops the agents, the JVM and all, and exits 130."""
    scenario = tmp_path / "quick.toml"
    scenario.write_text(QUICK_SCENARIO)
    demo = subprocess.Popen(
        [*WITH_SIGINT, "demo", "--collect-seconds", "2", "--scenario", str(scenario)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        start_new_session=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(demo.stderr.readline, "")))  # type: ignore[union-attr]
    reader.start()
    try:
        deadline = time.monotonic() + 120
        ingest = None
        while ingest is None and time.monotonic() < deadline and demo.poll() is None:
            found = [PID.search(line) for line in lines if "grstats spark ingest (pid" in line]
            ingest = int(found[0][1]) if found and found[0] else None
            time.sleep(0.2)
        assert ingest is not None, "".join(lines)
        # The JVM gets its own minute from the ingest's start (the timeline before it may have
        # used most of the first deadline on a loaded machine); a demo that ended says why.
        jvm_deadline = time.monotonic() + 60
        while not java_in_group(ingest) and time.monotonic() < jvm_deadline and demo.poll() is None:
            time.sleep(0.2)
        assert java_in_group(ingest), f"the ingest's JVM never started:\n{''.join(lines)}"
        running = sorted({int(pid) for pid in PID.findall("".join(lines))})
        # 3 agents (one killed, then started again: 4 pids), the collector, the ingest
        assert len(running) == 6
        demo.send_signal(signal.SIGINT)
        code = demo.wait(timeout=60)
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()
        reader.join(timeout=10)
        demo.stderr.close()  # type: ignore[union-attr]
    log = "".join(lines)
    assert code == 130, log
    assert "interrupted (Ctrl-C)" in log
    assert re.search(r"stopped .*agent 1 \(pid \d+\).*ingest \(pid \d+\)", log), log
    assert all(gone(pid) for pid in running), f"left running: {[p for p in running if not gone(p)]}"
    assert not java_in_group(ingest)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--collect-seconds", "0"],
            "--collect-seconds: 0 is not a number of seconds in 1..3600",
            id="collect-seconds",
        ),
        pytest.param(["--scenario", "no-such"], "--scenario: scenario: 'no-such'", id="scenario"),
        pytest.param(["--out", "."], "--out: '.' is not empty and not an earlier demo's", id="out"),
    ],
)
def test_bad_arguments_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    """Invalid options exit 2 with an error naming the option and its value, starting nothing."""
    (tmp_path / "precious.txt").write_text("not the demo's")
    done = subprocess.run(
        [*PYTHON, "demo", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "pid" not in done.stderr
    assert (tmp_path / "precious.txt").read_text() == "not the demo's"


def test_headlines_name_each_member_and_the_episodes() -> None:
    """The figures printed at the end come from summary.json: one line per member, the episodes."""
    member = {
        "member_id": "m-1",
        "member_port": 13306,
        "online_s": 50.2,
        "unreachable_s": 5.0,
        "offline_s": 4.8,
        "not_connected_s": 0.0,
        "applied_per_s": 449.6,
        "lag_seconds_p95": None,
        "lag_seconds_max": 1.234,
    }
    summary = {
        "group": {"snapshots": 60, "observed_s": 59.0, "first_at": "A", "last_at": "B"},
        "members": [member],
        "unreachable_episodes": [{}],
        "not_connected_episodes": [{}, {}],
        "throttling": {"group_s": 0.0},
    }
    lines = headlines(summary)
    assert lines[0] == "60 snapshots over 59 s, from A to B:"
    assert lines[1].split() == [
        "MEMBER_ID", "PORT", "ONLINE_S", "UNREACHABLE_S", "OFFLINE_S", "NOT_CONNECTED_S",
        "APPLIED_PER_S", "LAG_P95_S", "LAG_MAX_S",
    ]  # fmt: skip
    assert lines[2].split() == ["m-1", "13306", "50", "5", "5", "0", "450", "-", "1.23"]
    assert lines[3] == (
        "1 UNREACHABLE episode(s), 2 not-connected episode(s); "
        "writers throttled by flow control for 0 s"
    )
