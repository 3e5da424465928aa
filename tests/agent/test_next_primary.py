"""Issue 47, point 3: the next primary forecast, checked against the simulator's own election.

The forecast (:func:`grstats.core.election.next_primary`) follows ``pick_primary_member``
(primary_election_invocation_handler.cc) over the members of the view but the primary: the
lowest version first, then the highest ``group_replication_member_weight``, then the lowest
server_uuid, among the ONLINE ones. Each agent learns the other members' weights from their
gossiped server variables; an unsafe next primary is logged once (:mod:`grstats.agent.next_primary_watch`).
In-memory agents over the simulator, one period per second of the
test clock (tests.agent.test_group_status): a primary crashed at 12 s is expelled at 22 s and
the group elects its successor in the next view.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import structlog
from structlog.testing import LogCapture

from grstats.agent.convert import WireError, update_from_wire, update_to_wire
from grstats.agent.gossip import Key
from grstats.agent.next_primary_watch import NextPrimaryWatch
from grstats.agent.status import member_weights
from grstats.cli.status_view import GroupStatus, document, render_status
from grstats.core.election import BACKLOG_WARNING, next_primary
from grstats.core.model import ServerSettings
from grstats.proto import grstats_pb2 as pb
from tests.agent.test_convert import update
from tests.agent.test_group_status import crash, custom, member_status, run_to, running, start
from tests.agent.test_runtime import start_group, stop_all
from tests.cli.test_query_status import wire

if TYPE_CHECKING:
    from grstats.agent.runtime import Agent
    from grstats.core.election import NextPrimary
    from grstats.core.rows import Value
    from tests.agent.test_runtime import Group

A = "00000000-0000-0000-0000-00000000000a"
B = "00000000-0000-0000-0000-00000000000b"
C = "00000000-0000-0000-0000-00000000000c"
P = "00000000-0000-0000-0000-000000000001"


def row(member: str, **columns: Value) -> dict[str, Value]:
    """A member status row: an ONLINE 8.0.36 SECONDARY unless ``columns`` say otherwise."""
    found: dict[str, Value] = {
        "MEMBER_ID": member,
        "MEMBER_STATE": "ONLINE",
        "MEMBER_ROLE": "SECONDARY",
        "MEMBER_VERSION": "8.0.36",
        "APPLIER_LAG_SECONDS": 0.25,
        "TRANSACTIONS_BEHIND": 3,
        "ERRANT_TRANSACTIONS": "",
    }
    return found | columns


PRIMARY = row(P, MEMBER_ROLE="PRIMARY")


def forecast_of(agent: Agent) -> NextPrimary | None:
    """The agent's forecast: its member status rows, each with the weight its gossip holds."""
    return next_primary(list(member_status(agent).values()), single_primary=True)


def primary_of(agent: Agent) -> str:
    """PRIMARY_MEMBERS of the agent's replication_group_status: the simulator's election."""
    (found,) = [r for r in member_status(agent).values() if r["MEMBER_ROLE"] == "PRIMARY"]
    return str(found["MEMBER_ID"])


async def failover(member: dict[str, dict[str, Any]]) -> tuple[list[str | None], str, Group]:
    """Each agent's forecast at 11 s, the primary after member 0 crashed at 12 s, at 24 s."""
    group = await start(custom(4, member=member, events=[crash(0, 12)]))
    async with running(group):
        await run_to(group, 11)
        before = [(f.member_id if (f := forecast_of(a)) else None) for a in group.agents]
        await run_to(group, 24)
        (elected,) = {primary_of(agent) for agent in group.agents[1:]}
        return before, elected, group


def index_of(group: Group, member: str) -> int:
    """The scenario index of the member whose server_uuid is ``member``."""
    return [agent.member_id for agent in group.agents].index(member)


# -- the rule over rows -----------------------------------------------------------------------


def test_the_rule_over_rows() -> None:
    """Weight beats uuid, a lower version beats weight; RECOVERING and the primary are no candidates."""
    assert next_primary([PRIMARY, row(B), row(A)], single_primary=True) == next_primary(
        [row(A), PRIMARY, row(B)], single_primary=True
    )
    found = next_primary([PRIMARY, row(A), row(B)], single_primary=True)
    assert found is not None
    assert (found.member_id, found.weight, found.weight_known) == (A, 50, False)
    weighted = next_primary(
        [
            row(P, MEMBER_ROLE="PRIMARY", MEMBER_WEIGHT=100),
            row(A, MEMBER_WEIGHT=40),
            row(B, MEMBER_WEIGHT=90),
        ],
        single_primary=True,
    )
    assert weighted is not None
    assert (weighted.member_id, weighted.weight, weighted.weight_known) == (B, 90, True)
    older = next_primary(
        [PRIMARY, row(A, MEMBER_WEIGHT=90), row(B, MEMBER_VERSION="8.0.35")], single_primary=True
    )
    assert older is not None
    assert older.member_id == B
    recovering = next_primary(
        [PRIMARY, row(A, MEMBER_STATE="RECOVERING"), row(B, MEMBER_WEIGHT=10)],
        single_primary=True,
    )
    assert recovering is not None
    assert (recovering.member_id, recovering.weight_known) == (B, True)
    # a lower-version member still RECOVERING leaves no one electable (pick_primary_member)
    assert (
        next_primary(
            [PRIMARY, row(A, MEMBER_STATE="RECOVERING", MEMBER_VERSION="8.0.35"), row(B)],
            single_primary=True,
        )
        is None
    )
    outside = [PRIMARY, row(A, MEMBER_STATE="OFFLINE"), row(B, MEMBER_STATE="UNREACHABLE")]
    assert next_primary(outside, single_primary=True) is None
    assert next_primary([PRIMARY, row(A)], single_primary=False) is None


