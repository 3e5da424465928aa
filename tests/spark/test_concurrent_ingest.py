"""Two collectors of one group, their spools ingested at the same time: each member row once.

Collector A spools seconds 0-59 of a 3-member group, collector B (started later) seconds
30-89: the same observations where both ran (the same members' rows with the same LAST_SEEN),
one collector's elsewhere. Both spools load at once (``grstats spark ingest --shared``'s
function, in two threads) into one table; the table holds each row once, A's rows where only A
ran, B's where only B ran, and DuckDB, ``deltalake`` and the report read it.
"""

from __future__ import annotations

import datetime as dt
import gc
import itertools
import json
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from grstats.cli import main
from grstats.collector.retention import prune
from grstats.collector.table_log import Commit, shared_marks, spool_app_id, write_entry
from grstats.spark import delta
from grstats.spark.decode import ARROW_MEMBER_ROWS
from grstats.spark.delta import ROW_IDENTITY, new_member_rows
from grstats.spark.report.config import ReportConfig
from grstats.spark.report.job import run_report
from grstats.spark.shared_ingest import SharedIngestError, SharedIngestResult, run_shared_ingest
from tests.spark.spool import GROUP, expected_rows, make_record, write_spool
from tests.spark.test_table_readers import delta_duckdb

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

#: The group both collectors watch: (label, GR group name).
GROUP_KEYS = ("orders", GROUP)
#: The seconds each collector spooled: B started while A ran, and ran on after it.
SECONDS = {"a": range(60), "b": range(30, 90)}
#: Records a segment holds (so each spool has six segments, loaded two to a commit).
PER_SEGMENT = 10
#: The columns that say where a row was spooled: they differ between the two collectors.
LINEAGE = ("segment", "record_offset")


def write_collector(spool: Path, seconds: range) -> list[Path]:
    """A collector's spool of ``seconds``, :data:`PER_SEGMENT` records a segment."""
    spans = [seconds[i : i + PER_SEGMENT] for i in range(0, len(seconds), PER_SEGMENT)]
    return write_spool(spool, [[make_record(s, group=GROUP_KEYS) for s in span] for span in spans])


def identity(row: dict[str, Any]) -> tuple[Any, ...]:
    """A row's identity (:data:`ROW_IDENTITY`)."""
    return tuple(row[name] for name in ROW_IDENTITY)


def without_lineage(row: dict[str, Any]) -> dict[str, Any]:
    """A row without the columns that say which spool it came from."""
    return {name: value for name, value in row.items() if name not in LINEAGE}


def table_rows(table: Path) -> list[dict[str, Any]]:
    """The rows of the table's ``data/`` Delta table, as dicts."""
    rows: list[dict[str, Any]] = DeltaTable(str(table / "data")).to_pyarrow_table().to_pylist()
    return rows


def ingest_both(root: Path, **options: Any) -> dict[str, SharedIngestResult]:
    """Ingest both spools into ``root / "table"`` at once, one thread each."""
    results: dict[str, SharedIngestResult] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def ingest(name: str) -> None:
        start.wait()
        try:
            results[name] = run_shared_ingest(root / name, root / "table", **options)
        except BaseException as exc:  # noqa: BLE001  (raised again in the test's thread)
            errors.append(exc)

    threads = [threading.Thread(target=ingest, args=(name,)) for name in SECONDS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


@pytest.fixture(name="loaded", scope="module")
def _loaded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, SharedIngestResult]]:
    """Both collectors' spools written, then ingested at the same time, two segments a commit."""
    root = tmp_path_factory.mktemp("concurrent")
    for name, seconds in SECONDS.items():
        write_collector(root / name, seconds)
    return root, ingest_both(root, segments_per_commit=2)


