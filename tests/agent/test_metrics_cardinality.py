"""The fleet's series stay few: every agent of a 9-member group scraped (issue 46, point 3).

A Prometheus that scrapes every agent of a group keeps each distinct name and label set of each
agent's /metrics as one series, the agent's ``instance`` added, so the fleet's series are the
sum over the agents of each one's distinct series: :func:`cardinality` counts them so, every
series served (the members', the group's and the agent's own). A group has at most 9 members
(MySQL refuses a 10th to join: ``Plugin_gcs_events_handler::check_group_compatibility`` in
plugin/group_replication/src/gcs_event_handlers.cc), where the series per member are the most.
The agents run over gRPC on 127.0.0.1 with simulated members and serve /metrics over HTTP.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from grstats.agent.metrics_http import serve_metrics
from grstats.agent.metrics_scope import ALL, MetricsConfig
from tests.agent.test_metrics import scrape
from tests.agent.test_runtime import start_group, stop_all

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable

    from prometheus_client import Metric

    from tests.agent.test_runtime import Group

#: The most members of a group.
MEMBERS = 9
#: Issue 46: at most this many series per member, fleet-wide, every agent scraped.
MOST_PER_MEMBER = 60
#: README's "Cardinality", scope own: the series of each member, at most (the three lag stages
#: are absent while unknown); of each group; and of each agent's own health and figures.
MEMBER_SERIES = 29
GROUP_SERIES = 13
AGENT_SERIES = 25


@dataclass(frozen=True, slots=True)
class Cardinality:
    """The series a Prometheus scraping every agent keeps, by whose they are.

    Attributes:
        members: each member's series (labelled group_name and member_id), summed over agents.
        group: the group's series (group_name, no member_id), summed over agents.
        agents: each agent's own series (no group_name), one count per agent.
    """

    members: Counter[str]
    group: int
    agents: tuple[int, ...]

    @property
    def fleet(self) -> int:
        """Every series kept: each agent's, summed over the agents."""
        return sum(self.members.values()) + self.group + sum(self.agents)


def cardinality(scrapes: Iterable[dict[str, Metric]]) -> Cardinality:
    """Count the distinct series (sample name and labels) of each agent's scrape, then sum."""
    members: Counter[str] = Counter()
    group = 0
    agents: list[int] = []
    for families in scrapes:
        found = {
            (sample.name, tuple(sorted(sample.labels.items())))
            for family in families.values()
            for sample in family.samples
        }
        own = 0
        for _, labels in found:
            named = dict(labels)
            if "group_name" not in named:
                own += 1
            elif "member_id" in named:
                members[named["member_id"]] += 1
            else:
                group += 1
        agents.append(own)
    return Cardinality(members, group, tuple(agents))


@pytest.fixture(name="fleet")
async def _fleet() -> AsyncIterator[tuple[Group, list[str]]]:
    """Nine agents over gRPC, each serving /metrics on a free port (the group, the addresses)."""
    group = await start_group(MEMBERS)
    servers = [serve_metrics(agent.metrics, "127.0.0.1", 0) for agent in group.agents]
    await group.rounds(2 * MEMBERS)  # every agent heard and exchanged with (peers in turn)
    yield group, [f"127.0.0.1:{port}" for _, _, port in servers]
    for server, _, _ in servers:
        await asyncio.to_thread(server.shutdown)
        server.server_close()
    await stop_all(group)


async def scrape_all(addresses: Iterable[str]) -> Cardinality:
    """Scrape every agent's /metrics and count the fleet's series."""
    return cardinality([await scrape(address) for address in addresses])


async def test_every_agent_scraped_keeps_at_most_60_series_per_member(
    fleet: tuple[Group, list[str]],
) -> None:
    """Scope own: at most 60 series per member fleet-wide; each member's and the group's once."""
    group, addresses = fleet
    found = await scrape_all(addresses)
    assert len(found.members) == MEMBERS  # every member's series, from its own agent
    assert max(found.members.values()) == MEMBER_SERIES
    assert found.group == GROUP_SERIES
    assert set(found.agents) == {AGENT_SERIES}
    assert found.fleet / MEMBERS <= MOST_PER_MEMBER, found
    for agent in group.agents:  # scope all: every agent exports every member and the group
        agent.config = dataclasses.replace(agent.config, metrics=MetricsConfig(scope=ALL))
    everywhere = await scrape_all(addresses)
    assert everywhere.members == Counter({m: n * MEMBERS for m, n in found.members.items()})
    assert everywhere.group == GROUP_SERIES * MEMBERS
    # and each agent its own member's build and its 8 peers'
    assert set(everywhere.agents) == {AGENT_SERIES + MEMBERS - 1}
