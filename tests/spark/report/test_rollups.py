"""The report's tables from the per-minute rollups against the same tables from the member rows.

Each data set is cut into spool segments at awkward places (mid-minute, mid-episode, at a
counter reset, between two snapshots a microsecond apart), each segment is rolled up on its
own as ingest does (:mod:`grstats.spark.rollup`), and the rollups' minutes, episodes and group
totals must equal the member rows' (floats to 1e-9, as they are added in another order);
percentiles from the sketches must be within the sketch's 1% of ``percentile_approx``'s
(exact below 10,000 samples), whole numbers below 50 equal.

Two data sets: rows written by hand for the edge cases (null states, counters and
connectedness, a reset, a gap longer than the cap, one-snapshot members, two groups), and a
simulated 9-member group's spool (tests/benchmarks/gen_dataset.py: an UNREACHABLE and a
not-connected episode, flow control throttling, a member leaving and rejoining with its
counters reset) written by the collector's writer and decoded by ingest's decoder.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from grstats.spark.decode import ARROW_MEMBER_ROWS, decode_segment
from grstats.spark.report import arrow_tables
from grstats.spark.report.episodes import EPISODES, KINDS, SEGMENTS, episodes, segments
from grstats.spark.report.figures import FIGURES, group_figures, member_figures
from grstats.spark.report.frame import same_columns
from grstats.spark.report.hourly import HOURLY, member_hours
from grstats.spark.report.minutes import MINUTES, member_minutes, member_runs
from grstats.spark.report.output import collect_rows
from grstats.spark.report.percentiles import (
    GROUP_PERCENTILES,
    MEMBER_PERCENTILES,
    group_percentiles,
    member_percentiles,
)
from grstats.spark.report.rollup_job import read_partials
from grstats.spark.report.series import SERIES, minute_series
from grstats.spark.report.snapshots import GROUP_TOTALS, group_snapshots, group_totals
from grstats.spark.report.source import select_range
from grstats.spark.report.steps import gauges, member_steps
from grstats.spark.report.stitch import (
    group_names,
    sketch_percentiles,
    stitch_group_totals,
    stitch_minutes,
    stitch_segments,
)
from grstats.spark.report.worst import MIN_CHECKED_PER_MINUTE, WORST, worst_minutes
from grstats.spark.rollup import (
    ARROW_GROUP_ROLLUPS,
    ARROW_MEMBER_ROLLUPS,
    ROLLUP_FLOW_CONTROL_THRESHOLD,
    ROLLUP_MAX_GAP_S,
    group_rollups,
    member_rollups,
)
from grstats.spark.schema import GROUP_ROLLUPS, MEMBER_ROLLUPS, MEMBER_ROWS
from tests.benchmarks.gen_dataset import OFFLINE_AT_S, OFFLINE_FOR_S, Group
from tests.spark.report.rows import T0, at, row
from tests.spark.spool import T0_US, write_spool

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

pytestmark = [pytest.mark.spark, pytest.mark.slow]

THRESHOLD = ROLLUP_FLOW_CONTROL_THRESHOLD
MAX_GAP_S = ROLLUP_MAX_GAP_S
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Table:
    """One data set as member rows (with their runs and group snapshots, cached) and as rollups.

    The rollups are Arrow tables (``partials``, ``group_partials``), as the report's tasks read
    them, and the same as DataFrames (``members``, ``groups``).
    """

    rows: DataFrame
    partials: pa.Table
    group_partials: pa.Table
    members: DataFrame
    groups: DataFrame
    runs: DataFrame
    snapshots: DataFrame

    def release(self) -> None:
        """Drop the cached frames."""
        self.runs.unpersist()
        self.snapshots.unpersist()

    def frame(self, table: pa.Table, schema: StructType) -> DataFrame:
        """A stitched Arrow table as the report hands it to Spark."""
        return self.rows.sparkSession.createDataFrame(table.select(schema.fieldNames()), schema)

    def minutes(self, partials: pa.Table | None = None) -> DataFrame:
        """MINUTES stitched from ``partials`` (default: all of them)."""
        return self.frame(stitch_minutes(_or(partials, self.partials), MAX_GAP_S), MINUTES)

    def segments(self) -> DataFrame:
        """SEGMENTS stitched from the member partials."""
        return self.frame(stitch_segments(self.partials), SEGMENTS)

    def totals(self) -> DataFrame:
        """GROUP_TOTALS stitched from the group partials."""
        return self.frame(stitch_group_totals(self.group_partials, MAX_GAP_S), GROUP_TOTALS)


def _or(table: pa.Table | None, default: pa.Table) -> pa.Table:
    return default if table is None else table


def _table(spark: SparkSession, parts: list[pa.Table]) -> Table:
    """The rows of ``parts`` (segments) as MEMBER_ROWS, and each part rolled up on its own."""
    assert len(parts) > 1
    rows = spark.createDataFrame(pa.concat_tables(parts), MEMBER_ROWS)
    members = pa.concat_tables([member_rollups(part) for part in parts])
    groups = pa.concat_tables([group_rollups(part) for part in parts])
    return Table(
        rows,
        members,
        groups,
        spark.createDataFrame(members, MEMBER_ROLLUPS),
        spark.createDataFrame(groups, GROUP_ROLLUPS),
        member_runs(member_steps(rows, THRESHOLD, MAX_GAP_S)).cache(),
        group_snapshots(gauges(rows, THRESHOLD), MAX_GAP_S).cache(),
    )


# -- the hand-written rows ---------------------------------------------------------------------


def _m1(s: int) -> dict[str, Any]:
    """Member a of east: UNREACHABLE, not connected, throttling, a reset, a gap over the cap."""
    state = "UNREACHABLE" if 40 <= s <= 55 else "RECOVERING" if 130 <= s <= 135 else "ONLINE"
    return row(
        "a",
        s,
        group_label="east",
        group_name="" if s < 20 else "gr-east",
        member_host="db1" if s < 160 else "db1b",
        member_state=state,
        connected=not 50 <= s <= 70,
        count_transactions_in_queue=30_000 if 100 <= s <= 115 else s % 7,
        count_transactions_remote_applied=10 * s if s < 125 else s - 120,
        count_transactions_checked=None if s == 80 else 20 * s,
        count_transactions_rows_validating=40 + s,
        applier_lag_seconds=None if s == 90 else s / 100,
        gtids_ahead_of_committed_all=s // 10,
    )


_M2 = [  # seconds, state, connected, applied (None: no stats row), applier queue
    (1.5, "ONLINE", True, 5, 3),
    (2.25, "ONLINE", None, 9, 4),
    (30.0, None, True, 12, 30_000),  # an unknown state over the threshold: not throttling
    (59.999999, "ONLINE", True, 15, 2),
    (60.0, "ERROR", True, 15, 2),
    (60.000001, "ERROR", True, 15, 2),
    (75.0, "OFFLINE", False, 15, 2),
    (119.0, "OFFLINE", False, None, None),
    (121.0, "ONLINE", True, 3, 26_000),
    (122.0, "ONLINE", True, 4, 26_500),
    (150.0, "ONLINE", True, 9, 30_000),
    (151.0, "ONLINE", True, 12, 100),
]


def _hand_rows() -> list[dict[str, Any]]:
    rows = [_m1(s) for s in (*range(0, 145, 5), 175)]
    for s, state, connected, applied, queue in _M2:
        rows.append(
            row(
                "b",
                s,
                group_label="east",
                group_name="gr-east",
                member_host="db2",
                member_state=state,
                connected=connected,
                count_transactions_remote_applied=applied,
                count_transactions_checked=None if applied is None else 3 * applied,
                count_transactions_remote_in_applier_queue=queue,
                count_transactions_rows_validating=None if queue is None else 7 * round(s),
                applier_lag_seconds=0.001 * s,
            )
        )
    rows.append(row("c", 30, group_label="east", member_host="db3"))
    for s, name in ((0, ""), (20, "gr-old"), (40, ""), (61, "gr-west"), (62, "")):
        rows.append(
            row(
                "d",
                s,
                group_label="west",
                group_name=name,
                count_transactions_rows_validating=3 * s,
                applier_lag_seconds=1e-12 if s == 40 else 2.5,
            )
        )
    rows.append(row("e", 10, group_label="north", member_state="OFFLINE"))
    return rows


def _arrow(rows: list[dict[str, Any]]) -> pa.Table:
    """Member rows as ingest's decoder gives them, in time order."""
    names = ARROW_MEMBER_ROWS.names
    ordered = sorted(rows, key=lambda r: (r["collected_at"], r["member_id"]))
    return pa.Table.from_pylist([{n: r.get(n) for n in names} for r in ordered], ARROW_MEMBER_ROWS)


