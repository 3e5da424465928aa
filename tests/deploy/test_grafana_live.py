"""A real Prometheus answers every query of both Grafana dashboards, for two simulated groups.

Two simulated groups of 3 members, one ``grstats agent`` per member (period 1 s), every agent
scraped every second in job ``grstats`` by a ``prometheus`` process that loads
deploy/prometheus/grstats.rules.yml (as tests/deploy/test_prometheus_live.py runs them):

* ``orders, eu-west`` (``--group-label``; a comma and a space, as a label may have), scenario
  ``steady``: every member ONLINE, no lag, no flow control;
* a group with no label, scenario SCENARIO: member 1 applies too slowly, so it lags and flow
  control throttles the primary; member 2 crashes 10 s in and is expelled (OFFLINE) at 20 s.

The fleet dashboard (grstats-fleet.json) must name both groups, give each its own row and
values, and link each row to the group dashboard (grstats.json) with a ``var-group`` that its
selector offers; the group dashboard's selector must show the label, or the UUID for the group
with none, and every query of it must answer for either group. Grafana's variable and query
handling is restated in tests.deploy.grafana.
"""

from __future__ import annotations

import sys
import time
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from grstats.cli.demo import free_ports
from tests.deploy.grafana import (
    GRAFANA,
    Option,
    Target,
    expand,
    load,
    references,
    targets,
    variable_options,
    variables,
)
from tests.deploy.test_prometheus_live import (
    RATE_INTERVAL,
    Stack,
    ready,
    shortened_rules,
    start,
    stop,
)
from tests.programs import require
from tests.waiting import wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("grafana-live")]

FLEET = GRAFANA / "grstats-fleet.json"
GROUP = GRAFANA / "grstats.json"
MEMBERS = 3
#: How long the stack may take to have every member's rates recorded.
START_TIMEOUT_S = 45.0
#: SCENARIO expels member 2 20 s after the group starts; a verdict, a scrape and a rule follow.
CRASH_TIMEOUT_S = 60.0
#: What the tests give Grafana's time range macros: the last minute.
RANGE_S = 60
#: The share of the group dashboard's queries that must return data for each group.
MIN_WITH_DATA = 0.8
#: The fleet table's status column: the group dashboard's rank of each status.
STATUS_RANK = {"UNKNOWN": 1, "OK": 2, "OK_PARTIAL": 3, "OK_NO_TOLERANCE": 4}
#: The unlabelled group's scenario: a slow member 1 (lag, flow control), member 2 crashing.
SCENARIO = """\
name = "grafana-fleet"
description = "Member 1 applies 300 of 500 tps: it lags and flow control throttles the primary; member 2 crashes at 10 s."
mode = "single-primary"
members = 3

[workload]
rate_tps = 500

[appliers]
capacity_tps = 4000
capacity_overrides = { 1 = 300 }

[flow_control]
applier_threshold = 200

[[events]]
at = 10
action = "crash"
member = 2
"""
AGENT_CONFIG = """\
source = "simulated"
period_s = 1
silence_periods = 2
log_format = "json"

[simulated]
scenario = "{scenario}"
members = {members}
seed = {seed}
"""


@dataclass(frozen=True)
class FleetGroup:
    """One simulated group of the fleet."""

    label: str
    scenario: str  # a built-in scenario, or SCENARIO's file when ''
    seed: int


@dataclass(frozen=True)
class Fleet:
    """The running stack, and the UUID (group_name) of each group."""

    stack: Stack
    labelled: str
    unlabelled: str


LABELLED = FleetGroup("orders, eu-west", "steady", 11)
UNLABELLED = FleetGroup("", "", 12)
GROUPS = (LABELLED, UNLABELLED)


