"""Prometheus metrics: the members' rows as the agents serve them, and the agent's own figures.

``grstats agent --metrics-listen HOST:PORT`` serves ``/metrics`` in Prometheus' text format
(:mod:`grstats.agent.metrics_http`, an HTTP server in threads of its own). Three kinds of
series:

* **Members' rows**, from the tables the agent serves (the same ones ``grstats query
  --extended`` prints), one series per member and metric (of the members the agent exports,
  below: its own, by default, and those whose agents are not heard), labelled ``group_name``
  (GR's ``group_replication_group_name``) and ``member_id`` (its server_uuid) **only**: a label
  that changed with the relay path a row arrived by, or with a role, would start a new series
  and break ``rate()``. The member's address and version are on
  ``grstats_member_info{group_name, member_id, member_host, member_port, member_version} 1``,
  which changes only when the member is moved or upgraded (its role is
  ``grstats_member_primary``, which a failover does not relabel), to join on::

      grstats_applier_lag_seconds
        * on (group_name, member_id) group_left (member_host, member_port) grstats_member_info

  The agent the row came through is a series of its own, the one that changes with the relay
  path: ``grstats_member_source_info{group_name, member_id, source} 1`` (``local`` for the
  agent's own member, else the relaying agent's address).

  ``grstats_agent_up`` (1 while the member is connected, WL#2860's CONNECTED),
  ``grstats_member_in_view``, ``grstats_member_state{state}`` (1 for the current MEMBER_STATE,
  0 for the four others), ``grstats_member_primary``, ``grstats_row_age_seconds``; MySQL's
  counters as counters (``grstats_transactions_checked_total``, ``..._conflicts_detected_total``,
  ``..._transactions_remote_applied_total``, ``..._transactions_local_proposed_total``,
  ``..._transactions_local_rollback_total``) and its queues as gauges
  (``grstats_certifier_queue_transactions``, ``grstats_applier_queue_transactions``,
  ``grstats_certification_rows``: the certification database shrinks at every garbage
  collection, so it is not a counter, though mysqld_exporter exposes it as one);
  ``grstats_applier_lag_seconds``, ``grstats_applier_stage_seconds{stage}`` (the lag by
  stage: transport, waiting, apply), ``grstats_member_transactions_behind`` (ProxySQL's
  ``transactions_behind``; both absent while NULL),
  ``grstats_member_recovery_transactions_left`` and ``grstats_member_recovery_eta_seconds``
  (a RECOVERING member's or an applier backlog's progress, :mod:`grstats.agent.recovery`;
  absent while nothing is left or it is unknown), ``grstats_member_throttling`` (1 while
  flow control holds that writer back), ``grstats_member_clock_skew_seconds`` (its clock
  minus the median of the members' clocks; absent while unknown) and
  ``grstats_member_errant_transactions`` (GTIDs it executed that the group lacks, which make
  MySQL refuse its next join; absent while unknown) and ``grstats_member_split_brain`` (1
  while the member is not part of the majority group but its own server says ONLINE or
  RECOVERING, MySQL Shell's "split-brain!"; 0 otherwise) and
  ``grstats_member_view_disagreements`` (how many disagreements between the members' own
  views name the member: split-brain, a lagging view id, a one-way link; 0 when none). A
  member whose agent is not
  heard keeps every series, at its last values, with ``grstats_agent_up`` 0, so that an alert
  on it does not go silent with the member. A member's stats series start once its stats were
  heard.
* **The group's verdict** (:mod:`grstats.agent.status`, MySQL Shell's ``cluster.status()``),
  from one agent of the group by default (below), labelled ``group_name``:
  ``grstats_group_info{group_label} 1`` (the group's human name, its InnoDB Cluster name or
  the agents' ``group_label``, ``''`` when none: alerts name the group by it),
  ``grstats_group_status{status}`` (1 for the current status of
  :data:`~grstats.core.rows.status.STATUSES`, 0 for the five others),
  ``grstats_group_tolerance`` (how many more members can fail with quorum kept),
  ``grstats_group_members_not_active`` (Shell's "N members are not active": the known members
  not ONLINE, a member once in the view until ``grstats members forget``),
  ``grstats_group_throttled`` (1 while flow control holds some writer back),
  ``grstats_stable_set_stalled_seconds`` (how long the stable set has not advanced while
  transactions are certified, from 120 s; 0 while it advances) and
  ``grstats_flow_control_applier_threshold`` / ``..._certifier_threshold`` (the thresholds the
  verdict judges the queues with: the writers' settings, MySQL's 25000 when unknown), so that
  an alert compares a queue with them.
* **The agent's own health and figures**, with no member label (Prometheus' ``instance``
  tells agents apart): ``grstats_build_info{version} 1``, ``grstats_source_up`` (1 when the
  agent's last read of its own member succeeded, 0 when it failed),
  ``grstats_source_read_errors_total``, ``grstats_source_read_duration_seconds`` (a histogram
  of every read, failed ones included, 6 buckets), ``grstats_peers_heard`` (the other members
  whose agent it hears now); messages and bytes sent per ``kind`` (push, exchange), received
  per ``kind`` and ``sender`` (``known``, or ``unknown`` for a member it does not know), failed
  pushes and exchanges per ``peer`` (an address: a series only for a peer that failed), the
  round trip of the exchanges (``grstats_peer_round_trip_seconds``, a summary: its sum and
  count), period overruns; and which grstats each member's agent runs:
  ``grstats_peer_info{member_id, version, protocol_revision} 1`` (``version="unknown"`` and
  ``protocol_revision="1"`` for an agent older than the fields; docs/upgrades.md), relabelled
  only when that agent is upgraded or downgraded, for this agent's own member and, as their
  messages to this agent say, for the members it exports (the scope below) and those whose
  agents speak an older protocol revision (they serve none of their own).
  No series is per peer but the failures, and none per process (the agent's registry holds no
  process or Python collector): with scope ``own`` an agent's own figures are 25 series in a
  steady group of any size (more while pushes fail, a stranger sends, or an agent is unheard),
  so that scraping every agent of a 9-member group keeps at most 60 series per member (README,
  "Cardinality"; ``tests/agent/test_metrics_cardinality.py``).
  From every member's events (:mod:`grstats.core.events`), counted once each and only
  those after this agent started: ``grstats_primary_changes_total{group_name}`` (primaries
  elected) and ``grstats_member_state_changes_total{group_name, member_id, state}``, served
  as the group's and the member's series are (the scope below): a handover shows the new
  exporter's count, since its own start, under its ``instance``.

No series of a member or of the group is served while the group's name is unknown (the agent's
member in no group and no other member's view heard), so that ``group_name`` never changes from
``''`` to a name.

**Which agent exports what** (``metrics.scope``, :mod:`grstats.agent.metrics_scope`). With
``own``, the default, each member's series and the group's come from one agent, chosen alike by
every agent from the gossip: an agent exports its own member; a member whose agent is not heard,
and the group's series (the verdict, quorum, tolerance, primary, thresholds, stable set,
``grstats_primary_changes_total``), come from the lowest member id whose agent is heard. Scrape
**every** agent of the group: each member's series and the group's are there once (with the
``instance`` of the agent that exports them), so ``sum by (group_name)`` counts each member
once, and ``grstats_agent_up == 0`` is a member no agent hears. A member's series move to
another agent once its own agent was not heard for the silence (``silence_periods * period_s``,
10 s by default), and come back at once when it is heard again (the other agent stops within a
period): at most the silence plus 2.5 periods (relays and the rendering ahead), 12.5 s at the
defaults. With ``all``, every agent exports every member's series and its own verdict, for a
Prometheus that scrapes **one** agent per group; scraping several, keep one series per member
with ``max by (group_name, member_id)`` (``min`` instead: a member some agent does not hear),
else each member counts once per agent; ``max by (group_name, status) (grstats_group_status)``
is 1 for every status some agent gives. The agent's own health is per agent in either scope:
keep ``instance``.

**When the series are built.** The tables are built on the agent's event loop (a scrape runs in
the HTTP server's thread and must not read the gossip state while the loop changes it). While
a scraper comes (within :data:`~grstats.agent.metrics_http.PREPARE_WHILE_SCRAPED_S`), the agent
renders the whole exposition ahead, once a period at mid-period, when the period's burst of
gossip is over, and scrapes are answered with those bytes for 1.5 periods whatever changed
since: a scrape never waits for the loop, and what it shows is at most 1.5 periods old (the
gossip itself moves once a period). Otherwise (the first scrape after a quiet spell, a loop
running late) a scrape reuses the families of the last build while the agent's state is
unchanged (``version``: the gossip state's changes, the last read, the periods) and the build
is younger than :data:`REBUILD_AFTER_S`, else waits for a build on the loop. The agent's own
counters are thread-safe prometheus-client objects, as old as the rendering that shows them.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import TYPE_CHECKING, Protocol, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Summary
from prometheus_client.core import Metric as MetricFamily

from grstats import __version__
from grstats.agent.metrics_scope import EVERYTHING, Scope
from grstats.agent.metrics_series import MEMBER_STATES, SeriesInput, series_scope, table_series
from grstats.core.build import PROTOCOL_REVISION

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence

    from prometheus_client.core import Metric

__all__ = [
    "MEMBER_STATES",
    "REBUILD_AFTER_S",
    "AgentMetrics",
    "SeriesInput",
    "TablesCollector",
]

#: How long a build of the members' series may be reused while the agent's state is unchanged.
REBUILD_AFTER_S = 1.0
#: How long a scrape waits for the agent's loop to build the series.
BUILD_TIMEOUT_S = 5.0
_T = TypeVar("_T")
#: The read histogram's buckets: a read of a member takes milliseconds, and the sources
#: give up at seconds; 6 buckets, each about 4 times the last, keep its series few (issue 46).
_READ_BUCKETS = (0.0025, 0.01, 0.05, 0.25, 1.0, 5.0)


class RendersAhead(Protocol):
    """What ``/metrics`` serves, rendered ahead (``grstats.agent.metrics_http.Exposition``)."""

    def prepare(self, valid_s: float) -> None:
        """Render now, on the agent's loop, for scrapes in the next ``valid_s`` seconds."""
        ...


