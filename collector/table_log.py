"""The table's commit log: its entries' one reader and writer, for ingest and for prune alike.

``grstats spark ingest`` (:class:`grstats.spark.table.TableLog`) commits each load by writing
an entry here, and ``grstats spool prune`` (:mod:`grstats.collector.retention`) reads the
entries to know which segments the table holds; both go through this module, which imports
neither pyspark nor pyarrow, so that prune runs on the collector's host. The log is
``TABLE/_grstats/log/<commit>.json``: one JSON object per commit, named by its number in 20
digits, numbered 1, 2, ... without a gap::

    {"format": 1, "commit": 3, "committed_at": "2026-01-05T10:00:00+00:00",
     "spool": "/var/lib/grstats-collector/spool",      # the spool's absolute path, as ingest saw it
     "segments": [{"name": "segment-....sealed", "bytes": 1234, "records": ..., "rows": ...,
                   "files": [[path, rows], ...], "rollups": [[path, rows], ...]}, ...],
     "quarantined": [{"name": ..., "bytes": ..., "offset": ..., "reason": ...,
                      "copy": "_grstats/quarantine/..."}],
     "rollup_settings": {...}, "events": [[path, rows], ...],   # optional
     "log": [[path, rows], ...]}                                 # optional

An entry is written to ``<commit>.json.tmp``, fsynced and renamed into place: the rename is the
commit (the idea of WL#2775), so a ``.tmp`` entry counts for nothing.

Shared ingests (``grstats spark ingest --shared``, :mod:`grstats.spark.shared_ingest`) write no
entry: each Delta commit of theirs to ``data/`` carries the spool's mark, Delta's application
transaction ``{"txn": {"appId": "grstats-spool-<digest>", "version": <last segment loaded>}}``
(:func:`spool_app_id`), which :func:`shared_marks` reads here for prune, likewise without
pyarrow.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

#: The version of the entries' JSON format.
LOG_FORMAT = 1
#: grstats' own directory in the table.
META_DIR = "_grstats"
#: The commit log's directory in the table.
LOG_DIR = f"{META_DIR}/log"
#: The table's ingest lock: one ingest holds it exclusive, prune shared.
LOCK_NAME = f"{META_DIR}/.lock"
_ENTRY = re.compile(r"(\d{20})\.json")
_T = TypeVar("_T")


class TableLogError(ValueError):
    """The log cannot be read or written: a gap, an unreadable entry, or a field not as written."""


@dataclass(frozen=True, slots=True)
class Commit:
    """One entry of the log.

    Attributes:
        number: 1, 2, ... in commit order.
        committed_at: when it was committed (UTC, ISO 8601 with its offset).
        spool: the spool directory it loaded from.
        segments: the segments it loaded: ``name``, ``bytes``, ``records``, ``rows``,
            ``files`` (the data files, relative to the table directory, with row counts) and
            ``rollups`` (its rollup files, likewise; absent in entries written before rollups).
        quarantined: the corrupt segments it set aside: ``name``, ``bytes``, ``offset``,
            ``reason``, ``copy`` (relative to the table directory).
        rollup_settings: the settings its rollups were made with
            (``grstats.spark.rollup.RollupSettings.to_json``); None in entries written
            before rollups.
        events: its events files (relative to the table directory) with their row counts:
            the events of its segments that no earlier commit holds; none in entries
            written before events, and in those of loads that found no new event.
        log_lines: its GR log files (``log`` in the entry), likewise: the Group Replication
            log lines of its segments that no earlier commit holds; none in entries written
            before them, and in those of loads that found no new line.
    """

    number: int
    committed_at: str
    spool: str
    segments: tuple[dict[str, Any], ...]
    quarantined: tuple[dict[str, Any], ...]
    rollup_settings: dict[str, Any] | None = None
    events: tuple[tuple[str, int], ...] = ()
    log_lines: tuple[tuple[str, int], ...] = ()

    @property
    def files(self) -> list[str]:
        """The data files this commit added, relative to the table directory."""
        return [path for segment in self.segments for path, _ in segment["files"]]

    @property
    def rollup_files(self) -> list[str]:
        """The rollup files (both kinds) this commit added, relative to the table directory."""
        return [path for segment in self.segments for path, _ in segment.get("rollups", ())]

    @property
    def rows(self) -> int:
        """Member rows this commit added."""
        return sum(int(segment["rows"]) for segment in self.segments)

    @property
    def committed_time(self) -> dt.datetime:
        """:attr:`committed_at` as an aware time (checked when the entry was read)."""
        return dt.datetime.fromisoformat(self.committed_at)

    def to_json(self) -> str:
        """Return the entry's JSON text."""
        entry: dict[str, Any] = {
            "format": LOG_FORMAT,
            "commit": self.number,
            "committed_at": self.committed_at,
            "spool": self.spool,
            "segments": list(self.segments),
            "quarantined": list(self.quarantined),
        }
        if self.rollup_settings is not None:
            entry["rollup_settings"] = self.rollup_settings
        if self.events:
            entry["events"] = [list(pair) for pair in self.events]
        if self.log_lines:
            entry["log"] = [list(pair) for pair in self.log_lines]
        return json.dumps(entry, indent=1, sort_keys=True)


