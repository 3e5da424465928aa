from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from grstats.spark.report.frame import same_columns
from grstats.spark.report.output import collect_rows
from grstats.spark.report.steps import GAUGES_SCHEMA, STEPS, gauges, member_steps
from tests.spark.report.rows import at, frame, row

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def steps_of(
    spark: SparkSession,
    rows: list[dict[str, Any]],
    threshold: int = 25_000,
    max_gap_s: float = 30.0,
) -> list[dict[str, Any]]:
    result = member_steps(frame(spark, rows), threshold, max_gap_s)
    assert same_columns(result.schema, STEPS)
    return collect_rows(result.orderBy("member_id", "collected_at"))


class TestMemberSteps:
    def test_deltas_count_increases_and_a_decrease_as_a_reset(self, spark):
        """A counter that goes down restarted from 0, so its delta is its new value."""
        counts = [100, 160, 160, 20, 50]
        rows = [row("a", s, count_transactions_remote_applied=c) for s, c in enumerate(counts)]
        steps = steps_of(spark, rows)
        assert [s["d_applied"] for s in steps] == [None, 60, 0, 20, 30]
        assert [s["elapsed_s"] for s in steps] == [None, 1.0, 1.0, 1.0, 1.0]

    def test_no_delta_across_a_missing_stats_row(self, spark):
        """A snapshot without the member's stats row gives no delta on either side of it."""
        rows = [
            row("a", 0, count_transactions_checked=10),
            row("a", 1, count_transactions_checked=None),
            row("a", 2, count_transactions_checked=30),
            row("a", 3, count_transactions_checked=35),
        ]
        steps = steps_of(spark, rows)
        assert [s["d_checked"] for s in steps] == [None, None, None, 5]
        assert [s["elapsed_s"] for s in steps] == [None, None, None, 1.0]

    def test_held_time_runs_to_the_next_snapshot_capped_by_the_gap(self, spark):
        """A state holds until the member's next snapshot, at most max_gap_s; the last for 0."""
        rows = [row("a", s) for s in (0, 1, 3, 100)] + [row("b", 0), row("b", 2)]
        steps = steps_of(spark, rows, max_gap_s=30.0)
        assert [(s["member_id"], s["held_s"]) for s in steps] == [
            ("a", 1.0),
            ("a", 2.0),
            ("a", 30.0),
            ("a", 0.0),
            ("b", 2.0),
            ("b", 0.0),
        ]
        assert [s["first"] for s in steps] == [True, False, False, False, True, False]
        assert [s["last"] for s in steps] == [False, False, False, True, False, True]

    def test_segments_start_where_state_connectedness_or_throttling_change(self, spark):
        """A new segment starts at the first snapshot and wherever any of the three changes."""
        rows = [
            row("a", 0),
            row("a", 1, member_state="UNREACHABLE"),
            row("a", 2, member_state="UNREACHABLE", connected=False),
            row("a", 3, connected=False),
            row("a", 4, count_transactions_in_queue=30_000),
            row("a", 5, count_transactions_in_queue=30_000),
            row("b", 0),
            row("b", 1),
        ]
        steps = steps_of(spark, rows)
        assert [s["changed"] for s in steps] == [True] * 5 + [False, True, False]
        assert [s["segment"] for s in steps] == [1, 2, 3, 4, 5, 5, 1, 1]
        assert steps[2]["collected_at"] == at(2)


class TestGauges:
    def test_only_heard_online_or_recovering_members_are_sampled(self, spark):
        """Frozen values of a member not heard, or down, are not samples."""
        rows = [
            row("a", 0, applier_lag_seconds=1.5),
            row("a", 1, applier_lag_seconds=2.5, member_state="RECOVERING"),
            row("a", 2, applier_lag_seconds=3.5, connected=False),
            row("a", 3, applier_lag_seconds=4.5, member_state="UNREACHABLE"),
            row("a", 4, applier_lag_seconds=5.5, member_state="OFFLINE"),
        ]
        result = gauges(frame(spark, rows), 25_000)
        assert same_columns(result.schema, GAUGES_SCHEMA)
        values = collect_rows(result.orderBy("collected_at"))
        assert [v["lag_seconds"] for v in values] == [1.5, 2.5, None, None, None]
        assert [v["sampled"] for v in values] == [True, True, False, False, False]

    @pytest.mark.parametrize(
        ("state", "cert", "applier", "throttling"),
        [
            ("ONLINE", 25_001, 0, True),
            ("ONLINE", 0, 25_001, True),
            ("ONLINE", 25_000, 25_000, False),
            ("RECOVERING", 0, 90_000, False),
        ],
    )
    def test_throttling_is_an_online_queue_over_the_threshold(
        self, spark, state, cert, applier, throttling
    ):
        """Flow control holds writers when an ONLINE member's queue passes the threshold."""
        rows = [
            row(
                "a",
                0,
                member_state=state,
                count_transactions_in_queue=cert,
                count_transactions_remote_in_applier_queue=applier,
            )
        ]
        assert collect_rows(gauges(frame(spark, rows), 25_000))[0]["throttling"] is throttling


class TestMemberPartitioned:
    def test_each_member_gets_a_partition_of_its_own(self, spark: SparkSession) -> None:
        """Every row of a member lands in one partition, and no partition holds two members."""
        from pyspark.sql import functions as F  # noqa: PLC0415, N812

        from grstats.spark.report.steps import member_partitioned  # noqa: PLC0415

        members = [f"member-{n}" for n in range(9)]
        rows = frame(spark, [row(m, t) for m in members for t in range(3)])
        keyed = member_partitioned(rows)
        placed = keyed.select("member_id", F.spark_partition_id().alias("p")).distinct().collect()
        assert keyed.rdd.getNumPartitions() == len(members)
        assert sorted(r["member_id"] for r in placed) == members
        assert len({r["p"] for r in placed}) == len(members)

    def test_a_row_without_a_member_id_is_kept_not_a_failure(self, spark: SparkSession) -> None:
        """Rows whose MEMBER_ID is null get no key but stay; the members keep their partitions."""
        from grstats.spark.report.steps import member_partitioned  # noqa: PLC0415

        rows = frame(spark, [row("a", 0), row("b", 0), {**row("a", 1), "member_id": None}])
        keyed = member_partitioned(rows)
        assert keyed.rdd.getNumPartitions() == 2
        assert sorted((r["member_id"] or "", r["member_key"] is None) for r in keyed.collect()) == [
            ("", True),
            ("a", False),
            ("b", False),
        ]

    def test_keys_land_in_their_partitions(self, spark: SparkSession) -> None:
        """The key found for partition p is sent to partition p by Spark's own repartition."""
        from pyspark.sql import functions as F  # noqa: PLC0415, N812

        from grstats.spark.report.steps import partition_keys  # noqa: PLC0415

        keys = partition_keys(spark, 7)
        frame_of_keys = spark.createDataFrame([(k,) for k in keys], "key int").repartition(7, "key")
        placed: dict[int, int] = dict(
            frame_of_keys.select("key", F.spark_partition_id().alias("p")).collect()
        )
        assert [placed[k] for k in keys] == list(range(7))
