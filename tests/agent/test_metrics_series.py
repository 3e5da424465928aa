"""Stable series: one label set per member and metric while relay paths change (issues 14 and 32).

Agents run on a :class:`MemoryNetwork` whose links the tests cut and heal, so a member's row
reaches an agent now directly, now through another agent; /metrics is rendered on the test's
loop after every period (prometheus-client's own text, parsed back) and every sample is kept.
Only ``grstats_member_source_info`` may change its labels (its ``source`` is the relay path);
the info gauges ``grstats_member_info`` and ``grstats_group_info`` keep one label set each.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import TYPE_CHECKING

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from grstats.agent.metrics_scope import ALL, MetricsConfig
from grstats.agent.runtime import Agent
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.memory import MemorySource
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.transports import MemoryNetwork
from grstats.core.model import GroupView
from tests.agent.test_metrics import MEMBER_SERIES
from tests.agent.test_runtime import START_S, Clock, _start_without_loop, settings, start_group

if TYPE_CHECKING:
    from prometheus_client import Metric

    from grstats.core.model import MemberSnapshot
    from tests.agent.test_runtime import Group

#: The families served only while the group's name is known.
GROUP_SERIES = frozenset(
    {
        "grstats_member_info",
        "grstats_member_source_info",
        "grstats_group_info",
        "grstats_group_status",
        "grstats_group_tolerance",
        "grstats_group_throttled",
        "grstats_flow_control_applier_threshold",
        "grstats_flow_control_certifier_threshold",
    }
)
#: Series every listed member has, whatever its agent does (lag and behind may be NULL).
ALWAYS = frozenset(
    {
        "grstats_member_info",
        "grstats_member_source_info",
        "grstats_agent_up",
        "grstats_member_in_view",
        "grstats_member_state",
        "grstats_member_primary",
        "grstats_row_age_seconds",
        "grstats_member_throttling",
        "grstats_transactions_checked",
        "grstats_applier_queue_transactions",
    }
)

#: The families whose label sets the relay-path test follows: every member's, and the info gauges.
TRACKED = MEMBER_SERIES | {
    "grstats_member_info",
    "grstats_member_source_info",
    "grstats_group_info",
}
#: The one family whose labels change with the relay path (its ``source``).
MOVING = "grstats_member_source_info"

Labels = frozenset[tuple[str, str]]


def export_everything(*agents: Agent) -> None:
    """``metrics.scope = "all"``: each agent exports every member's and the group's series.

    For tests of what one agent's view of every member gives (a single-agent scrape).
    """
    for agent in agents:
        agent.config = dataclasses.replace(agent.config, metrics=MetricsConfig(scope=ALL))


def rendered(agent: Agent) -> dict[str, Metric]:
    """The agent's /metrics as Prometheus would get it, by family (rendered on the loop)."""
    text = generate_latest(agent.metrics.registry).decode("utf-8")
    return {family.name: family for family in text_string_to_metric_families(text)}


def value(families: dict[str, Metric], name: str, **labels: str) -> float:
    """The one sample named ``name`` (``..._total``, ``..._count``) whose labels include ``labels``."""
    (found,) = [
        sample.value
        for family in families.values()
        for sample in family.samples
        if sample.name == name
        and all(sample.labels.get(key) == wanted for key, wanted in labels.items())
    ]
    return found


class Seen:
    """Every sample of every scrape: label sets per series and the last value of each."""

    def __init__(self) -> None:
        self.label_sets: dict[tuple[str, str, str, str], set[Labels]] = defaultdict(set)
        self.values: dict[tuple[str, str, Labels], float] = {}
        self.decreased: list[tuple[str, str, Labels, float, float]] = []
        self.members: dict[tuple[str, str], set[str]] = {}  # (agent, family) -> members, last

    def add(self, agent: str, families: dict[str, Metric]) -> None:
        """Note one scrape of ``agent``."""
        for family in families.values():
            if family.name not in TRACKED:
                continue
            members = set()
            for sample in family.samples:
                labels: Labels = frozenset(sample.labels.items())
                member = sample.labels.get("member_id", "")  # '' on grstats_group_info
                state = sample.labels.get("state", "")
                members.add(member)
                self.label_sets[(agent, family.name, member, state)].add(labels)
                before = self.values.get((agent, sample.name, labels))
                if family.type == "counter" and before is not None and sample.value < before:
                    self.decreased.append((agent, sample.name, labels, before, sample.value))
                self.values[(agent, sample.name, labels)] = sample.value
            self.members[(agent, family.name)] = members