def entry_name(number: int) -> str:
    """Return the file name of commit ``number``'s log entry."""
    return f"{number:020d}.json"


def read_commits(table_dir: Path | str) -> list[Commit]:
    """Return the committed entries of the table at ``table_dir`` in order; none without a log.

    Raises:
        TableLogError: the log cannot be listed, misses a commit, or holds an entry this
            reader does not understand (the message names the file, the field and its value).
    """
    log_dir = Path(table_dir) / LOG_DIR
    try:
        names = [entry.name for entry in os.scandir(log_dir)]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise TableLogError(f"cannot list {log_dir}: {exc}") from exc
    numbers = sorted(int(match.group(1)) for n in names if (match := _ENTRY.fullmatch(n)))
    commits = []
    for expected, number in enumerate(numbers, start=1):
        path = log_dir / entry_name(number)
        if number != expected:
            raise TableLogError(
                f"{path}: commit {number} follows commit {expected - 1}: "
                f"the log misses commit {expected}"
            )
        commits.append(parse_entry(path, number))
    return commits


def parse_entry(path: Path, number: int) -> Commit:
    """Return commit ``number``'s entry at ``path``, its fields checked.

    Raises:
        TableLogError: naming the file, the field and its value.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TableLogError(f"{path}: not a commit entry: {exc}") from exc
    if not isinstance(data, dict):
        raise TableLogError(f"{path}: not a commit entry: a JSON {type(data).__name__}")
    if data.get("format") != LOG_FORMAT:
        raise TableLogError(
            f"{path}: log format {data.get('format')!r} is not {LOG_FORMAT}: "
            "written by a newer grstats?"
        )
    if data.get("commit") != number:
        raise TableLogError(f"{path}: holds commit {data.get('commit')!r}, not {number}")
    settings = data.get("rollup_settings")
    if settings is not None and not isinstance(settings, dict):
        raise TableLogError(f"{path}: rollup_settings: {settings!r} is not an object")
    try:
        events = tuple((str(name), int(rows)) for name, rows in data.get("events", ()))
    except (TypeError, ValueError) as exc:
        raise TableLogError(f"{path}: events: {data.get('events')!r}: {exc}") from exc
    try:
        log_lines = tuple((str(name), int(rows)) for name, rows in data.get("log", ()))
    except (TypeError, ValueError) as exc:
        raise TableLogError(f"{path}: log: {data.get('log')!r}: {exc}") from exc
    return Commit(
        number,
        _committed_at(data, path),
        _field(data, "spool", str, path),
        _listed(data, "segments", path),
        _listed(data, "quarantined", path),
        settings,
        events,
        log_lines,
    )


def write_entry(table_dir: Path | str, commit: Commit) -> Path:
    """Write ``commit``'s entry atomically (the commit point) and return its path."""
    log_dir = Path(table_dir) / LOG_DIR
    log_dir.mkdir(parents=True, exist_ok=True)
    target = log_dir / entry_name(commit.number)
    temporary = log_dir / f"{target.name}.tmp"
    with temporary.open("w", encoding="utf-8") as file:
        file.write(commit.to_json())
        file.flush()
        os.fsync(file.fileno())
    temporary.rename(target)
    fsync_directory(log_dir)
    return target


def fsync_directory(directory: Path) -> None:
    """Make the names in ``directory`` durable (renames into it, new files)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _committed_at(data: dict[str, Any], path: Path) -> str:
    stamp = _field(data, "committed_at", str, path)
    try:
        committed_at = dt.datetime.fromisoformat(stamp)
    except ValueError:
        raise TableLogError(f"{path}: committed_at: {stamp!r} is not an ISO 8601 time") from None
    if committed_at.tzinfo is None:
        raise TableLogError(f"{path}: committed_at: {stamp!r} has no UTC offset")
    return stamp


def _listed(data: dict[str, Any], key: str, path: Path) -> tuple[dict[str, Any], ...]:
    """The entry's list ``key`` of segments, each an object with a ``name`` and ``bytes``."""
    listed = data.get(key)
    if not isinstance(listed, list):
        raise TableLogError(f"{path}: {key}: {listed!r} is not a list")
    for item in listed:
        if not isinstance(item, dict):
            raise TableLogError(f"{path}: {key}: {item!r} is not an object")
        _field(item, "name", str, path, key)
        _field(item, "bytes", int, path, key)
    return tuple(listed)


