"""Time ``grstats spark report`` over ingested tables of 1, 7 and 30 days, stage by stage.

The tables are the ones ``bench_spark.py`` ingests from ``gen_dataset.py``'s spools
(``WORK/table-<N>d``): a 9-member group at one snapshot a second, so 777,600 member rows a
day. Each run is the real command in its own process, in local mode on every core, as a user
runs it: the wall time includes starting the JVM. The report's progress lines on stderr give
the stages (one sort of every member's snapshots into runs; the per-snapshot group table;
percentiles and figures; writing the tables, summary.json and report.html). Targets (issue
30, one model of the figures): the 30-day report from the per-minute rollups in at most 20 s;
at another flow-control threshold (``--flow-control-threshold 20000``: the rollups cannot
answer, so partials are made from the member rows) in at most 60 s. ``--source rows --source
rollups`` alternates the two in each run, so both are measured in the same conditions.

Examples::

    python tests/benchmarks/bench_spark.py --no-report      # makes WORK/table-{1,7,30}d
    python tests/benchmarks/bench_report.py                  # WORK = bench-results/spark
    python tests/benchmarks/bench_report.py --table /data/table-30d --runs 3
    python tests/benchmarks/bench_report.py --days 30 --source rows --source rollups --runs 2
    python tests/benchmarks/bench_report.py --days 30 --flow-control-threshold 20000
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: The wall-time target of the 30-day report, by source (issue 30).
REPORT_TARGET_S = {"rows": 60.0, "rollups": 20.0}
STAGE = re.compile(r"^report: (?P<what>.*) \((?P<at>[0-9.]+) s\)$")


def report_once(
    table: Path, out: Path, source: str, threshold: int | None = None
) -> dict[str, Any]:
    """Run the report over ``table`` into ``out`` from ``source``; return its times and size."""
    shutil.rmtree(out, ignore_errors=True)
    began = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "grstats",
            "spark",
            "report",
            "--table",
            str(table),
            "--out",
            str(out),
            "--format",
            "json",
            "--source",
            source,
            *(() if threshold is None else ("--flow-control-threshold", str(threshold))),
        ],
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    wall = time.monotonic() - began
    if done.returncode != 0:
        raise SystemExit(f"report over {table} failed:\n{done.stderr[-3000:]}")
    summary = json.loads(done.stdout)
    stages = [
        (match["what"], float(match["at"]))
        for line in done.stderr.splitlines()
        if (match := STAGE.match(line.strip()))
    ]
    job_s = stages[-1][1] if stages else None
    return {
        "member_rows": sum(member["snapshots"] for member in summary["members"]),
        "members": len(summary["members"]),
        "days": round(summary["group"]["observed_s"] / 86_400, 2),
        "wall_s": round(wall, 1),
        "job_s": job_s,
        "source": summary["settings"]["source"],
        "stages": stages,
    }


def main() -> int:
    """Time the report over each table and print one line per table."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--work",
        type=Path,
        default=Path("bench-results/spark"),
        help="where bench_spark.py keeps table-<N>d (default bench-results/spark)",
    )
    parser.add_argument("--days", type=int, nargs="+", default=[1, 7, 30], help="sizes (days)")
    parser.add_argument(
        "--table", type=Path, action="append", help="time this table instead (repeatable)"
    )
    parser.add_argument("--runs", type=int, default=1, help="runs per table (default 1)")
    parser.add_argument(
        "--source",
        action="append",
        choices=("auto", "rollups", "rows"),
        help="the report's --source, repeatable: each run times every one, in turn (default auto)",
    )
    parser.add_argument(
        "--flow-control-threshold",
        type=int,
        help="the report's threshold (another than the table's rollups: made from the rows)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=Path("bench-results/report.json"),
        help="where to write the figures (default bench-results/report.json)",
    )
    args = parser.parse_args()
    tables = args.table or [args.work / f"table-{days}d" for days in args.days]
    missing = [str(table) for table in tables if not table.is_dir()]
    if missing:
        print(f"no table at {', '.join(missing)}: run bench_spark.py first", file=sys.stderr)
        return 1
    print(
        "days | source | member rows | report wall s (JVM included) | job s | 30-day target",
        flush=True,
    )
    results = []
    for table in tables:
        for run in range(args.runs):
            for source in args.source or ["auto"]:
                figures = report_once(
                    table,
                    table.with_name(f"{table.name}-report"),
                    source,
                    args.flow_control_threshold,
                )
                figures["table"] = str(table)
                figures["run"] = run + 1
                results.append(figures)
                target = REPORT_TARGET_S[figures["source"]]
                verdict = "PASS" if figures["wall_s"] <= target else "FAIL"
                print(
                    f"{figures['days']} | {figures['source']} | {figures['member_rows']:,} | "
                    f"{figures['wall_s']} | {figures['job_s']} | <= {target:g} s: {verdict}",
                    flush=True,
                )
                for what, at in figures["stages"]:
                    print(f"    {at:7.1f} s  {what}", flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
