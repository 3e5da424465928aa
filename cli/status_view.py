"""The document of ``grstats query status``: the group's verdict and its members, as text or JSON.

Pure: it takes the two tables an agent answered, ``replication_group_status`` (one row) and
``replication_group_member_status`` (one row per member), as column names and rows, and reads
them by column name. A column a newer agent adds is shown in the members' table and left out
of the JSON document; a table an older agent lacks is :class:`StatusTableMissing`.

The JSON document (``--format json``) is one object: ``status``, ``status_text``,
``tolerance``, ``mode``, ``primary`` (MEMBER_IDs), ``group_name``, ``group_label`` (the
group's human name, null when it has none or the agent is older), ``view_id``, ``as_of``
(ISO 8601 in UTC with ``Z`` and microseconds, or null), ``throttled`` (bool),
``throttled_by`` (MEMBER_IDs), ``agent`` (the agent asked), ``stable_set_stalled`` (null while
TRANSACTIONS_COMMITTED_ALL_MEMBERS advances, else :func:`stall_document`), ``disagreements``
(where members' own views disagree, :func:`disagreement_document` each; null when the agent is
older than ``replication_group_member_views``), ``next_primary`` (whom GR would elect if
the primary failed now, :func:`next_primary_document`; null in a multi-primary group or when
no member is electable) and ``members``, each with
``member_id``, ``host``, ``port``, ``state``, ``role``, ``version``, ``connected`` (bool),
``age_ms``, ``applier_lag_seconds``, ``applier_queue``, ``certifier_queue``,
``transactions_behind``, ``read_only`` and ``super_read_only`` (bool, or null when unknown),
``throttling`` (bool), ``clock_skew_ms`` (its clock minus the median of the members', null
when unknown), ``errant_transactions`` (the GTIDs it executed that the group lacks, as one
line; ``''`` for none, null when unknown or the agent is older), ``split_brain`` (bool:
MySQL Shell's split-brain, out of the group's view while its own server says ONLINE or
RECOVERING; null when the agent is older) and ``member_weight`` (its
``group_replication_member_weight``, null when unknown or the agent is older),
``transactions_left``, ``apply_rate`` (transactions applied per second over the last minute)
and ``eta_s`` (seconds until none is left: 0 when none is, null while they do not fall):
the progress of a RECOVERING member or of an applier backlog (:mod:`grstats.agent.recovery`;
null where the agent does not know it or is older), and ``agent_source``:
whether the agent asked can read its own member (:func:`source_document`). When it cannot
and knows no member at all, the agent's verdict is UNKNOWN and its sentence says why
(:func:`~grstats.core.verdict.source_unknown`).

The summary has a ``split-brain`` line while some member is split from the group
(:func:`split_members`), a ``one-way`` line while two members see each other differently and a
``view lag`` line while a member's view id lags the group's (:func:`one_way_members`,
:func:`lagging_members`, from ``replication_group_member_views``: :mod:`grstats.agent.views`),
an ``errant`` line while some member executed transactions the group lacks
(:func:`errant_members`): the member and the GTIDs, which make MySQL refuse its next join; a
``catching up`` line while a member recovers or has more than
:data:`~grstats.core.election.BACKLOG_WARNING` transactions left (:func:`catching_up`): how
many are left, at what rate and the ETA; and, in a single-primary group, a ``next primary``
line (:func:`next_primary_text`) and a ``next primary unsafe`` line while that member holds
errant transactions or has more than :data:`~grstats.core.election.BACKLOG_WARNING`
transactions to apply.

Every ``grstats query`` answer also gives :func:`source_line`, the one warning line printed on
standard error (and on the watch screen) while the agent asked cannot read its member. The JSON
of a table (``grstats query members --format json`` and the like) is :func:`table_document`.

The text (``table`` and ``vertical``) is a few ``label: value`` lines in the spirit of MySQL
Shell's ``cluster.status()``, then the members as the ``mysql`` client prints them. Its times
(``as of``, and ``since`` in the warning line) are in the zone of ``--time-zone``
(:mod:`grstats.core.rows.zone`, UTC by default), marked with it (``UTC``, ``+02:00``,
``CEST``); the JSON's times are always UTC.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from grstats.core.query_wire import SourceReport
from grstats.core.rows import (
    REPLICATION_GROUP_MEMBER_STATUS,
    REPLICATION_GROUP_MEMBER_VIEWS,
    REPLICATION_GROUP_STATUS,
    Column,
    Kind,
    render_table,
    render_vertical,
    timestamp_text,
)
from grstats.core.rows.domains import timestamp_iso
from grstats.core.rows.render import json_objects
from grstats.core.rows.views import ONE_WAY, VIEW_LAG
from grstats.core.rows.zone import UTC_ZONE

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from grstats.agent.views import Disagreement
    from grstats.core.election import NextPrimary
    from grstats.core.rows import Table, Value
    from grstats.core.rows.zone import TimeZone

#: The two tables ``grstats query status`` asks for.
STATUS_TABLES = (REPLICATION_GROUP_STATUS.name, REPLICATION_GROUP_MEMBER_STATUS.name)
#: The table of every member's own view it asks for too (older agents lack it).
VIEWS_TABLE = REPLICATION_GROUP_MEMBER_VIEWS.name

#: One answered table: its column names and its rows.
WireTable = tuple["Sequence[str]", "Sequence[Sequence[Value]]"]

#: A member's JSON key -> its column of replication_group_member_status, in document order.
MEMBER_KEYS = {
    "member_id": "MEMBER_ID",
    "host": "MEMBER_HOST",
    "port": "MEMBER_PORT",
    "state": "MEMBER_STATE",
    "role": "MEMBER_ROLE",
    "version": "MEMBER_VERSION",
    "connected": "CONNECTED",
    "age_ms": "AGE_MS",
    "applier_lag_seconds": "APPLIER_LAG_SECONDS",
    "applier_queue": "APPLIER_QUEUE",
    "certifier_queue": "CERTIFIER_QUEUE",
    "transactions_behind": "TRANSACTIONS_BEHIND",
    "read_only": "READ_ONLY",
    "super_read_only": "SUPER_READ_ONLY",
    "throttling": "THROTTLING",
    "clock_skew_ms": "CLOCK_SKEW_MS",
    "errant_transactions": "ERRANT_TRANSACTIONS",
    "split_brain": "SPLIT_BRAIN",
    "member_weight": "MEMBER_WEIGHT",
    "transactions_left": "TRANSACTIONS_LEFT",
    "apply_rate": "APPLY_RATE",
    "eta_s": "ETA_S",
}


class StatusTableMissing(ValueError):
    """An agent's answer lacks one of the status tables (an agent older than them)."""

    def __init__(self, table: str) -> None:
        super().__init__(f"the agent did not return {table}")
        self.table = table


