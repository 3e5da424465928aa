"""Prometheus /metrics: every member's rows from any agent, and the agent's own figures."""

from __future__ import annotations

import asyncio
import dataclasses
import urllib.request
from typing import TYPE_CHECKING

import pytest
from prometheus_client.parser import text_string_to_metric_families

from grstats.agent.metrics import MEMBER_STATES
from grstats.agent.metrics_scope import ALL, MetricsConfig
from grstats.agent.metrics_series import STATS_COUNTERS, STATS_GAUGES
from grstats.core.errors import ConfigError
from grstats.core.rows import STATUSES
from tests.agent.test_config import agent as agent_config
from tests.agent.test_runtime import _start_without_loop, start_group, stats

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from typing import Any

    from prometheus_client import Metric

    from grstats.agent.runtime import Agent
    from grstats.core.model import MemberSnapshot
    from tests.agent.test_runtime import Group


#: Every series of a member: labelled group_name and member_id only (and state on the state set).
MEMBER_SERIES = frozenset(
    {
        "grstats_agent_up",
        "grstats_member_in_view",
        "grstats_member_state",
        "grstats_member_primary",
        "grstats_row_age_seconds",
        "grstats_applier_lag_seconds",
        "grstats_member_transactions_behind",
        "grstats_member_throttling",
        "grstats_member_clock_skew_seconds",
        "grstats_member_errant_transactions",
        "grstats_member_split_brain",
        "grstats_member_view_disagreements",
        *(name for name, _ in STATS_COUNTERS.values()),
        *(name for name, _ in STATS_GAUGES.values()),
    }
)


@pytest.fixture(name="group")
async def _group(request: pytest.FixtureRequest) -> AsyncIterator[Group]:
    """Three agents (or ``request.param``); the last serves every member's /metrics on a free port."""
    members: int = getattr(request, "param", 3)
    group = await start_group(members, started=members - 1)
    last = group.agents[-1]
    last.config = dataclasses.replace(
        last.config, metrics_listen="127.0.0.1:0", metrics=MetricsConfig(scope=ALL)
    )
    await _start_without_loop(last)
    addresses = tuple(agent.address for agent in group.agents)  # the last's port is known now
    for agent in group.agents:
        agent.config = dataclasses.replace(agent.config, peers=addresses)
    yield group
    for agent in group.agents:
        await agent.stop(grace_s=0)


async def scrape(address: str) -> dict[str, Metric]:
    """GET /metrics (off the event loop, which builds the tables) and parse it by family."""

    def get() -> str:
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as answer:
            return str(answer.read().decode("utf-8"))

    text = await asyncio.to_thread(get)
    return {family.name: family for family in text_string_to_metric_families(text)}


def by_member(family: Metric, **labels: str) -> dict[str, float]:
    """The family's sample values by member_id, among samples with ``labels``."""
    return {
        sample.labels["member_id"]: sample.value
        for sample in family.samples
        if all(sample.labels.get(key) == value for key, value in labels.items())
        and not sample.name.endswith("_created")
    }


