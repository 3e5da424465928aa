"""The report's result tables from its pieces, with pyarrow on the driver.

The pieces (:mod:`grstats.spark.report.stitch`: each member's minutes, its segments, the
percentiles, the groups' totals) are Arrow tables, one row per member-minute at most: a month
of a 9-member group is 388,800 rows, which these functions go through in about a second.
Each returns the rows of one result table, its columns as :mod:`grstats.spark.report.tables`
declares them. ``tests/spark/report/test_arrow_tables.py`` checks them on hand-made pieces,
and the model tests and the simulator's ground-truth tests check them end to end. Like
:mod:`grstats.spark.report.stitch` it imports no pyspark.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from grstats.spark.report.stitch import (
    MEMBER_PERCENTILE_COLUMNS,
    Sorted,
    aggregate,
    epoch_seconds,
    when,
)
from grstats.spark.report.tables import EPISODES, FIGURES, HOURLY, SERIES, WORST
from grstats.spark.rollup import GAUGES, STATES, as_array, differs

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "EPISODE_COLUMNS",
    "FIGURE_COLUMNS",
    "HOURLY_COLUMNS",
    "SERIES_COLUMNS",
    "WORST_COLUMNS",
    "episodes",
    "group_figures",
    "member_figures",
    "member_hours",
    "rows_of",
    "series",
    "worst_minutes",
]

_MEMBER = ["group_label", "member_id"]
_GROUP = ["group_label"]
_STATE_SECONDS = tuple(f"{state.lower()}_s" for state in STATES)
_RATES = ("applied", "proposed", "checked")
_F64 = pa.float64()
_NULL_F = pa.scalar(None, _F64)
_ZERO = pa.scalar(0, pa.int64())
_US_PER_S = 1_000_000
_US_PER_HOUR = 3_600 * _US_PER_S
_UTC_US = pa.timestamp("us", tz="UTC")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
#: Connectedness and throttling as text, MySQL's CONNECTED style (``episodes._as_text``).
_YES, _NO = pa.scalar("YES"), pa.scalar("NO")

#: The columns of each result table, in order (:mod:`grstats.spark.report.tables`).
FIGURE_COLUMNS = tuple(FIGURES.names)
EPISODE_COLUMNS = tuple(EPISODES.names)
HOURLY_COLUMNS = tuple(HOURLY.names)
WORST_COLUMNS = tuple(WORST.names)
SERIES_COLUMNS = tuple(SERIES.names)

#: The kinds of episode: kind -> the segment column whose value it follows.
_KINDS = {"state": "member_state", "connected": "connected", "throttling": "throttling"}


def _sorted(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    return table.take(pc.sort_indices(table, sort_keys=[(key, "ascending") for key in keys]))


def _ratio(numerator: pa.Array, denominator: pa.Array) -> pa.Array:
    """``numerator / denominator`` as a double, null when the denominator is null or 0.

    The report's ``frame.ratio``.
    """
    positive = pc.fill_null(pc.greater(denominator, pa.scalar(0, denominator.type)), False)  # noqa: FBT003
    return pc.if_else(positive, pc.divide(numerator.cast(_F64), denominator.cast(_F64)), _NULL_F)


def _column(table: pa.Table, name: str) -> pa.Array:
    return as_array(table.column(name))


def _after(values: pa.Array) -> pa.Array:
    """Each row's previous row's value (null on the first row), whatever its key."""
    if not len(values):
        return values
    return pa.concat_arrays([pa.nulls(1, values.type), values.slice(0, len(values) - 1)])


def _episodes_of(segments: Sorted, kind: str) -> pa.Table:
    """EPISODES rows of ``kind`` from SEGMENTS rows sorted by member and start."""
    column = segments.column(_KINDS[kind])
    value = column if kind == "state" else pc.if_else(column, _YES, _NO)
    # An island starts at a member's first segment, at a segment the stitch marks as the
    # range's first, or where the value changes (null-safely): Spark's starts column.
    starts = pc.or_(pc.or_(segments.first, segments.column("first")), differs(_after(value), value))
    islands = pa.table(
        {
            "island": pc.cumulative_sum(starts.cast(pa.int64())),
            "group_label": segments.column("group_label"),
            "member_id": segments.column("member_id"),
            "value": value,
            "start": segments.column("start"),
            "last_at": segments.column("last_at"),
            "open_start": segments.column("first"),
            "open_end": segments.column("last"),
        }
    )
    merged = Sorted(
        aggregate(
            islands,
            ["island", "group_label", "member_id", "value"],
            [("start", "min"), ("last_at", "max"), ("open_start", "max"), ("open_end", "max")],
        ),
        _MEMBER,
        ("start",),
    )
    start = merged.column("start")
    end = pc.coalesce(merged.next("start"), merged.column("last_at"))  # the next one's start
    return pa.table(
        {
            "group_label": merged.column("group_label"),
            "member_id": merged.column("member_id"),
            "kind": pa.array([kind] * merged.n, pa.string()),
            "value": merged.column("value"),
            "start": start,
            "end": end,
            "duration_s": pc.subtract(epoch_seconds(end), epoch_seconds(start)),
            "open_start": merged.column("open_start"),
            "open_end": merged.column("open_end"),
        }
    )


def episodes(segments: pa.Table) -> pa.Table:
    """EPISODES rows of every kind from SEGMENTS rows, by member, kind and start."""
    ordered = Sorted(segments, _MEMBER, ("start",))
    every = pa.concat_tables([_episodes_of(ordered, kind) for kind in _KINDS])
    return _sorted(every, [*_MEMBER, "kind", "start"])


def _broadcast(table: pa.Table, per_key: pa.Table, keys: Sequence[str]) -> pa.Table:
    """``table`` with ``per_key``'s columns joined on ``keys`` (a left join)."""
    return table.join(per_key, list(keys), join_type="left outer", use_threads=False)