def column_of(table: Table, name: str) -> Column:
    """The column ``name`` of ``table``; a column of a newer agent is TEXT."""
    try:
        return table.column(name)
    except KeyError:
        return Column(name, "TEXT", nullable=True, kind=Kind.TEXT)


@dataclass(frozen=True, slots=True)
class GroupStatus:
    """One agent's answer to ``grstats query status``: the verdict row and the member rows."""

    agent: str  #: the agent asked, HOST:PORT
    group: Mapping[str, Value]  #: replication_group_status's row by column name
    member_columns: tuple[Column, ...]  #: the columns of the member rows, as answered
    member_rows: tuple[tuple[Value, ...], ...]
    #: whether the agent asked can read its own member (its answer's ``source_fault``)
    source: SourceReport = field(default_factory=SourceReport)
    #: replication_group_member_views's rows by column name; None when the agent sent none
    views: tuple[dict[str, Value], ...] | None = None

    @classmethod
    def from_tables(
        cls,
        agent: str,
        tables: Mapping[str, WireTable],
        source: SourceReport | None = None,
    ) -> GroupStatus:
        """Read the status tables of an answer by column name; ``source`` is its report.

        The views table is read when the answer has it (an older agent's has not).

        Raises:
            StatusTableMissing: the answer lacks a table, or the verdict table has no row.
        """
        group_table, member_table = STATUS_TABLES
        if group_table not in tables or not tables[group_table][1]:
            raise StatusTableMissing(group_table)
        if member_table not in tables:
            raise StatusTableMissing(member_table)
        group_names, group_rows = tables[group_table]
        member_names, member_rows = tables[member_table]
        views = None
        if VIEWS_TABLE in tables:
            view_names, view_rows = tables[VIEWS_TABLE]
            views = tuple(dict(zip(view_names, row, strict=True)) for row in view_rows)
        return cls(
            agent=agent,
            group=dict(zip(group_names, group_rows[0], strict=True)),
            member_columns=tuple(
                column_of(REPLICATION_GROUP_MEMBER_STATUS, name) for name in member_names
            ),
            member_rows=tuple(tuple(row) for row in member_rows),
            source=source or SourceReport(),
            views=views,
        )

    @property
    def members(self) -> list[dict[str, Value]]:
        """The member rows as dicts keyed by column name."""
        names = [column.name for column in self.member_columns]
        return [dict(zip(names, row, strict=True)) for row in self.member_rows]

    def text(self, name: str) -> str:
        """The verdict's column ``name`` as text ('' when the agent did not send it)."""
        value = self.group.get(name)
        return "" if value is None else str(value)

    @property
    def as_of_us(self) -> int | None:
        """AS_OF in µs since the epoch; None when unknown (not sent, or the zero TIMESTAMP)."""
        value = self.group.get("AS_OF")
        return value if isinstance(value, int) and value else None

    def as_of(self, zone: TimeZone = UTC_ZONE) -> str:
        """AS_OF as MySQL's TIMESTAMP(6) text in ``zone``, followed by the zone ('' if unknown).

        ``2026-11-24 10:15:02.123456 UTC``, ``2026-11-24 12:15:02.123456 +02:00``.
        """
        at = self.as_of_us
        return "" if at is None else f"{timestamp_text(at, zone)} {zone.label(at)}"

    @property
    def primary(self) -> list[str]:
        """PRIMARY_MEMBERS as a list of MEMBER_IDs."""
        return ids(self.text("PRIMARY_MEMBERS"))

    @property
    def throttled_by(self) -> list[str]:
        """THROTTLED_BY as a list of MEMBER_IDs."""
        return ids(self.text("THROTTLED_BY"))

    @property
    def disagreements(self) -> list[Disagreement] | None:
        """Where the members' own views disagree; None when the agent sent no views table."""
        # Imported here: a table's query (``grstats query members``) loads none of the
        # agent's modules (issue 50); the status's views need its rules.
        from grstats.agent.views import disagreements  # noqa: PLC0415

        return None if self.views is None else disagreements(self.views)

    @property
    def next_primary(self) -> NextPrimary | None:
        """Whom GR would elect if the primary failed now, None if no one (multi-primary too).

        :func:`~grstats.core.election.next_primary` over the member rows: each member's weight
        is its row's MEMBER_WEIGHT where the agent sends one.
        """
        # Imported here: a table's query (``grstats query members``) needs no election rules.
        from grstats.core.election import next_primary  # noqa: PLC0415

        return next_primary(self.members, single_primary=self.text("MODE") == "single-primary")

    def address_of(self, member_id: str) -> str:
        """``host:port`` of the member ``member_id`` ('' when it is not listed)."""
        for member in self.members:
            if member.get("MEMBER_ID") == member_id:
                return address(member)
        return ""


