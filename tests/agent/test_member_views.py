"""Issue 47, points 1 and 2: every member's own view from any agent, and disagreements named.

Each member's agent gossips its server's ``replication_group_members`` (``get_group_members_info``
in plugin/group_replication/src/ps_information.cc: its own view, UNREACHABLE where its failure
detector suspects a member), so any agent serves ``replication_group_member_views``: a row per
observer and member. In-memory agents over the simulator, one period per second of a fake clock
(tests.agent.test_group_status). The one-way block is the scenario's ``block`` event; the
simulator has no lagging view, so it is made by rewriting one member's reads
(:class:`Rewritten`): from a time on, that member's server shows what GR shows on it then.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Any

from grstats.agent.gossip import Counts, GossipState, Key
from grstats.agent.runtime import Agent
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.transports import MemoryNetwork
from grstats.agent.views import Disagreement, disagreements, member_views
from grstats.cli.status_view import GroupStatus, document, render_status
from grstats.core.rows import MemberStatsRow
from tests.agent.sql.test_endpoint import query, serve
from tests.agent.test_group_status import (
    custom,
    ids,
    partition,
    run_to,
    running,
    status,
    table,
)
from tests.agent.test_metrics_series import export_everything, rendered, value
from tests.agent.test_runtime import START_S, Clock, Group, _start_without_loop, settings
from tests.agent.test_served import (
    NOW,
    SECOND,
    SILENCE,
    A,
    B,
    C,
    group_view,
    learn,
    local_state,
    member,
    snapshot,
)
from tests.cli.test_query_status import wire

if TYPE_CHECKING:
    from collections.abc import Callable

    from grstats.agent.sim.scenario import Scenario
    from grstats.core.model import GroupView, MemberSnapshot

VIEWS = "replication_group_member_views"
#: Members 3 and 4 of five each cut off at 12 s: UNREACHABLE at 17 s, expelled at 22 s; on
#: MySQL 8.4, whose servers count their suspicions (replication_group_communication_information).
TWO_CUT_OFF = custom(5, version="8.4.0", events=[partition(3, 12), partition(4, 12)])
#: When the rewritten member's server starts showing the fault, and stops.
FAULT_AT_S, FAULT_UNTIL_S = 14, 20


def matrix(agent: Agent, group: Group) -> list[str]:
    """The agent's views as one string per observer (by member index), a letter per member.

    O ONLINE, U UNREACHABLE, R RECOVERING, E ERROR, F OFFLINE, - NOT_LISTED; '' for an
    observer whose view the agent does not have.
    """
    letters = {"NOT_LISTED": "-", "OFFLINE": "F"}
    rows = {(r["OBSERVER_ID"], r["MEMBER_ID"]): r["MEMBER_STATE"] for r in table(agent, VIEWS)}
    everyone = ids(group)
    return [
        "".join(letters.get(rows[o, m], rows[o, m][0]) if (o, m) in rows else "" for m in everyone)
        for o in everyone
    ]


def marks(agent: Agent, group: Group) -> set[tuple[int, int, str]]:
    """The agent's (observer index, member index, DISAGREEMENT) of every row that has one."""
    index = {member: number for number, member in enumerate(ids(group))}
    return {
        (index[r["OBSERVER_ID"]], index[r["MEMBER_ID"]], r["DISAGREEMENT"])
        for r in table(agent, VIEWS)
        if r["DISAGREEMENT"]
    }


def answer(agent: Agent) -> GroupStatus:
    """What ``grstats query status`` reads from the agent: its status tables and its views."""
    tables = wire(agent)
    columns, rows = agent.tables(extended=False)[VIEWS]
    tables[VIEWS] = ([column.name for column in columns], list(rows))
    return GroupStatus.from_tables("agent-0:7400", tables)


def disagreement_metric(agent: Agent, group: Group) -> list[float]:
    """grstats_member_view_disagreements of each member, by member index."""
    families = rendered(agent)
    group_name = status(agent)["GROUP_NAME"]
    return [
        value(families, "grstats_member_view_disagreements", group_name=group_name, member_id=m)
        for m in ids(group)
    ]


