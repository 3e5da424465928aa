"""deploy/alertmanager: amtool checks the config, and a real Alertmanager mutes what it should.

``amtool check-config`` and ``amtool config routes test`` read the file; then an
``alertmanager`` process (Debian's ``prometheus-alertmanager`` package brings both programs;
required under CI, skipped elsewhere when missing) runs with it and is given alerts over its
HTTP API (``POST /api/v2/alerts``). The alerts are the ones deploy/prometheus/tests expect
the rules to fire, with the very labels promtool checks there, so the inhibit rules are
tested against what the rules really send. Alertmanager tells which alerts it mutes, and by
which, in ``GET /api/v2/alerts`` (``status.state`` suppressed, ``status.inhibitedBy``); a
webhook receiver shows that a muted alert is never notified.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from grstats.cli.demo.ports import free_ports
from tests.deploy.files import DEPLOY
from tests.programs import require
from tests.waiting import wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

CONFIG = DEPLOY / "alertmanager" / "alertmanager.yml"
UNIT_TESTS = sorted((DEPLOY / "prometheus" / "tests").glob("*.yml"))
#: Group 8a94f357 ("orders", in the rules' unit tests) and its members db1, db2, db3.
ORDERS = "8a94f357-aab4-11df-86ab-c80aa9429562"
DB1, DB2, DB3 = (
    "3e11fa47-71ca-11e1-9e33-c80aa9429562",
    "4f22ab58-82db-22f2-af44-d91bb0530673",
    "5a33bc69-93ec-33a3-b055-ea2cc1641784",
)
#: Group 0d5ba1a4, another group of the unit tests.
OTHER = "0d5ba1a4-2f4e-11ef-a0ae-0242ac120002"
#: How long Alertmanager may take to start, or to take and judge the alerts posted.
START_TIMEOUT_S = 20.0

Labels = dict[str, str]
#: An alert's identity: its labels, as a set.
Key = frozenset[tuple[str, str]]


def key(labels: Labels) -> Key:
    """An alert's identity, to find it in Alertmanager's answers."""
    return frozenset(labels.items())


def amtool(*args: str) -> subprocess.CompletedProcess[str]:
    """Run amtool with ``args``."""
    return subprocess.run(
        [require("amtool", "prometheus-alertmanager"), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def fired() -> list[Labels]:
    """Every alert deploy/prometheus/tests expect to fire: its labels, alertname included."""
    found: dict[Key, Labels] = {}
    for path in UNIT_TESTS:
        for case in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]:
            for check in case.get("alert_rule_test", []):
                for alert in check.get("exp_alerts") or []:
                    labels = {"alertname": check["alertname"], **alert["exp_labels"]}
                    found[key(labels)] = labels
    return list(found.values())


def one(alertname: str, **labels: str) -> Labels:
    """The one alert of the unit tests named ``alertname`` whose labels include ``labels``."""
    (found,) = [
        alert
        for alert in fired()
        if alert["alertname"] == alertname
        and all(alert.get(key) == value for key, value in labels.items())
    ]
    return found


def moved(alert: Labels, member_id: str, member: str) -> Labels:
    """The same alert about another member of the same group."""
    return {**alert, "member_id": member_id, "member": member}


class Alertmanager:
    """A running alertmanager process, and its HTTP API v2."""

    def __init__(self, url: str, log: Path) -> None:
        self.url = url
        self.log = log

    def post(self, alerts: list[Labels]) -> None:
        """Send ``alerts`` as Prometheus does (firing, with no end yet)."""
        body = json.dumps([{"labels": labels, "annotations": {}} for labels in alerts])
        request = urllib.request.Request(  # noqa: S310 (http://127.0.0.1)
            f"{self.url}/api/v2/alerts",
            data=body.encode("utf-8"),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            assert response.status == 200

    def alerts(self) -> list[dict[str, Any]]:
        """GET /api/v2/alerts: every alert with its status (active, suppressed and by what)."""
        with urllib.request.urlopen(f"{self.url}/api/v2/alerts", timeout=10) as response:  # noqa: S310
            answer: list[dict[str, Any]] = json.load(response)
        return answer

    def judged(self, alerts: list[Labels], muted: list[Labels]) -> dict[Key, dict[str, Any]]:
        """Post ``alerts``; each one's status once Alertmanager mutes exactly ``muted``.

        Alertmanager's inhibitor learns of the alerts posted in a goroutine of its own, so an
        alert may show active a moment before its source is known: the answer is polled until
        the muted ones are those expected (else the last answer is shown on timeout).
        """
        self.post(alerts)
        wanted = {key(labels) for labels in alerts}
        expected = {key(labels) for labels in muted}
        last: list[object] = []

        def statuses() -> dict[Key, dict[str, Any]] | None:
            found = {key(alert["labels"]): alert for alert in self.alerts()}
            mine = {name: found[name] for name in wanted if name in found}
            last[:] = [{dict(name)["alertname"]: a["status"] for name, a in mine.items()}]
            states = {name: alert["status"]["state"] for name, alert in mine.items()}
            if set(states) != wanted or "unprocessed" in states.values():
                return None
            suppressed = {name for name, state in states.items() if state == "suppressed"}
            return mine if suppressed == expected else None

        judged = wait_until(
            statuses,
            START_TIMEOUT_S,
            "Alertmanager mutes the alerts expected, and only them",
            detail=lambda: f"{last}\n{self.logs()}",
        )
        assert judged is not None
        return judged

    def logs(self) -> str:
        """The end of Alertmanager's log, for a failure's message."""
        lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(lines[-20:])


def ready(url: str, process: subprocess.Popen[bytes]) -> bool:
    """Whether Alertmanager answers /-/ready; fails at once when it has exited."""
    assert process.poll() is None, f"alertmanager exited with {process.returncode}"
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:  # noqa: S310
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


@contextlib.contextmanager
def run_alertmanager(config: Path, workdir: Path) -> Iterator[Alertmanager]:
    """Run alertmanager with ``config`` on a free port of 127.0.0.1, without clustering."""
    program = require("prometheus-alertmanager", "prometheus-alertmanager")
    (port,) = free_ports(1)
    url = f"http://127.0.0.1:{port}"
    log = workdir / "alertmanager.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                program,
                *("--config.file", str(config), "--storage.path", str(workdir / "data")),
                *("--web.listen-address", f"127.0.0.1:{port}", "--cluster.listen-address="),
                "--log.level=warn",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    manager = Alertmanager(url, log)
    try:
        wait_until(
            lambda: ready(url, process),
            START_TIMEOUT_S,
            "alertmanager is ready",
            detail=manager.logs,
        )
        yield manager
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(name="alertmanager")
def _alertmanager(tmp_path: Path) -> Iterator[Alertmanager]:
    """An Alertmanager running deploy/alertmanager/alertmanager.yml as shipped."""
    with run_alertmanager(CONFIG, tmp_path) as manager:
        yield manager


class Webhook(ThreadingHTTPServer):
    """An HTTP server on 127.0.0.1 keeping every notification Alertmanager posts to it."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Notified)
        self.notifications: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def received(self) -> list[dict[str, Any]]:
        """The notifications so far."""
        with self.lock:
            return list(self.notifications)


