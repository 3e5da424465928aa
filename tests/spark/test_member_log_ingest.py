"""Ingest's GR log lines: staged from columns files or records alike, refused when malformed, kept once.

The executors' part (stage_segment) and the commit entry run in-process; one test loads two
spools holding the same lines through Spark, the session fixture's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grstats.collector.records import LOG_COLUMNS
from grstats.collector.table_log import Commit
from grstats.spark.ingest import run_ingest
from grstats.spark.member_log import log_table, write_log
from grstats.spark.stage import CORRUPT, LOADED, stage_segment
from grstats.spark.table import TableLog, log_file_name, now_text, read_log
from tests.spark.spool import MEMBER_IDS, T0_US, make_record, write_spool

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

GROUP = ("orders", "8a84f397-aaaa-4aaa-8aaa-aaaaaaaaaaaa")
ONE, TWO = MEMBER_IDS[0], MEMBER_IDS[1]
UNREACHABLE = [
    T0_US + 35_000_000,
    None,
    "Warning",
    "MY-011493",
    "Repl",
    "Plugin group_replication reported: 'Member with address db2:3306 has become unreachable.'",
    ONE,
]
REMOVED = [
    T0_US + 40_000_000,
    41,
    "Warning",
    "MY-011499",
    "Repl",
    "Plugin group_replication reported: 'Members removed from the group: db2:3306'",
    ONE,
]


def _with_log(record: dict[str, Any], *rows: list[Any]) -> dict[str, Any]:
    return record | {"log": {"columns": list(LOG_COLUMNS), "rows": [list(r) for r in rows]}}


def _records(bad: object = None) -> list[dict[str, Any]]:
    """An old record without lines, the lines twice (a restarted collector)."""
    second = [UNREACHABLE, REMOVED] if bad is None else [[bad, *REMOVED[1:]]]
    return [
        make_record(1),
        _with_log(make_record(2, group=GROUP), UNREACHABLE),
        _with_log(make_record(3, group=GROUP), *second),
    ]


def test_columns_file_and_records_give_the_same_lines(tmp_path: Path) -> None:
    """Both ways stage each spooled line with its record's group, in record order, NULLs kept."""
    (segment,) = write_spool(tmp_path / "spool", [_records()])
    fast = stage_segment(segment, tmp_path / "a")
    slow = stage_segment(segment, tmp_path / "b", use_columns=False)
    assert (fast.status, fast.from_columns, slow.from_columns) == (LOADED, True, False)
    expected = [[*GROUP, *line] for line in (UNREACHABLE, UNREACHABLE, REMOVED)]
    assert fast.log_lines == slow.log_lines == expected
    assert fast.to_dict()["log_lines"] == expected  # what travels back to the driver


def test_a_malformed_line_quarantines_the_segment_naming_it(tmp_path: Path) -> None:
    """LOGGED 'soon': no columns file is written and decoding names the field and value."""
    (segment,) = write_spool(tmp_path / "spool", [_records(bad="soon")])
    staged = stage_segment(segment, tmp_path / "staged")
    assert (staged.status, staged.from_columns) == (CORRUPT, False)
    assert "log row 0: LOGGED 'soon' is not a time" in str(staged.reason)


def test_a_commit_names_its_log_file_and_clean_keeps_it(tmp_path: Path) -> None:
    """The entry's lines file survives the log's JSON, and clean() keeps the file it names."""
    table = tmp_path / "table"
    written = write_log(table, log_file_name(1), log_table([[*GROUP, *UNREACHABLE]]))
    assert written == ("log/commit=1/c00000000000000000001-log.parquet", 1)
    TableLog(table).commit(Commit(1, now_text(), "spool", (), (), None, (), (written,)))
    reread = TableLog(table)
    assert reread.commits[0].log_lines == (written,)
    assert reread.clean() == []


def test_ingest_keeps_each_line_once_across_spools_and_runs(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Two collectors' spools of the same lines, loaded in two runs: each line is in the table once."""
    table = tmp_path / "table"
    first = write_spool(tmp_path / "one", [_records()])
    later = _with_log(make_record(9, group=GROUP), UNREACHABLE, REMOVED)
    write_spool(tmp_path / "two", [[later]])
    one = run_ingest(spark, first[0].parent, table)
    assert one.log_lines == 2
    assert one.to_json()["log_lines"] == 2
    two = run_ingest(spark, tmp_path / "two", table)
    assert two.commit == 2
    assert two.log_lines == 0  # the second spool's lines were all committed already
    lines = read_log(table)
    assert lines.num_rows == 2
    assert lines.column("error_code").to_pylist() == ["MY-011493", "MY-011499"]
    assert lines.column("thread_id").to_pylist() == [None, 41]
    assert set(lines.column("group_label").to_pylist()) == {GROUP[0]}
