"""spark.rollup: per-minute partials of one segment, against a slow, obvious reading of the rows.

The reference below loops over each member's rows in time order and computes every column the
way the contract words it; the columnar code must give the same partials on tables built by
hand (resets, nulls, state changes, gaps, midnight, two groups, ...) and on a segment that
real agents of a simulated group served to the collector's poller.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import math
import random
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from grstats.collector.spool import SpoolSettings, SpoolWriter, SyncPolicy, sealed_segments
from grstats.spark.decode import ARROW_MEMBER_ROWS, decode_segment
from grstats.spark.rollup import (
    ARROW_GROUP_ROLLUPS,
    ARROW_MEMBER_ROLLUPS,
    COUNTERS,
    GAUGES,
    ROLLUP_FLOW_CONTROL_THRESHOLD,
    ROLLUP_MAX_GAP_S,
    SKETCHED,
    STAGES,
    STATES,
    WL7374_MARKER,
    RollupSettings,
    RollupSettingsError,
    group_rollups,
    member_rollups,
)
from grstats.spark.sketch import key_of
from tests.agent.test_runtime import start_group
from tests.spark.report.test_ground_truth import SCENARIO, Collection

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

T0 = dt.datetime(2026, 1, 5, tzinfo=dt.UTC)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
THRESHOLD = ROLLUP_FLOW_CONTROL_THRESHOLD
DEFAULT = RollupSettings()
#: Settings the reference checks: the default, a DBA's lower threshold, the ground-truth
#: tests' 1500, and a shorter max gap.
SETTINGS = [
    DEFAULT,
    RollupSettings(flow_control_threshold=10_000),
    RollupSettings(flow_control_threshold=1500),
    RollupSettings(max_gap_s=10.0),
    RollupSettings(flow_control_threshold=1500, max_gap_s=10.0),
]
MEMBER = "00000000-0000-0000-0000-000000000001"
OTHER = "00000000-0000-0000-0000-000000000002"

# -- the reference: one row at a time, in each member's time order --------------------------


def micros(at: dt.datetime) -> int:
    """µs since the epoch, exactly."""
    return (at - EPOCH) // dt.timedelta(microseconds=1)


def seconds(at: dt.datetime) -> float:
    """Seconds since the epoch as Spark's unix_micros(t) / 1e6 gives them."""
    return micros(at) / 1_000_000


def minute_of(at: dt.datetime) -> dt.datetime:
    """The UTC minute ``at`` falls in."""
    return at.replace(second=0, microsecond=0)


def sampled(row: dict[str, Any]) -> bool:
    """CONNECTED IS TRUE and ONLINE or RECOVERING."""
    return row["connected"] is True and row["member_state"] in ("ONLINE", "RECOVERING")


def throttling(row: dict[str, Any], threshold: int = THRESHOLD) -> bool:
    """Sampled, ONLINE, and a queue above ``threshold`` (a null queue is not above it)."""
    queues = (row[GAUGES["cert_queue"]], row[GAUGES["applier_queue"]])
    over = any(q is not None and q > threshold for q in queues)
    return sampled(row) and row["member_state"] == "ONLINE" and over


def gauge(row: dict[str, Any], name: str) -> Any:
    """The gauge's value where the row is sampled, else None."""
    return row[GAUGES[name]] if sampled(row) else None


def delta(before: int | None, after: int | None) -> int | None:
    """The counter's increase; after a reset (a decrease) its new value; None with a None."""
    if before is None or after is None:
        return None
    return after - before if after >= before else after


def total(values: Iterable[Any]) -> Any:
    """The sum of the values that are not None; None when all are."""
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def sketch(values: Iterable[Any]) -> list[tuple[int, int]]:
    """The (key, count) pairs of the values that are not None, in key order."""
    counts = Counter(key_of(v) for v in values if v is not None)
    return sorted(counts.items())


def partials(rows: list[dict[str, Any]], key: Any) -> list[list[dict[str, Any]]]:
    """Consecutive rows with the same ``key(row)``."""
    groups: list[list[dict[str, Any]]] = []
    for row in rows:
        if groups and key(groups[-1][-1]) == key(row):
            groups[-1].append(row)
        else:
            groups.append([row])
    return groups


