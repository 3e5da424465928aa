"""A real Prometheus scrapes a simulated group, loads the rules and answers the dashboard's queries.

Three ``grstats agent --source simulated`` processes of one group (period 1 s, an agent silent
for 2 periods is not heard) and a ``grstats collect`` serve ``/metrics`` on free ports. A
``prometheus`` process, started from a temporary directory, scrapes them every second (jobs
``grstats`` and ``grstats-collector``, as deploy/prometheus/grstats.rules.yml's header says),
evaluates the rules every second, and answers over its HTTP API.

The rules are deploy/prometheus/grstats.rules.yml as shipped except for one rewrite: every
alert's ``for:`` (minutes in the file) becomes ``2s``, so that an alert fires within the test.

``prometheus`` (Debian's package) is required under CI (CI=true) and skipped elsewhere when it
is missing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from grstats.cli.demo import free_ports
from tests.deploy.files import DEPLOY
from tests.deploy.grafana import variable_options
from tests.programs import require
from tests.waiting import wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator

#: One worker runs the module, so that its module-scoped fixtures are built once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("prometheus-live")]

ROOT = Path(__file__).resolve().parents[2]  # the agents run with -m grstats from here
RULES = DEPLOY / "prometheus" / "grstats.rules.yml"
DASHBOARD = DEPLOY / "grafana" / "grstats.json"
MEMBERS = 3
#: The alerts' ``for:`` in the test's copy of the rules.
ALERT_FOR = "2s"
#: Grafana's $__rate_interval at a 1 s scrape interval: max($__interval + 1 s, 4 x 1 s).
RATE_INTERVAL = "4s"
#: How long the stack may take to have every member's rates recorded.
START_TIMEOUT_S = 40.0
#: How long the "member nobody hears" alert may take to fire once an agent is killed:
#: 2 periods of silence, one scrape and one evaluation, then ALERT_FOR.
FIRE_TIMEOUT_S = 20.0
#: The share of the dashboard's queries that must return data on a steady simulated group.
MIN_WITH_DATA = 0.9
AGENT_CONFIG = """\
source = "simulated"
period_s = 1
silence_periods = 2
log_format = "json"
group_label = "orders"

