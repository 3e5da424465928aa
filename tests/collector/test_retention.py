"""collector.retention and grstats spool prune: only segments a committed entry names go."""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import threading
from typing import TYPE_CHECKING

import pytest

from grstats.collector.columns import columns_path
from grstats.collector.retention import RetentionError, logged_segments, prune
from grstats.collector.table_log import LOCK_NAME, LOG_DIR, Commit
from tests.collector.table_log import commit, entry_text
from tests.inprocess import run_main
from tests.spark.spool import make_record, write_spool

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

OPEN = "segment-00000000000000000005.open"


@pytest.fixture(name="spool")
def _spool(tmp_path: Path) -> Path:
    """A spool of four sealed segments, each with its columns file, and one open segment."""
    spool = tmp_path / "spool"
    write_spool(spool, [[make_record(s)] for s in range(4)])
    (spool / OPEN).write_bytes(b"GRSPOOL1")
    return spool


@pytest.fixture(name="table")
def _table(tmp_path: Path) -> Path:
    """An empty table directory."""
    table = tmp_path / "table"
    table.mkdir()
    return table


def sealed(spool: Path) -> list[Path]:
    """The spool's sealed segments, by sequence."""
    return sorted(spool.glob("segment-*.sealed"))


def names(spool: Path) -> set[str]:
    """Every file name in the spool."""
    return {path.name for path in spool.iterdir()}


