"""Issue 13 through real agents: the group's verdict each agent serves as a simulated group fails.

Agents run over the simulator (in memory, one period per second of a fake clock that starts
10 s after the group; gRPC for the healthy group and a silent agent) and are read through their
tables ``replication_group_status`` and ``replication_group_member_status``. Timing of the
simulated group: a crashed or cut-off member is UNREACHABLE 5 s after, expelled 5 s later and
out of the view from the next read. Members are numbered as in the scenario: agent ``i`` reads
member ``i``, which listens on 127.0.0.1, port 13306 + ``i``; member 0 is the primary of a
single-primary group.
READ_ONLY, SUPER_READ_ONLY and TRANSACTIONS_BEHIND are not checked here.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import pytest

from grstats.agent import runtime
from grstats.agent.runtime import Agent
from grstats.agent.sim.scenario import from_mapping
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.transports import MemoryNetwork
from tests.agent.test_runtime import (
    START_S,
    Clock,
    Group,
    _start_without_loop,
    settings,
    start_group,
    stop_all,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from grstats.agent.sim.scenario import Scenario

#: (STATUS, TOLERANCE, VIEW_ID): what the agents of one side must agree on.
Verdict = tuple[str, int, str]
#: One side's samples: (seconds, the verdict of each of the side's agents).
Samples = list[tuple[float, tuple[Verdict, ...]]]

TOLERATES_ONE = "Group is ONLINE and can tolerate up to ONE failure."
NOT_TOLERANT = "Group is NOT tolerant to any failures."
NOT_HEARD = " 1 member is not connected: its rows are the last received."
#: The member whose applier is slow in the flow-control scenarios, and their applier threshold.
SLOW, THRESHOLD = 2, 500


@pytest.fixture(autouse=True)
def reads_finish_within_their_period(monkeypatch: pytest.MonkeyPatch) -> None:
    """A simulated read is never late in the test clock's time, so a period waits for it.

    A period waits at most ``READ_WAIT_PERIODS`` of the period for its read, in real time; with
    both cores busy a simulated member's read has taken over 1 s, its rows then showed an
    AGE_MS of one period, and these tests read timing that the test clock does not stand for.
    tests/agent/test_own_member_down.py tests the bounded wait itself.
    """
    monkeypatch.setattr(runtime, "READ_WAIT_PERIODS", 30.0)


def table(agent: Agent, name: str) -> list[dict[str, Any]]:
    """The rows of the agent's table ``name``, as column name -> value."""
    columns, rows = agent.tables(extended=False)[name]
    return [{c.name: v for c, v in zip(columns, row, strict=True)} for row in rows]


def status(agent: Agent) -> dict[str, Any]:
    """The agent's one row of replication_group_status."""
    (row,) = table(agent, "replication_group_status")
    return row


def member_status(agent: Agent) -> dict[str, dict[str, Any]]:
    """The agent's replication_group_member_status rows by MEMBER_ID."""
    return {str(row["MEMBER_ID"]): row for row in table(agent, "replication_group_member_status")}


def verdict(agent: Agent) -> Verdict:
    """The agent's (STATUS, TOLERANCE, VIEW_ID)."""
    row = status(agent)
    return (str(row["STATUS"]), int(row["TOLERANCE"]), str(row["VIEW_ID"]))


def states(agent: Agent) -> dict[str, str]:
    """MEMBER_STATE of every member as the agent serves it."""
    return {m: str(row["MEMBER_STATE"]) for m, row in member_status(agent).items()}


def ids(group: Group) -> list[str]:
    """The MEMBER_ID of each agent's member, by member index."""
    return [agent.member_id for agent in group.agents]


def seconds(group: Group) -> float:
    """The group's time: seconds since it started."""
    return group.clock.seconds - START_S


async def run_to(group: Group, at_s: float) -> None:
    """Run periods until ``at_s`` seconds after the group started."""
    await group.rounds(round(at_s - seconds(group)))


def view(number: int, like: str) -> str:
    """The VIEW_ID of view ``number`` of the group whose view ``like`` is (same fixed part)."""
    return f"{like.rsplit(':', 1)[0]}:{number}"


def custom(members: int, *, mode: str = "single-primary", **tables: Any) -> Scenario:
    """A scenario built with from_mapping: ``tables`` are its workload, appliers, events, ..."""
    return from_mapping(
        {"name": "custom", "description": "a test's", "mode": mode, "members": members} | tables
    )


def crash(member: int, at: float) -> dict[str, Any]:
    """A crash event of ``member`` at ``at`` seconds."""
    return {"at": at, "action": "crash", "member": member}


