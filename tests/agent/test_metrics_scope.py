"""metrics.scope: each member's series, and the group's, from one agent of the group (issue 46).

The rule is grstats' own (MySQL has no exporter of its own; mysqld_exporter runs beside each
server and exports that server alone, as ``own`` does while every agent runs). Liveness is
the gossip's, WL#2860's "not connected" after the silence (``GossipState.connected``). The
group agents run on a :class:`MemoryNetwork` with the test clock, and /metrics is rendered on
the test's loop, as prometheus-client serves it.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import TYPE_CHECKING

import pytest

from grstats import __version__
from grstats.agent.config import load_config
from grstats.agent.metrics_scope import (
    ALL,
    EVERYTHING,
    OWN,
    MetricsConfig,
    Scope,
    exported,
)
from grstats.core.build import PROTOCOL_REVISION
from grstats.core.errors import ConfigError
from tests.agent.test_metrics_series import rendered
from tests.agent.test_runtime import start_group

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable

    from grstats.agent.runtime import Agent
    from tests.agent.test_runtime import Group

A = "aaaaaaaa-0000-0000-0000-000000000000"
B = "bbbbbbbb-0000-0000-0000-000000000000"
C = "cccccccc-0000-0000-0000-000000000000"
MEMBERS = (A, B, C)
#: Silence of the test agents (tests.agent.test_runtime.settings): 5 periods of 2 s, on a test
#: clock the rounds move 1 s at a time.
SILENCE_S = 10
#: The longest a member's or the group's series may be without their one exporter (issue 46).
HANDOVER_S = 30


class TestRule:
    """exported(): the one rule every agent applies to what the gossip tells it."""

    def test_all_exports_everything(self) -> None:
        """Scope all: every member and the group, whatever is heard (today's behaviour)."""
        assert exported(ALL, B, MEMBERS, {B}) == EVERYTHING

    @pytest.mark.parametrize(
        ("own", "expected"),
        [(A, Scope(frozenset({A}), group=True)), (B, Scope(frozenset({B}), group=False))],
    )
    def test_every_agent_heard_exports_its_own(self, own: str, expected: Scope) -> None:
        """Every agent heard: each its own member; the group from the lowest member id."""
        assert exported(OWN, own, MEMBERS, MEMBERS) == expected

    @pytest.mark.parametrize(
        ("own", "expected"),
        [(A, Scope(frozenset({A, C}), group=True)), (B, Scope(frozenset({B}), group=False))],
    )
    def test_an_unheard_member_goes_to_the_lowest_heard(self, own: str, expected: Scope) -> None:
        """C's agent unheard: A, the lowest member id heard, exports C too; B does not."""
        assert exported(OWN, own, MEMBERS, {A, B}) == expected

    def test_the_lowest_unheard_hands_on_to_the_next(self) -> None:
        """A's agent unheard: B exports A and the group, C only itself."""
        assert exported(OWN, B, MEMBERS, {B, C}) == Scope(frozenset({A, B}), group=True)
        assert exported(OWN, C, MEMBERS, {B, C}) == Scope(frozenset({C}), group=False)

    def test_an_agent_alone_exports_every_member(self) -> None:
        """No other agent heard: the agent is the lowest heard, of every member and the group."""
        assert exported(OWN, C, MEMBERS, set()) == Scope(frozenset(MEMBERS), group=True)

    def test_before_its_first_read_an_agent_exports_nothing(self) -> None:
        """Its own member unknown (''): no member's series, not the group's."""
        assert exported(OWN, "", MEMBERS, {B}) == Scope(frozenset(), group=False)


class TestSetting:
    def test_the_default_is_own(self) -> None:
        """No [metrics] section: scope own."""
        config = load_config(None, {"source": "simulated", **SIMULATED})
        assert config.metrics.scope == OWN

    def test_all_is_read_from_the_dotted_key(self) -> None:
        """metrics.scope = "all", as the file's [metrics] section or a dotted key gives it."""
        config = load_config(None, {"source": "simulated", "metrics.scope": "all", **SIMULATED})
        assert config.metrics == MetricsConfig(scope=ALL)

    def test_another_value_is_refused_naming_key_and_value(self) -> None:
        """A scope that is neither own nor all: the error names metrics.scope and the value."""
        with pytest.raises(ConfigError, match=r"^metrics\.scope: 'mine' is not own, all$"):
            load_config(None, {"source": "simulated", "metrics.scope": "mine", **SIMULATED})


SIMULATED = {"simulated.member_index": 0, "simulated.group_start_s": 1_767_225_600}


def series(agents: Iterable[Agent]) -> Counter[tuple[str, ...]]:
    """How many of ``agents`` export each member's and the group's series (name and labels).

    The agent's own figures (no group_name) are left out: every agent serves its own; so is
    ``source``, the relay path, which names the agent the row came through (``local`` at the
    member's own). ``*_created`` samples are prometheus-client's, not exported (``render_text``).
    """
    found: Counter[tuple[str, ...]] = Counter()
    for agent in agents:
        for family in rendered(agent).values():
            for sample in family.samples:
                if "group_name" in sample.labels and not sample.name.endswith("_created"):
                    labels = sorted(f"{k}={v}" for k, v in sample.labels.items() if k != "source")
                    found[(sample.name, *labels)] += 1
    return found


def exporters(agents: Iterable[Agent], member_id: str) -> set[str]:
    """The agents (by member) that export ``member_id``'s ``grstats_agent_up``."""
    return {
        agent.member_id
        for agent in agents
        for family in rendered(agent).values()
        if family.name == "grstats_agent_up"
        for sample in family.samples
        if sample.labels["member_id"] == member_id
    }


def group_exporters(agents: Iterable[Agent]) -> set[str]:
    """The agents (by member) that export ``grstats_group_status``."""
    return {agent.member_id for agent in agents if "grstats_group_status" in rendered(agent)}


async def periods(group: Group, running: list[Agent], count: int) -> None:
    """Move the test clock 1 s and run one period of each running agent, ``count`` times."""
    for _ in range(count):
        group.clock.seconds += 1
        for agent in running:
            await agent.run_period()


@pytest.fixture(name="group")
async def _group() -> AsyncIterator[Group]:
    """Three in-memory agents, every one heard by the others."""
    group = await start_group(3, memory=True)
    await periods(group, group.agents, 3)
    yield group
    for agent in group.agents:
        await agent.stop(grace_s=0)


async def test_scraping_every_agent_gives_each_series_once(group: Group) -> None:
    """Own: the union of the three agents' /metrics has each series once; all: three times."""
    members = [agent.member_id for agent in group.agents]
    for agent in group.agents:  # each agent counted an election and every member's change
        assert agent.local is not None
        agent.metrics.events(agent.local.view.group_name, 1, [(m, "ERROR") for m in members])
    once = series(group.agents)
    assert set(once.values()) == {1}
    names = Counter(name for name, *_ in once)
    assert names["grstats_agent_up"] == 3  # every member's series is there, once
    assert names["grstats_member_state_changes_total"] == 3
    assert names["grstats_group_status"] > 0
    assert names["grstats_primary_changes_total"] == 1
    for agent in group.agents:
        agent.config = dataclasses.replace(agent.config, metrics=MetricsConfig(scope=ALL))
    thrice = series(group.agents)
    assert thrice.keys() == once.keys()
    assert set(thrice.values()) == {3}


@pytest.mark.parametrize("stopped", [0, 2], ids=["lowest", "highest"])
async def test_a_silent_agents_member_moves_to_one_agent_and_back(
    group: Group, stopped: int
) -> None:
    """An agent stops: its member goes to the lowest member id heard, then comes back.

    The lowest member's agent exports the group's series too: they move with it when it stops.
    """
    network = group.network
    assert network is not None
    ordered = sorted(group.agents, key=lambda agent: agent.member_id)
    silent = ordered[stopped]
    others = [agent for agent in ordered if agent is not silent]
    taker = others[0].member_id  # the lowest member id still heard
    assert exporters(group.agents, silent.member_id) == {silent.member_id}
    assert group_exporters(group.agents) == {ordered[0].member_id}
    for other in others:  # stopped: it neither gossips nor is scraped
        network.cut(silent.address, other.address)
    waited = 0
    while exporters(others, silent.member_id) != {taker}:
        assert exporters(others, silent.member_id) == set()  # its agent may only be slow
        await periods(group, others, 1)
        waited += 1
        assert waited <= HANDOVER_S, "no agent took the silent member's series over"
    assert waited == SILENCE_S + 1  # once the silence is over: not heard for more than it
    assert group_exporters(others) == {taker}
    assert set(series(others).values()) == {1}  # every series once, the silent member's too
    assert builds(others)[(silent.member_id, __version__, str(PROTOCOL_REVISION))] == 1
    for other in others:  # it runs again
        network.heal(silent.address, other.address)
    await periods(group, group.agents, 1)
    assert exporters(group.agents, silent.member_id) == {silent.member_id}
    assert group_exporters(group.agents) == {ordered[0].member_id}
    assert set(series(group.agents).values()) == {1}


def builds(agents: Iterable[Agent]) -> Counter[tuple[str, str, str]]:
    """How many of ``agents`` serve each grstats_peer_info series (member, version, revision)."""
    return Counter(
        (sample.labels["member_id"], sample.labels["version"], sample.labels["protocol_revision"])
        for agent in agents
        for sample in rendered(agent)["grstats_peer_info"].samples
    )


async def test_each_members_build_comes_from_its_exporter(group: Group) -> None:
    """Own: each agent serves its own build, and an older agent's; all: every member's."""
    members = sorted(agent.member_id for agent in group.agents)
    ours = (__version__, str(PROTOCOL_REVISION))
    assert builds(group.agents) == Counter({(m, *ours): 1 for m in members})
    older = members[1]  # its agent says it runs revision 1: it serves no build of its own
    for agent in group.agents:
        if agent.member_id != older:
            agent.metrics.peer_build(older, "", 1)
    expected = {(m, *ours): 1 for m in members if m != older}
    assert builds(group.agents) == Counter(
        {**expected, (older, "unknown", "1"): 2, (older, *ours): 1}
    )
    for agent in group.agents:
        agent.config = dataclasses.replace(agent.config, metrics=MetricsConfig(scope=ALL))
    for agent in group.agents:
        if agent.member_id != older:
            agent.metrics.peer_build(older, __version__, PROTOCOL_REVISION)
    assert builds(group.agents) == Counter({(m, *ours): 3 for m in members})
