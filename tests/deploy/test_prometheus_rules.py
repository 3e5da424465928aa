"""The Prometheus rules and the Grafana dashboard: promtool checks and unit tests, names, coverage.

``promtool check rules`` and ``promtool test rules`` run on deploy/prometheus (promtool comes
with Debian's ``prometheus`` package; required under CI, skipped elsewhere when missing). The
other tests read the files: every alert has a severity, a summary and a description naming
its member (host:port, labels ``member``) and group (its name, ``group``), and a unit test
where it fires and one where it does not; recording rules follow level:metric:operations;
the rates are unit-tested at a 15 s and a 60 s scrape interval; the dashboard reads its data
source from ``${DS_PROMETHEUS}`` and names only recording rules that the rules file defines.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from tests.deploy.files import DEPLOY
from tests.programs import require

if TYPE_CHECKING:
    from pathlib import Path

PROMETHEUS = DEPLOY / "prometheus"
RULES = PROMETHEUS / "grstats.rules.yml"
UNIT_TESTS = sorted((PROMETHEUS / "tests").glob("*.yml"))
DASHBOARD = DEPLOY / "grafana" / "grstats.json"
SEVERITIES = {"critical", "warning"}
#: level:metric:operations, the level being labels joined by "_".
RECORD_NAME = re.compile(
    r"(?P<level>[a-z_]+):(?P<metric>grstats_[a-z_]+):(?P<operations>[a-z0-9_]+)"
)
#: The recording rules the issue names, each checked by a promql_expr_test of its own.
KEY_RECORDS = (
    "group_name_member_id:grstats_agent_up:max",
    "group_name_member_id:grstats_applier_lag_seconds:max",
    "group_name_member_id:grstats_transactions_remote_applied:max_rate5m",
    "group_name_member_id:grstats_member_info:max",
    "group_name_status:grstats_group_status:max",
    "group_name_state:grstats_member_state:sum",
    "group_name:grstats_group_tolerance:min",
    "job_instance_group_name_member_id_member_group:grstats_member_source_info:max",
)
#: The names member alerts join (labels member and group), and group alerts (group).
MEMBER_NAMES = "group_name_member_id_member_group:grstats_member_info:max"
GROUP_NAMES = "group_name_group:grstats_group_info:max"
#: What the member and group alerts join: those names over the last 2 minutes, one series each.
MEMBER_ALERT_NAMES = "group_name_member_id:grstats_member_info:topk_last_over_time2m"
GROUP_ALERT_NAMES = "group_name:grstats_group_info:topk_last_over_time2m"
ALERT_NAMES = {MEMBER_NAMES: MEMBER_ALERT_NAMES, GROUP_NAMES: GROUP_ALERT_NAMES}
#: The agent's own alerts: about a target (instance), naming its member once it has read it.
AGENT_ALERTS = frozenset({"GrstatsAgentDown", "GrstatsSourceDown"})
#: The scrape intervals the rules are unit-tested at (the header states 1 s to 75 s).
SCRAPE_INTERVALS = ("15s", "1m")
#: The longest scrape interval the header allows: a rate's window is at least 4 times it.
LONGEST_SCRAPE_S = 75


def rule_groups() -> list[dict[str, Any]]:
    """The rule groups of the rules file."""
    groups = yaml.load(RULES.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)["groups"]
    assert isinstance(groups, list)
    return groups


def alerts() -> list[dict[str, Any]]:
    """Every alerting rule."""
    return [rule for group in rule_groups() for rule in group["rules"] if "alert" in rule]


def records() -> list[dict[str, Any]]:
    """Every recording rule."""
    return [rule for group in rule_groups() for rule in group["rules"] if "record" in rule]


def unit_tests() -> list[dict[str, Any]]:
    """Every test case of deploy/prometheus/tests."""
    cases: list[dict[str, Any]] = []
    for path in UNIT_TESTS:
        cases.extend(yaml.safe_load(path.read_text(encoding="utf-8"))["tests"])
    return cases


def dashboard() -> dict[str, Any]:
    """The Grafana dashboard."""
    loaded = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def dashboard_targets() -> list[dict[str, Any]]:
    """Every query of the dashboard's panels (and of panels inside collapsed rows)."""
    panels = [
        panel
        for top in dashboard()["panels"]
        for panel in [top, *top.get("panels", [])]
        if panel["type"] != "row"
    ]
    return [target for panel in panels for target in panel["targets"]]


