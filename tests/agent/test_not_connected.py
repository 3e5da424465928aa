"""A member not connected: one reason and one state at every peer, and its last known lag.

In-memory groups on the test clock: an agent is killed (its periods stop, its links are cut)
while its member's server runs on, and every other agent must tell the same story of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from structlog.testing import capture_logs

from grstats.agent.gossip import Counts, GossipState, Key, Stamp, Update
from grstats.agent.liveness import silence_reason
from grstats.agent.metrics_series import group_name, member_families
from grstats.core.model import SourceHealth
from grstats.core.rows import EventType, MemberStatsRow
from tests.agent.test_own_member_down import rows
from tests.agent.test_runtime import start_group, stop_all

if TYPE_CHECKING:
    from pathlib import Path

    from grstats.agent.runtime import Agent
    from grstats.agent.served import Served
    from tests.agent.test_runtime import Group

#: The tables that show a member's APPLIER_LAG_SECONDS (its metric is built from the first).
LAG_TABLES = ("replication_group_member_lag", "replication_group_member_status")

#: A quiet group: every member keeps up (cheap to simulate).
QUIET = """\
name = "quiet"
description = "The primary writes 50 tps and every member keeps up."
mode = "single-primary"
members = 4

[workload]
rate_tps = 50
"""

#: errant-write's shape, sooner and quieter: member 2 stops at 2 s, takes an errant write
#: at 3 s and is refused, ERROR, when it starts again at 5 s.
REFUSED = """\
name = "refused"
description = "Member 2 takes an errant write while stopped and is refused at 5 s: ERROR."
mode = "single-primary"
members = 3

[workload]
rate_tps = 50

[[events]]
at = 2
action = "stop"
member = 2

[[events]]
at = 3
action = "errant-write"
member = 2
value = 3

[[events]]
at = 5
action = "start"
member = 2
"""

#: Member 2 applies half of what the primary commits (slow-secondary's shape at a rate that
#: keeps the simulation cheap): it lags, more every second.
SLOW_APPLIER = """\
name = "slow-applier"
description = "Member 2 applies half the rate: it lags, more every second."
mode = "single-primary"
members = 3

[workload]
rate_tps = 200

[appliers]
capacity_tps = 1000
capacity_overrides = { 2 = 100 }
"""


def scenario(tmp_path: Path, text: str) -> str:
    """The path of a scenario file holding ``text``, for :func:`start_group`."""
    path = tmp_path / "scenario.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def kill(group: Group, agent: Agent) -> None:
    """SIGKILL ``agent``: its periods stop and no peer reaches it; its member's server runs on."""
    assert group.network is not None
    group.agents.remove(agent)
    for peer in group.agents:
        group.network.cut(agent.address, peer.address)


def lag_metric(served: Served, member_id: str) -> float:
    """``member_id``'s ``grstats_applier_lag_seconds`` as the agent's metrics give it."""
    (family,) = [
        f
        for f in member_families(served, group_name(served))
        if f.name == "grstats_applier_lag_seconds"
    ]
    (value,) = [s.value for s in family.samples if s.labels["member_id"] == member_id]
    return float(value)


def silent_events(agent: Agent, member_id: str) -> list[dict[str, Any]]:
    """The AGENT_SILENT events of ``member_id`` that ``agent`` serves, every reporter's."""
    columns, values = agent.tables(extended=False)["replication_group_events"]
    named = [{c.name: v for c, v in zip(columns, row, strict=True)} for row in values]
    return [
        e
        for e in named
        if e["MEMBER_ID"] == member_id and e["EVENT_TYPE"] == EventType.AGENT_SILENT
    ]


async def test_a_killed_agent_is_agent_silent_at_every_peer_whatever_the_relays(
    tmp_path: Path,
) -> None:
    """A SIGKILL gives every peer reason agent_silent, also one that got its last report relayed late."""
    # The reason is grstats's own (MySQL has no agents): what the member's agent last said, a
    # report or that its read failed, not when each peer last heard it. The state is the one
    # the member's own replication_group_members showed at its last read (get_group_members_info,
    # plugin/group_replication/src/ps_information.cc): ONLINE, its server runs on.
    with capture_logs() as logs:
        group = await start_group(4, scenario(tmp_path, QUIET), memory=True)
        assert group.network is not None
        try:
            await group.rounds(3)
            first, killed = group.agents[0], group.agents[-1]
            # Its news reaches the first agent only through a relay, a period late.
            group.network.cut(killed.address, first.address)
            await group.rounds(3)
            kill(group, killed)
            await group.rounds(15)  # past the 10 s of silence at every peer
            served = [silent_events(agent, killed.member_id) for agent in group.agents]
        finally:
            await stop_all(group)
    warned = [e for e in logs if e["event"] == "member_not_connected"]
    assert [(e["member_id"], e["reason"], e["member_state"]) for e in warned] == [
        (killed.member_id, "agent_silent", "ONLINE")
    ] * 3, warned
    for events in served:  # every agent serves every peer's event, each with the reason
        assert len(events) == 3, events
        assert all(e["DETAIL"].startswith("agent_silent: ") for e in events), events
        assert all(e["DETAIL"].endswith("; ONLINE at its last read") for e in events), events