class AgentMetrics:
    """The agent's own figures, and the registry ``/metrics`` serves.

    The agent calls :meth:`sent`, :meth:`received`, :meth:`failed`, :meth:`round_trip`,
    :meth:`overran`, :meth:`source_read`, :meth:`peer_build` and :meth:`peer_gone` from its
    event loop; all are cheap (a dict lookup and an add) and thread-safe, since scrapes read
    them from the HTTP server's thread.
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.tables: TablesCollector | None = None  #: the members' series, once watched
        #: what ``/metrics`` serves, once its server runs (:mod:`grstats.agent.metrics_http`)
        self.exposition: RendersAhead | None = None
        Gauge(
            "grstats_build_info",
            "1, labelled with the grstats version this agent runs.",
            ("version",),
            registry=self.registry,
        ).labels(__version__).set(1)
        self._source_up = Gauge(
            "grstats_source_up",
            "1 when the agent's last read of its own member succeeded, 0 when it failed.",
            registry=self.registry,
        )
        self._read_errors = Counter(
            "grstats_source_read_errors",
            "Reads of the agent's own member that failed (server down, refused, too slow).",
            registry=self.registry,
        )
        self._read_duration = Histogram(
            "grstats_source_read_duration_seconds",
            "How long each read of the agent's own member took, failed ones included.",
            buckets=_READ_BUCKETS,
            registry=self.registry,
        )
        # Per kind, not per peer: one series per peer at every agent would be the fleet's most
        # series (issue 46); the peers that fail are on grstats_gossip_errors.
        self._messages_sent = Counter(
            "grstats_gossip_messages_sent",
            "Gossip messages sent to the peer agents, per kind (push, exchange).",
            ("kind",),
            registry=self.registry,
        )
        self._bytes_sent = Counter(
            "grstats_gossip_bytes_sent",
            "Bytes of gossip messages sent, per kind (protobuf, without gRPC framing).",
            ("kind",),
            registry=self.registry,
        )
        self._messages_received = Counter(
            "grstats_gossip_messages_received",
            "Gossip messages received, per kind and sender (known: a member this agent knows; "
            "unknown: another).",
            ("kind", "sender"),
            registry=self.registry,
        )
        self._bytes_received = Counter(
            "grstats_gossip_bytes_received",
            "Bytes of gossip messages received, per kind and sender (protobuf, without gRPC "
            "framing).",
            ("kind", "sender"),
            registry=self.registry,
        )
        self._errors = Counter(
            "grstats_gossip_errors",
            "Pushes and exchanges that failed (unreachable, timed out, refused).",
            ("peer", "kind"),
            registry=self.registry,
        )
        self._round_trip = Summary(
            "grstats_peer_round_trip_seconds",
            "Round trip of each push-pull exchange with a peer agent (its sum and count: the "
            "mean is their rates' ratio).",
            registry=self.registry,
        )
        self._overruns = Counter(
            "grstats_period_overruns",
            "Periods that ended after the next one should have started.",
            registry=self.registry,
        )
        # Served as far as the scope exports its members, with this agent's own (watch()).
        self._peer_info = Gauge(
            "grstats_peer_info",
            "1, labelled with the grstats version and protocol revision each member's agent "
            "runs, as its messages say (unknown and 1: an agent older than the fields).",
            ("member_id", "version", "protocol_revision"),
            registry=None,
        )
        self._peer_labels: dict[str, tuple[str, str, str]] = {}  # member -> its series' labels
        # Served with the members' series, as far as the scope exports them (watch()).
        self._primary_changes = Counter(
            "grstats_primary_changes",
            "Primaries elected in the group (MEMBER_ROLE events to PRIMARY) since this agent "
            "started, as the members' events say.",
            ("group_name",),
            registry=None,
        )
        self._state_changes = Counter(
            "grstats_member_state_changes",
            "MEMBER_STATE changes of each member since this agent started, per new state, as "
            "the member's events say (UNREACHABLE as this agent's member saw it).",
            ("group_name", "member_id", "state"),
            registry=None,
        )

    def source_read(self, seconds: float, *, ok: bool) -> None:
        """Note one read of the agent's own member: its duration and whether it succeeded."""
        self._read_duration.observe(seconds)
        self._source_up.set(1 if ok else 0)
        if not ok:
            self._read_errors.inc()

    def sent(self, peer: str, kind: str, size: int) -> None:  # noqa: ARG002  (per kind only)
        """Count one message of ``size`` bytes sent to ``peer`` (counted per kind)."""
        self._messages_sent.labels(kind).inc()
        self._bytes_sent.labels(kind).inc(size)

    def received(self, member: str, kind: str, size: int) -> None:
        """Count one message of ``size`` bytes from ``member``'s agent (``unknown``: not known)."""
        sender = "unknown" if member == "unknown" else "known"
        self._messages_received.labels(kind, sender).inc()
        self._bytes_received.labels(kind, sender).inc(size)

    def failed(self, peer: str, kind: str) -> None:
        """Count one failed push or exchange with ``peer``."""
        self._errors.labels(peer, kind).inc()

    def round_trip(self, peer: str, seconds: float) -> None:  # noqa: ARG002  (of all peers)
        """Observe one exchange's round trip (with any peer: one summary per agent)."""
        self._round_trip.observe(seconds)

    def overran(self) -> None:
        """Count one period overrun."""
        self._overruns.inc()

    def peer_build(self, member: str, version: str, revision: int) -> None:
        """Say which grstats ``member``'s agent runs (``version`` ``''``: it did not say).

        The member's series is replaced only when what it runs changed.
        """
        labels = (member, version or "unknown", str(revision))
        before = self._peer_labels.get(member)
        if before == labels:
            return
        if before is not None:
            self._peer_info.remove(*before)
        self._peer_info.labels(*labels).set(1)
        self._peer_labels[member] = labels

    def peer_gone(self, member: str) -> None:
        """Drop ``member``'s ``grstats_peer_info`` series (the member was forgotten)."""
        before = self._peer_labels.pop(member, None)
        if before is not None:
            self._peer_info.remove(*before)

    def events(self, group_name: str, primaries: int, states: Sequence[tuple[str, str]]) -> None:
        """Count primary elections and (member, state) changes newly found in the events."""
        if primaries:
            self._primary_changes.labels(group_name).inc(primaries)
        for member, state in states:
            self._state_changes.labels(group_name, member, state).inc()

    def prepare(self, valid_s: float) -> None:
        """Render ``/metrics`` ahead, on the agent's loop (mid-period); see ``Exposition``."""
        if self.exposition is not None:
            self.exposition.prepare(valid_s)

    def watch(
        self,
        build: Callable[[], SeriesInput],
        version: Callable[[], object],
        loop: asyncio.AbstractEventLoop,
    ) -> TablesCollector:
        """Add the members' and the group's series: see :class:`TablesCollector`.

        The event counters and ``grstats_peer_info`` come after them, as far as the scope of
        their build exports them (collected after the build, so the same scope as the series
        beside them).
        """
        collector = TablesCollector(build, version, loop)
        self.registry.register(collector)
        counters = (self._primary_changes, self._state_changes)
        self.registry.register(_ScopedCounters(collector, counters))
        self.registry.register(_PeerInfo(collector, self._peer_info))
        self.tables = collector
        return collector


