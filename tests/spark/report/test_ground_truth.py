"""The report against the simulator's ground truth, through every real part of grstats.

A simulated 3-member multi-primary group (conflicts; member 2 applies only 330 tps; member 1
crashes at 60 s and starts again at 100 s, its host cut off from the other agents meanwhile)
runs under three real agents on 127.0.0.1, driven by a test clock so that 150 s of group
time take a few seconds. The collector's poller asks agent 0 once a (group) second and its
SpoolWriter writes a real spool; ingest loads it; the report runs in local Spark. A second
copy of the simulated group, stepped tick by tick (0.1 s) beside it, is the ground truth.

Tolerances, and why:

* Snapshots are one second apart, so an edge (a state change at 100.3 s) is seen up to one
  second late, and a served value may be one period (1 s) old if a push arrives after the
  poll: episode edges within 2 s, time in a state within 2 s per edge of its episodes.
* Rates: both ends of the range can be one period off, so a rate is within
  2 x (largest one-second increase) / (seconds collected) of the truth.
* Percentiles and maxima of a gauge: within the gauge's largest one-second change.
* Throttled time: each start or end of throttling can be one sample off: within 1 s per edge.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

from grstats.agent.sim.group import TICKS_PER_SECOND, SimulatedGroup
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sim.views import snapshot
from grstats.collector.poller import Poller, PollerSettings
from grstats.collector.records import EVENT_COLUMNS
from grstats.collector.spool import SpoolSettings, SpoolWriter, SyncPolicy
from grstats.spark.ingest import run_ingest
from grstats.spark.report.config import ReportConfig
from grstats.spark.report.job import run_report
from grstats.spark.rollup import RollupSettings
from tests.agent.test_runtime import START_S, start_group
from tests.spark.report.compare import differences

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from pyspark.sql import SparkSession

    from tests.agent.test_runtime import Group

# One worker runs the module, so its reports (about 17 s) are made once.
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.xdist_group("report-ground-truth")]

SCENARIO = """\
name = "report-ground-truth"
description = "Multi-primary conflicts, slow member 2, member 1 down from 60 s to 100 s."
mode = "multi-primary"
members = 3

[workload]
rate_tps = 200
writers = "all"
key_space = 5000
keys_per_transaction = 4
skew = 0.8

[appliers]
capacity_tps = 4000
capacity_overrides = { 2 = 330 }

[flow_control]
certifier_threshold = 1500
applier_threshold = 1500

[[events]]
at = 60
action = "crash"
member = 1

[[events]]
at = 100
action = "start"
member = 1
"""
THRESHOLD = 1500
ROUNDS = 150  # the test clock starts at group time 10 s: snapshots at 11 .. 160 s
CRASH_S, RESTART_S = 60, 100
SLOW, DOWN = 2, 1


@dataclass
class Truth:
    """What the simulator says, sampled at each collection time and tick by tick."""

    times: list[float] = field(default_factory=list)  #: group seconds of each snapshot
    samples: list[dict[str, dict[str, Any]]] = field(default_factory=list)  #: per member
    ticks: dict[str, list[str]] = field(default_factory=dict)  #: state per tick, per member
    first_tick: int = 0
    uuids: list[str] = field(default_factory=list)
    #: replication_group_events as agent 0 served it after the last poll
    events: list[tuple[Any, ...]] = field(default_factory=list)

    def series(self, index: int, column: str) -> list[Any]:
        """One member's sampled values of ``column``, in time order."""
        uuid = self.uuids[index]
        return [sample[uuid][column] for sample in self.samples]

    def episodes(self, index: int) -> list[tuple[str, float, float]]:
        """(state, start, end) runs of one member's state, in group seconds, tick-exact."""
        states = self.ticks[self.uuids[index]]
        runs: list[tuple[str, float, float]] = []
        for offset, state in enumerate(states):
            at = (self.first_tick + offset) / TICKS_PER_SECOND
            if runs and runs[-1][0] == state:
                runs[-1] = (state, runs[-1][1], at + 0.1)
            else:
                runs.append((state, at, at + 0.1))
        return runs


