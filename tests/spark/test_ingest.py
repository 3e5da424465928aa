"""spark.ingest: sealed segments load once, with every row; bad segments are set aside or refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

from grstats.collector.columns import columns_path
from grstats.collector.compression import Compression
from grstats.collector.table_log import LOG_DIR, entry_name
from grstats.spark.decode import decode_segment
from grstats.spark.delta import DELTA_LOG
from grstats.spark.ingest import IngestError, SettingsRefused, run_ingest, task_sizes
from grstats.spark.rollup import DEFAULT_SETTINGS, RollupSettings, group_rollups, member_rollups
from grstats.spark.schema import GROUP_ROLLUPS, MEMBER_ROLLUPS, MEMBER_ROWS
from grstats.spark.table import (
    QUARANTINE_DIR,
    ROLLUPS_DIR,
    STAGING_DIR,
    TableError,
    TableLog,
    data_file_name,
    read_group_rollups,
    read_member_rollups,
    read_member_rows,
)
from tests.spark.spool import expected_rows, make_record, row_key, write_spool

if TYPE_CHECKING:
    from collections.abc import Callable

    import pyarrow as pa
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
        """Running again loads nothing; after the collector seals more, only those load.

        A successful run leaves nothing that the next one calls leftovers (issue 30).
        """
        spool, table = tmp_path / "spool", tmp_path / "table"
        said: list[str] = []
        write_spool(spool, segments_of([range(10)]))
        first = run_ingest(spark, spool, table, progress=said.append)
        assert not (table / STAGING_DIR).exists()
        again = run_ingest(spark, spool, table, progress=said.append)
        assert (again.commit, again.segments_skipped, again.rows) == (None, 1, 0)
        segments = write_spool(spool, segments_of([range(10, 20), range(20, 25)]))
        third = run_ingest(spark, spool, table, progress=said.append)
        assert (third.commit, third.segments_loaded, third.segments_skipped) == (2, 2, 1)
        assert table_rows(spark, table) == expected_rows(segments)
        assert [(r.cleaned, r.finished) for r in (first, again, third)] == [(0, 0)] * 3
        assert not [message for message in said if "leftovers" in message]
        assert not (table / STAGING_DIR).exists()
        assert 0 < third.job_seconds <= third.seconds
        assert third.rows_per_second == third.rows / third.job_seconds

    def test_rows_are_partitioned_by_utc_date(self, spark: SparkSession, tmp_path: Path) -> None:
        """A segment spanning midnight UTC writes one file in each date's partition."""
        spool, table = tmp_path / "spool", tmp_path / "table"
        write_spool(spool, segments_of([range(86_398, 86_402)]))
        run_ingest(spark, spool, table)
        partitions = sorted(path.parent.name for path in (table / "data").rglob("*.parquet"))
        assert partitions == ["collected_date=2026-01-05", "collected_date=2026-01-06"]
        dates = {(r["collected_at"].date(), r["collected_date"]) for r in table_rows(spark, table)}
        assert all(at == date for at, date in dates)

    def test_columns_files_and_records_load_the_same_table(
        self, spark: SparkSession, tmp_path: Path
    ) -> None:
        """Rows and rollups read from columns files equal those of the decoded records."""
        spool = tmp_path / "spool"
        first, _, _ = write_spool(spool, segments_of([range(40), range(40, 90), range(90, 95)]))
        columns_path(first).unlink()  # sealed by a collector older than columns files
        fast = run_ingest(spark, spool, tmp_path / "fast")
        slow = run_ingest(spark, spool, tmp_path / "slow", use_columns=False)
        assert (fast.from_columns, slow.from_columns) == (2, 0)
        assert fast.to_json()["segments"]["from_columns"] == 2
        assert table_rows(spark, tmp_path / "fast") == table_rows(spark, tmp_path / "slow")
        for read in (read_member_rollups, read_group_rollups):
            fast_rollups = read(spark, tmp_path / "fast").toArrow().to_pylist()
            slow_rollups = read(spark, tmp_path / "slow").toArrow().to_pylist()
            assert sorted(fast_rollups, key=repr) == sorted(slow_rollups, key=repr)

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
        assert not columns_path(bad).exists()  # its columns file goes with it
        assert columns_path(good).exists()
        entry = json.loads((table / LOG_DIR / "00000000000000000001.json").read_text())
        assert entry["quarantined"][0]["offset"] == quarantined.offset
        assert table_rows(spark, table) == expected_rows([good, last])
        assert run_ingest(spark, spool, table).commit is None

    def test_an_upgraded_collectors_spool_loads_old_and_compressed_segments(
        self, spark: SparkSession, tmp_path: Path
    ) -> None:
        """Old plain and new compressed segments load alike; a damaged compressed one is quarantined."""
        spool, table = tmp_path / "spool", tmp_path / "table"
        old = write_spool(spool, segments_of([range(20), range(20, 30)]))
        both = write_spool(
            spool, segments_of([range(30, 60), range(60, 90), range(90, 95)]), Compression.XZ
        )
        new = both[len(old) :]
        assert [path.read_bytes()[:8] for path in both] == [b"GRSPOOL1"] * 2 + [b"GRSPOOX1"] * 3
        bad = new[1]
        bad_bytes = bad.read_bytes()[:-40]  # cut short, as a disk that lost its tail
        bad.write_bytes(bad_bytes)
        messages: list[str] = []
        result = run_ingest(spark, spool, table, progress=messages.append)
        assert (result.segments_loaded, result.from_columns, result.records) == (4, 4, 65)
        (quarantined,) = result.quarantined
        assert quarantined.name == bad.name
        assert quarantined.reason.startswith("xz segment: the compressed stream is cut short")
        assert quarantined.offset is not None
        assert quarantined.offset > 8
        assert any(str(bad) in m and f"offset {quarantined.offset}" in m for m in messages)
        assert (table / quarantined.copy).read_bytes() == bad_bytes
        assert table_rows(spark, table) == expected_rows([*old, new[0], new[2]])

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