class _ScopedCounters:
    """Counters of the group or its members, served where the last build's scope says."""

    def __init__(self, tables: TablesCollector, counters: Sequence[Counter]) -> None:
        self._tables = tables
        self._counters = counters

    def describe(self) -> list[Metric]:
        """Nothing up front: which series are served depends on the scope at scrape time."""
        return []

    def collect(self) -> Iterator[Metric]:
        """Each counter's samples of the members (or the group) the scope exports."""
        scope = self._tables.scope
        for counter in self._counters:
            for family in counter.collect():
                kept = MetricFamily(family.name, family.documentation, family.type, family.unit)
                kept.samples = [s for s in family.samples if scope_keeps(scope, s.labels)]
                yield kept


class _PeerInfo:
    """grstats_peer_info: each member's build from the agent that exports the member.

    That is this agent's own build, and each other member's as its messages said when the scope
    exports that member (every member with scope ``all``; with ``own`` those whose agents are
    not heard) or when its agent speaks an older protocol revision: an agent of before this
    rule serves no series of its own build.
    """

    def __init__(self, tables: TablesCollector, peers: Gauge) -> None:
        self._tables = tables
        self._peers = peers

    def describe(self) -> list[Metric]:
        """Nothing up front: which series are served depends on the scope at scrape time."""
        return []

    def collect(self) -> Iterator[Metric]:
        """The agent's own build, once its member is known, and the peers' the scope keeps."""
        scope, own = self._tables.scope, self._tables.member_id
        for family in self._peers.collect():
            kept = MetricFamily(family.name, family.documentation, family.type, family.unit)
            if own:
                labels = {
                    "member_id": own,
                    "version": __version__,
                    "protocol_revision": str(PROTOCOL_REVISION),
                }
                kept.add_sample(family.name, labels, 1.0)
            kept.samples += [
                s
                for s in family.samples
                if s.labels["member_id"] != own
                and (
                    scope.exports(s.labels["member_id"])
                    or int(s.labels["protocol_revision"]) < PROTOCOL_REVISION
                )
            ]
            yield kept


