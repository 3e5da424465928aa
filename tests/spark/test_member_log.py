"""The table's GR log lines: spooled in the columns file, kept once each, found around each event.

No Spark: a real collector's poller asks real agents over gRPC (crash-rejoin on the test
clock); its records go through the columns file's writer as the spool's do; the driver's part
(new_lines, lines_around) runs in-process.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgpack  # type: ignore[import-untyped]

from grstats.collector.columns import SegmentColumns
from grstats.collector.poller import Poller, PollerSettings
from grstats.collector.records import LOG_COLUMNS, record_events, table_rows
from grstats.spark.events import events_table
from grstats.spark.member_log import ARROW_LOG, log_table, new_lines
from grstats.spark.member_log import lines_around as around
from tests.agent.test_runtime import START_S, start_group, stop_all

GROUP = ["orders", "gr-name"]


async def _crash_rejoin() -> tuple[list[dict[str, Any]], str]:
    """The records a poller spools over crash-rejoin, every 5 s to 80 s; member 2's id."""
    group = await start_group(3, "crash-rejoin")
    poller = Poller(PollerSettings((group.agents[0].address,), events_every_s=0))
    records = []
    try:
        for _ in range(14):
            await group.rounds(5)
            records.append(await poller.poll())
        return records, group.agents[2].member_id
    finally:
        await poller.aclose()
        await stop_all(group)


def _columns_body(records: list[dict[str, Any]]) -> dict[str, Any]:
    columns = SegmentColumns()
    for offset, record in enumerate(records):
        columns.note_frame(offset, 0)
        columns.add({**record, "group_label": GROUP[0], "group_name": GROUP[1]}, offset)
    body: dict[str, Any] = msgpack.unpackb(columns.to_bytes(1)[12:], raw=False)
    return body


async def test_lines_are_kept_once_and_found_around_the_crash() -> None:
    """Member 2's own lines before its crash and the others' naming it are around its failure."""
    records, crashed = await _crash_rejoin()
    body = _columns_body(records)
    assert len(body["log"]) > 0
    assert all(len(line) == 2 + len(LOG_COLUMNS) for line in body["log"])
    spooled = log_table(body["log"])
    first = new_lines(spooled, ARROW_LOG.empty_table())
    assert first.num_rows == spooled.num_rows  # the poller spooled each line once
    restarted = log_table(body["log"] * 2)  # a restarted collector spools them all again
    assert new_lines(restarted, first).num_rows == 0
    assert new_lines(restarted, ARROW_LOG.empty_table()).equals(first)
    events = events_table([*GROUP, *event] for record in records for event in record_events(record))
    members = table_rows(records[-1], "replication_group_members")
    addresses = {str(m["MEMBER_ID"]): f"{m['MEMBER_HOST']}:{m['MEMBER_PORT']}" for m in members}
    crash_at = dt.datetime.fromtimestamp(START_S + 30, dt.UTC)
    failed = [
        index
        for index, event in enumerate(events.to_pylist())
        if event["member_id"] == crashed
        and event["event_type"] == "SOURCE_FAILED"
        and abs((event["event_time"] - crash_at).total_seconds()) < 5
    ]
    assert failed
    # 35 s before (the group's start), 15 s after: the unreachable and expel lines, not the rejoin's
    found = around(events, first, window_s=(35.0, 15.0), addresses=addresses)
    lines = found[failed[0]]
    own = [line for line in lines if line["member_id"] == crashed]
    assert any(line["logged"] <= crash_at for line in own)  # written before its host died
    others = [line for line in lines if line["member_id"] != crashed]
    assert any(addresses[crashed] in line["data"] for line in others)
    assert any("unreachable" in line["data"] for line in others)
    event_at = events.column("event_time")[failed[0]].as_py()
    start, end = event_at - dt.timedelta(seconds=35), event_at + dt.timedelta(seconds=15)
    assert all(start <= line["logged"] <= end for line in lines)
    assert lines == sorted(lines, key=lambda line: (line["logged"], line["member_id"]))
    inside = [line for line in first.to_pylist() if start <= line["logged"] <= end]
    assert len(inside) < first.num_rows  # the window left the rejoin's lines out
    unrelated = [
        line
        for line in inside
        if line["member_id"] != crashed and addresses[crashed] not in line["data"]
    ]
    assert unrelated  # another member's own news ("This server was declared online")
    assert not [line for line in unrelated if line in lines]
