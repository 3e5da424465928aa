"""What ``grstats demo`` must print and leave: the one list of checks of a finished demo.

CI runs the demo once, as the README's first command in a fresh clone (``.ci/proof-demo``),
and checks that run with :func:`problems`::

    python -m tests.demo_checks STDOUT_FILE STDERR_FILE OUT_DIR WALL_S [LIMIT_S]

exits 0 when every check holds, else 1 after printing each problem. Standard library only
(besides grstats itself): the demo's virtual environment has no test tools.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from grstats.cli.demo.workdir import MARKER

PID = re.compile(r"\(pid (\d+)\)")


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
            while index < len(lines) and not lines[index].startswith("+-"):
                cells = [cell.strip() for cell in lines[index].strip("|").split("|")]
                rows.append(dict(zip(header, cells, strict=False)))
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
        except PermissionError:
            return False
        return False
    return True


class Found(list[str]):
    """The problems found so far."""

    def need(self, ok: object, what: str) -> bool:
        """Note ``what`` unless ``ok``; return whether it was."""
        if not ok:
            self.append(what)
        return bool(ok)


def problems(stdout: str, stderr: str, out: Path, wall_s: float, limit_s: float) -> list[str]:
    """Every way the finished demo's output (``stdout``, ``stderr``) and ``out`` fall short."""
    found = Found()
    _check_progress(stderr, out, wall_s, limit_s, found)
    _check_tables(stdout, stderr, found)
    report = out / "report"
    found.need(
        f"the report: {report / 'report.html'}" in stderr, "no line says where the report is"
    )
    page = report / "report.html"
    found.need(page.is_file() and page.stat().st_size > 0, f"no {page}")
    _check_summary(report / "summary.json", found)
    found.need((out / MARKER).exists(), f"no {out / MARKER}")
    return list(found)


def _check_progress(log: str, out: Path, wall_s: float, limit_s: float, found: Found) -> None:
    """The progress lines: each step said, in time, and every process ended."""
    pids = sorted({int(pid) for pid in PID.findall(log)})
    found.need(
        len(pids) >= 6, f"{len(pids)} processes named, not 3 agents, collector, ingest, report"
    )
    left = [pid for pid in pids if not gone(pid)]
    found.need(not left, f"processes left running: {left}")
    found.need("every agent lists all 3 members" in log, "no line says all agents are connected")
    found.need("serve 3 rows each: the same" in log, "no line says both agents serve the same rows")
    if found.need(
        "serves it: UNREACHABLE" in log and "serves it: OFFLINE" in log,
        "the crashed member is not shown UNREACHABLE, then OFFLINE",
    ):
        found.need(
            log.index("serves it: UNREACHABLE") < log.index("serves it: OFFLINE"),
            "OFFLINE shown before UNREACHABLE",
        )
    found.need("collector with SIGTERM after" in log, "the collector was not stopped with SIGTERM")
    found.need(re.search(r"ingested [1-9]\d* snapshots", log), "no ingest line")
    found.need(
        f"every process the demo started has ended; its output is in {out}/" in log,
        "no line says every process ended",
    )
    timed = [float(t) for t in re.findall(r"^== \[\s*([\d.]+) s\]", log, re.MULTILINE)]
    found.need(timed and timed == sorted(timed), "the progress lines' times do not rise")
    if timed:
        found.need(timed[-1] <= wall_s, f"the demo says {timed[-1]} s, longer than its {wall_s} s")
        found.need(
            timed[-1] < limit_s, f"the demo took {timed[-1]:.1f} s, not under {limit_s:.0f} s"
        )


