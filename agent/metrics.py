"""Prometheus metrics: every member's rows as any agent serves them, and the agent's own figures.

``grstats agent --metrics-listen HOST:PORT`` serves ``/metrics`` in Prometheus' text format
(prometheus-client's HTTP server, in a thread of its own). Two kinds of metric:

* **Members' rows**, built at each scrape from the tables the agent serves (the same ones
  ``grstats query --extended`` prints), one series per member, labelled ``member_id``,
  ``member_host``, ``member_port`` and ``source`` (the agent the row came through, ``local``
  for the agent's own member). MySQL's counters are counters (``_total``); its queue sizes and
  ``COUNT_TRANSACTIONS_ROWS_VALIDATING`` are gauges: the certification database shrinks at
  every garbage collection, so it is not a counter (mysqld_exporter exposes it as one).
  ``grstats_agent_up`` is 1 while the member's agent is heard (WL#2860's CONNECTED) and stays,
  at 0, when it is not, so that an alert on it does not go silent with the member.
* **The group's verdict**, from ``replication_group_status`` and
  ``replication_group_member_status`` (:mod:`grstats.agent.status`, MySQL Shell's
  ``cluster.status()``): ``grstats_group_status{status=...}`` has one series per status of
  :data:`~grstats.agent.rows.status.STATUSES`, 1 for the current one and 0 for the others (a
  state set, as ``grstats_member_state``), so that an alert matches
  ``grstats_group_status{status="NO_QUORUM"} == 1``; ``grstats_group_tolerance`` is TOLERANCE,
  how many more members can fail with quorum kept; ``grstats_member_transactions_behind`` is
  each member's TRANSACTIONS_BEHIND, ProxySQL's ``transactions_behind`` (the GTIDs of the
  applier channel's RECEIVED_TRANSACTION_SET not in ``gtid_executed``), labelled ``member_id``
  only, with no series for a member whose figure is NULL (unknown).
* **The agent's own figures**: messages and bytes sent and received per peer and kind (push,
  exchange), failed pushes and exchanges, the round trip of each exchange, period overruns.

Every agent serves every member: scrape **one** agent per group (or all of them and aggregate
with ``max by (member_id)``, or keep ``source="local"`` only), else each member is counted once
per agent. The README's "Prometheus" part shows both. The group's series are the scraped
agent's verdict: scraping every agent gives one verdict per agent (told apart by the scrape's
``instance`` label), and ``max by (status) (grstats_group_status)`` is 1 for every status that
some agent gives.

The scrape runs in the HTTP server's thread; the tables are built on the agent's event loop
(``run_coroutine_threadsafe``), so a scrape never reads the gossip state while the loop changes
it. Counters of the agent's own figures are thread-safe prometheus-client objects.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from grstats.agent.errors import ConfigError
from grstats.agent.rows import STATUSES

if TYPE_CHECKING:
    import threading
    from collections.abc import Callable, Iterator
    from wsgiref.simple_server import WSGIServer

    from prometheus_client.core import Metric

    from grstats.agent.served import Served

#: The MEMBER_STATE values GR shows (``Group_member_info::get_member_status_string`` in
#: plugin/group_replication/src/member_info.cc); a state gauge has one series per state.
MEMBER_STATES = ("ONLINE", "RECOVERING", "OFFLINE", "ERROR", "UNREACHABLE")

#: replication_group_member_stats columns exposed as counters: column -> (name, help).
STATS_COUNTERS = {
    "COUNT_TRANSACTIONS_CHECKED": (
        "grstats_transactions_checked",
        "Transactions checked for conflicts (COUNT_TRANSACTIONS_CHECKED).",
    ),
    "COUNT_CONFLICTS_DETECTED": (
        "grstats_conflicts_detected",
        "Transactions that did not pass certification (COUNT_CONFLICTS_DETECTED).",
    ),
    "COUNT_TRANSACTIONS_REMOTE_APPLIED": (
        "grstats_transactions_remote_applied",
        "Transactions from the group applied (COUNT_TRANSACTIONS_REMOTE_APPLIED).",
    ),
    "COUNT_TRANSACTIONS_LOCAL_PROPOSED": (
        "grstats_transactions_local_proposed",
        "Transactions originated here and sent to the group (COUNT_TRANSACTIONS_LOCAL_PROPOSED).",
    ),
    "COUNT_TRANSACTIONS_LOCAL_ROLLBACK": (
        "grstats_transactions_local_rollback",
        "Transactions originated here and rolled back (COUNT_TRANSACTIONS_LOCAL_ROLLBACK).",
    ),
}

#: replication_group_member_stats columns exposed as gauges: column -> (name, help).
STATS_GAUGES = {
    "COUNT_TRANSACTIONS_IN_QUEUE": (
        "grstats_certifier_queue_transactions",
        "Transactions waiting for certification (COUNT_TRANSACTIONS_IN_QUEUE).",
    ),
    "COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE": (
        "grstats_applier_queue_transactions",
        "Transactions waiting to be applied (COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE).",
    ),
    "COUNT_TRANSACTIONS_ROWS_VALIDATING": (
        "grstats_certification_rows",
        "Rows in the certification database (COUNT_TRANSACTIONS_ROWS_VALIDATING), a gauge.",
    ),
}

MEMBER_LABELS = ("member_id", "member_host", "member_port", "source")
_MEMBERS = "replication_group_members"
_STATS = "replication_group_member_stats"
_LAG = "replication_group_member_lag"
_GROUP_STATUS = "replication_group_status"
_MEMBER_STATUS = "replication_group_member_status"


class AgentMetrics:
    """The agent's own figures, and the registry ``/metrics`` serves.

    The agent calls :meth:`sent`, :meth:`received`, :meth:`failed`, :meth:`round_trip` and
    :meth:`overran` from its event loop; all are cheap (a dict lookup and an add).
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._messages_sent = Counter(
            "grstats_gossip_messages_sent",
            "Gossip messages sent, per peer agent and kind (push, exchange).",
            ("peer", "kind"),
            registry=self.registry,
        )
        self._bytes_sent = Counter(
            "grstats_gossip_bytes_sent",
            "Bytes of gossip messages sent (protobuf, without gRPC framing).",
            ("peer", "kind"),
            registry=self.registry,
        )
        self._messages_received = Counter(
            "grstats_gossip_messages_received",
            "Gossip messages received, per sending member (its UUID, or unknown) and kind.",
            ("member", "kind"),
            registry=self.registry,
        )
        self._bytes_received = Counter(
            "grstats_gossip_bytes_received",
            "Bytes of gossip messages received (protobuf, without gRPC framing).",
            ("member", "kind"),
            registry=self.registry,
        )
        self._errors = Counter(
            "grstats_gossip_errors",
            "Pushes and exchanges that failed (unreachable, timed out, refused).",
            ("peer", "kind"),
            registry=self.registry,
        )
        self._round_trip = Histogram(
            "grstats_peer_round_trip_seconds",
            "Round trip of each push-pull exchange with a peer agent.",
            ("peer",),
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
            registry=self.registry,
        )
        self._overruns = Counter(
            "grstats_period_overruns",
            "Periods that ended after the next one should have started.",
            registry=self.registry,
        )

    def sent(self, peer: str, kind: str, size: int) -> None:
        """Count one message of ``size`` bytes sent to ``peer``."""
        self._messages_sent.labels(peer, kind).inc()
        self._bytes_sent.labels(peer, kind).inc(size)

    def received(self, member: str, kind: str, size: int) -> None:
        """Count one message of ``size`` bytes received from ``member``'s agent."""
        self._messages_received.labels(member, kind).inc()
        self._bytes_received.labels(member, kind).inc(size)

    def failed(self, peer: str, kind: str) -> None:
        """Count one failed push or exchange with ``peer``."""
        self._errors.labels(peer, kind).inc()

    def round_trip(self, peer: str, seconds: float) -> None:
        """Observe one exchange's round trip."""
        self._round_trip.labels(peer).observe(seconds)

    def overran(self) -> None:
        """Count one period overrun."""
        self._overruns.inc()

    def watch(self, tables: Callable[[], Served], loop: asyncio.AbstractEventLoop) -> None:
        """Add the members' rows, built by ``tables()`` on ``loop`` at each scrape."""
        self.registry.register(TablesCollector(tables, loop))


