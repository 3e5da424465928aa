"""grstats query status --watch: JSON Lines and text on a pipe, and the live screen in a real tmux.

The piped runs ask in-process agents over gRPC on 127.0.0.1; the tmux run asks agent processes
(a simulated group) so that it can stop one, and drives the screen with tmux's keys. CI (CI=true)
must have tmux (.ci/run and ``make system-deps`` install it); elsewhere the tmux test is skipped
without it.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from typing import TYPE_CHECKING

import pytest
from rich.console import Console

from grstats.cli.demo import free_ports
from grstats.cli.status_view import GroupStatus
from grstats.cli.watch import WatchScreen
from grstats.core.rows.zone import parse_time_zone
from tests.agent.test_runtime import Group, start_group, stop_all
from tests.cli.test_agent_processes import start_agent
from tests.cli.test_query_status import DOCUMENT_KEYS, PYTHON, wire
from tests.waiting import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

CLOCK = re.compile(r"\d\d:\d\d:\d\d UTC$")


@pytest.fixture(name="group")
async def _group() -> AsyncIterator[Group]:
    group = await start_group(3)
    await group.rounds(2)
    yield group
    await stop_all(group)


#: ``grstats`` started as a script's background job is: with SIGINT ignored, which Python
#: keeps (no KeyboardInterrupt). Test runs launched that way hung every piped watch before the
#: watch handled SIGINT itself (cli/watch.py, _watch).
SIGINT_IGNORED = (
    sys.executable,
    "-c",
    (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
        "os.execv(sys.executable, [sys.executable, '-m', 'grstats', *sys.argv[1:]])"
    ),
)


async def watch_piped(
    address: str, *args: str, sigint_ignored: bool = False
) -> asyncio.subprocess.Process:
    """``grstats query status --watch 0.2`` with its output on a pipe."""
    return await asyncio.create_subprocess_exec(
        *(SIGINT_IGNORED if sigint_ignored else PYTHON),
        "query",
        "status",
        "--node",
        address,
        "--watch",
        "0.2",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
    )


async def interrupt(process: asyncio.subprocess.Process) -> tuple[int, str]:
    """Send SIGINT as Ctrl-C would; return the exit status and what it printed on stderr.

    A watch still running 30 s later gets SIGABRT, and the test fails with the tracebacks of
    its threads (PYTHONFAULTHANDLER: see watch_piped).
    """
    process.send_signal(signal.SIGINT)
    ended = asyncio.ensure_future(process.communicate())
    await asyncio.wait({ended}, timeout=30)
    if not ended.done():
        process.send_signal(signal.SIGABRT)
        _, err = await asyncio.wait_for(ended, timeout=30)
        pytest.fail(f"the watch went on 30 s after SIGINT; its threads:\n{err.decode()[-6000:]}")
    _, err = ended.result()
    assert process.returncode is not None
    return process.returncode, err.decode()


async def test_piped_json_is_json_lines_until_sigint(group: Group) -> None:
    """On a pipe, --format json prints one compact object per line each period; SIGINT exits 0."""
    process = await watch_piped(group.agents[0].address, "--format", "json")
    assert process.stdout is not None
    lines = [await asyncio.wait_for(process.stdout.readline(), timeout=30) for _ in range(2)]
    code, err = await interrupt(process)
    assert (code, err) == (0, "")
    for line in lines:
        assert line.endswith(b"}\n")
        assert b"\n" not in line[:-1]
        found = json.loads(line)
        assert set(found) == DOCUMENT_KEYS
        assert found["status"] == "OK"
        assert len(found["members"]) == 3


async def test_piped_text_prints_snapshots_with_a_blank_line_between(group: Group) -> None:
    """Piped, the table is printed whole each period; SIGINT ends it even if started ignored."""
    process = await watch_piped(group.agents[1].address, sigint_ignored=True)
    assert process.stdout is not None
    seen: list[str] = []
    while sum(line.startswith("3 rows in set") for line in seen) < 2:
        line = await asyncio.wait_for(process.stdout.readline(), timeout=30)
        assert line, "the watch ended"
        seen.append(line.decode())
    code, err = await interrupt(process)
    assert (code, err) == (0, "")
    footer = next(i for i, line in enumerate(seen) if line.startswith("3 rows in set"))
    assert seen[footer + 1] == "\n"
    assert seen[footer + 2].strip() == "status: OK"
    assert seen[0].strip() == "status: OK"


def test_the_screen_shows_its_times_in_the_zone_asked() -> None:
    """--time-zone: the title's clock, as of and STALE since are in that zone, marked with it."""
    summer_s = 1_784_116_800  # 2026-07-15 12:00:00 UTC: 14:00:00 CEST in Paris
    status = GroupStatus(
        agent="db1:7400",
        group={"STATUS": "OK", "AS_OF": summer_s * 1_000_000 + 500_000},
        member_columns=(),
        member_rows=(),
    )
    screen = WatchScreen("db1:7400", 1.0, zone=parse_time_zone("Europe/Paris"))
    screen.answered(status)
    screen.failed("db1:7400: no answer within 5 s", summer_s + 3)
    console = Console(file=io.StringIO(), width=80, height=24, color_system=None)
    console.print(screen.render(summer_s + 5))
    plain = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert plain[0].rstrip().endswith("STALE  14:00:05 CEST")
    assert plain[1].startswith("STALE since 14:00:03 CEST (2 s)")
    assert any("as of 2026-07-15 14:00:00 CEST" in line for line in plain)
    screen = WatchScreen("db1:7400", 1.0)  # UTC by default
    screen.answered(status)
    console = Console(file=io.StringIO(), width=80, height=24, color_system=None)
    console.print(screen.render(summer_s + 5))
    plain = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert plain[0].rstrip().endswith("12:00:05 UTC")
    assert any("as of 2026-07-15 12:00:00 UTC" in line for line in plain)