def test_each_row_is_loaded_once(loaded: tuple[Path, dict[str, SharedIngestResult]]) -> None:
    """Every observation of either spool is in the table exactly once."""
    root, results = loaded
    rows = table_rows(root / "table")
    spooled = {
        identity(row) for name in SECONDS for row in expected_rows(sorted_segments(root / name))
    }
    assert len(rows) == len(spooled) == 90 * 3
    assert {identity(row) for row in rows} == spooled
    assert sum(result.rows_added for result in results.values()) == len(rows)
    assert sum(result.rows_read for result in results.values()) == 2 * 60 * 3


def sorted_segments(spool: Path) -> list[Path]:
    """The spool's sealed segments in order."""
    return sorted(spool.glob("segment-*.sealed"))


def test_rows_equal_the_one_collector_that_ran(
    loaded: tuple[Path, dict[str, SharedIngestResult]],
) -> None:
    """Where one collector ran its rows are the table's, lineage too; where both ran, either's."""
    root, _ = loaded
    spooled = {name: expected_rows(sorted_segments(root / name)) for name in SECONDS}
    by_identity = {identity(row): row for row in table_rows(root / "table")}
    both = set(SECONDS["a"]) & set(SECONDS["b"])
    for name, rows in spooled.items():
        for row in rows:
            found = by_identity[identity(row)]
            second = int(row["collected_at"].timestamp()) % 86_400
            if second in both:
                assert without_lineage(found) == without_lineage(row)
            else:
                assert found == row, (name, second)


def test_each_spool_is_marked_loaded_in_the_delta_log(
    loaded: tuple[Path, dict[str, SharedIngestResult]],
) -> None:
    """Each spool's mark is its last segment, from the log's JSON, as deltalake reads it."""
    root, results = loaded
    marks = shared_marks(root / "table")
    table = DeltaTable(str(root / "table" / "data"))
    for name, result in results.items():
        app_id = spool_app_id(root / name)
        assert result.app_id == app_id
        assert marks[app_id].sequence == 6 == table.transaction_version(app_id)
        assert [upto for upto, _, _ in marks[app_id].loads] == [2, 4, 6]


def test_a_second_run_loads_nothing(
    loaded: tuple[Path, dict[str, SharedIngestResult]],
) -> None:
    """Run again, both spools skip every segment and the table keeps its version."""
    root, _ = loaded
    version = DeltaTable(str(root / "table" / "data")).version()
    again = ingest_both(root)
    assert {name: (r.segments_skipped, r.segments_loaded) for name, r in again.items()} == {
        "a": (6, 0),
        "b": (6, 0),
    }
    assert DeltaTable(str(root / "table" / "data")).version() == version


def test_duckdb_reads_the_table(loaded: tuple[Path, dict[str, SharedIngestResult]]) -> None:
    """DuckDB's delta_scan gives the rows deltalake gives, one per identity."""
    root, _ = loaded
    with delta_duckdb() as connection:
        counts = connection.sql(
            "SELECT count(*), count(DISTINCT (group_name, member_id, last_seen)) "
            "FROM delta_scan(?)",
            params=[str(root / "table" / "data")],
        ).fetchone()
    assert counts == (90 * 3, 90 * 3)


def test_the_report_runs_on_the_table(
    loaded: tuple[Path, dict[str, SharedIngestResult]], spark: SparkSession, tmp_path: Path
) -> None:
    """The report reads the shared table's member rows: one group, its three members."""
    root, _ = loaded
    run_report(ReportConfig(root / "table", tmp_path, source="rows"), spark=spark)
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    text = json.dumps(summary)
    assert GROUP in text
    assert all(member in text for member in ("db1", "db2", "db3"))