def _field(data: dict[str, Any], key: str, kind: type[_T], path: Path, within: str = "") -> _T:
    """``data[key]`` if it is a ``kind`` (a bool is no int), else an error naming it."""
    value = data.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        where = f"{within}: {key}" if within else key
        raise TableLogError(f"{path}: {where}: {value!r} is not a {kind.__name__}")
    return value


# -- shared ingests (``grstats spark ingest --shared``) -------------------------------------

#: The dataset shared ingests append to; its Delta log holds their marks.
SHARED_DATASET = "data"
#: Each spool's lock file of shared ingests: ``<table>/_grstats/spools/<app id>.lock``.
SPOOLS_DIR = f"{META_DIR}/spools"
#: The prefix of a spool's Delta application id (:func:`spool_app_id`).
SPOOL_APP_PREFIX = "grstats-spool-"
_DELTA_ENTRY = re.compile(r"(\d{20})\.json")


def spool_app_id(spool_dir: Path | str) -> str:
    """The Delta application id of a spool's shared ingests: its resolved path's digest."""
    digest = hashlib.sha256(str(Path(spool_dir).resolve()).encode("utf-8")).hexdigest()
    return f"{SPOOL_APP_PREFIX}{digest[:16]}"


@dataclass(frozen=True, slots=True)
class SharedMark:
    """How far a spool's shared ingests have loaded it, from the Delta log.

    Attributes:
        loads: each Delta commit that carried the spool's mark, in order: the last segment
            sequence number it covers (every sealed segment up to it is loaded), its commit
            time (``commitInfo.timestamp``) and its Delta version.
    """

    loads: tuple[tuple[int, dt.datetime, int], ...]

    @property
    def sequence(self) -> int:
        """The last segment sequence number loaded (every one up to it is)."""
        return self.loads[-1][0]

    def load_of(self, sequence: int) -> tuple[dt.datetime, int] | None:
        """When and in which Delta version segment ``sequence`` was loaded (None: not yet)."""
        return next(((at, version) for upto, at, version in self.loads if sequence <= upto), None)


def shared_marks(table_dir: Path | str) -> dict[str, SharedMark]:
    """The marks of the spools that shared ingests loaded into the table, by application id.

    Read from ``data/_delta_log/*.json``, the ``txn`` actions (Delta's application
    transactions, PROTOCOL.md "Transaction Identifiers") whose ``appId`` is a spool's
    (:func:`spool_app_id`), without pyarrow. Log files that Delta's log cleanup removed after
    a checkpoint (Parquet) are not read: their older marks are missing, so the spool's older
    segments count as not loaded (kept), never the other way round.

    Raises:
        TableLogError: a Delta log file cannot be read or is not JSON lines.
    """
    log_dir = Path(table_dir) / SHARED_DATASET / "_delta_log"
    try:
        names = sorted(entry.name for entry in os.scandir(log_dir))
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise TableLogError(f"cannot list {log_dir}: {exc}") from exc
    loads: dict[str, list[tuple[int, dt.datetime, int]]] = {}
    for name in names:
        match = _DELTA_ENTRY.fullmatch(name)
        if match is None:
            continue
        path = log_dir / name
        committed_at = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC)
        marks: list[tuple[str, int]] = []
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
            for line in lines:
                action = json.loads(line) if line.strip() else {}
                if "commitInfo" in action and "timestamp" in action["commitInfo"]:
                    stamp = int(action["commitInfo"]["timestamp"])
                    committed_at = dt.datetime.fromtimestamp(stamp / 1000, dt.UTC)
                txn = action.get("txn")
                if txn and str(txn.get("appId", "")).startswith(SPOOL_APP_PREFIX):
                    marks.append((str(txn["appId"]), int(txn["version"])))
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise TableLogError(f"{path}: not a Delta log file: {exc}") from exc
        for app_id, version in marks:
            loads.setdefault(app_id, []).append((version, committed_at, int(match.group(1))))
    return {app_id: SharedMark(tuple(found)) for app_id, found in loads.items()}
