"""Handover without gaps or doubles: every agent of a group scraped while agents die (issue 46).

Three ``grstats agent --source simulated`` processes of one group, at the defaults (period 1 s,
silence 10 periods, ``metrics.scope = "own"``): nothing is shortened, so the issue's 30 s is
checked against the handover the defaults give (the silence plus at most 2.5 periods). The test
reads every agent's ``/metrics`` every second, as a Prometheus that scrapes them all does, and a
real ``prometheus`` (tests.deploy.test_prometheus_live's way) scrapes them every second too and
evaluates the rules as shipped. The agents' member ids, lowest first, are L, M and H; the changes
are real kills (``kill -9``) and restarts with the same state directory and addresses:

1. L's agent, the exporter of L's series and the group's, is killed: M takes both over;
2. M's agent, the stand-in, is killed: H exports every member and the group;
3. L's agent returns: it exports L, M (whose agent is still down) and the group;
4. M's agent returns: each agent exports its own member again, L the group.

Once 30 s have passed since a change, each member's series and the group's must come from
exactly one agent, the one the rule (:mod:`grstats.agent.metrics_scope`) names: every scrape
from at most 30 s after each change until the next one must show that (the handover times are
printed). MySQL's counters of a member (COUNT_TRANSACTIONS_CHECKED of
replication_group_member_stats, ``Pipeline_member_stats`` in
plugin/group_replication/include/pipeline_stats.h) never reset while its server runs, and the
simulated server runs on in a restarted agent from the group's start: Prometheus must see no
reset in them, ``increase()`` must count the rise while the member's agent was down, and the
shipped rate record must never lack a member. The records of gauges lack a member while no
agent exports it, for the silence: the test holds them to that, as the docs say.

``prometheus`` (Debian's package) is required under CI (CI=true) and skipped elsewhere when it
is missing.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Self

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from grstats.cli.demo import free_ports
from tests.deploy.test_prometheus_live import RULES, Stack, ready, start, stop
from tests.programs import require
from tests.waiting import wait_until

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Iterator
    from pathlib import Path

#: One worker runs the module: its module-scoped run (43 s of agent processes and Prometheus) is
#: built once, not on each worker that takes one of its tests.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("metrics-handover")]

MEMBERS = 3
#: The longest a member's or the group's series may be without their one exporter (issue 46).
HANDOVER_S = 30.0
#: The test's scrapes: one read of every agent's /metrics this often.
SCRAPE_S = 1.0
#: Scrapes that must show one exporter of everything before the next change.
HOLD_SCRAPES = 3
#: The member counter the test follows (a MySQL counter: it never resets while the server runs).
COUNTER = "grstats_transactions_checked_total"
#: The shipped record of its rate, one series per member.
RATE_RECORD = "group_name_member_id:grstats_transactions_checked:max_rate5m"
GROUP = "group"  #: the key of the group's series in Scrape.exporters()


@dataclass(frozen=True)
class Seen:
    """What one agent's ``/metrics`` held at one scrape."""

    own: str  # its own member (grstats_member_source_info{source="local"})
    states: frozenset[str]  # the members of its grstats_member_state series
    counters: dict[str, float]  # COUNTER by member
    group: bool  # whether it served grstats_group_status


@dataclass(frozen=True)
class Scrape:
    """One read of every agent: at ``at`` (monotonic), each agent's ``Seen`` or None (down)."""

    at: float
    agents: tuple[Seen | None, ...]

    def exporters(self) -> dict[str, list[str]]:
        """Who served each member's series and the group's, by own member, one entry per agent.

        An agent counts for a member when it serves both the member's state and its counter.
        """
        found: dict[str, list[str]] = {}
        for seen in self.agents:
            if seen is None:
                continue
            for member in seen.states | seen.counters.keys():
                if member in seen.states and member in seen.counters:
                    found.setdefault(member, []).append(seen.own)
                else:  # half a member's series: never one exporter
                    found.setdefault(member, []).append(f"{seen.own} (part)")
            if seen.group:
                found.setdefault(GROUP, []).append(seen.own)
        return found


def read(address: str) -> Seen | None:
    """One scrape of the agent at ``address``; None when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=0.8) as response:
            text = response.read().decode()
    except OSError:
        return None
    own = ""
    states: set[str] = set()
    counters: dict[str, float] = {}
    group = False
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            member = sample.labels.get("member_id", "")
            if sample.name == "grstats_member_source_info" and sample.labels["source"] == "local":
                own = member
            elif sample.name == "grstats_member_state":
                states.add(member)
            elif sample.name == COUNTER:
                counters[member] = sample.value
            elif sample.name == "grstats_group_status":
                group = True
    return Seen(own, frozenset(states), counters, group)


class Scraper:
    """Reads every agent's /metrics every SCRAPE_S seconds in a thread of its own."""

    def __init__(self, addresses: list[str]) -> None:
        self.addresses = addresses
        self.scrapes: list[Scrape] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="scraper", daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        due = time.monotonic()
        while not self._stop.is_set():
            at = time.monotonic()
            self.scrapes.append(Scrape(at, tuple(read(a) for a in self.addresses)))
            due += SCRAPE_S
            self._stop.wait(max(0.0, due - time.monotonic()))