def test_errant_transactions_or_a_backlog_make_it_unsafe() -> None:
    """The warning names errant GTIDs and a backlog over BACKLOG_WARNING; none at or under it."""
    gtids = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1-3"
    errant = next_primary([PRIMARY, row(A, ERRANT_TRANSACTIONS=gtids)], single_primary=True)
    assert errant is not None
    assert f"errant transactions ({gtids})" in errant.warning
    at = next_primary([PRIMARY, row(A, TRANSACTIONS_BEHIND=BACKLOG_WARNING)], single_primary=True)
    assert at is not None
    assert at.warning == ""
    over = BACKLOG_WARNING + 1
    behind = next_primary([PRIMARY, row(A, TRANSACTIONS_BEHIND=over)], single_primary=True)
    assert behind is not None
    assert f"{over} transactions to apply" in behind.warning
    unknown = next_primary(
        [PRIMARY, row(A, TRANSACTIONS_BEHIND=None, ERRANT_TRANSACTIONS=None)], single_primary=True
    )
    assert unknown is not None
    assert (unknown.warning, unknown.errant_transactions) == ("", None)


# -- the weight on the wire ---------------------------------------------------------------------


def test_the_weight_travels_with_the_server_variables() -> None:
    """0 and 70 survive the wire; an older agent's Server (no field) reads as unknown; 101 is refused."""
    for weight in (0, 70, None):
        sent = update(Key.SERVER, ServerSettings(member_weight=weight))
        message = pb.Update.FromString(update_to_wire(sent).SerializeToString())
        assert message.server.HasField("member_weight") is (weight is not None)
        assert update_from_wire(message) == sent
    bad = update_to_wire(update(Key.SERVER, ServerSettings()))
    bad.server.member_weight = 101
    with pytest.raises(WireError, match=r"server\.member_weight.*101"):
        update_from_wire(bad)


async def test_every_agent_learns_every_weight_over_grpc() -> None:
    """Over gRPC each agent knows every member's weight (MySQL's default 50 in the steady scenario)."""
    group = await start_group(3)
    try:
        await group.rounds(3)
        members = [agent.member_id for agent in group.agents]
        for agent in group.agents:
            assert member_weights(agent.state, agent.local, members) == dict.fromkeys(members, 50)
    finally:
        await stop_all(group)


# -- against the simulator's election -----------------------------------------------------------


async def test_the_forecast_before_the_crash_names_the_member_elected_after() -> None:
    """Weights 60 and 80 on members 1 and 2: every agent forecasts member 2, and GR elects it."""
    before, elected, group = await failover(
        {"1": {"member_weight": 60}, "2": {"member_weight": 80}}
    )
    assert index_of(group, elected) == 2
    assert elected != min(agent.member_id for agent in group.agents[1:])  # not the uuid's pick
    assert before == [elected] * 4


async def test_equal_weights_leave_it_to_the_lowest_uuid() -> None:
    """With default weights the forecast is the lowest server_uuid of members 1 to 3, as elected."""
    before, elected, group = await failover({})
    assert elected == min(agent.member_id for agent in group.agents[1:])
    assert before == [elected] * 4


async def test_a_lower_version_wins_over_a_higher_weight() -> None:
    """Member 2 on 8.0.35, the others on 8.0.36 (member 1 of weight 90): 2 is next, and elected.

    The primary runs 8.0.35 too, so the group's lowest version is 8.0.35 before and after the
    crash. Member 2 has the highest server_uuid of the seed's members 1 to 3, so neither the
    weight nor the uuid names it.
    """
    before, elected, group = await failover(
        {"0": {"version": "8.0.35"}, "1": {"member_weight": 90}, "2": {"version": "8.0.35"}}
    )
    assert elected == max(agent.member_id for agent in group.agents[1:])
    assert index_of(group, elected) == 2
    assert before == [elected] * 4