def partition(member: int, at: float) -> dict[str, Any]:
    """A partition event cutting ``member`` off at ``at`` seconds."""
    return {"at": at, "action": "partition", "member": member}


async def start(scenario: Scenario) -> Group:
    """In-memory agents of ``scenario``'s members, wired as ``start_group(memory=True)`` does."""
    clock, network = Clock(), MemoryNetwork()
    addresses = tuple(f"agent-{index}:7400" for index in range(scenario.members))
    ends = [network.transport(address) for address in addresses]
    agents = [
        Agent(
            settings(advertise=address, peers=addresses),
            SimulatedSource(scenario, index, seed=1, group_start_s=START_S, clock=clock.s),
            transport=ends[index],
            clock=clock.us,
        )
        for index, address in enumerate(addresses)
    ]
    for agent in agents:
        await _start_without_loop(agent)
    return Group(agents, list(ends), clock, network)


@contextlib.asynccontextmanager
async def running(group: Group) -> AsyncIterator[Group]:
    """The group once every agent has read its member (one period; more if a member is down)."""
    try:
        await group.rounds(1)
        for _ in range(10):
            if all(agent.member_id for agent in group.agents):
                break
            await group.rounds(1)
        yield group
    finally:
        await stop_all(group)


# -- 1. a healthy group --------------------------------------------------------------------


@pytest.mark.parametrize("memory", [True, False], ids=["memory", "grpc"])
async def test_healthy_group_is_ok_and_tolerates_one_failure(memory: bool) -> None:
    """Three ONLINE members: every agent says OK, tolerance 1, single-primary, member 0 primary."""
    group = await start_group(3, memory=memory)
    try:
        await group.rounds(2)
        primary, *secondaries = ids(group)
        local = group.agents[0].local
        assert local is not None
        expected = {
            "GROUP_NAME": local.view.group_name,
            "VIEW_ID": local.view.view_id,
            "STATUS": "OK",
            "STATUS_TEXT": TOLERATES_ONE,
            "TOLERANCE": 1,
            "MODE": "single-primary",
            "PRIMARY_MEMBERS": primary,
            "THROTTLED": "NO",
            "THROTTLED_BY": "",
            "AS_OF": group.clock.us(),
            "GROUP_LABEL": "",
            "STABLE_SET_STALLED_S": None,
            "STABLE_SET_HELD_BY": "",
            "ROWS_VALIDATING_PER_MINUTE": None,
        }
        for agent in group.agents:
            assert status(agent) == expected
            rows = member_status(agent)
            assert sorted(rows) == sorted(ids(group))
            assert {
                m: (r["MEMBER_HOST"], r["MEMBER_PORT"], r["MEMBER_STATE"], r["MEMBER_ROLE"])
                for m, r in rows.items()
            } == {
                primary: ("127.0.0.1", 13306, "ONLINE", "PRIMARY"),
                secondaries[0]: ("127.0.0.1", 13307, "ONLINE", "SECONDARY"),
                secondaries[1]: ("127.0.0.1", 13308, "ONLINE", "SECONDARY"),
            }
            assert {
                (r["MEMBER_VERSION"], r["CONNECTED"], r["THROTTLING"]) for r in rows.values()
            } == {("8.0.36", "YES", "NO")}
            assert all(r["AGE_MS"] == 0 for r in rows.values())
    finally:
        await stop_all(group)


# -- 2. one member crashes -------------------------------------------------------------------


async def test_crashed_member_leaves_no_tolerance_while_unreachable_and_after_expulsion() -> None:
    """Member 2 crashes at 30 s: OK_NO_TOLERANCE_PARTIAL from 35 s (UNREACHABLE) and after 40 s (expelled)."""
    group = await start_group(3, scenario="crash-rejoin", memory=True)
    try:
        await run_to(group, 34)
        first = verdict(group.agents[0])
        assert first[:2] == ("OK", 1)
        crashed = ids(group)[2]
        await run_to(group, 35)  # suspected: UNREACHABLE in the view
        for agent in group.agents:  # the crashed member's agent relays the others' view
            row = status(agent)
            assert verdict(agent) == ("OK_NO_TOLERANCE_PARTIAL", 0, first[2])
            assert row["STATUS_TEXT"] == f"{NOT_TOLERANT} 1 member is not active."
            assert row["PRIMARY_MEMBERS"] == ids(group)[0]
            assert states(agent) == dict(
                zip(ids(group), ["ONLINE", "ONLINE", "UNREACHABLE"], strict=True)
            )
        await run_to(group, 40)  # still in the view: not expelled yet
        assert verdict(group.agents[0]) == ("OK_NO_TOLERANCE_PARTIAL", 0, first[2])
        await run_to(group, 41)  # expelled at 40 s: a new view without it
        for agent in group.agents:
            row = status(agent)
            assert verdict(agent) == ("OK_NO_TOLERANCE_PARTIAL", 0, view(4, first[2]))
            assert row["STATUS_TEXT"] == f"{NOT_TOLERANT} 1 member is not active."
            assert states(agent)[crashed] == "OFFLINE"  # known, not in the view
    finally:
        await stop_all(group)


