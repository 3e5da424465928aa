"""A member's agent going silent and coming back: one warning, then one info, from each agent."""

from __future__ import annotations

from typing import TYPE_CHECKING

from structlog.testing import capture_logs

from tests.agent.test_runtime import members_of, start_group, stop_all

if TYPE_CHECKING:
    from collections.abc import Mapping


def _member_address(rows: Mapping[str, Mapping[str, object]], member_id: str) -> str:
    row = rows[member_id]
    return f"{row['MEMBER_HOST']}:{row['MEMBER_PORT']}"


async def test_a_stopped_agent_is_one_warning_and_its_return_one_info() -> None:
    """Each agent logs a stopped member once at warning (host:port, silent_s) and its return once at info."""
    with capture_logs() as logs:
        group = await start_group(3, memory=True)
        try:
            network = group.network
            assert network is not None
            a, b, c = group.agents
            await group.rounds(2)
            assert c.member_id in members_of(a)
            columns, rows = a.tables(extended=False)["replication_group_members"]
            named = {
                str(row[1]): {col.name: v for col, v in zip(columns, row, strict=True)}
                for row in rows
            }
            stopped = group.agents.pop()  # its periods stop, and no one reaches it
            network.cut(stopped.address, a.address)
            network.cut(stopped.address, b.address)
            await group.rounds(25)  # 25 s of the test clock: well past the 10 s of silence
            network.heal(stopped.address, a.address)
            network.heal(stopped.address, b.address)
            group.agents.append(stopped)
            await group.rounds(2)
        finally:
            await stop_all(group)
    warnings = [e for e in logs if e["log_level"] in {"warning", "error"}]
    assert [(e["event"], e["member_id"]) for e in warnings] == [
        ("member_not_connected", c.member_id)
    ] * 2, warnings
    returns = [e for e in logs if e["event"] == "member_connected"]
    assert [e["member_id"] for e in returns] == [c.member_id] * 2
    address = _member_address(named, c.member_id)
    for event in (*warnings, *returns):
        assert event["member"] == address
        assert event["agent"] == stopped.address
    # Silent after more than the 10 s of silence; back after the 25 s of the cut, and more.
    assert all(10 < e["silent_s"] <= 12 for e in warnings), warnings
    assert {e["reason"] for e in warnings} == {"agent_silent"}
    assert all(25 <= e["silent_s"] <= 28 for e in returns), returns