def _split(table: pa.Table, cuts: list[dt.datetime]) -> list[pa.Table]:
    """``table`` cut before each of ``cuts``: a segment holds the rows from one cut to the next."""
    times = table.column("collected_at").to_pylist()
    bounds = [None, *cuts, None]
    parts = []
    for low, high in itertools.pairwise(bounds):
        keep = [(low is None or t >= low) and (high is None or t < high) for t in times]
        parts.append(table.filter(pa.array(keep)))
    return [part for part in parts if part.num_rows]


#: Cuts: mid-UNREACHABLE, between two snapshots a microsecond apart, mid-throttling, at the
#: reset of member a (its first row after the reset starts a segment), and between two
#: snapshots of member b in one minute.
HAND_CUTS = [at(45.5), at(60.000001), at(107), at(125), at(150.5)]


@pytest.fixture(name="hand", scope="module")
def _hand(spark: SparkSession) -> Iterator[Table]:
    table = _table(spark, _split(_arrow(_hand_rows()), HAND_CUTS))
    yield table
    table.release()


# -- the simulated group's spool ---------------------------------------------------------------

#: Seconds of the first simulated day that are collected (seed 1): member 6's UNREACHABLE
#: episode (12,073 s, 30 s), member 6 not heard (14,375 s, 80 s), a batch job that makes flow
#: control throttle (33,513 s), member 7 leaving (OFFLINE_AT_S) and rejoining with its counters
#: reset (OFFLINE_AT_S + OFFLINE_FOR_S). The gaps between the windows are longer than the cap.
WINDOWS = [
    (12_040, 12_160),
    (14_350, 14_480),
    (33_490, 33_700),
    (OFFLINE_AT_S - 40, OFFLINE_AT_S + 50),
    (OFFLINE_AT_S + OFFLINE_FOR_S - 30, OFFLINE_AT_S + OFFLINE_FOR_S + 100),
]
#: Segment boundaries: each second starts a segment. Mid-episode, mid-minute, mid-throttling,
#: at member 7's leaving and at its rejoining (its counters reset there), and one segment of a
#: single record.
SIM_CUTS = [
    12_090,
    12_131,
    14_400,
    14_417,
    33_530,
    33_600,
    OFFLINE_AT_S,
    OFFLINE_AT_S + OFFLINE_FOR_S,
    OFFLINE_AT_S + OFFLINE_FOR_S + 1,
    OFFLINE_AT_S + OFFLINE_FOR_S + 43,
]