@dataclass(frozen=True)
class Change:
    """One kill or restart: when, and who must export what once it is over."""

    what: str
    at: float  # monotonic
    wall: float  # time.time(), for Prometheus
    expected: dict[str, list[str]]  # Scrape.exporters() once the handover is over


@dataclass
class Run:
    """The scenario's record: the changes, every scrape, and the Prometheus that watched."""

    stack: Stack
    members: list[str]  # L, M, H: the member ids, lowest first
    changes: list[Change] = field(default_factory=list)
    scrapes: list[Scrape] = field(default_factory=list)
    ended: float = 0.0  # wall clock time of the last scrape

    def settled(self, index: int) -> Scrape | None:
        """The first scrape after change ``index`` from which every one until the next matches."""
        change = self.changes[index]
        until = self.changes[index + 1].at if index + 1 < len(self.changes) else float("inf")
        after = [s for s in self.scrapes if change.at < s.at < until]
        first: Scrape | None = None
        for scrape in after:
            if scrape.exporters() != change.expected:
                first = None
            elif first is None:
                first = scrape
        return first


def agent_command(
    index: int, gossip: list[str], metrics: str, start_s: int, workdir: Path
) -> list[str]:
    """``grstats agent`` of member ``index`` at the defaults, serving /metrics on ``metrics``."""
    return [
        *(sys.executable, "-m", "grstats", "agent", "--source", "simulated"),
        *("--scenario", "steady", "--members", str(MEMBERS), "--member-index", str(index)),
        *("--group-start", str(start_s), "--listen", gossip[index], "--peers", ",".join(gossip)),
        *("--state-dir", str(workdir / f"state-{index}"), "--metrics-listen", metrics),
        *("--log-format", "json"),
    ]


def prometheus_config(agents: list[str]) -> str:
    """prometheus.yml: every agent in job grstats, scraped and evaluated every second."""
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RULES)],
        "scrape_configs": [{"job_name": "grstats", "static_configs": [{"targets": agents}]}],
    }
    return yaml.safe_dump(config, sort_keys=False)


def known(scraper: Scraper) -> list[str]:
    """Each agent's own member, by agent, once every agent serves it; else []."""
    if not scraper.scrapes:
        return []
    own = [seen.own if seen else "" for seen in scraper.scrapes[-1].agents]
    return own if all(own) else []


def held(scraper: Scraper, change: Change) -> bool:
    """Whether the last HOLD_SCRAPES scrapes since ``change`` show its expected exporters."""
    last = [s for s in scraper.scrapes if s.at > change.at][-HOLD_SCRAPES:]
    return len(last) == HOLD_SCRAPES and all(s.exporters() == change.expected for s in last)


def expect(owners: dict[str, str], group: str) -> dict[str, list[str]]:
    """Scrape.exporters() when ``owners`` maps each member to its one exporter."""
    return {**{member: [agent] for member, agent in owners.items()}, GROUP: [group]}


