"""Scale of the Spark jobs over a fleet: ingest and the fleet report of 50 groups x 5 members, 1 day.

The script makes the fleet's spool with ``gen_dataset.py --groups G --members M --days D``
(once; kept in --work and reused): the spool of one collector polling G groups once a second,
G x M x 86,400 member rows a day (21.6 M for the default fleet, about 27 GB). Then it runs the
real commands as separate processes, as a user would, in local mode on every core:
``grstats spark ingest`` into a new table, and ``grstats spark report`` over all of it, which
writes the fleet overview and one report per group. The spool's segments carry the columns
files the collector's writer leaves at each seal (ingest reads them instead of decoding the
records); a spool made before them is made again.

Figures: member rows; the ingest's own time and rows/s (from its JSON summary) and the wall
time of the command (JVM start included); the report's wall time (JVM start included) and its
stages, from the progress lines it prints (as bench_report.py reads them); how many groups the
report's summary.json lists in ``groups`` (it must be G). Targets (issue 16, 2 cores, local
mode): ingest at least 250,000 member rows/s; the fleet report in at most 60 s.

Examples::

    python tests/benchmarks/bench_fleet_spark.py                       # 50 x 5 x 1 day
    python tests/benchmarks/bench_fleet_spark.py --groups 3 --members 3 --days 0.01
    python tests/benchmarks/bench_fleet_spark.py --reuse-table --source rows   # report only
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

try:  # run as python -m tests.benchmarks.bench_fleet_spark (and as mypy reads it)
    from tests.benchmarks.bench_report import STAGE
    from tests.benchmarks.bench_spark import run, size_of
except ModuleNotFoundError:  # run as a script: its own folder is on sys.path
    from bench_report import STAGE  # type: ignore[import-not-found,no-redef]
    from bench_spark import run, size_of  # type: ignore[import-not-found,no-redef]

INGEST_TARGET_ROWS_S = 250_000
REPORT_TARGET_S = 60.0
MIN_MEMBERS, MAX_MEMBERS, MAX_DAYS = 3, 9, 366  # what gen_dataset.py makes
MAX_STAGE_LINES = 24
#: A stage of one group's part of a fleet report, e.g. ``group 'g07': wrote ...``.
GROUP_STAGE = re.compile(r"^group '[^']*': ")
HERE = Path(__file__).resolve().parent
#: Marks a spool the generator finished; holds the generator's JSON summary.
COMPLETE = ".complete"
#: A table's commit log: an ingest has committed into the directory.
TABLE_LOG = "_grstats"


def made_before(spool: Path) -> dict[str, Any] | None:
    """The generator's summary of ``spool`` if it finished it in an earlier run, else None."""
    complete = spool / COMPLETE
    if not (spool.is_dir() and complete.exists()):
        return None
    if not all(path.with_suffix(".columns").exists() for path in spool.glob("*.sealed")):
        return None  # made before the collector left columns files: made again
    made: dict[str, Any] = json.loads(complete.read_text())
    made["generated_now"] = False
    return made