def _slopes(minutes: pa.Table) -> pa.Table:
    """Each member's least-squares slope of ROWS_VALIDATING's minute means against hours.

    Spark's ``regr_slope(y, x)`` over the pairs where both are known: the covariance over the
    variance of x (population), null when that is 0, computed here in two passes.
    """
    n = _column(minutes, "rows_validating_n")
    known = pc.fill_null(pc.greater(n, _ZERO), False)  # noqa: FBT003
    y = when(known, pc.divide(_column(minutes, "rows_validating_sum"), n.cast(_F64)), _NULL_F)
    x = pc.divide(epoch_seconds(_column(minutes, "minute")), pa.scalar(3_600.0, _F64))
    pairs = pa.table(
        {
            "group_label": _column(minutes, "group_label"),
            "member_id": _column(minutes, "member_id"),
            "x": when(known, x, _NULL_F),
            "y": y,
            "k": known.cast(pa.int64()),
        }
    )
    means = aggregate(pairs, _MEMBER, [("x", "sum"), ("y", "sum"), ("k", "sum")])
    means = pa.table(
        {
            "group_label": _column(means, "group_label"),
            "member_id": _column(means, "member_id"),
            "x_mean": pc.divide(_column(means, "x"), _column(means, "k").cast(_F64)),
            "y_mean": pc.divide(_column(means, "y"), _column(means, "k").cast(_F64)),
        }
    )
    joined = _broadcast(pairs, means, _MEMBER)
    dx = pc.subtract(_column(joined, "x"), _column(joined, "x_mean"))
    dy = pc.subtract(_column(joined, "y"), _column(joined, "y_mean"))
    moments = pa.table(
        {
            "group_label": _column(joined, "group_label"),
            "member_id": _column(joined, "member_id"),
            "cxy": pc.multiply(dx, dy),
            "m2x": pc.multiply(dx, dx),
        }
    )
    sums = aggregate(moments, _MEMBER, [("cxy", "sum"), ("m2x", "sum")])
    m2x = _column(sums, "m2x")
    nonzero = pc.fill_null(pc.not_equal(m2x, pa.scalar(0.0, _F64)), False)  # noqa: FBT003
    return pa.table(
        {
            "group_label": _column(sums, "group_label"),
            "member_id": _column(sums, "member_id"),
            "rows_validating_slope_per_h": pc.if_else(
                nonzero, pc.divide(_column(sums, "cxy"), m2x), _NULL_F
            ),
        }
    )