def run_promtool(*args: str) -> subprocess.CompletedProcess[str]:
    """Run promtool with ``args`` from deploy/prometheus."""
    return subprocess.run(
        [require("promtool", "prometheus"), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=PROMETHEUS,
    )


def test_promtool_check_rules() -> None:
    """The rules file passes promtool check rules."""
    done = run_promtool("check", "rules", RULES.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alerts()) + len(records())} rules found" in done.stdout


def test_promtool_test_rules() -> None:
    """Every unit test file of deploy/prometheus/tests passes under promtool test rules."""
    assert len(UNIT_TESTS) >= 4, UNIT_TESTS
    done = run_promtool(
        "test", "rules", *(str(path.relative_to(PROMETHEUS)) for path in UNIT_TESTS)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("SUCCESS") == len(UNIT_TESTS), done.stdout


def test_promtool_test_rules_fails_on_a_wrong_expectation(tmp_path: Path) -> None:
    """A unit test expecting an alert that does not fire fails (promtool's verdict is read)."""
    case = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {"series": 'up{job="grstats", instance="db1:9474"}', "values": "1x10"}
                ],
                "alert_rule_test": [
                    {
                        "eval_time": "10m",
                        "alertname": "GrstatsAgentDown",
                        "exp_alerts": [{"exp_labels": {"severity": "warning"}}],
                    }
                ],
            }
        ],
    }
    wrong = tmp_path / "wrong.yml"
    wrong.write_text(yaml.safe_dump(case), encoding="utf-8")
    done = run_promtool("test", "rules", str(wrong))
    assert done.returncode != 0
    assert "FAILED" in done.stdout + done.stderr


def about(rule: dict[str, Any]) -> set[str]:
    """The labels an alert's summary and description must name: what the alert is about."""
    if rule["alert"] in AGENT_ALERTS:
        return {"instance", "member", "group"}
    if MEMBER_ALERT_NAMES in rule["expr"]:
        return {"member", "group"}
    if GROUP_ALERT_NAMES in rule["expr"]:
        return {"group"}
    return {"instance", "group"}  # the collector's


@pytest.mark.parametrize("rule", alerts(), ids=lambda rule: rule["alert"])
def test_alert_has_severity_summary_and_description(rule: dict[str, Any]) -> None:
    """Each alert has labels.severity, a summary and a description naming what it is about."""
    assert rule["alert"].startswith("Grstats")
    assert rule["labels"]["severity"] in SEVERITIES
    annotations = rule["annotations"]
    assert set(annotations) >= {"summary", "description"}
    for label in about(rule):
        assert f"$labels.{label}" in annotations["summary"], label
        assert f"$labels.{label}" in annotations["description"], label
    assert re.fullmatch(r"\d+m", rule["for"]), "alerts wait whole minutes before they fire"


@pytest.mark.parametrize("rule", alerts(), ids=lambda rule: rule["alert"])
def test_alert_joins_the_names(rule: dict[str, Any]) -> None:
    """A member alert joins the members' names, a group alert the groups'; agents' their target's."""
    expr = " ".join(rule["expr"].split())
    joins = {
        MEMBER_NAMES: "* on (group_name, member_id) group_left (member, group)",
        GROUP_NAMES: "* on (group_name) group_left (group)",
        KEY_RECORDS[-1]: "* on (job, instance) group_left (group_name, member_id, member, group)",
    }
    if rule["alert"] in AGENT_ALERTS:
        names = KEY_RECORDS[-1]
        assert "or on (job, instance)" in expr, "an agent that never read its member alerts too"
    elif "member_id" in expr:
        names = MEMBER_NAMES
    elif "group_name" in expr:
        names = GROUP_NAMES
    else:
        assert rule["alert"] == "GrstatsCollectorStalled"
        assert "label_replace(" in expr
        assert '"group", "$1", "group_label"' in expr
        return
    # A member's or group's names are their topk_last_over_time2m record (the names of the
    # last 2 minutes, one series each), as its condition reads its records with last_over_time: a handover between
    # agents leaves the records empty for the silence, and an alert without a result for one
    # evaluation starts its for: again (metrics.scope own).
    named = names if rule["alert"] in AGENT_ALERTS else ALERT_NAMES[names]
    assert f"{joins[names]} {named}" in expr, expr