class _Notified(BaseHTTPRequestHandler):
    """Keeps the JSON body of each POST (Alertmanager's webhook payload)."""

    server: Webhook

    def do_POST(self) -> None:
        """Keep the notification and answer 200."""
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with self.server.lock:
            self.server.notifications.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's name)
        """Quiet: the test reads the notifications, not a log."""


def test_amtool_check_config() -> None:
    """The config passes amtool check-config, which finds the receivers and every inhibit rule."""
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    done = amtool("check-config", str(CONFIG))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
    assert f" - {len(config['inhibit_rules'])} inhibit rules" in done.stdout
    assert f" - {len(config['receivers'])} receivers" in done.stdout


def test_amtool_check_config_fails_on_a_broken_rule(tmp_path: Path) -> None:
    """The check can fail: an inhibit rule with a matcher Alertmanager cannot parse."""
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    config["inhibit_rules"][0]["target_matchers"] = ['alertname=~"Grstats(']
    broken = tmp_path / "alertmanager.yml"
    broken.write_text(yaml.safe_dump(config), encoding="utf-8")
    done = amtool("check-config", str(broken))
    assert done.returncode != 0
    assert "FAILED" in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("severity", "receiver"), [("critical", "grstats-pager"), ("warning", "grstats-dba")]
)
def test_routes(severity: str, receiver: str) -> None:
    """Critical alerts go to the pager, warnings to the DBAs' receiver (amtool's routing)."""
    critical = severity == "critical"
    alert = one("GrstatsGroupNoQuorum") if critical else one("GrstatsAgentDown", member_id=DB3)
    assert alert["severity"] == severity
    words = [f"{key}={value}" for key, value in alert.items()]
    done = amtool("config", "routes", "test", "--config.file", str(CONFIG), *words)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split() == [receiver]


def test_every_alert_names_what_the_inhibit_rules_match() -> None:
    """Each alert the unit tests fire carries the labels the inhibit rules compare."""
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    equal = {label for rule in config["inhibit_rules"] for label in rule["equal"]}
    assert equal == {"group_name", "member_id"}
    alerts = fired()
    assert {alert["alertname"] for alert in alerts} >= {
        "GrstatsAgentDown",
        "GrstatsSourceDown",
        "GrstatsMemberUnheard",
        "GrstatsGroupNoQuorum",
        "GrstatsGroupNoTolerance",
    }
    for alert in alerts:
        if "member_id" in alert:  # about a member: named by host:port and group
            assert alert["group_name"], alert
            assert alert["member"], alert
            assert alert["group"], alert
        elif "group_name" in alert:
            assert alert["group"], alert