def reference_member_rollups(table: pa.Table, settings: RollupSettings) -> list[dict[str, Any]]:
    """ARROW_MEMBER_ROLLUPS rows of ``table`` with ``settings``, computed one row at a time."""

    def throttles(row: dict[str, Any]) -> bool:
        return throttling(row, settings.flow_control_threshold)

    rows = [r for r in table.to_pylist() if r["member_id"] is not None]
    rows.sort(
        key=lambda r: (r["group_label"], r["member_id"], r["collected_at"], r["record_offset"])
    )
    out = []
    for part in partials(
        rows, lambda r: (r["group_label"], r["member_id"], minute_of(r["collected_at"]))
    ):
        first, last = part[0], part[-1]
        pairs = list(itertools.pairwise(part))
        held = [
            (a, min(seconds(b["collected_at"]) - seconds(a["collected_at"]), settings.max_gap_s))
            for a, b in pairs
        ]
        named = [r for r in part if r["group_name"]]
        result: dict[str, Any] = {
            "group_label": first["group_label"],
            "group_name": named[-1]["group_name"] if named else None,
            "group_name_at": named[-1]["collected_at"] if named else None,
            "member_id": first["member_id"],
            "minute": minute_of(first["collected_at"]),
            "first_at": first["collected_at"],
            "last_at": last["collected_at"],
            "snapshots": len(part),
            "member_host": last["member_host"],
            "member_port": last["member_port"],
            "first_state": first["member_state"],
            "first_connected": first["connected"],
            "first_throttling": throttles(first),
            "last_state": last["member_state"],
            "last_connected": last["connected"],
            "last_throttling": throttles(last),
            "changes": [
                {
                    "at": b["collected_at"],
                    "member_state": b["member_state"],
                    "connected": b["connected"],
                    "throttling": throttles(b),
                }
                for a, b in pairs
                if (a["member_state"], a["connected"], throttles(a))
                != (b["member_state"], b["connected"], throttles(b))
            ],
            "held_s": sum(h for _, h in held),
            **{f"{s.lower()}_s": sum(h for a, h in held if a["member_state"] == s) for s in STATES},
            "not_connected_s": sum(h for a, h in held if a["connected"] is False),
            "throttling_s": sum(h for a, h in held if throttles(a)),
            "elapsed_s": total(
                seconds(b["collected_at"]) - seconds(a["collected_at"])
                for a, b in pairs
                if a[COUNTERS["checked"]] is not None and b[COUNTERS["checked"]] is not None
            ),
        }
        for name, column in COUNTERS.items():
            result[name] = total(delta(a[column], b[column]) for a, b in pairs)
        for name, column in COUNTERS.items():
            result[f"first_{name}"] = first[column]
        for name, column in COUNTERS.items():
            result[f"last_{name}"] = last[column]
        for name in GAUGES:
            values = [gauge(r, name) for r in part if gauge(r, name) is not None]
            result[f"{name}_max"] = max(values) if values else None
            result[f"{name}_sum"] = float(sum(values)) if values else None
            result[f"{name}_n"] = len(values)
        for name in SKETCHED:
            result[f"{name}_sketch"] = sketch(gauge(r, name) for r in part)
        result["wl7374_n"] = sum(1 for r in part if sampled(r) and r[WL7374_MARKER] is not None)
        for name in STAGES:
            values = [r[name] for r in part if sampled(r) and r[name] is not None]
            result[f"{name}_max"] = max(values) if values else None
            result[f"{name}_n"] = len(values)
            result[f"{name}_sketch"] = sketch(values)
        out.append(result)
    return out


def reference_group_rollups(table: pa.Table, settings: RollupSettings) -> list[dict[str, Any]]:
    """ARROW_GROUP_ROLLUPS rows of ``table`` with ``settings``, computed one snapshot at a time."""
    by_snapshot: dict[tuple[str, dt.datetime], list[dict[str, Any]]] = {}
    for row in table.to_pylist():
        if row["member_id"] is not None:
            by_snapshot.setdefault((row["group_label"], row["collected_at"]), []).append(row)
    snapshots = []
    for (label, at), members in sorted(by_snapshot.items()):
        snapshot: dict[str, Any] = {
            "label": label,
            "at": at,
            "throttling": any(throttling(m, settings.flow_control_threshold) for m in members),
        }
        for name in GAUGES:
            values = [gauge(m, name) for m in members if gauge(m, name) is not None]
            snapshot[name] = max(values) if values else None
        snapshots.append(snapshot)
    out = []
    for part in partials(snapshots, lambda s: (s["label"], minute_of(s["at"]))):
        pairs = list(itertools.pairwise(part))
        held = [(a, min(seconds(b["at"]) - seconds(a["at"]), settings.max_gap_s)) for a, b in pairs]
        points = [
            (seconds(s["at"]) / 3600, s["rows_validating"])
            for s in part
            if s["rows_validating"] is not None
        ]
        n = len(points)
        x_mean = y_mean = cxy = m2x = None
        if n:
            x_mean, y_mean = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
            cxy = sum((x - x_mean) * (y - y_mean) for x, y in points)
            m2x = sum((x - x_mean) ** 2 for x, _ in points)
        result: dict[str, Any] = {
            "group_label": part[0]["label"],
            "minute": minute_of(part[0]["at"]),
            "first_at": part[0]["at"],
            "last_at": part[-1]["at"],
            "snapshots": len(part),
            "held_s": sum(h for _, h in held),
            "throttling_s": sum(h for a, h in held if a["throttling"]),
            "first_throttling": part[0]["throttling"],
            "last_throttling": part[-1]["throttling"],
            "rows_validating_sum": float(sum(y for _, y in points)) if n else None,
            "rows_validating_n": n,
            "rows_validating_max": max(y for _, y in points) if n else None,
            "rows_validating_x_mean": x_mean,
            "rows_validating_y_mean": y_mean,
            "rows_validating_cxy": cxy,
            "rows_validating_m2x": m2x,
        }
        for name in SKETCHED:
            result[f"{name}_sketch"] = sketch(s[name] for s in part)
        out.append(result)
    return out


