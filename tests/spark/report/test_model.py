"""The report's one model on hand-made member rows: partials, stitched, then every figure.

Spark-free and in-process: :mod:`tests.spark.report.model_rows` runs the code a report runs
(:mod:`grstats.spark.report.model`) on Arrow tables. The simulator's ground-truth tests run
the same model through Spark on collected and ingested data.
"""

from __future__ import annotations

import datetime as dt
import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

from grstats.spark.report.model import (
    GRAINS,
    PIECES,
    chart_bucket_s,
    partials_of_rows,
    span,
    stitch,
)
from grstats.spark.report.rollup_job import read_partials
from grstats.spark.rollup import ARROW_GROUP_ROLLUPS, ARROW_MEMBER_ROLLUPS
from grstats.spark.rollup_settings import RollupSettings
from tests.spark.report.model_rows import arrow_rows, episodes, figures, report
from tests.spark.report.rows import T0, at, row

if TYPE_CHECKING:
    from pathlib import Path

THRESHOLD = 25_000


def nearest_rank(values: list[Any], quantile: float) -> Any:
    """The smallest sample with at least ``quantile`` of the samples at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(quantile * len(ordered)) - 1)]


def states(*spans: tuple[str, int]) -> list[dict[str, Any]]:
    """Rows of member "a", one a second: (state, seconds) spans in order."""
    rows, second = [], 0
    for state, count in spans:
        for _ in range(count):
            rows.append(row("a", second, member_state=state))
            second += 1
    return rows


class TestCounters:
    def test_rates_ratios_and_resets(self) -> None:
        """Rates are counter increases over the seconds they span; a restart is not negative."""
        applied = [0, 100, 200, 300, 50, 150]  # restarted between 3 s and 4 s
        rows = [
            row(
                "a",
                s,
                count_transactions_remote_applied=applied[s],
                count_transactions_local_proposed=40 * s,
                count_transactions_local_rollback=2 * s,
                count_transactions_checked=100 * s,
                count_conflicts_detected=3 * s,
            )
            for s in range(6)
        ]
        members, group = figures(rows)
        a = members["a"]
        assert a["applied"] == 100 + 100 + 100 + 50 + 100
        assert a["applied_per_s"] == pytest.approx(450 / 5)
        assert a["proposed_per_s"] == pytest.approx(40.0)
        assert a["conflict_rate"] == pytest.approx(0.03)
        assert a["rollback_ratio"] == pytest.approx(0.05)
        assert group["applied_per_s"] == pytest.approx(a["applied_per_s"])

    def test_no_delta_across_a_missing_stats_row(self) -> None:
        """A snapshot without the member's stats row gives no delta on either side of it."""
        rows = [
            row("a", 0, count_transactions_checked=10),
            row("a", 1, count_transactions_checked=None),
            row("a", 2, count_transactions_checked=30),
            row("a", 3, count_transactions_checked=35),
        ]
        members, _ = figures(rows)
        assert members["a"]["checked"] == 5
        assert members["a"]["checked_per_s"] == pytest.approx(5.0)

    def test_group_adds_applied_and_proposed_and_takes_the_highest_checked(self) -> None:
        """Two members: proposals add up, certification is the same work seen twice."""
        rows = []
        for s in range(11):
            rows.append(
                row("a", s, count_transactions_local_proposed=30 * s,
                    count_transactions_checked=50 * s, count_transactions_remote_applied=20 * s)
            )  # fmt: skip
            rows.append(
                row("b", s, count_transactions_local_proposed=20 * s,
                    count_transactions_checked=50 * s, count_transactions_remote_applied=30 * s)
            )  # fmt: skip
        _, group = figures(rows)
        assert group["proposed_per_s"] == pytest.approx(50.0)
        assert group["applied_per_s"] == pytest.approx(50.0)
        assert group["checked_per_s"] == pytest.approx(50.0)
        assert group["snapshots"] == 11