async def test_nine_members_fit_80_by_24_and_changes_are_marked() -> None:
    """The screen of a 9-member group, stale with a long error, fits 80x24; a changed state is reversed."""
    group = await start_group(9, memory=True)
    try:
        await group.rounds(2)
        tables = wire(group.agents[0])
    finally:
        await stop_all(group)
    first = GroupStatus.from_tables("db-agent-with-a-long-name.example.com:7400", tables)
    names, rows = tables["replication_group_member_status"]
    state = names.index("MEMBER_STATE")
    rows[4] = (*rows[4][:state], "UNREACHABLE", *rows[4][state + 1 :])
    second = GroupStatus.from_tables(first.agent, tables)
    screen = WatchScreen(first.agent, 1.0)
    screen.answered(first)
    screen.answered(second)
    screen.failed(f"{first.agent}: unreachable: is a grstats agent listening there?", 1e9)
    console = Console(
        file=io.StringIO(), width=80, height=24, force_terminal=True, color_system="standard"
    )
    console.print(screen.render(1e9 + 7))
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    plain = re.sub(r"\x1b\[[0-9;]*m", "", shown).splitlines()
    assert len(plain) <= 24
    assert max(len(line) for line in plain) <= 80
    assert (
        plain[0].rstrip().endswith("STALE  " + time.strftime("%H:%M:%S UTC", time.gmtime(1e9 + 7)))
    )
    assert "(7 s), last answer kept" in plain[1]
    member_ids = sorted(str(row[0]) for row in rows)
    for member_id in member_ids:
        (line,) = [line for line in plain if line.startswith(member_id[:8] + " ")]
        assert "127.0.0.1:133" in line
    changed = next(line for line in shown.splitlines() if line.startswith(member_ids[4][:8]))
    assert re.search(r"\x1b\[[0-9;]*\b7\b[0-9;]*mUNREACHABLE", changed), changed
    unchanged = next(line for line in shown.splitlines() if line.startswith(member_ids[3][:8]))
    assert not re.search(r"\x1b\[[0-9;]*\b7\b[0-9;]*m", unchanged), unchanged


# -- a real terminal: tmux -------------------------------------------------------------------


def tmux_or_skip() -> str:
    """The tmux program; in CI a missing tmux fails the test instead of skipping it."""
    found = shutil.which("tmux")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("tmux is missing: .ci/run and make system-deps install it")
        pytest.skip("tmux is not installed (make system-deps installs it)")
    return found


def poll(read: Callable[[], str], condition: Callable[[str], bool], timeout_s: float) -> str:
    """Call ``read`` until ``condition`` holds for what it returns; return that."""
    last = [""]

    def holds() -> str | None:
        last[0] = read()
        return last[0] if condition(last[0]) else None

    found = wait_until(holds, timeout_s, "the screen shows it", detail=lambda: last[0])
    assert found is not None
    return found