def member_figures(minutes: pa.Table, percentiles: pa.Table, episode_rows: pa.Table) -> pa.Table:
    """FIGURES rows of scope "member", by member (``figures.member_figures``)."""
    ordered = _sorted(minutes, [*_MEMBER, "minute"])
    totals = aggregate(
        ordered,
        _MEMBER,
        [
            ("member_host", "last"),
            ("member_port", "last"),
            ("first_at", "min"),
            ("last_at", "max"),
            ("snapshots", "sum"),
            ("held_s", "sum"),
            *((name, "sum") for name in (*_STATE_SECONDS, "not_connected_s", "elapsed_s")),
            *((name, "sum") for name in (*_RATES, "conflicts", "rollback")),
            ("cert_queue_max", "max"),
            ("applier_queue_max", "max"),
            ("rows_validating_sum", "sum"),
            ("rows_validating_n", "sum"),
            ("rows_validating_max", "max"),
            ("lag_seconds_max", "max"),
            ("gtids_ahead_max", "max"),
            ("throttling_s", "sum"),
        ],
    )
    kind, value = _column(episode_rows, "kind"), _column(episode_rows, "value")
    counts = aggregate(
        pa.table(
            {
                "group_label": _column(episode_rows, "group_label"),
                "member_id": _column(episode_rows, "member_id"),
                "unreachable_episodes": _flag(
                    pc.and_(pc.equal(kind, "state"), pc.equal(value, "UNREACHABLE"))
                ),
                "not_connected_episodes": _flag(
                    pc.and_(pc.equal(kind, "connected"), pc.equal(value, "NO"))
                ),
            }
        ),
        _MEMBER,
        [("unreachable_episodes", "sum"), ("not_connected_episodes", "sum")],
    )
    table = _broadcast(totals, _slopes(ordered), _MEMBER)
    table = _broadcast(table, percentiles.select(list(MEMBER_PERCENTILE_COLUMNS)), _MEMBER)
    table = _broadcast(table, counts, _MEMBER)
    n = table.num_rows
    columns: dict[str, Any] = {
        name: _column(table, name) for name in table.column_names if name in FIGURE_COLUMNS
    }
    columns |= {
        "scope": pa.array(["member"] * n, pa.string()),
        "observed_s": _column(table, "held_s"),
        **{
            f"{name}_per_s": _ratio(_column(table, name), _column(table, "elapsed_s"))
            for name in _RATES
        },
        "conflict_rate": _ratio(_column(table, "conflicts"), _column(table, "checked")),
        "rollback_ratio": _ratio(_column(table, "rollback"), _column(table, "proposed")),
        "rows_validating_mean": _ratio(
            _column(table, "rows_validating_sum"), _column(table, "rows_validating_n")
        ),
        **{
            name: pc.fill_null(_column(table, name), _ZERO)
            for name in ("unreachable_episodes", "not_connected_episodes")
        },
    }
    return _sorted(pa.table({name: columns[name] for name in FIGURE_COLUMNS}), _MEMBER)


def _flag(condition: pa.Array) -> pa.Array:
    return pc.fill_null(condition, False).cast(pa.int64())  # noqa: FBT003


