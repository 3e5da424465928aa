"""The report's Spark jobs: Python tasks make or read the partials and stitch them.

Two jobs give a report its pieces (:class:`grstats.spark.report.model.Pieces`):

* :func:`stitch_rollups`: the per-minute partials ingest wrote. The driver names the
  committed rollup files of the range; Spark runs one Python task per share of the members
  (as many shares as the session's default parallelism, at most MAX_TASKS). Each task reads
  the range's partials (:func:`read_partials`), keeps its share of the members and of the
  groups, stitches them and sends its pieces back as compressed Arrow IPC streams; the
  driver joins the shares. Every task reads every file of the range: the rollups are about
  a sixtieth of the member rows, so reading them a few times costs less than shuffling
  them, and a member's partials all reach one task without a sort in the JVM.
* :func:`partials_from_rows`: partials made from the member rows, when the rollups cannot
  answer (another threshold or max gap, a range not on whole minutes, a grain finer than a
  minute). Each task reads whole data files (a segment's rows of one date: every group
  snapshot whole), cuts them to the range and makes their partials with the code ingest
  uses (:func:`grstats.spark.report.model.partials_of_rows`); the driver stitches them.

The tasks read the files where the driver names them, so on a cluster the table must be on
storage every executor sees (as ingest already requires).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from grstats.spark.decode import ARROW_MEMBER_ROWS
from grstats.spark.report.model import PIECES, Pieces, partials_of_rows, stitch, stitch_tables
from grstats.spark.report.stitch import group_names
from grstats.spark.rollup import ARROW_GROUP_ROLLUPS, ARROW_MEMBER_ROLLUPS, ROW_INPUTS
from grstats.spark.rollup_settings import RollupSettings
from grstats.spark.schema import LATER_COLUMNS

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from pathlib import Path

    from pyspark.sql import SparkSession

    from grstats.spark.report.config import ReportConfig

#: The most tasks one stitch runs (each reads every file of the range).
MAX_TASKS = 16

_IPC = pa.ipc.IpcWriteOptions(compression="zstd")
#: Data files per task when partials are made from the member rows, at most.
FILES_PER_TASK = 8


@dataclasses.dataclass(frozen=True)
class StitchTask:
    """What one task stitches: its share of the members and groups of the range's partials.

    Plain values only: it travels to the executors.
    """

    share: int
    shares: int
    member_files: tuple[str, ...]
    group_files: tuple[str, ...]
    start_us: int | None
    end_us: int | None
    max_gap_s: float


def stitch_rollups(
    spark: SparkSession,
    member_files: Sequence[Path],
    group_files: Sequence[Path],
    config: ReportConfig,
) -> Pieces:
    """Stitch the partials of ``config``'s range in the given files, in Spark's Python tasks."""
    shares = max(1, min(spark.sparkContext.defaultParallelism, MAX_TASKS))
    tasks = [
        StitchTask(
            share,
            shares,
            _absolute(member_files),
            _absolute(group_files),
            _micros(config.start),
            _micros(config.end),
            config.max_gap_s,
        )
        for share in range(shares)
    ]
    done = spark.sparkContext.parallelize(tasks, shares).mapPartitions(stitch_partition).collect()
    tables = {
        name: pa.concat_tables(
            [_read_ipc(result[name]) for result in done], promote_options="permissive"
        )
        for name in PIECES
    }
    names: dict[str, str] = {}
    for result in done:
        names |= result["names"]
    return Pieces(**tables, names=dict(sorted(names.items())))


def stitch_partition(tasks: Iterable[StitchTask]) -> Iterator[dict[str, Any]]:
    """Spark's mapPartitions function: stitch each task's share (one task a partition)."""
    for task in tasks:
        yield stitch_share(task)


def stitch_share(task: StitchTask) -> dict[str, Any]:
    """Return one share's intermediate tables (Arrow IPC bytes) and its groups' names."""
    members = read_partials(task.member_files, ARROW_MEMBER_ROLLUPS, task.start_us, task.end_us)
    groups = read_partials(task.group_files, ARROW_GROUP_ROLLUPS, task.start_us, task.end_us)
    if task.shares > 1:  # keep this task's share of the groups and of the members
        labels = _share(pc.unique(members.column("group_label")), task)
        member_keys = pc.binary_join_element_wise(
            members.column("group_label"), members.column("member_id"), "\x00"
        )
        names = group_names(members.filter(pc.is_in(members.column("group_label"), labels)))
        members = members.filter(pc.is_in(member_keys, _share(pc.unique(member_keys), task)))
        groups = groups.filter(pc.is_in(groups.column("group_label"), value_set=labels))
    else:
        names = group_names(members)
    tables = stitch_tables(members, groups, task.max_gap_s)
    return {name: _ipc(table) for name, table in tables.items()} | {"names": names}


@dataclasses.dataclass(frozen=True)
class PartialsTask:
    """What one task makes partials of: some data files of member rows, cut to a range.

    Plain values only: it travels to the executors.
    """

    files: tuple[str, ...]
    start_us: int | None
    end_us: int | None
    flow_control_threshold: int
    max_gap_s: float
    grain_s: int


def _absolute(paths: Sequence[Path]) -> tuple[str, ...]:
    """``paths`` as the tasks get them: absolute.

    A Python worker's working directory is the one its JVM started in: a table given as
    ``./table`` by a caller that changed directory since is not there.
    """
    return tuple(str(path.absolute()) for path in paths)


def partials_from_rows(
    spark: SparkSession, files: Sequence[Path], config: ReportConfig, grain_s: int
) -> Pieces:
    """Make the partials of ``config``'s range from the member rows in ``files``; stitch them.

    The partials have ``grain_s`` seconds and ``config``'s threshold and max gap.
    """
    names = list(_absolute(files))
    if not names:
        empty_members, empty_groups = (
            ARROW_MEMBER_ROLLUPS.empty_table(),
            ARROW_GROUP_ROLLUPS.empty_table(),
        )
        return stitch(empty_members, empty_groups, config.max_gap_s, grain_s)
    count = max(
        1,
        min(
            len(names),
            max(spark.sparkContext.defaultParallelism * 4, -(-len(names) // FILES_PER_TASK)),
        ),
    )
    tasks = [
        PartialsTask(
            tuple(names[index::count]),
            _micros(config.start),
            _micros(config.end),
            config.flow_control_threshold,
            config.max_gap_s,
            grain_s,
        )
        for index in range(count)
    ]
    done = spark.sparkContext.parallelize(tasks, count).mapPartitions(partials_partition).collect()
    members = pa.concat_tables([_read_ipc(result["members"]) for result in done])
    groups = pa.concat_tables([_read_ipc(result["groups"]) for result in done])
    return stitch(members, groups, config.max_gap_s, grain_s)


def partials_partition(tasks: Iterable[PartialsTask]) -> Iterator[dict[str, bytes]]:
    """Spark's mapPartitions function: make each task's partials (one task a partition)."""
    for task in tasks:
        yield make_partials(task)


def make_partials(task: PartialsTask) -> dict[str, bytes]:
    """Return the member and group partials (Arrow IPC bytes) of one task's files."""
    settings = RollupSettings(task.flow_control_threshold, task.max_gap_s)
    members, groups = [ARROW_MEMBER_ROLLUPS.empty_table()], [ARROW_GROUP_ROLLUPS.empty_table()]
    for path in task.files:
        rows = read_rows(path, task.start_us, task.end_us)
        if rows.num_rows:
            made = partials_of_rows(rows, settings, task.grain_s)
            members.append(made[0])
            groups.append(made[1])
    return {"members": _ipc(pa.concat_tables(members)), "groups": _ipc(pa.concat_tables(groups))}


