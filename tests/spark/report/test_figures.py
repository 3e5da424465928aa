from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pytest

from grstats.spark.report.episodes import episodes, segments
from grstats.spark.report.figures import FIGURES, group_figures, member_figures
from grstats.spark.report.frame import same_columns
from grstats.spark.report.minutes import MINUTES, member_minutes, member_runs
from grstats.spark.report.output import collect_rows
from grstats.spark.report.percentiles import group_percentiles, member_percentiles
from grstats.spark.report.series import member_series, minute_series
from grstats.spark.report.snapshots import group_snapshots, group_totals
from grstats.spark.report.steps import gauges, member_steps
from tests.spark.report.rows import frame, row

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

THRESHOLD = 25_000


def figures_of(
    spark: SparkSession, rows: list[dict[str, Any]]
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    members_rows = frame(spark, rows)
    gauge_rows = gauges(members_rows, THRESHOLD)
    runs = member_runs(member_steps(members_rows, THRESHOLD, 30.0))
    minutes = member_minutes(runs)
    assert same_columns(minutes.schema, MINUTES)
    segment_rows = segments(runs)
    found = episodes(segment_rows, "state").unionByName(episodes(segment_rows, "connected"))
    members = member_figures(minutes, member_percentiles(gauge_rows), found)
    snapshots = group_snapshots(gauge_rows, 30.0)
    group = group_figures(members, group_totals(snapshots), group_percentiles(snapshots))
    assert same_columns(members.schema, FIGURES)
    assert same_columns(group.schema, FIGURES)
    by_member = {r["member_id"]: r for r in collect_rows(members)}
    return by_member, collect_rows(group)[0]


def nearest_rank(values: list[Any], quantile: float) -> Any:
    """The smallest sample with at least ``quantile`` of the samples at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(quantile * len(ordered)) - 1)]


class TestFigures:
    def test_rates_ratios_and_resets(self, spark):
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
        members, group = figures_of(spark, rows)
        a = members["a"]
        assert a["applied"] == 100 + 100 + 100 + 50 + 100
        assert a["applied_per_s"] == pytest.approx(450 / 5)
        assert a["proposed_per_s"] == pytest.approx(40.0)
        assert a["conflict_rate"] == pytest.approx(0.03)
        assert a["rollback_ratio"] == pytest.approx(0.05)
        assert group["applied_per_s"] == pytest.approx(a["applied_per_s"])

    def test_group_adds_applied_and_proposed_and_takes_the_highest_checked(self, spark):
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
        _, group = figures_of(spark, rows)
        assert group["proposed_per_s"] == pytest.approx(50.0)
        assert group["applied_per_s"] == pytest.approx(50.0)
        assert group["checked_per_s"] == pytest.approx(50.0)
        assert group["snapshots"] == 11

    def test_time_in_states_and_episode_counts(self, spark):
        """Seconds in each state add up each snapshot's held time; episodes are counted."""
        states = ["ONLINE"] * 4 + ["UNREACHABLE"] * 3 + ["ONLINE"] * 2 + ["UNREACHABLE"] * 2
        states += ["ONLINE"]
        rows = [
            row("a", s, member_state=state, connected=s not in (5, 6))
            for s, state in enumerate(states)
        ]
        members, _ = figures_of(spark, rows)
        a = members["a"]
        assert a["online_s"] == pytest.approx(6.0)  # the last snapshot holds for 0 s
        assert a["unreachable_s"] == pytest.approx(5.0)
        assert a["not_connected_s"] == pytest.approx(2.0)
        assert a["unreachable_episodes"] == 2
        assert a["not_connected_episodes"] == 1
        assert a["observed_s"] == pytest.approx(11.0)

    def test_throttling_per_member_and_once_per_moment_for_the_group(self, spark):
        """Overlapping throttling of two members counts once for the group."""
        rows = []
        for s in range(10):
            rows.append(
                row("a", s, count_transactions_remote_in_applier_queue=30_000 * (2 <= s < 6))
            )
            rows.append(row("b", s, count_transactions_in_queue=30_000 * (4 <= s < 8)))
        members, group = figures_of(spark, rows)
        assert members["a"]["throttling_s"] == pytest.approx(4.0)
        assert members["b"]["throttling_s"] == pytest.approx(4.0)
        assert group["throttling_s"] == pytest.approx(6.0)

    def test_percentiles_are_nearest_rank_over_sampled_snapshots(self, spark):
        """p50/p95/p99 are sample values by nearest rank; unsampled rows are left out."""
        lags = [0.1 * ((7 * s) % 23) for s in range(60)]
        queues = [(13 * s) % 41 for s in range(60)]
        rows = [
            row(
                "a",
                s,
                applier_lag_seconds=lags[s],
                count_transactions_remote_in_applier_queue=queues[s],
                connected=True,
            )
            for s in range(60)
        ]
        rows.append(row("a", 60, applier_lag_seconds=99.0, connected=False))
        members, group = figures_of(spark, rows)
        a = members["a"]
        for q in (0.5, 0.95, 0.99):
            assert a[f"lag_seconds_p{round(q * 100)}"] == pytest.approx(nearest_rank(lags, q))
        assert a["applier_queue_p95"] == nearest_rank(queues, 0.95)
        assert a["lag_seconds_max"] == pytest.approx(max(lags))
        assert group["lag_seconds_p50"] == pytest.approx(nearest_rank(lags, 0.5))


class TestSeries:
    def test_minute_buckets_from_minutes_equal_buckets_from_every_snapshot(
        self, spark: SparkSession
    ) -> None:
        """Long ranges draw from the minutes table: the same points as from the snapshots."""
        rows = [
            row(
                m,
                s,
                applier_lag_seconds=((s * 7 + len(m)) % 31) / 4,
                count_transactions_remote_in_applier_queue=(s * 13) % 97,
                connected=not (m == "b" and 200 <= s < 260),
            )
            for m in ("a", "b")
            for s in range(0, 600, 2)
        ]
        members_rows = frame(spark, rows)
        gauge_rows = gauges(members_rows, THRESHOLD)
        minutes = member_minutes(member_runs(member_steps(members_rows, THRESHOLD, 30.0)))
        origin = rows[0]["collected_at"]
        from_minutes = collect_rows(minute_series(minutes, origin, 120))
        from_rows = collect_rows(member_series(gauge_rows, origin, 120))
        assert len(from_rows) == 10
        assert from_minutes == from_rows