@contextlib.contextmanager
def ingest_lock(table: Path) -> Iterator[None]:
    """Hold the table's lock as a running ingest does (``grstats.spark.table.TableLock``).

    It waits for a prune's shared hold to end, where ingest would stop (a run retried later).
    """
    (table / LOCK_NAME).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(table / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class TestPrune:
    def test_loaded_segments_go_with_their_columns_files(self, spool: Path, table: Path) -> None:
        """Segments a commit of this spool loaded are removed, each with its columns file."""
        first, second, third, fourth = sealed(spool)
        assert all(columns_path(path).exists() for path in (first, second, third, fourth))
        commit(table, 1, spool.resolve(), [first, second])
        result = prune(spool, table)
        assert [r.name for r in result.removed] == [first.name, second.name]
        assert result.kept_unloaded == [third.name, fourth.name]
        assert result.open == [OPEN]
        left = names(spool)
        for gone in (first, second):
            assert gone.name not in left
            assert columns_path(gone).name not in left
        for kept in (third, fourth):
            assert {kept.name, columns_path(kept).name} <= left
        assert {OPEN, ".lock", ".last-segment"} <= left

    def test_a_segment_no_commit_names_is_never_removed(self, spool: Path, table: Path) -> None:
        """Without a log, or with a log of other segments, every segment and file stays."""
        before = names(spool)
        assert prune(spool, table).removed == []
        commit(table, 1, spool.resolve(), [])
        assert prune(spool, table).removed == []
        assert names(spool) == before

    def test_an_open_segment_is_never_removed(self, spool: Path, table: Path) -> None:
        """An .open segment stays even when a commit names a segment of that name."""
        opened = spool / OPEN
        commit(table, 1, spool.resolve(), [opened])  # a log that names it (ingest never does)
        result = prune(spool, table)
        assert result.removed == []
        assert result.open == [OPEN]
        assert opened.exists()

    def test_an_uncommitted_entry_counts_for_nothing(self, spool: Path, table: Path) -> None:
        """A log entry still a .json.tmp (not renamed into place: not committed) removes nothing."""
        first, second, *_ = sealed(spool)
        commit(table, 1, spool.resolve(), [first])
        pending = table / LOG_DIR / f"{2:020d}.json.tmp"
        pending.write_text(entry_text(2, spool.resolve(), [second]), encoding="utf-8")
        result = prune(spool, table)
        assert [r.name for r in result.removed] == [first.name]
        assert second.exists()
        assert columns_path(second).exists()
        pending.rename(pending.with_suffix(""))  # the commit point
        assert [r.name for r in prune(spool, table).removed] == [second.name]

    def test_nothing_is_removed_while_an_ingest_holds_the_table(
        self, spool: Path, table: Path
    ) -> None:
        """During an ingest (lock held, files staged, entry not renamed yet) nothing goes."""
        first, second, *_ = sealed(spool)
        commit(table, 1, spool.resolve(), [first])
        staging = table / "_grstats" / "staging" / f"commit-{2:020d}"
        staging.mkdir(parents=True)
        (table / LOG_DIR / f"{2:020d}.json.tmp").write_text(
            entry_text(2, spool.resolve(), [second]), encoding="utf-8"
        )
        before = names(spool)
        with ingest_lock(table):
            result = prune(spool, table)
        assert result.ingest_running
        assert result.removed == []
        assert names(spool) == before
        assert [r.name for r in prune(spool, table).removed] == [first.name]
        assert second.exists()

    def test_concurrent_commits_never_expose_an_unloaded_segment(
        self, tmp_path: Path, table: Path
    ) -> None:
        """While an ingest thread commits the even segments one by one, prune removes no odd one."""
        spool = tmp_path / "many"
        write_spool(spool, [[make_record(s)] for s in range(24)])
        paths = sealed(spool)
        loaded, never = paths[::2], paths[1::2]
        done = threading.Event()

        def ingest() -> None:
            try:
                for number, path in enumerate(loaded, start=1):
                    with ingest_lock(table):
                        commit(table, number, spool.resolve(), [path])
            finally:
                done.set()

        worker = threading.Thread(target=ingest)
        worker.start()
        runs = 0
        while not done.is_set() or runs == 0:
            prune(spool, table)
            runs += 1
            assert all(path.exists() and columns_path(path).exists() for path in never)
        worker.join()
        prune(spool, table)
        assert not any(path.exists() or columns_path(path).exists() for path in loaded)
        assert all(path.exists() and columns_path(path).exists() for path in never)

    def test_only_this_spools_commits_count(self, spool: Path, table: Path) -> None:
        """Segments of the same names loaded from another spool stay; the summary names it."""
        first, *_ = sealed(spool)
        commit(table, 1, "/elsewhere/spool", [first])
        result = prune(spool, table)
        assert result.removed == []
        assert result.other_spools == ["/elsewhere/spool"]
        assert [r.name for r in prune(spool, table, ingested_as="/elsewhere/spool").removed] == [
            first.name
        ]

    def test_a_segment_of_another_size_is_kept_and_reported(self, spool: Path, table: Path) -> None:
        """A segment whose size is not the one the commit recorded stays, named in the result."""
        first, second, *_ = sealed(spool)
        commit(table, 1, spool.resolve(), [first, second])
        with first.open("ab") as file:
            file.write(b"x")
        result = prune(spool, table)
        assert result.mismatched == [first.name]
        assert [r.name for r in result.removed] == [second.name]
        assert first.exists()

    def test_quarantined_segments_go_too(self, spool: Path, table: Path) -> None:
        """A segment a commit quarantined (its copy is in the table) is removed like a loaded one."""
        first, *_ = sealed(spool)
        commit(table, 1, spool.resolve(), quarantined=[first])
        (removed,) = prune(spool, table).removed
        assert (removed.name, removed.quarantined) == (first.name, True)

    def test_keep_days_keeps_recent_loads(self, spool: Path, table: Path) -> None:
        """--keep-days keeps a segment until its commit is that old."""
        first, second, *_ = sealed(spool)
        now = dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)
        commit(table, 1, spool.resolve(), [first], committed_at=now - dt.timedelta(days=3))
        commit(table, 2, spool.resolve(), [second], committed_at=now - dt.timedelta(hours=20))
        result = prune(spool, table, keep_days=1, now=now)
        assert [r.name for r in result.removed] == [first.name]
        assert result.kept_recent == [second.name]

    def test_a_dry_run_removes_nothing(self, spool: Path, table: Path) -> None:
        """--dry-run lists what would go and leaves every file."""
        first, *_ = sealed(spool)
        commit(table, 1, spool.resolve(), [first])
        before = names(spool)
        result = prune(spool, table, dry_run=True)
        assert [r.name for r in result.removed] == [first.name]
        assert names(spool) == before

    def test_a_columns_file_left_behind_is_removed(self, spool: Path, table: Path) -> None:
        """A loaded segment's columns file whose segment is gone (a stopped prune) goes too."""
        first, second, *_ = sealed(spool)
        commit(table, 1, spool.resolve(), [first])
        first.unlink()
        columns_path(second).rename(spool / "segment-00000000000000000009.columns")
        result = prune(spool, table)
        assert result.orphan_columns == [columns_path(first).name]
        assert not columns_path(first).exists()
        assert (spool / "segment-00000000000000000009.columns").exists()  # not named: kept