def _truth_sample(group: SimulatedGroup) -> dict[str, dict[str, Any]]:
    sample = {}
    for member in group.members:
        read = snapshot(group, member.index, last_known=True)
        stats = read.stats
        applier = read.applier.with_lag(read.read_at_us)
        sample[member.uuid] = {
            "state": str(group.group_state(member)),
            "applied": stats.count_transactions_remote_applied,
            "proposed": stats.count_transactions_local_proposed,
            "checked": stats.count_transactions_checked,
            "conflicts": stats.count_conflicts_detected,
            "rollback": stats.count_transactions_local_rollback,
            "cert_queue": stats.count_transactions_in_queue,
            "applier_queue": stats.count_transactions_remote_in_applier_queue,
            "lag": applier.applier_lag_seconds,
            "transport": applier.transport_seconds,
            "waiting": applier.waiting_seconds,
            "apply": applier.apply_seconds,
        }
    return sample


class _TestClock:
    """Reads the test clock of the group once it is started."""

    def __init__(self) -> None:
        self.source: Callable[[], int] = lambda: int(START_S * 1_000_000)

    def us(self) -> int:
        return self.source()


@dataclass
class Collection:
    """One simulated group under real agents, its poller and its ground truth, a second a step.

    ``down`` is the member whose host is cut off from the other agents from CRASH_S to
    RESTART_S (None: no cut). ``label`` is the group's label in the records (None: the
    collector's default, as with ``--node``).
    """

    group: Group
    poller: Poller
    truth_group: SimulatedGroup
    truth: Truth
    down: int | None

    @classmethod
    def begin(
        cls,
        group: Group,
        scenario_path: Path,
        *,
        seed: int = 1,
        label: str | None = None,
        down: int | None = DOWN,
    ) -> Collection:
        """Start collecting ``group`` (started with ``scenario_path`` and ``seed``)."""
        members = len(group.agents)
        scenario = load_scenario(str(scenario_path)).with_members(members)
        truth_group = SimulatedGroup(scenario, seed, int(START_S * 1_000_000))
        truth = Truth(uuids=[m.uuid for m in truth_group.members])
        truth.ticks = {uuid: [] for uuid in truth.uuids}
        start_tick = round((group.clock.seconds - START_S) * TICKS_PER_SECOND)
        truth_group.advance_to(start_tick)
        truth.first_tick = start_tick
        # The events on every poll, so that the last poll has every event the agent serves.
        settings = PollerSettings((group.agents[0].address,), events_every_s=0)
        if label is not None:
            settings = dataclasses.replace(settings, group_label=label)
        poller = Poller(settings, clock_us=group.clock.us)
        return cls(group, poller, truth_group, truth, down)

    async def round(self, writer: SpoolWriter) -> None:
        """Run one group second, poll agent 0 into ``writer`` and sample the ground truth."""
        group, truth, truth_group = self.group, self.truth, self.truth_group
        now = group.clock.seconds + 1 - START_S
        if self.down is not None:
            down = group.agents[self.down]
            others = [a for a in group.agents if a is not down]
            if now == CRASH_S:  # the member's host goes down: its agent is cut off too
                group.transports[self.down].broken.update(a.address for a in others)
                for index, agent in enumerate(group.agents):
                    if agent is not down:
                        group.transports[index].broken.add(down.address)
            if now == RESTART_S:
                for transport in group.transports:
                    transport.broken.clear()
        await group.rounds(1)
        writer.append(await self.poller.poll())
        tick = round(now * TICKS_PER_SECOND)
        while truth_group.tick < tick:
            for member in truth_group.members:
                truth.ticks[member.uuid].append(str(truth_group.group_state(member)))
            truth_group.step()
        truth.times.append(now)
        truth.samples.append(_truth_sample(truth_group))

    async def close(self) -> None:
        """Close the poller and stop the agents."""
        await self.poller.aclose()
        for agent in self.group.agents:
            await agent.stop(grace_s=0)


async def _collect(scenario_path: Path, spool: Path, clock: _TestClock) -> Truth:
    """Run the agents and the poller for ROUNDS group seconds; return the ground truth."""
    group = await start_group(3, scenario=str(scenario_path))
    clock.source = group.clock.us
    collection = Collection.begin(group, scenario_path)
    try:
        with SpoolWriter(spool, SpoolSettings(sync=SyncPolicy.SEAL)) as writer:
            for _ in range(ROUNDS):
                await collection.round(writer)
        _, events = group.agents[0].tables(extended=False)["replication_group_events"]
        collection.truth.events = list(events)
    finally:
        await collection.close()
    return collection.truth