def group_figures(members: pa.Table, totals: pa.Table, percentiles: pa.Table) -> pa.Table:
    """FIGURES rows of scope "group", one per group (``figures.group_figures``)."""
    sums = aggregate(
        members,
        _GROUP,
        [
            ("first_at", "min"),
            ("last_at", "max"),
            ("applied_per_s", "sum"),
            ("proposed_per_s", "sum"),
            ("checked_per_s", "max"),
            ("applied", "sum"),
            ("proposed", "sum"),
            ("checked", "max"),
            ("conflicts", "max"),
            ("rollback", "sum"),
            ("cert_queue_max", "max"),
            ("applier_queue_max", "max"),
            ("lag_seconds_max", "max"),
            ("gtids_ahead_max", "max"),
            ("unreachable_episodes", "sum"),
            ("not_connected_episodes", "sum"),
        ],
    )
    ratios = aggregate(
        members.select(["group_label", "conflicts", "checked", "rollback", "proposed"]),
        _GROUP,
        [("conflicts", "sum"), ("checked", "sum"), ("rollback", "sum"), ("proposed", "sum")],
    )
    ratios = pa.table(
        {
            "group_label": _column(ratios, "group_label"),
            "conflict_rate": _ratio(_column(ratios, "conflicts"), _column(ratios, "checked")),
            "rollback_ratio": _ratio(_column(ratios, "rollback"), _column(ratios, "proposed")),
        }
    )
    table = _broadcast(sums, ratios, _GROUP)
    table = _broadcast(table, totals, _GROUP)
    table = _broadcast(table, percentiles, _GROUP)
    n = table.num_rows
    nulls = {
        "member_id": pa.nulls(n, pa.string()),
        "member_host": pa.nulls(n, pa.string()),
        "member_port": pa.nulls(n, pa.int32()),
        **{name: pa.nulls(n, _F64) for name in (*_STATE_SECONDS, "not_connected_s")},
    }
    columns = {name: _column(table, name) for name in table.column_names} | nulls
    columns["scope"] = pa.array(["group"] * n, pa.string())
    return _sorted(pa.table({name: columns[name] for name in FIGURE_COLUMNS}), _GROUP)


def _floor(times: pa.Array, origin_us: int, width_us: int) -> pa.Array:
    """Each time's bucket start: ``origin`` plus whole ``width``s, as timestamps."""
    micros = pc.subtract(times.cast(pa.int64()), pa.scalar(origin_us, pa.int64()))
    index = pc.floor(pc.divide(micros.cast(_F64), pa.scalar(float(width_us), _F64)))
    start = pc.add(
        pc.multiply(index.cast(pa.int64()), pa.scalar(width_us, pa.int64())),
        pa.scalar(origin_us, pa.int64()),
    )
    return start.cast(_UTC_US)


def member_hours(minutes: pa.Table) -> pa.Table:
    """HOURLY rows from MINUTES rows (``hourly.member_hours``)."""
    with_hour = minutes.append_column("hour", _floor(_column(minutes, "minute"), 0, _US_PER_HOUR))
    totals = aggregate(
        with_hour,
        [*_MEMBER, "hour"],
        [
            ("snapshots", "sum"),
            ("elapsed_s", "sum"),
            *((name, "sum") for name in (*_RATES, "conflicts")),
            *(
                aggregation
                for name in GAUGES
                for aggregation in (
                    (f"{name}_sum", "sum"),
                    (f"{name}_n", "sum"),
                    (f"{name}_max", "max"),
                )
            ),
            ("throttling_s", "sum"),
            ("not_connected_s", "sum"),
        ],
    )
    columns = {name: _column(totals, name) for name in totals.column_names}
    for name in _RATES:
        columns[f"{name}_per_s"] = _ratio(columns[name], columns["elapsed_s"])
    columns["conflict_rate"] = _ratio(columns["conflicts"], columns["checked"])
    for name in GAUGES:
        columns[f"{name}_mean"] = _ratio(columns[f"{name}_sum"], columns[f"{name}_n"])
        if name == "lag_seconds":
            columns[f"{name}_max"] = columns[f"{name}_max"].cast(_F64)
    table = pa.table({name: columns[name] for name in HOURLY_COLUMNS})
    return _sorted(table, [*_MEMBER, "hour"])


