"""The series ``/metrics`` builds from the tables an agent serves. Pure: no I/O, no clock.

:func:`table_series` turns one :class:`SeriesInput` (the extended tables, the agent's own
member and the flow-control thresholds, all taken at one moment on the agent's loop) into
prometheus-client metric families. :mod:`grstats.agent.metrics` says what each series means
and how to aggregate them; this module holds the rules of their labels:

* every series of a member is labelled ``group_name`` and ``member_id`` only (and ``state``
  on ``grstats_member_state``): labels that name the member, never how its row arrived, so a
  member keeps one series per metric for as long as the agent runs;
* the member's address and version are on ``grstats_member_info``, whose value is always 1,
  to join on: labels that change only when the member itself is moved or upgraded, never
  with a failover (the role is ``grstats_member_primary``) or a relay path;
* the agent its row came through (``source``) is on a series of its own,
  ``grstats_member_source_info``: the one series that changes with the relay path, so that
  no other series churns with it;
* no series of a member or of the group while the group's name is unknown (``''``), so that
  a label never changes from ``''`` to a name;
* a member's stats series start once its stats were heard: MySQL's empty row for a member
  never heard would make its counters start at 0 and jump, a false ``rate()``; and its
  counters only once they were heard in this run of the agent, not from the registry: a
  restarted agent's remembered row is older than what it exported before (the registry is
  flushed every few seconds), and the counter would go back, a reset Prometheus would see
  (tests/deploy/test_metrics_handover.py saw one under load);
* with ``metrics.scope = "own"`` only the members, and the group, that this agent is the one
  exporter of (:mod:`grstats.agent.metrics_scope`): the same series, from one agent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from grstats.agent.gossip import REGISTRY
from grstats.agent.metrics_scope import ALL, EVERYTHING, Scope, exported
from grstats.agent.views import disagreements
from grstats.core.gtid import GtidSet
from grstats.core.rows import STATUSES

if TYPE_CHECKING:
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

#: The labels of every series of a member (grstats_member_state adds ``state``).
MEMBER_LABELS = ("group_name", "member_id")
#: The labels of grstats_member_info: the member's address and version, which change only when
#: the member itself is moved or upgraded (not its role: that flips at every failover, and is
#: grstats_member_primary).
INFO_LABELS = (*MEMBER_LABELS, "member_host", "member_port", "member_version")
#: The labels of grstats_member_source_info: the agent the member's row came through, which
#: changes with the relay path (kept off every other series for that reason).
SOURCE_LABELS = (*MEMBER_LABELS, "source")
#: The labels of the group's series (grstats_group_status adds ``status``).
GROUP_LABELS = ("group_name",)

_MEMBERS = "replication_group_members"
_STATS = "replication_group_member_stats"
_LAG = "replication_group_member_lag"
_GROUP_STATUS = "replication_group_status"
_MEMBER_STATUS = "replication_group_member_status"
_VIEWS = "replication_group_member_views"


@dataclass(frozen=True, slots=True)
class SeriesInput:
    """What one build of the series reads, all taken at one moment on the agent's loop.

    Attributes:
        served: the agent's tables, extended (CONNECTED, IN_VIEW, AGE_MS, SOURCE).
        member_id: the agent's own member, ``''`` before its first read.
        applier_threshold: the flow-control applier threshold the verdict judges with.
        certifier_threshold: the certifier threshold, likewise.
        scope: ``metrics.scope``: ``own`` or ``all`` (the default, for callers that judge
            one agent's view of every member).
        heard: the members whose agents this agent hears now, its own included
            (:func:`~grstats.agent.metrics_scope.agents_heard`), for scope ``own``.
    """

    served: Served
    member_id: str
    applier_threshold: int
    certifier_threshold: int
    scope: str = ALL
    heard: frozenset[str] = frozenset()


def table_series(found: SeriesInput) -> list[Metric]:
    """Every family built from the tables: the members', the group's, and the peers heard."""
    families: list[Metric] = [peers_heard(found.served, found.member_id)]
    group = group_name(found.served)
    if group:
        scope = series_scope(found)
        families += member_families(found.served, group, scope)
        if scope.group:
            families += group_families(
                found.served, group, (found.applier_threshold, found.certifier_threshold)
            )
    return families


def series_scope(found: SeriesInput) -> Scope:
    """Which members' series and whether the group's this build exports (``found.scope``)."""
    listed = _by_member(found.served, _MEMBERS)
    return exported(found.scope, found.member_id, listed, found.heard)


def group_name(served: Served) -> str:
    """GROUP_NAME of the served ``replication_group_status``: ``''`` while no view is known."""
    rows = _named(served, _GROUP_STATUS)
    return str(rows[0]["GROUP_NAME"] or "") if rows else ""


def peers_heard(served: Served, member_id: str) -> Metric:
    """grstats_peers_heard: the other members connected (CONNECTED YES) now."""
    heard = GaugeMetricFamily(
        "grstats_peers_heard",
        "Other members this agent has live values of now (CONNECTED YES, directly or relayed).",
    )
    rows = _named(served, _MEMBERS)
    heard.add_metric(
        [], float(sum(row["CONNECTED"] == "YES" and row["MEMBER_ID"] != member_id for row in rows))
    )
    return heard


def member_families(served: Served, group: str, scope: Scope = EVERYTHING) -> list[Metric]:
    """The families of the rows in ``served`` (extended tables) of group ``group``'s members.

    Only the members ``scope`` exports; every member by default.
    """
    members = _by_member(served, _MEMBERS, scope)
    info = GaugeMetricFamily(
        "grstats_member_info",
        "1 for each member: its host, port and version (MEMBER_HOST, MEMBER_PORT, "
        "MEMBER_VERSION). Join on group_name and member_id.",
        labels=INFO_LABELS,
    )
    source = GaugeMetricFamily(
        "grstats_member_source_info",
        "1 for each member: the agent its row came through (source; local for the agent's "
        "own member). Changes with the relay path. Join on group_name and member_id.",
        labels=SOURCE_LABELS,
    )
    up = _gauge(
        "grstats_agent_up",
        "1 while the member is connected (CONNECTED: its agent heard and its server read within "
        "the silence), 0 when it is not; kept while listed.",
    )
    in_view = _gauge(
        "grstats_member_in_view",
        "1 when the member is in the group's view (IN_VIEW), 0 when it left it.",
    )
    state = GaugeMetricFamily(
        "grstats_member_state",
        "1 for the member's current MEMBER_STATE, 0 for the others.",
        labels=(*MEMBER_LABELS, "state"),
    )
    primary = _gauge("grstats_member_primary", "1 when MEMBER_ROLE is PRIMARY.")
    age = _gauge(
        "grstats_row_age_seconds", "How old the member's row is at this agent (AGE_MS / 1000)."
    )
    # State and role as the verdict has them (replication_group_member_status: the group's
    # view), so that every agent exports the same: the agent beside a split-brain member
    # serves that member's own view in its tables (the others UNREACHABLE), and a scrape of
    # it must not say so of the majority's members (grstats_member_split_brain says why).
    verdict = _by_member(served, _MEMBER_STATUS, scope)
    for member_id, row in members.items():
        labels = [group, member_id]
        judged = verdict.get(member_id, row)
        port = row.get("MEMBER_PORT")
        info.add_metric(
            [
                *labels,
                str(row.get("MEMBER_HOST") or ""),
                "" if port is None else str(port),
                str(row.get("MEMBER_VERSION") or ""),
            ],
            1.0,
        )
        source.add_metric([*labels, str(row.get("SOURCE") or "")], 1.0)
        up.add_metric(labels, _flag(row["CONNECTED"] == "YES"))
        in_view.add_metric(labels, _flag(row["IN_VIEW"] == "YES"))
        primary.add_metric(labels, _flag(judged["MEMBER_ROLE"] == "PRIMARY"))
        for name in MEMBER_STATES:
            state.add_metric([*labels, name], _flag(judged["MEMBER_STATE"] == name))
        if isinstance(row.get("AGE_MS"), int):
            age.add_metric(labels, row["AGE_MS"] / 1000)
    return [info, source, up, in_view, state, primary, age, *_stats_families(served, group, scope)]


#: The stage label of grstats_applier_stage_seconds -> its column of replication_group_member_lag.
_STAGES = {"transport": "TRANSPORT_SECONDS", "waiting": "WAITING_SECONDS", "apply": "APPLY_SECONDS"}


def _stats_families(served: Served, group: str, scope: Scope) -> list[Metric]:
    """MySQL's counters and gauges, the applier lag, transactions behind and throttling."""
    heard = {
        m: row
        for m, row in _by_member(served, _STATS, scope).items()
        if row.get("AGE_MS") is not None
    }
    families: list[Metric] = []
    live = {m: row for m, row in heard.items() if row.get("SOURCE") != REGISTRY}
    for column, (name, text) in STATS_COUNTERS.items():
        counter = CounterMetricFamily(name, text, labels=MEMBER_LABELS)
        for member_id, row in live.items():
            counter.add_metric([group, member_id], float(row[column]))
        families.append(counter)
    for column, (name, text) in STATS_GAUGES.items():
        gauge = _gauge(name, text)
        for member_id, row in heard.items():
            gauge.add_metric([group, member_id], float(row[column]))
        families.append(gauge)
    behind = _gauge(
        "grstats_member_transactions_behind",
        "Transactions the member received from the group and has not applied: ProxySQL's "
        "transactions_behind, RECEIVED_TRANSACTION_SET minus gtid_executed (TRANSACTIONS_BEHIND "
        "of replication_group_member_status); no series while unknown.",
    )
    throttling = _gauge(
        "grstats_member_throttling",
        "1 when flow control holds this writer back (THROTTLING of "
        "replication_group_member_status), 0 when not.",
    )
    skew = _gauge(
        "grstats_member_clock_skew_seconds",
        "How far the member's clock is from the median of the members' clocks (CLOCK_SKEW_MS "
        "of replication_group_member_status / 1000); beyond 0.5 s either way the agent warns "
        "(clock_skewed); no series while its clock is not known.",
    )
    # Only while something is left: a steady group's members keep their series count (issue
    # 46's budget), and a member catching up gets two more.
    left = _gauge(
        "grstats_member_recovery_transactions_left",
        "Transactions a RECOVERING member, or an ONLINE member's applier and certifier queues, "
        "have left to apply (TRANSACTIONS_LEFT of replication_group_member_status, "
        "agent.recovery); no series while none is left or it is unknown (a RECOVERING "
        "member's is known to its own agent).",
    )
    eta = _gauge(
        "grstats_member_recovery_eta_seconds",
        "Seconds until the member has nothing left to apply, at the rate its transactions left "
        "fell over the last minute (ETA_S of replication_group_member_status); no series while "
        "none is left, or while they are unknown or do not fall.",
    )
    for member_id, row in _by_member(served, _MEMBER_STATUS, scope).items():
        if row.get("TRANSACTIONS_BEHIND") is not None:
            behind.add_metric([group, member_id], float(row["TRANSACTIONS_BEHIND"]))
        if row.get("TRANSACTIONS_LEFT"):  # neither NULL nor 0
            left.add_metric([group, member_id], float(row["TRANSACTIONS_LEFT"]))
            if row.get("ETA_S") is not None:
                eta.add_metric([group, member_id], float(row["ETA_S"]))
        throttling.add_metric([group, member_id], _flag(row["THROTTLING"] == "YES"))
        if row.get("CLOCK_SKEW_MS") is not None:
            skew.add_metric([group, member_id], row["CLOCK_SKEW_MS"] / 1000)
    return [
        *families,
        *_lag_families(served, group, scope),
        behind,
        left,
        eta,
        throttling,
        skew,
        _errant_family(served, group, scope),
        _split_brain_family(served, group, scope),
        _disagreement_family(served, group, scope),
    ]


def _lag_families(served: Served, group: str, scope: Scope) -> list[Metric]:
    """The applier lag, whole and by stage (replication_group_member_lag)."""
    lag = _gauge(
        "grstats_applier_lag_seconds",
        "How far the member's applier is behind: APPLIER_LAG_SECONDS (WL#7374 times; 0 with "
        "nothing queued or applying); no series while unknown.",
    )
    stages = GaugeMetricFamily(
        "grstats_applier_stage_seconds",
        "The lag by stage (WL#7374 times of replication_group_member_lag): transport, the last "
        "queued transaction's original commit to queued (TRANSPORT_SECONDS); waiting, the last "
        "applied one's queued to start of apply (WAITING_SECONDS); apply, its start to end of "
        "apply (APPLY_SECONDS); no series while unknown (MySQL 5.7 gives none).",
        labels=(*MEMBER_LABELS, "stage"),
    )
    for member_id, row in _by_member(served, _LAG, scope).items():
        if row.get("APPLIER_LAG_SECONDS") is not None:
            lag.add_metric([group, member_id], float(row["APPLIER_LAG_SECONDS"]))
        for stage, column in _STAGES.items():
            if row.get(column) is not None:
                stages.add_metric([group, member_id, stage], float(row[column]))
    return [lag, stages]


def _errant_family(served: Served, group: str, scope: Scope) -> Metric:
    """How many GTIDs each member executed that the group lacks (ERRANT_TRANSACTIONS)."""
    errant = _gauge(
        "grstats_member_errant_transactions",
        "Transactions the member executed that the group does not have (GTIDs of "
        "ERRANT_TRANSACTIONS of replication_group_member_status): above 0, MySQL refuses the "
        "member's next join; no series while unknown.",
    )
    for member_id, row in _by_member(served, _MEMBER_STATUS, scope).items():
        if row.get("ERRANT_TRANSACTIONS") is not None:
            count = GtidSet.parse(row["ERRANT_TRANSACTIONS"]).count()
            errant.add_metric([group, member_id], float(count))
    return errant


def _split_brain_family(served: Served, group: str, scope: Scope) -> Metric:
    """1 for each member split from the group (SPLIT_BRAIN), 0 for the others."""
    split = _gauge(
        "grstats_member_split_brain",
        "1 when the member is not part of the majority group but its own server says ONLINE "
        "or RECOVERING (SPLIT_BRAIN of replication_group_member_status: MySQL Shell's "
        "'split-brain!'): applications on it read stale data and its writes hang; 0 when not.",
    )
    for member_id, row in _by_member(served, _MEMBER_STATUS, scope).items():
        split.add_metric([group, member_id], _flag(row["SPLIT_BRAIN"] == "YES"))
    return split


def _disagreement_family(served: Served, group: str, scope: Scope) -> Metric:
    """How many disagreements between members' views name each member (0 for none)."""
    found = GaugeMetricFamily(
        "grstats_member_view_disagreements",
        "How many disagreements between the members' own views name the member "
        "(DISAGREEMENT of replication_group_member_views): split from the group while its "
        "server says ONLINE or RECOVERING, its view id lagging the group's, and each member "
        "it sees differently from how that member sees it (one lists the other UNREACHABLE "
        "or not at all, the other it ONLINE: a one-way link); 0 when none. grstats query "
        "status names them.",
        labels=MEMBER_LABELS,
    )
    named: dict[str, int] = {}
    for one in disagreements(_named(served, _VIEWS) if _VIEWS in served else ()):
        for member in (one.member_id, one.peer_id):
            if member is not None:
                named[member] = named.get(member, 0) + 1
    for member_id in _by_member(served, _MEMBER_STATUS, scope):
        found.add_metric([group, member_id], float(named.get(member_id, 0)))
    return found


def group_families(served: Served, group: str, thresholds: tuple[int, int]) -> list[Metric]:
    """The group's verdict: status, tolerance, throttled, not active, stable set, thresholds."""
    status = GaugeMetricFamily(
        "grstats_group_status",
        "1 for the group's current status, 0 for the others: MySQL Shell's cluster.status() "
        "verdict as this agent gives it (STATUS of replication_group_status).",
        labels=(*GROUP_LABELS, "status"),
    )
    tolerance = GaugeMetricFamily(
        "grstats_group_tolerance",
        "How many more members can fail with quorum kept (TOLERANCE of "
        "replication_group_status): MySQL Shell's cluster.status() 'can tolerate up to N "
        "failures', at most the view's margin while members are UNREACHABLE.",
        labels=GROUP_LABELS,
    )
    throttled = GaugeMetricFamily(
        "grstats_group_throttled",
        "1 when flow control holds some writer back (THROTTLED of replication_group_status).",
        labels=GROUP_LABELS,
    )
    not_active = GaugeMetricFamily(
        "grstats_group_members_not_active",
        "Known members that are not ONLINE: MySQL Shell's cluster.status() 'N members are not "
        "active' (the rows of replication_group_member_status not ONLINE; a member once in the "
        "view counts until grstats members forget).",
        labels=GROUP_LABELS,
    )
    info = GaugeMetricFamily(
        "grstats_group_info",
        "1 for the group: its human name (group_label: its InnoDB Cluster name, else the "
        "agents' group_label; '' when none). Join on group_name to name a group's series.",
        labels=(*GROUP_LABELS, "group_label"),
    )
    stalled = GaugeMetricFamily(
        "grstats_stable_set_stalled_seconds",
        "How long TRANSACTIONS_COMMITTED_ALL_MEMBERS has not advanced while transactions were "
        "certified, from two broadcast rounds (120 s) on; 0 while it advances "
        "(STABLE_SET_STALLED_S of replication_group_status). The certification info grows "
        "meanwhile; STABLE_SET_HELD_BY names the members holding it back.",
        labels=GROUP_LABELS,
    )
    for row in _named(served, _GROUP_STATUS)[:1]:  # one row
        info.add_metric([group, str(row.get("GROUP_LABEL") or "")], 1.0)
        stalled.add_metric([group], float(row.get("STABLE_SET_STALLED_S") or 0))
        for name in STATUSES:
            status.add_metric([group, name], _flag(row["STATUS"] == name))
        tolerance.add_metric([group], float(row["TOLERANCE"]))
        throttled.add_metric([group], _flag(row["THROTTLED"] == "YES"))
        members = _named(served, _MEMBER_STATUS)
        inactive = sum(1 for member in members if member["MEMBER_STATE"] != "ONLINE")
        not_active.add_metric([group], float(inactive))
    applier, certifier = thresholds
    applier_threshold = GaugeMetricFamily(
        "grstats_flow_control_applier_threshold",
        "The applier queue above which flow control holds writers back: the writers' "
        "group_replication_flow_control_applier_threshold (the lowest; 25000 when unknown).",
        labels=GROUP_LABELS,
    )
    applier_threshold.add_metric([group], float(applier))
    certifier_threshold = GaugeMetricFamily(
        "grstats_flow_control_certifier_threshold",
        "The certifier queue above which flow control holds writers back: the writers' "
        "group_replication_flow_control_certifier_threshold (the lowest; 25000 when unknown).",
        labels=GROUP_LABELS,
    )
    certifier_threshold.add_metric([group], float(certifier))
    return [
        info,
        status,
        tolerance,
        throttled,
        not_active,
        stalled,
        applier_threshold,
        certifier_threshold,
    ]


def _gauge(name: str, text: str) -> GaugeMetricFamily:
    """A gauge family of one series per member."""
    return GaugeMetricFamily(name, text, labels=MEMBER_LABELS)


def _flag(value: bool) -> float:
    return 1.0 if value else 0.0


def _named(served: Served, table: str) -> list[dict[str, Any]]:
    """The rows of ``table`` as dicts by column name."""
    columns, rows = served[table]
    names = [column.name for column in columns]
    return [dict(zip(names, row, strict=True)) for row in rows]


def _by_member(served: Served, table: str, scope: Scope = EVERYTHING) -> dict[str, dict[str, Any]]:
    """The rows of ``table`` by MEMBER_ID, of the members ``scope`` exports."""
    rows = ((str(row["MEMBER_ID"]), row) for row in _named(served, table))
    return {member_id: row for member_id, row in rows if scope.exports(member_id)}