def assert_same(got: pa.Table, want: list[dict[str, Any]], schema: pa.Schema) -> None:
    """Row by row and column by column equal; doubles within 1e-9 (summing order differs)."""
    assert got.schema == schema
    rows = got.to_pylist()
    assert len(rows) == len(want)
    for index, (row, expected) in enumerate(zip(rows, want, strict=True)):
        assert list(row) == list(expected) == schema.names
        for name in schema.names:
            value, wanted = row[name], expected[name]
            if schema.field(name).type == pa.float64() and wanted is not None:
                assert value == pytest.approx(wanted, rel=1e-9, abs=1e-6), (index, name)
            else:
                assert value == wanted, (index, name, value, wanted)


def check(table: pa.Table, settings: RollupSettings = DEFAULT) -> tuple[pa.Table, pa.Table]:
    """Both rollups of ``table`` with ``settings`` equal the reference's; return them."""
    members, groups = member_rollups(table, settings), group_rollups(table, settings)
    assert_same(members, reference_member_rollups(table, settings), ARROW_MEMBER_ROLLUPS)
    assert_same(groups, reference_group_rollups(table, settings), ARROW_GROUP_ROLLUPS)
    return members, groups


# -- tables built by hand ---------------------------------------------------------------


def row(second: float, member: str | None = MEMBER, **cells: Any) -> dict[str, Any]:
    """A member row collected ``second`` seconds after T0; ``cells`` override columns."""
    at = T0 + dt.timedelta(seconds=second)
    values: dict[str, Any] = dict.fromkeys(ARROW_MEMBER_ROWS.names)
    values |= {
        "collected_at": at,
        "collected_date": at.date(),
        "agent": "db1:7400",
        "member_id": member,
        "member_host": "db1",
        "member_port": 3306,
        "member_state": "ONLINE",
        "connected": True,
        "segment": "segment-1.sealed",
        "record_offset": round(second * 1000),
        "group_label": "east",
        "group_name": "aaaaaaaa-bbbb-cccc-dddd-000000000000",
        "count_transactions_remote_applied": round(10 * second),
        "count_transactions_local_proposed": round(3 * second),
        "count_transactions_checked": round(20 * second),
        "count_conflicts_detected": round(second) // 10,
        "count_transactions_local_rollback": 0,
        "count_transactions_in_queue": 2,
        "count_transactions_remote_in_applier_queue": 5,
        "count_transactions_rows_validating": 40,
        "applier_lag_seconds": 0.25,
        "gtids_ahead_of_committed_all": 3,
        "last_applied_transaction": "aaaaaaaa-bbbb-cccc-dddd-000000000000:7",
        "transport_seconds": 0.002 + 0.001 * (round(second) % 5),
        "waiting_seconds": 0.5 * (round(second) % 3),
        "apply_seconds": 0.0004,
    }
    return values | cells


def table_of(rows: list[dict[str, Any]]) -> pa.Table:
    """The rows as a decoded segment's table."""
    return pa.Table.from_pylist(rows, schema=ARROW_MEMBER_ROWS)


def one(table: pa.Table, **where: Any) -> dict[str, Any]:
    """The one row of ``table`` with the given values."""
    found: list[dict[str, Any]] = [
        r for r in table.to_pylist() if all(r[k] == v for k, v in where.items())
    ]
    assert len(found) == 1, found
    return found[0]