class TablesCollector:
    """A prometheus-client collector of every member's rows, built at each scrape."""

    def __init__(self, tables: Callable[[], Served], loop: asyncio.AbstractEventLoop) -> None:
        self._tables = tables
        self._loop = loop

    def describe(self) -> list[Metric]:
        """Nothing up front: the series depend on the members known at scrape time."""
        return []

    def collect(self) -> Iterator[Metric]:
        """Build the tables on the agent's loop and turn them into metric families."""

        async def build() -> Served:
            return self._tables()

        served = asyncio.run_coroutine_threadsafe(build(), self._loop).result(timeout=5)
        yield from member_metrics(served)
        yield from group_metrics(served)


def member_metrics(served: Served) -> list[Metric]:
    """The metric families of the members' rows in ``served`` (extended tables)."""
    members = _by_member(served, _MEMBERS)
    stats = _by_member(served, _STATS)
    lag = _by_member(served, _LAG)
    up = GaugeMetricFamily(
        "grstats_agent_up",
        "1 while the member's agent is heard (CONNECTED), 0 when it is not; kept while listed.",
        labels=MEMBER_LABELS,
    )
    in_view = GaugeMetricFamily(
        "grstats_member_in_view",
        "1 when the member is in the group's view (IN_VIEW), 0 when it left it.",
        labels=MEMBER_LABELS,
    )
    state = GaugeMetricFamily(
        "grstats_member_state",
        "1 for the member's current MEMBER_STATE, 0 for the others.",
        labels=(*MEMBER_LABELS, "state"),
    )
    primary = GaugeMetricFamily(
        "grstats_member_primary",
        "1 when MEMBER_ROLE is PRIMARY.",
        labels=MEMBER_LABELS,
    )
    age = GaugeMetricFamily(
        "grstats_row_age_seconds",
        "How old the member's row is at this agent (AGE_MS / 1000).",
        labels=MEMBER_LABELS,
    )
    labelled = {
        member_id: _labels(row, stats.get(member_id, row)) for member_id, row in members.items()
    }
    for member_id, row in members.items():
        labels = labelled[member_id]
        up.add_metric(labels, 1.0 if row["CONNECTED"] == "YES" else 0.0)
        in_view.add_metric(labels, 1.0 if row["IN_VIEW"] == "YES" else 0.0)
        primary.add_metric(labels, 1.0 if row["MEMBER_ROLE"] == "PRIMARY" else 0.0)
        for name in MEMBER_STATES:
            state.add_metric([*labels, name], 1.0 if row["MEMBER_STATE"] == name else 0.0)
        if isinstance(row.get("AGE_MS"), int):
            age.add_metric(labels, row["AGE_MS"] / 1000)
    families: list[Metric] = [up, in_view, state, primary, age]
    for column, (name, text) in STATS_COUNTERS.items():
        counter = CounterMetricFamily(name, text, labels=MEMBER_LABELS)
        for member_id, row in stats.items():
            counter.add_metric(labelled.get(member_id, _labels(row, row)), float(row[column]))
        families.append(counter)
    for column, (name, text) in STATS_GAUGES.items():
        gauge = GaugeMetricFamily(name, text, labels=MEMBER_LABELS)
        for member_id, row in stats.items():
            gauge.add_metric(labelled.get(member_id, _labels(row, row)), float(row[column]))
        families.append(gauge)
    lag_seconds = GaugeMetricFamily(
        "grstats_applier_lag_seconds",
        "How far the member's applier is behind: APPLIER_LAG_SECONDS (WL#7374 times).",
        labels=MEMBER_LABELS,
    )
    for member_id, row in lag.items():
        value = row.get("APPLIER_LAG_SECONDS")
        if value is not None:
            lag_seconds.add_metric(labelled.get(member_id, _labels(row, row)), float(value))
    families.append(lag_seconds)
    return families