def _check_tables(stdout: str, log: str, found: Found) -> None:
    """The tables: stats from two agents, members through the crash and the kill, the events."""
    agents = re.findall(r"replication_group_member_stats as agent (\S+) serves it", log)
    found.need(len(set(agents)) == len(agents) == 2, f"the stats tables come from agents {agents}")
    stats = vertical_tables(stdout)
    if not found.need(len(stats) >= 3, f"{len(stats)} vertical tables, not 3"):
        return
    found.need([len(t) for t in stats[:2]] == [3, 3], "the two stats tables do not hold 3 rows")
    found.need(
        [r.get("MEMBER_ID") for r in stats[0]] == [r.get("MEMBER_ID") for r in stats[1]],
        "the two agents' stats tables list other members",
    )
    members = boxed_tables(stdout)
    if not found.need(len(members) == 4, f"{len(members)} boxed tables, not members x3 and events"):
        return
    crashed = next((r for r in members[0] if r.get("MEMBER_STATE") == "UNREACHABLE"), None)
    killed = re.search(r"killed agent (\d) \(pid \d+\) with SIGKILL.*its member (\S+) keeps", log)
    if not found.need(crashed, "no UNREACHABLE row in the first members table") or not found.need(
        killed, "no agent killed with SIGKILL"
    ):
        return
    assert crashed is not None
    assert killed is not None
    after = next((r for r in members[1] if r.get("MEMBER_ID") == crashed["MEMBER_ID"]), {})
    # Its agent runs, but its server was not read for the silence: not connected.
    shown = (after.get("MEMBER_STATE"), after.get("CONNECTED"), after.get("IN_VIEW"))
    found.need(shown == ("OFFLINE", "NO", "NO"), f"the crashed member afterwards: {shown}")
    row = next((r for r in members[2] if r.get("MEMBER_ID") == killed[2]), {})
    found.need(
        (row.get("CONNECTED"), row.get("IN_VIEW")) == ("NO", "YES")
        and int(row.get("AGE_MS") or 0) >= 9000,
        f"the killed agent's member, as another agent serves it: {row}",
    )
    last = stats[2]
    found.need(
        [r.get("MEMBER_ID") for r in last] == [killed[2]]
        and last[0].get("CONNECTED") == "NO"
        and int(last[0].get("AGE_MS") or 0) >= 9000,
        f"the killed agent's last stats row: {last}",
    )
    _check_events(members[3], crashed, killed[2], {r["MEMBER_ID"] for r in members[0]}, found)


def _check_events(
    events: list[dict[str, str]],
    crashed: dict[str, str],
    killed: str,
    group: set[str],
    found: Found,
) -> None:
    """The restarted agent, with nothing remembered, lists the crash and its own kill (issue 34)."""
    found.need(
        any(
            e.get("MEMBER_ID") == crashed["MEMBER_ID"] and e.get("NEW_VALUE") == "UNREACHABLE"
            for e in events
        ),
        f"the events table lacks the crashed member turning UNREACHABLE: {events}",
    )
    silent = [e for e in events if e.get("EVENT_TYPE") == "AGENT_SILENT"]
    silent = [e for e in silent if e.get("MEMBER_ID") == killed]
    found.need(silent, f"the events table lacks the killed agent's silence: {events}")
    found.need(
        {e.get("REPORTED_BY") for e in silent} <= group - {killed},
        f"the killed agent's silence is reported by others than its peers: {silent}",
    )


def _check_summary(path: Path, found: Found) -> None:
    """summary.json names the 3 members and holds the snapshots of the run."""
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
        members, snapshots = len(summary["members"]), summary["group"]["snapshots"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        found.append(f"{path}: {exc}")
        return
    found.need(members == 3 and snapshots >= 8, f"{path}: {members} members, {snapshots} snapshots")


def main(argv: list[str]) -> int:
    """Check a finished demo; print each problem; 0 when there is none."""
    stdout, stderr, out, wall = argv[:4]
    limit = float(argv[4]) if len(argv) > 4 else float("inf")
    found = problems(
        Path(stdout).read_text(encoding="utf-8"),
        Path(stderr).read_text(encoding="utf-8"),
        Path(out),
        float(wall),
        limit,
    )
    for problem in found:
        print(f"demo: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