def read_rows(path: str, start_us: int | None, end_us: int | None) -> pa.Table:
    """The member rows of one data file that partials need, collected in [start, end).

    A file written before a column of LATER_COLUMNS existed reads it as its default, as
    :func:`grstats.spark.table.read_member_rows` does; one written before another column
    appended since (the lag by stage) reads it as null, as Spark reads such a file.
    """
    present = set(pq.read_schema(path).names)
    table = pq.read_table(path, columns=[name for name in ROW_INPUTS if name in present])
    for name in ROW_INPUTS:
        if name not in present and name not in LATER_COLUMNS:
            table = table.append_column(
                ARROW_MEMBER_ROWS.field(name),
                pa.nulls(table.num_rows, ARROW_MEMBER_ROWS.field(name).type),
            )
    for name, default in LATER_COLUMNS.items():
        if name not in ROW_INPUTS:
            continue
        if name not in present:
            table = table.append_column(name, pa.array([default] * table.num_rows, pa.string()))
        elif table.column(name).null_count:
            table = table.set_column(
                table.schema.get_field_index(name),
                name,
                pc.fill_null(table.column(name), pa.scalar(default, pa.string())),
            )
    at = table.column("collected_at").cast(pa.int64())
    keep = None
    if start_us is not None:
        keep = pc.greater_equal(at, pa.scalar(start_us, pa.int64()))
    if end_us is not None:
        before = pc.less(at, pa.scalar(end_us, pa.int64()))
        keep = before if keep is None else pc.and_(keep, before)
    return table if keep is None else table.filter(keep)


def read_partials(
    files: Sequence[str], schema: pa.Schema, start_us: int | None, end_us: int | None
) -> pa.Table:
    """The partials (rollup rows) in ``files`` whose minute is in [start, end) (None: open)."""
    if not files:
        return schema.empty_table()
    dataset = ds.dataset(list(files), schema=schema, format="parquet")
    where = None
    minute = ds.field("minute")
    for bound in (
        None if start_us is None else minute >= _timestamp(start_us),
        None if end_us is None else minute < _timestamp(end_us),
    ):
        if bound is not None:
            where = bound if where is None else where & bound
    return dataset.to_table(filter=where)


def _share(values: pa.Array, task: StitchTask) -> pa.Array:
    """Task ``share``'s part of ``values``: every ``shares``-th of them in sorted order."""
    ordered = pc.take(values, pc.sort_indices(values))
    return ordered.take(pa.array(range(task.share, len(ordered), task.shares), pa.int64()))


def _micros(moment: dt.datetime | None) -> int | None:
    if moment is None:
        return None
    return (moment - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)


def _timestamp(micros: int) -> pa.Scalar:
    return pa.scalar(micros, pa.int64()).cast(pa.timestamp("us", tz="UTC"))


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=_IPC) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


def _read_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()