class TestMemberRollups:
    def test_counter_resets_count_from_zero(self) -> None:
        """A counter that goes down adds its new value; the first and last values are kept."""
        rows = [
            row(0, count_transactions_remote_applied=100),
            row(1, count_transactions_remote_applied=150),
            row(2, count_transactions_remote_applied=7),  # restarted
            row(3, count_transactions_remote_applied=10),
        ]
        members, _ = check(table_of(rows))
        got = one(members)
        assert (got["applied"], got["first_applied"], got["last_applied"]) == (50 + 7 + 3, 100, 10)

    def test_null_counters_give_null_deltas_and_no_elapsed_time(self) -> None:
        """A pair with a null counter adds nothing; elapsed counts only pairs both with checked."""
        rows = [
            row(0),
            row(1, count_transactions_checked=None, count_transactions_remote_applied=None),
            row(2),
            row(4),
            row(
                5,
                member=OTHER,
                count_transactions_checked=None,
                count_transactions_local_rollback=None,
            ),
            row(
                6,
                member=OTHER,
                count_transactions_checked=None,
                count_transactions_local_rollback=None,
            ),
        ]
        members, _ = check(table_of(rows))
        mine, other = one(members, member_id=MEMBER), one(members, member_id=OTHER)
        assert mine["elapsed_s"] == pytest.approx(2.0)  # only 2 -> 4
        assert mine["applied"] == 20  # only 2 -> 4
        assert (other["elapsed_s"], other["checked"], other["rollback"]) == (None, None, None)

    def test_state_changes_with_null_connected_are_boundaries(self) -> None:
        """ONLINE, connected unknown (null), not connected, UNREACHABLE: each is a change."""
        rows = [
            row(0),
            row(1, connected=None),
            row(2, connected=None),
            row(3, connected=False),
            row(5, member_state="UNREACHABLE", connected=False),
            row(6, member_state="UNREACHABLE", connected=False),
            row(7, member_state=None, connected=False),
        ]
        members, _ = check(table_of(rows))
        got = one(members)
        assert [(c["member_state"], c["connected"]) for c in got["changes"]] == [
            ("ONLINE", None),
            ("ONLINE", False),
            ("UNREACHABLE", False),
            (None, False),
        ]
        assert (got["first_connected"], got["last_state"], got["last_connected"]) == (
            True,
            None,
            False,
        )
        assert got["online_s"] == pytest.approx(5.0)
        assert got["unreachable_s"] == pytest.approx(2.0)
        assert got["not_connected_s"] == pytest.approx(4.0)  # from 3 s on; null is not false
        assert got["cert_queue_n"] == 1  # only the first row is CONNECTED

    def test_a_gap_longer_than_max_gap_is_held_for_max_gap(self) -> None:
        """45 s between two snapshots of a minute holds the first one's state for 30 s only."""
        rows = [row(0), row(45, member_state="RECOVERING"), row(50, member_state="RECOVERING")]
        members, _ = check(table_of(rows))
        got = one(members)
        assert (got["held_s"], got["online_s"], got["recovering_s"]) == (35.0, 30.0, 5.0)
        assert got["elapsed_s"] == pytest.approx(50.0)  # elapsed time is not capped

    def test_one_snapshot_partials(self) -> None:
        """A partial of one snapshot holds 0 s, no deltas, and its values as first and last."""
        rows = [row(0), row(61), row(150, member=OTHER)]
        members, groups = check(table_of(rows))
        assert [r["snapshots"] for r in members.to_pylist()] == [1, 1, 1]
        for got in members.to_pylist():
            assert (got["held_s"], got["elapsed_s"], got["applied"], got["changes"]) == (
                0.0,
                None,
                None,
                [],
            )
            assert got["first_applied"] == got["last_applied"]
        assert [r["held_s"] for r in groups.to_pylist()] == [0.0, 0.0, 0.0]

    def test_a_minute_split_across_two_segments_gives_two_partials(self) -> None:
        """Each segment's part of a minute is a partial of its own; together they hold it all."""
        rows = [row(s) for s in range(0, 60, 5)]
        early, late = table_of(rows[:5]), table_of(rows[5:])
        whole = one(check(table_of(rows))[0])
        parts = [one(check(early)[0]), one(check(late)[0])]
        assert [p["minute"] for p in parts] == [T0, T0]
        assert sum(p["snapshots"] for p in parts) == whole["snapshots"]
        # What crosses the edge (20 s -> 25 s) is the report's to stitch from first/last values.
        crossing = (parts[1]["first_at"] - parts[0]["last_at"]).total_seconds()
        assert parts[0]["held_s"] + crossing + parts[1]["held_s"] == whole["held_s"]
        edge = parts[1]["first_applied"] - parts[0]["last_applied"]
        assert parts[0]["applied"] + edge + parts[1]["applied"] == whole["applied"]

    def test_two_groups_in_one_table(self) -> None:
        """The same member id under two labels gives partials per label; snapshots per label."""
        rows = [
            row(s, group_label=label, group_name=label)
            for s in (0, 1, 2)
            for label in ("west", "east")
        ]
        rows += [row(s, member=OTHER) for s in (0, 2)]
        members, groups = check(table_of(rows))
        assert [(r["group_label"], r["member_id"]) for r in members.to_pylist()] == [
            ("east", MEMBER),
            ("east", OTHER),
            ("west", MEMBER),
        ]
        assert [(r["group_label"], r["snapshots"]) for r in groups.to_pylist()] == [
            ("east", 3),
            ("west", 3),
        ]

    def test_midnight_splits_minutes_and_dates(self) -> None:
        """Snapshots either side of 00:00 UTC fall in the minutes 23:59 and 00:00 of two dates."""
        day = 86_400
        rows = [row(day + s) for s in (-2, -1, 0, 1)]
        members, groups = check(table_of(rows))
        assert [r["minute"] for r in members.to_pylist()] == [
            T0 + dt.timedelta(seconds=day - 60),
            T0 + dt.timedelta(seconds=day),
        ]
        assert [r["snapshots"] for r in groups.to_pylist()] == [2, 2]

    def test_negative_and_zero_lag(self) -> None:
        """Negative, zero and tiny lags are sketched below, at and near zero; the sum keeps signs."""
        lags = [-0.5, 0.0, 1e-12, 0.25, -2.0, None]
        rows = [row(i, applier_lag_seconds=lag) for i, lag in enumerate(lags)]
        members, groups = check(table_of(rows))
        got = one(members)
        assert got["lag_seconds_sketch"] == sorted(
            Counter(key_of(v) for v in lags if v is not None).items()
        )
        assert got["lag_seconds_sketch"][0][0] < 0  # -2.0 first
        assert (got["lag_seconds_max"], got["lag_seconds_n"]) == (0.25, 5)
        assert got["lag_seconds_sum"] == pytest.approx(-2.25)
        assert one(groups)["lag_seconds_sketch"] == got["lag_seconds_sketch"]

    def test_the_lag_by_stage_of_a_member_and_of_a_57_member(self) -> None:
        """Stages are sketched over sampled rows; a 5.7 member's are empty, its wl7374_n 0."""
        no_times = dict.fromkeys((WL7374_MARKER, *STAGES))
        rows = [
            row(0, transport_seconds=-0.25),  # clock skew: below zero, kept
            row(1, waiting_seconds=None),
            row(2, member_state="OFFLINE", transport_seconds=9.0),  # not sampled
            row(3, transport_seconds=1.5),
            *(row(s, member=OTHER, **no_times) for s in range(3)),
        ]
        members, _ = check(table_of(rows))
        mine, other = one(members, member_id=MEMBER), one(members, member_id=OTHER)
        assert (mine["wl7374_n"], mine["transport_seconds_max"]) == (3, 1.5)
        assert (mine["transport_seconds_n"], mine["waiting_seconds_n"]) == (3, 2)
        assert mine["transport_seconds_sketch"][0][0] < 0
        assert other["wl7374_n"] == 0
        assert [other[f"{name}_n"] for name in STAGES] == [0, 0, 0]
        assert [other[f"{name}_sketch"] for name in STAGES] == [[], [], []]

    def test_throttling_needs_a_sampled_online_member_over_the_threshold(self) -> None:
        """Over the threshold counts when ONLINE and heard; RECOVERING or not heard does not."""
        over = 2 * THRESHOLD  # a bucket of its own, apart from THRESHOLD's
        rows = [
            row(0, count_transactions_in_queue=over),
            row(1, count_transactions_in_queue=THRESHOLD),  # not above
            row(
                2, count_transactions_remote_in_applier_queue=over, count_transactions_in_queue=None
            ),
            row(3, member_state="RECOVERING", count_transactions_in_queue=over),
            row(4, connected=False, count_transactions_in_queue=over),
            row(5),
            row(0, member=OTHER, count_transactions_in_queue=over),
            row(3, member=OTHER),
        ]
        members, groups = check(table_of(rows))
        mine = one(members, member_id=MEMBER)
        assert mine["throttling_s"] == pytest.approx(2.0)  # from 0 and from 2
        assert [c["throttling"] for c in mine["changes"]] == [False, True, False, False, False]
        group = one(groups)
        assert group["throttling_s"] == pytest.approx(2.0)  # from 0 (both) and from 2 (mine)
        assert group["cert_queue_sketch"][-1] == (key_of(over), 2)  # at 0 and 3 (RECOVERING)
        assert group["first_throttling"] is True

    def test_gauges_count_only_sampled_rows_with_values(self) -> None:
        """Max, sum and n skip rows that are not sampled and null values; none: null, null, 0."""
        rows = [
            row(0, count_transactions_rows_validating=10),
            row(1, count_transactions_rows_validating=None),
            row(2, member_state="OFFLINE", count_transactions_rows_validating=99),
            row(3, member_state="RECOVERING", count_transactions_rows_validating=30),
            row(0, member=OTHER, member_state="ERROR"),
        ]
        members, groups = check(table_of(rows))
        mine, other = one(members, member_id=MEMBER), one(members, member_id=OTHER)
        assert (
            mine["rows_validating_max"],
            mine["rows_validating_sum"],
            mine["rows_validating_n"],
        ) == (30, 40.0, 2)
        assert (
            other["rows_validating_max"],
            other["rows_validating_sum"],
            other["rows_validating_n"],
        ) == (None, None, 0)
        assert other["cert_queue_sketch"] == []
        assert one(groups)["rows_validating_n"] == 2

    def test_the_last_group_name_and_host_of_a_partial(self) -> None:
        """group_name is the last non-empty one, with its time; host and port the last row's."""
        rows = [
            row(0, group_name="g-1", member_host="old"),
            row(1, group_name="g-2"),
            row(2, group_name="", member_host="new", member_port=3307),
            row(70, group_name=""),
        ]
        members, _ = check(table_of(rows))
        first, second = members.to_pylist()
        assert (first["group_name"], first["group_name_at"]) == (
            "g-2",
            T0 + dt.timedelta(seconds=1),
        )
        assert (first["member_host"], first["member_port"]) == ("new", 3307)
        assert (second["group_name"], second["group_name_at"]) == (None, None)

    def test_rows_in_any_order_and_without_a_member_are_skipped(self) -> None:
        """Shuffled rows give the sorted rows' rollups; a row without member_id counts nowhere."""
        rows = [row(s) for s in range(0, 130, 3)] + [row(s, member=OTHER) for s in range(1, 130, 7)]
        rows.append(row(4, member=None, count_transactions_in_queue=10**9))
        shuffled = rows[:]
        random.Random(7).shuffle(shuffled)  # noqa: S311 (a seeded order, no secret)
        members, groups = check(table_of(shuffled))
        assert members.equals(member_rollups(table_of(rows)))
        assert groups.equals(group_rollups(table_of(rows)))
        assert max(r["cert_queue_max"] for r in members.to_pylist()) == 2

    def test_an_empty_table_gives_empty_rollups(self) -> None:
        """No rows (or only rows without a member): empty tables with the schemas."""
        for rows in ([], [row(0, member=None)]):
            assert member_rollups(table_of(rows)) == ARROW_MEMBER_ROLLUPS.empty_table()
            assert group_rollups(table_of(rows)) == ARROW_GROUP_ROLLUPS.empty_table()