@dataclass
class Run:
    truth: Truth
    summary: dict[str, Any]
    members: dict[str, dict[str, Any]]
    out: Path
    source: str = "rows"  #: what the report read: "rows" or "rollups"


#: Both sources of a report: every check below holds for each.
SOURCES = ("rows", "rollups")


@pytest.fixture(name="reports", scope="module")
def _reports(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    base = tmp_path_factory.mktemp("ground-truth")
    scenario_path = base / "scenario.toml"
    scenario_path.write_text(SCENARIO, encoding="utf-8")
    # Every agent and its servers read the test clock (the agent's clock is injected), so the
    # clock offsets estimated from each exchange's four timestamps are those of one clock.
    clock = _TestClock()
    truth = asyncio.run(_collect(scenario_path, base / "spool", clock))
    # The rollups are made at the threshold the reports use, so that both sources can answer.
    run_ingest(
        spark,
        base / "spool",
        base / "table",
        rollups=RollupSettings(flow_control_threshold=THRESHOLD),
    )
    runs = {}
    for source in SOURCES:
        config = ReportConfig(
            base / "table",
            base / f"report-{source}",
            flow_control_threshold=THRESHOLD,
            source=source,
        )
        result = run_report(config, spark=spark)
        members = {m["member_id"]: m for m in result.summary["members"]}
        runs[source] = Run(truth, result.summary, members, config.out_dir, source)
    return runs


@pytest.fixture(name="run", params=SOURCES)
def _run(request: pytest.FixtureRequest, reports: dict[str, Run]) -> Run:
    run: Run = reports[request.param]
    return run


def test_the_rollups_give_the_rows_figures(reports: dict[str, Run]) -> None:
    """Read from the rollups, every exact figure equals the rows'; percentiles within 1%."""
    rollups, rows = reports["rollups"].summary, reports["rows"].summary
    assert (rollups["settings"]["source"], rows["settings"]["source"]) == ("rollups", "rows")
    assert differences(rollups, rows) == []


def test_the_events_are_reported_once_each(reports: dict[str, Run]) -> None:
    """The report's events are the agent's from the first snapshot on, each once; no switchover."""
    run = reports["rows"]
    reported = pq.read_table(run.out / "tables" / "events").to_pylist()
    first = run.truth.times[0] + START_S
    expected = sorted(tuple(e) for e in run.truth.events if e[0] / 1e6 >= first)
    found = [
        (int(e["event_time"].timestamp() * 1_000_000), *(e[n.lower()] for n in EVENT_COLUMNS[1:]))
        for e in reported
    ]
    assert len(found) == len(expected) == run.summary["events"] > 0
    assert sorted(found) == expected
    # member 1's own events while its agent was cut off reached agent 0 late, and were spooled
    cut_off = [
        e
        for e in found
        if e[6] == run.truth.uuids[DOWN] and CRASH_S <= e[0] / 1e6 - START_S < RESTART_S
    ]
    assert cut_off
    assert run.summary["switchovers"] == []  # multi-primary: no secondary is elected


def test_the_crash_links_to_the_gr_log_lines_around_it(reports: dict[str, Run]) -> None:
    """Member 1's events at its crash link to the others' lines naming it unreachable."""
    run = reports["rows"]
    down = run.truth.uuids[DOWN]
    listed = run.summary["event_log"]
    at_crash = [
        entry
        for entry in listed
        if entry["member_id"] == down and CRASH_S <= _seconds(entry["event_time"]) < CRASH_S + 15
    ]
    assert at_crash
    lines = [line for entry in at_crash for line in entry["lines"]]
    unreachable = [line for line in lines if line["error_code"] == "MY-011493"]
    assert unreachable
    assert {line["line_member_id"] for line in unreachable} <= set(run.truth.uuids) - {down}
    reported = pq.read_table(run.out / "tables" / "event_log").to_pylist()
    assert len(reported) == sum(len(entry["lines"]) for entry in listed)
    page = (run.out / "report.html").read_text(encoding="utf-8")
    for entry in at_crash:
        assert f'<a href="#gr-log-{entry["event"]}">' in page
        assert f'<details id="gr-log-{entry["event"]}">' in page


def _seconds(moment: str) -> float:
    """An ISO 8601 UTC time of summary.json as group seconds."""
    return dt.datetime.fromisoformat(moment).timestamp() - START_S


def _max_step(values: list[Any]) -> float:
    known = [float(v) for v in values if v is not None]
    return max((abs(b - a) for a, b in itertools.pairwise(known)), default=0.0)


def _nearest_rank(values: list[float], quantile: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(quantile * len(ordered)) - 1)]