@pytest.mark.parametrize("rule", alerts(), ids=lambda rule: rule["alert"])
def test_alert_has_unit_tests_where_it_fires_and_where_it_does_not(rule: dict[str, Any]) -> None:
    """deploy/prometheus/tests check each alert firing and, at another time, not firing."""
    checks = [
        check
        for case in unit_tests()
        for check in case.get("alert_rule_test", [])
        if check["alertname"] == rule["alert"]
    ]
    assert any(check.get("exp_alerts") for check in checks), f"{rule['alert']} never fires"
    assert any(not check.get("exp_alerts") for check in checks), f"{rule['alert']} always fires"


def expected_alerts(alertname: str | None = None) -> list[dict[str, str]]:
    """The labels of every alert the unit tests expect (named ``alertname``, when given)."""
    return [
        alert["exp_labels"]
        for case in unit_tests()
        for check in case.get("alert_rule_test", [])
        if alertname in (None, check["alertname"])
        for alert in check.get("exp_alerts") or []
    ]


def alert_labels(rule: dict[str, Any], *, knows_its_member: bool = True) -> set[str]:
    """The labels the alert carries (an agent's names its member once it has read it)."""
    member = {"group_name", "member_id", "member", "group"}
    if rule["alert"] in AGENT_ALERTS:
        return {"severity", "job", "instance"} | (member if knows_its_member else set())
    if MEMBER_ALERT_NAMES in rule["expr"]:
        return {"severity"} | member
    if GROUP_ALERT_NAMES in rule["expr"]:
        return {"severity", "group_name", "group"}
    return {"severity", "job", "instance", "group_label", "group"}  # the collector's


@pytest.mark.parametrize("rule", alerts(), ids=lambda rule: rule["alert"])
def test_alert_labels_in_unit_tests_name_member_and_group(rule: dict[str, Any]) -> None:
    """Where a unit test expects the alert, its labels name the member and the group."""
    expected = expected_alerts(rule["alert"])
    assert expected
    for labels in expected:
        knows = "member_id" in labels
        assert set(labels) == alert_labels(rule, knows_its_member=knows), labels
        if "member" in labels:
            address = re.fullmatch(r"[\w.-]+:\d+", labels["member"])
            assert address is not None or labels["member"] == labels["member_id"], labels
        if "group" in labels:
            assert labels["group"], labels


def test_unit_tests_show_names_and_their_fallbacks() -> None:
    """Alerts name a member by host:port or else member_id, a group by label or else group_name."""
    expected = expected_alerts()
    members = [labels for labels in expected if "member" in labels]
    assert any(labels["member"] != labels["member_id"] for labels in members)
    assert any(labels["member"] == labels["member_id"] for labels in members)
    groups = [labels for labels in expected if "group_name" in labels]
    assert any(labels["group"] != labels["group_name"] for labels in groups)
    assert any(labels["group"] == labels["group_name"] for labels in groups)


def test_rates_have_a_window_of_4_scrape_intervals() -> None:
    """Every rate() of the rules spans at least 4 of the longest scrape interval the header allows."""
    windows = [
        window
        for rule in records() + alerts()
        for window in re.findall(r"\brate\([^\[]*\[(\w+)\]", rule["expr"])
    ]
    assert len(windows) == 5, windows
    for window in windows:
        minutes = re.fullmatch(r"(\d+)m", window)
        assert minutes is not None, window
        assert int(minutes[1]) * 60 >= 4 * LONGEST_SCRAPE_S, window
    assert f"any scrape interval from 1 s to {LONGEST_SCRAPE_S} s" in RULES.read_text(
        encoding="utf-8"
    )


@pytest.mark.parametrize("interval", SCRAPE_INTERVALS)
@pytest.mark.parametrize(
    "rule", [rule for rule in records() if "rate(" in rule["expr"]], ids=lambda rule: rule["record"]
)
def test_rate_is_unit_tested_at_each_scrape_interval(rule: dict[str, Any], interval: str) -> None:
    """Each rate record has a non-empty expected value in a unit test at 15 s and at 60 s."""
    values = [
        sample["value"]
        for case in unit_tests()
        if case["interval"] == interval
        for check in case.get("promql_expr_test", [])
        if check["expr"] == rule["record"]
        for sample in check["exp_samples"]
    ]
    assert values, f"{rule['record']} has no expected value at a {interval} scrape interval"
    assert all(value > 0 for value in values)