def rollups_of(
    segments: list[Path],
    make: Callable[[pa.Table, RollupSettings], pa.Table],
    settings: RollupSettings = DEFAULT_SETTINGS,
) -> list[dict[str, Any]]:
    """The rollups ``make`` gives of each segment's decoded rows, as rows in a stable order."""
    rows = [r for path in segments for r in make(decode_segment(path).rows, settings).to_pylist()]
    return sorted(rows, key=rollup_key)


def rollup_key(row: dict[str, Any]) -> tuple[Any, ...]:
    """Partials of one member or group, in time order."""
    return (row["group_label"], row.get("member_id") or "", row["first_at"])


class TestIngestRollups:
    def test_rollup_files_are_named_by_the_commit_and_hold_the_rollups_of_the_rows(
        self, spark: SparkSession, tmp_path: Path
    ) -> None:
        """Each loaded segment's rollups land in rollups/<kind>/, named as its data file, listed in the entry."""
        spool, table = tmp_path / "spool", tmp_path / "table"
        segments = write_spool(spool, segments_of([range(90), range(90, 200), range(200, 201)]))
        run_ingest(spark, spool, table)
        (commit,) = TableLog(table).commits
        assert commit.rollup_settings == DEFAULT_SETTINGS.to_json()
        for segment, entry in zip(segments, commit.segments, strict=True):
            name = data_file_name(1, segment.name)
            kinds = sorted(Path(path).parts[1] for path, _ in entry["rollups"])
            assert kinds == ["groups", "members"]  # each segment is within one date
            assert {Path(path).name for path, _ in entry["rollups"]} == {name}
            for path, rows in entry["rollups"]:
                assert pq.read_metadata(table / path).num_rows == rows
        members = read_member_rollups(spark, table)
        groups = read_group_rollups(spark, table)
        assert (members.schema, groups.schema) == (MEMBER_ROLLUPS, GROUP_ROLLUPS)
        got = sorted(members.toArrow().to_pylist(), key=rollup_key)
        assert got == rollups_of(segments, member_rollups)
        assert sorted(groups.toArrow().to_pylist(), key=rollup_key) == rollups_of(
            segments, group_rollups
        )
        assert TableLog(table).rollup_settings() == DEFAULT_SETTINGS.to_json()

    def test_a_second_run_adds_no_rollups_twice(self, spark: SparkSession, tmp_path: Path) -> None:
        """Running again loads nothing; a later commit adds only the new segments' rollups."""
        spool, table = tmp_path / "spool", tmp_path / "table"
        write_spool(spool, segments_of([range(10)]))
        run_ingest(spark, spool, table)
        files = sorted((table / ROLLUPS_DIR).rglob("*.parquet"))
        assert run_ingest(spark, spool, table).commit is None
        assert sorted((table / ROLLUPS_DIR).rglob("*.parquet")) == files
        segments = write_spool(spool, segments_of([range(10, 20)]))  # all sealed: both
        run_ingest(spark, spool, table)
        assert len(TableLog(table).committed_rollup_files("members")) == 2
        got = sorted(read_member_rollups(spark, table).toArrow().to_pylist(), key=rollup_key)
        assert got == rollups_of(segments, member_rollups)

    def test_rollups_left_by_an_interrupted_run_are_deleted_and_loaded_once(
        self, spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Files staged by a run that died before its commit never reach rollups/; the next run deletes them."""
        spool, table = tmp_path / "spool", tmp_path / "table"
        segments = write_spool(spool, segments_of([range(30), range(30, 70)]))

        def die(self: TableLog, commit: Any) -> Path:
            raise KeyboardInterrupt  # the run stops just before its commit

        with monkeypatch.context() as patched:
            patched.setattr(TableLog, "commit", die)
            with pytest.raises(KeyboardInterrupt):
                run_ingest(spark, spool, table)
        assert not (table / ROLLUPS_DIR).exists()  # no reader of rollups/ sees them
        staged = list((table / STAGING_DIR).rglob(f"{ROLLUPS_DIR}/*/commit=1/*/*.parquet"))
        assert len(staged) == 4  # two segments, two kinds, all uncommitted
        stray = (
            table
            / ROLLUPS_DIR
            / "groups/commit=9/collected_date=2026-01-07"
            / data_file_name(9, "x.sealed")
        )
        stray.parent.mkdir(parents=True)
        stray.write_bytes(b"not committed")
        result = run_ingest(spark, spool, table)
        assert result.cleaned == 1 + 1  # the uncommitted staging directory, the stray file
        assert not stray.exists()
        assert sorted((table / ROLLUPS_DIR).rglob("*.parquet")) == sorted(
            TableLog(table).committed_rollup_files("members")
            + TableLog(table).committed_rollup_files("groups")
        )
        got = sorted(read_group_rollups(spark, table).toArrow().to_pylist(), key=rollup_key)
        assert got == rollups_of(segments, group_rollups)

    def test_a_table_loaded_before_rollups_has_no_rollup_settings(
        self, spark: SparkSession, tmp_path: Path
    ) -> None:
        """An entry whose segments lack "rollups" (an older grstats's) makes rollup_settings() None; rows still read."""
        spool, table = tmp_path / "spool", tmp_path / "table"
        write_spool(spool, segments_of([range(5), range(5, 9)]))
        run_ingest(spark, spool, table)
        older = tmp_path / "older"
        shutil.copytree(table, older)
        path = older / LOG_DIR / entry_name(1)
        entry = json.loads(path.read_text())
        for segment in entry["segments"]:
            del segment["rollups"]
        del entry["rollup_settings"]
        path.write_text(json.dumps(entry))
        for delta_log in older.rglob(DELTA_LOG):  # an older grstats wrote none
            shutil.rmtree(delta_log)
        assert TableLog(older).catch_up() == {"data": 2}
        assert TableLog(table).rollup_settings() == DEFAULT_SETTINGS.to_json()
        assert TableLog(older).rollup_settings() is None
        assert read_member_rows(spark, older).count() == 9 * 3
        assert read_member_rollups(spark, older).count() == 0
        # Its commits chose no setting: any may load into it, and it stays without one.
        write_spool(spool, segments_of([range(9, 12)]))
        result = run_ingest(spark, spool, older, rollups=RollupSettings(10_000))
        assert result.segments_loaded == 1
        assert TableLog(older).commits[-1].rollup_settings == RollupSettings(10_000).to_json()
        assert TableLog(older).rollup_settings() is None


class TestIngestSettings:
    def test_the_asked_settings_make_the_rollups_and_the_commit_records_them(
        self, spark: SparkSession, tmp_path: Path
    ) -> None:
        """Threshold 1 and max gap 10 s make the rollups; the entry and the table name them."""
        spool, table = tmp_path / "spool", tmp_path / "table"
        segments = write_spool(spool, segments_of([range(0, 90, 15), range(90, 150, 15)]))
        settings = RollupSettings(flow_control_threshold=1, max_gap_s=10.0)
        run_ingest(spark, spool, table, rollups=settings)
        entry = json.loads((table / LOG_DIR / entry_name(1)).read_text())
        assert entry["rollup_settings"] == {
            "version": 1,
            "flow_control_threshold": 1,
            "max_gap_s": 10.0,
        }
        assert TableLog(table).rollup_settings() == settings.to_json()
        members = sorted(read_member_rollups(spark, table).toArrow().to_pylist(), key=rollup_key)
        assert members == rollups_of(segments, member_rollups, settings)
        assert members != rollups_of(segments, member_rollups)
        groups = sorted(read_group_rollups(spark, table).toArrow().to_pylist(), key=rollup_key)
        assert groups == rollups_of(segments, group_rollups, settings)
        assert {r["held_s"] for r in groups} <= {0.0, 10.0, 20.0, 30.0}  # 15 s steps, 10 s each
        assert sum(r["throttling_s"] for r in groups) > 0  # member 3's queue of 2 is above 1

    @pytest.mark.parametrize(
        ("asked", "differences"),
        [
            (RollupSettings(flow_control_threshold=25_000), [("--flow-control-threshold", 25000)]),
            (RollupSettings(10_000, max_gap_s=60.0), [("--max-gap", 60)]),
            (
                RollupSettings(flow_control_threshold=1500, max_gap_s=10.0),
                [("--flow-control-threshold", 1500), ("--max-gap", 10)],
            ),
        ],
    )
    def test_other_settings_are_refused_and_nothing_is_loaded(
        self,
        spark: SparkSession,
        tmp_path: Path,
        asked: RollupSettings,
        differences: list[tuple[str, int]],
    ) -> None:
        """A table made with threshold 10000 refuses other settings before it loads or deletes anything."""
        spool, table = tmp_path / "spool", tmp_path / "table"
        write_spool(spool, segments_of([range(5)]))
        kept = RollupSettings(flow_control_threshold=10_000)
        run_ingest(spark, spool, table, rollups=kept)
        new = write_spool(spool, segments_of([range(5, 10)]))[1:]
        leftover = table / STAGING_DIR / "commit-00000000000000000002" / "x.parquet"
        leftover.parent.mkdir(parents=True)
        leftover.write_bytes(b"left by an interrupted run")
        files = sorted(p for p in table.rglob("*") if p.is_file())
        with pytest.raises(SettingsRefused) as caught:
            run_ingest(spark, spool, table, rollups=asked)
        kept_values = {"--flow-control-threshold": 10000, "--max-gap": 30}
        assert str(caught.value) == "; ".join(
            [
                *(
                    f"{flag}: {value} differs from the {kept_values[flag]} this table's rollups "
                    "were made with"
                    for flag, value in differences
                ),
                "a table keeps one setting: load into a new table",
            ]
        )
        assert isinstance(caught.value, IngestError)
        assert len(TableLog(table).commits) == 1
        assert sorted(p for p in table.rglob("*") if p.is_file()) == files  # nothing touched
        assert all(path.exists() for path in new)
        assert run_ingest(spark, spool, table, rollups=kept).segments_loaded == 1
        assert TableLog(table).rollup_settings() == kept.to_json()

    def test_a_commit_that_only_quarantined_chose_no_setting(
        self, spark: SparkSession, tmp_path: Path
    ) -> None:
        """A first run that loaded nothing (all corrupt) made no rollups: the next may choose."""
        spool, table = tmp_path / "spool", tmp_path / "table"
        (bad,) = write_spool(spool, segments_of([range(3)]))
        bad.write_bytes(bad.read_bytes()[:-7])
        first = run_ingest(spark, spool, table, rollups=RollupSettings(1500))
        assert (first.commit, first.segments_loaded, len(first.quarantined)) == (1, 0, 1)
        write_spool(spool, segments_of([range(3, 6)]))
        assert run_ingest(spark, spool, table).segments_loaded == 1
        assert TableLog(table).rollup_settings() == DEFAULT_SETTINGS.to_json()

    def test_rollups_of_another_version_are_refused(
        self, spark: SparkSession, tmp_path: Path
    ) -> None:
        """A table whose rollups a newer grstats made (version 2) takes no rollups of version 1."""
        spool, table = tmp_path / "spool", tmp_path / "table"
        write_spool(spool, segments_of([range(3)]))
        run_ingest(spark, spool, table)
        path = table / LOG_DIR / entry_name(1)
        entry = json.loads(path.read_text())
        entry["rollup_settings"]["version"] = 2
        path.write_text(json.dumps(entry))
        write_spool(spool, segments_of([range(3, 6)]))
        with pytest.raises(SettingsRefused, match=r"commit 1 made this table's rollups with \{"):
            run_ingest(spark, spool, table)
        assert len(TableLog(table).commits) == 1