def test_prune_removes_what_a_shared_ingest_loaded(tmp_path: Path) -> None:
    """The spool's segments up to its mark count as loaded; those after it stay."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    segments = write_collector(spool, range(30))
    run_shared_ingest(spool, table)
    later = write_spool(spool, [[make_record(s, group=GROUP_KEYS) for s in range(30, 40)]])
    result = prune(spool, table)
    assert sorted(removal.name for removal in result.removed) == [s.name for s in segments]
    assert result.kept_unloaded == [later[-1].name]
    assert [path.name for path in sorted_segments(spool)] == [later[-1].name]


def test_new_member_rows_keeps_the_first_of_each_identity() -> None:
    """Rows the table holds go, a repeated identity keeps its first row, nulls match nulls."""
    rows = pa.Table.from_pylist(
        [
            row | {"segment": f"s{index}"}
            for index, row in enumerate(
                expected_like(("m1", 1), ("m2", 1), ("m1", 1), ("m3", None), ("m3", None))
            )
        ],
        schema=ARROW_MEMBER_ROWS,
    )
    present = pa.Table.from_pylist(expected_like(("m2", 1)), schema=ARROW_MEMBER_ROWS)
    kept = new_member_rows(rows, present)
    assert kept.column("segment").to_pylist() == ["s0", "s3"]


def expected_like(*members: tuple[str, int | None]) -> list[dict[str, Any]]:
    """Rows of ``(member_id, last_seen second)`` pairs, of the test's group (other cells null)."""
    return [
        {
            "collected_date": None,
            "member_id": member,
            "group_name": GROUP,
            "last_seen": None if second is None else make_record(second)["collected_at_us"],
        }
        for member, second in members
    ]


def stamped(*rows: tuple[str, int | None]) -> pa.Table:
    """Member rows of ``(member_id, LAST_SEEN µs after T0)`` pairs, ``segment`` their index."""
    base = make_record(0)["collected_at_us"]
    return pa.Table.from_pylist(
        [
            {
                "collected_date": None,
                "member_id": member,
                "group_name": GROUP,
                "last_seen": None if offset is None else base + offset,
                "segment": f"s{index}",
            }
            for index, (member, offset) in enumerate(rows)
        ],
        schema=ARROW_MEMBER_ROWS,
    )


def test_stamps_a_few_ms_apart_are_one_observation_and_a_period_apart_two() -> None:
    """Within SAME_OBSERVATION_US of a row (the table's or an earlier one) a row repeats it."""
    present = stamped(("m1", 0))
    rows = stamped(
        ("m1", 3_000),  # the table's, through another agent: a repeat
        ("m1", 300_000),  # further than the tolerance: another observation
        ("m1", 1_000_000),  # the next period's
        ("m2", 5_000),
        ("m2", 3_000),  # 2 ms before the row before it: one observation, the earlier kept
        ("m2", -996_000),  # the period before
        ("m3", -2_000),  # another member: not the table's m1
    )
    kept = new_member_rows(rows, present)
    assert kept.column("segment").to_pylist() == ["s1", "s2", "s4", "s5", "s6"]
    assert delta.SAME_OBSERVATION_US == 250_000


def through_another_agent(record: dict[str, Any], shifts_us: tuple[int, ...]) -> dict[str, Any]:
    """``record`` as read through another agent: member i's LAST_SEEN moved by ``shifts_us[i]``.

    Each agent moves a peer member's stamp by its own estimate of that member's clock offset
    (agent/known.py, ``reported``), so one observation read through two agents differs by ms.
    """
    for table in record["tables"].values():
        if "LAST_SEEN" not in table["columns"]:
            continue
        at = table["columns"].index("LAST_SEEN")
        for index, row in enumerate(table["rows"]):
            row[at] += shifts_us[index]
    return record


def test_collectors_reading_through_two_agents_load_each_row_once(tmp_path: Path) -> None:
    """B reads the group through another agent (stamps ms apart from A's): each row once."""
    root = tmp_path
    write_collector(root / "a", SECONDS["a"])
    shifts = (2_100, -3_400, 450)
    spans = [SECONDS["b"][i : i + PER_SEGMENT] for i in range(0, len(SECONDS["b"]), PER_SEGMENT)]
    write_spool(
        root / "b",
        [
            [through_another_agent(make_record(s, group=GROUP_KEYS), shifts) for s in span]
            for span in spans
        ],
    )
    ingest_both(root, segments_per_commit=2)
    rows = table_rows(root / "table")
    assert len(rows) == 90 * 3
    by_member: dict[str, list[int]] = {}
    for row in rows:
        by_member.setdefault(row["member_id"], []).append(int(row["last_seen"].timestamp() * 1e6))
    for stamps in by_member.values():
        ordered = sorted(stamps)
        assert min(b - a for a, b in itertools.pairwise(ordered)) > 900_000