# -- 3. the second crash of three: no quorum -------------------------------------------------


async def test_second_crash_leaves_two_member_view_without_quorum() -> None:
    """Member 2 crashes at 12 s (expelled at 22 s), member 1 at 25 s: NO_QUORUM from 30 s on every agent."""
    scenario = custom(3, events=[crash(2, 12), crash(1, 25)])
    async with running(await start(scenario)) as group:
        primary, second, first_out = ids(group)
        await run_to(group, 29)  # member 2 expelled, member 1 not yet suspected
        two = verdict(group.agents[0])
        assert two[:2] == ("OK_NO_TOLERANCE_PARTIAL", 0)
        assert status(group.agents[0])["STATUS_TEXT"] == f"{NOT_TOLERANT} 1 member is not active."
        await run_to(group, 30)  # member 1 UNREACHABLE: one of two
        text = (
            "Group has no quorum as visible from '127.0.0.1:13306' and cannot process write"
            " transactions. 2 members are not active."
        )
        for agent in group.agents:  # the two crashed members' agents serve member 0's view
            row = status(agent)
            assert verdict(agent) == ("NO_QUORUM", 0, two[2])
            assert row["STATUS_TEXT"] == text
            assert row["PRIMARY_MEMBERS"] == primary
            assert states(agent) == {
                primary: "ONLINE",
                second: "UNREACHABLE",
                first_out: "OFFLINE",
            }
        await run_to(group, 45)  # past the expel timeout: without quorum no view change
        assert {verdict(agent) for agent in group.agents} == {("NO_QUORUM", 0, two[2])}


# -- 4. multi-primary --------------------------------------------------------------------------


async def test_multi_primary_lists_every_online_member_as_primary() -> None:
    """Multi-primary: MODE multi-primary and PRIMARY_MEMBERS every ONLINE member, before and after a crash."""
    scenario = custom(3, mode="multi-primary", events=[crash(1, 12)])
    async with running(await start(scenario)) as group:
        everyone = ids(group)
        for agent in group.agents:
            row = status(agent)
            assert (row["STATUS"], row["TOLERANCE"], row["MODE"]) == ("OK", 1, "multi-primary")
            assert row["PRIMARY_MEMBERS"] == ",".join(sorted(everyone))
            assert {r["MEMBER_ROLE"] for r in member_status(agent).values()} == {"PRIMARY"}
        await run_to(group, 23)  # member 1 crashed and expelled
        online = sorted(everyone[:1] + everyone[2:])
        for agent in group.agents:
            row = status(agent)
            assert (row["STATUS"], row["TOLERANCE"], row["MODE"]) == (
                "OK_NO_TOLERANCE_PARTIAL",
                0,
                "multi-primary",
            )
            assert row["PRIMARY_MEMBERS"] == ",".join(online)


async def test_built_in_multi_primary_scenario() -> None:
    """The multi-primary-conflicts scenario: OK, tolerance 1, all three members primaries."""
    async with running(await start_group(3, "multi-primary-conflicts", memory=True)) as group:
        await group.rounds(2)
        for agent in group.agents:
            row = status(agent)
            assert (row["STATUS"], row["STATUS_TEXT"], row["MODE"]) == (
                "OK",
                TOLERATES_ONE,
                "multi-primary",
            )
            assert row["PRIMARY_MEMBERS"] == ",".join(sorted(ids(group)))


# -- 5. five members, two cut off ------------------------------------------------------------


