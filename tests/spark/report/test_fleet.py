"""A report of several groups in one table: per-group figures, the fleet overview, --group."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from grstats.spark.ingest import run_ingest
from grstats.spark.report.config import ReportConfig
from grstats.spark.report.fleet import trouble
from grstats.spark.report.job import ReportInputError, run_report
from tests.spark.spool import MEMBER_IDS, make_record, write_spool

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

#: Both groups have the same member ids, the case where rows of two groups would mix.
EAST, WEST = ("east", "aaaaaaaa-0000-0000-0000-00000000000e"), ("west", "")


def _records(group: tuple[str, str], seconds: range, **cells: Any) -> list[dict[str, Any]]:
    return [make_record(s, group=group, **cells) for s in seconds]


@dataclass
class Reports:
    fleet: dict[str, Any]
    fleet_dir: Path
    alone: dict[str, dict[str, Any]]  #: label -> summary of a table holding only that group
    chosen: dict[str, Any]  #: --group east over the fleet's table


@pytest.fixture(name="reports", scope="module")
def _reports(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Reports:
    base = tmp_path_factory.mktemp("fleet")
    # east: 60 s, member 2 UNREACHABLE from 20 s to 30 s; west: 40 s, a deep applier queue
    east = [
        *_records(EAST, range(20)),
        *(_unreachable(make_record(s, group=EAST)) for s in range(20, 30)),
        *_records(EAST, range(30, 60)),
    ]
    west = _records(WEST, range(100, 140), COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE=5000)
    write_spool(base / "east", [east[:30], east[30:]])
    write_spool(base / "west", [west])
    for _ in range(2):  # ingested twice: nothing twice
        for name in ("east", "west"):
            run_ingest(spark, base / name, base / "table")
    alone = {}
    for label, name in ((EAST[0], "east"), (WEST[0], "west")):
        run_ingest(spark, base / name, base / f"only-{name}")
        config = ReportConfig(base / f"only-{name}", base / f"report-{name}")
        alone[label] = run_report(config, spark=spark).summary
    fleet = run_report(ReportConfig(base / "table", base / "fleet"), spark=spark).summary
    chosen = run_report(
        ReportConfig(base / "table", base / "chosen", group="east"), spark=spark
    ).summary
    return Reports(fleet, base / "fleet", alone, chosen)


def _unreachable(record: dict[str, Any]) -> dict[str, Any]:
    """The record with its third member UNREACHABLE."""
    members = record["tables"]["replication_group_members"]
    state = members["columns"].index("MEMBER_STATE")
    members["rows"][2][state] = "UNREACHABLE"
    return record


class TestFleetReport:
    def test_summary_lists_each_group_with_its_own_figures(self, reports: Reports) -> None:
        """Each groups entry has the figures of a report of a table holding that group alone."""
        entries = {entry["group_label"]: entry for entry in reports.fleet["groups"]}
        assert sorted(entries) == ["east", "west"]
        assert entries["east"]["group_name"] == EAST[1]
        assert entries["west"]["group_name"] == ""
        for label, alone in reports.alone.items():
            for key in ("group", "members", "unreachable_episodes", "throttling", "range"):
                assert entries[label][key] == alone[key], (label, key)
        assert entries["east"]["group"]["snapshots"] == 60
        assert entries["west"]["group"]["snapshots"] == 40
        assert [m["member_id"] for m in entries["west"]["members"]] == sorted(MEMBER_IDS)
        assert len(entries["east"]["unreachable_episodes"]) == 1
        assert entries["west"]["unreachable_episodes"] == []
        assert reports.fleet["range"]["snapshots"] == 100
        assert "group" not in reports.fleet

    def test_each_group_has_its_own_report_directory(self, reports: Reports) -> None:
        """groups/LABEL/ holds the group's report.html, summary.json and tables."""
        for entry in reports.fleet["groups"]:
            directory = reports.fleet_dir / entry["dir"]
            own = json.loads((directory / "summary.json").read_text(encoding="utf-8"))
            assert own["group"] == entry["group"]
            assert (directory / "report.html").is_file()
            for where in entry["tables"].values():
                assert (reports.fleet_dir / where["csv"]).is_file()

    def test_the_page_starts_with_the_ranked_overview(self, reports: Reports) -> None:
        """The overview ranks the group in trouble first, from its own figures; links to sections."""
        page = (reports.fleet_dir / "report.html").read_text(encoding="utf-8")
        overview = page[page.index("Fleet overview") : page.index("<section")]
        entries = {entry["group_label"]: entry for entry in reports.fleet["groups"]}
        east, west = trouble(entries["east"]), trouble(entries["west"])
        assert east.unreachable_s == 10.0  # member 3 from 20 s to 30 s
        assert west.unreachable_s == 0.0
        # Member 2 is never connected in either group (make_record): 59 s of east's, 39 of west's.
        assert (east.not_connected_s, west.not_connected_s) == (59.0, 39.0)
        assert overview.index("#group-east") < overview.index("#group-west")
        east_row = overview[overview.index("#group-east") : overview.index("#group-west")]
        assert '<td class="bad">10.0</td>' in east_row  # its UNREACHABLE seconds
        assert "href='groups/west/report.html'" in overview
        assert "<section id='group-east'>" in page
        assert "<section id='group-west'>" in page
        assert page.count("<svg") == 6  # each group's three charts

    def test_each_page_names_its_group(self, reports: Reports) -> None:
        """A group's page and summary.json name it by its label, then GR's group name if known."""
        base = reports.fleet_dir.parent
        pages = {
            "alone": base / "report-east" / "report.html",
            "in the fleet": reports.fleet_dir / "groups" / "east" / "report.html",
        }
        for where, path in pages.items():
            page = path.read_text(encoding="utf-8")
            heading = f"<h1>Group Replication report: group east ({EAST[1]})</h1>"
            assert heading in page, where
        west = (base / "report-west" / "report.html").read_text(encoding="utf-8")
        assert "<h1>Group Replication report: group west</h1>" in west  # no GR name known
        for summary in (reports.alone["east"], reports.chosen):
            assert (summary["group_label"], summary["group_name"]) == EAST
        assert (reports.alone["west"]["group_label"], reports.alone["west"]["group_name"]) == WEST
        fleet = (reports.fleet_dir / "report.html").read_text(encoding="utf-8")
        assert f"<h2>Group east ({EAST[1]})</h2>" in fleet
        assert "<h2>Group west</h2>" in fleet

    def test_group_restricts_the_report_to_one_group(self, reports: Reports) -> None:
        """--group east gives the single-group report of east, as if the table held only east."""
        assert "groups" not in reports.chosen
        for key in ("group", "members", "unreachable_episodes", "range", "worst_minutes"):
            assert reports.chosen[key] == reports.alone["east"][key], key

    def test_an_unknown_group_names_it_and_the_labels_in_range(
        self, spark: SparkSession, reports: Reports, tmp_path: Path
    ) -> None:
        """A label not in the range is refused, naming it and listing the labels that are."""
        table = reports.fleet_dir.parent / "table"
        with pytest.raises(ReportInputError, match=r"--group: 'north' .*'east', 'west'"):
            run_report(ReportConfig(table, tmp_path, group="north"), spark=spark)