class TestSettings:
    @pytest.mark.parametrize("settings", SETTINGS, ids=repr)
    def test_rollups_equal_the_reference_at_each_setting(self, settings: RollupSettings) -> None:
        """Queues between 1500 and 25000 and gaps between 10 s and 30 s roll up as the reference does."""
        rows = [
            row(0, count_transactions_in_queue=2000),
            row(12, count_transactions_remote_in_applier_queue=12_000),
            row(20, count_transactions_in_queue=1500),
            row(45, count_transactions_in_queue=30_000),
            row(50, member_state="RECOVERING", count_transactions_in_queue=30_000),
            row(59),
            row(5, member=OTHER, count_transactions_remote_in_applier_queue=1501),
            row(40, member=OTHER),
            row(70, member=OTHER, count_transactions_in_queue=1600),
        ]
        check(table_of(rows), settings)

    def test_a_lower_threshold_marks_throttling_the_default_does_not(self) -> None:
        """A queue of 2000 throttles at threshold 1500 (10000's DBA, the scenario's 1500), not at 25000."""
        rows = [row(0, count_transactions_in_queue=2000), row(3), row(4)]
        by_threshold = {}
        for threshold in (1500, 25_000):
            members, groups = check(table_of(rows), RollupSettings(threshold))
            mine, group = one(members), one(groups)
            by_threshold[threshold] = (
                mine["first_throttling"],
                mine["throttling_s"],
                [c["throttling"] for c in mine["changes"]],
                group["throttling_s"],
            )
        assert by_threshold == {1500: (True, 3.0, [False], 3.0), 25_000: (False, 0.0, [], 0.0)}

    def test_a_max_gap_of_10_s_caps_held_time_at_10_s(self) -> None:
        """25 s between two snapshots holds the first one's state for 10 s at max gap 10, 25 s at 30."""
        rows = [row(0), row(25, member_state="RECOVERING"), row(30, member_state="RECOVERING")]
        held = {}
        for gap in (10.0, 30.0):
            members, groups = check(table_of(rows), RollupSettings(max_gap_s=gap))
            mine = one(members)
            held[gap] = (
                mine["held_s"],
                mine["online_s"],
                mine["recovering_s"],
                one(groups)["held_s"],
            )
            assert mine["elapsed_s"] == pytest.approx(30.0)  # elapsed time is never capped
        assert held == {10.0: (15.0, 10.0, 5.0, 15.0), 30.0: (30.0, 25.0, 5.0, 30.0)}


