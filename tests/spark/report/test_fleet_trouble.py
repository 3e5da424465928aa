"""The fleet overview shows trouble first: ERROR, then unseen time, switchovers, then lag.

Five groups made by the report's model from hand-made rows (tests/spark/report/fleet_model.py,
no Spark), one primary failover's events served by in-memory agents on the simulator
(tests/spark/report/test_event_tables.py's harness).
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING

import pytest

from grstats.agent.sim.scenario import load_scenario
from grstats.spark.report.fleet import OVERVIEW_ORDER, ranked, render_fleet, trouble
from tests.spark.report.fleet_model import (
    BLIND,
    ERRANT,
    EVERY_S,
    ORDER,
    RANGE_S,
    five_groups,
)
from tests.spark.report.test_event_tables import _failover_of

if TYPE_CHECKING:
    from tests.spark.report.fleet_model import Group


@pytest.fixture(name="fleet", scope="module")
def _fleet() -> dict[str, Group]:
    return five_groups(_failover_of(load_scenario("primary-failover"), 45, 100).events)


def _overview(fleet: dict[str, Group]) -> list[dict[str, str]]:
    """The overview's rows as rendered: each cell's text by its column's heading."""
    page = render_fleet(
        "Fleet",
        "from 2026-01-05T12:00:00Z",
        [fleet[label].entry for label in sorted(fleet)],
        {label: group.page for label, group in fleet.items()},
    )
    overview = page[page.index("Fleet overview") : page.index("<section")]
    assert html.escape(OVERVIEW_ORDER) in overview
    rows = re.findall(r"<tr>(.*?)</tr>", overview)
    header = [
        html.unescape(h).replace("\N{NO-BREAK SPACE}", " ")
        for h in re.findall(r"<th[^>]*>(.*?)</th>", rows[0])
    ]
    found = []
    for row in rows[1:]:
        cells = re.findall(r"<td([^>]*)>(.*?)</td>", row)
        text = [
            re.sub(r"<[^>]+>", "", content) + (" !" if "bad" in at else "") for at, content in cells
        ]
        found.append(dict(zip(header, text, strict=True)))
    return found


def test_a_group_whose_agent_was_down_for_minutes_ranks_above_a_clean_one(
    fleet: dict[str, Group],
) -> None:
    """7 min 40 s without one agent outranks a clean group, although the clean one lags more."""
    blind, clean = fleet["blind"].entry, fleet["clean"].entry
    assert trouble(blind).not_connected_s == len(BLIND)
    assert blind["not_online_s"] == 0.0  # the down agent's member's last rows said ONLINE
    assert clean["group"]["lag_seconds_max"] > blind["group"]["lag_seconds_max"]
    for given in ([clean, blind], [blind, clean]):
        assert [entry["group_label"] for entry in ranked(given)] == ["blind", "clean"]


def test_error_then_unseen_time_then_switchovers_then_lag(fleet: dict[str, Group]) -> None:
    """Each group's one trouble, from its own summary, ranks it: ERROR first, clean last."""
    found = {label: trouble(group.entry) for label, group in fleet.items()}
    assert found["errant"].error_s == len(ERRANT)
    assert found["blind"].not_connected_s == len(BLIND)
    assert found["orders"].switchovers == 1
    assert found["laggy"].lag_seconds_max == 3.0
    for label, figures in found.items():
        troubles = {
            "errant": figures.error_s,
            "blind": figures.not_connected_s + figures.unreachable_s,
            "orders": figures.switchovers,
        }
        assert [name for name, value in troubles.items() if value] == (
            [label] if label in troubles else []
        ), label
    entries = [fleet[label].entry for label in sorted(fleet)]
    assert [entry["group_label"] for entry in ranked(entries)] == list(ORDER)
    assert [entry["group_label"] for entry in ranked(entries[::-1])] == list(ORDER)


def test_the_overview_shows_each_groups_trouble_in_rank_order(fleet: dict[str, Group]) -> None:
    """The page's overview lists the groups in rank order, each trouble marked in its column."""
    rows = _overview(fleet)
    labels = [row["group"].split(" (page)")[0] for row in rows]
    assert labels == list(ORDER)
    by_group = dict(zip(labels, rows, strict=True))
    assert by_group["errant"]["ERROR s"] == f"{len(ERRANT):.1f} !"
    assert by_group["blind"]["not connected s"] == f"{len(BLIND):.1f} !"
    assert by_group["orders"]["switchovers"] == "1 !"
    assert by_group["laggy"]["lag max s"] == "3.000"
    assert by_group["clean"]["lag max s"] == "0.500"
    for column in ("ERROR s", "not connected s", "UNREACHABLE s", "switchovers"):
        assert by_group["clean"][column] in {"0.0", "0"}, column
    name = fleet["blind"].entry["group_name"]
    assert by_group["blind"]["group"].endswith(f"{name}; 3 members, {RANGE_S // EVERY_S} snapshots")