async def test_every_members_counters_and_gauges(group: Group) -> None:
    """Any agent exposes all members' stats with MySQL's values; counters and gauges typed right."""
    await group.rounds(2)
    scraped = group.agents[2]
    assert scraped.metrics_address is not None
    families = await scrape(scraped.metrics_address)
    rows = stats(scraped)
    checked = families["grstats_transactions_checked"]
    assert checked.type == "counter"
    assert by_member(checked) == {
        m: float(r["COUNT_TRANSACTIONS_CHECKED"]) for m, r in rows.items()
    }
    validating = families["grstats_certification_rows"]
    assert validating.type == "gauge"  # not a counter: GC shrinks it
    assert by_member(validating) == {
        m: float(r["COUNT_TRANSACTIONS_ROWS_VALIDATING"]) for m, r in rows.items()
    }
    assert families["grstats_applier_queue_transactions"].type == "gauge"
    assert by_member(families["grstats_agent_up"]) == dict.fromkeys(rows, 1.0)
    online = by_member(families["grstats_member_state"], state="ONLINE")
    assert online == dict.fromkeys(rows, 1.0)
    states = {s.labels["state"] for s in families["grstats_member_state"].samples}
    assert states == set(MEMBER_STATES)
    group_name = served_rows(scraped, "replication_group_status")[0]["GROUP_NAME"]
    assert group_name
    assert {(s.labels["group_name"], s.labels["member_id"]) for s in checked.samples} == {
        (group_name, m) for m in rows
    }
    assert set(families) >= MEMBER_SERIES
    for family in families.values():
        if family.name in MEMBER_SERIES:
            state = {"state"} if family.name == "grstats_member_state" else set()
            expected = {"group_name", "member_id", *state}
            assert all(set(s.labels) == expected for s in family.samples), family.name
    info = families["grstats_member_info"]
    assert info.type == "gauge"
    assert {s.value for s in info.samples} == {1.0}
    members = {row["MEMBER_ID"]: row for row in served_rows(scraped, "replication_group_members")}
    assert {s.labels["member_id"] for s in info.samples} == set(members)
    for sample in info.samples:  # no role (it flips on failover) and no source (the relay path)
        row = members[sample.labels["member_id"]]
        assert sample.labels == {
            "group_name": group_name,
            "member_id": row["MEMBER_ID"],
            "member_host": row["MEMBER_HOST"],
            "member_port": str(row["MEMBER_PORT"]),
            "member_version": row["MEMBER_VERSION"],
        }
    source = families["grstats_member_source_info"]
    assert source.type == "gauge"
    assert {s.value for s in source.samples} == {1.0}
    assert all(set(s.labels) == {"group_name", "member_id", "source"} for s in source.samples)
    sources = {s.labels["member_id"]: s.labels["source"] for s in source.samples}
    assert sources[scraped.member_id] == "local"
    assert {sources[a.member_id] for a in group.agents[:2]} == {a.address for a in group.agents[:2]}
    primary = by_member(families["grstats_member_primary"])
    assert primary == {m: float(row["MEMBER_ROLE"] == "PRIMARY") for m, row in members.items()}


async def test_agent_up_stays_at_zero_for_a_silent_agent(group: Group) -> None:
    """A member whose agent falls silent keeps its series, with grstats_agent_up at 0."""
    await group.rounds(2)
    silent = group.agents[0]
    for transport in group.transports[1:]:
        transport.broken.add(silent.address)
    group.transports[0].broken.update(agent.address for agent in group.agents[1:])
    await group.rounds(11)
    families = await scrape(group.agents[2].metrics_address or "")
    up = by_member(families["grstats_agent_up"])
    assert up[silent.member_id] == 0.0
    assert up[group.agents[1].member_id] == 1.0
    assert silent.member_id in by_member(families["grstats_transactions_checked"])


async def test_the_agents_own_figures(group: Group) -> None:
    """Messages and bytes per kind, exchange round trips, and failures per peer are counted."""
    await group.rounds(3)
    group.transports[2].broken.add(group.agents[0].address)
    await group.rounds(1)
    families = await scrape(group.agents[2].metrics_address or "")
    sent = families["grstats_gossip_messages_sent"]
    pushes = {s.labels["kind"]: s.value for s in sent.samples if s.name.endswith("_total")}
    assert set(sent.samples[0].labels) == {"kind"}  # per kind, not per peer (issue 46)
    assert pushes["push"] == 4.0 + 3.0  # one per period to each peer: the 4th to one failed
    assert pushes["exchange"] >= 3  # one exchange per period
    received = families["grstats_gossip_messages_received"]
    senders = {
        (s.labels["kind"], s.labels["sender"]): s.value
        for s in received.samples
        if s.name.endswith("_total")
    }
    assert senders[("push", "known")] >= 6  # from both peers, every period but the first
    errors = families["grstats_gossip_errors"]
    failed = {
        (s.labels["peer"], s.labels["kind"]): s.value
        for s in errors.samples
        if s.name.endswith("_total")
    }
    assert failed == {(group.agents[0].address, "push"): 1.0}
    trips = families["grstats_peer_round_trip_seconds"]
    assert trips.type == "summary"  # its sum and count, of every peer's exchanges
    (count,) = [s.value for s in trips.samples if s.name.endswith("_count")]
    assert count >= 3