async def test_a_minority_partition_seen_from_any_agent() -> None:
    """Every agent: 3 and 4 see themselves ONLINE, the majority does not list them; split-brain named."""
    async with running(await start_members(TWO_CUT_OFF)) as group:
        export_everything(*group.agents)
        await run_to(group, 16)  # every member ONLINE
        for agent in group.agents:
            assert matrix(agent, group) == ["OOOOO"] * 5
            assert marks(agent, group) == set()
            assert answer(agent).disagreements == []
            assert disagreement_metric(agent, group) == [0.0] * 5
        for at_s in range(17, 23):  # no one-way link nor lagging view while the cut is seen
            await run_to(group, at_s)
            assert marks(group.agents[0], group) == {(3, 3, "SPLIT_BRAIN"), (4, 4, "SPLIT_BRAIN")}
        await run_to(group, 23)  # expelled at 22 s by the majority's newer view
        everyone = ids(group)
        for agent in group.agents:
            assert matrix(agent, group) == ["OOO--"] * 3 + ["UUUOU", "UUUUO"]
            assert marks(agent, group) == {(3, 3, "SPLIT_BRAIN"), (4, 4, "SPLIT_BRAIN")}
            rows = table(agent, VIEWS)
            assert {r["VIEW_ID"] for r in rows if r["OBSERVER_ID"] in everyone[:3]} == {
                status(agent)["VIEW_ID"]
            }
            assert {r["CONNECTED"] for r in rows} == {"YES"}
            assert all(isinstance(r["AGE_MS"], int) for r in rows)
            found = answer(agent)
            assert found.disagreements == [
                Disagreement("SPLIT_BRAIN", m, "ONLINE", own_view_id(group, i))
                for i, m in sorted(enumerate(everyone), key=lambda pair: pair[1])
                if i in (3, 4)
            ]
            assert disagreement_metric(agent, group) == [0.0, 0.0, 0.0, 1.0, 1.0]
        text = render_status(answer(group.agents[1]), "table")
        assert "split-brain: 127.0.0.1:13309, 127.0.0.1:13310 (not part of the majority" in text
        assert "one-way:" not in text
        assert "view lag:" not in text
        kinds = [d["kind"] for d in document(answer(group.agents[1]))["disagreements"]]
        assert kinds == ["SPLIT_BRAIN", "SPLIT_BRAIN"]


def own_view_id(group: Group, index: int) -> str:
    """The VIEW_ID member ``index``'s own server shows."""
    local = group.agents[index].local
    assert local is not None
    return local.view.view_id


async def test_the_suspicion_counts_are_the_local_members_only() -> None:
    """MEMBER_FAILURE_SUSPICIONS_COUNT: the serving agent's own member's (8.4), NULL elsewhere."""
    async with running(await start_members(TWO_CUT_OFF)) as group:
        await run_to(group, 20)  # 3 and 4 suspected since 17 s
        everyone = ids(group)
        rows = table(group.agents[0], VIEWS)
        own = {
            r["MEMBER_ID"]: r["MEMBER_FAILURE_SUSPICIONS_COUNT"]
            for r in rows
            if r["OBSERVER_ID"] == everyone[0]
        }
        assert [own[m] for m in everyone] == [0, 0, 0, 1, 1]
        assert {
            r["MEMBER_FAILURE_SUSPICIONS_COUNT"] for r in rows if r["OBSERVER_ID"] != everyone[0]
        } == {None}


class Rewritten:
    """A simulated member whose server shows ``change`` of its read from FAULT_AT_S to FAULT_UNTIL_S."""

    def __init__(
        self,
        source: SimulatedSource,
        clock: Clock,
        change: Callable[[MemberSnapshot, list[str]], MemberSnapshot],
        members: list[str],
    ) -> None:
        self._source = source
        self._clock = clock
        self._change = change
        self.members = members  #: the members' ids by index, filled by the test once known

    async def read(self) -> MemberSnapshot:
        """The simulated read, changed while the fault lasts."""
        snapshot = await self._source.read()
        at_s = self._clock.seconds - START_S
        if FAULT_AT_S <= at_s < FAULT_UNTIL_S:
            return self._change(snapshot, self.members)
        return snapshot

    async def aclose(self) -> None:
        """Close the simulated source."""
        await self._source.aclose()