class TestGroupRollups:
    def test_each_snapshot_takes_the_largest_sampled_value_of_any_member(self) -> None:
        """Per snapshot the max over sampled members; a snapshot without one has no value."""
        rows = [
            row(0, count_transactions_remote_in_applier_queue=5),
            row(0, member=OTHER, count_transactions_remote_in_applier_queue=9),
            row(1, count_transactions_remote_in_applier_queue=50, connected=False),
            row(1, member=OTHER, count_transactions_remote_in_applier_queue=7),
            row(2, member_state="UNREACHABLE"),
            row(2, member=OTHER, member_state="UNREACHABLE"),
        ]
        _, groups = check(table_of(rows))
        got = one(groups)
        assert got["applier_queue_sketch"] == sorted([(key_of(9), 1), (key_of(7), 1)])
        assert (got["snapshots"], got["rows_validating_n"]) == (3, 2)

    def test_rows_validating_moments_give_spark_regr_slope(self) -> None:
        """Cxy / M2x is the least-squares slope per hour of the snapshots' values."""
        rows = [row(s, count_transactions_rows_validating=100 + 2 * s) for s in range(0, 60, 6)]
        _, groups = check(table_of(rows))
        got = one(groups)
        assert got["rows_validating_cxy"] / got["rows_validating_m2x"] == pytest.approx(
            2 * 3600, rel=1e-6
        )
        assert got["rows_validating_x_mean"] == pytest.approx(
            seconds(T0 + dt.timedelta(seconds=27)) / 3600
        )


