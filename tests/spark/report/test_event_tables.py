"""The report's switchovers and events tables, from the simulator's primary-failover events.

In-memory agents run the ``primary-failover`` scenario on the test clock (the harness of
tests/agent/test_events_group.py: primary 0 crashes at 30 s, is expelled at 40 s, a new
primary is elected, and 0 returns at 90 s as a secondary); the events one agent serves are the
table's events, and the page is rendered from the result tables. No Spark. A second failover
is to a lagging member, which stays super_read_only until it has applied its backlog
(``Primary_election_primary_process::primary_election_process_handler``,
plugin/group_replication/src/plugin_handlers/primary_election_primary_process.cc).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from grstats.agent import runtime
from grstats.agent.sim.group import TICKS_PER_SECOND, SimulatedGroup, member_uuid
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sim.views import snapshot
from grstats.core.rows import REPLICATION_GROUP_EVENTS
from grstats.spark.events import ARROW_EVENTS, events_table, new_events
from grstats.spark.report.config import ReportConfig
from grstats.spark.report.event_tables import events, switchovers
from grstats.spark.report.output import iso
from grstats.spark.report.page import render
from grstats.spark.report.summary import build_summary
from grstats.spark.report.tables import EVENTS, SWITCHOVERS
from tests.agent.test_events_group import primary
from tests.agent.test_group_status import crash, custom, ids, run_to, running, start
from tests.agent.test_runtime import START_S
from tests.spark.report.test_page_render import _page

if TYPE_CHECKING:
    from collections.abc import Sequence

    from grstats.agent.sim.scenario import Scenario

#: One worker runs the module, so that its module-scoped fixtures are built once.
pytestmark = pytest.mark.xdist_group("report-event-tables")

LABEL = "orders"


@dataclasses.dataclass(frozen=True)
class Failover:
    """The events of a failover as an agent served them, and the simulator's members."""

    events: pa.Table
    old: str
    elected: str


async def _run_failover(
    scenario: Scenario, elected_by: float, until: float
) -> tuple[Sequence[Any], Sequence[Any], str, str]:
    async with running(await start(scenario)) as group:
        old = ids(group)[0]
        await run_to(group, elected_by)
        elected = primary(group.agents[1])
        await run_to(group, until)
        columns, rows = group.agents[1].tables(extended=False)[REPLICATION_GROUP_EVENTS.name]
    return columns, rows, old, elected


def _failover_of(scenario: Scenario, elected_by: float, until: float) -> Failover:
    """The events agent 1 serves at ``until`` s, the new primary read at ``elected_by`` s."""
    # Reads never late on the test clock, as in tests/agent/test_group_status.py's
    # reads_finish_within_their_period.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runtime, "READ_WAIT_PERIODS", 30.0)
        columns, rows, old, elected = asyncio.run(_run_failover(scenario, elected_by, until))
    assert [column.name for column in columns] == [c.name for c in REPLICATION_GROUP_EVENTS.columns]
    found = events_table([LABEL, "gr-name", *row] for row in rows)
    return Failover(found, old, elected)


@pytest.fixture(name="failover", scope="module")
def _failover() -> Failover:
    # Once for the module (about a second).
    return _failover_of(load_scenario("primary-failover"), 45, 100)


#: The member the lagging scenario elects: the lowest uuid of the two secondaries
#: (``_elect``, as ``primary_election_utils.cc``'s default order without weights).
SLOW = min((1, 2), key=lambda index: member_uuid("custom", 1, index))
#: Primary 0 writes 1000 tps, the member elected after it applies 500 tps: 10,000 behind at
#: the crash at 20 s (the agents' first read is at 10 s), 5,000 at its election at about
#: 30 s, so about 10 s of backlog then. No flow control, which would hold the primary near
#: the slow member (docs/cli.md). Member 0 restarts at 45 s: its agent reports it no longer
#: PRIMARY, which names it the old primary of the table's first election.
LAGGING = custom(
    3,
    workload={"rate_tps": 1000},
    appliers={"capacity_tps": 4000, "capacity_overrides": {SLOW: 500}},
    flow_control={"mode": "DISABLED"},
    events=[crash(0, 20), {"at": 45, "action": "start", "member": 0}],
)