class TestAgainstTheSimulator:
    def test_every_snapshot_was_collected_ingested_and_reported(self, run):
        """The report covers all ROUNDS snapshots of all three members."""
        assert run.summary["range"]["snapshots"] == ROUNDS
        assert sorted(run.members) == sorted(run.truth.uuids)
        assert _seconds(run.summary["range"]["first_snapshot"]) == run.truth.times[0]
        assert all(m["snapshots"] == ROUNDS for m in run.members.values())

    @pytest.mark.parametrize("index", [0, SLOW])
    @pytest.mark.parametrize("counter", ["applied", "proposed", "checked"])
    def test_throughput_of_members_that_ran_throughout(self, run, index, counter):
        """Applied, proposed and checked per second equal the simulator's counter rates."""
        values = run.truth.series(index, counter)
        span = run.truth.times[-1] - run.truth.times[0]
        expected = (values[-1] - values[0]) / span
        tolerance = 2 * _max_step(values) / span
        reported = run.members[run.truth.uuids[index]][f"{counter}_per_s"]
        assert expected > 0
        assert reported == pytest.approx(expected, abs=tolerance)

    def test_throughput_of_the_restarted_member_counts_from_zero_after_the_restart(self, run):
        """Member 1's counters restart at 0: its rate adds both lives, never goes negative."""
        values = run.truth.series(DOWN, "checked")
        lives = [values[0], max(values[: values.index(min(values[1:]))]), values[-1]]
        increase = (lives[1] - lives[0]) + lives[2]
        span = run.truth.times[-1] - run.truth.times[0]
        reported = run.members[run.truth.uuids[DOWN]]["checked_per_s"]
        assert reported == pytest.approx(increase / span, abs=2 * _max_step(values) / span)

    def test_conflict_rate_and_rollback_ratio(self, run):
        """Conflicts per check and rollbacks per proposal equal the simulator's, per member."""
        for index in (0, SLOW):
            checked = run.truth.series(index, "checked")
            conflicts = run.truth.series(index, "conflicts")
            rate = (conflicts[-1] - conflicts[0]) / (checked[-1] - checked[0])
            member = run.members[run.truth.uuids[index]]
            assert 0.05 < rate < 0.9  # the scenario does conflict
            assert member["conflict_rate"] == pytest.approx(rate, abs=0.01)
        proposed = run.truth.series(0, "proposed")
        rolled = run.truth.series(0, "rollback")
        ratio = (rolled[-1] - rolled[0]) / (proposed[-1] - proposed[0])
        assert run.members[run.truth.uuids[0]]["rollback_ratio"] == pytest.approx(ratio, abs=0.01)
        assert run.summary["group"]["conflict_rate"] == pytest.approx(rate, abs=0.02)

    def test_down_window_episodes(self, run):
        """Member 1's UNREACHABLE and OFFLINE episodes match the simulator's, edge by edge."""
        uuid = run.truth.uuids[DOWN]
        truth = [(s, a, b) for s, a, b in run.truth.episodes(DOWN) if s != "ONLINE"]
        assert [s for s, _, _ in truth][:2] == ["UNREACHABLE", "OFFLINE"]
        reported = [e for e in run.summary["unreachable_episodes"] if e["member_id"] == uuid]
        assert len(reported) == 1
        _, start, end = truth[0]
        assert start == CRASH_S + 5  # suspected 5 s after the crash
        assert _seconds(reported[0]["start"]) == pytest.approx(start, abs=2)
        assert _seconds(reported[0]["end"]) == pytest.approx(end, abs=2)
        assert reported[0]["duration_s"] == pytest.approx(end - start, abs=2)
        assert run.members[uuid]["unreachable_s"] == pytest.approx(end - start, abs=2)
        offline = [(a, b) for s, a, b in truth if s == "OFFLINE"]
        assert run.members[uuid]["offline_s"] == pytest.approx(
            sum(b - a for a, b in offline), abs=2 * 2 * len(offline)
        )

    def test_not_connected_while_its_host_was_cut_off(self, run):
        """The cut-off agent is not connected from 10 silent periods after the cut to the heal."""
        uuid = run.truth.uuids[DOWN]
        episodes = [e for e in run.summary["not_connected_episodes"] if e["member_id"] == uuid]
        assert len(episodes) == 1
        assert _seconds(episodes[0]["start"]) == pytest.approx(CRASH_S + 10, abs=2)
        assert _seconds(episodes[0]["end"]) == pytest.approx(RESTART_S, abs=2)
        others = [e for e in run.summary["not_connected_episodes"] if e["member_id"] != uuid]
        assert others == []

    def test_slow_member_lag_and_queue(self, run):
        """Member 2's lag and applier queue percentiles and maxima are the simulator's."""
        member = run.members[run.truth.uuids[SLOW]]
        lags = run.truth.series(SLOW, "lag")
        queues = run.truth.series(SLOW, "applier_queue")
        lag_step, queue_step = _max_step(lags), _max_step(queues)
        assert max(lags) > 3  # the member does fall behind
        # A percentile is within the sketch's 1% of the value at its rank (0.5 ms for lags
        # under 0.1 s; whole numbers rounded), from the rollups or from the rows.
        sketch = 0.01
        for q in (0.5, 0.95, 0.99):
            expected = _nearest_rank([float(v) for v in lags], q)
            assert member[f"lag_seconds_p{round(q * 100)}"] == pytest.approx(
                expected, abs=lag_step + sketch * expected + 0.0005 * bool(sketch)
            )
        assert member["lag_seconds_max"] == pytest.approx(max(lags), abs=lag_step)
        for q in (0.5, 0.95):
            expected = _nearest_rank(queues, q)
            assert member[f"applier_queue_p{round(q * 100)}"] == pytest.approx(
                expected, abs=queue_step + sketch * expected + 0.5 * bool(sketch)
            )
        assert member["applier_queue_max"] == pytest.approx(max(queues), abs=queue_step)
        fast = run.members[run.truth.uuids[0]]
        assert fast["applier_queue_max"] < member["applier_queue_max"] / 10

    def test_lag_by_stage(self, run):
        """Members 0 and 2's stage percentiles and maxima are the simulator's; waiting is 2's lag."""
        stages = {(s["member_id"], s["stage"]): s for s in run.summary["lag_stages"]}
        assert len(stages) == 3 * 3
        for index in (0, SLOW):
            for stage in ("transport", "waiting", "apply"):
                values = [float(v) for v in run.truth.series(index, stage)]
                step = _max_step(values)
                got = stages[run.truth.uuids[index], stage]
                assert (got["samples"], got["unknown"]) == (ROUNDS, None)
                for q in (0.5, 0.95, 0.99):
                    expected = _nearest_rank(values, q)
                    assert got[f"p{round(q * 100)}"] == pytest.approx(
                        expected, abs=step + 0.01 * abs(expected) + 0.0005
                    )
                assert got["max"] == pytest.approx(max(values), abs=step)
        slow, fast = (stages[run.truth.uuids[i], "waiting"] for i in (SLOW, 0))
        assert slow["p50"] > 1 > fast["max"]

    def test_flow_control_throttling(self, run):
        """Seconds with an ONLINE member's queue over the threshold match the simulator's."""
        over = [
            any(
                v["state"] == "ONLINE" and max(v["cert_queue"], v["applier_queue"]) > THRESHOLD
                for v in sample.values()
            )
            for sample in run.truth.samples
        ]
        expected = sum(1.0 for flag in over[:-1] if flag)
        edges = sum(1 for a, b in itertools.pairwise(over) if a != b) + 1
        assert expected > 0
        assert run.summary["group"]["throttling_s"] == pytest.approx(expected, abs=edges)
        slow = run.members[run.truth.uuids[SLOW]]
        assert slow["throttling_s"] == pytest.approx(expected, abs=edges)

    def test_the_page_and_the_tables_are_written(self, run):
        """report.html holds the charts and tables; every table has its CSV and Parquet."""
        page = (run.out / "report.html").read_text(encoding="utf-8")
        assert page.count("<svg") == 3
        assert "UNREACHABLE episodes" in page
        for name, where in run.summary["tables"].items():
            assert (run.out / where["csv"]).is_file(), name
            assert any((run.out / where["parquet"]).glob("*.parquet")), name