@pytest.fixture(name="fleet", scope="module")
def _fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """The agents of both groups, and Prometheus scraping every one of them."""
    prometheus = require("prometheus", "prometheus")
    workdir = tmp_path_factory.mktemp("grafana-live")
    ports = free_ports(2 * MEMBERS * len(GROUPS) + 1)
    web = f"127.0.0.1:{ports.pop()}"
    metrics: list[str] = []
    scenario = workdir / "grafana-fleet.toml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    processes: list[Any] = []
    group_start = str(int(time.time()))
    try:
        for number, group in enumerate(GROUPS):
            gossip = [f"127.0.0.1:{ports.pop()}" for _ in range(MEMBERS)]
            config = workdir / f"group-{number}.toml"
            config.write_text(
                AGENT_CONFIG.format(
                    scenario=group.scenario or scenario, members=MEMBERS, seed=group.seed
                ),
                encoding="utf-8",
            )
            label = ("--group-label", group.label) if group.label else ()
            for index in range(MEMBERS):
                address = f"127.0.0.1:{ports.pop()}"
                metrics.append(address)
                processes.append(
                    start(
                        [
                            *(sys.executable, "-m", "grstats", "agent", "--config", str(config)),
                            *("--member-index", str(index), "--group-start", group_start),
                            *("--listen", gossip[index], "--peers", ",".join(gossip)),
                            *("--state-dir", str(workdir / f"state-{number}-{index}")),
                            *("--metrics-listen", address, *label),
                        ],
                        workdir / f"agent-{number}-{index}.log",
                    )
                )
        scrape = {
            "global": {
                "scrape_interval": "1s",
                "scrape_timeout": "1s",
                "evaluation_interval": "1s",
            },
            "rule_files": [str(shortened_rules(workdir))],
            "scrape_configs": [{"job_name": "grstats", "static_configs": [{"targets": metrics}]}],
        }
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(scrape), encoding="utf-8")
        processes.append(
            start(
                [
                    prometheus,
                    *("--config.file", "prometheus.yml", "--storage.tsdb.path", "data"),
                    *("--web.listen-address", web, "--log.level", "warn"),
                ],
                workdir / "prometheus.log",
                cwd=workdir,
            )
        )
        stack = Stack(f"http://{web}", tuple(processes[:-1]), tuple(metrics), workdir)
        wait_until(lambda: ready(stack, processes), 20, "Prometheus is ready", detail=stack.logs)
        wait_until(
            lambda: scraped(stack),
            START_TIMEOUT_S,
            "every agent is up and scraped 3 times, both groups named and judged",
            detail=stack.logs,
        )
        agents = {
            group: "|".join(metrics[number * MEMBERS : (number + 1) * MEMBERS])
            for number, group in enumerate(GROUPS)
        }
        uuids = {
            group: stack.query(f'max by (group_name) (grstats_group_info{{instance=~"{pattern}"}})')
            for group, pattern in agents.items()
        }
        assert all(len(found) == 1 for found in uuids.values()), uuids
        yield Fleet(
            stack,
            uuids[LABELLED][0]["metric"]["group_name"],
            uuids[UNLABELLED][0]["metric"]["group_name"],
        )
    finally:
        stop(processes)


def scraped(stack: Stack) -> bool:
    """Whether every agent is up and scraped 3 times, and both groups named and judged."""
    agents = MEMBERS * len(GROUPS)
    up = stack.query('up{job="grstats"} == 1')
    thrice = stack.query('count_over_time(up{job="grstats"}[1m]) >= 3')
    named = stack.query("max by (group_name) (grstats_group_info)")
    tolerance = stack.query("group_name:grstats_group_tolerance:min")
    return len(up) == len(thrice) == agents and len(named) == len(tolerance) == len(GROUPS)


def macros() -> dict[str, str]:
    """Grafana's time macros for a dashboard showing the last RANGE_S seconds."""
    return {
        "__range": f"{RANGE_S}s",
        "__range_s": str(RANGE_S),
        "__range_ms": str(RANGE_S * 1000),
        "__rate_interval": RATE_INTERVAL,
        "__interval": "2s",
    }