def ids(text: str) -> list[str]:
    """Comma-separated MEMBER_IDs as a list ([] for '')."""
    return [part for part in text.split(",") if part]


def address(member: Mapping[str, Value]) -> str:
    """A member's ``host:port`` (the host alone when the port is unknown)."""
    host = member.get("MEMBER_HOST") or ""
    port = member.get("MEMBER_PORT")
    return f"{host}:{port}" if port is not None else str(host)


def _yes(value: Value) -> bool | None:
    return None if value is None else value == "YES"


def _on(value: Value) -> bool | None:
    return None if value is None else value == "ON"


def member_document(member: Mapping[str, Value]) -> dict[str, Any]:
    """One member of the JSON document, from its row by column name."""
    found = {key: member.get(name) for key, name in MEMBER_KEYS.items()}
    for key in ("connected", "throttling", "split_brain"):
        found[key] = _yes(found[key])
    for key in ("read_only", "super_read_only"):
        found[key] = _on(found[key])
    errant = found["errant_transactions"]
    found["errant_transactions"] = None if errant is None else _one_line_set(str(errant))
    return found


def document(status: GroupStatus) -> dict[str, Any]:
    """The JSON document of ``status`` (keys: :data:`DOCUMENT_KEYS`)."""
    return {
        "status": status.group.get("STATUS"),
        "status_text": status.group.get("STATUS_TEXT"),
        "tolerance": status.group.get("TOLERANCE"),
        "mode": status.group.get("MODE"),
        "primary": status.primary,
        "group_name": status.group.get("GROUP_NAME"),
        "group_label": status.group.get("GROUP_LABEL") or None,
        "view_id": status.group.get("VIEW_ID"),
        "as_of": None if status.as_of_us is None else timestamp_iso(status.as_of_us),
        "throttled": _yes(status.group.get("THROTTLED")),
        "throttled_by": status.throttled_by,
        "agent": status.agent,
        "stable_set_stalled": stall_document(status),
        "disagreements": (
            None
            if (found := status.disagreements) is None
            else [disagreement_document(status, one) for one in found]
        ),
        "next_primary": next_primary_document(status),
        "members": [member_document(member) for member in status.members],
        "agent_source": source_document(status.source),
    }


