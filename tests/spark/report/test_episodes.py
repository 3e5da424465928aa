from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from grstats.spark.report.episodes import EPISODES, SEGMENTS, episodes, segments
from grstats.spark.report.frame import same_columns
from grstats.spark.report.minutes import RUNS, member_runs
from grstats.spark.report.output import collect_rows
from grstats.spark.report.steps import member_steps
from tests.spark.report.rows import at, frame, row

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def episodes_of(spark: SparkSession, rows: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    runs = member_runs(member_steps(frame(spark, rows), 25_000, 30.0))
    assert same_columns(runs.schema, RUNS)
    segment_rows = segments(runs)
    assert same_columns(segment_rows.schema, SEGMENTS)
    result = episodes(segment_rows, kind)
    assert same_columns(result.schema, EPISODES)
    return collect_rows(result.orderBy("member_id", "start"))


def states(*spans: tuple[str, int]) -> list[dict[str, Any]]:
    """Rows of member "a", one a second: (state, seconds) spans in order."""
    rows, second = [], 0
    for state, count in spans:
        for _ in range(count):
            rows.append(row("a", second, member_state=state))
            second += 1
    return rows


class TestEpisodes:
    def test_an_unreachable_island_runs_from_its_first_snapshot_to_the_next_state(self, spark):
        """UNREACHABLE seen at 5..9 s and ONLINE again at 10 s: start 5, end 10, 5 s."""
        found = episodes_of(
            spark, states(("ONLINE", 5), ("UNREACHABLE", 5), ("ONLINE", 5)), "state"
        )
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

    def test_an_island_across_minutes_is_one_episode(self, spark):
        """Minutes fold snapshots, but an episode spanning three minutes stays whole."""
        found = episodes_of(
            spark, states(("ONLINE", 50), ("RECOVERING", 100), ("ONLINE", 30)), "state"
        )
        recovering = [e for e in found if e["value"] == "RECOVERING"]
        assert [(e["start"], e["end"]) for e in recovering] == [(at(50), at(150))]

    def test_a_change_at_the_last_snapshot_is_an_open_episode_of_no_length(self, spark):
        """The member turned UNREACHABLE at its last snapshot: still going, 0 s so far."""
        found = episodes_of(spark, states(("ONLINE", 3), ("UNREACHABLE", 1)), "state")
        assert [(e["value"], e["duration_s"], e["open_end"]) for e in found] == [
            ("ONLINE", 3.0, False),
            ("UNREACHABLE", 0.0, True),
        ]

    def test_not_connected_episodes_per_member(self, spark):
        """Each member's not-connected runs are separate episodes, with YES and NO runs."""
        rows = [row("a", s, connected=not 3 <= s < 7) for s in range(10)]
        rows += [row("b", s, connected=s >= 2) for s in range(10)]
        found = episodes_of(spark, rows, "connected")
        assert [
            (e["member_id"], e["value"], e["start"], e["end"], e["open_start"]) for e in found
        ] == [
            ("a", "YES", at(0), at(3), True),
            ("a", "NO", at(3), at(7), False),
            ("a", "YES", at(7), at(9), False),
            ("b", "NO", at(0), at(2), True),
            ("b", "YES", at(2), at(9), False),
        ]

    def test_a_state_episode_spans_segments_cut_by_other_changes(self, spark):
        """Losing the agent in the middle of an UNREACHABLE episode does not split it."""
        rows = [
            row("a", s, member_state="UNREACHABLE" if 2 <= s < 8 else "ONLINE",
                connected=not 4 <= s < 6)
            for s in range(10)
        ]  # fmt: skip
        found = episodes_of(spark, rows, "state")
        assert [(e["value"], e["start"], e["end"]) for e in found] == [
            ("ONLINE", at(0), at(2)),
            ("UNREACHABLE", at(2), at(8)),
            ("ONLINE", at(8), at(9)),
        ]

    def test_unknown_kind_is_refused_by_name(self, spark):
        """A kind that is not state, connected or throttling is an error naming it."""
        runs = member_runs(member_steps(frame(spark, states(("ONLINE", 2))), 1, 30.0))
        with pytest.raises(ValueError, match="'role'"):
            episodes(segments(runs), "role")
