"""Scale of the Spark jobs: ingest (and the report, when it is wired) over 1, 7 and 30 days.

For each size the script makes the 9-member dataset with gen_dataset.py (once; kept in
--work and reused), then runs the real commands as separate processes, as a user would:
``grstats spark ingest`` into a new table and ``grstats spark report`` over all of it, in
local mode on every core. It prints one line per size and writes them as JSON.

Figures: rows (member rows), the ingest's own time and rows/s (the run: listing, the Spark
job, moving and committing; from its JSON summary), the wall time of the whole command (JVM
start included), the table's size on disk, and the report's wall time. Targets: ingest at
least 250,000 member rows/s with the rollups (issue 16; 200,000 before them, issue 5); the
report over 30 days in at most 120 s (issue 5; 30 s from the rollups, bench_report.py).

The spool's segments carry the columns files the collector's writer leaves at each seal, which
ingest reads instead of decoding the records; a dataset made before them is made again. With
``--also-decode`` each size is also ingested with ``--ignore-columns`` into a second table, in
the same run: the records decoded, as before the columns files.

Examples::

    python tests/benchmarks/bench_spark.py                      # 1, 7 and 30 days
    python tests/benchmarks/bench_spark.py --days 1 --work /data/bench --also-decode
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

INGEST_TARGET_ROWS_S = 250_000
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
    sealed = sorted(spool.glob("*.sealed")) if spool.is_dir() else []
    if (
        sealed
        and (spool / ".complete").exists()
        and all(path.with_suffix(".columns").exists() for path in sealed)
    ):
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


def ingest(spool: Path, table: Path, extra: list[str]) -> tuple[float, dict[str, Any]]:
    """Run ``grstats spark ingest`` of ``spool`` into a new ``table``; its wall time and summary."""
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
            *extra,
        ],
        timeout=3600,
    )
    if done.returncode != 0:
        raise SystemExit(f"ingest of {spool} failed:\n{done.stderr[-3000:]}")
    summary: dict[str, Any] = json.loads(done.stdout)
    return wall, summary


def measure(
    work: Path, days: int, master: str | None, *, report: bool, also_decode: bool
) -> dict[str, Any]:
    """Ingest (and report) ``days`` days; return the figures."""
    spool = dataset(work, days)
    table, out = work / f"table-{days}d", work / f"report-{days}d"
    shutil.rmtree(out, ignore_errors=True)
    extra = ["--master", master] if master else []
    decoded: dict[str, Any] | None = None
    if also_decode:
        _, decoded = ingest(spool, work / f"table-{days}d-decoded", [*extra, "--ignore-columns"])
        shutil.rmtree(work / f"table-{days}d-decoded", ignore_errors=True)
    wall, summary = ingest(spool, table, extra)
    figures: dict[str, Any] = {
        "days": days,
        "rows": summary["rows"],
        "segments": summary["segments"]["loaded"],
        "from_columns": summary["segments"]["from_columns"],
        "spool_gib": round(size_of(spool) / 2**30, 2),
        "ingest_s": summary["seconds"],
        "ingest_rows_per_s": summary["rows_per_second"],
        "ingest_wall_s": round(wall, 1),
        "table_mib": round(size_of(table) / 2**20, 1),
        "decoded_ingest_s": None if decoded is None else decoded["seconds"],
        "decoded_rows_per_s": None if decoded is None else decoded["rows_per_second"],
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
        "--also-decode",
        action="store_true",
        help="also ingest each size with --ignore-columns first (the records decoded)",
    )
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
        "days | member rows | from columns | ingest s | rows/s | wall s | spool GiB | table MiB"
        " | decoded rows/s | report s",
        flush=True,
    )
    for days in args.days:
        figures = measure(
            args.work,
            days,
            args.master,
            report=not args.no_report,
            also_decode=args.also_decode,
        )
        results.append(figures)
        verdict = "PASS" if figures["ingest_rows_per_s"] >= INGEST_TARGET_ROWS_S else "FAIL"
        print(
            f"{days} | {figures['rows']:,} | {figures['from_columns']}/{figures['segments']} | "
            f"{figures['ingest_s']:.1f} | {figures['ingest_rows_per_s']:,} ({verdict}) | "
            f"{figures['ingest_wall_s']} | {figures['spool_gib']} | {figures['table_mib']} | "
            f"{figures['decoded_rows_per_s']} | {figures['report_wall_s']}",
            flush=True,
        )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
