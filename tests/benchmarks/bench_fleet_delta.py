"""A fleet's day in the Delta table: 1,000 members as today's collectors spool it, ingested and reported.

Issue 44, point 6. The fleet (``--members``, 1,000 by default, in groups of 5) is spooled for
``--hours`` (24) by ``--collectors`` collectors (2) sharded by group, as ``gen_fleet.py``
writes it: each through the collector's own ``SpoolWriter`` at its defaults (xz segments with
columns files), once (kept in ``--work``, marked complete, reused by later runs). Then, as a
user runs them, each a process of its own, in local mode on every core:

1. **the single-writer ingest**: ``grstats spark ingest`` of each collector's spool in turn
   into one new table (member rows, rollups, events; its defaults, the compaction after
   each commit included);
2. **the shared ingest**: ``grstats spark ingest --shared`` of every spool at once into a
   second new table (member rows only, no Spark; each row once);
3. ``grstats spark compact`` of the first table, then the files and bytes of each table's
   datasets per member-day;
4. the **fleet report** over the first table (every group) and the **group report** of one
   group (``--group g0000``), each timed end to end (JVM start included).

Figures: member rows, rows/s of each ingest (the ingest's own figure and its wall time), files
and bytes per member-day, report times. Goal (issue 44): at least 500,000 member rows/s on 2
cores. It exits 0 when a goal is missed (it prints FAIL) and 1 when a step fails.

Examples::

    python -m tests.benchmarks.bench_fleet_delta                         # 1,000 members, 1 day
    python -m tests.benchmarks.bench_fleet_delta --members 20 --hours 0.5 --work /tmp/fd
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from grstats.spark.table import DATASETS

try:  # run as python -m tests.benchmarks.bench_fleet_delta (and as mypy reads it)
    from tests.benchmarks.bench_spark import run, size_of
    from tests.benchmarks.gen_fleet import generate
except ModuleNotFoundError:  # run as a script: its own folder is on sys.path
    from bench_spark import run, size_of  # type: ignore[import-not-found,no-redef]
    from gen_fleet import generate  # type: ignore[import-not-found,no-redef]

#: Issue 44's goal for the ingest on 2 cores, member rows a second.
INGEST_GOAL_ROWS_S = 500_000
#: Marks a fleet the generator finished; holds its JSON summary.
COMPLETE = ".complete"


def fleet_dir(work: Path, members: int, hours: float, collectors: int) -> Path:
    """Where the fleet's spools are kept in ``work``."""
    return work / f"fleet-{members}m-{hours:g}h-{collectors}c"


def fleet(work: Path, members: int, hours: float, collectors: int, jobs: int) -> dict[str, Any]:
    """The fleet's spools in ``work / "fleet-..."``: generated unless an earlier run finished them."""
    spools = fleet_dir(work, members, hours, collectors)
    complete = spools / COMPLETE
    if complete.exists():
        made: dict[str, Any] = json.loads(complete.read_text())
        made["generated_now"] = False
        return made
    shutil.rmtree(spools, ignore_errors=True)
    print(f"generating {members} members x {hours:g} h into {spools} ...", file=sys.stderr)
    made = generate(spools, members=members, hours=hours, collectors=collectors, jobs=jobs)
    complete.write_text(json.dumps(made, indent=2))
    made["generated_now"] = True
    return made