async def scrape_all(group: Group, seen: Seen, rounds: int) -> None:
    """Run ``rounds`` periods, scraping every agent after each."""
    for _ in range(rounds):
        await group.rounds(1)
        for agent in group.agents:
            seen.add(agent.address, rendered(agent))


async def test_one_label_set_per_member_while_relay_paths_change() -> None:
    """Links cut and healed, an agent silenced: each member keeps one label set per metric."""
    group = await start_group(4, memory=True)
    export_everything(*group.agents)
    network = group.network
    assert network is not None
    a, b, c, d = (agent.address for agent in group.agents)
    seen = Seen()
    try:
        await scrape_all(group, seen, 3)
        everyone = {agent.member_id for agent in group.agents}
        network.cut(a, c)  # c's rows reach a through b or d, and a's reach c likewise
        await scrape_all(group, seen, 4)
        network.heal(a, c)
        network.cut(a, b)
        network.cut(c, d)
        await scrape_all(group, seen, 4)
        network.heal(a, b)
        network.heal(c, d)
        for other in (a, b, c):  # d's agent falls silent: its member stays, agent_up 0
            network.cut(d, other)
        await scrape_all(group, seen, 12)
        silent = group.agents[3].member_id
        for agent in group.agents[:3]:
            families = rendered(agent)
            assert value(families, "grstats_agent_up", member_id=silent) == 0.0
            for name in ALWAYS:
                assert seen.members[(agent.address, name)] == everyone, (agent.address, name)
        for other in (a, b, c):
            network.heal(d, other)
        await scrape_all(group, seen, 3)
        assert value(rendered(group.agents[0]), "grstats_agent_up", member_id=silent) == 1.0
    finally:
        for agent in group.agents:
            await agent.stop(grace_s=0)
    changed = {key: sets for key, sets in seen.label_sets.items() if len(sets) > 1}
    assert {key[1] for key in changed} == {MOVING}  # only the relay path's own series moves
    for agent in group.agents:  # the info gauges: one label set per member (and group) each
        for member in everyone:
            assert len(seen.label_sets[(agent.address, "grstats_member_info", member, "")]) == 1
        assert len(seen.label_sets[(agent.address, "grstats_group_info", "", "")]) == 1
    sources = {
        dict(labels)["source"]
        for labels in seen.label_sets[(a, MOVING, group.agents[2].member_id, "")]
    }
    assert len(sources) > 1, sources  # the path did change: the test can see a moving label
    assert seen.decreased == []
    for agent in group.agents:
        for name in ALWAYS:
            assert seen.members[(agent.address, name)] == everyone


async def test_no_member_or_group_series_while_the_group_is_unknown() -> None:
    """Out of any group: only the agent's own health; once in one, group_name is never empty."""
    clock = Clock()
    simulated = SimulatedSource(
        load_scenario("steady").with_members(3), 0, seed=1, group_start_s=START_S, clock=clock.s
    )
    joined: MemberSnapshot = await simulated.read()
    alone = dataclasses.replace(joined, view=GroupView())
    shown = [alone]
    address = "agent-0:7400"
    agent = Agent(
        settings(advertise=address, peers=(address,)),
        MemorySource(lambda: shown[0]),
        transport=MemoryNetwork().transport(address),
        clock=clock.us,
    )
    await _start_without_loop(agent)
    try:
        for _ in range(2):
            clock.seconds += 1
            await agent.run_period()
            families = rendered(agent)
            served = {name for name, family in families.items() if family.samples}
            assert not served & (MEMBER_SERIES | GROUP_SERIES)
            assert all("group_name" not in s.labels for f in families.values() for s in f.samples)
            assert value(families, "grstats_source_up") == 1.0
            assert value(families, "grstats_peers_heard") == 0.0
        shown[0] = joined
        clock.seconds += 1
        await agent.run_period()
        families = rendered(agent)
        names = {
            sample.labels["group_name"]
            for family in families.values()
            for sample in family.samples
            if "group_name" in sample.labels
        }
        assert names == {joined.view.group_name}
        assert joined.view.group_name
        assert value(families, "grstats_agent_up", member_id=agent.member_id) == 1.0
    finally:
        await agent.stop(grace_s=0)