# -- a segment the simulator's agents served --------------------------------------------


async def _collect(scenario: Path, spool: Path, rounds: int, roll_at: int) -> None:
    """Poll agent 0 of three real agents once a group second; roll the segment at ``roll_at``."""
    group = await start_group(3, scenario=str(scenario))
    collection = Collection.begin(group, scenario)
    try:
        with SpoolWriter(spool, SpoolSettings(sync=SyncPolicy.SEAL)) as writer:
            for index in range(rounds):
                if index == roll_at:
                    writer.roll()
                await collection.round(writer)
    finally:
        await collection.close()


@pytest.fixture(name="simulated", scope="module")
def _simulated(tmp_path_factory: pytest.TempPathFactory) -> list[pa.Table]:
    base = tmp_path_factory.mktemp("rollup-sim")
    scenario = base / "scenario.toml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    asyncio.run(_collect(scenario, base / "spool", rounds=120, roll_at=75))
    return [decode_segment(path).rows for path in sealed_segments(base / "spool")]


@pytest.mark.slow
@pytest.mark.xdist_group("rollup-simulated")  # one worker collects the segments (about 14 s)
class TestSimulatedSegments:
    @pytest.mark.parametrize("settings", SETTINGS, ids=repr)
    def test_rollups_of_each_segment_equal_the_reference(
        self, simulated: list[pa.Table], settings: RollupSettings
    ) -> None:
        """Both segments (a crash, OFFLINE, a restart with counters reset) roll up as the reference does."""
        assert len(simulated) == 2
        changes, resets = set(), 0
        for rows in simulated:
            members, _ = check(rows, settings)
            for r in members.to_pylist():
                changes |= {c["member_state"] for c in r["changes"]}
                resets += r["last_applied"] < r["first_applied"]
        assert changes == {"UNREACHABLE", "OFFLINE", "RECOVERING", "ONLINE"}
        assert resets == 1

    def test_the_scenario_threshold_marks_throttling_the_default_does_not(
        self, simulated: list[pa.Table]
    ) -> None:
        """At the scenario's own threshold of 1500 its slow member throttles; at 25000 nobody does."""
        low = RollupSettings(flow_control_threshold=1500)
        throttled = {
            settings: sum(
                r["throttling_s"]
                for rows in simulated
                for make in (member_rollups, group_rollups)
                for r in make(rows, settings).to_pylist()
            )
            for settings in (DEFAULT, low)
        }
        assert throttled[DEFAULT] == 0.0
        assert throttled[low] > 0.0

    def test_stitching_partials_gives_the_figures_of_all_rows(
        self, simulated: list[pa.Table]
    ) -> None:
        """Per member, the partials plus what crosses their edges hold what all its rows hold."""
        partial_rows = [r for rows in simulated for r in member_rollups(rows).to_pylist()]
        everything = pa.concat_tables(simulated).to_pylist()
        for member in {r["member_id"] for r in everything}:
            rows = sorted(
                (r for r in everything if r["member_id"] == member), key=lambda r: r["collected_at"]
            )
            pairs = list(itertools.pairwise(rows))
            column = COUNTERS["applied"]
            mine = sorted(
                (r for r in partial_rows if r["member_id"] == member), key=lambda r: r["first_at"]
            )
            held = sum(r["held_s"] for r in mine)
            applied = total(r["applied"] for r in mine) or 0
            for before, after in itertools.pairwise(mine):
                held += min(
                    seconds(after["first_at"]) - seconds(before["last_at"]), ROLLUP_MAX_GAP_S
                )
                applied += delta(before["last_applied"], after["first_applied"]) or 0
            want_held = sum(
                min(seconds(b["collected_at"]) - seconds(a["collected_at"]), ROLLUP_MAX_GAP_S)
                for a, b in pairs
            )
            assert held == pytest.approx(want_held, rel=1e-9)
            assert applied == (total(delta(a[column], b[column]) for a, b in pairs) or 0)
            assert sum(r["snapshots"] for r in mine) == len(rows)