def group_metrics(served: Served) -> list[Metric]:
    """The metric families of the group's verdict in ``served``: status, tolerance, behind."""
    status = GaugeMetricFamily(
        "grstats_group_status",
        "1 for the group's current status, 0 for the others: MySQL Shell's cluster.status() "
        "verdict as this agent gives it (STATUS of replication_group_status).",
        labels=("status",),
    )
    tolerance = GaugeMetricFamily(
        "grstats_group_tolerance",
        "How many more members can fail with quorum kept (TOLERANCE of "
        "replication_group_status): MySQL Shell's cluster.status() 'can tolerate up to N "
        "failures', at most the view's margin while members are UNREACHABLE.",
    )
    for row in _named(served, _GROUP_STATUS)[:1]:  # one row
        for name in STATUSES:
            status.add_metric([name], 1.0 if row["STATUS"] == name else 0.0)
        tolerance.add_metric([], float(row["TOLERANCE"]))
    behind = GaugeMetricFamily(
        "grstats_member_transactions_behind",
        "Transactions the member received from the group and has not applied: ProxySQL's "
        "transactions_behind, RECEIVED_TRANSACTION_SET minus gtid_executed (TRANSACTIONS_BEHIND "
        "of replication_group_member_status); no series while unknown.",
        labels=("member_id",),
    )
    for member_id, row in _by_member(served, _MEMBER_STATUS).items():
        value = row.get("TRANSACTIONS_BEHIND")
        if value is not None:
            behind.add_metric([member_id], float(value))
    return [status, tolerance, behind]


