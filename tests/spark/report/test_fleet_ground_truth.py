"""The fleet report against the simulator's ground truth: two groups, one collector, one table.

Two simulated groups run under real agents on 127.0.0.1, each on its own test clock, stepped
together one group second at a time: ``west`` is the group of test_ground_truth (3 members,
multi-primary conflicts, member 2 slow, member 1 down from 60 s to 100 s, seed 1) and
``east`` a steady single-primary group of 2 members (seed 2) that keeps up. One poller per
group, as ``grstats collect --group`` runs them, appends both groups' records to one spool;
ingest loads it into one table and the report runs in local Spark, for the fleet and with
``group="east"``.

Checked: every single-group check of test_ground_truth on west's own report inside the fleet's
(``groups/west/``); east's figures against east's ground truth, from the fleet summary's
``groups`` entry, from ``groups/east/summary.json`` and from the ``--group east`` report; the
entries equal the groups' own summaries; the ranking puts west (the worse lag) first, although
its label sorts last. Tolerances are those of test_ground_truth.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import tomllib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

import tests.spark.report.test_ground_truth as single
from grstats.agent.limits import DEFAULT_LIMITS
from grstats.agent.runtime import Agent
from grstats.agent.sim.group import group_uuid
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.transports import FaultyTransport, GrpcTransport
from grstats.collector.spool import SpoolSettings, SpoolWriter, SyncPolicy
from grstats.spark.ingest import run_ingest
from grstats.spark.report.config import ReportConfig
from grstats.spark.report.fleet import ranked
from grstats.spark.report.job import run_report
from grstats.spark.rollup import RollupSettings
from tests.agent.test_runtime import START_S, Clock, Group, settings
from tests.spark.report.compare import differences
from tests.spark.report.test_ground_truth import (
    ROUNDS,
    SCENARIO,
    THRESHOLD,
    Collection,
    Run,
    Truth,
)

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

# One worker runs the module, so the fleet (about 27 s) is collected and reported once.
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.xdist_group("fleet-ground-truth")]

EAST = """\
name = "fleet-east"
description = "Single-primary, 2 members, 300 tps; every member keeps up."
mode = "single-primary"
members = 2

[workload]
rate_tps = 300
key_space = 100000
keys_per_transaction = 4