def next_primary_document(status: GroupStatus) -> dict[str, Any] | None:
    """The next primary for JSON, null when there is none (multi-primary, none electable).

    ``member_id``, ``host``, ``port``, ``version``, ``weight`` (50, MySQL's default, when not
    known), ``weight_known``, ``applier_lag_seconds``, ``transactions_behind``, ``errant``
    (bool: it holds errant transactions; null when unknown), ``errant_transactions`` (as in a
    member) and ``warning`` (why failing over to it now is unsafe; null when it is not).
    """
    found = status.next_primary
    if found is None:
        return None
    member = next(m for m in status.members if m.get("MEMBER_ID") == found.member_id)
    errant = found.errant_transactions
    return {
        "member_id": found.member_id,
        "host": member.get("MEMBER_HOST"),
        "port": member.get("MEMBER_PORT"),
        "version": found.version,
        "weight": found.weight,
        "weight_known": found.weight_known,
        "applier_lag_seconds": found.applier_lag_seconds,
        "transactions_behind": found.transactions_behind,
        "errant": None if errant is None else bool(errant),
        "errant_transactions": None if errant is None else _one_line_set(errant),
        "warning": found.warning or None,
    }


def next_primary_text(status: GroupStatus) -> str:
    """The next primary in a line: ``host:port (weight 70, lag 0.012 s, 3 to apply)``.

    ``none (multi-primary)`` or ``none (no ONLINE secondary ...)`` when there is none, ''
    while the mode is unknown.
    """
    mode = status.text("MODE")
    if mode == "multi-primary":
        return "none (multi-primary: every ONLINE member writes)"
    if mode != "single-primary":
        return ""
    found = status.next_primary
    if found is None:
        return "none (no ONLINE secondary of the lowest version in the view)"
    weight = f"weight {found.weight}" + ("" if found.weight_known else " (not known: default)")
    lag = found.applier_lag_seconds
    behind = found.transactions_behind
    return (
        f"{status.address_of(found.member_id) or found.member_id} ({weight}, "
        f"lag {'unknown' if lag is None else f'{lag:.3f} s'}, "
        f"{'unknown' if behind is None else behind} to apply)"
    )


def disagreement_document(status: GroupStatus, found: Disagreement) -> dict[str, Any]:
    """One disagreement for JSON: kind, member_id, state, view_id, peer_id, peer_state, text.

    ``kind`` is SPLIT_BRAIN, VIEW_LAG or ONE_WAY (the DISAGREEMENT of
    ``replication_group_member_views``); ``state`` is how the member's own server lists itself,
    or, ONE_WAY, the peer (UNREACHABLE or NOT_LISTED); ``peer_id`` and ``peer_state`` (how the
    peer lists the member: ONLINE) are null but for ONE_WAY; ``text`` says it in one line.
    """
    return {
        "kind": found.kind,
        "member_id": found.member_id,
        "state": found.state,
        "view_id": found.view_id,
        "peer_id": found.peer_id,
        "peer_state": found.peer_state,
        "text": disagreement_text(status, found),
    }