async def test_two_of_five_cut_off() -> None:
    """Members 3 and 4 cut off at 12 s: majority OK_NO_TOLERANCE_PARTIAL, then everyone OK_PARTIAL.

    In memory the agents themselves are not cut off: the minority's agents still hear every
    agent. Until the expulsion they serve their own member's view (same VIEW_ID as the
    majority's), in which every other member is UNREACHABLE: NO_QUORUM. Once the majority
    installs the view without them, that newer view is the group's on every agent.
    """
    scenario = custom(5, events=[partition(3, 12), partition(4, 12)])
    async with running(await start(scenario)) as group:
        everyone = ids(group)
        majority, minority = group.agents[:3], group.agents[3:]
        # Shell's error for each cut-off member, named in the sentence (agent.verdict.split_text)
        split = "".join(
            f" 127.0.0.1:{13306 + i}: ERROR: split-brain! Instance is not part of the majority "
            "group, but has state ONLINE."
            for i in (3, 4)
        )
        await run_to(group, 16)
        five = verdict(group.agents[0])
        assert {verdict(agent) for agent in group.agents} == {("OK", 2, five[2])}
        assert status(group.agents[0])["STATUS_TEXT"] == (
            "Group is ONLINE and can tolerate up to 2 failures."
        )
        await run_to(group, 17)  # 3 and 4 UNREACHABLE: one more failure would lose quorum
        for agent in majority:
            assert verdict(agent) == ("OK_NO_TOLERANCE_PARTIAL", 0, five[2])
            assert (
                status(agent)["STATUS_TEXT"] == f"{NOT_TOLERANT} 2 members are not active.{split}"
            )
            assert states(agent) == dict(
                zip(everyone, ["ONLINE"] * 3 + ["UNREACHABLE"] * 2, strict=True)
            )
        await run_to(group, 23)  # both expelled at 22 s: two view changes
        for agent in majority:
            assert verdict(agent) == ("OK_PARTIAL", 1, view(7, five[2]))
            assert (
                status(agent)["STATUS_TEXT"] == f"{TOLERATES_ONE} 2 members are not active.{split}"
            )
            assert states(agent) == dict(
                zip(everyone, ["ONLINE"] * 3 + ["OFFLINE"] * 2, strict=True)
            )
            assert {r["CONNECTED"] for r in member_status(agent).values()} == {"YES"}
        for agent in minority:  # the group's newer view, not their members' last one
            assert verdict(agent) == ("OK_PARTIAL", 1, view(7, five[2]))
            assert (
                status(agent)["STATUS_TEXT"] == f"{TOLERATES_ONE} 2 members are not active.{split}"
            )
            assert states(agent) == dict(
                zip(everyone, ["ONLINE"] * 3 + ["OFFLINE"] * 2, strict=True)
            )
            assert {r["CONNECTED"] for r in member_status(agent).values()} == {"YES"}


# -- 6. an agent not heard -------------------------------------------------------------------


@pytest.mark.parametrize("memory", [True, False], ids=["memory", "grpc"])
async def test_stopped_agent_is_not_heard_and_the_group_stays_ok(memory: bool) -> None:
    """Agent 2 stops (its member stays ONLINE): after 10 s of silence it is not CONNECTED, status OK."""
    group = await start_group(3, memory=memory)
    try:
        await group.rounds(2)  # 12 s: last heard
        silent = group.agents.pop()
        group.transports.pop()
        await silent.stop(grace_s=0)
        await run_to(group, 22)  # 10 s of silence: still heard
        assert member_status(group.agents[0])[silent.member_id]["CONNECTED"] == "YES"
        assert status(group.agents[0])["STATUS_TEXT"] == TOLERATES_ONE
        await run_to(group, 23)
        for agent in group.agents:
            row = status(agent)
            assert (row["STATUS"], row["TOLERANCE"]) == ("OK", 1)
            assert row["STATUS_TEXT"] == TOLERATES_ONE + NOT_HEARD
            silent_row = member_status(agent)[silent.member_id]
            assert (silent_row["MEMBER_STATE"], silent_row["CONNECTED"]) == ("ONLINE", "NO")
            assert silent_row["AGE_MS"] == 11_000
    finally:
        await stop_all(group)


# -- 7. every agent gives the same verdict within one period ---------------------------------


async def sample(group: Group, until_s: float, sides: Sequence[Sequence[int]]) -> list[Samples]:
    """Run periods to ``until_s``; after each agent's period, record each side's verdicts.

    Returns, per side, a list of (seconds, verdicts of the side's agents): len(agents) samples
    per period, so an agent that has not run its period yet shows what it served before.
    """
    samples: list[Samples] = [[] for _ in sides]
    while seconds(group) < until_s:
        group.clock.seconds += 1
        for agent in group.agents:
            await agent.run_period()
            for side, recorded in zip(sides, samples, strict=True):
                recorded.append((seconds(group), tuple(verdict(group.agents[i]) for i in side)))
    return samples