@pytest.fixture(name="run", scope="module")
def _run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """Three agents scraped every second by the test and by Prometheus, through four changes."""
    prometheus = require("prometheus", "prometheus")
    workdir = tmp_path_factory.mktemp("metrics-handover")
    ports = free_ports(2 * MEMBERS + 1)
    gossip = [f"127.0.0.1:{port}" for port in ports[:MEMBERS]]
    metrics = [f"127.0.0.1:{port}" for port in ports[MEMBERS : 2 * MEMBERS]]
    web = f"127.0.0.1:{ports[-1]}"
    start_s = int(time.time())
    (workdir / "prometheus.yml").write_text(prometheus_config(metrics), encoding="utf-8")
    processes: list[subprocess.Popen[bytes]] = []

    def agent(index: int) -> subprocess.Popen[bytes]:
        command = agent_command(index, gossip, metrics[index], start_s, workdir)
        process = start(command, workdir / f"agent-{index}-{len(processes)}.log")
        processes.append(process)
        return process

    try:
        agents = [agent(index) for index in range(MEMBERS)]
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
        stack = Stack(f"http://{web}", tuple(agents), tuple(metrics), workdir)
        wait_until(lambda: ready(stack, processes), 20, "Prometheus is ready", detail=stack.logs)
        with Scraper(metrics) as scraper:
            own = wait_until(
                lambda: known(scraper), 30, "every agent serves its own member", detail=stack.logs
            )
            low, mid, high = ordered = sorted(own)
            index = {member: own.index(member) for member in ordered}
            run = Run(stack, ordered)

            def settle(what: str, expected: dict[str, list[str]]) -> None:
                run.changes.append(Change(what, time.monotonic(), time.time(), expected))
                wait_until(
                    lambda: held(scraper, run.changes[-1]),
                    HANDOVER_S + (HOLD_SCRAPES + 2) * SCRAPE_S,
                    f"{what}: every series from its one exporter",
                    detail=lambda: f"{scraper.scrapes[-1].exporters()}\n{stack.logs()}",
                )

            def kill(member: str) -> None:
                os.kill(agents[index[member]].pid, signal.SIGKILL)
                agents[index[member]].wait()

            settle("start", expect({low: low, mid: mid, high: high}, low))
            wait_until(
                lambda: len(stack.query(RATE_RECORD)) == MEMBERS,
                20,
                "Prometheus recorded every member's rate",
                detail=stack.logs,
            )
            kill(low)
            settle("L's agent killed", expect({low: mid, mid: mid, high: high}, mid))
            kill(mid)
            settle("M's agent killed", expect({low: high, mid: high, high: high}, high))
            agents[index[low]] = agent(index[low])
            settle("L's agent back", expect({low: low, mid: low, high: high}, low))
            agents[index[mid]] = agent(index[mid])
            settle("M's agent back", expect({low: low, mid: mid, high: high}, low))
            run.ended = time.time()
        run.scrapes = scraper.scrapes
        yield run
    finally:
        stop(processes)


def test_each_series_has_one_exporter_within_30_s_of_every_change(run: Run) -> None:
    """From at most 30 s after each kill or restart to the next, every scrape gives each series once.

    What the scrapes showed meanwhile is printed: series with no exporter (for the silence, at a
    kill) or with two (for a period, at a return). A return leaves no series without an
    exporter: a restarted agent does not take a dead agent's last rows, relayed to it, for
    news of that agent (``agents_heard``; before, the lowest agent's restart left the members
    it stands in for without one for the silence, 10 scrapes).
    """
    names = dict(zip(run.members, "LMH", strict=True)) | {GROUP: GROUP}
    for index, change in enumerate(run.changes[1:], start=1):
        settled = run.settled(index)
        assert settled is not None, f"{change.what}: never one exporter of each series"
        took = settled.at - change.at
        before = [s.exporters() for s in run.scrapes if change.at < s.at < settled.at]
        lacked = Counter(names[k] for e in before for k in change.expected if not e.get(k))
        doubled = Counter(names[k] for e in before for k, v in e.items() if len(v) > 1)
        print(
            f"{change.what}: each series from its one exporter {took:.1f} s after; of the "
            f"{len(before)} scrapes before, series lacking {dict(lacked)}, twice {dict(doubled)}"
        )
        assert took <= HANDOVER_S, change.what
        if "back" in change.what:
            assert not lacked, f"{change.what}: series without an exporter {dict(lacked)}"


def test_prometheus_sees_no_reset_of_a_member_counter_and_its_whole_rise(run: Run) -> None:
    """Prometheus: no series of a member's counter resets; increase() rises as the unmoved member's.

    Each exporter gives a member's counter under its own ``instance``, and a stand-in's copy of
    a member whose agent is not heard is that member's last row, constant: so no series resets,
    the stand-ins' series add nothing (``max by`` and ``sum without (instance)`` agree), and the
    rise while the member's agent was down lands on its own series when it returns.
    """
    low, mid, high = run.members
    for member in run.members:  # the member's counter did not reset (its own agent's values)
        values = [
            seen.counters[member]
            for scrape in run.scrapes
            for seen in scrape.agents
            if seen is not None and seen.own == member and member in seen.counters
        ]
        assert values == sorted(values), member
    exporting = {
        member: {
            run.stack.metrics[i]
            for s in run.scrapes
            for i, seen in enumerate(s.agents)
            if seen is not None and member in seen.counters
        }
        for member in run.members
    }
    first = run.changes[1]  # the first kill
    end = str(run.ended)
    window = f"{int(run.ended - first.wall) + 3}s"  # from before the first kill to the end
    resets = run.stack.api("/api/v1/query", query=f"resets({COUNTER}[{window}])", time=end)
    series = {
        (r["metric"]["member_id"], r["metric"]["instance"]): float(r["value"][1])
        for r in resets["result"]
    }
    assert {m: {i for (n, i) in series if n == m} for m in run.members} == exporting
    assert set(series.values()) == {0.0}, series  # no series of a member's counter resets
    increases = {}
    for way in ("max by (group_name, member_id)", "sum without (instance)"):
        answer = run.stack.api(
            "/api/v1/query", query=f"{way} (increase({COUNTER}[{window}]))", time=end
        )
        increases[way] = {r["metric"]["member_id"]: float(r["value"][1]) for r in answer["result"]}
    print(f"resets over {window}: {series}\nincrease over {window}: {increases}")
    for found in increases.values():  # the handed-over members rose as much as the unmoved one
        assert found[low] == pytest.approx(found[high], rel=0.05)
        assert found[mid] == pytest.approx(found[high], rel=0.05)
    assert increases["max by (group_name, member_id)"] == increases["sum without (instance)"]


