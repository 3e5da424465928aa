"""The table's log dataset: each group's Group Replication log lines, each exactly once.

The collector spools the agents' ``replication_group_member_log`` rows with its snapshots
(the record's ``log`` key, :mod:`grstats.collector.records`), and may spool one line several
times (after a restart, or a failover between agents), as it does the events. Ingest keeps
them as it keeps the events (:mod:`grstats.spark.events`): the driver keeps the lines no
earlier commit holds (:func:`new_lines`) and writes them in the commit's one log file,
committed with the segments' data files. A line is its whole row (:data:`IDENTITY`: its
group's label and every column of the table; every agent serves the same rows, LOGGED being on
the writing member's clock), and GR's group name is not part of it (an agent answers "" until
it knows the group): the name kept is the one known.

The schema is derived from the agents' table
(:data:`grstats.core.rows.member_log.REPLICATION_GROUP_MEMBER_LOG`): its columns in lower
case, LOGGED a UTC timestamp, THREAD_ID a 64-bit integer (BIGINT UNSIGNED in MySQL; Delta has
no unsigned type, and thread ids stay far below 2**63), after the group's ``group_label`` and
``group_name``. Lines are few (at most 200 per member in an agent), so the driver reads the
committed ones whole with pyarrow. :func:`lines_around` gives the report the lines around each
event. No pyspark here.
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from grstats.core.rows import Kind
from grstats.core.rows.member_log import REPLICATION_GROUP_MEMBER_LOG
from grstats.spark.events import rows_table

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from pathlib import Path

_TS = pa.timestamp("us", tz="UTC")
_TYPES = {Kind.TIMESTAMP: _TS, Kind.INTEGER: pa.int64()}

#: The log dataset's schema: the group, then replication_group_member_log's columns.
ARROW_LOG = pa.schema(
    [
        ("group_label", pa.string()),
        ("group_name", pa.string()),
        *(
            (column.name.lower(), _TYPES.get(column.kind, pa.string()))
            for column in REPLICATION_GROUP_MEMBER_LOG.columns
        ),
    ]
)
#: What makes a line itself: every column but ``group_name``.
IDENTITY = tuple(name for name in ARROW_LOG.names if name != "group_name")
#: The order lines are kept and shown in: per group, by time, then member, then text (the
#: agents' own order, ``grstats.core.rows.member_log.log_order``).
ORDER = ("group_label", "logged", "member_id", "data")
#: The window :func:`lines_around` takes around an event, seconds before and after it.
WINDOW_S = (60.0, 60.0)
_PARQUET = {"compression": "zstd", "compression_level": 1}


def log_table(rows: Iterable[Sequence[Any]]) -> pa.Table:
    """The ARROW_LOG table of plain line rows (group label, group name, then the cells)."""
    return rows_table(rows, ARROW_LOG)


def ordered(lines: pa.Table) -> pa.Table:
    """``lines`` in :data:`ORDER`."""
    return lines.sort_by([(name, "ascending") for name in ORDER])


def new_lines(found: pa.Table, committed: pa.Table) -> pa.Table:
    """The lines of ``found`` that ``committed`` lacks, each once, in :data:`ORDER`.

    THREAD_ID, ERROR_CODE and SUBSYSTEM may be null: rows are told apart as wholes, a null
    equal to a null (Arrow's group-by does; its joins do not match nulls, so the committed
    lines are dropped by a key of their own, nulls spelled out).
    """
    keys = list(IDENTITY)
    distinct = found.group_by(keys, use_threads=False).aggregate([("group_name", "max")])
    distinct = distinct.rename_columns([*keys, "group_name"])
    if committed.num_rows:
        held = {_key(row) for row in committed.select(keys).to_pylist()}
        keep = [_key(row) not in held for row in distinct.select(keys).to_pylist()]
        distinct = distinct.filter(pa.array(keep, pa.bool_()))
    return ordered(distinct.select(ARROW_LOG.names).cast(ARROW_LOG))


def _key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(row[name] for name in IDENTITY)


def read_log_files(files: Sequence[Path]) -> pa.Table:
    """The lines of ``files`` (ARROW_LOG; none: empty)."""
    if not files:
        return ARROW_LOG.empty_table()
    return pa.concat_tables(pq.read_table(path, schema=ARROW_LOG) for path in files)


def write_log(publish: Path, relative: str, lines: pa.Table) -> tuple[str, int] | None:
    """Write a commit's lines at ``relative`` under ``publish`` (fsynced); the path and count.

    No lines: no file, None.
    """
    if not lines.num_rows:
        return None
    target = publish / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    with temporary.open("wb") as file:
        pq.write_table(lines, file, **_PARQUET)
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(target)
    return relative, lines.num_rows


def lines_around(
    events: pa.Table,
    lines: pa.Table,
    *,
    window_s: tuple[float, float] = WINDOW_S,
    addresses: Mapping[str, str] | None = None,
) -> list[list[dict[str, Any]]]:
    """For each row of ``events`` (ARROW_EVENTS), the GR log lines around it, in :data:`ORDER`.

    A line is around an event when it is of the event's group, LOGGED within ``window_s``
    (seconds before, after) of EVENT_TIME, and written by the event's member or its reporter,
    or by another member naming the event's member: its MEMBER_ID, or its ``host:port`` in
    ``addresses`` (member id -> address, as ``replication_group_members`` gives them; GR's
    lines name members by address: "Member with address m2:3306 has become unreachable.").
    Both times are on their members' clocks, uncorrected. Each line is a dict of ARROW_LOG's
    columns.
    """
    known = addresses or {}
    before, after = (dt.timedelta(seconds=seconds) for seconds in window_s)
    by_group: dict[str, list[dict[str, Any]]] = {}
    for line in ordered(lines).to_pylist():
        by_group.setdefault(line["group_label"], []).append(line)
    around = []
    for event in events.to_pylist():
        member, at = event["member_id"], event["event_time"]
        writers = {member, event["reported_by"]}
        names = [name for name in (member, known.get(member)) if name]
        around.append(
            [
                line
                for line in by_group.get(event["group_label"], ())
                if at - before <= line["logged"] <= at + after
                and (line["member_id"] in writers or any(name in line["data"] for name in names))
            ]
        )
    return around
