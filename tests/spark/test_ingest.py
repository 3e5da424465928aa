"""spark.ingest: sealed segments load once, with every row; bad segments are set aside or refused."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from grstats.spark.ingest import IngestError, run_ingest, task_sizes
from grstats.spark.schema import MEMBER_ROWS
from grstats.spark.table import LOG_DIR, QUARANTINE_DIR, TableError, TableLog, read_member_rows
from tests.spark.spool import expected_rows, make_record, row_key, write_spool

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def table_rows(spark: SparkSession, table: Path) -> list[dict[str, Any]]:
    """The committed rows of ``table``, as Python values, in spool order."""
    frame = read_member_rows(spark, table)
    assert frame.schema == MEMBER_ROWS
    return sorted(frame.toArrow().to_pylist(), key=row_key)


def segments_of(seconds: list[range]) -> list[list[dict[str, Any]]]:
    """One segment per range of seconds after T0."""
    return [[make_record(second) for second in span] for span in seconds]


class TestIngest:
    def test_every_row_loads_once(self, spark: SparkSession, tmp_path: Path) -> None:
        """Each member row of each sealed segment is in the table once, as the spool holds it."""
        spool, table = tmp_path / "spool", tmp_path / "table"
        segments = write_spool(spool, segments_of([range(50), range(50, 80), range(80, 81)]))
        result = run_ingest(spark, spool, table)
        assert (result.commit, result.segments_loaded, result.records) == (1, 3, 81)
        assert result.rows == 81 * 3
        assert table_rows(spark, table) == expected_rows(segments)

    def test_two_groups_spools_load_into_one_table_exactly_once(
        self, spark: SparkSession, tmp_path: Path
    ) -> None:
        """Two collectors' spools (same segment names) load once each, rows under their group."""
        east, west, table = tmp_path / "east", tmp_path / "west", tmp_path / "table"
        east_segments = write_spool(
            east, [[make_record(s, group=("east", "g-e")) for s in range(10)]]
        )
        west_segments = write_spool(
            west, [[make_record(s, group=("west", "g-w")) for s in range(10, 15)]]
        )
        assert [p.name for p in east_segments] == [p.name for p in west_segments]
        for _ in range(2):
            for spool in (east, west):
                run_ingest(spark, spool, table)
        assert len(TableLog(table).commits) == 2

        def key(row: dict[str, Any]) -> tuple[Any, ...]:
            return (*row_key(row), row["group_label"])

        assert sorted(table_rows(spark, table), key=key) == sorted(
            expected_rows(east_segments) + expected_rows(west_segments), key=key
        )
        rows = read_member_rows(spark, table)
        counts = {r.group_label: r["count"] for r in rows.groupBy("group_label").count().collect()}
        assert counts == {"east": 10 * 3, "west": 5 * 3}

    def test_tasks_of_several_segments_load_each_segment_once(
        self, spark: SparkSession, tmp_path: Path
    ) -> None:
        """14 segments on 2 cores run as 6 tasks of 2 or 3; every segment's rows load once."""
        spool, table = tmp_path / "spool", tmp_path / "table"
        segments = write_spool(spool, segments_of([range(i * 5, i * 5 + 5) for i in range(14)]))
        assert task_sizes(14, spark.sparkContext.defaultParallelism) == [3, 3, 2, 2, 2, 2]
        result = run_ingest(spark, spool, table)
        assert (result.segments_loaded, result.records, result.files) == (14, 70, 14)
        assert table_rows(spark, table) == expected_rows(segments)
        assert sorted(TableLog(table).known_segments()) == [path.name for path in segments]

    def test_a_second_run_loads_only_new_segments(
        self, spark: SparkSession, tmp_path: Path
    ) -> None:
        """Running again loads nothing; after the collector seals more, only those load."""
        spool, table = tmp_path / "spool", tmp_path / "table"
        write_spool(spool, segments_of([range(10)]))
        run_ingest(spark, spool, table)
        again = run_ingest(spark, spool, table)
        assert (again.commit, again.segments_skipped, again.rows) == (None, 1, 0)
        segments = write_spool(spool, segments_of([range(10, 20), range(20, 25)]))
        third = run_ingest(spark, spool, table)
        assert (third.commit, third.segments_loaded, third.segments_skipped) == (2, 2, 1)
        assert table_rows(spark, table) == expected_rows(segments)

    def test_rows_are_partitioned_by_utc_date(self, spark: SparkSession, tmp_path: Path) -> None:
        """A segment spanning midnight UTC writes one file in each date's partition."""
        spool, table = tmp_path / "spool", tmp_path / "table"
        write_spool(spool, segments_of([range(86_398, 86_402)]))
        run_ingest(spark, spool, table)
        partitions = sorted(path.parent.name for path in (table / "data").rglob("*.parquet"))
        assert partitions == ["collected_date=2026-01-05", "collected_date=2026-01-06"]
        dates = {(r["collected_at"].date(), r["collected_date"]) for r in table_rows(spark, table)}
        assert all(at == date for at, date in dates)

    def test_a_corrupt_segment_is_quarantined_and_the_others_load(
        self, spark: SparkSession, tmp_path: Path
    ) -> None:
        """The corrupt segment is copied aside, removed from the spool and named in the commit."""
        spool, table = tmp_path / "spool", tmp_path / "table"
        good, bad, last = write_spool(spool, segments_of([range(5), range(5, 10), range(10, 12)]))
        bad_bytes = bad.read_bytes()[:-7]  # torn last frame
        bad.write_bytes(bad_bytes)
        messages: list[str] = []
        result = run_ingest(spark, spool, table, progress=messages.append)
        assert result.segments_loaded == 2
        (quarantined,) = result.quarantined
        assert quarantined.name == bad.name
        assert "torn frame" in quarantined.reason
        assert any(str(bad) in m and f"offset {quarantined.offset}" in m for m in messages)
        assert quarantined.copy == f"{QUARANTINE_DIR}/c{1:020d}-{bad.name}"
        assert (table / quarantined.copy).read_bytes() == bad_bytes
        assert not bad.exists()
        entry = json.loads((table / LOG_DIR / "00000000000000000001.json").read_text())
        assert entry["quarantined"][0]["offset"] == quarantined.offset
        assert table_rows(spark, table) == expected_rows([good, last])
        assert run_ingest(spark, spool, table).commit is None

    def test_corrupt_segments_of_one_name_from_two_spools_are_both_kept(
        self, spark: SparkSession, tmp_path: Path
    ) -> None:
        """Each spool's corrupt segment of the same name gets its own copy, named by its commit."""
        table, copies = tmp_path / "table", []
        for label in ("east", "west"):
            spool = tmp_path / label
            _, bad = write_spool(
                spool,
                [
                    [make_record(s, group=(label, label)) for s in r]
                    for r in (range(3), range(3, 6))
                ],
            )
            torn = bad.read_bytes()[:-7]
            bad.write_bytes(torn)
            (quarantined,) = run_ingest(spark, spool, table).quarantined
            assert (table / quarantined.copy).read_bytes() == torn
            assert not bad.exists()
            copies.append(quarantined.copy)
        assert copies[0].rsplit("-", 2)[-2:] == copies[1].rsplit("-", 2)[-2:]  # one segment name
        assert copies[0] != copies[1]
        log = TableLog(table)
        assert [c.spool for c in log.commits] == [str(tmp_path / "east"), str(tmp_path / "west")]
        assert (table / QUARANTINE_DIR) not in {p.parent for p in log.clean()}  # both are named
        assert sorted(p.name for p in (table / QUARANTINE_DIR).iterdir()) == sorted(
            copy.rsplit("/", 1)[-1] for copy in copies
        )

    def test_an_unknown_schema_version_stops_the_run(
        self, spark: SparkSession, tmp_path: Path
    ) -> None:
        """A record of schema 2 fails the run naming version and file; nothing is committed."""
        spool, table = tmp_path / "spool", tmp_path / "table"
        _, newer = write_spool(spool, [[make_record(0)], [make_record(1) | {"schema": 2}]])
        with pytest.raises(IngestError, match="record schema 2 is not a known version") as caught:
            run_ingest(spark, spool, table)
        assert newer.name in str(caught.value)
        assert TableLog(table).commits == []
        assert list(table.rglob("*.parquet")) == []
        assert read_member_rows(spark, table).count() == 0

    def test_a_loaded_segment_that_changed_is_an_error(
        self, spark: SparkSession, tmp_path: Path
    ) -> None:
        """A segment the table loaded with another size means another spool: refused, named."""
        spool, table = tmp_path / "spool", tmp_path / "table"
        (segment,) = write_spool(spool, segments_of([range(3)]))
        run_ingest(spark, spool, table)
        segment.write_bytes(segment.read_bytes()[:-1])
        with pytest.raises(IngestError, match="commit 1 loaded this segment"):
            run_ingest(spark, spool, table)

    def test_a_directory_of_other_files_is_not_a_table(
        self, spark: SparkSession, tmp_path: Path
    ) -> None:
        """--table pointing at someone's files is refused before anything is deleted."""
        spool, table = tmp_path / "spool", tmp_path / "table"
        write_spool(spool, segments_of([range(2)]))
        (table / "data").mkdir(parents=True)
        (table / "data" / "precious.txt").write_text("keep me")
        with pytest.raises(TableError, match="not a grstats table"):
            run_ingest(spark, spool, table)
        assert (table / "data" / "precious.txt").exists()


class TestTaskSizes:
    @pytest.mark.parametrize(
        ("segments", "cores", "sizes"),
        [
            (0, 2, []),
            (1, 2, [1]),
            (5, 2, [1, 1, 1, 1, 1]),
            (12, 2, [2, 2, 2, 2, 2, 2]),
            (24, 2, [4, 4, 4, 4, 4, 4]),
            (25, 2, [4, 4, 4, 4, 3, 3, 3]),
            (24, 8, [1] * 24),
            (720, 2, [4] * 180),
        ],
    )
    def test_a_few_segments_a_task_and_every_core_busy(
        self, segments: int, cores: int, sizes: list[int]
    ) -> None:
        """At most 4 consecutive segments a task, at least 3 tasks a core, sizes within one."""
        assert task_sizes(segments, cores) == sizes