#: A record of each member's gauges and one of the group's, as the dashboards read them.
MEMBER_GAUGE = "group_name_member_id:grstats_agent_up:max"
GROUP_GAUGE = "group_name:grstats_group_tolerance:min"


def gaps(run: Run, expr: str, label: str) -> dict[str, list[int]]:
    """The seconds ``expr`` is absent, each time, from the first kill to the end, by ``label``."""
    first = run.changes[1].wall
    answer = run.stack.api(
        "/api/v1/query_range", query=expr, start=str(first), end=str(run.ended), step="1"
    )
    steps = {
        series["metric"][label]: [round(float(at) - first) for at, _ in series["values"]]
        for series in answer["result"]
    }
    last = max(at[-1] for at in steps.values())  # the last evaluation in the range
    found: dict[str, list[int]] = {}
    for key, at in steps.items():
        assert at[0] == 0, key  # there at the first kill
        found[key] = [b - a - 1 for a, b in pairwise([*at, last + 1]) if b - a > 1]
    return found


def test_a_member_gauges_are_absent_for_at_most_the_handover(run: Run) -> None:
    """The records of gauges lack a member only while no agent exports it (< 30 s); rates never.

    Its agent's target is down at once, the stand-in waits for the silence: the member's
    record (and so a sum over the members) lacks it for the silence, 10 s at the defaults, as
    the group's records lack the group when the group's exporter dies. The member never handed
    over (H) lacks nothing, and the rate records lack no member: the dead agent's series stays
    in their 5-minute window.
    """
    low, mid, high = run.members
    members = gaps(run, MEMBER_GAUGE, "member_id")
    group = gaps(run, GROUP_GAUGE, "group_name")
    rates = gaps(run, RATE_RECORD, "member_id")
    print(f"absent (s) from {MEMBER_GAUGE}: {members}, {GROUP_GAUGE}: {group}, rates: {rates}")
    assert members.keys() == rates.keys() == set(run.members)
    assert members[high] == []
    assert members[low]  # its own agent killed: absent for the silence
    assert members[mid]
    assert max(members[low] + members[mid]) <= HANDOVER_S
    (found,) = group.values()
    assert found  # the group's exporter killed: likewise
    assert max(found) <= HANDOVER_S
    assert rates == {member: [] for member in run.members}


def test_one_alert_per_member_across_its_stand_ins_deaths(run: Run) -> None:
    """GrstatsMemberUnheard of a member keeps its one start when its stand-in dies (one alert).

    While the member's agent is down its record is 0 (the alert pends); when the agent that
    stood in for it dies, or the lowest agent restarts, the record lacks the member for the
    silence (above). The shipped alerts read their records with ``last_over_time(...[2m])``,
    so the gap does not end the alert: it keeps the start it had (with the records read
    directly it started twice for each of L and M: a second notification for one incident).
    ``ALERTS_FOR_STATE`` holds each alert's start (activeAt).
    """
    low, mid, high = run.members
    first = run.changes[1].wall
    answer = run.stack.api(
        "/api/v1/query_range",
        query='ALERTS_FOR_STATE{alertname="GrstatsMemberUnheard"}',
        start=str(first),
        end=str(run.ended),
        step="1",
    )
    starts: dict[str, list[float]] = {}
    for series in answer["result"]:
        values = sorted({float(value) for _, value in series["values"]})
        starts.setdefault(series["metric"]["member_id"], []).extend(values)
    print(
        f"GrstatsMemberUnheard's starts (s after the first kill): "
        f"{ {m: [round(v - first, 1) for v in at] for m, at in starts.items()} }"
    )
    assert high not in starts  # its agent never stopped
    assert len(starts[low]) == 1  # L unheard from its kill, through H standing in after M's
    assert len(starts[mid]) == 1  # M unheard from its kill, through L's restart