class TestTime:
    def test_held_time_runs_to_the_next_snapshot_capped_by_the_gap(self) -> None:
        """A state holds until the member's next snapshot, at most max_gap_s; the last for 0."""
        rows = [row("a", s) for s in (0, 1, 3, 100)] + [row("b", 0), row("b", 2)]
        members, _ = figures(rows, max_gap_s=30.0)
        assert members["a"]["observed_s"] == pytest.approx(1.0 + 2.0 + 30.0)
        assert members["b"]["observed_s"] == pytest.approx(2.0)

    def test_time_in_states_and_episode_counts(self) -> None:
        """Seconds in each state add up each snapshot's held time; episodes are counted."""
        names = ["ONLINE"] * 4 + ["UNREACHABLE"] * 3 + ["ONLINE"] * 2 + ["UNREACHABLE"] * 2
        names += ["ONLINE"]
        rows = [
            row("a", s, member_state=state, connected=s not in (5, 6))
            for s, state in enumerate(names)
        ]
        members, _ = figures(rows)
        a = members["a"]
        assert a["online_s"] == pytest.approx(6.0)  # the last snapshot holds for 0 s
        assert a["unreachable_s"] == pytest.approx(5.0)
        assert a["not_connected_s"] == pytest.approx(2.0)
        assert a["unreachable_episodes"] == 2
        assert a["not_connected_episodes"] == 1
        assert a["observed_s"] == pytest.approx(11.0)

    def test_throttling_per_member_and_once_per_moment_for_the_group(self) -> None:
        """Overlapping throttling of two members counts once for the group."""
        rows = []
        for s in range(10):
            rows.append(
                row("a", s, count_transactions_remote_in_applier_queue=30_000 * (2 <= s < 6))
            )
            rows.append(row("b", s, count_transactions_in_queue=30_000 * (4 <= s < 8)))
        members, group = figures(rows)
        assert members["a"]["throttling_s"] == pytest.approx(4.0)
        assert members["b"]["throttling_s"] == pytest.approx(4.0)
        assert group["throttling_s"] == pytest.approx(6.0)

    @pytest.mark.parametrize(
        ("state", "cert", "applier", "throttles"),
        [
            ("ONLINE", 25_001, 0, True),
            ("ONLINE", 0, 25_001, True),
            ("ONLINE", 25_000, 25_000, False),
            ("RECOVERING", 0, 90_000, False),
        ],
    )
    def test_throttling_is_an_online_queue_over_the_threshold(
        self, state: str, cert: int, applier: int, throttles: bool
    ) -> None:
        """An ONLINE member's queue over the threshold throttles (Flow_control_module::flow_control_step)."""
        rows = [
            row(
                "a",
                s,
                member_state=state,
                count_transactions_in_queue=cert,
                count_transactions_remote_in_applier_queue=applier,
            )
            for s in range(3)
        ]
        members, _ = figures(rows, threshold=THRESHOLD)
        assert members["a"]["throttling_s"] == pytest.approx(2.0 if throttles else 0.0)


class TestPercentiles:
    def test_nearest_rank_over_sampled_snapshots_within_the_sketch(self) -> None:
        """Percentiles are within 1% of the sample at their rank, over sampled rows only."""
        lags = [0.1 * ((7 * s) % 23) for s in range(60)]
        queues = [(13 * s) % 41 for s in range(60)]
        rows = [
            row(
                "a",
                s,
                applier_lag_seconds=lags[s],
                count_transactions_remote_in_applier_queue=queues[s],
            )
            for s in range(60)
        ]
        rows.append(row("a", 60, applier_lag_seconds=99.0, connected=False))
        rows.append(row("a", 61, applier_lag_seconds=98.0, member_state="OFFLINE"))
        members, group = figures(rows)
        a = members["a"]
        for q in (0.5, 0.95, 0.99):
            expected = nearest_rank(lags, q)
            assert a[f"lag_seconds_p{round(q * 100)}"] == pytest.approx(expected, rel=0.01)
        assert a["applier_queue_p95"] == nearest_rank(queues, 0.95)
        assert a["lag_seconds_max"] == pytest.approx(max(lags))
        assert group["lag_seconds_p50"] == pytest.approx(nearest_rank(lags, 0.5), rel=0.01)


