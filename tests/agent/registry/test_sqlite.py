"""SqliteRegistry: the file, its durability, crash consistency, and what it refuses."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

import msgpack  # type: ignore[import-untyped]
import pytest

from grstats.agent.registry import REGISTRY_FILENAME, RegistryError, SqliteRegistry
from tests.agent.registry.records import A, B, bare, full, generation, generation_of

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[3]
WRITERS = 30


@pytest.fixture(name="path")
def _path(tmp_path: Path) -> Path:
    return tmp_path / REGISTRY_FILENAME


@pytest.fixture(name="registry")
def _registry(path: Path) -> Iterator[SqliteRegistry]:
    with SqliteRegistry(path) as registry:
        yield registry


def execute(path: Path, statement: str, *params: object) -> None:
    """Run one statement on the file through a connection of its own, and commit."""
    with closing(sqlite3.connect(path)) as db, db:
        db.execute(statement, params)


def python(code: str, *args: str) -> list[str]:
    """The command that runs ``code`` in a fresh interpreter that imports this checkout."""
    return [sys.executable, "-c", textwrap.dedent(code), *args]


class TestFile:
    def test_constructing_touches_nothing(self, path: Path) -> None:
        """The file is created by the first call, not by the constructor."""
        registry = SqliteRegistry.in_directory(path.parent)
        assert registry.path == path
        assert not path.exists()
        assert registry.load() == []
        assert path.exists()
        registry.close()

    def test_reopening_keeps_data(self, path: Path) -> None:
        """Records saved and closed are loaded by a new registry on the same file."""
        with SqliteRegistry(path) as registry:
            registry.save([full(A), bare(B)])
        with SqliteRegistry(path) as registry:
            assert registry.load() == [full(A), bare(B)]

    def test_is_wal_with_full_sync(self, registry: SqliteRegistry) -> None:
        """The file is in WAL mode and the registry's connection syncs at every commit."""
        registry.load()
        assert registry._db is not None
        assert registry._db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert registry._db.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL

    def test_any_thread_may_call(self, registry: SqliteRegistry) -> None:
        """A registry opened on one thread is used from another, as the agent's workers do."""
        registry.save([bare(A)])
        with ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(registry.save, [bare(B)]).result()
        assert registry.load() == [bare(A), bare(B)]


class TestDurability:
    def test_save_survives_exit_without_close(self, path: Path) -> None:
        """A save that returned is seen by a new registry after its process exits uncleanly."""
        code = """
            import os, sys
            from grstats.agent.registry import SqliteRegistry
            from tests.agent.registry.records import generation
            SqliteRegistry(sys.argv[1]).save(generation(7))
            os._exit(0)
        """
        subprocess.run(python(code, str(path)), cwd=ROOT, check=True, timeout=30)
        with SqliteRegistry(path) as registry:
            assert registry.load() == generation(7)

    @pytest.mark.skipif(os.name != "posix", reason="kill -9 is POSIX")
    def test_kill_during_saves_leaves_one_complete_save(self, path: Path) -> None:
        """Killed with SIGKILL while saving in a loop, the file holds exactly one whole save.

        Three writers are killed in turn, each a different way into a save and each starting
        from what the last one left; each time every record comes from one save, no older than
        the last save the writer reported done.
        """
        code = """
            import sys, time
            from grstats.agent.registry import SqliteRegistry
            from tests.agent.registry.records import generation
            registry, number = SqliteRegistry(sys.argv[1]), int(sys.argv[2])
            while True:
                started = time.perf_counter()
                registry.save(generation(number))
                print(number, time.perf_counter() - started, flush=True)
                number += 1
        """
        for start, into_save in ((0, 0.25), (1_000, 0.5), (2_000, 0.75)):
            with subprocess.Popen(
                python(code, str(path), str(start)), cwd=ROOT, stdout=subprocess.PIPE, text=True
            ) as writer:
                assert writer.stdout is not None
                done = [line.split() for _, line in zip(range(20), writer.stdout, strict=False)]
                # The next save has just begun: kill it part of the way through.
                time.sleep(float(done[-1][1]) * into_save)
                writer.kill()
                writer.wait(timeout=30)
            with SqliteRegistry(path) as registry:
                records = registry.load()
            assert len(records) == WRITERS
            (number,) = generation_of(records)
            assert number >= int(done[-1][0])
            assert records == generation(number)


