"""Issue 28: a member once in the group's view is 'not active' on every agent until it is forgotten.

Five in-memory agents over the simulator, each with its registry, as ``grstats agent`` runs
them; one period per second of a fake clock that starts 10 s after the group. Member 3's
server crashes and member 4 is cut off from the group at 12 s; both are UNREACHABLE at 17 s
and expelled at 22 s, while both their agents keep running and gossiping. MySQL Shell's
``cluster.status()`` then says OK_PARTIAL, "Cluster is ONLINE and can tolerate up to ONE
failure. 2 members are not active." (``Status::check_group_status``,
modules/adminapi/cluster/status.cc: the metadata's 5 members, 3 ONLINE), until
``removeInstance``; grstats's ``removeInstance`` is ``grstats members forget``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grstats.agent.metrics_series import SeriesInput, table_series
from grstats.agent.registry import SqliteRegistry
from grstats.agent.runtime import Agent
from grstats.agent.sim.scenario import from_mapping
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.transports import MemoryNetwork
from grstats.core.errors import SourceUnavailable
from tests.agent.test_runtime import START_S, Clock, _start_without_loop, settings

if TYPE_CHECKING:
    from pathlib import Path

    from grstats.core.model import MemberSnapshot

TOLERATES_ONE = "Group is ONLINE and can tolerate up to ONE failure."
#: Shell's sentence for 5 known members of which 3 are ONLINE ("Cluster" for "Group"), then
#: Shell's error for member 4, cut off and still ONLINE in its own view (``instance_diagnostics``
#: in modules/adminapi/cluster/status.cc); member 3 crashed, so it is not split-brain.
TWO_NOT_ACTIVE = (
    f"{TOLERATES_ONE} 2 members are not active. 127.0.0.1:13310: ERROR: split-brain! Instance "
    "is not part of the majority group, but has state ONLINE."
)
SCENARIO = from_mapping(
    {
        "name": "two-expelled",
        "description": "member 3 crashes and member 4 is cut off at 12 s",
        "mode": "single-primary",
        "members": 5,
        "events": [
            {"at": 12, "action": "crash", "member": 3},
            {"at": 12, "action": "partition", "member": 4},
        ],
    }
)


class FirstReadFails:
    """A simulated member whose server does not answer the agent's first read, then does.

    So the agent has no view of its own for a period, as when its first read after a restart
    outlasts the round's wait (``READ_WAIT_PERIODS``, a 44 s catch-up of the simulator on a
    loaded host): peers' own views are then what it hears first.
    """

    def __init__(self, source: SimulatedSource) -> None:
        self._source = source
        self._failed = False

    async def read(self) -> MemberSnapshot:
        """Fail the first read, as an unreachable server does; then read the simulator."""
        if not self._failed:
            self._failed = True
            raise SourceUnavailable("simulated member 0: not answering yet (test)")
        return await self._source.read()

    async def aclose(self) -> None:
        """Close the simulator."""
        await self._source.aclose()


def agent_of(
    index: int,
    clock: Clock,
    network: MemoryNetwork,
    registry: Path,
    *,
    first_read_fails: bool = False,
) -> Agent:
    """Agent ``index`` of the scenario, on ``network``, with its registry in the file ``registry``."""
    addresses = tuple(f"agent-{i}:7400" for i in range(SCENARIO.members))
    source = SimulatedSource(SCENARIO, index, seed=1, group_start_s=START_S, clock=clock.s)
    return Agent(
        settings(advertise=addresses[index], peers=addresses),
        FirstReadFails(source) if first_read_fails else source,
        transport=network.transport(addresses[index]),
        registry=SqliteRegistry(registry),
        clock=clock.us,
    )


def verdict(agent: Agent) -> tuple[str, str, int]:
    """The agent's STATUS, STATUS_TEXT and, from /metrics, grstats_group_members_not_active."""
    served = agent.tables(extended=True)
    columns, (row,) = served["replication_group_status"]
    named: dict[str, Any] = {c.name: v for c, v in zip(columns, row, strict=True)}
    families = table_series(SeriesInput(served, agent.member_id, 25_000, 25_000))
    (not_active,) = [f for f in families if f.name == "grstats_group_members_not_active"]
    return named["STATUS"], named["STATUS_TEXT"], int(not_active.samples[0].value)