[simulated]
scenario = "steady"
members = 3
seed = 1
"""


@dataclass(frozen=True)
class Stack:
    """The running processes and where they answer."""

    prometheus: str  # http://host:port
    agents: tuple[subprocess.Popen[bytes], ...]
    metrics: tuple[str, ...]  # each agent's /metrics address, host:port (its instance)
    workdir: Path

    def api(self, path: str, **params: str) -> Any:
        """GET ``path`` of Prometheus' HTTP API; the answer's ``data`` (fails on an error)."""
        answer = self.api_answer(path, **params)
        assert answer["status"] == "success", answer
        return answer["data"]

    def api_answer(self, path: str, **params: str) -> dict[str, Any]:
        """GET ``path`` of Prometheus' HTTP API; the whole answer, errors included."""
        url = f"{self.prometheus}{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 (http://127.0.0.1)
                answer: dict[str, Any] = json.load(response)
        except urllib.error.HTTPError as exc:  # 400 and 422 carry the error as JSON
            answer = json.load(exc)
        return answer

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector of ``expr`` now."""
        data = self.api("/api/v1/query", query=expr)
        assert data["resultType"] == "vector", data
        result: list[dict[str, Any]] = data["result"]
        return result

    def logs(self) -> str:
        """The end of every process's log, for a failure's message."""
        parts = []
        for log in sorted(self.workdir.glob("*.log")):
            lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
            parts.append(f"--- {log.name}\n" + "\n".join(lines[-15:]))
        return "\n".join(parts)


def shortened_rules(directory: Path) -> Path:
    """A copy of the rules whose alerts wait ALERT_FOR instead of minutes."""
    rules = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    alerts = [rule for group in rules["groups"] for rule in group["rules"] if "alert" in rule]
    assert alerts
    for rule in alerts:
        rule["for"] = ALERT_FOR
    copy = directory / "grstats.rules.yml"
    copy.write_text(yaml.safe_dump(rules, sort_keys=False), encoding="utf-8")
    return copy


def prometheus_config(agents: list[str], collector: str, rules: Path) -> str:
    """prometheus.yml: the agents in job grstats, the collector in grstats-collector."""
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules)],
        "scrape_configs": [
            {"job_name": "grstats", "static_configs": [{"targets": agents}]},
            {"job_name": "grstats-collector", "static_configs": [{"targets": [collector]}]},
        ],
    }
    return yaml.safe_dump(config, sort_keys=False)


def start(command: list[str], log: Path, cwd: Path = ROOT) -> subprocess.Popen[bytes]:
    """Start ``command`` in ``cwd`` (the repository's root by default), its output in ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=cwd)


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every process still running, then SIGKILL what has not ended after 10 s."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + 10
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(name="stack", scope="module")
def _stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Three agents of one simulated group, a collector, and Prometheus scraping them."""
    prometheus = require("prometheus", "prometheus")
    workdir = tmp_path_factory.mktemp("prometheus-live")
    ports = free_ports(2 * MEMBERS + 2)
    gossip = [f"127.0.0.1:{port}" for port in ports[:MEMBERS]]
    metrics = [f"127.0.0.1:{port}" for port in ports[MEMBERS : 2 * MEMBERS]]
    collector_metrics = f"127.0.0.1:{ports[-2]}"
    web = f"127.0.0.1:{ports[-1]}"
    config = workdir / "agent.toml"
    config.write_text(AGENT_CONFIG, encoding="utf-8")
    group_start = str(int(time.time()))
    processes: list[subprocess.Popen[bytes]] = []
    grstats = [sys.executable, "-m", "grstats"]
    try:
        processes.extend(
            start(
                [
                    *(*grstats, "agent", "--config", str(config)),
                    *("--member-index", str(index), "--group-start", group_start),
                    *("--listen", gossip[index], "--peers", ",".join(gossip)),
                    *("--state-dir", str(workdir / f"state-{index}")),
                    *("--metrics-listen", metrics[index]),
                ],
                workdir / f"agent-{index}.log",
            )
            for index in range(MEMBERS)
        )
        processes.append(
            start(
                [
                    *(*grstats, "collect", *(f"--node={node}" for node in gossip)),
                    *("--spool", str(workdir / "spool"), "--interval", "1", "--fsync", "write"),
                    *("--metrics-listen", collector_metrics, "--log-format", "json"),
                ],
                workdir / "collector.log",
            )
        )
        (workdir / "prometheus.yml").write_text(
            prometheus_config(metrics, collector_metrics, shortened_rules(workdir)),
            encoding="utf-8",
        )
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
        stack = Stack(f"http://{web}", tuple(processes[:MEMBERS]), tuple(metrics), workdir)
        wait_until(
            lambda: ready(stack, processes),
            20,
            "every process runs, Prometheus is ready",
            detail=stack.logs,
        )
        wait_until(
            lambda: scraped(stack),
            START_TIMEOUT_S,
            "every target is up, every member's rates recorded",
            detail=stack.logs,
        )
        yield stack
    finally:
        stop(processes)


def ready(stack: Stack, processes: list[subprocess.Popen[bytes]]) -> bool:
    """Whether Prometheus answers /-/ready; fails at once when a process has exited."""
    ended = [process.args for process in processes if process.poll() is not None]
    assert not ended, f"ended early: {ended}\n{stack.logs()}"
    try:
        with urllib.request.urlopen(f"{stack.prometheus}/-/ready", timeout=2) as response:  # noqa: S310
            return bool(response.status == 200)
    except OSError:
        return False


def scraped(stack: Stack) -> bool:
    """Whether all 4 targets are up, scraped 3 times (rates have 2 samples), rates recorded."""
    up = stack.query('up{job=~"grstats.*"} == 1')
    thrice = stack.query('count_over_time(up{job=~"grstats.*"}[1m]) >= 3')
    rates = stack.query("group_name_member_id:grstats_transactions_checked:max_rate5m")
    return len(up) == len(thrice) == MEMBERS + 1 and len(rates) == MEMBERS


def label_values(stack: Stack, query: str) -> list[str]:
    """Grafana's ``label_values(SELECTOR, LABEL)`` through Prometheus' label values API."""
    match = re.fullmatch(r"label_values\((?P<selector>.+), (?P<label>\w+)\)", query)
    assert match is not None, query
    values: list[str] = stack.api(
        f"/api/v1/label/{match['label']}/values", **{"match[]": match["selector"]}
    )
    return values


def firing(stack: Stack, alertname: str) -> list[dict[str, str]]:
    """The labels of every firing alert named ``alertname``."""
    alerts = stack.api("/api/v1/alerts")["alerts"]
    return [
        alert["labels"]
        for alert in alerts
        if alert["labels"]["alertname"] == alertname and alert["state"] == "firing"
    ]


def test_every_dashboard_query_parses_and_most_return_data(stack: Stack) -> None:
    """Each query of the dashboard, variables substituted, is valid PromQL; most return data."""
    assert stack.api_answer("/api/v1/query", query="sum(up")["status"] == "error"  # it can fail
    board = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    variables = {variable["name"]: variable for variable in board["templating"]["list"]}
    groups = variable_options(stack, variables["group"])  # (text, value): value is the UUID
    assert len(groups) == 1, groups
    group = groups[0].value
    members = label_values(stack, variables["member"]["query"].replace("$group", group))
    assert len(members) == MEMBERS, members
    substitutions = {
        "$group": group,
        "$member": "(" + "|".join(members) + ")",  # Grafana's multi-value regex
        "$__rate_interval": RATE_INTERVAL,
    }
    results: dict[str, int] = {}
    errors: dict[str, str] = {}
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for variable, value in substitutions.items():
                expr = expr.replace(variable, value)
            assert "$" not in expr, f"{panel['title']}: a variable the test does not set: {expr}"
            answer = stack.api_answer("/api/v1/query", query=expr)
            name = f"{panel['title']} [{target['refId']}]"
            if answer["status"] != "success":
                errors[name] = f"{answer.get('error')}: {expr}"
            else:
                results[name] = len(answer["data"]["result"])
    assert not errors, "\n".join(f"{name}: {error}" for name, error in errors.items())
    empty = sorted(name for name, count in results.items() if count == 0)
    summary = f"{len(results) - len(empty)} of {len(results)} queries return data; empty: {empty}"
    print(summary)  # for the record (pytest -s)
    assert len(results) >= 30
    assert len(empty) <= (1 - MIN_WITH_DATA) * len(results), (
        f"{len(empty)} of {len(results)} queries return no data: " + "; ".join(empty)
    )


def test_killed_agent_fires_member_nobody_hears(stack: Stack) -> None:
    """SIGKILL one agent: GrstatsMemberUnheard fires for its member only, both alerts name it."""
    victim = stack.metrics[-1]
    own = stack.query(f'grstats_member_source_info{{instance="{victim}", source="local"}}')
    assert len(own) == 1, own
    member = own[0]["metric"]["member_id"]
    (info,) = stack.query(f'group_name_member_id:grstats_member_info:max{{member_id="{member}"}}')
    names = {
        "group_name": own[0]["metric"]["group_name"],
        "member_id": member,
        "member": f"{info['metric']['member_host']}:{info['metric']['member_port']}",
        "group": "orders",  # the agents' group_label
    }
    wait_until(
        lambda: not firing(stack, "GrstatsMemberUnheard"),
        10,
        "no member is unheard before the kill",
        detail=stack.logs,
    )
    stack.agents[-1].kill()
    stack.agents[-1].wait()
    killed = time.monotonic()
    wait_until(
        lambda: any(
            alert.get("member_id") == member for alert in firing(stack, "GrstatsMemberUnheard")
        ),
        FIRE_TIMEOUT_S,
        f"GrstatsMemberUnheard fires for {member}",
        detail=stack.logs,
    )
    took = time.monotonic() - killed
    unheard = firing(stack, "GrstatsMemberUnheard")
    assert [alert["member_id"] for alert in unheard] == [member], unheard
    assert unheard[0]["severity"] == "warning"
    assert {key: unheard[0][key] for key in names} == names
    print(f"GrstatsMemberUnheard fired {took:.1f} s after the kill")  # for the record (pytest -s)
    wait_until(
        lambda: [alert["instance"] for alert in firing(stack, "GrstatsAgentDown")] == [victim],
        FIRE_TIMEOUT_S,
        "GrstatsAgentDown fires for the killed agent's target",
        detail=stack.logs,
    )
    (down,) = firing(stack, "GrstatsAgentDown")  # names the member its agent read before dying
    assert {key: down.get(key) for key in names} == names, down