class TestRefusals:
    def test_not_a_database(self, path: Path) -> None:
        """A file that is not SQLite gives RegistryError naming the file and the problem."""
        path.write_bytes(b"grstats? no: just some bytes\n" * 200)
        with SqliteRegistry(path) as registry, pytest.raises(RegistryError) as raised:
            registry.load()
        assert str(path) in str(raised.value)
        assert "file is not a database" in str(raised.value)

    def test_another_applications_database(self, path: Path) -> None:
        """An SQLite file without the registry's meta table is refused, not written to."""
        execute(path, "CREATE TABLE orders (id INTEGER PRIMARY KEY)")
        with (
            SqliteRegistry(path) as registry,
            pytest.raises(
                RegistryError, match=r"not a grstats registry \(no meta table; tables: orders\)"
            ),
        ):
            registry.save([bare(A)])

    def test_a_file_from_before_the_forgotten_table_gains_it(self, path: Path) -> None:
        """A version-1 file without the forgotten table keeps its records and gains the table."""
        with SqliteRegistry(path) as registry:
            registry.save([bare(A), bare(B)])
        execute(path, "DROP TABLE forgotten")
        with SqliteRegistry(path) as registry:
            assert registry.load() == [bare(A), bare(B)]
            assert registry.forgotten() == []
            assert registry.forget(A) is True
        with SqliteRegistry(path) as registry:
            assert registry.forgotten() == [A]

    @pytest.mark.parametrize(
        ("version", "problem"),
        [
            pytest.param("2", "schema version 2 was written by a newer grstats", id="newer"),
            pytest.param("1.0", "unknown schema version '1.0'", id="unknown"),
        ],
    )
    def test_schema_version_is_checked(self, path: Path, version: str, problem: str) -> None:
        """A registry of another schema version is refused with a message saying why."""
        with SqliteRegistry(path) as registry:
            registry.save([bare(A)])
        execute(path, "UPDATE meta SET value = ? WHERE key = 'schema_version'", version)
        with SqliteRegistry(path) as registry, pytest.raises(RegistryError, match=problem):
            registry.load()

    @pytest.mark.parametrize(
        ("column", "stored", "problem"),
        [
            pytest.param("stats", b"\xc1garbage", "stats: not msgpack", id="not-msgpack"),
            pytest.param(
                "stats", msgpack.packb([1, 2]) + b"!", "stats: not msgpack", id="extra-bytes"
            ),
            pytest.param(
                "applier", "text", "applier: stored as str, not as msgpack bytes", id="text"
            ),
            pytest.param(
                "stats", msgpack.packb({"v": 1}), "stats: a msgpack dict, not an array", id="map"
            ),
            pytest.param(
                "stats",
                msgpack.packb(["group_replication_applier"]),
                "stats: 1 values, not 13..13",
                id="too-short",
            ),
            pytest.param(
                "stats",
                msgpack.packb(
                    ["group_replication_applier", "", A, 0, -1, 0, 0, "", "", 0, 0, 0, 0]
                ),
                "stats: COUNT_TRANSACTIONS_CHECKED: -1 is not an integer",
                id="out-of-domain",
            ),
            pytest.param(
                "member_port", "db-1", "member_port: 'db-1' is not a port", id="port-as-text"
            ),
            pytest.param(
                "last_state", "DOZING", "last_state: 'DOZING' is not a MEMBER_STATE", id="state"
            ),
            pytest.param(
                "record_version",
                2,
                "record version 2 is newer than this grstats reads",
                id="newer-record",
            ),
            pytest.param("record_version", 0, "unknown record version 0", id="unknown-record"),
        ],
    )
    def test_unreadable_record_is_named(
        self, registry: SqliteRegistry, path: Path, column: str, stored: object, problem: str
    ) -> None:
        """A corrupt record gives RegistryError naming the member and what is wrong."""
        registry.save([full(A), full(B)])
        execute(path, f"UPDATE members SET {column} = ? WHERE member_id = ?", stored, B)  # noqa: S608
        with pytest.raises(RegistryError) as raised:
            registry.load()
        message = str(raised.value)
        assert f"the record of member '{B}' is unreadable: " in message
        assert problem in message
        assert registry.forget(B) is True
        assert registry.load() == [full(A)]


class TestFailures:
    def test_failure_inside_the_transaction_rolls_back(
        self, registry: SqliteRegistry, path: Path
    ) -> None:
        """A disk error on the second record undoes the first; the next save succeeds."""
        registry.save([full(A, checked=1)])
        execute(
            path,
            f"CREATE TRIGGER full_disk BEFORE INSERT ON members WHEN NEW.member_id = '{B}'"
            " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
        )
        with pytest.raises(RegistryError, match="save failed: database or disk is full"):
            registry.save([full(A, checked=2), full(B)])
        assert registry.load() == [full(A, checked=1)]
        execute(path, "DROP TRIGGER full_disk")
        registry.save([full(A, checked=2), full(B)])
        assert registry.load() == [full(A, checked=2), full(B)]

    def test_locked_by_another_writer(self, path: Path) -> None:
        """A writer that holds the file longer than the busy timeout gives RegistryError."""
        with SqliteRegistry(path, busy_timeout_s=0.05) as registry:
            registry.save([bare(A)])
            with closing(sqlite3.connect(path, isolation_level=None)) as other:
                other.execute("BEGIN IMMEDIATE")
                with pytest.raises(RegistryError, match="save failed: database is locked"):
                    registry.save([bare(B)])
                other.execute("ROLLBACK")
            registry.save([bare(B)])
            assert registry.load() == [bare(A), bare(B)]

    def test_missing_directory(self, tmp_path: Path) -> None:
        """A registry in a directory that does not exist names the file it could not open."""
        path = tmp_path / "absent" / REGISTRY_FILENAME
        with SqliteRegistry(path) as registry, pytest.raises(RegistryError) as raised:
            registry.load()
        assert f"member registry {path}: load failed: unable to open database file" in str(
            raised.value
        )