class TestLog:
    def test_a_gap_in_the_log_is_refused(self, spool: Path, table: Path) -> None:
        """A log that misses a commit is broken: prune stops, naming the file."""
        first, *_ = sealed(spool)
        commit(table, 2, spool.resolve(), [first])
        with pytest.raises(RetentionError, match="the log misses commit 1"):
            prune(spool, table)
        assert first.exists()

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            ({"format": 2}, "log format 2 is not 1"),
            ({"commit": 7}, "holds commit 7, not 1"),
            ({"spool": 3}, "spool: 3 is not a str"),
            ({"committed_at": "soon"}, "committed_at: 'soon' is not an ISO 8601 time"),
            ({"committed_at": "2026-01-05T00:00:00"}, "has no UTC offset"),
            ({"segments": {}}, r"segments: \{\} is not a list"),
            ({"quarantined": [3]}, "quarantined: 3 is not an object"),
            ({"segments": [{"name": "s", "bytes": "9"}]}, "segments: bytes: '9' is not a int"),
        ],
    )
    def test_a_bad_entry_names_its_field_and_value(
        self, spool: Path, table: Path, change: dict[str, object], message: str
    ) -> None:
        """An entry this reader does not understand stops prune; the message names field and value."""
        path = commit(table, 1, spool.resolve(), sealed(spool)[:1])
        entry = json.loads(path.read_text(encoding="utf-8"))
        path.write_text(json.dumps(entry | change), encoding="utf-8")
        with pytest.raises(RetentionError, match=message):
            logged_segments(table, str(spool.resolve()))

    def test_the_reader_equals_the_tables_own(self, spool: Path, table: Path) -> None:
        """Entries written by TableLog.commit read as TableLog.known_segments reads them."""
        from grstats.spark import table as spark_table  # noqa: PLC0415  (Spark's side)

        first, second, third, fourth = sealed(spool)
        log = spark_table.TableLog(table)
        here, other = str(spool.resolve()), "/other/spool"
        for number, spool_name, loaded, quarantined in (
            (1, here, [first, second], [third]),
            (2, other, [first, fourth], []),
            (3, here, [], [fourth]),
            (4, here, [second], []),  # named again: the last commit wins in both
        ):
            entries = tuple(
                {"name": p.name, "bytes": p.stat().st_size, "records": 1, "rows": 3, "files": []}
                for p in loaded
            )
            set_aside = tuple(
                {"name": p.name, "bytes": 5, "offset": 8, "reason": "bad", "copy": "q"}
                for p in quarantined
            )
            log.commit(Commit(number, spark_table.now_text(), spool_name, entries, set_aside, None))
        for spool_name in (here, other):
            theirs = spark_table.TableLog(table).known_segments(spool_name)
            mine = logged_segments(table, spool_name).segments
            assert set(mine) == set(theirs)
            for name, entry in theirs.items():
                assert (mine[name].bytes, mine[name].commit) == (entry["bytes"], entry["commit"])
                assert mine[name].quarantined == ("copy" in entry)
        assert logged_segments(table, here).spools == {here, other}