@pytest.mark.parametrize("name", KEY_RECORDS)
def test_key_recording_rule_has_a_unit_test(name: str) -> None:
    """The recording rules dashboards rely on most are checked by a promql_expr_test."""
    assert name in {rule["record"] for rule in records()}
    tested = {check["expr"] for case in unit_tests() for check in case.get("promql_expr_test", [])}
    assert name in tested


@pytest.mark.parametrize("rule", records(), ids=lambda rule: rule["record"])
def test_recording_rule_name_is_level_metric_operations(rule: dict[str, Any]) -> None:
    """A record's level lists labels it keeps, its metric is grstats', its operations are named."""
    match = RECORD_NAME.fullmatch(rule["record"])
    assert match is not None, rule["record"]
    kept = re.search(r"\bby \(([^)]*)\)", rule["expr"])
    assert kept is not None, "every record aggregates across agents"
    labels = [label.strip() for label in kept.group(1).split(",")]
    level = match["level"]
    assert level == "_".join(label for label in labels if label in level), (level, labels)
    assert rule["expr"].startswith(match["operations"].split("_")[0]), (
        "the newest operation comes first in the name"
    )
    metric = match["metric"]
    assert metric in rule["expr"], (metric, rule["expr"])


def test_recording_rules_are_unique_and_alerts_use_defined_ones() -> None:
    """No record is defined twice, and every record an alert reads is defined."""
    names = [rule["record"] for rule in records()]
    assert len(names) == len(set(names))
    used = {
        name
        for rule in alerts()
        for name in re.findall(
            r"[a-z_]+:grstats_[a-z_]+:[a-z0-9_]+", rule["expr"] + str(rule["annotations"])
        )
    }
    assert used <= set(names), used - set(names)


def test_dashboard_is_for_grafana_10_with_a_data_source_variable() -> None:
    """The dashboard has DS_PROMETHEUS, group and member variables, and every query uses it."""
    board = dashboard()
    assert board["schemaVersion"] >= 38
    variables = {variable["name"]: variable for variable in board["templating"]["list"]}
    assert variables["DS_PROMETHEUS"]["type"] == "datasource"
    assert variables["DS_PROMETHEUS"]["query"] == "prometheus"
    assert variables["group"]["query"].startswith("query_result(")  # names: test_grafana_live
    assert "grstats_group_info" in variables["group"]["query"]
    assert variables["member"]["query"] == (
        'label_values(grstats_member_info{group_name="$group"}, member_id)'
    )
    assert variables["member"]["multi"]
    assert variables["member"]["includeAll"]
    for variable in (variables["group"], variables["member"]):
        assert variable["datasource"]["uid"] == "${DS_PROMETHEUS}"
    targets = dashboard_targets()
    assert len(targets) >= 30
    for target in targets:
        assert target["datasource"]["uid"] == "${DS_PROMETHEUS}", target


def test_dashboard_panel_titles_are_unique() -> None:
    """Each panel has a title of its own (the live test names queries by it)."""
    titles = [panel["title"] for panel in dashboard()["panels"]]
    assert len(titles) == len(set(titles)), sorted(t for t in titles if titles.count(t) > 1)


def test_dashboard_panels_do_not_overlap() -> None:
    """No two panels share a cell of Grafana's 24-column grid."""
    taken: dict[tuple[int, int], str] = {}
    for panel in dashboard()["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in taken, f"{panel['title']} overlaps {taken.get((x, y))}"
                taken[x, y] = panel["title"]


def test_dashboard_names_only_defined_recording_rules() -> None:
    """Every level:metric:operations name a dashboard query reads is a record of the rules file."""
    defined = {rule["record"] for rule in records()}
    used = {
        name
        for target in dashboard_targets()
        for name in re.findall(r"[a-z_]+:grstats_[a-z_]+:[a-z0-9_]+", target["expr"])
    }
    assert used, "the dashboard reads no recording rule"
    assert used <= defined, used - defined
    member_queries = [t["expr"] for t in dashboard_targets() if 'member_id=~"$member"' in t["expr"]]
    assert len(member_queries) >= 10
