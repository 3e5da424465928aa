"""Issue 42, point 1: a member cut off into a minority is served as its own server sees it, and flagged.

MySQL Shell's ``instance_diagnostics`` (modules/adminapi/cluster/status.cc) gives a member that
the majority's view lists UNREACHABLE or not at all (MISSING) while its own server says ONLINE
or RECOVERING the error "split-brain! Instance is not part of the majority group, but has state
ONLINE"; on that member, ``replication_group_members`` still lists itself ONLINE and the others
UNREACHABLE (``get_group_members_info``, plugin/group_replication/src/ps_information.cc, fed
by its own, stale, view). In-memory agents over the simulator, one period per second of a fake
clock (tests.agent.test_group_status): five members, members 3 and 4 each cut off at 12 s,
UNREACHABLE at 17 s, expelled at 22 s; their agents still hear every agent.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import structlog
from structlog.testing import LogCapture

from grstats.agent.known import split_state
from grstats.agent.metrics_series import MEMBER_STATES
from grstats.cli.status_view import GroupStatus, document, render_status
from grstats.core.model import GroupView
from grstats.core.rows import MemberRow
from grstats.core.verdict import verdict
from tests.agent.sql.test_endpoint import query, serve
from tests.agent.test_group_status import (
    custom,
    ids,
    member_status,
    partition,
    run_to,
    running,
    start,
    status,
    table,
)
from tests.agent.test_metrics_series import export_everything, rendered, value
from tests.cli.test_query_status import wire

if TYPE_CHECKING:
    from grstats.agent.runtime import Agent
    from tests.agent.test_runtime import Group

#: Two of five cut off at 12 s, each on its own (tests.agent.test_group_status).
TWO_CUT_OFF = custom(5, events=[partition(3, 12), partition(4, 12)])
#: Shell's error for a member split from the majority while ONLINE (``instance_diagnostics``).
SPLIT_ONLINE = (
    "ERROR: split-brain! Instance is not part of the majority group, but has state ONLINE"
)
UUIDS = [f"00000000-0000-0000-0000-00000000000{i}" for i in range(5)]


def members(agent: Agent) -> dict[str, str]:
    """MEMBER_STATE by MEMBER_ID of the agent's replication_group_members."""
    return {
        str(row["MEMBER_ID"]): str(row["MEMBER_STATE"])
        for row in table(agent, "replication_group_members")
    }


def split_flags(agent: Agent) -> dict[str, str]:
    """SPLIT_BRAIN by MEMBER_ID of the agent's replication_group_member_status."""
    return {m: str(row["SPLIT_BRAIN"]) for m, row in member_status(agent).items()}


def split_metric(agent: Agent, group: Group) -> list[float]:
    """grstats_member_split_brain of each member, by member index, from the agent's /metrics."""
    families = rendered(agent)
    group_name = status(agent)["GROUP_NAME"]
    return [
        value(families, "grstats_member_split_brain", group_name=group_name, member_id=m)
        for m in ids(group)
    ]


def state_metric(agent: Agent, group: Group) -> list[str]:
    """The state grstats_member_state is 1 for, of each member, from the agent's /metrics."""
    families = rendered(agent)
    group_name = status(agent)["GROUP_NAME"]
    return [
        next(
            name
            for name in MEMBER_STATES
            if value(
                families, "grstats_member_state", group_name=group_name, member_id=m, state=name
            )
            == 1.0
        )
        for m in ids(group)
    ]


async def test_a_cut_off_member_is_served_its_own_view_and_flagged_everywhere() -> None:
    """After the expulsion agent 3 serves its member's own view, SQL too; every agent flags 3 and 4 split-brain."""
    async with running(await start(TWO_CUT_OFF)) as group:
        export_everything(*group.agents)  # every agent's own view of every member
        everyone = ids(group)
        await run_to(group, 16)  # every member ONLINE: no one split
        for agent in group.agents:
            assert set(split_flags(agent).values()) == {"NO"}
            assert split_metric(agent, group) == [0.0] * 5
        await run_to(group, 23)  # 3 and 4 expelled at 22 s by the majority's newer view
        own = group.agents[3].local
        assert own is not None
        assert members(group.agents[3]) == dict(
            zip(everyone, ["UNREACHABLE"] * 3 + ["ONLINE", "UNREACHABLE"], strict=True)
        )
        (stats,) = [
            row
            for row in table(group.agents[3], "replication_group_member_stats")
            if row["MEMBER_ID"] == everyone[3]
        ]
        assert stats["VIEW_ID"] == own.view.view_id  # its own view's, not the majority's
        served = await serve(group.agents[3])  # the query an application on member 3 runs
        try:
            rows = await asyncio.to_thread(
                query,
                served.address,
                "SELECT MEMBER_STATE FROM performance_schema.replication_group_members "
                "WHERE MEMBER_ID=@@server_uuid",
            )
            flagged_in_sql = await asyncio.to_thread(
                query,
                served.address,
                "SELECT MEMBER_PORT FROM grstats.replication_group_member_status "
                "WHERE SPLIT_BRAIN = 'YES'",
            )
        finally:
            await served.endpoint.aclose()
        assert rows == [("ONLINE",)]
        assert sorted(flagged_in_sql) == [(13309,), (13310,)]
        majority_view = status(group.agents[0])["VIEW_ID"]
        assert own.view.view_id != majority_view
        for agent in group.agents[:3]:  # the majority's view: 3 and 4 left it (WL#2860)
            assert members(agent) == dict(
                zip(everyone, ["ONLINE"] * 3 + ["OFFLINE"] * 2, strict=True)
            )
        flagged = dict(zip(everyone, ["NO"] * 3 + ["YES"] * 2, strict=True))
        for agent in group.agents:  # the minority's agents judge the majority's view too
            assert status(agent)["VIEW_ID"] == majority_view
            assert split_flags(agent) == flagged
            assert status(agent)["STATUS_TEXT"].endswith(
                f" 127.0.0.1:13309: {SPLIT_ONLINE}. 127.0.0.1:13310: {SPLIT_ONLINE}."
            )
            assert split_metric(agent, group) == [0.0, 0.0, 0.0, 1.0, 1.0]
            assert state_metric(agent, group) == ["ONLINE"] * 3 + ["OFFLINE"] * 2
        answer = GroupStatus.from_tables("agent-0:7400", wire(group.agents[0]))
        assert [m["split_brain"] for m in document(answer)["members"]] == [
            m in everyone[3:] for m in sorted(everyone)
        ]
        assert (
            "split-brain: 127.0.0.1:13309, 127.0.0.1:13310 (not part of the majority group"
            in render_status(answer, "table")
        )