async def test_messages_from_an_unknown_member_are_counted_apart(group: Group) -> None:
    """A message from a member the agent does not know counts under sender unknown."""
    metrics = group.agents[2].metrics
    metrics.received("unknown", "push", 100)
    metrics.received(group.agents[0].member_id, "push", 50)
    families = await scrape(group.agents[2].metrics_address or "")
    received = {
        s.labels["sender"]: s.value
        for s in families["grstats_gossip_bytes_received"].samples
        if s.name.endswith("_total") and s.labels["kind"] == "push"
    }
    assert received == {"unknown": 100.0, "known": 50.0}


def served_rows(agent: Agent, table: str) -> list[dict[str, Any]]:
    """The rows of ``table`` as the agent serves them (extended), as dicts by column name."""
    columns, rows = agent.tables(extended=True)[table]
    return [{c.name: v for c, v in zip(columns, row, strict=True)} for row in rows]


@pytest.mark.parametrize(
    ("group", "expected"), [(3, ("OK", 1.0)), (2, ("OK_NO_TOLERANCE", 0.0))], indirect=["group"]
)
async def test_the_groups_status_and_tolerance(group: Group, expected: tuple[str, float]) -> None:
    """grstats_group_status is 1 for the served STATUS only; grstats_group_tolerance is TOLERANCE."""
    await group.rounds(2)
    scraped = group.agents[-1]
    families = await scrape(scraped.metrics_address or "")
    (served,) = served_rows(scraped, "replication_group_status")
    status = families["grstats_group_status"]
    assert status.type == "gauge"
    values = {sample.labels["status"]: sample.value for sample in status.samples}
    assert values == {name: float(name == served["STATUS"]) for name in STATUSES}
    assert [name for name, value in values.items() if value == 1.0] == [expected[0]]
    tolerance = families["grstats_group_tolerance"]
    assert tolerance.type == "gauge"
    assert [sample.value for sample in tolerance.samples] == [float(served["TOLERANCE"])]
    assert tolerance.samples[0].value == expected[1]
    assert tolerance.samples[0].labels == {"group_name": served["GROUP_NAME"]}


async def test_transactions_behind_per_member(
    group: Group, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each member's TRANSACTIONS_BEHIND, labelled by member only; no series where it is NULL."""
    for agent, count in zip(group.agents, (7, None, 0), strict=True):
        source = agent.member._source
        read = source.read

        async def read_behind(read: Any = read, count: int | None = count) -> MemberSnapshot:
            snapshot: MemberSnapshot = await read()
            return dataclasses.replace(snapshot, transactions_behind=count)

        monkeypatch.setattr(source, "read", read_behind)
    await group.rounds(2)
    scraped = group.agents[2]
    families = await scrape(scraped.metrics_address or "")
    behind = families["grstats_member_transactions_behind"]
    assert behind.type == "gauge"
    assert all(set(sample.labels) == {"group_name", "member_id"} for sample in behind.samples)
    first, third = group.agents[0].member_id, scraped.member_id  # by gossip, and local
    assert by_member(behind) == {first: 7.0, third: 0.0}
    served = {
        row["MEMBER_ID"]: row["TRANSACTIONS_BEHIND"]
        for row in served_rows(scraped, "replication_group_member_status")
    }
    assert served == {first: 7, group.agents[1].member_id: None, third: 0}


def test_metrics_listen_is_validated() -> None:
    """A metrics_listen that is not host:port is refused, naming the key; unset serves none."""
    assert agent_config().metrics_listen is None
    assert agent_config(metrics_listen="127.0.0.1:0").metrics_listen == "127.0.0.1:0"
    with pytest.raises(ConfigError, match=r"^metrics_listen: "):
        agent_config(metrics_listen="nope")
