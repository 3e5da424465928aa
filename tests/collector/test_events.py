"""The collector's events: asked with the polls, spooled once per answer, read back or refused."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from grstats.collector.columns import SegmentColumns
from grstats.collector.errors import RecordError
from grstats.collector.events import NewEvents
from grstats.collector.poller import EVENTS_LATE_S, Poller, PollerSettings
from grstats.collector.records import (
    EVENT_COLUMNS,
    LOG_TABLE,
    events_from_response,
    log_from_response,
    record_events,
)
from grstats.core.rows import REPLICATION_GROUP_EVENTS
from grstats.proto import grstats_pb2 as pb
from tests.agent.test_runtime import START_S, start_group, stop_all

if TYPE_CHECKING:
    from grstats.collector.records import Cell, Record

EVENT = [
    1_700_000_000_000_000,
    "a" * 36,
    "MEMBER_ROLE",
    "SECONDARY",
    "PRIMARY",
    "v:2",
    "a" * 36,
    "",
]


def test_only_rows_the_previous_answer_lacked_are_new() -> None:
    """A row is new once; an answer of other columns has every row new."""
    seen = NewEvents()
    first: list[Cell] = [1, "x"]
    second: list[Cell] = [2, "y"]
    assert seen.take(["T", "N"], [first]) == [first]
    assert seen.take(["T", "N"], [first, second]) == [second]
    assert seen.take(["T", "N"], [first, second]) == []
    assert seen.take(["T", "N", "M"], [[*first, ""]]) == [[*first, ""]]


def test_recent_answers_add_and_whole_ones_forget() -> None:
    """Between whole lists an event left out of a recent answer is not new again; a whole list forgets what it lacks."""
    seen = NewEvents()
    old: list[Cell] = [1, "x"]
    recent: list[Cell] = [900, "y"]
    assert seen.take(["T", "N"], [old]) == [old]
    assert seen.take(["T", "N"], [recent], whole=False) == [recent]
    assert seen.take(["T", "N"], [recent], whole=False) == []
    assert seen.take(["T", "N"], [old, recent]) == []  # the whole list: nothing new
    assert seen.take(["T", "N"], [recent]) == []  # the agent no longer keeps the old one
    assert seen.take(["T", "N"], [old, recent]) == [old]  # so it is new if it comes back


def test_a_record_without_events_holds_none() -> None:
    """Records of an older collector, and most polls, have no events key."""
    assert record_events({"schema": 1}) == []


def test_events_are_read_in_the_agents_column_order_whatever_the_records() -> None:
    """Columns in another order, and a newer agent's extra column, read as EVENT_COLUMNS."""
    columns = ["EXTRA", *reversed(EVENT_COLUMNS)]
    row = ["new", *reversed(EVENT)]
    assert record_events({"events": {"columns": columns, "rows": [row]}}) == [tuple(EVENT)]


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("EVENT_TIME", "soon", "events row 0: EVENT_TIME 'soon' is not a time"),
        ("EVENT_TIME", 0, "events row 0: EVENT_TIME 0 is not a time"),
        ("MEMBER_ID", 7, "events row 0: MEMBER_ID 7 is not a text"),
        ("DETAIL", None, "events row 0: DETAIL None is not a text"),
    ],
)
def test_a_malformed_cell_is_named_with_its_value(column: str, value: object, message: str) -> None:
    """A bad cell raises RecordError naming the row, the column and the value."""
    row = list(EVENT)
    row[EVENT_COLUMNS.index(column)] = value
    record = {"events": {"columns": list(EVENT_COLUMNS), "rows": [row]}}
    with pytest.raises(RecordError, match=message):
        record_events(record, "segment-7 at offset 8")
    columns = SegmentColumns()  # no columns file: the decoder reports the record
    columns.add({"schema": 1, **record}, 8)
    assert not columns.usable


def test_a_missing_column_is_named() -> None:
    """An events table without VIEW_ID is refused, naming it."""
    columns = [c for c in EVENT_COLUMNS if c != "VIEW_ID"]
    with pytest.raises(RecordError, match="events has no column VIEW_ID"):
        record_events({"events": {"columns": columns, "rows": []}})