async def start_members(
    scenario: Scenario,
    changed: int | None = None,
    change: Callable[[MemberSnapshot, list[str]], MemberSnapshot] | None = None,
    members: list[str] | None = None,
) -> Group:
    """In-memory agents of ``scenario``; member ``changed``'s reads rewritten by ``change``.

    ``change`` gets the read and ``members``, which the test fills with the members' ids.
    """
    clock, network = Clock(), MemoryNetwork()
    addresses = tuple(f"agent-{index}:7400" for index in range(scenario.members))
    ends = [network.transport(address) for address in addresses]
    sources: list[Any] = [
        SimulatedSource(scenario, index, seed=1, group_start_s=START_S, clock=clock.s)
        for index in range(scenario.members)
    ]
    if changed is not None and change is not None:
        sources[changed] = Rewritten(
            sources[changed], clock, change, [] if members is None else members
        )
    agents = [
        Agent(
            settings(advertise=address, peers=addresses),
            sources[index],
            transport=ends[index],
            clock=clock.us,
        )
        for index, address in enumerate(addresses)
    ]
    for agent in agents:
        await _start_without_loop(agent)
    return Group(agents, list(ends), clock, network)


def older_view(snapshot: MemberSnapshot, _members: list[str]) -> MemberSnapshot:
    """Member 2's server still in the view before the group's: its VIEW_ID one lower."""
    fixed, _, number = snapshot.view.view_id.rpartition(":")
    view: GroupView = dataclasses.replace(snapshot.view, view_id=f"{fixed}:{int(number) - 1}")
    return dataclasses.replace(snapshot, view=view)


#: Member 0's messages stop reaching member 1 (MySQL bug #118704's one-way block) from
#: FAULT_AT_S - suspicion_s (5 s), so member 1's failure detector suspects member 0 from
#: FAULT_AT_S; the block ends at FAULT_UNTIL_S. On 8.4, which counts suspicions.
ONE_WAY_BLOCK = custom(
    3,
    version="8.4.0",
    events=[
        {"at": FAULT_AT_S - 5, "action": "block", "member": 0, "members": [1]},
        {"at": FAULT_UNTIL_S, "action": "unblock", "member": 0},
    ],
)


async def test_a_one_way_block_is_named_from_every_agent() -> None:
    """Member 1 lists 0 UNREACHABLE while 0 lists 1 ONLINE: ONE_WAY on both rows, named, counted."""
    async with running(await start_members(ONE_WAY_BLOCK)) as group:
        export_everything(*group.agents)
        await run_to(group, FAULT_AT_S - 1)
        assert all(marks(agent, group) == set() for agent in group.agents)
        await run_to(group, FAULT_AT_S + 1)
        for agent in group.agents:
            assert matrix(agent, group) == ["OOO", "UOO", "OOO"]
            assert marks(agent, group) == {(0, 1, "ONE_WAY"), (1, 0, "ONE_WAY")}
            assert disagreement_metric(agent, group) == [1.0, 1.0, 0.0]
            (found,) = answer(agent).disagreements or []
            member_0, member_1, _ = ids(group)
            assert found == Disagreement(
                "ONE_WAY",
                member_1,
                "UNREACHABLE",
                own_view_id(group, 1),
                peer_id=member_0,
                peer_state="ONLINE",
            )
        text = render_status(answer(group.agents[2]), "table")
        assert (
            "one-way: 127.0.0.1:13307 lists 127.0.0.1:13306 UNREACHABLE while 127.0.0.1:13306 "
            "lists it ONLINE: messages from 127.0.0.1:13306 do not reach 127.0.0.1:13307"
        ) in text
        assert "split-brain:" not in text
        member_0, member_1, _ = ids(group)
        suspicions = {
            (r["OBSERVER_ID"], r["MEMBER_ID"]): r["MEMBER_FAILURE_SUSPICIONS_COUNT"]
            for r in table(group.agents[1], VIEWS)
        }
        assert suspicions[member_1, member_0] == 1  # member 1's own failure detector's
        assert {suspicions[member_0, m] for m in ids(group)} == {None}  # not agent 1's member
        served = table(group.agents[2], "replication_group_members")  # no majority expels 0
        assert [r["MEMBER_STATE"] for r in served] == ["ONLINE"] * 3
        await run_to(group, FAULT_UNTIL_S + 1)  # member 1 hears member 0 again
        assert all(marks(agent, group) == set() for agent in group.agents)
        assert all(matrix(agent, group) == ["OOO"] * 3 for agent in group.agents)