def agreed_changes(samples: Samples, per_period: int) -> list[tuple[float, Verdict]]:
    """Each change of a side's verdict and when it first showed.

    Fails unless every agent of the side goes through the same verdicts, each within one
    period (``per_period`` samples) of the first agent that showed it.
    """
    tracks: list[list[tuple[int, Verdict]]] = []
    for agent in range(len(samples[0][1])):
        track: list[tuple[int, Verdict]] = []
        for index, (_, verdicts) in enumerate(samples):
            if not track or track[-1][1] != verdicts[agent]:
                track.append((index, verdicts[agent]))
        tracks.append(track)
    assert len({tuple(v for _, v in track) for track in tracks}) == 1, tracks
    changes = []
    for shown in zip(*tracks, strict=True):
        first, last = min(i for i, _ in shown), max(i for i, _ in shown)
        assert last - first < per_period, shown
        changes.append((samples[first][0], shown[0][1]))
    return changes


async def test_every_agent_agrees_on_a_healthy_group() -> None:
    """Three healthy members: every agent gives the same verdict in every period."""
    async with running(await start_group(3, memory=True)) as group:
        (samples,) = await sample(group, 20, [[0, 1, 2]])
        first = samples[0][1][0][2]
        assert agreed_changes(samples, 3) == [(12, ("OK", 1, first))]


async def test_every_agent_agrees_within_one_period_of_a_crash() -> None:
    """Member 2 crashes at 30 s: all three agents change verdict within one period, twice."""
    async with running(await start_group(3, scenario="crash-rejoin", memory=True)) as group:
        (samples,) = await sample(group, 42, [[0, 1, 2]])
        first = samples[0][1][0][2]
        assert agreed_changes(samples, 3) == [
            (12, ("OK", 1, first)),
            (35, ("OK_NO_TOLERANCE_PARTIAL", 0, first)),
            (41, ("OK_NO_TOLERANCE_PARTIAL", 0, view(4, first))),
        ]


async def test_every_agent_of_each_side_agrees_within_one_period_of_a_partition() -> None:
    """Two of five cut off at 12 s: the majority's three and the minority's two agree within a period."""
    scenario = custom(5, events=[partition(3, 12), partition(4, 12)])
    async with running(await start(scenario)) as group:
        majority, minority = await sample(group, 24, [[0, 1, 2], [3, 4]])
        first = majority[0][1][0][2]
        assert agreed_changes(majority, 5) == [
            (12, ("OK", 2, first)),
            (17, ("OK_NO_TOLERANCE_PARTIAL", 0, first)),
            (23, ("OK_PARTIAL", 1, view(7, first))),
        ]
        assert agreed_changes(minority, 5) == [
            (12, ("OK", 2, first)),
            (17, ("NO_QUORUM", 0, first)),  # their own view: the others UNREACHABLE
            (23, ("OK_PARTIAL", 1, view(7, first))),  # the group's newer view
        ]


# -- 8. flow control ---------------------------------------------------------------------------


def slow_secondary(**flow_control: Any) -> Scenario:
    """3000 tps on the primary; member 2 applies 1500 tps, the others 6000."""
    return custom(
        3,
        workload={"rate_tps": 3000},
        appliers={"capacity_tps": 6000, "capacity_overrides": {str(SLOW): 1500}},
        flow_control=flow_control,
    )


async def test_a_queue_over_the_applier_threshold_throttles_the_primary() -> None:
    """Applier threshold 500: THROTTLED YES, by member 2, in exactly the periods its queue is over it."""
    async with running(await start(slow_secondary(applier_threshold=THRESHOLD))) as group:
        primary, other, slow = ids(group)
        seen = set()
        for _ in range(15):  # GR's flow control holds the queue around the threshold
            await group.rounds(1)
            for agent in group.agents:
                rows, row = member_status(agent), status(agent)
                over = rows[slow]["APPLIER_QUEUE"] > THRESHOLD
                held = "YES" if over else "NO"
                seen.add(held)
                assert (row["THROTTLED"], row["THROTTLED_BY"]) == (held, slow if over else "")
                assert {m: r["THROTTLING"] for m, r in rows.items()} == {
                    primary: held,
                    other: "NO",
                    slow: "NO",
                }
        assert seen == {"YES", "NO"}


async def test_flow_control_disabled_throttles_no_one() -> None:
    """Mode DISABLED: member 2's queue grows past every threshold and THROTTLED stays NO."""
    scenario = slow_secondary(mode="DISABLED", applier_threshold=THRESHOLD)
    async with running(await start(scenario)) as group:
        slow = ids(group)[SLOW]
        await run_to(group, 20)
        for agent in group.agents:
            rows = member_status(agent)
            assert rows[slow]["APPLIER_QUEUE"] > 25_000  # over MySQL's default threshold too
            row = status(agent)
            assert (row["THROTTLED"], row["THROTTLED_BY"]) == ("NO", "")
            assert {r["THROTTLING"] for r in rows.values()} == {"NO"}