class TestCommand:
    def test_prune_removes_the_loaded_and_prints_a_summary(
        self, spool: Path, table: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Grstats spool prune removes what the log names and says what it kept."""
        first, second, *_ = sealed(spool)
        commit(table, 1, spool.resolve(), [first])
        done = run_main(["spool", "prune", "--spool", str(spool), "--table", str(table)], capsys)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("removed 1 loaded segments")
        assert "kept 3 not loaded yet, 0 loaded within --keep-days, 1 open" in done.stdout
        assert f"removed {first.name} (commit 1)" in done.stdout
        assert not first.exists()
        assert second.exists()

    def test_json_summary_and_dry_run(
        self, spool: Path, table: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--format json gives the removed and kept segments; --dry-run removes nothing."""
        first, *rest = sealed(spool)
        commit(table, 1, spool.resolve(), [first])
        argv = ["spool", "prune", "--spool", str(spool), "--table", str(table)]
        done = run_main([*argv, "--dry-run", "--format", "json"], capsys)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        assert summary["dry_run"] is True
        assert [r["segment"] for r in summary["removed"]] == [first.name]
        assert summary["removed_bytes"] == first.stat().st_size
        assert summary["kept"]["not_loaded"] == [path.name for path in rest]
        assert summary["kept"]["open"] == [OPEN]
        assert first.exists()

    def test_an_ingest_in_progress_exits_0_and_removes_nothing(
        self, spool: Path, table: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """While an ingest holds the table's lock the command says so, exits 0, removes nothing."""
        first, *_ = sealed(spool)
        commit(table, 1, spool.resolve(), [first])
        with ingest_lock(table):
            done = run_main(
                ["spool", "prune", "--spool", str(spool), "--table", str(table)], capsys
            )
        assert done.returncode == 0, done.stderr
        assert "an ingest is loading the table: nothing removed" in done.stdout
        assert first.exists()

    @pytest.mark.parametrize(
        ("extra", "message"),
        [
            (["--keep-days", "-1"], "--keep-days: -1 is not a number of days from 0 to 3650"),
            (["--keep-days", "nan"], "--keep-days: nan is not a number of days"),
            (["--keep-days", "soon"], "argument --keep-days: invalid float value: 'soon'"),
        ],
    )
    def test_invalid_flags_exit_2(
        self,
        spool: Path,
        table: Path,
        capsys: pytest.CaptureFixture[str],
        extra: list[str],
        message: str,
    ) -> None:
        """An invalid --keep-days exits 2, naming the flag and the value."""
        argv = ["spool", "prune", "--spool", str(spool), "--table", str(table), *extra]
        done = run_main(argv, capsys)
        assert done.returncode == 2
        assert message in done.stderr

    def test_missing_directories_exit_2_and_a_broken_log_exits_1(
        self, spool: Path, table: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A --spool or --table that is not a directory exits 2; a log with a gap exits 1."""
        missing = str(table / "nope")
        for flag, argv in (
            ("--spool", ["--spool", missing, "--table", str(table)]),
            ("--table", ["--spool", str(spool), "--table", missing]),
        ):
            done = run_main(["spool", "prune", *argv], capsys)
            assert done.returncode == 2
            assert f"grstats: error: {flag}: {missing!r} is not a directory" in done.stderr
        commit(table, 2, spool.resolve(), sealed(spool)[:1])
        done = run_main(["spool", "prune", "--spool", str(spool), "--table", str(table)], capsys)
        assert done.returncode == 1
        assert "the log misses commit 1" in done.stderr

    def test_help_lists_the_command(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Grstats --help lists spool; grstats spool without a job prints its help and exits 2."""
        done = run_main(["--help"], capsys)
        assert "spool upkeep: remove the segments the Spark table has loaded" in done.stdout
        done = run_main(["spool"], capsys)
        assert done.returncode == 2
        assert "prune" in done.stdout
