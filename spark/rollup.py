"""Per-minute rollups of one spool segment's member rows, made at ingest beside the data files.

A report over a long range need not read every snapshot: most of its figures are sums,
counts, maxima and run boundaries, and those add up. Ingest therefore also writes, for each
segment, two small tables whose rows are **partials**:

* member rollups (:data:`ARROW_MEMBER_ROLLUPS`): one row per (group_label, member_id, UTC
  minute) of the segment's rows;
* group rollups (:data:`ARROW_GROUP_ROLLUPS`): one row per (group_label, UTC minute), over the
  group's snapshots (all member rows of one group_label with one ``collected_at``: one record),
  each reduced as the report's group snapshots are (throttling when any member throttles,
  each gauge the largest sampled value of any member).

Why partials and not whole minutes: ingest sees one segment at a time (hourly spool files,
staged in parallel, committed apart), so a minute cut by a segment's edge has a partial in
each segment. Everything between two snapshots of one partial is summed here; what crosses
a partial's edge (the held time of its last snapshot, the counter deltas and elapsed time of
its first) the report adds by stitching a member's neighbouring partials in time order, from
the first and last values each partial keeps. That is exact when each member is collected by
one collector, so that a member's partials do not overlap in time. State runs are kept as
their boundaries (the first and last state of each partial, and ``changes`` inside it), so
episodes can be rebuilt exactly. Gauge percentiles are kept as mergeable log-bucket sketches
(:mod:`grstats.spark.sketch`): approximate, within its RELATIVE_ACCURACY.

The definitions are the report's (it stitches these partials, :mod:`grstats.spark.report.model`),
written once here: a row is *sampled* when
its member is CONNECTED and ONLINE or RECOVERING; it *throttles* when sampled, ONLINE, and its
certifier or applier queue is above the flow-control threshold (pipeline_stats.cc,
Flow_control_module::flow_control_step); a snapshot holds its state until the member's next
one, at most the max gap; a counter that goes down was reset, so its delta is the new value.
The threshold and the max gap are chosen at ingest (:class:`RollupSettings`, by default
MySQL's 25000 and the report's 30 s) and recorded in each commit, so a report with other
settings reads the raw rows instead.

Staging writes each kind per UTC date of its minutes beside the segment's data file
(:mod:`grstats.spark.stage`); the commit that loads the segment names them, under
``rollups/members/`` and ``rollups/groups/`` (:mod:`grstats.spark.table`).

Runs in Spark's Python workers: no pyspark, and no numpy (not a dependency), only pyarrow
compute, a column at a time.

WARNING: ONLY APPEND to the two schemas: rollup files already written are read by name.

Appended columns and ROLLUP_VERSION: the version says what the rollups' columns *mean*, and
a table keeps one (ingest refuses another), so appending a column does not bump it. Readers
read an older rollup file with the current schema, its later columns null, and a null later
column must mean what the member rows of the same commit give. The lag by stage
(:data:`STAGES`, ``wl7374_n``, appended to the member rollups) is such a column: a commit
whose rollups predate it loaded data files that predate the stage columns too (null), so a
null sketch (no values), max and count are exactly the partials its rows make, and a report
from either source gives those minutes' stages as unknown.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from grstats.spark.rollup_settings import (
    DEFAULT_SETTINGS,
    MAX_FLOW_CONTROL_THRESHOLD,
    ROLLUP_FLOW_CONTROL_THRESHOLD,
    ROLLUP_MAX_GAP_S,
    ROLLUP_VERSION,
    RollupSettings,
    RollupSettingsError,
)
from grstats.spark.sketch import bucket_keys

# The settings live in a module without pyarrow (the command line reads their defaults and
# checks their values first); this module's API includes them.
__all__ = [
    "ARROW_GROUP_ROLLUPS",
    "ARROW_MEMBER_ROLLUPS",
    "CHANGE",
    "COUNTERS",
    "DEFAULT_SETTINGS",
    "GAUGES",
    "GRAIN_S",
    "MAX_FLOW_CONTROL_THRESHOLD",
    "ROLLUPS_DIR",
    "ROLLUP_FLOW_CONTROL_THRESHOLD",
    "ROLLUP_MAX_GAP_S",
    "ROLLUP_VERSION",
    "ROW_INPUTS",
    "SAMPLED_STATES",
    "SKETCHED",
    "STAGES",
    "STATES",
    "WL7374_MARKER",
    "RollupSettings",
    "RollupSettingsError",
    "as_array",
    "differs",
    "group_rollups",
    "member_rollups",
]

#: The rollups' directory in the table (and in a load's staging directory): a folder per kind,
#: ``members`` and ``groups``.
ROLLUPS_DIR = "rollups"

#: The width of a partial at ingest, in seconds: its ``minute`` is the UTC minute. A report
#: makes narrower ones (a divisor of it) from the member rows; ``minute`` is then their start.
GRAIN_S = 60

#: MEMBER_STATE values in report order (Group_member_info::get_member_status_string).
STATES = ("ONLINE", "RECOVERING", "UNREACHABLE", "ERROR", "OFFLINE")
#: States whose queues and lag are live values worth sampling.
SAMPLED_STATES = ("ONLINE", "RECOVERING")
#: The counters: rollup (and report) name -> column of the member rows. These definitions
#: are the report's too (it reads these partials): one definition.
COUNTERS = {
    "applied": "count_transactions_remote_applied",
    "proposed": "count_transactions_local_proposed",
    "checked": "count_transactions_checked",
    "conflicts": "count_conflicts_detected",
    "rollback": "count_transactions_local_rollback",
}
#: The gauges, over sampled rows: rollup name -> column of the member rows.
GAUGES = {
    "cert_queue": "count_transactions_in_queue",
    "applier_queue": "count_transactions_remote_in_applier_queue",
    "rows_validating": "count_transactions_rows_validating",
    "lag_seconds": "applier_lag_seconds",
    "gtids_ahead": "gtids_ahead_of_committed_all",
}
#: The gauges whose values are also kept in sketches, for percentiles.
SKETCHED = ("cert_queue", "applier_queue", "lag_seconds", "gtids_ahead")
#: The lag by stage, in seconds: columns of the member rows (the rollup names too), over
#: sampled rows, kept in the member partials only as ``<stage>_max``, ``<stage>_n`` and
#: ``<stage>_sketch``; appended after the first rollups (see the module's docstring).
STAGES = ("transport_seconds", "waiting_seconds", "apply_seconds")
#: A member partial's sampled rows whose WL#7374 fields are known (the WL#7374 transaction
#: texts are NULL on MySQL 5.7): the member column it is counted from.
WL7374_MARKER = "last_applied_transaction"

_TS = pa.timestamp("us", tz="UTC")
_SKETCH = pa.map_(pa.int64(), pa.int64())
#: One state change inside a partial: the snapshot's time and its new state.
CHANGE = pa.struct(
    [
        ("at", _TS),
        ("member_state", pa.string()),
        ("connected", pa.bool_()),
        ("throttling", pa.bool_()),
    ]
)


def _gauge_type(name: str) -> pa.DataType:
    return pa.float64() if name == "lag_seconds" else pa.int64()


#: One row per (group_label, member_id, UTC minute) of one segment's member rows.
ARROW_MEMBER_ROLLUPS = pa.schema(
    [
        ("group_label", pa.string()),
        ("group_name", pa.string()),
        ("group_name_at", _TS),
        ("member_id", pa.string()),
        ("minute", _TS),
        ("first_at", _TS),
        ("last_at", _TS),
        ("snapshots", pa.int64()),
        ("member_host", pa.string()),
        ("member_port", pa.int32()),
        ("first_state", pa.string()),
        ("first_connected", pa.bool_()),
        ("first_throttling", pa.bool_()),
        ("last_state", pa.string()),
        ("last_connected", pa.bool_()),
        ("last_throttling", pa.bool_()),
        ("changes", pa.list_(CHANGE)),
        ("held_s", pa.float64()),
        *((f"{state.lower()}_s", pa.float64()) for state in STATES),
        ("not_connected_s", pa.float64()),
        ("throttling_s", pa.float64()),
        ("elapsed_s", pa.float64()),
        *((name, pa.int64()) for name in COUNTERS),
        *((f"first_{name}", pa.int64()) for name in COUNTERS),
        *((f"last_{name}", pa.int64()) for name in COUNTERS),
        *(
            field
            for name in GAUGES
            for field in (
                (f"{name}_max", _gauge_type(name)),
                (f"{name}_sum", pa.float64()),
                (f"{name}_n", pa.int64()),
            )
        ),
        *((f"{name}_sketch", _SKETCH) for name in SKETCHED),
        # appended: the lag by stage (null in rollups written before it)
        ("wl7374_n", pa.int64()),
        *(
            field
            for name in STAGES
            for field in (
                (f"{name}_max", pa.float64()),
                (f"{name}_n", pa.int64()),
                (f"{name}_sketch", _SKETCH),
            )
        ),
    ]
)

#: One row per (group_label, UTC minute) of one segment's group snapshots.
ARROW_GROUP_ROLLUPS = pa.schema(
    [
        ("group_label", pa.string()),
        ("minute", _TS),
        ("first_at", _TS),
        ("last_at", _TS),
        ("snapshots", pa.int64()),
        ("held_s", pa.float64()),
        ("throttling_s", pa.float64()),
        ("first_throttling", pa.bool_()),
        ("last_throttling", pa.bool_()),
        ("rows_validating_sum", pa.float64()),
        ("rows_validating_n", pa.int64()),
        ("rows_validating_max", pa.int64()),
        ("rows_validating_x_mean", pa.float64()),
        ("rows_validating_y_mean", pa.float64()),
        ("rows_validating_cxy", pa.float64()),
        ("rows_validating_m2x", pa.float64()),
        *((f"{name}_sketch", _SKETCH) for name in SKETCHED),
    ]
)


# Constants as Arrow scalars: a Python number given to a compute function is converted on
# each call (see grstats.spark.decode).
_FALSE = pa.scalar(False, pa.bool_())  # noqa: FBT003 (an Arrow scalar)
_ONLINE = pa.scalar("ONLINE", pa.string())
_EMPTY = pa.scalar("", pa.string())
_US_PER_S = pa.scalar(1_000_000.0, pa.float64())
_S_PER_H = pa.scalar(3600.0, pa.float64())
_ZERO_S = pa.scalar(0.0, pa.float64())
_ZERO = pa.scalar(0, pa.int64())
_ONE = pa.scalar(1, pa.int64())
_NULL_F = pa.scalar(None, pa.float64())
_NULL_I = pa.scalar(None, pa.int64())
_SAMPLED_STATES = pa.array(SAMPLED_STATES, pa.string())
_ASCENDING = "ascending"

# A sketch entry's code while the entries of every partial are counted at once: the gauge's
# index, the partial and the bucket key, packed into one int64 (keys are within ±2**21).
_KEY_BITS = 23
_KEY_OFFSET = pa.scalar(1 << 22, pa.int64())
_KEY_MASK = pa.scalar((1 << _KEY_BITS) - 1, pa.int64())
_OWNER_BITS = 33  # partials of one segment: far fewer than 2**33; sketches: under 128
_KEY_SHIFT = pa.scalar(_KEY_BITS, pa.int64())

#: The columns of the member rows the partials are made of.
ROW_INPUTS = (
    "group_label",
    "group_name",
    "member_id",
    "collected_at",
    "record_offset",
    "member_host",
    "member_port",
    "member_state",
    "connected",
    *COUNTERS.values(),
    *GAUGES.values(),
    WL7374_MARKER,
    *STAGES,
)
_GROUP_INPUTS = ("group_label", "member_id", "collected_at", "member_state", "connected")
_SECONDS = (
    "held_s",
    *(f"{state.lower()}_s" for state in STATES),
    "not_connected_s",
    "throttling_s",
)


def member_rollups(
    rows: pa.Table, settings: RollupSettings = DEFAULT_SETTINGS, grain_s: int = GRAIN_S
) -> pa.Table:
    """Return ARROW_MEMBER_ROLLUPS of one segment's member rows (``ARROW_MEMBER_ROWS``).

    ``settings`` give the flow-control threshold and the max gap; ``grain_s`` the width of
    a partial (a minute at ingest; the report asks for less to draw short ranges). Rows
    without a member_id are skipped. The rows may come in any order: each member's are put
    in time order (ties in record order). The partials of one group_label and member_id
    come in minute order.
    """
    table = _with_member(rows.select(list(ROW_INPUTS)))
    if not table.num_rows:
        return ARROW_MEMBER_ROLLUPS.empty_table()
    members = _MemberRows(table, settings, grain_s)
    parts = members.pair_parts()
    gauges = {
        name: members.sort(
            pc.if_else(members.sampled, members.column[source], pa.scalar(None, _gauge_type(name)))
        )
        for name, source in GAUGES.items()
    }
    parts |= {f"g_{name}": values for name, values in gauges.items()}
    stages = {
        name: members.sort(pc.if_else(members.sampled, members.column[name], _NULL_F))
        for name in STAGES
    }
    parts |= {f"s_{name}": values for name, values in stages.items()}
    timed = pc.and_(members.sampled, pc.is_valid(members.column[WL7374_MARKER]))
    parts["timed"] = members.sort(timed).cast(pa.int64())
    aggregated = members.runs.aggregate(
        parts,
        [
            *((name, "sum") for name in (*_SECONDS, "elapsed_s", *COUNTERS, "changed", "timed")),
            *((f"g_{name}", how) for name in GAUGES for how in ("max", "sum", "count")),
            *((f"s_{name}", how) for name in STAGES for how in ("max", "count")),
            ("named", "max"),
        ],
    )
    out = members.edges(aggregated)
    for name in _SECONDS:
        out[name] = pc.fill_null(aggregated[f"{name}_sum"], _ZERO_S)
    out["elapsed_s"] = aggregated["elapsed_s_sum"]
    for name in COUNTERS:
        out[name] = aggregated[f"{name}_sum"]
    for name in GAUGES:
        out[f"{name}_max"] = aggregated[f"g_{name}_max"]
        out[f"{name}_sum"] = aggregated[f"g_{name}_sum"].cast(pa.float64())
        out[f"{name}_n"] = aggregated[f"g_{name}_count"]
    out["wl7374_n"] = pc.fill_null(aggregated["timed_sum"], _ZERO)
    for name in STAGES:
        out[f"{name}_max"] = aggregated[f"s_{name}_max"]
        out[f"{name}_n"] = aggregated[f"s_{name}_count"]
    sketched = {name: bucket_keys(gauges[name]) for name in SKETCHED}
    out |= _sketch_columns(members.runs, sketched | {s: bucket_keys(stages[s]) for s in STAGES})
    return pa.Table.from_arrays(
        [out[field.name] for field in ARROW_MEMBER_ROLLUPS], schema=ARROW_MEMBER_ROLLUPS
    )


class _MemberRows:
    """One segment's member rows (with a member_id), put in partial order.

    The rows stay where they are: ``order`` lists them by group_label, member_id and time
    (ties in record order), and only the columns the pairs need are taken in that order.
    Sorting small integer codes is several times faster than sorting the texts, and the
    texts are only taken at the few rows the output names (first, last, changes).
    """

    def __init__(self, table: pa.Table, settings: RollupSettings, grain_s: int) -> None:
        self.max_gap = _max_gap(settings)
        self.column = column = {name: as_array(table.column(name)) for name in table.column_names}
        self.micros = micros = column["collected_at"].cast(pa.int64())
        label_code, member_code = _codes(column["group_label"]), _codes(column["member_id"])
        self.order = pc.sort_indices(
            pa.table(
                {"l": label_code, "m": member_code, "t": micros, "o": column["record_offset"]}
            ),
            sort_keys=[("l", _ASCENDING), ("m", _ASCENDING), ("t", _ASCENDING), ("o", _ASCENDING)],
        )
        state = column["member_state"]
        self.sampled = _sampled(state, column["connected"])
        self.throttling = _throttling(
            self.sampled,
            state,
            column[GAUGES["cert_queue"]],
            column[GAUGES["applier_queue"]],
            _threshold(settings),
        )
        self.minute = _floor(self.sort(micros), grain_s)
        self.runs = _Runs.of(
            table.num_rows, (self.sort(label_code), self.sort(member_code), self.minute)
        )
        self.changed: pa.Array | None = None

    def sort(self, values: pa.Array) -> pa.Array:
        """``values`` (one per row) in partial order."""
        return pc.take(values, self.order)

    def pair_parts(self) -> dict[str, pa.Array]:
        """What each pair of consecutive snapshots of a partial adds, on the pair's later row.

        Held time (in all, by the earlier snapshot's state, not connected, throttling), elapsed
        time, counter deltas, whether the state changed; and ``named``, the row's index where
        it names its group.
        """
        runs, column = self.runs, self.column
        seconds = pc.divide(self.sort(self.micros).cast(pa.float64()), _US_PER_S)
        held = runs.held(seconds, self.max_gap)
        parts: dict[str, pa.Array] = {"held_s": held}
        states = pc.dictionary_encode(column["member_state"])
        state = self.sort(states.indices)
        connected, throttling = self.sort(column["connected"]), self.sort(self.throttling)
        previous_state = runs.previous(state)
        dictionary = states.dictionary.to_pylist()
        for name in STATES:
            if name in dictionary:
                code = pa.scalar(dictionary.index(name), state.type)
                now = pc.fill_null(pc.equal(previous_state, code), _FALSE)
                parts[f"{name.lower()}_s"] = pc.if_else(now, held, _NULL_F)
            else:
                parts[f"{name.lower()}_s"] = pa.nulls(runs.n, pa.float64())
        not_connected = pc.fill_null(pc.equal(runs.previous(connected), _FALSE), _FALSE)
        parts["not_connected_s"] = pc.if_else(not_connected, held, _NULL_F)
        was_throttling = pc.fill_null(runs.previous(throttling), _FALSE)
        parts["throttling_s"] = pc.if_else(was_throttling, held, _NULL_F)
        checked = self.sort(column[COUNTERS["checked"]])
        has_counts = pc.and_(
            runs.paired, pc.and_(pc.is_valid(checked), pc.is_valid(runs.previous(checked)))
        )
        parts["elapsed_s"] = pc.if_else(
            has_counts, pc.subtract(seconds, runs.previous(seconds)), _NULL_F
        )
        for name, source in COUNTERS.items():
            parts[name] = runs.delta(checked if name == "checked" else self.sort(column[source]))
        self.changed = changed = pc.and_(
            runs.paired,
            pc.or_(
                pc.or_(
                    differs(previous_state, state),
                    differs(runs.previous(connected), connected),
                ),
                differs(runs.previous(throttling), throttling),
            ),
        )
        parts["changed"] = changed.cast(pa.int64())
        group_name = column["group_name"]
        named = pc.and_(pc.is_valid(group_name), pc.not_equal(group_name, _EMPTY))
        parts["named"] = pc.if_else(self.sort(named), runs.index, _NULL_I)
        return parts

    def edges(self, aggregated: dict[str, pa.Array]) -> dict[str, pa.Array]:
        """The output columns read at rows: identity, first and last snapshot, changes."""
        assert self.changed is not None, "pair_parts() first"
        column, runs, order = self.column, self.runs, self.order
        at, state, connected = column["collected_at"], column["member_state"], column["connected"]
        first, last = pc.take(order, runs.starts), pc.take(order, runs.ends)
        named_row = pc.take(order, aggregated["named_max"])  # null where no row named it
        changes = pc.take(order, pc.indices_nonzero(self.changed))
        out: dict[str, pa.Array] = {
            "group_label": pc.take(column["group_label"], first),
            "group_name": pc.take(column["group_name"], named_row),
            "group_name_at": pc.take(at, named_row),
            "member_id": pc.take(column["member_id"], first),
            "minute": pc.take(self.minute, runs.starts).cast(_TS),
            "first_at": pc.take(at, first),
            "last_at": pc.take(at, last),
            "snapshots": runs.sizes,
            "member_host": pc.take(column["member_host"], last),
            "member_port": pc.take(column["member_port"], last),
            "first_state": pc.take(state, first),
            "first_connected": pc.take(connected, first),
            "first_throttling": pc.take(self.throttling, first),
            "last_state": pc.take(state, last),
            "last_connected": pc.take(connected, last),
            "last_throttling": pc.take(self.throttling, last),
            "changes": pa.ListArray.from_arrays(
                _offsets(aggregated["changed_sum"]),
                pa.StructArray.from_arrays(
                    [
                        pc.take(values, changes)
                        for values in (at, state, connected, self.throttling)
                    ],
                    fields=list(CHANGE),
                ),
                type=pa.list_(CHANGE),
            ),
        }
        for name, source in COUNTERS.items():
            out[f"first_{name}"] = pc.take(column[source], first)
            out[f"last_{name}"] = pc.take(column[source], last)
        return out


def group_rollups(
    rows: pa.Table, settings: RollupSettings = DEFAULT_SETTINGS, grain_s: int = GRAIN_S
) -> pa.Table:
    """Return ARROW_GROUP_ROLLUPS of one segment's member rows (``ARROW_MEMBER_ROWS``).

    ``settings`` give the flow-control threshold and the max gap; ``grain_s`` as
    :func:`member_rollups`. A group snapshot is every
    member row of one group_label with one ``collected_at``; rows without a member_id are
    skipped. The partials of one group_label come in minute order.
    """
    table = _with_member(rows.select([*_GROUP_INPUTS, *GAUGES.values()]))
    if not table.num_rows:
        return ARROW_GROUP_ROLLUPS.empty_table()
    column = {name: as_array(table.column(name)) for name in table.column_names}
    state = column["member_state"]
    sampled = _sampled(state, column["connected"])
    labels = pc.dictionary_encode(column["group_label"])
    members = pa.table(
        {
            "l": labels.indices,
            "t": column["collected_at"].cast(pa.int64()),
            "throttling": _throttling(
                sampled,
                state,
                column[GAUGES["cert_queue"]],
                column[GAUGES["applier_queue"]],
                _threshold(settings),
            ),
            **{
                name: pc.if_else(sampled, column[source], pa.scalar(None, _gauge_type(name)))
                for name, source in GAUGES.items()
            },
        }
    )
    snapshots = members.group_by(["l", "t"], use_threads=False).aggregate(
        [("throttling", "any"), *((name, "max") for name in GAUGES)]
    )
    ranks = _ranked(snapshots.column("l").combine_chunks(), labels.dictionary)
    snapshots = snapshots.take(
        pc.sort_indices(
            pa.table({"r": ranks, "t": snapshots.column("t")}),
            sort_keys=[("r", _ASCENDING), ("t", _ASCENDING)],
        )
    )
    snap = {name: as_array(snapshots.column(name)) for name in snapshots.column_names}
    n = snapshots.num_rows
    micros = snap["t"]
    minute = _floor(micros, grain_s)
    throttling = snap["throttling_any"]
    runs = _Runs.of(n, (snap["l"], minute))
    seconds = pc.divide(micros.cast(pa.float64()), _US_PER_S)
    held = runs.held(seconds, _max_gap(settings))
    was_throttling = pc.fill_null(runs.previous(throttling), _FALSE)
    # regr_slope's inputs as Spark's over the snapshots: x in epoch hours, y the value.
    y = snap["rows_validating_max"]
    x = pc.if_else(pc.is_valid(y), pc.divide(seconds, _S_PER_H), _NULL_F)
    y_float = y.cast(pa.float64())
    sums = runs.aggregate(
        {
            "held_s": held,
            "throttling_s": pc.if_else(was_throttling, held, _NULL_F),
            "x": x,
            "y": y_float,
            "rv": y,
        },
        [
            ("held_s", "sum"),
            ("throttling_s", "sum"),
            ("x", "mean"),
            ("y", "mean"),
            ("rv", "sum"),
            ("rv", "count"),
            ("rv", "max"),
        ],
    )
    # Second pass: sums of products of deviations from each partial's means (stable, unlike
    # sum(xy) - n * mean(x) * mean(y) with x near 500,000 hours).
    x_mean, y_mean = sums["x_mean"], sums["y_mean"]
    dx = pc.subtract(x, pc.take(x_mean, runs.pid))
    dy = pc.subtract(y_float, pc.take(y_mean, runs.pid))
    moments = runs.aggregate(
        {"cxy": pc.multiply(dx, dy), "m2x": pc.multiply(dx, dx)},
        [("cxy", "sum"), ("m2x", "sum")],
    )
    first, last = runs.starts, runs.ends
    out: dict[str, pa.Array] = {
        "group_label": pc.take(labels.dictionary, pc.take(snap["l"], first)),
        "minute": pc.take(minute, first).cast(_TS),
        "first_at": pc.take(micros, first).cast(_TS),
        "last_at": pc.take(micros, last).cast(_TS),
        "snapshots": runs.sizes,
        "held_s": pc.fill_null(sums["held_s_sum"], _ZERO_S),
        "throttling_s": pc.fill_null(sums["throttling_s_sum"], _ZERO_S),
        "first_throttling": pc.take(throttling, first),
        "last_throttling": pc.take(throttling, last),
        "rows_validating_sum": sums["rv_sum"].cast(pa.float64()),
        "rows_validating_n": sums["rv_count"],
        "rows_validating_max": sums["rv_max"],
        "rows_validating_x_mean": x_mean,
        "rows_validating_y_mean": y_mean,
        "rows_validating_cxy": moments["cxy_sum"],
        "rows_validating_m2x": moments["m2x_sum"],
    }
    out |= _sketch_columns(runs, {name: bucket_keys(snap[f"{name}_max"]) for name in SKETCHED})
    return pa.Table.from_arrays(
        [out[field.name] for field in ARROW_GROUP_ROLLUPS], schema=ARROW_GROUP_ROLLUPS
    )


class _Runs:
    """Consecutive rows with equal keys, a partial each, in rows sorted by those keys.

    Attributes:
        n: rows.
        partials: how many partials.
        pid: each row's partial: 0, 1, ... in row order.
        starts, ends: each partial's first and last row.
        sizes: each partial's rows.
        paired: whether a row's previous row is in its partial (a pair of snapshots ends there).
        index: 0 .. n-1.
    """

    def __init__(self, n: int, new: pa.Array) -> None:
        self.n = n
        self.index = _arange(n)
        self.pid = pc.subtract(pc.cumulative_sum(new.cast(pa.int64())), _ONE)
        self.starts = pc.indices_nonzero(new).cast(pa.int64())
        self.partials = len(self.starts)
        self.ends = pa.concat_arrays(
            [pc.subtract(self.starts.slice(1), _ONE), pa.array([n - 1], pa.int64())]
        )
        self.sizes = pc.add(pc.subtract(self.ends, self.starts), _ONE)
        self.paired = pc.invert(new)

    @classmethod
    def of(cls, n: int, keys: tuple[pa.Array, ...]) -> _Runs:
        """The runs of equal ``keys`` (null equal to null)."""
        new = pa.array([False] * (n - 1), pa.bool_())
        for key in keys:
            new = pc.or_(new, differs(key.slice(0, n - 1), key.slice(1)))
        return cls(n, pa.concat_arrays([pa.array([True], pa.bool_()), new]))

    def previous(self, values: pa.Array) -> pa.Array:
        """Each row's previous row's value (null on the first row; mask with ``paired``)."""
        return pa.concat_arrays([pa.nulls(1, values.type), values.slice(0, self.n - 1)])

    def held(self, seconds: pa.Array, max_gap: pa.Scalar) -> pa.Array:
        """Per row that ends a pair: the earlier snapshot's held time, capped at ``max_gap``."""
        step = pc.min_element_wise(pc.subtract(seconds, self.previous(seconds)), max_gap)
        return pc.if_else(self.paired, step, _NULL_F)

    def delta(self, counter: pa.Array) -> pa.Array:
        """Per row that ends a pair: the counter's increase, or its value after a reset."""
        before = self.previous(counter)
        grown = pc.if_else(pc.greater_equal(counter, before), pc.subtract(counter, before), counter)
        return pc.if_else(self.paired, grown, _NULL_I)

    def aggregate(
        self, columns: dict[str, pa.Array], aggregations: list[tuple[str, str]]
    ) -> dict[str, pa.Array]:
        """Aggregate ``columns`` per partial; results by ``<column>_<how>``, in partial order.

        Sums and means of nothing are null (``min_count`` 1); counts count non-null values.
        """
        options: dict[str, pc.FunctionOptions] = {
            "sum": pc.ScalarAggregateOptions(skip_nulls=True, min_count=1),
            "mean": pc.ScalarAggregateOptions(skip_nulls=True, min_count=1),
            "count": pc.CountOptions(mode="only_valid"),
        }
        done = (
            pa.table({**columns, "_pid": self.pid})
            .group_by("_pid", use_threads=False)
            .aggregate([(name, how, options.get(how)) for name, how in aggregations])
        )
        # Single-threaded grouping yields groups in the order first seen (partial order);
        # sorting keeps that true whatever the grouper does.
        done = done.take(pc.sort_indices(done.column("_pid")))
        return {name: as_array(done.column(name)) for name in done.column_names}


def as_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One array of ``values`` (a chunked array's chunks combined)."""
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    return values


def _arange(n: int) -> pa.Array:
    """0 .. n-1 as int64."""
    return pc.subtract(pc.cumulative_sum(pa.repeat(_ONE, n)), _ONE)


def _codes(values: pa.Array) -> pa.Array:
    """Each value's rank among the distinct values (null for null): sorts as the texts do.

    Small integers are several times cheaper to sort and compare than the texts.
    """
    encoded = pc.dictionary_encode(values)
    return _ranked(encoded.indices, encoded.dictionary)


def _ranked(indices: pa.Array, dictionary: pa.Array) -> pa.Array:
    """The rank of each dictionary entry an index points to (null for null)."""
    return pc.take(pc.rank(dictionary, sort_keys=_ASCENDING), indices)


def _floor(micros: pa.Array, grain_s: int) -> pa.Array:
    """µs since the epoch floored to a multiple of ``grain_s`` (int64; also before 1970)."""
    if grain_s <= 0 or GRAIN_S % grain_s:
        raise ValueError(f"grain_s: {grain_s} does not divide a minute")
    width = pa.scalar(grain_s * 1_000_000, pa.int64())
    truncated = pc.multiply(pc.divide(micros, width), width)  # toward zero
    return pc.if_else(pc.greater(truncated, micros), pc.subtract(truncated, width), truncated)


def _with_member(rows: pa.Table) -> pa.Table:
    """The rows that name a member (the rollups skip the others)."""
    member = rows.column("member_id")
    if member.null_count:
        rows = rows.filter(pc.is_valid(member))
    return rows


def _sampled(state: pa.Array, connected: pa.Array) -> pa.Array:
    """CONNECTED IS TRUE and ONLINE or RECOVERING (never null)."""
    return pc.and_(pc.fill_null(connected, _FALSE), pc.is_in(state, value_set=_SAMPLED_STATES))


def _throttling(
    sampled: pa.Array,
    state: pa.Array,
    cert_queue: pa.Array,
    applier_queue: pa.Array,
    threshold: pa.Scalar,
) -> pa.Array:
    """Sampled, ONLINE, and a queue above ``threshold``; nulls count as false (never null)."""
    over = pc.or_kleene(pc.greater(cert_queue, threshold), pc.greater(applier_queue, threshold))
    online = pc.fill_null(pc.equal(state, _ONLINE), _FALSE)
    return pc.and_(pc.and_(sampled, online), pc.fill_null(over, _FALSE))


def _threshold(settings: RollupSettings) -> pa.Scalar:
    """The flow-control threshold as an Arrow scalar (made once per call, not per use)."""
    return pa.scalar(settings.flow_control_threshold, pa.int64())


def _max_gap(settings: RollupSettings) -> pa.Scalar:
    """The max gap in seconds as an Arrow scalar."""
    return pa.scalar(settings.max_gap_s, pa.float64())


def differs(before: pa.Array, after: pa.Array) -> pa.Array:
    """Whether each pair differs, null-safely (null equals only null); never null."""
    equal = pc.fill_null(pc.equal(before, after), _FALSE)
    both_null = pc.and_(pc.is_null(before), pc.is_null(after))
    return pc.invert(pc.or_(equal, both_null))


def _sketch_columns(runs: _Runs, keys: dict[str, pa.Array]) -> dict[str, pa.Array]:
    """Each ``<gauge>_sketch`` column: per partial, a map of bucket key -> count of its values.

    All gauges' entries are counted in one hash pass over one int64 code per value (gauge,
    partial, key), and put in order by sorting the distinct codes: each map's keys ascend.
    """
    codes = []
    for index, values in enumerate(keys.values()):
        owner = pc.add(runs.pid, pa.scalar(index << _OWNER_BITS, pa.int64()))
        codes.append(
            pc.add(pc.shift_left(owner, _KEY_SHIFT), pc.add(values, _KEY_OFFSET)).drop_null()
        )
    counted = pc.value_counts(pa.concat_arrays(codes))
    code, count = counted.field("values"), counted.field("counts")
    order = pc.sort_indices(code)
    code, count = pc.take(code, order), pc.take(count, order)
    key = pc.subtract(pc.bit_wise_and(code, _KEY_MASK), _KEY_OFFSET)
    owners = pc.value_counts(pc.shift_right(code, _KEY_SHIFT))
    partials = _arange(runs.partials)
    out, start = {}, 0
    for index, name in enumerate(keys):
        wanted = pc.add(partials, pa.scalar(index << _OWNER_BITS, pa.int64()))
        found = pc.index_in(wanted, value_set=owners.field("values"))
        sizes = pc.fill_null(pc.take(owners.field("counts"), found), _ZERO)
        entries = pc.sum(sizes).as_py() or 0
        out[f"{name}_sketch"] = pa.MapArray.from_arrays(
            _offsets(sizes),
            key.slice(start, entries),
            count.slice(start, entries),
            type=_SKETCH,
        )
        start += entries
    return out


def _offsets(counts: pa.Array) -> pa.Array:
    """List offsets (int32) of consecutive lists of ``counts`` items each."""
    total = pc.cumulative_sum(pc.fill_null(counts, _ZERO).cast(pa.int64()))
    return pa.concat_arrays([pa.array([0], pa.int64()), total]).cast(pa.int32())