def test_a_commit_that_meets_a_concurrent_one_reads_the_table_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit made between an attempt's read and its commit fails it; the retry drops its rows."""
    spool_a, spool_b, table = tmp_path / "a", tmp_path / "b", tmp_path / "table"
    write_collector(spool_a, range(10))
    write_collector(spool_b, range(10))
    run_shared_ingest(spool_a, table)  # the table exists, with A's rows
    present = delta._present
    sneaked: list[int] = []

    def present_then_commit(*args: Any) -> pa.Table:
        found = present(*args)
        if not sneaked:  # B's first attempt read the table: now A's run commits again
            sneaked.append(1)
            rows = expected_rows(sorted_segments(spool_b))
            extra = pa.Table.from_pylist(
                [row | {"last_seen": row["last_seen"].replace(year=2027)} for row in rows[:3]],
                schema=ARROW_MEMBER_ROWS,
            )
            delta.append_new(table, extra, spool_app_id(spool_a), 99)
        return found

    monkeypatch.setattr(delta, "_present", present_then_commit)
    result = run_shared_ingest(spool_b, table)
    assert (result.tries, result.rows_read, result.rows_added) == (2, 30, 0)
    assert len(table_rows(table)) == 30 + 3


def test_a_table_of_the_single_writer_ingest_is_refused(tmp_path: Path) -> None:
    """A table whose commit log has entries is not loaded by a shared ingest: naming --shared."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    write_collector(spool, range(10))
    write_entry(table, Commit(1, "2026-01-05T00:00:00+00:00", "/elsewhere", (), ()))
    with pytest.raises(SharedIngestError, match=r"^--shared: .* single-writer ingest \(1 commits"):
        run_shared_ingest(spool, table)
    assert not (table / "data").exists()


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--publish", "s3://bucket/prefix"], "--publish"),
        (["--master", "spark://h:7077"], "--master"),
        (["--max-gap", "30", "--compact-over", "8"], "--max-gap, --compact-over"),
    ],
)
def test_shared_refuses_the_options_it_does_not_take(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], named: str
) -> None:
    """--shared with an option of the single-writer ingest exits 2, naming the option."""
    (tmp_path / "spool").mkdir()
    args = ["spark", "ingest", "--shared", "--spool", str(tmp_path / "spool")]
    assert main([*args, "--table", str(tmp_path / "table"), *flags]) == 2
    assert f"--shared: {named} cannot go with it" in capsys.readouterr().err
    assert not (tmp_path / "table").exists()


def test_the_command_loads_a_spool_shared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``grstats spark ingest --shared --format json`` loads the spool and says so."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    write_collector(spool, range(20))
    capsys.readouterr()  # the spool writer's log lines
    args = ["spark", "ingest", "--shared", "--spool", str(spool), "--table", str(table)]
    assert main([*args, "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["segments"] == {"total": 2, "skipped": 0, "loaded": 2, "quarantined": 0}
    assert summary["rows"] == {"read": 60, "added": 60}
    assert summary["app_id"] == spool_app_id(spool)


def test_a_corrupt_segment_is_quarantined_and_passed(tmp_path: Path) -> None:
    """A torn segment is copied to the quarantine, counted under the mark, and pruned after."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    segments = write_collector(spool, range(30))
    torn = segments[1]
    torn.write_bytes(torn.read_bytes()[:-5])
    torn.with_suffix(".columns").unlink()  # its rows now come from its (torn) records
    result = run_shared_ingest(spool, table)
    assert result.quarantined == [torn.name]
    assert (result.rows_added, result.mark) == (20 * 3, 3)
    copy = table / "_grstats" / "quarantine" / f"{spool_app_id(spool)}-{torn.name}"
    assert copy.read_bytes() == torn.read_bytes()
    assert len(prune(spool, table).removed) == 3