class TestRollupSettings:
    def test_the_default_settings_the_commit_records(self) -> None:
        """The default names version 1, MySQL's threshold of 25,000 and the report's 30 s gap."""
        assert DEFAULT.to_json() == {
            "version": 1,
            "flow_control_threshold": 25_000,
            "max_gap_s": 30.0,
        }
        assert math.isclose(ROLLUP_MAX_GAP_S, 30.0)

    @pytest.mark.parametrize("settings", SETTINGS, ids=repr)
    def test_the_json_reads_back(self, settings: RollupSettings) -> None:
        """from_json gives back the settings to_json wrote, through JSON text."""
        assert RollupSettings.from_json(json.loads(json.dumps(settings.to_json()))) == settings

    def test_a_whole_number_of_seconds_is_the_same_setting(self) -> None:
        """max_gap_s 10 and 10.0 are one setting, recorded as 10.0."""
        assert RollupSettings(max_gap_s=10) == RollupSettings(max_gap_s=10.0)
        assert RollupSettings(max_gap_s=10).to_json()["max_gap_s"] == 10.0

    @pytest.mark.parametrize(
        ("fields", "message"),
        [
            ({"flow_control_threshold": 0}, "flow_control_threshold: 0 is not in [1, 2147483647]"),
            (
                {"flow_control_threshold": 2**31},
                "flow_control_threshold: 2147483648 is not in [1, 2147483647]",
            ),
            (
                {"flow_control_threshold": 1.5},
                "flow_control_threshold: 1.5 is not in [1, 2147483647]",
            ),
            (
                {"flow_control_threshold": True},
                "flow_control_threshold: True is not in [1, 2147483647]",
            ),
            ({"max_gap_s": 0.0}, "max_gap_s: 0.0 is not a number of seconds > 0"),
            ({"max_gap_s": -1.0}, "max_gap_s: -1.0 is not a number of seconds > 0"),
            ({"max_gap_s": math.inf}, "max_gap_s: inf is not a number of seconds > 0"),
            ({"max_gap_s": math.nan}, "max_gap_s: nan is not a number of seconds > 0"),
            ({"max_gap_s": "30"}, "max_gap_s: '30' is not a number of seconds > 0"),
        ],
    )
    def test_invalid_values_name_the_field_and_the_value(
        self, fields: dict[str, Any], message: str
    ) -> None:
        """Out of range or of another type: RollupSettingsError naming the field and the value."""
        with pytest.raises(RollupSettingsError) as caught:
            RollupSettings(**fields)
        assert str(caught.value) == message

    @pytest.mark.parametrize(
        ("data", "message"),
        [
            (
                {"version": 2, "flow_control_threshold": 1500, "max_gap_s": 30.0},
                "version: 2 is not 1",
            ),
            ({"flow_control_threshold": 1500, "max_gap_s": 30.0}, "version: None is not 1"),
            ({"version": 1, "max_gap_s": 30.0}, "flow_control_threshold: None is not in"),
        ],
    )
    def test_json_of_another_version_or_incomplete_is_refused(
        self, data: dict[str, Any], message: str
    ) -> None:
        """A version this grstats does not make, or a missing field, raises RollupSettingsError."""
        with pytest.raises(RollupSettingsError, match=re.escape(message)):
            RollupSettings.from_json(data)