@pytest.fixture(name="lagging", scope="module")
def _lagging() -> Failover:
    return _failover_of(LAGGING, 35, 50)


def _backlog_in_the_simulator(scenario: Scenario, member: int) -> tuple[float, float]:
    """When (s) ``member`` is elected and when its super_read_only turns OFF, stepped alone."""
    group = SimulatedGroup(scenario, 1, int(START_S * 1_000_000))
    elected_at: float | None = None
    while group.tick < 60 * TICKS_PER_SECOND:
        group.step()
        now = group.tick / TICKS_PER_SECOND
        if elected_at is None and group.primary == member:
            elected_at = now
        if elected_at is not None and not snapshot(group, member).server.super_read_only:
            return elected_at, now
    raise AssertionError(f"member {member} never turned writable")


def _at(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(START_S + seconds, dt.UTC)


def test_the_failover_is_one_switchover_from_the_old_primary(failover: Failover) -> None:
    """One switchover: member 0 to the simulator's new primary, about 10 s without a primary."""
    table = switchovers(failover.events, None, None)
    assert table.schema == SWITCHOVERS
    (row,) = table.to_pylist()
    assert (row["old_primary"], row["new_primary"]) == (failover.old, failover.elected)
    assert 40 <= (row["time"] - _at(0)).total_seconds() <= 41  # expelled at 40 s, then elected
    # its agent lost its server a period after the crash at 30 s
    assert row["primary_lost_by"] == "SOURCE_FAILED"
    assert (row["primary_lost_at"] - _at(0)).total_seconds() == 31
    assert 9 <= row["no_primary_s"] <= 10
    assert row["view_id"]


def test_a_new_primary_without_a_backlog_is_writable_at_its_election(failover: Failover) -> None:
    """Nothing to apply at the election: its SUPER_READ_ONLY OFF is in the same read."""
    (row,) = switchovers(failover.events, None, None).to_pylist()
    assert row["writable_at"] == row["time"]
    assert row["write_outage_s"] == row["no_primary_s"]
    assert row["write_outage_end"] == "SUPER_READ_ONLY"


def test_the_new_primary_reports_super_read_only_off_after_its_election(lagging: Failover) -> None:
    """The elected member's own agent reports SUPER_READ_ONLY ON -> OFF once, after MEMBER_ROLE."""
    rows = lagging.events.to_pylist()
    (elected,) = [
        e["event_time"]
        for e in rows
        if e["event_type"] == "MEMBER_ROLE"
        and e["member_id"] == lagging.elected
        and e["new_value"] == "PRIMARY"
    ]
    (writable,) = [
        e
        for e in rows
        if e["event_type"] == "SUPER_READ_ONLY"
        and e["member_id"] == lagging.elected
        and e["new_value"] == "OFF"
    ]
    assert (writable["old_value"], writable["reported_by"]) == ("ON", lagging.elected)
    assert writable["event_time"] > elected


def test_a_failover_to_a_lagging_member_outlasts_the_election_by_its_backlog(
    lagging: Failover,
) -> None:
    """The write outage runs until the new primary applied its backlog, as the simulator did."""
    assert lagging.elected == member_uuid("custom", 1, SLOW)
    elected_s, writable_s = _backlog_in_the_simulator(LAGGING, SLOW)
    backlog_s = writable_s - elected_s
    assert backlog_s > 5  # the scenario's: about 10 s
    (row,) = switchovers(lagging.events, None, None).to_pylist()
    assert row["primary_lost_by"] == "SOURCE_FAILED"
    assert row["write_outage_end"] == "SUPER_READ_ONLY"
    # each agent sees a change at its next read, one period (1 s) at most after it
    assert 0 <= (row["writable_at"] - _at(writable_s)).total_seconds() <= 1
    assert abs(row["write_outage_s"] - row["no_primary_s"] - backlog_s) <= 1
    assert row["write_outage_s"] == (row["writable_at"] - row["primary_lost_at"]).total_seconds()


def test_without_super_read_only_events_the_outage_ends_at_the_election(
    lagging: Failover,
) -> None:
    """An older agent's events (no SUPER_READ_ONLY): writable_at null, the election ends it."""
    older = lagging.events.filter(
        pc.not_equal(lagging.events.column("event_type"), "SUPER_READ_ONLY")
    )
    assert older.num_rows < lagging.events.num_rows
    (row,) = switchovers(older, None, None).to_pylist()
    assert row["writable_at"] is None
    assert row["write_outage_s"] == row["no_primary_s"]
    assert row["write_outage_s"] is not None
    assert row["write_outage_end"] == "MEMBER_ROLE"
    page = render(dataclasses.replace(_page(), switchovers=[row]))
    assert f"at least {row['write_outage_s']:,.1f} (to the election)" in page


def test_a_range_without_the_election_has_no_switchover(failover: Failover) -> None:
    """From 50 s on the election (at 40 s) is out of range: the table is empty, typed."""
    table = switchovers(failover.events, _at(50), None)
    assert table.num_rows == 0
    assert table.schema == SWITCHOVERS


def test_the_events_table_is_the_range_in_time_order(failover: Failover) -> None:
    """The range's events, each once, ordered by time, of the EVENTS schema."""
    twice = pa.concat_tables([failover.events, failover.events])
    assert new_events(twice, ARROW_EVENTS.empty_table()).num_rows == failover.events.num_rows
    table = events(failover.events, _at(30), _at(90))
    assert table.schema == EVENTS
    times = table.column("event_time").to_pylist()
    assert times == sorted(times)
    assert 0 < table.num_rows < failover.events.num_rows
    assert all(_at(30) <= moment < _at(90) for moment in times)
    types = table.column("event_type").to_pylist()
    assert "SOURCE_FAILED" in types
    assert "SOURCE_RECOVERED" not in types  # at 91 s, out of range


def test_the_page_shows_both_tables_and_says_when_empty(failover: Failover) -> None:
    """The page lists the switchover and the events; an empty range says so in words."""
    rows: dict[str, Any] = {
        "switchovers": switchovers(failover.events, None, None).to_pylist(),
        "events": events(failover.events, None, None).to_pylist(),
    }
    page = render(dataclasses.replace(_page(), **rows))
    assert "<h2>Primary switchovers</h2><p>1 in this range" in page
    assert f"{failover.elected}" in page
    assert "(from SOURCE_FAILED)" in page
    assert "<th class='text'>write outage (s)</th>" in page
    assert "until the new primary's super_read_only turned OFF" in page
    assert "(to SUPER_READ_ONLY OFF at " in page
    assert f"<h2>Events</h2><p>{len(rows['events'])} events" in page
    empty = render(_page())
    assert "No switchovers in this range." in empty
    assert "No events in this range." in empty


#: The other tables summary.json reads, empty here.
_OTHER_SUMMARY_TABLES = (
    "lag_stages",
    "unreachable_episodes",
    "not_connected_episodes",
    "throttling_episodes",
    "worst_minutes",
    "events",
)


def test_summary_json_gives_each_switchover_its_write_outage(lagging: Failover) -> None:
    """summary.json's switchovers carry writable_at (ISO, Z) and write_outage_s as the table."""
    (row,) = switchovers(lagging.events, None, None).to_pylist()
    group = {"scope": "group", "first_at": _at(10), "last_at": _at(50), "snapshots": 1}
    tables: dict[str, list[dict[str, Any]]] = {
        "figures": [group | {"throttling_s": 0.0}],
        "switchovers": [row],
        **{name: [] for name in _OTHER_SUMMARY_TABLES},
    }
    summary = build_summary(ReportConfig(Path("table"), Path("out")), tables, 1)
    (found,) = json.loads(json.dumps(summary))["switchovers"]
    assert list(found) == SWITCHOVERS.names
    assert found["writable_at"] == iso(row["writable_at"])
    assert found["writable_at"].endswith("Z")
    assert found["write_outage_s"] == row["write_outage_s"] > row["no_primary_s"]
    assert found["write_outage_end"] == "SUPER_READ_ONLY"