def states(agent: Agent) -> list[str]:
    """MEMBER_STATE of each row of the agent's replication_group_member_status, by MEMBER_ID."""
    columns, rows = agent.tables(extended=False)["replication_group_member_status"]
    at = [column.name for column in columns].index("MEMBER_STATE")
    return [str(row[at]) for row in rows]


async def run_to(agents: list[Agent], clock: Clock, at_s: float) -> None:
    """Run one period of every agent per second until ``at_s`` seconds after the group started.

    In memory a round's pushes have arrived when it ends: nothing to wait for.
    """
    while clock.seconds - START_S < at_s:
        clock.seconds += 1
        for agent in agents:
            await agent.run_period()


async def test_two_expelled_members_are_not_active_on_every_agent_until_forgotten(
    tmp_path: Path,
) -> None:
    """Every agent says OK_PARTIAL, '2 members are not active', after a restart or a fresh start too, until members forget."""
    clock, network = Clock(), MemoryNetwork()
    paths = [tmp_path / f"registry-{index}.sqlite" for index in range(SCENARIO.members)]
    agents = [agent_of(index, clock, network, paths[index]) for index in range(SCENARIO.members)]
    for agent in agents:
        await _start_without_loop(agent)
    try:
        await run_to(agents, clock, 16)
        assert {verdict(agent) for agent in agents} == {
            ("OK", "Group is ONLINE and can tolerate up to 2 failures.", 0)
        }
        expelled = {agents[3].member_id, agents[4].member_id}
        for moment in (23, 40):  # expelled at 22 s; then long past the silence of agent 3
            await run_to(agents, clock, moment)
            for agent in agents:  # the expelled members' own agents too
                assert verdict(agent) == ("OK_PARTIAL", TWO_NOT_ACTIVE, 2), (moment, agent.address)
                assert sorted(states(agent)) == ["OFFLINE"] * 2 + ["ONLINE"] * 3
        await agents[0].stop(grace_s=0)  # flushes its registry
        agents[0] = agent_of(0, clock, network, paths[0])
        await _start_without_loop(agents[0])
        await agents[1].stop(grace_s=0)  # and one that starts afresh: an empty registry
        paths[1] = tmp_path / "registry-1-new.sqlite"
        agents[1] = agent_of(1, clock, network, paths[1])
        await _start_without_loop(agents[1])
        await run_to(agents, clock, 42)
        for agent in agents[:2]:  # the agents of the expelled members tell them of their view
            assert verdict(agent) == ("OK_PARTIAL", TWO_NOT_ACTIVE, 2), agent.address
        await agents[1].flush()
        for index in (0, 1, 2):  # grstats members forget, beside the majority's agents
            with SqliteRegistry(paths[index]) as registry:
                assert all(registry.forget(member) for member in expelled)
            await agents[index].flush()
        await run_to(agents, clock, 44)
        for agent in agents[:3]:
            assert verdict(agent) == ("OK", TOLERATES_ONE, 0)
            assert states(agent) == ["ONLINE"] * 3
        for agent in agents[3:]:  # not forgotten there
            assert verdict(agent) == ("OK_PARTIAL", TWO_NOT_ACTIVE, 2)
        await agents[0].stop(grace_s=0)  # forgotten stays forgotten across a restart
        agents[0] = agent_of(0, clock, network, paths[0])
        await _start_without_loop(agents[0])
        await run_to(agents, clock, 47)
        assert verdict(agents[0]) == ("OK", TOLERATES_ONE, 0)
        assert states(agents[0]) == ["ONLINE"] * 3
        # And when its first read fails: the expelled members' agents, which still list them
        # in their own views, do not bring them back meanwhile (PeerRounds._admit). Shell's
        # removeInstance drops a member from the metadata whatever its own view says
        # (Cluster_impl::remove_instance, modules/adminapi/cluster/cluster_impl.cc).
        await agents[0].stop(grace_s=0)
        agents[0] = agent_of(0, clock, network, paths[0], first_read_fails=True)
        await _start_without_loop(agents[0])
        await run_to(agents, clock, 48)
        assert agents[0].member.snapshot is None  # no view of its own in that period
        await run_to(agents, clock, 50)
        assert verdict(agents[0]) == ("OK", TOLERATES_ONE, 0)
        assert states(agents[0]) == ["ONLINE"] * 3
    finally:
        for agent in agents:
            await agent.stop(grace_s=0)
