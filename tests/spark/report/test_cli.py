"""``grstats spark report``: arguments, an empty range, and the same report on a real cluster."""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
from typing import TYPE_CHECKING, Any

import pytest

from grstats.cli import main
from grstats.spark.ingest import run_ingest
from grstats.spark.report.config import ReportConfig
from grstats.spark.report.job import TABLE_NAMES, run_report
from tests.spark.cluster import run_on_cluster
from tests.spark.spool import make_record, write_spool

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

    from tests.spark.cluster import StandaloneCluster


def _cells(second: int) -> dict[str, Any]:
    """Ten minutes of a group with an UNREACHABLE spell, a backlog and a varying lag."""
    cells: dict[str, Any] = {
        "APPLIER_LAG_SECONDS": (second * 7 % 23) / 10,
        "COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE": 30_000 if 400 <= second < 420 else second,
    }
    if 200 <= second < 215:
        cells["MEMBER_STATE"] = "UNREACHABLE"
    return cells


@pytest.fixture(name="table", scope="module")
def _table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("report-cli")
    records = [make_record(second, **_cells(second)) for second in range(600)]
    write_spool(base / "spool", [records[:300], records[300:]])
    run_ingest(spark, base / "spool", base / "table")
    return base / "table"


class TestArguments:
    def test_help_explains_the_outputs_and_the_options(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--help names what is written and every option."""
        with pytest.raises(SystemExit) as done:
            main(["spark", "report", "--help"])
        assert done.value.code == 0
        text = capsys.readouterr().out
        for needle in ("report.html", "summary.json", "--from", "--to", "--master", "--max-gap"):
            assert needle in text
        assert "--flow-control-threshold" in text

    @pytest.mark.parametrize(
        ("flag", "value"),
        [
            ("--from", "yesterday"),
            ("--to", "2026-13-01"),
            ("--flow-control-threshold", "0"),
            ("--max-gap", "-1"),
        ],
    )
    def test_a_bad_value_is_refused_naming_the_flag_and_the_value(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
    ) -> None:
        """Exit 2 and one line that names the flag and what was given."""
        code = main(
            ["spark", "report", "--table", str(tmp_path), "--out", str(tmp_path), flag, value]
        )
        assert code == 2
        error = capsys.readouterr().err
        assert flag in error
        assert value in error

    def test_an_end_before_the_start_is_refused(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--to must come after --from."""
        args = ["--from", "2026-01-05T12:00:00Z", "--to", "1767571200"]
        assert (
            main(["spark", "report", "--table", str(tmp_path), "--out", str(tmp_path), *args]) == 2
        )
        assert "--to" in capsys.readouterr().err

    def test_a_directory_that_is_not_a_table_is_refused(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Exit 2 naming the directory, before any Spark starts."""
        code = main(["spark", "report", "--table", str(tmp_path), "--out", str(tmp_path / "out")])
        assert code == 2
        assert str(tmp_path) in capsys.readouterr().err


@pytest.mark.spark
class TestReport:
    def test_an_empty_range_says_so_and_exits_0(
        self, table: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A range without snapshots prints that it is empty and writes a summary saying so."""
        out = tmp_path / "out"
        code = main(
            ["spark", "report", "--table", str(table), "--out", str(out), "--from", "2030-01-01"]
        )
        assert code == 0
        assert "no snapshots" in capsys.readouterr().out
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        assert summary["empty"] is True
        assert summary["range"]["from"] == "2030-01-01T00:00:00Z"
        assert "no snapshots" in (out / "report.html").read_text(encoding="utf-8")

    def test_the_range_cuts_the_rows(
        self, spark: SparkSession, table: Path, tmp_path: Path
    ) -> None:
        """--from and --to keep [from, to): 100 of the 600 snapshots, one UNREACHABLE spell."""
        config = ReportConfig(
            table,
            tmp_path / "out",
            start=_at(150),
            end=_at(250),
        )
        summary = run_report(config, spark=spark).summary
        assert summary["range"]["snapshots"] == 100
        assert [e["duration_s"] for e in summary["unreachable_episodes"]] == [15.0] * 3


def _at(second: int) -> dt.datetime:
    """The moment ``second`` seconds after the test spool's T0."""
    return dt.datetime(2026, 1, 5, tzinfo=dt.UTC) + dt.timedelta(seconds=second)


def _same(left: Any, right: Any) -> bool:
    """Equal, floats within 1e-9 relative (sums may add up in another order on a cluster)."""
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(
            _same(a, b) for a, b in zip(left, right, strict=True)
        )
    if isinstance(left, float) or isinstance(right, float):
        return math.isclose(float(left), float(right), rel_tol=1e-9, abs_tol=1e-9)
    return bool(left == right)


def _csv(path: Path) -> list[list[Any]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return [[_number(cell) for cell in row] for row in csv.reader(handle)]


def _number(cell: str) -> Any:
    try:
        return float(cell) if any(c in cell for c in ".e") and cell[0] in "-0123456789" else cell
    except ValueError:
        return cell


@pytest.mark.spark
@pytest.mark.slow
# Both Python jobs run on the executors: ``auto`` on this 10-minute table makes partials from
# the member rows at the 5 s grain its charts need; ``rollups`` stitches the stored ones.
@pytest.mark.parametrize("case", [("auto", "rows", 5), ("rollups", "rollups", 60)])
def test_the_report_on_a_standalone_cluster_equals_local_mode(
    spark: SparkSession,
    spark_cluster: StandaloneCluster,
    table: Path,
    tmp_path: Path,
    case: tuple[str, str, int],
) -> None:
    """--master spark://... writes the same summary.json and tables as local mode."""
    source, read, bucket_s = case
    on_cluster, local = tmp_path / "on-cluster", tmp_path / "local"
    done = run_on_cluster(
        spark_cluster,
        "report",
        "--table",
        str(table),
        "--out",
        str(on_cluster),
        "--source",
        source,
    )
    printed = json.loads(done.stdout)
    run_report(ReportConfig(table, local, source=source), spark=spark)
    cluster_summary = json.loads((on_cluster / "summary.json").read_text(encoding="utf-8"))
    local_summary = json.loads((local / "summary.json").read_text(encoding="utf-8"))
    assert _same(printed, cluster_summary)
    assert _same(cluster_summary, local_summary)
    assert cluster_summary["settings"]["source"] == read
    assert cluster_summary["settings"]["chart_bucket_s"] == bucket_s
    assert cluster_summary["range"]["snapshots"] == 600
    assert len(cluster_summary["unreachable_episodes"]) == 3
    for name in TABLE_NAMES:
        assert _same(
            _csv(on_cluster / "tables" / f"{name}.csv"), _csv(local / "tables" / f"{name}.csv")
        ), name
    executors = list((spark_cluster.logs.parent / "work").rglob("stderr"))
    assert executors, "no executor ran on the worker"