class TestEpisodes:
    def test_an_unreachable_island_runs_from_its_first_snapshot_to_the_next_state(self) -> None:
        """UNREACHABLE seen at 5..9 s and ONLINE again at 10 s: start 5, end 10, 5 s."""
        found = episodes(states(("ONLINE", 5), ("UNREACHABLE", 5), ("ONLINE", 5)), "state")
        assert [(e["value"], e["start"], e["end"], e["duration_s"]) for e in found] == [
            ("ONLINE", at(0), at(5), 5.0),
            ("UNREACHABLE", at(5), at(10), 5.0),
            ("ONLINE", at(10), at(14), 4.0),
        ]
        assert [(e["open_start"], e["open_end"]) for e in found] == [
            (True, False),
            (False, False),
            (False, True),
        ]

    def test_an_island_across_minutes_is_one_episode(self) -> None:
        """Partials cut snapshots into minutes, but an episode spanning three stays whole."""
        found = episodes(states(("ONLINE", 50), ("RECOVERING", 100), ("ONLINE", 30)), "state")
        recovering = [e for e in found if e["value"] == "RECOVERING"]
        assert [(e["start"], e["end"]) for e in recovering] == [(at(50), at(150))]

    def test_a_change_at_the_last_snapshot_is_an_open_episode_of_no_length(self) -> None:
        """The member turned UNREACHABLE at its last snapshot: still going, 0 s so far."""
        found = episodes(states(("ONLINE", 3), ("UNREACHABLE", 1)), "state")
        assert [(e["value"], e["duration_s"], e["open_end"]) for e in found] == [
            ("ONLINE", 3.0, False),
            ("UNREACHABLE", 0.0, True),
        ]

    def test_not_connected_episodes_per_member(self) -> None:
        """Each member's not-connected runs are separate episodes, with YES and NO runs."""
        rows = [row("a", s, connected=not 3 <= s < 7) for s in range(10)]
        rows += [row("b", s, connected=s >= 2) for s in range(10)]
        found = episodes(rows, "connected")
        assert [
            (e["member_id"], e["value"], e["start"], e["end"], e["open_start"]) for e in found
        ] == [
            ("a", "YES", at(0), at(3), True),
            ("a", "NO", at(3), at(7), False),
            ("a", "YES", at(7), at(9), False),
            ("b", "NO", at(0), at(2), True),
            ("b", "YES", at(2), at(9), False),
        ]

    def test_a_state_episode_spans_segments_cut_by_other_changes(self) -> None:
        """Losing the agent in the middle of an UNREACHABLE episode does not split it."""
        rows = [
            row("a", s, member_state="UNREACHABLE" if 2 <= s < 8 else "ONLINE",
                connected=not 4 <= s < 6)
            for s in range(10)
        ]  # fmt: skip
        found = episodes(rows, "state")
        assert [(e["value"], e["start"], e["end"]) for e in found] == [
            ("ONLINE", at(0), at(2)),
            ("UNREACHABLE", at(2), at(8)),
            ("ONLINE", at(8), at(9)),
        ]


def _busy_rows() -> list[dict[str, Any]]:
    """Two members over 10 minutes every 2 s: restarts, a down window, lags, queues, names."""
    rows = []
    for m in ("a", "b"):
        for s in range(0, 600, 2):
            down = m == "b" and 200 <= s < 260
            rows.append(
                row(
                    m,
                    s,
                    group_name="orders" if s > 30 else "",
                    member_state="UNREACHABLE" if down else "ONLINE",
                    connected=not (m == "a" and 400 <= s < 430),
                    applier_lag_seconds=((s * 7 + len(m)) % 31) / 4,
                    count_transactions_remote_in_applier_queue=(s * 13) % 97
                    + 30_000 * (s % 50 == 0),
                    count_transactions_in_queue=(s * 5) % 23,
                    count_transactions_rows_validating=s // 3,
                    count_transactions_checked=(s % 300) * 40,
                    count_transactions_local_proposed=s * 11,
                    count_transactions_remote_applied=s * 9,
                    count_conflicts_detected=s // 7,
                )
            )
    return rows