def agents_ready(port: int) -> bool:
    """Whether the agent on ``port`` says OK with three members whose agents are heard."""
    done = subprocess.run(
        [*PYTHON, "query", "status", "--node", f"127.0.0.1:{port}", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        return False
    found = json.loads(done.stdout)
    return found["status"] == "OK" and [m["connected"] for m in found["members"]] == [True] * 3


class Tmux:
    """A tmux server of its own (a unique socket, no config) with one 80x24 session, ``watch``."""

    def __init__(self, program: str) -> None:
        self.program = program
        self.socket = f"grstats-test-{uuid.uuid4().hex[:12]}"

    def __call__(self, *args: str) -> str:
        """Run a tmux command on this server; return what it printed."""
        done = subprocess.run(
            [self.program, "-L", self.socket, "-f", os.devnull, *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return done.stdout

    def start(self, script: str) -> None:
        """Run ``script`` with bash in a new detached 80x24 session."""
        self(
            "new-session",
            "-d",
            "-s",
            "watch",
            "-x",
            "80",
            "-y",
            "24",
            f"bash -c {shlex.quote(script)}",
        )

    def screen(self) -> str:
        """The pane's text as it is shown now."""
        return self("capture-pane", "-p", "-t", "watch")

    def pane(self, formats: str) -> str:
        """The pane's ``#{...}`` variables (size, alternate screen, cursor)."""
        return self("display-message", "-p", "-t", "watch", formats).strip()

    def kill(self) -> None:
        """Stop the server and everything in it."""
        subprocess.run(
            [self.program, "-L", self.socket, "kill-server"], capture_output=True, check=False
        )


def member_rows(text: str, member_ids: list[str]) -> list[str]:
    """The one line of the screen ``text`` that starts with each member's short id."""
    rows = []
    for member_id in member_ids:
        (row,) = [line for line in text.splitlines() if line.startswith(member_id[:8] + " ")]
        rows.append(row)
    return rows


def shows_the_group(text: str, member_ids: list[str]) -> bool:
    """Whether the screen ``text`` shows the status line and a line of every member."""
    lines = text.splitlines()
    members = all(any(line.startswith(m[:8] + " ") for line in lines) for m in member_ids)
    return members and any(line.startswith("OK  ") for line in lines)


@pytest.mark.slow
def test_watch_in_tmux_redraws_goes_stale_and_quits_clean(tmp_path: Path) -> None:
    """In an 80x24 tmux pane: status, members and agent on one screen; stale when the agent stops; Ctrl-C exits 0 clean."""
    tmux = Tmux(tmux_or_skip())
    ports = free_ports(3)
    start = int(time.time())
    agents = [start_agent(index, ports, start, tmp_path) for index in range(3)]
    address, exit_file = f"127.0.0.1:{ports[0]}", tmp_path / "exit-status"
    try:
        wait_until(lambda: agents_ready(ports[0]), 60, "the first agent hears every agent")
        member_ids = [m["member_id"] for m in json.loads(grstats_json(address))["members"]]
        command = shlex.join([*PYTHON, "query", "status", "--node", address, "--watch", "0.5"])
        tmux.start(
            f"{command}; echo $? > {shlex.quote(str(exit_file))}; echo watch ended; sleep 600"
        )
        assert tmux.pane("#{pane_width}x#{pane_height}") == "80x24"

        live = poll(tmux.screen, lambda text: shows_the_group(text, member_ids), timeout_s=30)
        lines = live.splitlines()
        assert f"agent {address}" in lines[0]
        assert CLOCK.search(lines[0].rstrip())
        assert lines[1].startswith("OK  Group is ONLINE and can tolerate up to ONE failure.")
        header = next(line for line in lines if line.startswith("ID "))
        assert header.split() == [
            "ID",
            "HOST",
            "STATE",
            "ROLE",
            "LAG",
            "s",
            "APPLQ",
            "CERTQ",
            "BEHIND",
            "RO",
            "AGE",
        ]
        assert all(" ONLINE " in row for row in member_rows(live, member_ids))
        assert tmux.pane("#{alternate_on}") == "1"
        print(live)  # the 80x24 screen, for the record (pytest -s)

        agents[0].send_signal(signal.SIGTERM)
        agents[0].wait(timeout=30)
        stale = poll(tmux.screen, lambda text: "STALE since" in text, timeout_s=30)
        assert re.search(r"STALE  \d\d:\d\d:\d\d UTC$", stale.splitlines()[0].rstrip())
        assert re.search(r"STALE since \d\d:\d\d:\d\d UTC \(\d+ s\), last answer kept", stale)
        assert "unreachable" in stale.replace("\n", " ")
        assert all(" ONLINE " in row for row in member_rows(stale, member_ids))  # kept

        tmux("send-keys", "-t", "watch", "C-c")
        poll(lambda: exit_file.read_text() if exit_file.exists() else "", bool, timeout_s=30)
        assert exit_file.read_text() == "0\n"
        after = poll(tmux.screen, lambda text: "watch ended" in text, timeout_s=30)
        assert "STALE" not in after
        assert "grstats query status" not in after
        assert not any(m[:8] in after for m in member_ids)
        assert tmux.pane("#{alternate_on} #{cursor_flag}") == "0 1"
    finally:
        tmux.kill()
        for agent in agents:
            agent.terminate()
        for agent in agents:
            agent.wait(timeout=30)


def grstats_json(address: str) -> str:
    """``grstats query status --format json`` of the agent at ``address``."""
    done = subprocess.run(
        [*PYTHON, "query", "status", "--node", address, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout
