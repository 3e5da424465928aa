"""``grstats demo``: Ctrl-C, bad arguments, its headlines, and the checks of a whole run.

The whole demo runs once in CI, as the README's first command in a fresh clone
(``.ci/proof-demo``), and is checked there with :func:`tests.demo_checks.problems`; a second
run here would only repeat it (a minute of the suite).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from grstats.cli.demo.headlines import headlines
from tests.demo_checks import PID, boxed_tables, gone, problems, vertical_tables

PYTHON = [sys.executable, "-m", "grstats"]
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


def test_the_demo_checks_name_what_a_run_lacks(tmp_path: Path) -> None:
    """A run that printed nothing fails the checks, each problem saying what is missing."""
    found = problems("", "", tmp_path, 10.0, 180.0)
    assert "0 processes named, not 3 agents, collector, ingest, report" in found
    assert "0 vertical tables, not 3" in found


def test_the_demo_checks_read_both_table_forms() -> None:
    """The boxed and the vertical tables of a demo's output are read row by row."""
    boxed = "+----+----+\n| A  | B  |\n+----+----+\n| 1  | x  |\n+----+----+\n"
    vertical = f"{'*' * 27} 1. row {'*' * 27}\n A: 1\n B: x\n1 row in set\n"
    assert boxed_tables(boxed) == [[{"A": "1", "B": "x"}]]
    assert vertical_tables(vertical) == [[{"A": "1", "B": "x"}]]
