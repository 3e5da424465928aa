"""SqliteRegistry: the file, its durability, crash consistency, and what it refuses."""

from __future__ import annotations

import os
import shutil
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

from grstats.agent.registry import (
    REGISTRY_FILENAME,
    RegistryDamaged,
    RegistryError,
    SqliteRegistry,
)
from grstats.agent.registry import sqlite as sqlite_registry
from tests.agent.registry.records import A, B, bare, full, generation, generation_of

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

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

    def test_rollback_journal_with_full_sync_and_no_mapping(
        self, registry: SqliteRegistry, path: Path
    ) -> None:
        """TRUNCATE journal, synchronous=FULL, no mmap and no -shm: nothing a full disk SIGBUSes.

        SQLite maps the WAL index (-shm) in WAL mode (os_unix.c, unixShmMap) and the file when
        mmap_size > 0; a rollback journal maps nothing.
        """
        registry.save([bare(A)])
        assert registry._db is not None
        assert registry._db.execute("PRAGMA journal_mode").fetchone() == ("truncate",)
        assert registry._db.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
        assert registry._db.execute("PRAGMA mmap_size").fetchone() == (0,)
        assert registry._db.execute("PRAGMA locking_mode").fetchone() == ("normal",)
        assert not Path(f"{path}-shm").exists()
        assert not Path(f"{path}-wal").exists()

    def test_a_wal_file_of_an_older_grstats_opens_and_leaves_wal(self, path: Path) -> None:
        """A file an older grstats left in WAL mode, with a WAL not yet checkpointed, opens.

        Its records load, and it is left for the TRUNCATE journal with its -wal folded in.
        """
        with SqliteRegistry(path) as registry:
            registry.save([bare(A)])
        code = """
            import os, sqlite3, sys
            db = sqlite3.connect(sys.argv[1], isolation_level=None)
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("UPDATE members SET member_host = 'db-wal'")
            os._exit(0)  # killed: the update is only in the -wal
        """
        subprocess.run(python(code, str(path)), cwd=ROOT, check=True, timeout=30)
        assert Path(f"{path}-wal").exists()
        with SqliteRegistry(path) as registry:
            (record,) = registry.load()
            assert record.member_host == "db-wal"
            assert registry._db is not None
            assert registry._db.execute("PRAGMA journal_mode").fetchone() == ("truncate",)
        assert not Path(f"{path}-wal").exists()

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

    def test_removed_file_is_made_again(self, registry: SqliteRegistry, path: Path) -> None:
        """A file removed under the open registry is made again by the next save, not lost.

        Without the check the connection would go on writing to the removed file's inode.
        """
        registry.save([bare(A)])
        path.unlink()
        registry.save([bare(B)])
        with SqliteRegistry(path) as other:
            assert other.load() == [bare(B)]

    def test_vanished_directory_is_named_then_recovers(self, tmp_path: Path) -> None:
        """Saves into a removed state directory fail saying so; once it is back they succeed."""
        directory = tmp_path / "state"
        directory.mkdir()
        path = directory / REGISTRY_FILENAME
        with SqliteRegistry(path) as registry:
            registry.save([bare(A)])
            shutil.rmtree(directory)
            with pytest.raises(RegistryError) as raised:
                registry.save([bare(B)])
            assert f"(the directory {directory} does not exist)" in str(raised.value)
            directory.mkdir()
            registry.save([bare(A), bare(B)])
        with SqliteRegistry(path) as registry:
            assert registry.load() == [bare(A), bare(B)]


def half(path: Path) -> None:
    """Truncate the file to half its size."""
    os.truncate(path, path.stat().st_size // 2)


def garbage(path: Path) -> None:
    """Overwrite the file with bytes that are no database, keeping its size."""
    path.write_bytes(b"\xde\xad\xbe\xef" * (path.stat().st_size // 4))


def empty(path: Path) -> None:
    """Truncate the file to 0 bytes."""
    os.truncate(path, 0)


DAMAGES = [
    pytest.param(half, "database disk image is malformed", id="half"),
    pytest.param(garbage, "file is not a database", id="garbage"),
    pytest.param(empty, "the file is empty (0 bytes)", id="empty"),
]


class TestDamage:
    @pytest.mark.parametrize(("damage", "problem"), DAMAGES)
    def test_damage_is_named_and_set_aside(
        self, path: Path, damage: Callable[[Path], None], problem: str
    ) -> None:
        """A truncated, overwritten or emptied file raises RegistryDamaged; set aside, it starts anew.

        SQLite's SQLITE_CORRUPT and SQLITE_NOTADB (sqlite3.h) say damage; a 0-byte file is one
        too, since the registry creates its file and tables in one go. The file goes aside
        named with the UTC time, its journal beside it, and a new, empty registry follows.
        """
        with SqliteRegistry(path) as registry:
            registry.save(generation(1, members=200))
            registry.forget(generation(1)[0].member_id)
        assert Path(f"{path}-journal").exists()  # a TRUNCATE journal at rest: 0 bytes
        damage(path)
        at_us = 1_796_163_300_000_000  # 2026-12-01T22:15:00Z
        with SqliteRegistry(path) as registry:
            with pytest.raises(RegistryDamaged) as raised:
                registry.load()
            assert str(path) in str(raised.value)
            assert problem in str(raised.value)
            moved_to = registry.set_aside(at_us)
            assert moved_to == f"{path}.damaged-20261201T221500Z"
            assert Path(moved_to).exists()
            assert Path(f"{moved_to}-journal").exists()
            assert registry.load() == []
            assert registry.forgotten() == []
            registry.save([bare(A)])
        with SqliteRegistry(path) as registry:
            assert registry.load() == [bare(A)]

    def test_set_aside_twice_in_a_second_keeps_both(self, path: Path) -> None:
        """A second damaged file set aside in the same second gets its own name."""
        at_us = 1_796_163_300_000_000
        names = []
        for _ in range(2):
            with SqliteRegistry(path) as registry:
                registry.save([bare(A)])
            garbage(path)
            with SqliteRegistry(path) as registry:
                names.append(registry.set_aside(at_us))
        assert names == [f"{path}.damaged-20261201T221500Z", f"{path}.damaged-20261201T221500Z-2"]
        assert all(Path(name).exists() for name in names)

    def test_file_whose_tables_could_not_be_made_is_removed(
        self, path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A file the registry created but could not give its tables is removed, not left empty.

        Left at 0 bytes it would be taken for a truncated registry at the next start.
        """

        def full_disk(db: sqlite3.Connection, where: Path) -> bool:
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(sqlite_registry, "_create_or_check_schema", full_disk)
        with SqliteRegistry(path) as registry, pytest.raises(RegistryError, match="disk is full"):
            registry.load()
        assert not path.exists()
        monkeypatch.undo()
        with SqliteRegistry(path) as registry:
            assert registry.load() == []