def disagreement_text(status: GroupStatus, found: Disagreement) -> str:
    """One disagreement in a line, members named by ``host:port`` where the status lists them."""
    member = _named(status, found.member_id)
    if found.kind == ONE_WAY:
        peer = _named(status, str(found.peer_id))
        listed = f"does not list {peer}"
        if found.state != "NOT_LISTED":
            listed = f"lists {peer} {found.state}"
        return (
            f"{member} {listed} while {peer} lists it {found.peer_state}: messages from "
            f"{peer} do not reach {member} (a one-way or asymmetric link, or an expulsion "
            f"{peer} missed)"
        )
    if found.kind == VIEW_LAG:
        return (
            f"{member} is {found.state} in view {found.view_id}, older than the group's "
            f"{status.text('VIEW_ID')}: it did not install the group's view"
        )
    return (
        f"{member} is {found.state} on its own server, in view {found.view_id}, but not part of "
        "the majority group (split-brain)"
    )


def _named(status: GroupStatus, member_id: str) -> str:
    return status.address_of(member_id) or member_id


def one_way_members(status: GroupStatus) -> str:
    """The pairs of members that see each other differently, in one line ('' if none)."""
    return "; ".join(
        disagreement_text(status, found)
        for found in status.disagreements or ()
        if found.kind == ONE_WAY
    )


def lagging_members(status: GroupStatus) -> str:
    """The members whose own view id lags the group's, in one line ('' if none)."""
    return "; ".join(
        disagreement_text(status, found)
        for found in status.disagreements or ()
        if found.kind == VIEW_LAG
    )


def one_line(text: str) -> str:
    """``text`` on one line: control characters and runs of white space become one space."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def clock_text(at_us: int, now_s: float | None = None, zone: TimeZone = UTC_ZONE) -> str:
    """``at_us`` in ``zone``: ``HH:MM:SS UTC``, with the date first when not today there."""
    at = zone.moment(at_us)
    now_us = int((time.time() if now_s is None else now_s) * 1_000_000)
    same_day = at.date() == zone.moment(now_us).date()
    shown = at.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S")
    return f"{shown} {zone.label(at_us)}"


def source_line(
    agent: str, source: SourceReport, now_s: float | None = None, zone: TimeZone = UTC_ZONE
) -> str | None:
    """The warning while ``agent`` cannot read its member, on one line; None while it can.

    ``agent 127.0.0.1:7471 cannot read its member since 19:26:13 UTC: <message> Fix: <fix>``,
    the time in ``zone`` (see :func:`clock_text`); ``now_s`` decides what today is.
    """
    fault = source.fault
    if fault is None:
        return None
    since = f" since {clock_text(source.since_us, now_s, zone)}" if source.since_us else ""
    fix = f" Fix: {one_line(fault.fix)}" if fault.fix else ""
    return f"agent {agent} cannot read its member{since}: {one_line(fault.message)}{fix}"


def source_document(source: SourceReport) -> dict[str, Any]:
    """``agent_source`` of the JSON documents: ``{"ok": true}`` while the agent can read.

    Else ``ok`` false, ``kind``, ``message``, ``fix`` and ``since`` (ISO 8601 in UTC with
    ``Z``, whole seconds: ``2026-11-24T10:15:02Z``; null when the agent did not say).
    """
    fault = source.fault
    if fault is None:
        return {"ok": True}
    since = f"{UTC_ZONE.moment(source.since_us):%Y-%m-%dT%H:%M:%S}Z" if source.since_us else None
    return {
        "ok": False,
        "kind": fault.kind,
        "message": fault.message,
        "fix": fault.fix,
        "since": since,
    }


def table_document(
    agent: str,
    table: str,
    source: SourceReport,
    columns: Sequence[Column],
    rows: Sequence[Sequence[Value]],
) -> dict[str, Any]:
    """The JSON document of one table: ``agent``, ``table``, ``agent_source`` and ``rows``.

    ``agent_source`` is :func:`source_document`'s object while the agent cannot read its
    member, else null; ``rows`` holds one object per row, keyed by the exact column names
    (TIMESTAMP(6) values as ISO 8601 in UTC with ``Z``, the zero one as null).
    """
    return {
        "agent": agent,
        "table": table,
        "agent_source": None if source.fault is None else source_document(source),
        "rows": json_objects(columns, rows),
    }


def json_line(status: GroupStatus) -> str:
    """The JSON document on one line (JSON Lines), without the newline."""
    return json.dumps(document(status), separators=(",", ":"))


def _with_addresses(status: GroupStatus, members: Sequence[str]) -> str:
    return ", ".join(
        f"{member} ({where})" if (where := status.address_of(member)) else member
        for member in members
    )


def summary(status: GroupStatus, zone: TimeZone = UTC_ZONE) -> list[tuple[str, str]]:
    """The verdict as ``(label, value)`` lines, in the spirit of MySQL Shell's cluster.status().

    ``as of`` is in ``zone``, marked with it.
    """
    throttled = status.text("THROTTLED")
    if throttled == "YES" and status.throttled_by:
        throttled += " by " + _with_addresses(status, status.throttled_by)
    skewed = clock_skewed(status)
    return [
        ("status", status.text("STATUS")),
        ("status text", status.text("STATUS_TEXT")),
        ("tolerance", status.text("TOLERANCE")),
        ("mode", status.text("MODE") or "unknown"),
        ("primary", _with_addresses(status, status.primary) or "none"),
        *([("group label", label)] if (label := status.text("GROUP_LABEL")) else []),
        ("group name", status.text("GROUP_NAME")),
        ("view id", status.text("VIEW_ID")),
        ("as of", status.as_of(zone)),
        ("agent", status.agent),
        ("throttled", throttled),
        *([("clock skew", skewed)] if skewed else []),
        *([("errant", errant)] if (errant := errant_members(status)) else []),
        *([("catching up", catching)] if (catching := catching_up(status)) else []),
        *([("split-brain", split)] if (split := split_members(status)) else []),
        *([("one-way", one_way)] if (one_way := one_way_members(status)) else []),
        *([("view lag", lag)] if (lag := lagging_members(status)) else []),
        *([("next primary", following)] if (following := next_primary_text(status)) else []),
        *([("next primary unsafe", _unsafe(status))] if _unsafe(status) else []),
        *([("stable set", stalled)] if (stalled := stable_set_stalled(status)) else []),
    ]


def _unsafe(status: GroupStatus) -> str:
    """The next primary's warning ('' when there is none or it is safe)."""
    found = status.next_primary
    return found.warning if found is not None else ""


