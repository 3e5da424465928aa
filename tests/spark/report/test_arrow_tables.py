"""spark.report.arrow_tables on hand-made rollups, without Spark (test_rollups compares with Spark)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from grstats.spark.decode import ARROW_MEMBER_ROWS
from grstats.spark.report import arrow_tables
from grstats.spark.report.stitch import (
    sketch_percentiles,
    stitch_group_totals,
    stitch_minutes,
    stitch_segments,
)
from grstats.spark.rollup import ROLLUP_MAX_GAP_S, group_rollups, member_rollups
from tests.spark.report.rows import at, row

MAX_GAP_S = ROLLUP_MAX_GAP_S


def _rollups(rows: list[dict[str, object]]) -> tuple[pa.Table, pa.Table]:
    """Member and group rollups of ``rows`` as one spool segment."""
    ordered = sorted(rows, key=lambda r: (r["collected_at"], r["member_id"]))
    names = ARROW_MEMBER_ROWS.names
    table = pa.Table.from_pylist([{n: r.get(n) for n in names} for r in ordered], ARROW_MEMBER_ROWS)
    return member_rollups(table), group_rollups(table)


def _state(s: int) -> str:
    return "UNREACHABLE" if 45 <= s < 60 else "ONLINE"


def _two_members() -> tuple[pa.Table, pa.Table]:
    """Members a and b every 5 s for 3 minutes; a is UNREACHABLE from 45 s to 60 s."""
    rows = [
        row(
            member,
            s,
            group_label="g",
            member_state=_state(s) if member == "a" else "ONLINE",
            count_transactions_rows_validating=40 + s,
            count_transactions_remote_in_applier_queue=7 if s in {20, 130} else 1,
            count_transactions_checked=200 * s,
            count_conflicts_detected=s // 10,
            applier_lag_seconds=0.5,
        )
        for member in ("a", "b")
        for s in range(0, 180, 5)
    ]
    return _rollups(rows)


def _figures() -> tuple[pa.Table, pa.Table, pa.Table]:
    partials, group_partials = _two_members()
    episodes = arrow_tables.episodes(stitch_segments(partials))
    members = arrow_tables.member_figures(
        stitch_minutes(partials, MAX_GAP_S),
        sketch_percentiles(partials, ("group_label", "member_id")),
        episodes,
    )
    group = arrow_tables.group_figures(
        members,
        stitch_group_totals(group_partials, MAX_GAP_S),
        sketch_percentiles(group_partials, ("group_label",)),
    )
    return episodes, members, group


def test_an_unreachable_episode_runs_to_the_next_state() -> None:
    """Member a's UNREACHABLE episode starts at its first snapshot and ends at the next ONLINE."""
    episodes = arrow_tables.rows_of(_figures()[0])
    states = [
        (e["value"], e["start"], e["end"])
        for e in episodes
        if (e["member_id"], e["kind"]) == ("a", "state")
    ]
    assert states == [
        ("ONLINE", at(0), at(45)),
        ("UNREACHABLE", at(45), at(60)),
        ("ONLINE", at(60), at(175)),
    ]
    unreachable = next(e for e in episodes if e["value"] == "UNREACHABLE")
    assert (unreachable["duration_s"], unreachable["open_start"], unreachable["open_end"]) == (
        15.0,
        False,
        False,
    )
    assert isinstance(unreachable["start"].tzinfo, dt.timezone)


def test_member_figures_count_time_and_episodes() -> None:
    """Per member: observed time, time UNREACHABLE, episode count and a linear slope."""
    members = {m["member_id"]: m for m in arrow_tables.rows_of(_figures()[1])}
    assert list(members) == ["a", "b"]
    a = members["a"]
    assert (a["scope"], a["observed_s"], a["unreachable_s"], a["unreachable_episodes"]) == (
        "member",
        175.0,
        15.0,
        1,
    )
    assert members["b"]["unreachable_episodes"] == 0
    # b's ROWS_VALIDATING grows by 1 a second: its minute means by 3,600 an hour (a's means
    # leave out its UNREACHABLE snapshots, which are not sampled).
    assert members["b"]["rows_validating_slope_per_h"] == pytest.approx(3_600.0, rel=1e-9)
    assert a["applier_queue_max"] == 7
    assert a["conflict_rate"] == pytest.approx(17 / 35_000)  # 175 // 10 of 200 * 175 checked


def test_the_group_row_adds_and_takes_the_largest() -> None:
    """The group's applied rates add up; checked is the largest member's; one row per group."""
    _, members, group = _figures()
    (row_,) = arrow_tables.rows_of(group)
    member_rows = arrow_tables.rows_of(members)
    assert row_["scope"] == "group"
    assert row_["member_id"] is None
    assert row_["checked"] == max(m["checked"] for m in member_rows)
    assert row_["unreachable_episodes"] == 1


def test_hours_and_chart_buckets() -> None:
    """One hour per member; chart buckets of 2 minutes start at the origin's minute."""
    minutes = stitch_minutes(_two_members()[0], MAX_GAP_S)
    hours = arrow_tables.rows_of(arrow_tables.member_hours(minutes))
    assert [(h["member_id"], h["hour"], h["snapshots"]) for h in hours] == [
        ("a", at(0), 36),
        ("b", at(0), 36),
    ]
    assert hours[0]["applier_queue_max"] == 7
    origin = at(61.5)  # its minute, at(60), is where buckets start; the one before is at(-60)
    series = arrow_tables.rows_of(arrow_tables.series(minutes, origin, 120))
    assert [(p["member_id"], p["bucket_start"], p["samples"]) for p in series] == [
        ("a", at(-60), 9),  # minute 0, less the 3 UNREACHABLE snapshots (not sampled)
        ("a", at(60), 24),
        ("b", at(-60), 12),
        ("b", at(60), 24),
    ]


def test_worst_minutes_break_ties_by_minute_then_member() -> None:
    """Equal values rank the earlier minute first, then the lower member; count cuts each ranking."""
    minutes = stitch_minutes(_two_members()[0], MAX_GAP_S)
    worst = arrow_tables.rows_of(arrow_tables.worst_minutes(minutes, 3, 100))
    queue = [
        (w["rank"], w["minute"], w["member_id"]) for w in worst if w["ranking"] == "applier_queue"
    ]
    assert queue == [(1, at(0), "a"), (2, at(0), "b"), (3, at(120), "a")]
    rates = [w for w in worst if w["ranking"] == "conflict_rate"]
    assert [w["member_id"] for w in rates] == [None] * len(rates)
    assert 0 < len(rates) <= 3
    assert [w["ranking"] for w in worst] == sorted(w["ranking"] for w in worst)