def worst_minutes(minutes: pa.Table, count: int, min_checked: int) -> pa.Table:
    """WORST rows: the ``count`` worst minutes of each ranking, per group.

    ``worst.worst_minutes``; ``min_checked`` is its MIN_CHECKED_PER_MINUTE.
    """
    n = minutes.num_rows
    candidates = []
    for ranking, column in (
        ("lag_seconds", "lag_seconds_max"),
        ("applier_queue", "applier_queue_max"),
    ):
        candidates.append(
            pa.table(
                {
                    "group_label": _column(minutes, "group_label"),
                    "ranking": pa.array([ranking] * n, pa.string()),
                    "minute": _column(minutes, "minute"),
                    "member_id": _column(minutes, "member_id"),
                    "value": _column(minutes, column).cast(_F64),
                }
            )
        )
    by_minute = aggregate(
        minutes.select(["group_label", "minute", "conflicts", "checked"]),
        ["group_label", "minute"],
        [("conflicts", "sum"), ("checked", "sum")],
    )
    checked = _column(by_minute, "checked")
    enough = by_minute.filter(
        pc.fill_null(pc.greater_equal(checked, pa.scalar(min_checked, pa.int64())), False)  # noqa: FBT003
    )
    candidates.append(
        pa.table(
            {
                "group_label": _column(enough, "group_label"),
                "ranking": pa.array(["conflict_rate"] * enough.num_rows, pa.string()),
                "minute": _column(enough, "minute"),
                "member_id": pa.nulls(enough.num_rows, pa.string()),
                "value": _ratio(_column(enough, "conflicts"), _column(enough, "checked")),
            }
        )
    )
    every = pa.concat_tables(candidates)
    value = _column(every, "value")
    every = every.filter(pc.fill_null(pc.greater(value, pa.scalar(0.0, _F64)), False))  # noqa: FBT003
    # Spark's row_number() over each group's ranking, by value (descending), minute, member
    # (null in conflict_rate's rows, all of them).
    ranked = Sorted(
        every.append_column("order", pc.negate(_column(every, "value"))),
        ("group_label", "ranking"),
        ("order", "minute", "member_id"),
    )
    position = pa.array(range(ranked.n), pa.int64())
    first = pc.fill_null_forward(pc.if_else(ranked.first, position, pa.scalar(None, pa.int64())))
    rank = pc.add(pc.subtract(position, first), pa.scalar(1, pa.int64())).cast(pa.int32())
    kept = pc.less_equal(rank, pa.scalar(count, pa.int32()))
    return ranked.table.append_column("rank", rank).filter(kept).select(list(WORST_COLUMNS))


def series(buckets: pa.Table, origin: dt.datetime, bucket_s: int) -> pa.Table:
    """SERIES rows: each member's largest sampled values per ``bucket_s`` bucket.

    ``buckets`` are MINUTES rows of any grain that divides ``bucket_s``; chart buckets start
    at ``origin``'s minute. Keeping each bucket's maximum keeps every peak visible however
    far the series is downsampled.
    """
    offset = origin.replace(second=0, microsecond=0)
    origin_us = round(offset.timestamp() * _US_PER_S)
    sampled = buckets.filter(
        pc.or_(
            pc.fill_null(pc.greater(_column(buckets, "applier_queue_n"), _ZERO), False),  # noqa: FBT003
            pc.fill_null(pc.greater(_column(buckets, "lag_seconds_n"), _ZERO), False),  # noqa: FBT003
        )
    )
    buckets = pa.table(
        {
            "group_label": _column(sampled, "group_label"),
            "member_id": _column(sampled, "member_id"),
            "bucket_start": _floor(_column(sampled, "minute"), origin_us, bucket_s * _US_PER_S),
            "samples": _column(sampled, "applier_queue_n"),
            "applier_queue_max": _column(sampled, "applier_queue_max"),
            "lag_seconds_max": _column(sampled, "lag_seconds_max"),
        }
    )
    points = aggregate(
        buckets,
        [*_MEMBER, "bucket_start"],
        [("samples", "sum"), ("applier_queue_max", "max"), ("lag_seconds_max", "max")],
    )
    return _sorted(points.select(list(SERIES_COLUMNS)), [*_MEMBER, "bucket_start"])


def rows_of(table: pa.Table) -> list[dict[str, Any]]:
    """``table``'s rows as dicts, timestamps as aware UTC datetimes (``output.collect_rows``)."""
    stamps = [
        index for index, field in enumerate(table.schema) if pa.types.is_timestamp(field.type)
    ]
    columns = []
    for index, column in enumerate(table.columns):
        if index in stamps:
            micros = column.cast(pa.int64()).to_pylist()
            columns.append(
                [
                    None if value is None else _EPOCH + dt.timedelta(microseconds=value)
                    for value in micros
                ]
            )
        else:
            columns.append(column.to_pylist())
    names = table.column_names
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]
