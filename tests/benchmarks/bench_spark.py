"""Scale of the Spark jobs: ingest (and the report, when it is wired) over 1, 7 and 30 days.

For each size the script makes the 9-member dataset with gen_dataset.py (once; kept in
--work and reused), then runs the real commands as separate processes, as a user would:
``grstats spark ingest`` into a new table and ``grstats spark report`` over all of it, in
local mode on every core. It prints one line per size and writes them as JSON.

Figures: rows (member rows), the ingest's own time and rows/s (the run: listing, the Spark
job, moving and committing; from its JSON summary), the wall time of the whole command (JVM
start included), the table's size on disk, and the report's wall time. Targets (issue 5):
ingest at least 200,000 member rows/s; the report over 30 days in at most 120 s.

Examples::

    python tests/benchmarks/bench_spark.py                      # 1, 7 and 30 days
    python tests/benchmarks/bench_spark.py --days 1 --work /data/bench
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

INGEST_TARGET_ROWS_S = 200_000
REPORT_TARGET_S = 120.0
HERE = Path(__file__).resolve().parent


def run(args: list[str], timeout: float) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run ``python -m grstats ARGS`` and return (wall seconds, the finished process)."""
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "grstats", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return time.monotonic() - began, done


def dataset(work: Path, days: int) -> Path:
    """The spool of ``days`` days in ``work``, generated the first time."""
    spool = work / f"spool-{days}d"
    if spool.is_dir() and any(spool.glob("*.sealed")) and (spool / ".complete").exists():
        return spool
    shutil.rmtree(spool, ignore_errors=True)
    print(f"generating {days} day(s) into {spool} ...", file=sys.stderr, flush=True)
    subprocess.run(
        [sys.executable, str(HERE / "gen_dataset.py"), "--days", str(days), "--out", str(spool)],
        check=True,
    )
    (spool / ".complete").write_text("")
    return spool


def size_of(directory: Path) -> int:
    """Bytes of the files under ``directory``."""
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())


def measure(work: Path, days: int, master: str | None, report: bool) -> dict[str, Any]:
    """Ingest (and report) ``days`` days; return the figures."""
    spool = dataset(work, days)
    table, out = work / f"table-{days}d", work / f"report-{days}d"
    shutil.rmtree(table, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    extra = ["--master", master] if master else []
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
            *extra,
        ],
        timeout=3600,
    )
    if done.returncode != 0:
        raise SystemExit(f"ingest of {days} day(s) failed:\n{done.stderr[-3000:]}")
    summary = json.loads(done.stdout)
    figures: dict[str, Any] = {
        "days": days,
        "rows": summary["rows"],
        "segments": summary["segments"]["loaded"],
        "spool_gib": round(size_of(spool) / 2**30, 2),
        "ingest_s": summary["seconds"],
        "ingest_rows_per_s": summary["rows_per_second"],
        "ingest_wall_s": round(wall, 1),
        "table_mib": round(size_of(table) / 2**20, 1),
        "report_wall_s": None,
    }
    if report:
        wall, done = run(
            [
                "spark",
                "report",
                "--table",
                str(table),
                "--out",
                str(out),
                "--format",
                "json",
                *extra,
            ],
            timeout=3600,
        )
        if done.returncode == 0:
            figures["report_wall_s"] = round(wall, 1)
        else:
            last = (done.stderr.strip().splitlines() or ["?"])[-1]
            print(f"report of {days} day(s) failed: {last}", file=sys.stderr)
    return figures


def main() -> int:
    """Measure each size and print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--days", type=int, nargs="+", default=[1, 7, 30], help="sizes (days)")
    parser.add_argument(
        "--work",
        type=Path,
        default=Path("bench-results/spark"),
        help="datasets, tables and reports (default bench-results/spark; a 30-day spool "
        "takes about 25 GB)",
    )
    parser.add_argument("--master", help="Spark master (default: local mode on every core)")
    parser.add_argument("--no-report", action="store_true", help="measure ingest only")
    parser.add_argument(
        "--json",
        type=Path,
        default=Path("bench-results/spark.json"),
        help="where to write the figures (default bench-results/spark.json)",
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    results = []
    print(
        "days | member rows | ingest s | rows/s | wall s | spool GiB | table MiB | report s",
        flush=True,
    )
    for days in args.days:
        figures = measure(args.work, days, args.master, report=not args.no_report)
        results.append(figures)
        verdict = "PASS" if figures["ingest_rows_per_s"] >= INGEST_TARGET_ROWS_S else "FAIL"
        print(
            f"{days} | {figures['rows']:,} | {figures['ingest_s']:.1f} | "
            f"{figures['ingest_rows_per_s']:,} ({verdict}) | {figures['ingest_wall_s']} | "
            f"{figures['spool_gib']} | {figures['table_mib']} | {figures['report_wall_s']}",
            flush=True,
        )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
