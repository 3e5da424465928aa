"""The report's pieces from partials, with pyarrow: what Spark's Python tasks compute.

A rollup row is a *partial* (:mod:`grstats.spark.rollup`): one member (or group), one UTC minute,
one spool segment, with everything inside it already added up. What a partial cannot see is
what crosses its edges, and this module adds it by stitching each member's partials in time
order (they do not overlap when one collector collects the member):

* the partial's last snapshot holds until the member's next snapshot, the next partial's
  first one, at most ``max_gap_s`` (0 for the member's last partial in the range); that time
  counts in the last snapshot's state, connectedness and throttling;
* the partial's first snapshot gets the counter deltas and elapsed time since the previous
  partial's last snapshot (the same reset rule as inside a partial, :mod:`grstats.spark.rollup`);
* a segment (a run of one state, connectedness and throttling) starts at a partial's first
  snapshot when it differs from the previous partial's last one, and at each of the
  partial's recorded changes.

So minutes, segments (hence episodes) and the groups' totals are what the member rows give,
up to the order in which floating-point sums are added. One difference the episodes do not
see: a segment's ``last_at`` is its own start except for the member's last segment (a
partial records when a run starts, not the time of its last snapshot). Percentiles come from
the partials' log-bucket sketches (:mod:`grstats.spark.sketch`), merged per member or group,
and are within the sketch's relative accuracy of the value at their rank.

Every function takes partials in any order (of any grain that divides a minute) and returns
one piece: MINUTES, SEGMENTS, GROUP_TOTALS, MEMBER_PERCENTILES or GROUP_PERCENTILES rows. It
runs in Spark's Python workers (:mod:`grstats.spark.report.rollup_job`) and on the driver, so
it imports no pyspark: the rollups of a month are a few hundred thousand rows, which Arrow's
vectorised kernels stitch in about a second (docs/benchmarks.md, "Spark report").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from grstats.spark.rollup import COUNTERS, GAUGES, SKETCHED, STATES, as_array, differs
from grstats.spark.sketch import quantile

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "GROUP_PERCENTILE_COLUMNS",
    "MEMBER_PERCENTILE_COLUMNS",
    "PERCENTILES",
    "Sorted",
    "aggregate",
    "epoch_seconds",
    "group_names",
    "key_columns",
    "merged_sketches",
    "owners",
    "percentile_name",
    "sketch_percentiles",
    "stitch_group_totals",
    "stitch_minutes",
    "stitch_segments",
    "to_minutes",
    "when",
]

#: The percentiles the report gives for each gauge.
PERCENTILES: dict[str, tuple[float, ...]] = {
    "cert_queue": (0.5, 0.95),
    "applier_queue": (0.5, 0.95),
    "lag_seconds": (0.5, 0.95, 0.99),
    "gtids_ahead": (0.5,),
}


def percentile_name(gauge: str, q: float) -> str:
    """The column name of one percentile: ``lag_seconds_p99``."""
    return f"{gauge}_p{round(q * 100)}"


_PERCENTILE_COLUMNS = tuple(
    percentile_name(gauge, q) for gauge, quantiles in PERCENTILES.items() for q in quantiles
)
#: The columns of MEMBER_PERCENTILES and GROUP_PERCENTILES, in order.
MEMBER_PERCENTILE_COLUMNS = ("group_label", "member_id", *_PERCENTILE_COLUMNS)
GROUP_PERCENTILE_COLUMNS = ("group_label", *_PERCENTILE_COLUMNS)

_MEMBER = ("group_label", "member_id")
_GROUP = ("group_label",)
_ASC = "ascending"
_FALSE = pa.scalar(False, pa.bool_())  # noqa: FBT003 (an Arrow scalar)
_ZERO_S = pa.scalar(0.0, pa.float64())
_NULL_F = pa.scalar(None, pa.float64())
_ONE = pa.scalar(1, pa.int64())
_US_PER_S = pa.scalar(1_000_000.0, pa.float64())
_SUM = pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)
_LAST = pc.ScalarAggregateOptions(skip_nulls=False, min_count=0)
#: Between the keys of :func:`_key`: below every other character, so texts sort as tuples.
_SEPARATOR = "\x00"


class Sorted:
    """Partials sorted by their keys and then by time, with each row's neighbours of one key.

    Attributes:
        table: the partials, sorted.
        n: how many.
        first: the row is its key's first (it has no previous partial).
        last: the row is its key's last (it has no next partial).
    """

    def __init__(self, partials: pa.Table, keys: Sequence[str], order: Sequence[str]) -> None:
        sort_keys = [(name, _ASC) for name in (*keys, *order)]
        self.table = partials.take(pc.sort_indices(partials, sort_keys=sort_keys))
        self.n = self.table.num_rows
        new = pa.array([True] * min(self.n, 1), pa.bool_())
        if self.n > 1:
            later = pa.array([False] * (self.n - 1), pa.bool_())
            for key in keys:
                column = as_array(self.table.column(key))
                later = pc.or_(later, differs(column.slice(0, self.n - 1), column.slice(1)))
            new = pa.concat_arrays([new, later])
        self.first = new
        self.last = pa.concat_arrays([new.slice(1), pa.array([True] * min(self.n, 1), pa.bool_())])

    def column(self, name: str) -> pa.Array:
        """The column ``name`` of the sorted partials."""
        return as_array(self.table.column(name))

    def previous(self, name: str) -> pa.Array:
        """Each row's previous partial's ``name`` (null on a key's first row)."""
        values = self.column(name)
        if not self.n:
            return values
        shifted = pa.concat_arrays([pa.nulls(1, values.type), values.slice(0, self.n - 1)])
        return pc.if_else(self.first, pa.scalar(None, values.type), shifted)

    def next(self, name: str) -> pa.Array:
        """Each row's next partial's ``name`` (null on a key's last row)."""
        values = self.column(name)
        if not self.n:
            return values
        shifted = pa.concat_arrays([values.slice(1), pa.nulls(1, values.type)])
        return pc.if_else(self.last, pa.scalar(None, values.type), shifted)

    def tail(self, max_gap_s: float) -> pa.Array:
        """Seconds each partial's last snapshot holds: to the next one's first, capped; 0 last."""
        gap = pc.subtract(
            epoch_seconds(self.next("first_at")), epoch_seconds(self.column("last_at"))
        )
        cap = pa.scalar(float(max_gap_s), pa.float64())
        capped = pc.min_element_wise(gap, cap, skip_nulls=False)
        return pc.fill_null(capped, _ZERO_S)


def _contiguous(column: pa.ChunkedArray) -> pa.Array:
    """One array with offset 0: a slice's map keys and items are its parent's, all of them."""
    if not column.num_chunks:
        return pa.array([], column.type)
    return pa.concat_arrays(column.chunks)


def epoch_seconds(times: pa.Array) -> pa.Array:
    """Timestamps as seconds since the epoch (double), as the report's ``epoch_seconds``."""
    return pc.divide(times.cast(pa.int64()).cast(pa.float64()), _US_PER_S)


def when(
    condition: pa.Array, then: pa.Array | pa.Scalar, otherwise: pa.Array | pa.Scalar
) -> pa.Array:
    """``then`` where ``condition`` is true, else ``otherwise`` (a null condition is false)."""
    return pc.if_else(pc.fill_null(condition, _FALSE), then, otherwise)


def _plus(left: pa.Array, right: pa.Array) -> pa.Array:
    """``left + right`` where either may be null: null only when both are (Spark's sum rule)."""
    return pc.coalesce(pc.add(left, right), left, right)


def _delta(now: pa.Array, before: pa.Array) -> pa.Array:
    """A counter's increase; a decrease is a reset, so the new value; null if either is."""
    return pc.if_else(pc.greater_equal(now, before), pc.subtract(now, before), now)


def aggregate(
    table: pa.Table, keys: Sequence[str], aggregations: Sequence[tuple[str, str]]
) -> pa.Table:
    """``table`` grouped by ``keys`` in the order first seen; columns named as their inputs.

    Sums of nothing but nulls are null (Spark's sum); ``last`` takes the group's last row's
    value, null or not (with rows in time order, Spark's ``max_by(value, last_at)``).
    """
    options = {"sum": _SUM, "last": _LAST, "min": None, "max": None}
    done = table.group_by(list(keys), use_threads=False).aggregate(
        [(name, how, options[how]) for name, how in aggregations]
    )
    names = {f"{name}_{how}": name for name, how in aggregations}
    return done.rename_columns([names.get(column, column) for column in done.column_names])


def _key(table: pa.Table, keys: Sequence[str]) -> pa.Array:
    """The ``keys`` of each row as one text that sorts as the tuple of them does."""
    columns = [as_array(table.column(key)) for key in keys]
    if len(columns) == 1:
        return columns[0]
    return pc.binary_join_element_wise(*columns, _SEPARATOR)


#: How a member's pieces of one minute add up (``member_minutes``' rules): a sum over
#: nothing but nulls is null; host and port are the last snapshot's (pieces in time order).
_MINUTE_SUMS = (
    "snapshots",
    "held_s",
    *(f"{state.lower()}_s" for state in STATES),
    "not_connected_s",
    "throttling_s",
    "elapsed_s",
    *COUNTERS,
)
_MINUTE_AGGREGATIONS = (
    ("member_host", "last"),
    ("member_port", "last"),
    ("first_at", "min"),
    ("last_at", "max"),
    *((name, "sum") for name in _MINUTE_SUMS),
    *(
        aggregation
        for name in GAUGES
        for aggregation in ((f"{name}_max", "max"), (f"{name}_sum", "sum"), (f"{name}_n", "sum"))
    ),
)
_US_PER_MINUTE = pa.scalar(60_000_000, pa.int64())


def to_minutes(buckets: pa.Table) -> pa.Table:
    """MINUTES rows from MINUTES rows of narrower buckets (partials narrower than a minute).

    Each member's buckets of one UTC minute add up as :func:`stitch_minutes` adds the
    partials of one minute, so the figures, hours and worst minutes are the same whatever
    the grain the pieces were made at.
    """
    ordered = Sorted(buckets, _MEMBER, ("minute", "first_at")).table
    micros = as_array(ordered.column("minute")).cast(pa.int64())
    minute = pc.multiply(
        pc.floor(pc.divide(micros.cast(pa.float64()), 6e7)).cast(pa.int64()), _US_PER_MINUTE
    )
    floored = ordered.set_column(
        ordered.schema.get_field_index("minute"),
        "minute",
        minute.cast(ordered.schema.field("minute").type),
    )
    minutes = aggregate(floored, (*_MEMBER, "minute"), _MINUTE_AGGREGATIONS)
    return minutes.select(buckets.column_names)


def stitch_minutes(partials: pa.Table, max_gap_s: float) -> pa.Table:
    """Return MINUTES rows (one per member and partials' bucket) from member partials.

    Each partial gets what crosses its edges (see the module's docstring), then a member's
    partials of one minute are added up with these
    rules: a sum over nothing but nulls is null, host and port are the last snapshot's.
    """
    light = partials.drop_columns(
        [name for name in partials.column_names if name.endswith("_sketch") or name == "changes"]
    )  # sorting moves every column: not the large ones this does not read
    rows = Sorted(light, _MEMBER, ("minute", "first_at"))
    tail = rows.tail(max_gap_s)
    last_state = rows.column("last_state")
    has_counts = pc.and_(
        pc.is_valid(rows.column("first_checked")), pc.is_valid(rows.previous("last_checked"))
    )
    edge_elapsed = pc.subtract(
        epoch_seconds(rows.column("first_at")), epoch_seconds(rows.previous("last_at"))
    )
    columns: dict[str, pa.Array] = {
        name: rows.column(name)
        for name in (
            *_MEMBER,
            "minute",
            "member_host",
            "member_port",
            "snapshots",
            "first_at",
            "last_at",
        )
    }
    columns["held_s"] = pc.add(rows.column("held_s"), tail)
    for state in STATES:
        name = f"{state.lower()}_s"
        extra = when(pc.equal(last_state, pa.scalar(state, pa.string())), tail, _ZERO_S)
        columns[name] = pc.add(rows.column(name), extra)
    columns["not_connected_s"] = pc.add(
        rows.column("not_connected_s"),
        when(pc.invert(rows.column("last_connected")), tail, _ZERO_S),
    )
    columns["throttling_s"] = pc.add(
        rows.column("throttling_s"), when(rows.column("last_throttling"), tail, _ZERO_S)
    )
    columns["elapsed_s"] = _plus(rows.column("elapsed_s"), when(has_counts, edge_elapsed, _NULL_F))
    for name in COUNTERS:
        edge = _delta(rows.column(f"first_{name}"), rows.previous(f"last_{name}"))
        columns[name] = _plus(rows.column(name), edge)
    for name in GAUGES:
        for part in ("max", "sum", "n"):
            columns[f"{name}_{part}"] = rows.column(f"{name}_{part}")
    minutes = aggregate(pa.table(columns), (*_MEMBER, "minute"), _MINUTE_AGGREGATIONS)
    return minutes.select(list(columns))  # MINUTES's order, as the columns were made


def stitch_segments(partials: pa.Table) -> pa.Table:
    """Return SEGMENTS rows (runs of one state, connectedness and throttling) from partials.

    A segment starts at each change point: a partial's first snapshot when it differs
    (null-safely) from the previous partial's last one or starts the member's range, and each
    of the partial's ``changes``. Segments are numbered per member from 1 in time order, as
    the member rows would number them. ``last_at`` is the segment's
    start, except for the member's last segment, whose ``last_at`` is the member's last
    snapshot: :func:`grstats.spark.report.arrow_tables.episodes` reads ``last_at`` only there.
    """
    edges = [
        f"{side}_{what}"
        for side in ("first", "last")
        for what in ("state", "connected", "throttling")
    ]
    rows = Sorted(
        partials.select([*_MEMBER, "minute", "first_at", "last_at", *edges, "changes"]),
        _MEMBER,
        ("minute", "first_at"),
    )
    starts = rows.first
    for first, last in (
        ("first_state", "last_state"),
        ("first_connected", "last_connected"),
        ("first_throttling", "last_throttling"),
    ):
        starts = pc.or_(starts, differs(rows.column(first), rows.previous(last)))
    member_last = aggregate(rows.table.select([*_MEMBER, "last_at"]), _MEMBER, [("last_at", "max")])
    edges = rows.table.filter(starts)
    changes = rows.column("changes")
    owners = pc.list_parent_indices(changes)
    inner = pc.list_flatten(changes)
    point_columns = ("at", "member_state", "connected", "throttling")
    points = pa.concat_tables(
        [
            pa.table(
                {
                    **{key: as_array(edges.column(key)) for key in _MEMBER},
                    "start": as_array(edges.column("first_at")),
                    "member_state": as_array(edges.column("first_state")),
                    "connected": as_array(edges.column("first_connected")),
                    "throttling": as_array(edges.column("first_throttling")),
                }
            ),
            pa.table(
                {
                    **{key: pc.take(rows.column(key), owners) for key in _MEMBER},
                    **{
                        "start" if field == "at" else field: inner.field(field)
                        for field in point_columns
                    },
                }
            ),
        ]
    )
    ordered = Sorted(points, _MEMBER, ("start",))
    index = pc.subtract(pc.cumulative_sum(pa.repeat(_ONE, ordered.n)), _ONE)
    first_index = pc.fill_null_forward(
        pc.if_else(ordered.first, index, pa.scalar(None, pa.int64()))
    )
    segment = pc.add(pc.subtract(index, first_index), _ONE)
    at_end = pc.index_in(_key(ordered.table, _MEMBER), value_set=_key(member_last, _MEMBER))
    member_last_at = pc.take(as_array(member_last.column("last_at")), at_end)
    start = ordered.column("start")
    return pa.table(
        {
            **{key: ordered.column(key) for key in _MEMBER},
            "segment": segment,
            "member_state": ordered.column("member_state"),
            "connected": ordered.column("connected"),
            "throttling": ordered.column("throttling"),
            "start": start,
            "last_at": pc.if_else(ordered.last, member_last_at, start),
            "first": pc.equal(segment, _ONE),
            "last": ordered.last,
        }
    )


def stitch_group_totals(partials: pa.Table, max_gap_s: float) -> pa.Table:
    """Return GROUP_TOTALS rows (each group's totals over its snapshots) from group partials.

    Held and throttling time are stitched like a member's (each group's partials in time
    order). The ROWS_VALIDATING slope merges the partials' means and co-moments with Chan et
    al.'s pairwise formulas ("Algorithms for computing the sample variance", 1979), as Spark's
    own ``regr_slope`` merges its partitions' buffers: with N values, means X and Y,
    Cxy = sum(cxy + n (x - X)(y - Y)) and M2 = sum(m2x + n (x - X)^2), the slope is Cxy / M2,
    null when M2 is 0 (fewer than two distinct times), as ``regr_slope`` gives.
    """
    rows = Sorted(partials, _GROUP, ("first_at",))
    tail = rows.tail(max_gap_s)
    n = rows.column("rows_validating_n")
    has = pc.fill_null(pc.greater(n, pa.scalar(0, pa.int64())), _FALSE)
    n_f = n.cast(pa.float64())
    x_mean, y_mean = rows.column("rows_validating_x_mean"), rows.column("rows_validating_y_mean")
    weights = pa.table(
        {
            "group_label": rows.column("group_label"),
            "n": when(has, n, pa.scalar(None, pa.int64())),
            "nx": when(has, pc.multiply(n_f, x_mean), _NULL_F),
            "ny": when(has, pc.multiply(n_f, y_mean), _NULL_F),
        }
    )
    means = aggregate(weights, _GROUP, [("n", "sum"), ("nx", "sum"), ("ny", "sum")])
    lookup = {row["group_label"]: row for row in means.to_pylist()}
    labels = rows.column("group_label").to_pylist()

    def mean(name: str) -> pa.Array:
        values = []
        for label in labels:
            row = lookup[label]
            values.append(None if not row["n"] or row[name] is None else row[name] / row["n"])
        return pa.array(values, pa.float64())

    dx = pc.subtract(x_mean, mean("nx"))
    dy = pc.subtract(y_mean, mean("ny"))
    stitched = pa.table(
        {
            "group_label": rows.column("group_label"),
            "snapshots": rows.column("snapshots"),
            "observed_s": pc.add(rows.column("held_s"), tail),
            "throttling_s": pc.add(
                rows.column("throttling_s"), when(rows.column("last_throttling"), tail, _ZERO_S)
            ),
            "rows_validating_sum": rows.column("rows_validating_sum"),
            "rows_validating_n": n,
            "rows_validating_max": rows.column("rows_validating_max"),
            "cxy": when(
                has,
                pc.add(rows.column("rows_validating_cxy"), pc.multiply(pc.multiply(n_f, dx), dy)),
                _NULL_F,
            ),
            "m2x": when(
                has,
                pc.add(rows.column("rows_validating_m2x"), pc.multiply(pc.multiply(n_f, dx), dx)),
                _NULL_F,
            ),
        }
    )
    totals = aggregate(
        stitched,
        _GROUP,
        [
            ("snapshots", "sum"),
            ("observed_s", "sum"),
            ("rows_validating_sum", "sum"),
            ("rows_validating_n", "sum"),
            ("rows_validating_max", "max"),
            ("cxy", "sum"),
            ("m2x", "sum"),
            ("throttling_s", "sum"),
        ],
    )
    total_n = totals.column("rows_validating_n")
    positive = pc.fill_null(pc.greater(total_n, pa.scalar(0, pa.int64())), _FALSE)
    m2x = totals.column("m2x")
    nonzero = pc.fill_null(pc.not_equal(m2x, _ZERO_S), _FALSE)
    return pa.table(
        {
            "group_label": totals.column("group_label"),
            "snapshots": totals.column("snapshots"),
            "observed_s": totals.column("observed_s"),
            "rows_validating_mean": pc.if_else(
                positive,
                pc.divide(totals.column("rows_validating_sum"), total_n.cast(pa.float64())),
                _NULL_F,
            ),
            "rows_validating_max": totals.column("rows_validating_max"),
            "rows_validating_slope_per_h": pc.if_else(
                nonzero, pc.divide(totals.column("cxy"), m2x), _NULL_F
            ),
            "throttling_s": totals.column("throttling_s"),
        }
    )


def sketch_percentiles(partials: pa.Table, keys: Sequence[str]) -> pa.Table:
    """Return each key's percentiles from its partials' sketches, merged.

    MEMBER_PERCENTILES for keys (group_label, member_id), GROUP_PERCENTILES for (group_label,).

    Each percentile is the representative value of the sketch bucket that holds the value at
    its rank (rank = ceil(q * n), as ``percentile_approx``'s), so within the sketch's relative
    accuracy of that value; whole-number gauges are rounded, which makes small ones exact. A
    key whose sketches are all empty has null percentiles.
    """
    owner_keys, row_codes = owners(partials, keys)
    values: dict[str, list[float | int | None]] = {}
    for gauge in SKETCHED:
        if gauge not in PERCENTILES:
            continue
        buckets = merged_sketches(partials.column(f"{gauge}_sketch"), row_codes, len(owner_keys))
        for q in PERCENTILES[gauge]:
            values[percentile_name(gauge, q)] = [
                quantile(found, q, integer=gauge != "lag_seconds") for found in buckets
            ]
    columns = key_columns(owner_keys, keys)
    for gauge, quantiles in PERCENTILES.items():
        kind = pa.float64() if gauge == "lag_seconds" else pa.int64()
        for q in quantiles:
            name = percentile_name(gauge, q)
            columns[name] = pa.array(values[name], kind)
    return pa.table(columns)


def owners(partials: pa.Table, keys: Sequence[str]) -> tuple[pa.Array, pa.Array]:
    """The distinct ``keys`` of ``partials`` as texts, sorted, and each partial's index there."""
    combined = _key(partials, keys)
    distinct = pc.unique(combined)
    owner_keys = pc.take(distinct, pc.sort_indices(distinct))
    return owner_keys, pc.index_in(combined, value_set=owner_keys).cast(pa.int64())


def key_columns(owner_keys: pa.Array, keys: Sequence[str]) -> dict[str, pa.Array]:
    """The ``keys`` columns of :func:`owners`' texts, by name."""
    if len(keys) == 1:
        return {keys[0]: owner_keys}
    parts = pc.split_pattern(owner_keys, _SEPARATOR)
    return {key: pc.list_element(parts, index) for index, key in enumerate(keys)}


def merged_sketches(
    sketches: pa.ChunkedArray, row_codes: pa.Array, count: int
) -> list[list[tuple[int, int]]]:
    """Each owner's sketch, its partials' ``sketches`` (map columns) merged: (key, count) pairs.

    ``row_codes`` are each partial's owner (0 .. ``count`` - 1), as :func:`owners` gives them;
    a null sketch (a rollup written before the column) holds nothing.
    """
    maps = _contiguous(sketches)
    # A map as a list of its keys, for the parents (list_parent_indices takes no map).
    parents = pc.list_parent_indices(pa.ListArray.from_arrays(maps.offsets, maps.keys))
    merged = aggregate(
        pa.table({"owner": pc.take(row_codes, parents), "bucket": maps.keys, "count": maps.items}),
        ("owner", "bucket"),
        [("count", "sum")],
    )
    buckets: list[list[tuple[int, int]]] = [[] for _ in range(count)]
    for owner, bucket, found in zip(
        merged.column("owner").to_pylist(),
        merged.column("bucket").to_pylist(),
        merged.column("count").to_pylist(),
        strict=True,
    ):
        if bucket is not None and found:
            buckets[owner].append((bucket, found))
    return buckets


def group_names(partials: pa.Table) -> dict[str, str]:
    """Return the group labels of member partials, sorted, each with its latest non-empty name.

    "" when a group never named itself; the same as the member rows give (the partials'
    ``group_name`` is their last non-empty one, at ``group_name_at``).
    """
    labels = sorted(pc.unique(partials.column("group_label")).to_pylist())
    name = partials.column("group_name")
    named = partials.filter(
        pc.and_(pc.is_valid(name), pc.not_equal(name, pa.scalar("", pa.string())))
    )
    named = named.select(["group_label", "group_name_at", "group_name"])
    latest = Sorted(named, _GROUP, ("group_name_at",)).table
    found = aggregate(latest, _GROUP, [("group_name", "last")]).to_pylist()
    names = {row["group_label"]: row["group_name"] for row in found}
    return {label: names.get(label) or "" for label in labels}