async def test_the_poller_spools_a_failovers_events_once() -> None:
    """primary-failover over gRPC: all events on the first poll, then only the new election."""
    group = await start_group(3, "primary-failover")
    poller = Poller(PollerSettings((group.agents[1].address,), events_every_s=0))
    asked: list[int] = []  # each events ask's events_since_us
    call = poller._call

    async def watched(node: str, request: pb.QueryRequest) -> pb.QueryResponse:
        if list(request.tables) == [REPLICATION_GROUP_EVENTS.name]:
            asked.append(request.events_since_us)
        return await call(node, request)

    poller._call = watched  # type: ignore[method-assign]
    try:
        await group.rounds(25)  # from 10 s to 35 s: member 0 crashed at 30 s
        first_at = group.clock.us()
        first = await poller.poll()
        served = group.agents[1].tables(extended=False)[REPLICATION_GROUP_EVENTS.name][1]
        assert [tuple(row) for row in record_events(first)] == served
        assert "events" not in await poller.poll()  # nothing new
        # the whole list first, then the last EVENTS_LATE_S by the answering agent's clock
        assert asked == [0, first_at - int(EVENTS_LATE_S * 1_000_000)]
        await group.rounds(8)  # expelled at 40 s, a secondary elected
        later: Record = await poller.poll()
        new = record_events(later)
        assert new
        assert not set(new) & set(served)
        elected = [e for e in new if e[2] == "MEMBER_ROLE" and e[4] == "PRIMARY"]
        assert len(elected) == 1
        assert 40 <= elected[0][0] / 1e6 - START_S <= 43
    finally:
        await poller.aclose()
        for agent in group.agents:
            await agent.stop(grace_s=0)


async def test_the_agent_answers_the_events_since_when_asked() -> None:
    """QueryRequest.events_since_us keeps the events (and log lines) at or after it; a plain ask has all."""
    group = await start_group(3, "primary-failover")
    poller = Poller(PollerSettings((group.agents[0].address,)))
    try:
        await group.rounds(35)  # the crash at 30 s, seen UNREACHABLE at 35 s, expelled at 40 s
        node = group.agents[0].address
        plain = pb.QueryRequest(tables=[REPLICATION_GROUP_EVENTS.name])
        every = table_rows(await poller._call(node, plain))
        assert len(set(every)) > 1
        since = sorted(every)[len(every) // 2]
        cut = pb.QueryRequest(tables=[REPLICATION_GROUP_EVENTS.name], events_since_us=since)
        kept = table_rows(await poller._call(node, cut))
        assert kept == [at for at in every if at >= since]
        assert kept != every
        again = table_rows(await poller._call(node, plain))
        assert again == every
        # The members' log lines likewise, on LOGGED (revision 5).
        plain_log = pb.QueryRequest(tables=[LOG_TABLE])
        lines = logged(await poller._call(node, plain_log))
        assert len(set(lines)) > 1
        since = sorted(lines)[len(lines) // 2]
        cut = pb.QueryRequest(tables=[LOG_TABLE], events_since_us=since)
        assert logged(await poller._call(node, cut)) == [at for at in lines if at >= since]
    finally:
        await poller.aclose()
        await stop_all(group)


def logged(response: pb.QueryResponse) -> list[int]:
    """The LOGGED of each row of the log table of ``response``, in its order."""
    columns, rows = log_from_response(response, agent="test")
    at = columns.index("LOGGED")
    return [int(cell) for row in rows if isinstance(cell := row[at], int)]


def table_rows(response: pb.QueryResponse) -> list[int]:
    """The EVENT_TIME of each row of the events table of ``response``, in its order."""
    columns, rows = events_from_response(response, agent="test")
    assert columns[0] == "EVENT_TIME"
    times = [row[0] for row in rows]
    assert all(isinstance(at, int) for at in times)
    return [int(at) for at in times if isinstance(at, int)]