def clock_skewed(status: GroupStatus) -> str:
    """The members whose clock is off the median by more than 0.5 s, with by how much ('' if none).

    ``db3:3306 +5.000 s``: the limit is the one the agent warns at
    (:data:`~grstats.agent.gossip.clocks.SKEW_WARN_US`).
    """
    from grstats.agent.gossip.clocks import SKEW_WARN_US  # noqa: PLC0415  (the status only)

    return ", ".join(
        f"{address(member) or member.get('MEMBER_ID')} {skew / 1000:+.3f} s"
        for member in status.members
        if isinstance(skew := member.get("CLOCK_SKEW_MS"), int) and abs(skew) * 1000 > SKEW_WARN_US
    )


def errant_members(status: GroupStatus) -> str:
    """The members that executed transactions the group lacks, with the GTIDs ('' if none).

    ``127.0.0.1:13308 has 5b1e...:1-3 the group lacks (a rejoin is refused)``, one member after
    another separated by ``; `` (see :mod:`grstats.core.errant`).
    """
    return "; ".join(
        f"{address(member) or member.get('MEMBER_ID')} has {_one_line_set(errant)} the group "
        "lacks (a rejoin is refused)"
        for member in status.members
        if isinstance(errant := member.get("ERRANT_TRANSACTIONS"), str) and errant
    )


def catching_up_members(status: GroupStatus) -> list[dict[str, Value]]:
    """The members catching up: RECOVERING with TRANSACTIONS_LEFT known, or a large backlog.

    A backlog is large past :data:`~grstats.core.election.BACKLOG_WARNING` transactions left.
    """
    from grstats.core.election import BACKLOG_WARNING  # noqa: PLC0415  (the status only)

    return [
        member
        for member in status.members
        if isinstance(left := member.get("TRANSACTIONS_LEFT"), int)
        and (member.get("MEMBER_STATE") == "RECOVERING" or left > BACKLOG_WARNING)
    ]


def catching_up(status: GroupStatus) -> str:
    """The members catching up (:func:`catching_up_members`) and their progress ('' if none).

    ``127.0.0.1:13308 RECOVERING: 8000 transactions left at 4000/s, ETA 2.3 s``, one member
    after another separated by ``; ``. The rate is unknown before two samples, the ETA while
    the transactions left do not fall.
    """
    return "; ".join(
        f"{address(member) or member.get('MEMBER_ID')} {member.get('MEMBER_STATE')}: "
        f"{progress_text(member)}"
        for member in catching_up_members(status)
    )