def _without_chart(tables: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {name: rows for name, rows in tables.items() if name not in ("chart_series", "bucket_s")}


def _close(left: Any, right: Any) -> bool:
    """Equal, floats up to the order in which their sums were added."""
    if isinstance(left, float) and isinstance(right, float):
        return math.isclose(left, right, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_close(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(
            _close(a, b) for a, b in zip(left, right, strict=True)
        )
    return bool(left == right)


class TestOneModel:
    @pytest.mark.parametrize("grain_s", [1, 5, 30])
    def test_every_figure_is_the_same_at_any_grain(self, grain_s: int) -> None:
        """Partials narrower than a minute give the same figures, hours and worst minutes."""
        rows = _busy_rows()
        assert _close(_without_chart(report(rows, grain_s=grain_s)), _without_chart(report(rows)))

    def test_every_figure_is_the_same_wherever_segments_cut_the_rows(self) -> None:
        """Rows cut inside minutes, at an edge and inside a down window give the uncut figures."""
        rows = _busy_rows()
        cuts = [at(61.5), at(120), at(230), at(431)]
        assert _close(report(rows, cuts=cuts), report(rows))
        assert _close(report(rows, cuts=cuts, grain_s=2), report(rows, grain_s=2))

    def test_a_short_range_is_drawn_from_its_snapshots(self) -> None:
        """A 10-minute range gets a point every 5 s, none while the member was not connected."""
        found = report(_busy_rows(), grain_s=5)
        assert found["bucket_s"] == [{"bucket_s": 5}]
        points = [p for p in found["chart_series"] if p["member_id"] == "a"]
        assert len(points) == 120 - 6
        assert not [p for p in points if at(400) <= p["bucket_start"] < at(430)]
        assert points[0]["bucket_start"] == T0
        assert max(p["applier_queue_max"] for p in points) >= 30_000


class TestChartGrain:
    @pytest.mark.parametrize(
        ("seconds", "expected"),
        [(60, 1), (150, 1), (299, 2), (5_400, 30), (6_000, 60), (30 * 86_400, 1_320)],
    )
    def test_at_least_a_hundred_points_where_the_data_has_them(
        self, seconds: int, expected: int
    ) -> None:
        """A 60 s range gets a point a second; from 100 minutes, whole minutes; 2,000 at most."""
        width = chart_bucket_s(T0, T0 + dt.timedelta(seconds=seconds), 2_000)
        assert width == expected
        assert width in GRAINS or width % 60 == 0
        assert seconds / width <= 2_000
        assert seconds / width >= 100 or width == 1


class TestGroupTotals:
    def test_the_slope_is_the_exact_least_squares_slope_across_cuts(self) -> None:
        """ROWS_VALIDATING's slope per hour equals the exact least-squares slope of the snapshots."""
        values = [(s, (s * s) // 7 + (s % 13)) for s in range(0, 300, 3)]
        rows = [row("a", s, count_transactions_rows_validating=v) for s, v in values]
        _, group = figures(rows, cuts=[at(61), at(150)])
        points = [(Fraction(s, 3_600), Fraction(v)) for s, v in values]
        mean_x = sum(x for x, _ in points) / len(points)
        mean_y = sum(y for _, y in points) / len(points)
        cxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
        m2x = sum((x - mean_x) ** 2 for x, _ in points)
        assert group["rows_validating_slope_per_h"] == pytest.approx(float(cxy / m2x), rel=1e-8)

    def test_a_single_point_has_no_slope(self) -> None:
        """One snapshot with a value: no slope (a least-squares slope needs two)."""
        rows = [
            row("a", 5, count_transactions_rows_validating=9),
            row("a", 65, count_transactions_rows_validating=None),
        ]
        _, group = figures(rows, cuts=[at(60)])
        assert group["rows_validating_slope_per_h"] is None
        assert group["rows_validating_mean"] == 9.0


class TestNamesAndEmpty:
    def test_each_label_with_its_latest_group_name(self) -> None:
        """The last non-empty GR group name of a label wins; one never named gets ""."""
        rows = [
            row("a", s, group_label="east", group_name="gr-east" if s < 70 else "")
            for s in range(0, 120, 10)
        ]
        rows += [
            row("b", s, group_label="west", group_name=f"gr-west-{s // 60}")
            for s in range(0, 120, 10)
        ]
        rows += [row("c", s, group_label="north") for s in range(0, 120, 10)]
        table = arrow_rows(rows)
        members, groups = partials_of_rows(table, RollupSettings(), 60)
        pieces = stitch(members, groups, 30.0, 60)
        assert pieces.names == {"east": "gr-east", "north": "", "west": "gr-west-1"}
        assert pieces.only("west").names == {"west": "gr-west-1"}
        assert set(pieces.only("west").minutes.column("member_id").to_pylist()) == {"b"}

    def test_nothing_in_range_stitches_to_empty_pieces(self) -> None:
        """No partials: every piece is empty, no group, no span."""
        pieces = stitch(
            ARROW_MEMBER_ROLLUPS.empty_table(), ARROW_GROUP_ROLLUPS.empty_table(), 30.0, 60
        )
        assert pieces.names == {}
        assert span(pieces) is None
        assert all(getattr(pieces, name).num_rows == 0 for name in PIECES)


class TestReadPartials:
    def test_a_range_keeps_its_whole_minutes_from_every_file(self, tmp_path: Path) -> None:
        """The stored partials of [start, end) come back from every file, others not."""
        members, _ = partials_of_rows(arrow_rows(_busy_rows()), RollupSettings(), 60)
        halves = (members.slice(0, members.num_rows // 2), members.slice(members.num_rows // 2))
        files = []
        for index, half in enumerate(halves):
            files.append(str(tmp_path / f"part-{index}.parquet"))
            pq.write_table(half, files[-1])
        whole = read_partials(files, ARROW_MEMBER_ROLLUPS, None, None)
        assert whole.num_rows == members.num_rows
        start, end = T0 + dt.timedelta(minutes=1), T0 + dt.timedelta(minutes=3)
        cut = read_partials(files, ARROW_MEMBER_ROLLUPS, _micros(start), _micros(end))
        assert set(cut.column("minute").to_pylist()) == {start, start + dt.timedelta(minutes=1)}
        assert set(cut.column("member_id").to_pylist()) == {"a", "b"}
        later = _micros(T0 + dt.timedelta(days=1))
        assert read_partials(files, ARROW_MEMBER_ROLLUPS, later, None).num_rows == 0

    def test_no_files_no_partials(self) -> None:
        """A range without rollup files reads an empty table with the rollups' columns."""
        empty = read_partials([], ARROW_MEMBER_ROLLUPS, None, None)
        assert empty.num_rows == 0
        assert empty.schema == ARROW_MEMBER_ROLLUPS


def _micros(moment: dt.datetime) -> int:
    return int(moment.timestamp()) * 1_000_000
