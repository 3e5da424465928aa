"""The datasets' Delta tables (grstats.spark.delta), without Spark: catching up with the log.

Commits are made by hand (as tests/spark/test_table.py's), their files written with pyarrow
at the paths the commits name; :func:`catch_up` must add each file to its dataset's Delta
table exactly once, however often it runs and wherever a run stopped, marked with the Delta
protocol's application transaction (PROTOCOL.md, "Transaction Identifiers").
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from grstats.collector.table_log import Commit
from grstats.spark import delta
from grstats.spark.decode import ARROW_MEMBER_ROWS
from grstats.spark.delta import APP_ID, catch_up, dataset_files, held_commit
from grstats.spark.events import ARROW_EVENTS
from grstats.spark.schema import PARTITION_COLUMN

if TYPE_CHECKING:
    from pathlib import Path

ROW_SCHEMA = ARROW_MEMBER_ROWS.remove(ARROW_MEMBER_ROWS.get_field_index(PARTITION_COLUMN))


def write_rows(table: Path, relative: str, rows: int) -> None:
    """A data file of ``rows`` null member rows at ``relative`` (the files hold no date)."""
    path = table / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({field.name: pa.nulls(rows, field.type) for field in ROW_SCHEMA}), path)


def commit(number: int, days: list[str], events: int = 0, table: Path | None = None) -> Commit:
    """Commit ``number``: one segment with a data file of 2 rows on each of ``days``."""
    files: list[tuple[str, int]] = [
        (f"data/commit={number}/collected_date={day}/c{number}.parquet", 2) for day in days
    ]
    event_files: tuple[tuple[str, int], ...] = ()
    if table is not None:
        for path, rows in files:
            write_rows(table, path, rows)
        if events:
            relative = f"events/commit={number}/c{number}-events.parquet"
            (table / relative).parent.mkdir(parents=True)
            pq.write_table(
                pa.table({f.name: pa.nulls(events, f.type) for f in ARROW_EVENTS}),
                table / relative,
            )
            event_files = ((relative, events),)
    segment: dict[str, Any] = {
        "name": f"segment-{number}.sealed",
        "bytes": 10,
        "records": 1,
        "rows": 2 * len(files),
        "files": files,
        "rollups": [],
    }
    return Commit(number, "2026-01-05T00:00:00+00:00", "/spool", (segment,), (), None, event_files)


def rows_of(table: Path, dataset: str) -> int:
    """The rows delta-rs reads from the dataset's current version."""
    return int(DeltaTable(str(table / dataset)).to_pyarrow_table().num_rows)


def test_catch_up_adds_each_commit_once_and_marks_how_far(tmp_path: Path) -> None:
    """Two runs over growing logs: every file once, the txn version the last commit, dates kept."""
    one = commit(1, ["2026-01-05"], events=3, table=tmp_path)
    two = commit(2, ["2026-01-05", "2026-01-06"], table=tmp_path)
    assert catch_up(tmp_path, [one]) == {"data": 1, "events": 1}
    assert catch_up(tmp_path, [one]) == {}  # held already
    assert catch_up(tmp_path, [one, two]) == {"data": 2}
    assert held_commit(tmp_path, "data") == 2
    assert held_commit(tmp_path, "events") == 1  # commit 2 added no event
    assert held_commit(tmp_path, "rollups/members") == 0  # no file yet: no Delta table
    assert DeltaTable(str(tmp_path / "data")).transaction_version(APP_ID) == 2
    assert rows_of(tmp_path, "data") == 6
    assert rows_of(tmp_path, "events") == 3
    dates = DeltaTable(str(tmp_path / "data")).to_pyarrow_table().column(PARTITION_COLUMN)
    assert sorted(dates.to_pylist()) == [dt.date(2026, 1, 5)] * 4 + [dt.date(2026, 1, 6)] * 2


def test_dataset_files_are_the_current_version_of_the_days_asked(tmp_path: Path) -> None:
    """dataset_files lists the Delta table's files, pruned by partition date; none without a table."""
    commits = [commit(1, ["2026-01-05"], table=tmp_path), commit(2, ["2026-01-06"], table=tmp_path)]
    assert dataset_files(tmp_path, "data") == []
    catch_up(tmp_path, commits)
    assert dataset_files(tmp_path, "data") == sorted(
        tmp_path / path for c in commits for path in c.files
    )
    sixth = dataset_files(tmp_path, "data", first_day=dt.date(2026, 1, 6))
    assert sixth == [tmp_path / commits[1].files[0]]
    fifth = dataset_files(tmp_path, "data", last_day=dt.date(2026, 1, 5))
    assert fifth == [tmp_path / commits[0].files[0]]
    assert dataset_files(tmp_path, "rollups/groups") == []


def test_a_run_stopped_between_datasets_is_finished_without_doubling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed after data/'s Delta commit, before events/', the next run adds events/ alone."""
    commits = [commit(1, ["2026-01-05"], events=2, table=tmp_path)]
    real = delta._commit

    def dies_at_events(table: Path, dataset: str, *args: Any) -> None:
        if dataset == "events":
            raise KeyboardInterrupt
        real(table, dataset, *args)

    monkeypatch.setattr(delta, "_commit", dies_at_events)
    with pytest.raises(KeyboardInterrupt):
        catch_up(tmp_path, commits)
    monkeypatch.undo()
    assert (held_commit(tmp_path, "data"), held_commit(tmp_path, "events")) == (1, 0)
    assert catch_up(tmp_path, commits) == {"events": 1}
    assert (rows_of(tmp_path, "data"), rows_of(tmp_path, "events")) == (2, 2)


def test_a_broken_delta_log_is_an_error_naming_the_dataset(tmp_path: Path) -> None:
    """A Delta log that cannot be read is a DeltaTableError with the dataset's path."""
    catch_up(tmp_path, [commit(1, ["2026-01-05"], table=tmp_path)])
    (entry,) = (tmp_path / "data" / "_delta_log").glob("*.json")
    entry.write_text("{not json\n")
    with pytest.raises(delta.DeltaTableError, match=str(tmp_path / "data")):
        held_commit(tmp_path, "data")
