"""spark.report.stitch on hand-made partials, without Spark (test_rollups compares with the rows)."""

from __future__ import annotations

import pyarrow as pa

from grstats.spark.decode import ARROW_MEMBER_ROWS
from grstats.spark.report.stitch import (
    group_names,
    sketch_percentiles,
    stitch_group_totals,
    stitch_minutes,
)
from grstats.spark.rollup import ROLLUP_MAX_GAP_S, group_rollups, member_rollups
from tests.spark.report.rows import at, row

MAX_GAP_S = ROLLUP_MAX_GAP_S

_KEYS = ("group_label", "member_id")


def _arrow(rows: list[dict[str, object]]) -> pa.Table:
    """Member rows as ingest's decoder gives them, in time order."""
    ordered = sorted(rows, key=lambda r: (r["collected_at"], r["member_id"]))
    names = ARROW_MEMBER_ROWS.names
    return pa.Table.from_pylist([{n: r.get(n) for n in names} for r in ordered], ARROW_MEMBER_ROWS)


def _partials() -> pa.Table:
    """Two members' partials of two segments: snapshots 5 s apart, cut at 42.5 s."""
    rows = [
        row(member, s, group_label="g", applier_lag_seconds=s / 7, group_name="gr")
        for member in ("a", "b")
        for s in range(0, 90, 5)
    ]
    table = _arrow(rows)
    times = table.column("collected_at").to_pylist()
    cut = at(42.5)
    first = table.filter(pa.array([t < cut for t in times]))
    second = table.filter(pa.array([t >= cut for t in times]))
    return pa.concat_tables([member_rollups(first), member_rollups(second)])


def test_a_members_last_partial_holds_nothing_after_it() -> None:
    """The last snapshot of the range counts 0 s: observed time runs from first to last."""
    minutes = stitch_minutes(_partials(), MAX_GAP_S).to_pylist()
    for member in ("a", "b"):
        held = sum(m["held_s"] for m in minutes if m["member_id"] == member)
        assert held == 85.0


def test_a_cut_between_partials_is_held_across() -> None:
    """The snapshot before the cut holds until the next partial's first, 5 s later."""
    minutes = stitch_minutes(_partials(), MAX_GAP_S).to_pylist()
    first_minute = [m for m in minutes if m["member_id"] == "a" and m["minute"] == at(0)]
    assert [m["held_s"] for m in first_minute] == [60.0]


def test_a_slice_of_the_partials_gives_what_a_copy_gives() -> None:
    """Sliced sketches (whose map keys are the parent's) merge as their own copy does."""
    partials = _partials()
    half = partials.slice(partials.num_rows // 2)
    copied = pa.Table.from_pylist(half.to_pylist(), half.schema)
    assert sketch_percentiles(half, _KEYS).equals(sketch_percentiles(copied, _KEYS))
    assert sketch_percentiles(half, _KEYS).num_rows >= 1


def test_nothing_in_range_gives_empty_tables() -> None:
    """Empty partials give empty minutes, totals and percentiles, and no group."""
    empty = _partials().schema.empty_table()
    assert stitch_minutes(empty, MAX_GAP_S).num_rows == 0
    assert sketch_percentiles(empty, _KEYS).num_rows == 0
    assert group_names(empty) == {}


def test_the_latest_name_of_each_group() -> None:
    """A group's name is its partials' latest non-empty one."""
    assert group_names(_partials()) == {"g": "gr"}


def test_group_totals_of_no_partials_are_empty() -> None:
    """No group partials: no totals."""
    table = _arrow([row("a", 1, group_label="g")])
    assert stitch_group_totals(group_rollups(table).schema.empty_table(), MAX_GAP_S).num_rows == 0