def answer(stack: Stack, target: Target, values: dict[str, str]) -> dict[str, Any]:
    """Prometheus' whole answer to ``target`` as Grafana sends it: instant, or the last minute."""
    expr = expand(target.expr, values)
    unset = [name for name, _, _ in references(expr) if not name.isdigit()]
    assert not unset, f"{target.name}: variables the test does not set: {unset}\n{expr}"
    if target.instant:
        return stack.api_answer("/api/v1/query", query=expr)
    end = time.time()
    return stack.api_answer(
        "/api/v1/query_range", query=expr, start=str(end - RANGE_S), end=str(end), step="2"
    )


def series(stack: Stack, target: Target, values: dict[str, str]) -> list[dict[str, Any]]:
    """The series of ``target``'s answer (fails on an error)."""
    data = answer(stack, target, values)
    assert data["status"] == "success", f"{target.name}: {data.get('error')}"
    result: list[dict[str, Any]] = data["data"]["result"]
    return result


def fleet_table(board: dict[str, Any]) -> dict[str, Any]:
    """The fleet dashboard's table of groups."""
    tables: list[dict[str, Any]] = [p for p in board["panels"] if p["type"] == "table"]
    assert len(tables) == 1, [panel["title"] for panel in tables]
    return tables[0]


def rows(stack: Stack, table: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The table's rows as Grafana joins them on group_name: {group_name: {field: value}}."""
    joined: dict[str, dict[str, Any]] = {}
    for target in targets({"panels": [table]}):
        for one in series(stack, target, macros()):
            labels = dict(one["metric"])
            group = labels["group_name"]
            joined.setdefault(group, {}).update(labels)
            joined[group][f"Value #{target.target['refId']}"] = float(one["value"][1])
    return joined


def test_group_selector_shows_labels_and_uuids(fleet: Fleet) -> None:
    """The group dashboard's selector shows each group's label, or its UUID when it has none."""
    options = variable_options(fleet.stack, variables(load(GROUP))["group"])
    assert sorted(options) == sorted(
        [Option(LABELLED.label, fleet.labelled), Option(fleet.unlabelled, fleet.unlabelled)]
    ), options
    texts = [option.text for option in options]
    assert texts == sorted(texts, key=str.lower)


def test_every_fleet_query_answers_with_a_row_per_group(fleet: Fleet) -> None:
    """Each fleet query is valid PromQL with data; each table query gives one row per group."""
    board = load(FLEET)
    table = fleet_table(board)
    every = targets(board)
    assert len(every) >= 10
    uuids = sorted([fleet.labelled, fleet.unlabelled])
    for target in every:
        found = series(fleet.stack, target, macros())
        assert found, f"{target.name}: no data\n{target.expr}"
        if target.panel is table:
            per_group = sorted(one["metric"].get("group_name", "") for one in found)
            assert per_group == uuids, f"{target.name}: not one series per group: {found}"
        elif "group_label" in target.target["legendFormat"]:
            labels = sorted(one["metric"]["group_label"] for one in found)
            assert labels == sorted([LABELLED.label, fleet.unlabelled]), target.name
    print(f"{len(every)} fleet queries answer")  # for the record (pytest -s)


def test_fleet_table_shows_each_group_its_own_values(fleet: Fleet) -> None:
    """The table's row of each group: its name, status, tolerance, primary, lag, not active."""
    table = fleet_table(load(FLEET))

    def crashed() -> dict[str, dict[str, Any]] | None:
        joined = rows(fleet.stack, table)
        row = joined[fleet.unlabelled]
        return joined if row.get("Value #G") == 1 and row["Value #B"] > STATUS_RANK["OK"] else None

    joined = wait_until(
        crashed, CRASH_TIMEOUT_S, "the unlabelled group: member 2 not active, status not OK"
    )
    assert joined is not None
    labelled, unlabelled = joined[fleet.labelled], joined[fleet.unlabelled]
    assert labelled["group_label"] == LABELLED.label
    assert unlabelled["group_label"] == fleet.unlabelled
    assert labelled["Value #B"] == STATUS_RANK["OK"], labelled
    assert labelled["Value #C"] == 1
    assert unlabelled["Value #C"] == 0
    assert labelled["Value #G"] == 0
    for row in (labelled, unlabelled):
        host, _, port = row["primary"].rpartition(":")
        assert host, row
        assert port.isdigit(), row
    assert labelled["Value #E"] == 0
    assert unlabelled["Value #E"] >= 0  # now: flow control lets member 1 catch up at times
    assert labelled["Value #F"] == 0
    assert 0 < unlabelled["Value #F"] <= RANGE_S
    print(f"fleet rows: {joined}")  # for the record (pytest -s)
    lag = next(t for t in targets(load(FLEET)) if t.panel["title"] == "Worst applier lag by group")
    worst = {
        one["metric"]["group_name"]: max(float(value) for _, value in one["values"])
        for one in series(fleet.stack, lag, macros())
    }
    assert worst[fleet.labelled] == 0, worst
    assert worst[fleet.unlabelled] > 0, worst


def test_fleet_table_links_each_row_to_its_group(fleet: Fleet) -> None:
    """The table's columns exist in the answers, and each row's link selects its group."""
    table = fleet_table(load(FLEET))
    fields = {"Time"}
    for target in targets({"panels": [table]}):
        fields.add(f"Value #{target.target['refId']}")
        for one in series(fleet.stack, target, macros()):
            fields.update(one["metric"])
    organize = next(t["options"] for t in table["transformations"] if t["id"] == "organize")
    join = next(t["options"] for t in table["transformations"] if t["id"] == "joinByField")
    assert join["byField"] in fields
    named = set(organize["indexByName"]) | set(organize["renameByName"])
    excluded = {name for name in organize["excludeByName"] if not name.startswith("Time")}
    assert named | excluded <= fields, (named | excluded) - fields
    shown = {name for name in fields if not name.startswith("Time")} - excluded
    assert shown == set(organize["renameByName"]), shown ^ set(organize["renameByName"])
    columns = set(organize["renameByName"].values())
    overridden = {o["matcher"]["options"] for o in table["fieldConfig"]["overrides"]}
    assert overridden <= columns, overridden - columns
    assert {sort["displayName"] for sort in table["options"]["sortBy"]} <= columns
    selector = variables(load(GROUP))["group"]
    offered = {option.value for option in variable_options(fleet.stack, selector)}
    for link in table["fieldConfig"]["defaults"]["links"]:
        used = {path for name, path, _ in references(link["url"]) if name == "__data"}
        assert used == {"fields.group_name"}, used
        for group in (fleet.labelled, fleet.unlabelled):
            url = link["url"].replace("${__data.fields.group_name}", group)
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
            assert query["var-group"] == [group]
            assert group in offered


def test_group_dashboard_answers_for_each_group(fleet: Fleet) -> None:
    """Every query of the group dashboard answers for either group picked in its selector."""
    board = load(GROUP)
    named = variables(board)
    every = targets(board)
    # no collector runs here, so its panels have no data (test_prometheus_live runs one)
    agents = {target.name for target in every if "grstats_collector" not in target.expr}
    for option in variable_options(fleet.stack, named["group"]):
        members = variable_options(fleet.stack, named["member"], {"group": option.value})
        assert len(members) == MEMBERS, members
        values = {
            **macros(),
            "group": option.value,
            "member": "(" + "|".join(member.value for member in members) + ")",
        }
        empty = [t.name for t in every if not series(fleet.stack, t, values)]
        left = [name for name in empty if name in agents]
        assert len(left) <= (1 - MIN_WITH_DATA) * len(agents), (option, left)
        print(f"{option.text}: {len(every) - len(empty)} of {len(every)} queries return data")