[appliers]
capacity_tps = 4000
"""
#: label -> (scenario, members, seed, the member cut off while down)
GROUPS: dict[str, tuple[str, int, int, int | None]] = {
    "east": (EAST, 2, 2, None),
    "west": (SCENARIO, 3, 1, single.DOWN),
}


async def start_seeded_group(members: int, scenario: str, seed: int) -> Group:
    """Start ``members`` agents of a simulated group of ``seed`` over gRPC, loops disabled.

    tests/agent/test_runtime.py ``start_group`` with a seed of the caller's: two groups of one
    seed would have the same group name and member ids.
    """
    clock = Clock()
    sized = load_scenario(scenario).with_members(members)
    agents, links = [], []
    for index in range(members):
        transport = FaultyTransport(GrpcTransport(DEFAULT_LIMITS))
        source = SimulatedSource(sized, index, seed=seed, group_start_s=START_S, clock=clock.s)
        agents.append(Agent(settings(), source, transport=transport, clock=clock.us))
        links.append(transport)
    for agent in agents:
        await agent.start()
        assert agent._task is not None
        agent._task.cancel()  # tests drive the periods (Group.rounds)
    bound = tuple(agent.address for agent in agents)
    for agent in agents:
        agent.config = dataclasses.replace(agent.config, peers=bound)
    return Group(agents, list(links), clock)


async def _collect(paths: dict[str, Path], spool: Path) -> dict[str, Truth]:
    """Collect every group of GROUPS into one spool for ROUNDS seconds; return their truths."""
    collections: dict[str, Collection] = {}
    try:
        for label, (_, members, seed, down) in GROUPS.items():
            group = await start_seeded_group(members, str(paths[label]), seed)
            collections[label] = Collection.begin(
                group, paths[label], seed=seed, label=label, down=down
            )
        with SpoolWriter(spool, SpoolSettings(sync=SyncPolicy.SEAL)) as writer:
            for _ in range(ROUNDS):
                for collection in collections.values():
                    await collection.round(writer)
    finally:
        for collection in collections.values():
            await collection.close()
    return {label: collection.truth for label, collection in collections.items()}


@dataclass
class Fleet:
    truths: dict[str, Truth]
    summary: dict[str, Any]  #: the fleet's summary.json
    out: Path  #: the fleet's report directory
    alone: dict[str, Any]  #: summary.json of the report with group="east"
    rows: dict[str, Any]  #: the fleet's summary.json read from the member rows

    def own(self, label: str) -> dict[str, Any]:
        """The group's own summary.json, under the fleet's report."""
        text = (self.out / "groups" / label / "summary.json").read_text(encoding="utf-8")
        summary: dict[str, Any] = json.loads(text)
        return summary

    def entry(self, label: str) -> dict[str, Any]:
        """The group's entry in the fleet summary's ``groups``."""
        return next(g for g in self.summary["groups"] if g["group_label"] == label)


@pytest.fixture(name="fleet", scope="module")
def _fleet(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    base = tmp_path_factory.mktemp("fleet-ground-truth")
    paths = {}
    for label, (text, *_) in GROUPS.items():
        paths[label] = base / f"{label}.toml"
        paths[label].write_text(text, encoding="utf-8")
    truths = asyncio.run(_collect(paths, base / "spool"))
    run_ingest(
        spark,
        base / "spool",
        base / "table",
        rollups=RollupSettings(flow_control_threshold=THRESHOLD),
    )
    config = ReportConfig(
        base / "table", base / "report", flow_control_threshold=THRESHOLD, source="rollups"
    )
    summary = run_report(config, spark=spark).summary
    alone = dataclasses.replace(config, out_dir=base / "east", group="east")
    rows = dataclasses.replace(config, out_dir=base / "rows", source="rows")
    return Fleet(
        truths,
        summary,
        base / "report",
        run_report(alone, spark=spark).summary,
        run_report(rows, spark=spark).summary,
    )


def test_the_fleet_from_the_rollups_equals_the_fleet_from_the_rows(fleet: Fleet) -> None:
    """The fleet report read from the rollups has the figures of partials made from the rows."""
    assert fleet.summary["settings"]["source"] == "rollups"
    assert fleet.rows["settings"]["source"] == "rows"
    assert differences(fleet.summary, fleet.rows) == []


class TestWestAgainstTheSimulator(single.TestAgainstTheSimulator):
    """Every check of the one-group report, on west's own report inside the fleet's."""

    @pytest.fixture(name="run")
    def _west(self, fleet: Fleet) -> Run:
        summary = fleet.own("west")
        members = {m["member_id"]: m for m in summary["members"]}
        out = fleet.out / "groups" / "west"
        return Run(fleet.truths["west"], summary, members, out, summary["settings"]["source"])


def _east(fleet: Fleet, source: str) -> dict[str, Any]:
    if source == "fleet entry":
        return fleet.entry("east")
    if source == "own summary":
        return fleet.own("east")
    return fleet.alone


SOURCES = ["fleet entry", "own summary", "--group east"]


@pytest.mark.parametrize("source", SOURCES)
class TestEastAgainstTheSimulator:
    def test_every_snapshot_of_its_members_and_none_of_west(self, fleet, source):
        """East's figures cover its ROUNDS snapshots of its own two members only."""
        summary, truth = _east(fleet, source), fleet.truths["east"]
        assert summary["range"]["snapshots"] == ROUNDS
        assert sorted(m["member_id"] for m in summary["members"]) == sorted(truth.uuids)
        assert all(m["snapshots"] == ROUNDS for m in summary["members"])
        assert single._seconds(summary["range"]["first_snapshot"]) == truth.times[0]

    @pytest.mark.parametrize("counter", ["applied", "proposed", "checked"])
    def test_throughput(self, fleet, source, counter):
        """Each member's rates equal the simulator's counter rates (the primary proposes)."""
        summary, truth = _east(fleet, source), fleet.truths["east"]
        members = {m["member_id"]: m for m in summary["members"]}
        span = truth.times[-1] - truth.times[0]
        moving = 0
        for index, uuid in enumerate(truth.uuids):
            values = truth.series(index, counter)
            expected = (values[-1] - values[0]) / span
            tolerance = 2 * single._max_step(values) / span
            assert members[uuid][f"{counter}_per_s"] == pytest.approx(expected, abs=tolerance)
            moving += expected > 0
        assert moving >= 1

    def test_lag_and_no_episodes(self, fleet, source):
        """Each member's worst lag is the simulator's; no member was ever down or cut off."""
        summary, truth = _east(fleet, source), fleet.truths["east"]
        members = {m["member_id"]: m for m in summary["members"]}
        for index, uuid in enumerate(truth.uuids):
            lags = [float(v) for v in truth.series(index, "lag") if v is not None]
            reported = members[uuid]["lag_seconds_max"] or 0.0
            assert reported == pytest.approx(max(lags), abs=single._max_step(lags) + 1e-9)
        assert summary["unreachable_episodes"] == []
        assert summary["not_connected_episodes"] == []
        assert summary["group"]["throttling_s"] == 0


class TestTheFleet:
    def test_groups_name_their_gr_group(self, fleet):
        """The groups list, by label, each with the GR group name its agents reported."""
        assert [(g["group_label"], g["group_name"]) for g in fleet.summary["groups"]] == [
            (label, group_uuid(tomllib.loads(GROUPS[label][0])["name"], GROUPS[label][2]))
            for label in ("east", "west")
        ]
        assert fleet.summary["range"]["snapshots"] == 2 * ROUNDS

    @pytest.mark.parametrize("label", ["east", "west"])
    def test_each_entry_is_the_groups_own_summary(self, fleet, label):
        """A groups entry holds its group's own summary.json, tables relative to the top."""
        entry, own = fleet.entry(label), fleet.own(label)
        for key in ("range", "group", "members", "unreachable_episodes", "worst_minutes"):
            assert entry[key] == own[key], key
        for name, where in own["tables"].items():
            assert entry["tables"][name]["csv"] == f"groups/{label}/{where['csv']}"
            assert (fleet.out / entry["tables"][name]["csv"]).is_file()

    def test_group_east_alone_gives_its_figures(self, fleet):
        """The report of group east alone has east's figures, and no groups list."""
        own = fleet.own("east")
        assert "groups" not in fleet.alone
        for key in ("range", "group", "members", "unreachable_episodes", "not_connected_episodes"):
            assert fleet.alone[key] == own[key], key

    def test_the_group_with_the_worse_lag_ranks_first(self, fleet):
        """West (its slow member lags seconds behind) ranks before east, on the page too."""
        worst = {
            label: max(
                max((float(v) for v in truth.series(i, "lag") if v is not None), default=0.0)
                for i in range(len(truth.uuids))
            )
            for label, truth in fleet.truths.items()
        }
        assert worst["west"] > 3 > worst["east"]
        assert [g["group_label"] for g in ranked(fleet.summary["groups"])] == ["west", "east"]
        page = (fleet.out / "report.html").read_text(encoding="utf-8")
        overview = page[page.index("Fleet overview") : page.index("</table>")]
        assert overview.index("#group-west") < overview.index("#group-east")
