"""The Spark job that stitches the rollups: Python tasks read the partials with pyarrow.

The driver names the committed rollup files of the range; Spark runs one Python task per
share of the members (as many shares as the session's default parallelism, at most
MAX_TASKS). Each task reads the range's partials (:func:`read_partials`), keeps its share of
the members and of the groups, stitches them (:mod:`grstats.spark.report.stitch`) and sends
its intermediate tables back as compressed Arrow IPC streams; the driver joins the shares.
Every task reads every file of the range: the rollups are about a sixtieth of the member
rows, so reading them a few times costs less than shuffling them, and a member's partials
all reach one task without a sort in the JVM. The tasks read the files where the driver
names them, so on a cluster the table must be on storage every executor sees (as ingest
already requires).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from grstats.spark.report.stitch import (
    group_names,
    sketch_percentiles,
    stitch_group_totals,
    stitch_minutes,
    stitch_segments,
)
from grstats.spark.rollup import ARROW_GROUP_ROLLUPS, ARROW_MEMBER_ROLLUPS

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from pathlib import Path

    from pyspark.sql import SparkSession

    from grstats.spark.report.config import ReportConfig

#: The most tasks one stitch runs (each reads every file of the range).
MAX_TASKS = 16

_MEMBER = ("group_label", "member_id")
_IPC = pa.ipc.IpcWriteOptions(compression="zstd")

#: The intermediate tables, by name (RollupPieces' attributes).
TABLES = ("minutes", "segments", "member_percentiles", "group_totals", "group_percentiles")


@dataclasses.dataclass(frozen=True)
class RollupPieces:
    """The intermediate tables stitched from the rollups, and each group's name.

    Attributes:
        minutes, segments, member_percentiles, group_totals, group_percentiles: Arrow tables
            with the columns of MINUTES, SEGMENTS, MEMBER_PERCENTILES, GROUP_TOTALS and
            GROUP_PERCENTILES, in their order.
        names: each group label in range, sorted, with its latest GR group name ("" unknown).
    """

    minutes: pa.Table
    segments: pa.Table
    member_percentiles: pa.Table
    group_totals: pa.Table
    group_percentiles: pa.Table
    names: dict[str, str]

    def only(self, label: str) -> RollupPieces:
        """The pieces of the group ``label`` alone."""
        wanted = pa.scalar(label, pa.string())
        tables = {
            name: getattr(self, name).filter(
                pc.equal(getattr(self, name).column("group_label"), wanted)
            )
            for name in TABLES
        }
        names = {label: self.names[label]} if label in self.names else {}
        return RollupPieces(**tables, names=names)


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
) -> RollupPieces:
    """Stitch the partials of ``config``'s range in the given files, in Spark's Python tasks."""
    shares = max(1, min(spark.sparkContext.defaultParallelism, MAX_TASKS))
    tasks = [
        StitchTask(
            share,
            shares,
            tuple(str(path) for path in member_files),
            tuple(str(path) for path in group_files),
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
        for name in TABLES
    }
    names: dict[str, str] = {}
    for result in done:
        names |= result["names"]
    return RollupPieces(**tables, names=dict(sorted(names.items())))


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
    tables = {
        "minutes": stitch_minutes(members, task.max_gap_s),
        "segments": stitch_segments(members),
        "member_percentiles": sketch_percentiles(members, _MEMBER),
        "group_totals": stitch_group_totals(groups, task.max_gap_s),
        "group_percentiles": sketch_percentiles(groups, ("group_label",)),
    }
    return {name: _ipc(table) for name, table in tables.items()} | {"names": names}


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