def test_prune_dates_each_segment_by_the_commit_that_marked_it(tmp_path: Path) -> None:
    """Hand-written Delta log: a segment is as old as the first commit whose mark covers it."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    segments = write_collector(spool, range(30))
    log = table / "data" / "_delta_log"
    log.mkdir(parents=True)
    app_id = spool_app_id(spool)
    for version, (day, upto) in enumerate([(1, 1), (5, 2)]):
        stamp = int(dt.datetime(2026, 1, day, tzinfo=dt.UTC).timestamp() * 1000)
        actions = [
            {"commitInfo": {"timestamp": stamp}},
            {"txn": {"appId": app_id, "version": upto}},
        ]
        (log / f"{version:020d}.json").write_text("\n".join(map(json.dumps, actions)) + "\n")
    now = dt.datetime(2026, 1, 3, tzinfo=dt.UTC)
    result = prune(spool, table, keep_days=1, now=now)
    assert [(r.name, r.commit) for r in result.removed] == [(segments[0].name, 0)]
    assert result.kept_recent == [segments[1].name]
    assert result.kept_unloaded == [segments[2].name]


def test_compact_vacuums_a_lost_attempts_files_once_older_than_its_hours(tmp_path: Path) -> None:
    """Files of no Delta version go once older than --vacuum-hours, never younger; rows stay."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    write_collector(spool, range(20))
    run_shared_ingest(spool, table)
    data = table / "data"
    live = {Path(uri).name for uri in DeltaTable(str(data)).file_uris()}
    day = next(data.glob("collected_date=*"))
    old, young = day / "part-00000-lost-old.parquet", day / "part-00000-lost-young.parquet"
    for lost in (old, young):  # an attempt that met a concurrent commit left its file
        lost.write_bytes(next(day.glob("*.parquet")).read_bytes())
    two_hours_ago = time.time() - 2 * 3600
    os.utime(old, (two_hours_ago, two_hours_ago))
    args = ["spark", "compact", "--table", str(table), "--target-mib", "1"]
    assert main([*args, "--vacuum-hours", "1"]) == 0
    assert not old.exists()
    assert young.exists()
    assert len(table_rows(table)) == 20 * 3
    assert {Path(uri).name for uri in DeltaTable(str(data)).file_uris()} <= live | {
        path.name for path in day.glob("*.parquet")
    }


def test_compact_refuses_a_vacuum_under_an_hour_on_a_shared_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--vacuum-hours 0 on a table shared ingests load exits 2, naming the option; nothing goes."""
    spool, table = tmp_path / "spool", tmp_path / "table"
    write_collector(spool, range(10))
    run_shared_ingest(spool, table)
    before = sorted(path.name for path in (table / "data").rglob("*.parquet"))
    args = ["spark", "compact", "--table", str(table), "--vacuum-hours", "0"]
    assert main(args) == 2
    assert "--vacuum-hours: 0 is less than 1 for" in capsys.readouterr().err
    assert sorted(path.name for path in (table / "data").rglob("*.parquet")) == before


def test_an_attempt_that_met_a_commit_of_other_rows_commits_the_files_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit of other groups' rows between B's read and its commit: B's retry commits its files."""
    spool_a, spool_b, table = tmp_path / "a", tmp_path / "b", tmp_path / "table"
    write_collector(spool_a, range(10))
    other = ("payments", "0c0ffee0-0000-4000-8000-00000000b0b0")
    write_spool(spool_b, [[make_record(s, group=other) for s in range(10)]])
    run_shared_ingest(spool_a, table)
    present, write_rows = delta._present, delta._write_rows
    writes: list[int] = []

    def present_then_commit(*args: Any) -> pa.Table:
        found = present(*args)
        if len(writes) == 0:  # B's first attempt read the table: now A's run commits again
            writes.append(0)
            rows = expected_rows(sorted_segments(spool_a))[:3]
            later = [row | {"last_seen": row["last_seen"].replace(year=2027)} for row in rows]
            delta.append_new(table, pa.Table.from_pylist(later, schema=ARROW_MEMBER_ROWS), "x", 1)
        return found

    def counted(*args: Any) -> list[Any]:
        writes.append(1)
        return write_rows(*args)

    monkeypatch.setattr(delta, "_present", present_then_commit)
    monkeypatch.setattr(delta, "_write_rows", counted)
    result = run_shared_ingest(spool_b, table)
    assert (result.tries, result.rows_added) == (2, 30)
    assert writes.count(1) == 2  # A's sneaked commit wrote once, B once: its retry rewrote nothing
    data = table / "data"
    live = {Path(uri).resolve() for uri in DeltaTable(str(data)).file_uris()}
    assert {path.resolve() for path in data.rglob("*.parquet")} == live
    assert len(table_rows(table)) == 30 + 3 + 30