def fleet_dataset(spool: Path, groups: int, members: int, days: float) -> dict[str, Any]:
    """Make the fleet's spool unless an earlier run did; return the generator's summary."""
    before = made_before(spool)
    if before is not None:
        return before
    shutil.rmtree(spool, ignore_errors=True)
    print(
        f"generating {groups} groups x {members} members x {days:g} day(s) into {spool} ...",
        file=sys.stderr,
        flush=True,
    )
    done = subprocess.run(
        [
            sys.executable,
            str(HERE / "gen_dataset.py"),
            *("--groups", str(groups), "--members", str(members), "--days", str(days)),
            *("--out", str(spool), "--format", "json"),
        ],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    (spool / COMPLETE).write_text(done.stdout)
    made: dict[str, Any] = json.loads(done.stdout)
    made["generated_now"] = True
    return made


def ingest(spool: Path, table: Path, master: list[str]) -> dict[str, Any]:
    """Ingest ``spool`` into the new ``table``; return its figures."""
    shutil.rmtree(table, ignore_errors=True)
    wall, done = run(
        [
            "spark",
            "ingest",
            "--spool",
            str(spool),
            "--table",
            str(table),
            "--format",
            "json",
            *master,
        ],
        timeout=4 * 3600,
    )
    if done.returncode != 0:
        raise SystemExit(f"ingest of {spool} failed:\n{done.stderr[-3000:]}")
    summary = json.loads(done.stdout)
    return {
        "rows": summary["rows"],
        "records": summary["records"],
        "segments": summary["segments"]["loaded"],
        "from_columns": summary["segments"]["from_columns"],
        "ingest_s": summary["seconds"],
        "ingest_rows_per_s": summary["rows_per_second"],
        "ingest_wall_s": round(wall, 1),
    }


def report(table: Path, out: Path, master: list[str], source: list[str]) -> dict[str, Any]:
    """Run the report over ``table`` into ``out``; return its wall time, stages and groups."""
    shutil.rmtree(out, ignore_errors=True)
    wall, done = run(
        ["spark", "report", "--table", str(table), "--out", str(out), *master, *source],
        timeout=3600,
    )
    if done.returncode != 0:
        raise SystemExit(f"report over {table} failed:\n{done.stderr[-3000:]}")
    summary = json.loads((out / "summary.json").read_text())
    stages = [
        (match["what"], float(match["at"]))
        for line in done.stderr.splitlines()
        if (match := STAGE.match(line.strip()))
    ]
    return {
        "report_wall_s": round(wall, 1),
        "report_job_s": stages[-1][1] if stages else None,
        # A report of one group has no "groups": it is the group's own summary.
        "report_groups": len(summary["groups"])
        if "groups" in summary
        else int(not summary["empty"]),
        "report_source": summary.get("settings", {}).get("source"),
        "stages": stages,
    }


def stage_lines(stages: list[tuple[str, float]]) -> list[str]:
    """The stages to print: one line for the groups' own (``group 'X': ...``), the middle elided.

    Every stage goes in --json; the table keeps the first and last ones of a long list.
    """
    own = [at for what, at in stages if GROUP_STAGE.match(what)]
    lines, summarised = [], False
    for what, at in stages:
        if not GROUP_STAGE.match(what):
            lines.append(f"    {at:7.1f} s  {what}")
        elif not summarised:
            lines.append(f"    {at:7.1f} s  {len(own)} stages of the groups, until {own[-1]:.1f} s")
            summarised = True
    if len(lines) > MAX_STAGE_LINES:
        head, tail = MAX_STAGE_LINES * 2 // 3, MAX_STAGE_LINES // 3
        skipped = len(lines) - head - tail
        lines[head:-tail] = [f"    ... {skipped} more stages (all of them in --json)"]
    return lines


def number(value: float | None) -> str:
    """``value`` with thousands separators, or - when not measured."""
    return "-" if value is None else f"{value:,}"


def verdict(passed: bool | None) -> str:
    """PASS, FAIL, or - when not measured."""
    return "-" if passed is None else "PASS" if passed else "FAIL"


def parse_args() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--groups", type=int, default=50, help="groups (default 50)")
    parser.add_argument("--members", type=int, default=5, help="members a group (default 5)")
    parser.add_argument("--days", type=float, default=1.0, help="days (default 1)")
    parser.add_argument(
        "--work",
        type=Path,
        default=Path("bench-results/fleet-spark"),
        help="dataset, table and report (default bench-results/fleet-spark; the default "
        "fleet's spool takes about 27 GB)",
    )
    parser.add_argument(
        "--reuse-table",
        action="store_true",
        help="report over the table an earlier run ingested in --work (no ingest)",
    )
    parser.add_argument("--no-report", action="store_true", help="measure the ingest only")
    parser.add_argument(
        "--source",
        metavar="SOURCE",
        help="the report's --source (auto, rollups or rows; default: not passed)",
    )
    parser.add_argument("--master", help="Spark master (default: local mode on every core)")
    parser.add_argument(
        "--json",
        type=Path,
        default=Path("bench-results/fleet_spark.json"),
        help="where to write the figures (default bench-results/fleet_spark.json)",
    )
    args = parser.parse_args()
    if args.groups < 1:
        parser.error(f"--groups: {args.groups} is not a number of groups from 1")
    if not MIN_MEMBERS <= args.members <= MAX_MEMBERS:
        parser.error(
            f"--members: {args.members} is not a number of members from {MIN_MEMBERS} to "
            f"{MAX_MEMBERS}"
        )
    if not 0 < args.days <= MAX_DAYS:
        parser.error(f"--days: {args.days:g} is not a number of days from above 0 to {MAX_DAYS}")
    if args.reuse_table and args.no_report:
        parser.error("--reuse-table with --no-report measures nothing")
    return args


def main() -> int:
    """Make or reuse the fleet, ingest it, report over it; print and write the figures."""
    args = parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    master = ["--master", args.master] if args.master else []
    source = ["--source", args.source] if args.source else []
    name = f"{args.groups}g-{args.members}m-{args.days:g}d"
    spool = args.work / f"spool-{name}"
    table, out = args.work / f"table-{name}", args.work / f"report-{name}"
    if args.reuse_table:
        if not (table / TABLE_LOG).is_dir():
            print(f"no table at {table}: run without --reuse-table first", file=sys.stderr)
            return 1
        made = made_before(spool) or {}  # the spool may be gone; the table is what counts
    else:
        made = fleet_dataset(spool, args.groups, args.members, args.days)
    figures: dict[str, Any] = {
        "groups": args.groups,
        "members": args.members,
        "days": args.days,
        "member_rows": made.get("member_rows"),
        "spool_gib": round(size_of(spool) / 2**30, 2) if spool.is_dir() else None,
        "generator": {
            key: made.get(key) for key in ("seconds", "records_per_second", "generated_now")
        },
        "ingest_target_rows_per_s": INGEST_TARGET_ROWS_S,
        "report_target_s": REPORT_TARGET_S,
    }
    if args.reuse_table:
        figures |= {"ingest_s": None, "ingest_rows_per_s": None, "ingest_wall_s": None}
    else:
        figures |= ingest(spool, table, master)
        if figures["rows"] != made["member_rows"]:
            raise SystemExit(
                f"ingest loaded {figures['rows']:,} rows of {made['member_rows']:,} member rows"
            )
    figures["table_mib"] = round(size_of(table) / 2**20, 1)
    if not args.no_report:
        figures |= report(table, out, master, source)
        if figures["report_groups"] != args.groups:
            raise SystemExit(
                f"the report lists {figures['report_groups']} groups in summary.json's "
                f"groups, not {args.groups}"
            )
    rate, wall = figures["ingest_rows_per_s"], figures.get("report_wall_s")
    figures["ingest_pass"] = None if rate is None else rate >= INGEST_TARGET_ROWS_S
    figures["report_pass"] = None if wall is None else wall <= REPORT_TARGET_S
    print(
        "groups x members x days | member rows | from columns | ingest s | rows/s | "
        "ingest wall s | report wall s | groups in report",
        flush=True,
    )
    print(
        f"{args.groups} x {args.members} x {args.days:g} | {number(figures['member_rows'])} | "
        f"{figures.get('from_columns')}/{figures.get('segments')} | "
        f"{number(figures['ingest_s'])} | {number(rate)} ({verdict(figures['ingest_pass'])}) | "
        f"{number(figures['ingest_wall_s'])} | {number(wall)} "
        f"({verdict(figures['report_pass'])}) | {number(figures.get('report_groups'))}",
        flush=True,
    )
    print(
        f"targets: ingest >= {INGEST_TARGET_ROWS_S:,} member rows/s; "
        f"report <= {REPORT_TARGET_S:g} s (wall, JVM start included)",
        flush=True,
    )
    if "stages" in figures:
        print(f"report stages (source {figures['report_source']}):", flush=True)
        for line in stage_lines(figures["stages"]):
            print(line, flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
