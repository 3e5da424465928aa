"""Ingest's events: staged from columns files or records alike, refused when malformed, kept once.

No Spark: the executors' part (stage_segment) and the driver's (new_events, the commit entry)
run in-process; the ground-truth report test loads a real collector's events through Spark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from grstats.collector.records import EVENT_COLUMNS
from grstats.collector.table_log import Commit
from grstats.spark.events import ARROW_EVENTS, events_table, new_events, write_events
from grstats.spark.stage import CORRUPT, LOADED, stage_segment
from grstats.spark.table import TableLog, events_file_name, now_text
from tests.spark.spool import MEMBER_IDS, T0_US, make_record, write_spool

if TYPE_CHECKING:
    from pathlib import Path

GROUP = ("orders", "8a84f397-aaaa-4aaa-8aaa-aaaaaaaaaaaa")
ONE, TWO = MEMBER_IDS[0], MEMBER_IDS[1]


def _event(second: int, member: str, kind: str, old: str, new: str) -> list[Any]:
    return [T0_US + second * 1_000_000, member, kind, old, new, "v:3", member, ""]


ELECTED = _event(41, TWO, "MEMBER_ROLE", "SECONDARY", "PRIMARY")
FAILED = _event(31, ONE, "SOURCE_FAILED", "", "")


def _with_events(record: dict[str, Any], *rows: list[Any]) -> dict[str, Any]:
    return record | {"events": {"columns": list(EVENT_COLUMNS), "rows": [list(r) for r in rows]}}


def _spool(tmp_path: Path, bad: object = None) -> Path:
    """A segment: an old record without events, the events twice (a restarted collector)."""
    second = [FAILED, ELECTED] if bad is None else [[bad, *ELECTED[1:]]]
    records = [
        make_record(1),
        _with_events(make_record(2, group=GROUP), FAILED),
        _with_events(make_record(3, group=GROUP), *second),
    ]
    (segment,) = write_spool(tmp_path / "spool", [records])
    return segment


def test_columns_file_and_records_give_the_same_events(tmp_path: Path) -> None:
    """Both ways stage each spooled event with its record's group, in record order."""
    segment = _spool(tmp_path)
    fast = stage_segment(segment, tmp_path / "a")
    slow = stage_segment(segment, tmp_path / "b", use_columns=False)
    assert (fast.status, fast.from_columns, slow.from_columns) == (LOADED, True, False)
    expected = [[*GROUP, *event] for event in (FAILED, FAILED, ELECTED)]
    assert fast.events == slow.events == expected
    assert fast.to_dict()["events"] == expected  # what travels back to the driver


def test_a_malformed_events_cell_quarantines_the_segment_naming_it(tmp_path: Path) -> None:
    """EVENT_TIME 'soon': no columns file is written and decoding names the field and value."""
    segment = _spool(tmp_path, bad="soon")
    staged = stage_segment(segment, tmp_path / "staged")
    assert (staged.status, staged.from_columns) == (CORRUPT, False)
    assert "events row 0: EVENT_TIME 'soon' is not a time" in str(staged.reason)


def test_each_event_is_committed_once(tmp_path: Path) -> None:
    """Duplicates within a load and events an earlier commit holds are dropped."""
    staged = stage_segment(_spool(tmp_path), tmp_path / "staged")
    first = new_events(events_table(staged.events), ARROW_EVENTS.empty_table())
    assert first.num_rows == 2
    again = new_events(events_table(staged.events), first)
    assert again.num_rows == 0
    later = _event(90, ONE, "SOURCE_RECOVERED", "", "")
    more = new_events(events_table([*staged.events, [*GROUP, *later]]), first)
    assert more.column("event_type").to_pylist() == ["SOURCE_RECOVERED"]


def test_a_commit_names_its_events_file_and_readers_find_it(tmp_path: Path) -> None:
    """The entry's events survive the log's JSON, and clean() keeps the file it names."""
    table = tmp_path / "table"
    events = events_table([[*GROUP, *FAILED]])
    written = write_events(table, events_file_name(1), events)
    assert written == ("events/commit=1/c00000000000000000001-events.parquet", 1)
    log = TableLog(table)
    log.commit(Commit(1, now_text(), "spool", (), (), None, (written,)))
    reread = TableLog(table)
    assert reread.commits[0].events == (written,)
    assert reread.clean() == []
    (path,) = reread.committed_event_files()
    assert pq.read_table(path).num_rows == 1