async def test_status_names_the_next_primary_and_multi_primary_none() -> None:
    """The status text and JSON name the forecast; a multi-primary group's is null."""
    group = await start(custom(3, member={"2": {"member_weight": 90}}))
    async with running(group):
        await run_to(group, 11)
        status = GroupStatus.from_tables("agent-0:7400", wire(group.agents[1]))
        found = document(status)["next_primary"]
        member = group.agents[2].member_id  # not the lowest server_uuid of members 1 and 2
        assert member != min(agent.member_id for agent in group.agents[1:])
        assert found["member_id"] == member
        assert (found["weight"], found["weight_known"]) == (90, True)
        assert (found["errant"], found["warning"]) == (False, None)
        assert (found["host"], found["port"]) == ("127.0.0.1", 13306 + index_of(group, member))
        text = render_status(status, "table")
        assert f"next primary: {status.address_of(member)} (weight 90, lag " in text
        assert "next primary unsafe" not in text
    multi = await start(custom(3, mode="multi-primary"))
    async with running(multi):
        await run_to(multi, 11)
        status = GroupStatus.from_tables("agent-0:7400", wire(multi.agents[0]))
        assert document(status)["next_primary"] is None
        assert "next primary: none (multi-primary" in render_status(status, "table")


def test_status_warns_of_an_unsafe_next_primary() -> None:
    """An errant next primary gets a 'next primary unsafe' line and the JSON warning."""
    gtids = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1-3"
    members = [PRIMARY, row(A, ERRANT_TRANSACTIONS=gtids, MEMBER_WEIGHT=70)]
    names = [*members[0], "MEMBER_WEIGHT"]
    rows: list[tuple[Value, ...]] = [tuple(m.get(n) for n in names) for m in members]
    tables: dict[str, tuple[list[str], list[tuple[Value, ...]]]] = {
        "replication_group_status": (["MODE"], [("single-primary",)]),
        "replication_group_member_status": (names, rows),
    }
    status = GroupStatus.from_tables("agent-0:7400", tables)
    found = document(status)["next_primary"]
    assert (found["member_id"], found["weight"], found["weight_known"]) == (A, 70, True)
    assert found["errant"] is True
    assert found["warning"].startswith(f"it holds errant transactions ({gtids})")
    assert f"next primary unsafe: it holds errant transactions ({gtids})" in render_status(
        status, "vertical"
    )


# -- the agent's log line -----------------------------------------------------------------------


#: Member 2 (weight 90, next) applies 1500 of the primary's 3000 tps until the writes stop at 20 s.
BEHIND_AND_CAUGHT_UP = custom(
    3,
    workload={"rate_tps": 3000},
    appliers={"capacity_tps": 6000, "capacity_overrides": {"2": 1500}},
    member={"2": {"member_weight": 90}},
    events=[{"at": 20, "action": "rate", "member": 0, "value": 0}],
)


async def test_an_unsafe_next_primary_is_logged_once_and_its_end_once() -> None:
    """Member 2 (weight 90) applies 1500 of 3000 tps: one warning past 1000 to apply, one info when drained.

    The writes stop at 20 s (a rate event); member 2 then applies its backlog. The watch runs
    every period on agent 0's state, as the agent's loop would.
    """
    group = await start(BEHIND_AND_CAUGHT_UP)
    async with running(group):
        agent, watch, captured = group.agents[0], NextPrimaryWatch(), LogCapture()
        log = structlog.wrap_logger(structlog.PrintLogger(), processors=[captured])
        seen = []
        for _ in range(40):
            await group.rounds(1)
            found = watch.check(agent.tables(extended=False), log)
            assert found is not None
            assert found.member_id == group.agents[2].member_id
            seen.append(found.transactions_behind or 0)
        assert max(seen) > BACKLOG_WARNING
        assert seen[-1] <= BACKLOG_WARNING
        lines = [(e["event"], e["log_level"], e["member_id"]) for e in captured.entries]
        member = group.agents[2].member_id
        assert lines == [
            ("next_primary_unsafe", "warning", member),
            ("next_primary_safe", "info", member),
        ]
        first = next(behind for behind in seen if behind > BACKLOG_WARNING)
        assert f"it has {first} transactions to apply" in captured.entries[0]["warning"]


async def test_every_agent_logs_it_from_its_loop() -> None:
    """Each agent's own log has the two lines, in its periods: the agent runs the watch."""
    group = await start(BEHIND_AND_CAUGHT_UP)
    captured = [LogCapture() for _ in group.agents]
    for agent, capture in zip(group.agents, captured, strict=True):
        agent.member.log = structlog.wrap_logger(structlog.PrintLogger(), processors=[capture])
    async with running(group):
        await run_to(group, 50)
        member = group.agents[2].member_id
        for capture in captured:
            lines = [
                (e["event"], e["member_id"])
                for e in capture.entries
                if str(e["event"]).startswith("next_primary")
            ]
            assert lines == [("next_primary_unsafe", member), ("next_primary_safe", member)]