def progress_text(member: Mapping[str, Value]) -> str:
    """``8000 transactions left at 4000/s, ETA 2.3 s`` from a member's row ('' when unknown)."""
    left, rate, eta = (member.get(name) for name in ("TRANSACTIONS_LEFT", "APPLY_RATE", "ETA_S"))
    if not isinstance(left, int):
        return ""
    speed = f"{rate:.0f}/s" if isinstance(rate, int | float) else "an unknown rate"
    until = f"ETA {eta:.1f} s" if isinstance(eta, int | float) else "ETA unknown"
    return f"{left} transactions left at {speed}, {until}"


def split_members(status: GroupStatus) -> str:
    """The members split from the group, in one line ('' if none).

    ``127.0.0.1:13309, 127.0.0.1:13310 (not part of the majority group, but ONLINE or
    RECOVERING on their own server: applications there read stale data, writes hang)``: the
    rows with SPLIT_BRAIN YES, MySQL Shell's "split-brain!" (``instance_diagnostics`` in
    modules/adminapi/cluster/status.cc), whose state the status text gives.
    """
    split = [
        address(member) or str(member.get("MEMBER_ID"))
        for member in status.members
        if member.get("SPLIT_BRAIN") == "YES"
    ]
    if not split:
        return ""
    return (
        f"{', '.join(split)} (not part of the majority group, but ONLINE or RECOVERING on "
        f"{'its' if len(split) == 1 else 'their'} own server: applications there read stale "
        "data, writes hang)"
    )


def stall_document(status: GroupStatus) -> dict[str, Any] | None:
    """The stable set's stall for JSON: seconds, held_back_by, rows_validating_per_minute.

    None while TRANSACTIONS_COMMITTED_ALL_MEMBERS advances (or the agent is older).
    """
    seconds = status.group.get("STABLE_SET_STALLED_S")
    if seconds is None:
        return None
    return {
        "seconds": seconds,
        "held_back_by": ids(status.text("STABLE_SET_HELD_BY")),
        "rows_validating_per_minute": status.group.get("ROWS_VALIDATING_PER_MINUTE"),
    }


def stable_set_stalled(status: GroupStatus) -> str:
    """The warning while the stable set does not advance ('' while it does).

    ``not advanced for 150 s while transactions are certified; held back by <id> (host:port,
    UNREACHABLE); ROWS_VALIDATING +30000 per minute`` (see :mod:`grstats.core.stable_set`).
    """
    stall = stall_document(status)
    if stall is None:
        return ""
    states = {str(m.get("MEMBER_ID")): str(m.get("MEMBER_STATE")) for m in status.members}
    held = ", ".join(
        f"{member} ({', '.join(filter(None, (status.address_of(member), states.get(member))))})"
        for member in stall["held_back_by"]
    )
    rate = stall["rows_validating_per_minute"]
    return (
        f"not advanced for {stall['seconds']} s while transactions are certified"
        f"{'; held back by ' + held if held else ''}"
        f"{f'; ROWS_VALIDATING {rate:+d} per minute' if isinstance(rate, int) else ''}"
        " (certification info grows until that member catches up or leaves the group)"
    )


def _one_line_set(text: str) -> str:
    """A GTID set's text on one line, as ``gtid_executed`` prints with ``,`` between UUIDs."""
    return ",".join(part.strip() for part in text.split(","))


def render_status(
    status: GroupStatus,
    output_format: str,
    elapsed_s: float | None = None,
    zone: TimeZone = UTC_ZONE,
) -> str:
    """``status`` as ``table``, ``vertical`` (the summary, then the members) or ``json``.

    The text's times are in ``zone``; the JSON's are UTC.
    """
    if output_format == "json":
        return json.dumps(document(status), indent=2) + "\n"
    lines = summary(status, zone)
    width = max(len(label) for label, _ in lines)
    head = "".join(f"{label.rjust(width)}: {value}\n" for label, value in lines)
    columns, rows = status.member_columns, status.member_rows
    if output_format == "table":
        return head + "\n" + render_table(columns, rows, elapsed_s, zone)
    if output_format == "vertical":
        return head + "\n" + render_vertical(columns, rows, elapsed_s, zone)
    raise ValueError(f"format: {output_format!r} is not one of table, vertical, json")
