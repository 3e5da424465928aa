"""The report's events link each event to GR's log lines around it (issue 48, point 3).

The events and lines are those agent 1 serves after crash-rejoin on the test clock (as
test_event_tables.py takes a failover's), as ingest keeps them (events_table, log_table);
the page and summary.json are built from them in-process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest

from grstats.agent import runtime
from grstats.agent.sim.scenario import load_scenario
from grstats.core.rows import REPLICATION_GROUP_EVENTS, REPLICATION_GROUP_MEMBERS
from grstats.core.rows.member_log import REPLICATION_GROUP_MEMBER_LOG
from grstats.spark.events import events_table
from grstats.spark.member_log import log_table
from grstats.spark.report.config import ReportConfig
from grstats.spark.report.event_tables import event_log, events
from grstats.spark.report.page import render
from grstats.spark.report.summary import build_summary
from grstats.spark.report.tables import EVENT_LOG
from tests.agent.test_group_status import ids, run_to, running, start
from tests.agent.test_runtime import START_S
from tests.spark.report.test_page_render import _page

#: One worker runs the module, so that its module-scoped fixtures are built once.
pytestmark = pytest.mark.xdist_group("report-event-log")

LABEL = "orders"


async def _run() -> tuple[list[Any], list[Any], list[dict[str, Any]], str]:
    async with running(await start(load_scenario("crash-rejoin"))) as group:
        crashed = ids(group)[2]
        await run_to(group, 80)
        served = group.agents[1].tables(extended=False)
        members = served[REPLICATION_GROUP_MEMBERS.name]
        names = [column.name for column in members[0]]
        rows = [dict(zip(names, row, strict=True)) for row in members[1]]
        return (
            list(served[REPLICATION_GROUP_EVENTS.name][1]),
            list(served[REPLICATION_GROUP_MEMBER_LOG.name][1]),
            rows,
            crashed,
        )


@pytest.fixture(name="crash", scope="module")
def _crash() -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """The range's events, their EVENT_LOG rows and member 2's id (about a second)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runtime, "READ_WAIT_PERIODS", 30.0)
        event_rows, line_rows, members, crashed = asyncio.run(_run())
    shown = events(events_table([LABEL, "gr", *row] for row in event_rows), None, None)
    lines = log_table([LABEL, "gr", *row] for row in line_rows)
    addresses = {m["MEMBER_ID"]: f"{m['MEMBER_HOST']}:{m['MEMBER_PORT']}" for m in members}
    found = event_log(shown, lines, addresses)
    assert found.schema == EVENT_LOG
    return shown.to_pylist(), found.to_pylist(), crashed


def test_the_crash_links_to_the_lines_around_it(
    crash: tuple[list[dict[str, Any]], list[dict[str, Any]], str],
) -> None:
    """Member 2's SOURCE_FAILED row links to its own last lines and the others' unreachable ones."""
    shown, around, crashed = crash
    number = next(
        index
        for index, e in enumerate(shown, start=1)
        if e["member_id"] == crashed and e["event_type"] == "SOURCE_FAILED"
    )
    lines = [line for line in around if line["event"] == number]
    crash_at = dt.datetime.fromtimestamp(START_S + 30, dt.UTC)
    assert any(x["line_member_id"] == crashed and x["logged"] < crash_at for x in lines)
    assert any(x["error_code"] == "MY-011493" and "unreachable" in x["data"] for x in lines)
    event_at = shown[number - 1]["event_time"]
    assert all(abs(x["logged"] - event_at) <= dt.timedelta(seconds=60) for x in lines)
    page = render(dataclasses.replace(_page(), events=shown, event_log=around))
    link = re.search(rf'<a href="#gr-log-{number}">(\d+) lines</a>', page)
    assert link is not None
    assert int(link.group(1)) == len(lines)
    block = page[page.index(f'<details id="gr-log-{number}">') :]
    block = block[: block.index("</details>")]
    assert "has become unreachable" in block
    assert block.count("<tr>") == len(lines) + 1  # the header, then each line
    assert "<h3>GR log around the events</h3>" in page
    assert "GR log around the events" not in render(dataclasses.replace(_page(), events=shown))


def test_summary_json_lists_each_events_lines(
    crash: tuple[list[dict[str, Any]], list[dict[str, Any]], str],
) -> None:
    """summary.json's event_log: per event with lines, the event and its lines, ISO times."""
    shown, around, _ = crash
    group = {"scope": "group", "first_at": shown[0]["event_time"], "snapshots": 1}
    tables: dict[str, list[dict[str, Any]]] = {
        "figures": [group | {"last_at": shown[-1]["event_time"], "throttling_s": 0.0}],
        "events": shown,
        "event_log": around,
        **{
            name: []
            for name in (
                "lag_stages",
                "unreachable_episodes",
                "not_connected_episodes",
                "throttling_episodes",
                "worst_minutes",
                "switchovers",
            )
        },
    }
    summary = json.loads(json.dumps(build_summary(ReportConfig(Path("t"), Path("o")), tables, 1)))
    listed = summary["event_log"]
    assert [entry["event"] for entry in listed] == sorted({line["event"] for line in around})
    assert sum(len(entry["lines"]) for entry in listed) == len(around)
    first = listed[0]
    assert list(first) == ["event", "event_time", "member_id", "event_type", "lines"]
    assert first["event_time"].endswith("Z")
    assert list(first["lines"][0]) == EVENT_LOG.names[5:]