def grstats(args: list[str], what: str) -> tuple[float, str]:
    """Run ``grstats ARGS``; its wall time and stdout (a failure ends the benchmark)."""
    wall, done = run(args, timeout=6 * 3600)
    if done.returncode != 0:
        raise SystemExit(f"{what} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return wall, done.stdout


def single_writer(spools: list[Path], table: Path) -> dict[str, Any]:
    """Each spool in turn into the new ``table``; the summed figures of the runs."""
    shutil.rmtree(table, ignore_errors=True)
    runs = []
    for spool in spools:
        args = ["spark", "ingest", "--spool", str(spool), "--table", str(table)]
        wall, out = grstats([*args, "--format", "json"], f"ingest of {spool}")
        summary = json.loads(out)
        runs.append(
            {"wall_s": round(wall, 1), "seconds": summary["seconds"], "rows": summary["rows"]}
        )
        print(
            f"  ingest of {spool.name}: {summary['rows']:,} rows in {wall:.0f} s", file=sys.stderr
        )
    rows, wall = sum(r["rows"] for r in runs), sum(r["wall_s"] for r in runs)
    seconds = sum(r["seconds"] for r in runs)
    return {
        "rows": rows,
        "ingest_s": round(seconds, 1),
        "wall_s": round(wall, 1),
        "rows_per_s": round(rows / seconds) if seconds else None,
        "rows_per_wall_s": round(rows / wall) if wall else None,
        "runs": runs,
    }


def shared(spools: list[Path], table: Path) -> dict[str, Any]:
    """Every spool's shared ingest at once into the new ``table``; their figures together."""
    shutil.rmtree(table, ignore_errors=True)
    began = time.monotonic()
    processes = [
        subprocess.Popen(
            [
                *(sys.executable, "-m", "grstats", "spark", "ingest", "--shared"),
                *("--spool", str(spool), "--table", str(table), "--format", "json"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for spool in spools
    ]
    summaries = []
    for spool, process in zip(spools, processes, strict=True):
        out, err = process.communicate(timeout=6 * 3600)
        if process.returncode != 0:
            raise SystemExit(f"shared ingest of {spool} failed:\n{err[-3000:]}")
        summaries.append(json.loads(out))
    wall = time.monotonic() - began
    added = sum(s["rows"]["added"] for s in summaries)
    return {
        "rows_read": sum(s["rows"]["read"] for s in summaries),
        "rows": added,
        "wall_s": round(wall, 1),
        "rows_per_wall_s": round(added / wall) if wall else None,
        "commits": sum(s["commits"] for s in summaries),
        "tries": sum(s["tries"] for s in summaries),
    }


def files_of(table: Path, member_days: float) -> dict[str, Any]:
    """The Parquet files and bytes of each dataset of ``table``, and per member-day in all."""
    found: dict[str, Any] = {}
    for name in DATASETS:
        found_files = (table / name).rglob("*.parquet") if (table / name).is_dir() else ()
        parts = [path for path in found_files if "_delta_log" not in path.parts]  # no checkpoints
        found[name] = {"files": len(parts), "bytes": sum(p.stat().st_size for p in parts)}
    files = sum(d["files"] for d in found.values())
    data_bytes = sum(d["bytes"] for d in found.values())
    return {
        "datasets": found,
        "files": files,
        "bytes": data_bytes,
        "table_bytes": size_of(table),
        "files_per_member_day": round(files / member_days, 3),
        "mb_per_member_day": round(data_bytes / member_days / 1e6, 2),
    }


def live_files(table: Path, dataset: str) -> int:
    """The files of ``dataset``'s current Delta version (what a reader reads)."""
    from deltalake import DeltaTable  # noqa: PLC0415  (the spark extra's)

    return len(DeltaTable(str(table / dataset)).file_uris())


def report(table: Path, out: Path, extra: list[str], what: str) -> dict[str, Any]:
    """``grstats spark report`` over ``table`` into the new ``out``; its wall time and groups."""
    shutil.rmtree(out, ignore_errors=True)
    wall, _ = grstats(["spark", "report", "--table", str(table), "--out", str(out), *extra], what)
    summary = json.loads((out / "summary.json").read_text())
    groups = len(summary["groups"]) if "groups" in summary else int(not summary["empty"])
    print(f"  {what}: {wall:.0f} s, {groups} groups", file=sys.stderr)
    return {
        "wall_s": round(wall, 1),
        "groups": groups,
        "source": summary.get("settings", {}).get("source"),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line, checked."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--members", type=int, default=1000, help="members (default 1000)")
    parser.add_argument("--hours", type=float, default=24.0, help="hours (default 24)")
    parser.add_argument("--collectors", type=int, default=2, help="collectors (default 2)")
    parser.add_argument("--jobs", type=int, default=2, help="generator processes (default 2)")
    parser.add_argument(
        "--work",
        type=Path,
        default=Path("bench-results/fleet-delta"),
        help="spools, tables and reports (default bench-results/fleet-delta; the default "
        "fleet's spools take about 3 GB, each table about as much)",
    )
    parser.add_argument("--no-shared", action="store_true", help="skip the shared ingest")
    parser.add_argument(
        "--json",
        type=Path,
        default=Path("bench-results/fleet_delta.json"),
        help="where to write the figures (default bench-results/fleet_delta.json)",
    )
    args = parser.parse_args(argv)
    if args.members < 5 or args.members % 5:
        parser.error(f"--members: {args.members} is not a number of groups of 5 members")
    if not 0 < args.hours <= 24:
        parser.error(f"--hours: {args.hours:g} is not a number of hours from above 0 to 24")
    if not 1 <= args.collectors <= args.members // 5:
        parser.error(f"--collectors: {args.collectors} is not from 1 to {args.members // 5}")
    return args


def main(argv: list[str] | None = None) -> int:
    """Make or reuse the fleet, ingest it both ways, compact, report; print and write the figures."""
    args = parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    made = fleet(args.work, args.members, args.hours, args.collectors, args.jobs)
    folder = fleet_dir(args.work, args.members, args.hours, args.collectors)
    spools = [folder / Path(spool["spool"]).name for spool in made["spools"]]
    member_days = args.members * args.hours / 24
    figures: dict[str, Any] = {
        "members": args.members,
        "hours": args.hours,
        "collectors": args.collectors,
        "member_rows": made["member_rows"],
        "generator": {
            k: made.get(k) for k in ("seconds", "member_rows_per_second", "generated_now")
        },
        "spool_bytes": made["spool_bytes"],
        "spool_mb_per_member_day": round(made["spool_bytes"] / member_days / 1e6, 2),
        "spool_segments": made["segments"],
        "ingest_goal_rows_per_s": INGEST_GOAL_ROWS_S,
    }
    table = args.work / "table"
    print("single-writer ingest, each spool in turn ...", file=sys.stderr)
    figures["single_writer"] = single_writer(spools, table)
    if figures["single_writer"]["rows"] != made["member_rows"]:
        raise SystemExit(f"the ingest loaded {figures['single_writer']['rows']:,} rows")
    figures["single_writer"]["after_ingest"] = files_of(table, member_days)
    wall, _ = grstats(["spark", "compact", "--table", str(table), "--vacuum-hours", "0"], "compact")
    figures["single_writer"]["compact_wall_s"] = round(wall, 1)
    figures["single_writer"]["after_compact"] = files_of(table, member_days)
    figures["single_writer"]["live_data_files"] = live_files(table, "data")
    if not args.no_shared:
        print("shared ingest, every spool at once ...", file=sys.stderr)
        figures["shared"] = shared(spools, args.work / "table-shared")
        figures["shared"]["files"] = files_of(args.work / "table-shared", member_days)
        figures["shared"]["live_data_files"] = live_files(args.work / "table-shared", "data")
    figures["fleet_report"] = report(table, args.work / "fleet-report", [], "fleet report")
    figures["group_report"] = report(
        table, args.work / "group-report", ["--group", "g0000"], "group report of g0000"
    )
    single = figures["single_writer"]
    print(
        f"{args.members} members x {args.hours:g} h: {made['member_rows']:,} member rows; "
        f"spool {figures['spool_mb_per_member_day']} MB a member-day",
        flush=True,
    )
    verdict = "PASS" if (single["rows_per_s"] or 0) >= INGEST_GOAL_ROWS_S else "FAIL"
    print(
        f"single-writer ingest: {single['rows_per_s']:,} rows/s ({verdict}: goal "
        f"{INGEST_GOAL_ROWS_S:,}), {single['rows_per_wall_s']:,} rows/s of wall time; after "
        f"compact {single['after_compact']['files_per_member_day']} files and "
        f"{single['after_compact']['mb_per_member_day']} MB a member-day",
        flush=True,
    )
    if "shared" in figures:
        both = figures["shared"]
        print(
            f"shared ingest: {both['rows_per_wall_s']:,} rows/s of wall time, "
            f"{both['commits']} commits in {both['tries']} attempts, "
            f"{both['files']['files_per_member_day']} files and "
            f"{both['files']['mb_per_member_day']} MB a member-day",
            flush=True,
        )
    print(
        f"fleet report {figures['fleet_report']['wall_s']} s ({figures['fleet_report']['groups']}"
        f" groups), group report {figures['group_report']['wall_s']} s",
        flush=True,
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
