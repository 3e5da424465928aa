"""The group's name in records: the operator's label when given, else the one the agents answer."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
import structlog

from grstats.cli import build_parser
from grstats.cli.collector import settings_from
from grstats.collector.collect import Limits, collect
from grstats.collector.metrics import CollectorMetrics
from grstats.collector.poller import DEFAULT_GROUP_LABEL, Fleet, Poller, PollerSettings
from grstats.collector.records import TABLE_NAMES, decode, encode, record_from_response
from grstats.collector.spool import SpoolWriter, read_segment, sealed_segments
from grstats.core.errors import ConfigError
from grstats.core.query_wire import table_to_wire
from grstats.core.rows import TABLES
from grstats.proto import grstats_pb2 as pb
from tests.agent.test_runtime import Group, start_group

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from grstats.collector.records import Record


def answer(group_label: str) -> pb.QueryResponse:
    """An agent's answer of the four tables (no rows) naming the group ``group_label``."""
    return pb.QueryResponse(
        tables=[table_to_wire(name, list(TABLES[name].columns), []) for name in TABLE_NAMES],
        agent="db1:7400",
        served_at_us=5,
        group_name="8a84f397-aaaa-bbbb-cccc-000000000001",
        group_label=group_label,
    )


def record_of(response: pb.QueryResponse, group_label: str | None = None) -> Record:
    """The record of ``response``, given the collector's ``group_label`` (None: none given)."""
    return record_from_response(
        response, agent="db1:7400", collected_at_us=1, group_label=group_label
    )


class TestRecord:
    def test_the_agents_label_names_a_group_the_operator_did_not(self) -> None:
        """Without a collector label (--node), the record takes the label the agent answers."""
        record = record_of(answer("orders"))
        assert (record["group_label"], record["agent_group_label"]) == ("orders", "orders")
        assert decode(encode(record)) == record

    def test_the_operators_label_wins(self) -> None:
        """With a collector label (--group sales=...), the record keeps it; the agent's is beside."""
        record = record_of(answer("orders"), "sales")
        assert (record["group_label"], record["agent_group_label"]) == ("sales", "orders")

    def test_no_label_anywhere_is_default(self) -> None:
        """An agent that answers no label leaves the group of --node named default."""
        record = record_of(answer(""))
        assert (record["group_label"], record["agent_group_label"]) == (DEFAULT_GROUP_LABEL, "")
        assert record_of(answer(""), "sales")["group_label"] == "sales"

    @pytest.mark.parametrize("odd", [" orders", "a\tb", "x" * 64])
    def test_an_answer_that_is_not_a_label_names_nothing(self, odd: str) -> None:
        """A label the agents' rules refuse (spaced, not printable, too long) leaves default."""
        record = record_of(answer(odd))
        assert (record["group_label"], record["agent_group_label"]) == (DEFAULT_GROUP_LABEL, odd)

    def test_agent_names_a_label_of_its_own_rules(self) -> None:
        """Any label the agents accept names the group, spaces and non-ASCII letters too."""
        assert record_of(answer("Orders EU (é)"))["group_label"] == "Orders EU (é)"


class TestSettings:
    def test_node_gives_no_label_and_metrics_default(self, tmp_path: Path) -> None:
        """--node: no label given, so records take the agents'; its label in metrics is default."""
        args = build_parser().parse_args(
            ["collect", "--node", "db1:7400", "--spool", str(tmp_path)]
        )
        fleet, _, _ = settings_from(args)
        (group,) = fleet.groups
        assert (group.group_label, group.label) == (None, DEFAULT_GROUP_LABEL)

    def test_group_gives_its_label(self, tmp_path: Path) -> None:
        """--group sales=...: the label is given, and names the records and the metrics."""
        args = build_parser().parse_args(
            ["collect", "--group", "sales=db1:7400", "--spool", str(tmp_path)]
        )
        fleet, _, _ = settings_from(args)
        (group,) = fleet.groups
        assert (group.group_label, group.label) == ("sales", "sales")

    def test_two_unnamed_groups_are_both_default(self) -> None:
        """Two groups without a label share the label default, which a fleet refuses."""
        with pytest.raises(ConfigError, match="group_label: 'default' names two groups"):
            Fleet((PollerSettings(("h:1",)), PollerSettings(("h:2",))))


@pytest.fixture(name="group")
async def _group() -> AsyncIterator[Group]:
    group = await start_group(3)
    await group.rounds(2)
    yield group
    for agent in group.agents:
        await agent.stop(grace_s=0)


def labelled(poller: Poller, label: str, monkeypatch: pytest.MonkeyPatch) -> Poller:
    """``poller`` whose agents answer the group label ``label`` (as with group_label = label)."""
    read = poller._read

    async def read_labelled(node: str) -> pb.QueryResponse:
        response = await read(node)
        response.group_label = label
        return response

    monkeypatch.setattr(poller, "_read", read_labelled)
    return poller


async def collect_one(
    tmp_path: Path, poller: Poller, metrics: CollectorMetrics
) -> tuple[list[Record], str]:
    """Collect two snapshots of ``poller``'s group; return the records and the progress' label."""
    try:
        with SpoolWriter(tmp_path / "spool") as writer:
            progress = await collect(
                [poller],
                writer,
                asyncio.Event(),
                limits=Limits(count=2),
                logger=structlog.get_logger(),
                metrics=metrics,
            )
    finally:
        await poller.aclose()
    (key,) = progress.groups
    assert progress.groups[key].snapshots == 2
    records = [r for path in sealed_segments(tmp_path / "spool") for r in read_segment(path)]
    return records, f"{key}:{progress.groups[key].group_label}"


def snapshots(metrics: CollectorMetrics, label: str) -> float | None:
    """The collector's count of snapshots of the group ``label`` (None: no such series)."""
    return metrics.registry.get_sample_value(
        "grstats_collector_snapshots_total", {"group_label": label}
    )


async def test_node_records_take_the_agents_label_metrics_keep_default(
    group: Group, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--node: records are named by the agents' label; metrics and progress keys stay default."""
    nodes = (group.agents[0].address,)
    poller = labelled(Poller(PollerSettings(nodes, timeout_s=1.5)), "orders", monkeypatch)
    metrics = CollectorMetrics(tmp_path)
    records, progress = await collect_one(tmp_path, poller, metrics)
    assert [(r["group_label"], r["agent_group_label"]) for r in records] == [
        ("orders", "orders")
    ] * 2
    assert progress == "default:orders"
    assert snapshots(metrics, "default") == 2
    assert snapshots(metrics, "orders") is None


async def test_group_records_keep_the_operators_label(
    group: Group, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--group sales=...: records, metrics and progress are all sales; the agent's label beside."""
    settings = PollerSettings((group.agents[1].address,), timeout_s=1.5, group_label="sales")
    poller = labelled(Poller(settings), "orders", monkeypatch)
    metrics = CollectorMetrics(tmp_path)
    records, progress = await collect_one(tmp_path, poller, metrics)
    assert [(r["group_label"], r["agent_group_label"]) for r in records] == [
        ("sales", "orders")
    ] * 2
    assert progress == "sales:sales"
    assert snapshots(metrics, "sales") == 2