def _named(served: Served, table: str) -> list[dict[str, Any]]:
    """The rows of ``table`` as dicts by column name."""
    columns, rows = served[table]
    names = [column.name for column in columns]
    return [dict(zip(names, row, strict=True)) for row in rows]


def _by_member(served: Served, table: str) -> dict[str, dict[str, Any]]:
    return {str(row["MEMBER_ID"]): row for row in _named(served, table)}


def _labels(member: dict[str, Any], stats: dict[str, Any]) -> list[str]:
    """A member's labels: from its members row, the source of its counts (else of its view)."""
    port = member.get("MEMBER_PORT")
    return [
        str(member["MEMBER_ID"]),
        str(member.get("MEMBER_HOST") or ""),
        "" if port is None else str(port),
        str(stats.get("SOURCE") or member.get("SOURCE") or ""),
    ]


def serve_metrics(
    metrics: AgentMetrics, host: str, port: int
) -> tuple[WSGIServer, threading.Thread, int]:
    """Start the ``/metrics`` HTTP server; return it, its thread and the bound port."""
    server, thread = start_http_server(port, addr=host, registry=metrics.registry)
    return server, thread, int(server.server_port)


def start_metrics_server(metrics: AgentMetrics, listen: str) -> tuple[WSGIServer, str]:
    """Serve ``/metrics`` at ``listen`` (``host:port``); return the server and its address.

    Raises:
        ConfigError: the address cannot be bound (the message names ``metrics_listen``).
    """
    host, _, port = listen.rpartition(":")
    try:
        server, _, bound = serve_metrics(metrics, host.strip("[]"), int(port))
    except OSError as exc:
        raise ConfigError(f"metrics_listen: cannot bind {listen}: {exc}") from exc
    return server, f"{host}:{bound}"