def _simulated_records() -> list[tuple[int, dict[str, Any]]]:
    group = Group(1, T0_US // 1_000_000)
    wanted = {t for low, high in WINDOWS for t in range(low, high)}
    records = []
    for t in range(max(wanted) + 1):
        group.step(t)
        if t in wanted:
            record = group.record(t, (t * 7919) % 4000)
            records.append((t, record | {"group_label": "sim", "group_name": group.group_uuid}))
    return records


@pytest.fixture(name="simulated", scope="module")
def _simulated(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Table]:
    records = _simulated_records()
    bounds = [0, *SIM_CUTS, math.inf]
    segments = [
        [record for t, record in records if low <= t < high]
        for low, high in itertools.pairwise(bounds)
    ]
    spool: Path = tmp_path_factory.mktemp("spool")
    paths = write_spool(spool, [s for s in segments if s])
    table = _table(spark, [decode_segment(path).rows for path in paths])
    yield table
    table.release()


@pytest.fixture(name="table", params=["hand", "simulated"])
def _table_fixture(request: pytest.FixtureRequest) -> Table:
    table: Table = request.getfixturevalue(request.param)
    return table


# -- comparing ---------------------------------------------------------------------------------


def _rows(frame: DataFrame, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    return sorted(collect_rows(frame), key=lambda r: tuple(_sortable(r[k]) for k in keys))


def _sortable(value: Any) -> tuple[bool, Any]:
    return (value is not None, value)


#: Looser tolerances: a time in epoch hours as a double is exact to about 6e-11 h, so over
#: minutes a least-squares slope against it is exact to about 1e-8 whoever computes it (both
#: the rows' regr_slope and the rollups' are off the exact slope by that much, in turn).
_TOLERANCE = {"rows_validating_slope_per_h": 1e-7}


def _assert_equal(actual: DataFrame, expected: DataFrame, keys: tuple[str, ...]) -> None:
    """Row for row, every column equal; floats to 1e-9 (sums added in another order)."""
    assert same_columns(actual.schema, expected.schema)
    got, want = _rows(actual, keys), _rows(expected, keys)
    assert [tuple(r[k] for k in keys) for r in got] == [tuple(r[k] for k in keys) for r in want]
    for a, e in zip(got, want, strict=True):
        where = {k: e[k] for k in keys}
        for name, value in e.items():
            if isinstance(value, float):
                rel = _TOLERANCE.get(name, 1e-9)
                assert a[name] == pytest.approx(value, rel=rel, abs=1e-9), (where, name)
            else:
                assert a[name] == value, (where, name)


def _micros(moment: dt.datetime) -> int:
    return (moment - EPOCH) // dt.timedelta(microseconds=1)


def _raw_minutes(rows: DataFrame) -> DataFrame:
    return member_minutes(member_runs(member_steps(rows, THRESHOLD, MAX_GAP_S)))


def _raw_segments(table: Table) -> DataFrame:
    return segments(table.runs)


_MINUTE_KEYS = ("group_label", "member_id", "minute")


class TestRollupMinutes:
    def test_equal_the_minutes_of_the_rows(self, table: Table) -> None:
        """Stitched partials give every member-minute the rows give, column for column."""
        minutes = table.minutes()
        assert same_columns(minutes.schema, MINUTES)
        _assert_equal(minutes, member_minutes(table.runs), _MINUTE_KEYS)

    def test_a_cut_falls_inside_a_minute(self, table: Table) -> None:
        """The data sets do test stitching: some member-minute is made of several partials."""
        counts = table.members.groupBy(*_MINUTE_KEYS).count()
        assert counts.filter("count > 1").count() > 0

    def test_stitching_adds_what_crosses_the_cuts(self, hand: Table) -> None:
        """The partials alone hold less time than the rows: the held time across cuts is added."""
        partials = hand.members.agg({"held_s": "sum"}).first()
        raw = member_minutes(hand.runs).agg({"held_s": "sum"}).first()
        assert partials is not None
        assert raw is not None
        assert partials[0] < raw[0]

    @pytest.mark.parametrize(
        ("start", "end"),
        [(T0 + dt.timedelta(minutes=1), T0 + dt.timedelta(minutes=2)), (None, T0), (T0, None)],
    )
    def test_a_range_of_whole_minutes_equals_the_rows_in_it(
        self, hand: Table, tmp_path: Path, start: dt.datetime | None, end: dt.datetime | None
    ) -> None:
        """The range's edges cut the stitching as they cut the rows: no held time or delta across."""
        minutes = hand.minutes(_cut(hand.partials, tmp_path, start, end))
        _assert_equal(minutes, _raw_minutes(select_range(hand.rows, start, end)), _MINUTE_KEYS)


def _cut(
    partials: pa.Table, directory: Path, start: dt.datetime | None, end: dt.datetime | None
) -> pa.Table:
    """``partials`` written to Parquet files, read back by the report's reader over a range."""
    files = []
    for number, part in enumerate((partials.slice(0, 40), partials.slice(40))):
        files.append(str(directory / f"part-{number}.parquet"))
        pq.write_table(part, files[-1])
    return read_partials(
        files,
        ARROW_MEMBER_ROLLUPS,
        None if start is None else _micros(start),
        None if end is None else _micros(end),
    )


class TestReadPartials:
    def test_cuts_by_minute_and_reads_every_file(self, hand: Table, tmp_path: Path) -> None:
        """Every partial of every file comes back, and a range keeps whole minutes in it."""
        whole = _cut(hand.partials, tmp_path, None, None)
        assert whole.num_rows == hand.partials.num_rows
        start, end = T0 + dt.timedelta(minutes=1), T0 + dt.timedelta(minutes=2)
        cut = _cut(hand.partials, tmp_path, start, end)
        minutes = set(cut.column("minute").to_pylist())
        assert minutes == {start}
        assert _cut(hand.partials, tmp_path, T0 + dt.timedelta(days=1), None).num_rows == 0

    def test_no_files_no_partials(self) -> None:
        """A range without rollup files reads an empty table with the rollups' columns."""
        empty = read_partials([], ARROW_MEMBER_ROLLUPS, None, None)
        assert empty.num_rows == 0
        assert empty.schema == ARROW_MEMBER_ROLLUPS

    def test_empty_partials_stitch_to_empty_tables(self, spark: SparkSession) -> None:
        """Nothing in range: each stitched table is empty and Spark takes it with its schema."""
        empty = ARROW_MEMBER_ROLLUPS.empty_table()
        frame = spark.createDataFrame(stitch_minutes(empty, MAX_GAP_S), MINUTES)
        assert frame.count() == 0
        assert spark.createDataFrame(stitch_segments(empty), SEGMENTS).count() == 0
        assert group_names(empty) == {}


_EPISODE_KEYS = ("group_label", "member_id", "kind", "start")


class TestRollupSegments:
    def test_give_the_episodes_of_the_rows(self, table: Table) -> None:
        """Every kind of episode, with its edges and open ends, is the one the rows give."""
        for kind in KINDS:
            _assert_equal(
                episodes(table.segments(), kind),
                episodes(_raw_segments(table), kind),
                _EPISODE_KEYS,
            )

    def test_number_the_segments_as_the_rows(self, table: Table) -> None:
        """Segment numbers, values, starts and first/last flags match; last_at where it is kept."""
        keys = ("group_label", "member_id", "segment")
        got = _rows(table.segments(), keys)
        want = _rows(_raw_segments(table), keys)
        assert [{k: v for k, v in r.items() if k != "last_at"} for r in got] == [
            {k: v for k, v in r.items() if k != "last_at"} for r in want
        ]
        assert [r["last_at"] for r in got if r["last"]] == [r["last_at"] for r in want if r["last"]]

    def test_a_counter_resets_where_a_partial_starts(self, table: Table) -> None:
        """The data sets hold a reset whose delta only stitching can find."""
        keys = ("group_label", "member_id", "first_at")
        partials = _rows(table.members, keys)
        resets = [
            (before["last_applied"], after["first_applied"])
            for before, after in itertools.pairwise(partials)
            if before["member_id"] == after["member_id"]
            and None not in (before["last_applied"], after["first_applied"])
            and after["first_applied"] < before["last_applied"]
        ]
        assert resets

    def test_the_data_sets_hold_each_kind_of_episode(self, table: Table) -> None:
        """The comparison is not vacuous: states, not-connected and throttling all change."""
        found = _raw_segments(table)
        for kind, column in KINDS.items():
            values = {r[column] for r in collect_rows(found)}
            assert len(values) > 1, kind


class TestRollupGroupTotals:
    def test_equal_the_totals_over_the_snapshots(self, table: Table) -> None:
        """Snapshots, observed and throttled time, ROWS_VALIDATING mean, max and slope."""
        totals = table.totals()
        assert same_columns(totals.schema, GROUP_TOTALS)
        _assert_equal(totals, group_totals(table.snapshots), ("group_label",))

    def test_the_slope_is_the_exact_least_squares_slope(self, hand: Table) -> None:
        """Against the slope computed in exact fractions from the snapshots' microseconds."""
        snapshots = collect_rows(hand.snapshots)
        totals = {r["group_label"]: r for r in collect_rows(hand.totals())}
        for label in ("east", "west"):
            points = [
                (
                    Fraction(_micros(r["collected_at"]), 3_600_000_000),
                    Fraction(r["rows_validating"]),
                )
                for r in snapshots
                if r["group_label"] == label and r["rows_validating"] is not None
            ]
            mean_x = sum(x for x, _ in points) / len(points)
            mean_y = sum(y for _, y in points) / len(points)
            cxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
            m2x = sum((x - mean_x) ** 2 for x, _ in points)
            got = totals[label]["rows_validating_slope_per_h"]
            assert got == pytest.approx(float(cxy / m2x), rel=1e-8)

    def test_a_single_point_has_no_slope(self, spark: SparkSession) -> None:
        """One snapshot with a value: no slope, as regr_slope gives none."""
        first = row("a", 5, group_label="g", count_transactions_rows_validating=9)
        second = row("a", 65, group_label="g", count_transactions_rows_validating=None)
        table = _table(spark, [_arrow([first]), _arrow([second])])
        totals = table.totals()
        _assert_equal(totals, group_totals(table.snapshots), ("group_label",))
        (found,) = collect_rows(totals)
        table.release()
        assert found["rows_validating_slope_per_h"] is None
        assert found["rows_validating_mean"] == 9.0


def _assert_close(actual: DataFrame, expected: DataFrame, keys: tuple[str, ...]) -> None:
    """Each percentile within 1% of the rows' (exact there); whole numbers below 50 equal."""
    got, want = _rows(actual, keys), _rows(expected, keys)
    assert [tuple(r[k] for k in keys) for r in got] == [tuple(r[k] for k in keys) for r in want]
    compared = 0
    for a, e in zip(got, want, strict=True):
        for name, value in e.items():
            if name in keys or value is None:
                assert a[name] == value, (a, name)
                continue
            compared += 1
            if isinstance(value, int) and value < 50:
                assert a[name] == value, (a, name)
            elif isinstance(value, int):  # the representative, rounded
                assert abs(a[name] - value) <= 0.01 * value + 0.5, (a, name)
            else:
                # lags under 0.1 s have 1 ms buckets: within half of one
                assert a[name] == pytest.approx(value, rel=0.01, abs=0.0005), (a, name)
    assert compared > 0


class TestSketchPercentiles:
    def test_members_within_one_percent(self, table: Table) -> None:
        """Each member's percentiles from the merged sketches, against percentile_approx."""
        got = table.frame(
            sketch_percentiles(table.partials, ("group_label", "member_id")), MEMBER_PERCENTILES
        )
        assert same_columns(got.schema, MEMBER_PERCENTILES)
        want = member_percentiles(gauges(table.rows, THRESHOLD))
        _assert_close(got, want, ("group_label", "member_id"))

    def test_groups_within_one_percent(self, table: Table) -> None:
        """Each group's percentiles over its snapshots' largest values."""
        got = table.frame(
            sketch_percentiles(table.group_partials, ("group_label",)), GROUP_PERCENTILES
        )
        assert same_columns(got.schema, GROUP_PERCENTILES)
        _assert_close(got, group_percentiles(table.snapshots), ("group_label",))

    def test_fewer_samples_than_the_exact_limit(self, table: Table) -> None:
        """The rows' percentiles are exact here (under 10,000 samples per member and group)."""
        counts = gauges(table.rows, THRESHOLD).groupBy("group_label").count().collect()
        assert all(r["count"] < 10_000 for r in counts)


class TestRollupGroups:
    def test_each_label_with_its_latest_group_name(self, hand: Table) -> None:
        """The last non-empty name wins; a group that never named itself gets ""."""
        assert group_names(hand.partials) == {
            "east": "gr-east",
            "north": "",
            "west": "gr-west",
        }

    def test_the_simulated_group_names_itself(self, simulated: Table) -> None:
        """The spool's group label and GR group name come through."""
        (name,) = group_names(simulated.partials).values()
        assert len(name) == 36


class TestResultTablesOnTheDriver:
    """The result tables that pyarrow computes from the stitched pieces equal Spark's on them.

    The same Arrow pieces go to both: :mod:`grstats.spark.report.arrow_tables` on the driver,
    and the Spark functions the member rows' report uses, over the pieces as DataFrames.
    """

    @staticmethod
    def _pieces(table: Table) -> dict[str, pa.Table]:
        segment_rows = stitch_segments(table.partials)
        episode_rows = arrow_tables.episodes(segment_rows)
        members = arrow_tables.member_figures(
            stitch_minutes(table.partials, MAX_GAP_S),
            sketch_percentiles(table.partials, ("group_label", "member_id")),
            episode_rows,
        )
        return {
            "minutes": stitch_minutes(table.partials, MAX_GAP_S),
            "segments": segment_rows,
            "episodes": episode_rows,
            "members": members,
            "group": arrow_tables.group_figures(
                members,
                stitch_group_totals(table.group_partials, MAX_GAP_S),
                sketch_percentiles(table.group_partials, ("group_label",)),
            ),
        }

    @staticmethod
    def _spark_figures(table: Table) -> tuple[DataFrame, DataFrame, DataFrame]:
        all_episodes = functools.reduce(
            lambda a, b: a.unionByName(b),
            (episodes(table.segments(), kind) for kind in KINDS),
        ).orderBy("group_label", "member_id", "kind", "start")
        members = member_figures(
            table.minutes(),
            table.frame(
                sketch_percentiles(table.partials, ("group_label", "member_id")),
                MEMBER_PERCENTILES,
            ),
            all_episodes,
        )
        group = group_figures(
            members,
            table.totals(),
            table.frame(
                sketch_percentiles(table.group_partials, ("group_label",)), GROUP_PERCENTILES
            ),
        )
        return all_episodes, members, group

    @staticmethod
    def _assert_same(got: pa.Table, want: DataFrame) -> None:
        """Same columns, same rows in the same order; floats to 1e-9 (another order of sums)."""
        assert tuple(got.column_names) == tuple(want.schema.fieldNames())
        expected = collect_rows(want)
        actual = arrow_tables.rows_of(got)
        assert len(actual) == len(expected)
        for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
            for name, value in e.items():
                if isinstance(value, float):
                    rel = _TOLERANCE.get(name, 1e-9)
                    assert a[name] == pytest.approx(value, rel=rel, abs=1e-9), (index, name)
                else:
                    assert a[name] == value, (index, name)
                    assert type(a[name]) is type(value), (index, name)

    def test_columns_are_the_spark_schemas(self) -> None:
        """Each table's columns are named and ordered as its Spark schema."""
        assert tuple(FIGURES.fieldNames()) == arrow_tables.FIGURE_COLUMNS
        assert tuple(EPISODES.fieldNames()) == arrow_tables.EPISODE_COLUMNS
        assert tuple(HOURLY.fieldNames()) == arrow_tables.HOURLY_COLUMNS
        assert tuple(WORST.fieldNames()) == arrow_tables.WORST_COLUMNS
        assert tuple(SERIES.fieldNames()) == arrow_tables.SERIES_COLUMNS

    def test_episodes_and_figures(self, table: Table) -> None:
        """Episodes, member figures and group figures equal Spark's, row for row."""
        mine = self._pieces(table)
        spark_episodes, spark_members, spark_group = self._spark_figures(table)
        self._assert_same(mine["episodes"], spark_episodes)
        self._assert_same(mine["members"], spark_members)
        self._assert_same(mine["group"], spark_group)

    def test_hourly(self, table: Table) -> None:
        """The member hours equal Spark's."""
        self._assert_same(
            arrow_tables.member_hours(self._pieces(table)["minutes"]), member_hours(table.minutes())
        )

    @pytest.mark.parametrize("count", [1, 3, 1000])
    def test_worst_minutes(self, table: Table, count: int) -> None:
        """The worst minutes, ties and the conflict rate's floor included, equal Spark's."""
        self._assert_same(
            arrow_tables.worst_minutes(
                self._pieces(table)["minutes"], count, MIN_CHECKED_PER_MINUTE
            ),
            worst_minutes(table.minutes(), count),
        )

    @pytest.mark.parametrize("bucket_s", [60, 120, 3600])
    def test_chart_series(self, table: Table, bucket_s: int) -> None:
        """The chart points per bucket of whole minutes equal Spark's, from an unaligned origin."""
        origin = T0 + dt.timedelta(seconds=37.5)
        self._assert_same(
            arrow_tables.minute_series(self._pieces(table)["minutes"], origin, bucket_s),
            minute_series(table.minutes(), origin, bucket_s),
        )

    def test_empty_pieces(self) -> None:
        """No partials give empty tables with their columns."""
        partials = ARROW_MEMBER_ROLLUPS.empty_table()
        minutes = stitch_minutes(partials, MAX_GAP_S)
        episode_rows = arrow_tables.episodes(stitch_segments(partials))
        members = arrow_tables.member_figures(
            minutes, sketch_percentiles(partials, ("group_label", "member_id")), episode_rows
        )
        group = arrow_tables.group_figures(
            members,
            stitch_group_totals(ARROW_GROUP_ROLLUPS.empty_table(), MAX_GAP_S),
            sketch_percentiles(ARROW_GROUP_ROLLUPS.empty_table(), ("group_label",)),
        )
        tables = {
            arrow_tables.EPISODE_COLUMNS: episode_rows,
            arrow_tables.FIGURE_COLUMNS: pa.concat_tables([group, members]),
            arrow_tables.HOURLY_COLUMNS: arrow_tables.member_hours(minutes),
            arrow_tables.WORST_COLUMNS: arrow_tables.worst_minutes(minutes, 10, 1),
            arrow_tables.SERIES_COLUMNS: arrow_tables.minute_series(minutes, T0, 60),
        }
        for columns, table in tables.items():
            assert (tuple(table.column_names), table.num_rows) == (columns, 0)
            assert arrow_tables.rows_of(table) == []