def rows_of(seconds: range) -> pa.Table:
    """Three members' rows of the test's group, one a second of ``seconds`` (other cells null)."""
    base = make_record(0)["collected_at_us"]
    day = dt.datetime.fromtimestamp(base / 1e6, dt.UTC).date()
    return pa.Table.from_pylist(
        [
            {
                "collected_date": day,
                "member_id": member,
                "group_name": GROUP,
                "last_seen": dt.datetime.fromtimestamp((base + second * 1_000_000) / 1e6, dt.UTC),
            }
            for second in seconds
            for member in ("m1", "m2", "m3")
        ],
        schema=ARROW_MEMBER_ROWS,
    )


def conflicting_append(table: Path, seconds: range, monkeypatch: pytest.MonkeyPatch) -> int:
    """Append ``seconds`` of rows while a commit sneaks in after the first read; the attempts."""
    present = delta._present
    sneaked: list[int] = []

    def present_then_commit(*args: Any) -> pa.Table:
        found = present(*args)
        if not sneaked:
            sneaked.append(1)
            delta.append_new(table, rows_of(range(-1, 0)), "grstats-spool-other", 1)
        return found

    monkeypatch.setattr(delta, "_present", present_then_commit)
    return delta.append_new(table, rows_of(seconds), "grstats-spool-test", 1).tries


def test_an_attempt_that_met_a_commit_keeps_no_rows_alive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After append_new returns, none of its batch's Arrow memory is held, without a collection.

    Keeping the conflict's exception made a cycle (its traceback, the frame, the rows) that
    only the collector's full pass freed: two concurrent ingests of a fleet's spools grew to
    12 GB and were killed by the kernel.
    """
    delta.append_new(tmp_path, rows_of(range(-2, -1)), "grstats-spool-first", 1)
    gc.collect()
    gc.disable()
    try:
        before = pa.total_allocated_bytes()
        assert conflicting_append(tmp_path, range(20_000), monkeypatch) == 2
        held = pa.total_allocated_bytes() - before
    finally:
        gc.enable()
    assert held < 100_000, held


def test_a_files_last_seen_range_in_its_stats_holds_every_stamp() -> None:
    """Delta stats keep milliseconds: the minimum is cut down and the maximum rounded up."""
    stamp = dt.datetime(2026, 1, 5, 23, 59, 59, 999_500, tzinfo=dt.UTC)
    assert delta._stat_time(stamp) == "2026-01-05T23:59:59.999Z"
    assert delta._stat_time(stamp, up=True) == "2026-01-06T00:00:00.000Z"
    exact = stamp.replace(microsecond=250_000)
    assert delta._stat_time(exact, up=True) == "2026-01-05T23:59:59.250Z"