async def test_a_lagging_view_id_is_named_from_every_agent() -> None:
    """Member 2's own VIEW_ID older than the group's: VIEW_LAG on its own row, in the status too."""
    async with running(await start_members(custom(3), 2, older_view)) as group:
        await run_to(group, FAULT_AT_S + 1)
        for agent in group.agents:
            assert marks(agent, group) == {(2, 2, "VIEW_LAG")}
            found = answer(agent)
            (lag,) = found.disagreements or []
            assert (lag.kind, lag.member_id, lag.view_id) == (
                "VIEW_LAG",
                ids(group)[2],
                own_view_id(group, 2),
            )
            assert found.text("VIEW_ID") == own_view_id(group, 0) != lag.view_id
        text = render_status(answer(group.agents[0]), "table")
        assert f"view lag: 127.0.0.1:13308 is ONLINE in view {own_view_id(group, 2)}, older" in text
        document_lag = document(answer(group.agents[0]))["disagreements"]
        assert [(d["kind"], d["member_id"], d["peer_id"]) for d in document_lag] == [
            ("VIEW_LAG", ids(group)[2], None)
        ]
        await run_to(group, FAULT_UNTIL_S)
        assert all(marks(agent, group) == set() for agent in group.agents)


async def test_the_views_over_sql() -> None:
    """SELECT * FROM grstats.replication_group_member_views: every column, a row per pair."""
    async with running(await start_members(TWO_CUT_OFF)) as group:
        await run_to(group, 23)
        served = await serve(group.agents[0])
        try:
            rows = await asyncio.to_thread(
                query, served.address, "SELECT * FROM grstats.replication_group_member_views"
            )
            split = await asyncio.to_thread(
                query,
                served.address,
                "SELECT OBSERVER_ID, MEMBER_STATE FROM grstats.replication_group_member_views "
                "WHERE DISAGREEMENT = 'SPLIT_BRAIN'",
            )
        finally:
            await served.endpoint.aclose()
        everyone = ids(group)
        assert len(rows) == 25
        assert all(len(row) == 9 for row in rows)
        assert sorted(split) == sorted((m, "ONLINE") for m in everyone[3:])


def test_disagreements_read_a_one_way_pair_once() -> None:
    """The two rows of a ONE_WAY pair are one disagreement, named by the member that does not hear."""
    a, b = (f"00000000-0000-0000-0000-00000000000{i}" for i in range(2))
    rows = [
        {"OBSERVER_ID": a, "MEMBER_ID": a, "MEMBER_STATE": "ONLINE", "VIEW_ID": "1:3"},
        {"OBSERVER_ID": a, "MEMBER_ID": b, "MEMBER_STATE": "ONLINE", "DISAGREEMENT": "ONE_WAY"},
        {"OBSERVER_ID": b, "MEMBER_ID": a, "MEMBER_STATE": "NOT_LISTED", "VIEW_ID": "1:4"},
        {"OBSERVER_ID": b, "MEMBER_ID": b, "MEMBER_STATE": "ONLINE", "VIEW_ID": "1:4"},
    ]
    rows[2]["DISAGREEMENT"] = "ONE_WAY"
    assert disagreements(rows) == [
        Disagreement("ONE_WAY", b, "NOT_LISTED", "1:4", peer_id=a, peer_state="ONLINE")
    ]


def test_views_disagree_only_where_both_held_at_once() -> None:
    """B's view listing C UNREACHABLE, reported after C's last report, is no ONE_WAY with C's older one."""
    everyone = group_view(member(A, role="PRIMARY"), member(B), member(C))
    b_view = group_view(member(A, role="PRIMARY"), member(B), member(C, state="UNREACHABLE"))

    def views_of(c_reported_at: int) -> set[tuple[str, str, str]]:
        state = local_state(A, everyone)
        b_state = GossipState(B, incarnation=1)
        b_state.record_local(Key.VIEW, b_view, NOW - 2 * SECOND)  # C suspected since 2 s ago
        b_state.record_local(
            Key.COUNTS, Counts(MemberStatsRow(member_id=B), gtids_present=True), NOW
        )
        c_state = GossipState(C, incarnation=1)
        c_state.record_local(Key.VIEW, everyone, NOW - 60 * SECOND)
        c_state.record_local(
            Key.COUNTS, Counts(MemberStatsRow(member_id=C), gtids_present=True), c_reported_at
        )
        for other in (b_state, c_state):
            learn(state, other, NOW)
        found = member_views(
            state, snapshot(A, everyone), now_us=NOW, silence_us=SILENCE, offsets={}
        )
        return {(r.observer_id, r.member_id, r.disagreement) for r in found if r.disagreement}

    assert views_of(NOW - 3 * SECOND) == set()  # C last read before B suspected it
    assert views_of(NOW - 1 * SECOND) == {(B, C, "ONE_WAY"), (C, B, "ONE_WAY")}
