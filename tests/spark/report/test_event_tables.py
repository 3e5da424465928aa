"""The report's switchovers and events tables, from the simulator's primary-failover events.

In-memory agents run the ``primary-failover`` scenario on the test clock (the harness of
tests/agent/test_events_group.py: primary 0 crashes at 30 s, is expelled at 40 s, a new
primary is elected, and 0 returns at 90 s as a secondary); the events one agent serves are the
table's events, and the page is rendered from the result tables. No Spark.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from grstats.agent import runtime
from grstats.agent.rows import REPLICATION_GROUP_EVENTS
from grstats.agent.sim.scenario import load_scenario
from grstats.spark.events import ARROW_EVENTS, events_table, new_events
from grstats.spark.report.event_tables import events, switchovers
from grstats.spark.report.page import render
from grstats.spark.report.tables import EVENTS, SWITCHOVERS
from tests.agent.test_events_group import primary
from tests.agent.test_group_status import ids, run_to, running, start
from tests.agent.test_runtime import START_S
from tests.spark.report.test_page_render import _page

if TYPE_CHECKING:
    from collections.abc import Sequence

LABEL = "orders"


@dataclasses.dataclass(frozen=True)
class Failover:
    """The events of a failover as an agent served them, and the simulator's members."""

    events: pa.Table
    old: str
    elected: str


async def _run_failover() -> tuple[Sequence[Any], Sequence[Any], str, str]:
    async with running(await start(load_scenario("primary-failover"))) as group:
        old = ids(group)[0]
        await run_to(group, 45)
        elected = primary(group.agents[1])
        await run_to(group, 100)
        columns, rows = group.agents[1].tables(extended=False)[REPLICATION_GROUP_EVENTS.name]
    return columns, rows, old, elected


@pytest.fixture(name="failover", scope="module")
def _failover() -> Failover:
    # Once for the module (about a second); reads never late on the test clock, as in
    # tests/agent/test_group_status.py's reads_finish_within_their_period.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runtime, "READ_WAIT_PERIODS", 30.0)
        columns, rows, old, elected = asyncio.run(_run_failover())
    assert [column.name for column in columns] == [c.name for c in REPLICATION_GROUP_EVENTS.columns]
    found = events_table([LABEL, "gr-name", *row] for row in rows)
    return Failover(found, old, elected)


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
    assert f"<h2>Events</h2><p>{len(rows['events'])} events" in page
    empty = render(_page())
    assert "No switchovers in this range." in empty
    assert "No events in this range." in empty