def test_agent_down_mutes_its_members_unheard(alertmanager: Alertmanager) -> None:
    """GrstatsAgentDown and GrstatsSourceDown mute GrstatsMemberUnheard of their member only."""
    agent_down = one("GrstatsAgentDown", member_id=DB3)
    source_down = one("GrstatsSourceDown", member_id=DB1)
    unheard = one("GrstatsMemberUnheard", member_id=DB3)
    unheard_db1 = moved(unheard, DB1, "db1.example.net:3306")
    unheard_db2 = moved(unheard, DB2, "db2.example.net:3306")
    assert agent_down["group_name"] == unheard["group_name"] == ORDERS
    judged = alertmanager.judged(
        [agent_down, source_down, unheard, unheard_db1, unheard_db2], muted=[unheard, unheard_db1]
    )

    def status(labels: Labels) -> dict[str, Any]:
        found: dict[str, Any] = judged[key(labels)]
        return found

    for cause, effect in ((agent_down, unheard), (source_down, unheard_db1)):
        assert status(cause)["status"]["state"] == "active"
        assert status(effect)["status"]["state"] == "suppressed"
        assert status(effect)["status"]["inhibitedBy"] == [status(cause)["fingerprint"]]
    assert status(unheard_db2)["status"] == {
        "state": "active",
        "inhibitedBy": [],
        "silencedBy": [],
    }


def test_no_quorum_mutes_its_groups_member_alerts(alertmanager: Alertmanager) -> None:
    """GrstatsGroupNoQuorum mutes every alert naming a member of its group, and its NoTolerance."""
    alerts = fired()
    no_quorum = one("GrstatsGroupNoQuorum", group_name=ORDERS)
    expected = [
        alert
        for alert in alerts
        if alert.get("group_name") == ORDERS
        and ("member" in alert or alert["alertname"] == "GrstatsGroupNoTolerance")
    ]
    judged = alertmanager.judged(alerts, muted=expected)
    muted = {name for name, alert in judged.items() if alert["status"]["state"] == "suppressed"}
    assert muted == {key(alert) for alert in expected}
    names = {dict(name)["alertname"] for name in muted}
    assert names >= {
        "GrstatsMemberUnheard",
        "GrstatsMemberUnreachable",
        "GrstatsMemberError",
        "GrstatsApplierLagHigh",
        "GrstatsAgentDown",
        "GrstatsGroupNoTolerance",
    }
    # Alertmanager names the first source that mutes an alert: the no quorum, but for a
    # member unheard whose agent is down (or cannot read its server), that agent's alert.
    fingerprint = judged[key(no_quorum)]["fingerprint"]
    agents = {
        judged[key(alert)]["fingerprint"]
        for alert in alerts
        if alert["alertname"] in {"GrstatsAgentDown", "GrstatsSourceDown"}
    }
    for name in muted:
        by = judged[name]["status"]["inhibitedBy"]
        if dict(name)["alertname"] == "GrstatsMemberUnheard":
            assert len(by) == 1, dict(name)
            assert by[0] in agents | {fingerprint}, dict(name)
        else:
            assert by == [fingerprint], dict(name)
    other = one("GrstatsGroupNoTolerance", group_name=OTHER)
    assert judged[key(other)]["status"]["state"] == "active"


def test_a_muted_alert_is_never_notified(tmp_path: Path) -> None:
    """With a webhook receiver: the agent's alert is notified; its member's unheard never is."""
    webhook = Webhook()
    thread = threading.Thread(target=webhook.serve_forever, daemon=True)
    thread.start()
    try:
        config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
        url = f"http://127.0.0.1:{webhook.server_address[1]}/"
        for receiver in config["receivers"]:
            receiver["webhook_configs"] = [{"url": url, "send_resolved": False}]
        config["route"].update(group_wait="1s", group_interval="1s")
        path = tmp_path / "alertmanager.yml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        with run_alertmanager(path, tmp_path) as manager:
            agent_down = one("GrstatsAgentDown", member_id=DB3)
            unheard = one("GrstatsMemberUnheard", member_id=DB3)
            manager.post([agent_down, unheard])
            wait_until(webhook.received, START_TIMEOUT_S, "a notification", detail=manager.logs)
            sentinel = moved(unheard, DB2, "db2.example.net:3306")  # not muted: notified later
            manager.post([sentinel])

            def notified() -> list[Labels]:
                return [
                    alert["labels"]
                    for notification in webhook.received()
                    for alert in notification["alerts"]
                ]

            wait_until(
                lambda: sentinel in notified(),
                START_TIMEOUT_S,
                "the sentinel's notification",
                detail=manager.logs,
            )
            assert agent_down in notified()
            assert unheard not in notified()
            assert {n["groupLabels"]["group_name"] for n in webhook.received()} == {ORDERS}
    finally:
        webhook.shutdown()
        webhook.server_close()
        thread.join(timeout=5)