async def test_a_member_in_error_is_named_error_when_its_agent_goes_silent(
    tmp_path: Path,
) -> None:
    """A member refused for errant transactions, ERROR in its own table, is ERROR in every peer's fault message."""
    # MySQL ends a join with transactions the group lacks in ERROR, the member listed alone in
    # its own replication_group_members (Plugin_gcs_events_handler::
    # compare_member_transaction_sets and handle_joining_members,
    # plugin/group_replication/src/gcs_event_handlers.cc); the scenario refuses member 2 so.
    with capture_logs() as logs:
        group = await start_group(3, scenario(tmp_path, REFUSED), memory=True)
        try:
            await group.rounds(3)  # 13 s: member 2 was refused at 5 s
            killed = group.agents[2]
            own = rows(killed, "replication_group_members")[killed.member_id]
            assert own["MEMBER_STATE"] == "ERROR"
            kill(group, killed)
            await group.rounds(15)
            served = [silent_events(agent, killed.member_id) for agent in group.agents]
            states = [
                rows(agent, "replication_group_members")[killed.member_id]["MEMBER_STATE"]
                for agent in group.agents
            ]
        finally:
            await stop_all(group)
    warned = [e for e in logs if e["event"] == "member_not_connected"]
    assert [(e["member_id"], e["member_state"]) for e in warned] == [
        (killed.member_id, "ERROR")
    ] * 2, warned
    assert states == ["ERROR", "ERROR"]  # the tables say the same
    for events in served:
        assert len(events) == 2, events
        assert all(e["DETAIL"].endswith("; ERROR at its last read") for e in events), events


async def test_a_silent_members_lag_stays_at_its_last_report_at_every_agent(
    tmp_path: Path,
) -> None:
    """A member whose agent goes silent while it lags keeps, a minute later, the lag of its last report."""
    # APPLIER_LAG_SECONDS is grstats's, from WL#7374's APPLYING_TRANSACTION_ORIGINAL_COMMIT_
    # TIMESTAMP (Trx_monitoring_info, sql/rpl_gtid_misc.cc): once nothing live is known of the
    # member, the lag it had at its last report, not one that grows with this agent's clock.
    group = await start_group(3, scenario(tmp_path, SLOW_APPLIER), memory=True)
    try:
        await group.rounds(8)  # member 2 applies at half the rate: it lags, applying
        killed = group.agents[2]
        last = {t: rows(killed, t)[killed.member_id]["APPLIER_LAG_SECONDS"] for t in LAG_TABLES}
        assert all(lag > 1 for lag in last.values()), last  # seconds behind at its last period
        kill(group, killed)
        await group.rounds(60)
        for agent in group.agents:
            for table in LAG_TABLES:
                row = rows(agent, table)[killed.member_id]
                assert row["CONNECTED"] == "NO", (agent.address, table)
                assert row["APPLIER_LAG_SECONDS"] == last[table], (agent.address, table)
            served = agent.tables(extended=True)
            assert lag_metric(served, killed.member_id) == last[LAG_TABLES[0]], agent.address
    finally:
        await stop_all(group)


def test_the_reason_is_the_agents_last_word_whenever_it_arrived() -> None:
    """silence_reason gives server_not_read only while the agent's newest word is a failed read, at any arrival time."""
    # grstats's own rule (no MySQL counterpart): agent.local records a HEALTH at every failed
    # read and COUNTS at every read that succeeds; the reason follows the newest by stamp.
    member = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    report = Counts(MemberStatsRow(member_id=member), gtids_present=True)
    words = [
        Update(member, Stamp(2, 1), Key.COUNTS, report, 10),
        Update(member, Stamp(2, 2), Key.HEALTH, SourceHealth(ok=False, message="down"), 11),
        Update(member, Stamp(2, 3), Key.HEALTH, SourceHealth(), 12),
        Update(member, Stamp(2, 4), Key.COUNTS, report, 12),
    ]
    expected = ["agent_silent", "server_not_read", "agent_silent", "agent_silent"]
    for arrival_us in (20, 5_000_000):  # a direct peer, and one a relay reached much later
        state = GossipState("8a94f357-aab4-11df-86ab-c80aa9429562", 1)
        state.seed(member, {Key.HEALTH: SourceHealth(ok=False)}, seen_us=1, via="registry")
        assert silence_reason(state, member) == "agent_silent"  # only remembered
        found = []
        for word in words:
            state.merge([word], now_us=arrival_us, via="agent-1:7400")
            found.append(silence_reason(state, member))
        assert found == expected, arrival_us
