"""The collector's GR log lines: asked with the events, spooled once each, read back or refused."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import grpc
import pytest
import structlog

from grstats.agent.served import Served
from grstats.collector.errors import RecordError
from grstats.collector.poller import Poller, PollerSettings
from grstats.collector.records import (
    EVENTS_TABLE,
    LOG_COLUMNS,
    LOG_TABLE,
    RecordKey,
    record_events,
    record_log,
)
from grstats.proto import grstats_pb2 as pb
from tests.agent.test_runtime import START_S, start_group, stop_all

if TYPE_CHECKING:
    from grstats.agent.runtime import Agent

LINE: list[object] = [
    1_700_000_000_000_000,
    None,
    "Warning",
    "MY-011493",
    "Repl",
    "Plugin group_replication reported: 'Member with address m2:3306 has become unreachable.'",
    "a" * 36,
]


def test_a_record_without_log_holds_no_lines() -> None:
    """Records of an older collector, and most polls, have no log key."""
    assert record_log({"schema": 1}) == []


def test_lines_are_read_in_the_agents_column_order_with_their_nulls() -> None:
    """Columns in another order, a newer agent's extra column and NULL cells read as LOG_COLUMNS."""
    columns = ["EXTRA", *reversed(LOG_COLUMNS)]
    row = ["new", *reversed(LINE)]
    assert record_log({"log": {"columns": columns, "rows": [row]}}) == [tuple(LINE)]


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("LOGGED", None, "log row 0: LOGGED None is not a time"),
        ("THREAD_ID", "7", "log row 0: THREAD_ID '7' is not an integer"),
        ("DATA", None, "log row 0: DATA None is not a text"),
        ("MEMBER_ID", 7, "log row 0: MEMBER_ID 7 is not a text"),
    ],
)
def test_a_malformed_line_is_named_with_its_value(column: str, value: object, message: str) -> None:
    """A bad cell (NULL only where the table allows it) raises RecordError naming it."""
    row = list(LINE)
    row[LOG_COLUMNS.index(column)] = value
    with pytest.raises(RecordError, match=message):
        record_log({"log": {"columns": list(LOG_COLUMNS), "rows": [row]}}, "segment-7 at 8")


def served_lines(agent: Agent) -> list[tuple[Any, ...]]:
    """The lines ``agent`` serves now, as record_log gives them."""
    columns, rows = agent.tables(extended=False)[LOG_TABLE]
    names = [column.name for column in columns]
    return record_log({"log": {"columns": names, "rows": [list(row) for row in rows]}})


async def test_the_poller_spools_every_members_lines_once() -> None:
    """crash-rejoin over gRPC: all lines on the first ask, none again, then only the rejoin's."""
    group = await start_group(3, "crash-rejoin")
    poller = Poller(PollerSettings((group.agents[0].address,), events_every_s=0))
    try:
        await group.rounds(35)  # member 2 crashed at 30 s, unreachable at 35 s
        first = await poller.poll()
        lines = record_log(first)
        assert lines == served_lines(group.agents[0])
        assert {line[6] for line in lines} == {agent.member_id for agent in group.agents}
        assert "log" not in await poller.poll()  # nothing new
        await group.rounds(40)  # expelled at 40 s, restarted at 60 s, recovered and back
        new = record_log(await poller.poll())
        assert new
        assert not set(new) & set(lines)
        rejoined = [line for line in new if line[6] == group.agents[2].member_id]
        assert rejoined
        assert all(line[0] / 1e6 - START_S >= 35 for line in new)
        assert set(lines) | set(new) == set(served_lines(group.agents[0]))
    finally:
        await poller.aclose()
        await stop_all(group)


async def test_an_agent_without_the_table_still_gives_snapshots_and_events() -> None:
    """An older agent refuses the log's name (INVALID_ARGUMENT): no lines, said once, the rest spooled."""
    group = await start_group(3, "crash-rejoin")
    agent = group.agents[0]
    newer = agent.tables

    def older(extended: bool) -> Served:
        tables = newer(extended)
        builders = {name: (lambda name=name: tables[name]) for name in tables if name != LOG_TABLE}
        return Served(builders, tables.group_name, tables.group_label)

    agent.tables = older  # type: ignore[method-assign]
    poller = Poller(PollerSettings((agent.address,), events_every_s=0))
    try:
        await group.rounds(35)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await poller._call(agent.address, pb.QueryRequest(tables=[LOG_TABLE]))
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert LOG_TABLE in str(refused.value.details())
        with structlog.testing.capture_logs() as logs:
            records = [await poller.poll(), await poller.poll()]
        assert all(RecordKey.LOG not in record for record in records)
        assert record_events(records[0])  # the events call is apart: it still answers
        assert all(set(record[RecordKey.TABLES]) for record in records)
        said = [entry for entry in logs if entry["event"] == "log_unavailable"]
        assert len(said) == 1
        assert LOG_TABLE in said[0]["reason"]
        agent.tables = newer  # type: ignore[method-assign]  # upgraded: lines again
        with structlog.testing.capture_logs() as logs:
            assert record_log(await poller.poll()) == served_lines(agent)
        assert [entry["event"] for entry in logs] == ["log_available"]
        assert EVENTS_TABLE in newer(extended=False)
    finally:
        await poller.aclose()
        await stop_all(group)