def scope_keeps(scope: Scope, labels: Mapping[str, str]) -> bool:
    """Whether ``scope`` exports a series of these labels: its member's, else the group's."""
    member_id = labels.get("member_id")
    return scope.group if member_id is None else scope.exports(member_id)


class TablesCollector:
    """A prometheus-client collector of the series built from the served tables, kept a while.

    ``build`` returns what the series are made of; it reads the agent's state, so it runs on
    ``loop``, and so does the making of the families from it (directly when the caller already
    runs there, as in tests that render on the loop). ``version`` is called in any thread,
    without the loop: it must only read a few attributes (ints), and it changes whenever
    ``build`` may return something new but for the time passing. A build is kept while
    ``version`` is unchanged and the build is younger than ``rebuild_after_s``.

    Any thread may call :meth:`families` and :meth:`kept`, several at once; no lock is held
    while waiting for the loop, and a build the loop runs after another one was kept returns
    that one, so concurrent scrapes build once.
    """

    def __init__(
        self,
        build: Callable[[], SeriesInput],
        version: Callable[[], object],
        loop: asyncio.AbstractEventLoop,
        *,
        rebuild_after_s: float = REBUILD_AFTER_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.builds = 0  #: how many times the series were built (for tests and benchmarks)
        self._build = build
        self._version = version
        self._loop = loop
        self._rebuild_after_s = rebuild_after_s
        self._clock = clock
        self._lock = threading.Lock()
        self._kept: tuple[object, float, list[Metric]] | None = None
        #: what the last build exported (every member's and the group's before the first)
        self.scope: Scope = EVERYTHING
        #: the agent's own member as of the last build (``''`` before its first read)
        self.member_id = ""

    def describe(self) -> list[Metric]:
        """Nothing up front: the series depend on the members known at scrape time."""
        return []

    def collect(self) -> Iterator[Metric]:
        """The families of the last build, or of a new one (see the class docstring)."""
        yield from self.families()

    def families(self) -> list[Metric]:
        """The families to serve now: the kept ones, else built on the loop."""
        kept = self.kept()
        return kept if kept is not None else self.on_loop(self._make)

    def kept(self) -> list[Metric] | None:
        """The kept families while they are fresh, else None; never waits for the loop."""
        version, now = self._version(), self._clock()
        with self._lock:
            kept = self._kept
        if kept is not None and kept[0] == version and now - kept[1] < self._rebuild_after_s:
            return kept[2]
        return None

    def on_loop(self, call: Callable[[], _T]) -> _T:
        """Run ``call`` on the agent's loop and wait for its result (at once when on it)."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            return call()

        async def run() -> _T:
            return call()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(BUILD_TIMEOUT_S)

    def _make(self) -> list[Metric]:
        """Build the families (on the loop), unless a build that ran meanwhile is fresh.

        The whole build runs on the loop, families included: the served tables may be built
        lazily, at their first lookup, from the gossip state as it is then.
        """
        kept = self.kept()
        if kept is not None:
            return kept
        version, now = self._version(), self._clock()
        built = self._build()
        found = table_series(built)
        with self._lock:
            self._kept = (version, now, found)
            self.scope = series_scope(built)
            self.member_id = built.member_id
            self.builds += 1
        return found