async def test_the_split_is_logged_once_when_it_begins_and_again_after_it_ended() -> None:
    """Agent 0 warns member_split_brain once per split of member 1 (two splits, a heal between)."""
    scenario = custom(
        3,
        events=[partition(1, 12), {"at": 20, "action": "heal", "member": 1}, partition(1, 25)],
    )
    async with running(await start(scenario)) as group:
        captured = LogCapture()  # agent 0's own lines only
        group.agents[0].member.log = structlog.wrap_logger(
            structlog.PrintLogger(), processors=[captured]
        )
        await run_to(group, 40)
        logs = captured.entries
        split = ids(group)[1]
        told = [
            (log["event"], log["log_level"])
            for log in logs
            if log["event"].startswith("member_split_brain") and log["member_id"] == split
        ]
        assert told == [
            ("member_split_brain", "warning"),  # 17 s: UNREACHABLE in the majority's view
            ("member_split_brain_ended", "info"),  # healed at 20 s
            ("member_split_brain", "warning"),  # 30 s: cut off again
        ]
        (first, *_) = [log for log in logs if log["event"] == "member_split_brain"]
        assert (first["member"], first["state"]) == ("127.0.0.1:13307", "ONLINE")


def view(view_id: str, *states: str) -> GroupView:
    """A view of group UUIDS[0] whose member ``i`` is in ``states[i]`` ('' leaves it out)."""
    rows = tuple(
        MemberRow(member_id=UUIDS[i], member_state=state) for i, state in enumerate(states) if state
    )
    return GroupView(members=rows, view_id=view_id, group_name=UUIDS[0])


def test_split_state_follows_shells_rule_on_a_last_read() -> None:
    """Shell's split-brain (``instance_diagnostics``): MISSING or UNREACHABLE in a majority, ONLINE or RECOVERING alone."""
    majority = view("1:5", "ONLINE", "ONLINE", "")
    cut_off = view("1:4", "UNREACHABLE", "UNREACHABLE", "ONLINE")
    assert split_state(majority, cut_off, UUIDS[2]) == "ONLINE"
    recovering = view("1:4", "UNREACHABLE", "UNREACHABLE", "RECOVERING")
    assert split_state(majority, recovering, UUIDS[2]) == "RECOVERING"
    suspected = view("1:4", "ONLINE", "ONLINE", "UNREACHABLE")
    assert split_state(suspected, cut_off, UUIDS[2]) == "ONLINE"
    # A crashed member's last view had quorum: not one of a member cut off.
    assert split_state(suspected, view("1:4", "ONLINE", "ONLINE", "ONLINE"), UUIDS[2]) == ""
    # An expelled member shows itself ERROR; one that stopped, OFFLINE.
    assert split_state(majority, view("", "", "", "ERROR"), UUIDS[2]) == ""
    # A view without quorum is no majority: no one is split from it.
    minority = view("1:4", "UNREACHABLE", "UNREACHABLE", "ONLINE")
    assert split_state(minority, view("1:4", "ONLINE", "ONLINE", "UNREACHABLE"), UUIDS[0]) == ""
    # Another group's view says nothing of this one.
    other = GroupView(members=cut_off.members, view_id="1:4", group_name=UUIDS[1])
    assert split_state(majority, other, UUIDS[2]) == ""


def test_the_sentence_ends_with_shells_error_for_each_split_member() -> None:
    """The verdict's sentence appends Shell's split-brain error after each member's address."""
    found = verdict(
        ["ONLINE", "ONLINE", "ONLINE"],
        not_in_view=1,
        split_brain=[("db4:3306", "RECOVERING")],
    )
    assert (found.status, found.tolerance) == ("OK_PARTIAL", 1)
    assert found.text == (
        "Group is ONLINE and can tolerate up to ONE failure. 1 member is not active. db4:3306: "
        "ERROR: split-brain! Instance is not part of the majority group, but has state "
        "RECOVERING."
    )
