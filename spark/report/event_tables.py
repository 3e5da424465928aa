"""The report's event tables: the range's events, and its primary switchovers.

Both come from the table's events (:mod:`grstats.spark.events`: each event once, as the
agents served ``replication_group_events``). EVENT_TIME is on the clock of the member that
reported the event (REPORTED_BY), not corrected for its offset, so the times of two
members' events differ by their clocks' skew too (``grstats query status`` shows it).

A **switchover** is a secondary elected primary: an event MEMBER_ROLE from SECONDARY to
PRIMARY (:mod:`grstats.core.events`: each member reports its own role). Not a member that
joins as PRIMARY (OLD_VALUE ''): the member that bootstraps a group, and in multi-primary
mode every member that joins, where no primary was replaced. For each:

* ``old_primary``: the member elected before it in the group's events; for the first
  election the table holds, the other member that reports losing PRIMARY before the next
  election (after a crash it reports it when it is back; null when none does);
* ``primary_lost_at``, ``primary_lost_by``: the first sign, at or before the election, that
  the old primary was lost, after its last sign of being fine: its own agent losing its
  server (SOURCE_FAILED), its state leaving ONLINE as any member saw it (MEMBER_STATE: the
  others see it UNREACHABLE), it leaving the group (LEFT) or the role (MEMBER_ROLE from
  PRIMARY, a planned switchover); signs of being fine are SOURCE_RECOVERED, MEMBER_STATE to
  ONLINE and its own election;
* ``no_primary_s``: from that sign to the election; null when there is none (no old primary
  known, or no sign in the events);
* ``writable_at``: when the new primary could take writes: its first SUPER_READ_ONLY event to
  OFF at or after its election, before it loses the role or the next election. An elected
  member stays ``super_read_only`` until its applier has applied the backlog it had, the old
  primary's last transactions (``Primary_election_primary_process::
  primary_election_process_handler``, plugin/group_replication/src/plugin_handlers/
  primary_election_primary_process.cc, waits for ``wait_for_current_events_execution``
  before ``disable_server_read_mode``). Null when the events hold no such event (its agent
  older than the event type, or restarted meanwhile, or the range ends first);
* ``write_outage_s``: from the old primary's first sign of loss to ``writable_at``, or to
  the election when that is null (a lower bound then); null with ``no_primary_s``;
* ``write_outage_end``: what ended it: SUPER_READ_ONLY, or MEMBER_ROLE (the election) when
  ``writable_at`` is null.

All events of a group up to the range's end are read, so that a switchover in range knows the
election before it; the rows are those whose election is in range. Pure pyarrow and Python:
events are few.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from grstats.core.events import OFF
from grstats.core.rows import EventType, MemberState, Role
from grstats.spark.events import in_range, ordered
from grstats.spark.member_log import lines_around
from grstats.spark.report.tables import EVENT_LOG, EVENTS, SWITCHOVERS

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Mapping, Sequence

Event = dict[str, Any]

_PRIMARY, _SECONDARY = str(Role.PRIMARY), str(Role.SECONDARY)


def events(found: pa.Table, start: dt.datetime | None, end: dt.datetime | None) -> pa.Table:
    """The EVENTS result table: the events of ``found`` (ARROW_EVENTS) in [start, end)."""
    kept = ordered(in_range(found, start, end))
    return kept.select(EVENTS.names).cast(EVENTS)


def event_log(
    shown: pa.Table, lines: pa.Table, addresses: Mapping[str, str] | None = None
) -> pa.Table:
    """EVENT_LOG: the GR log lines around each event of ``shown`` (an :func:`events` table).

    ``lines`` are the table's (``grstats.spark.member_log.ARROW_LOG``); ``addresses`` (member
    id -> ``host:port``) lets a line that names a member by address count as about it.
    """
    rows = []
    numbers: dict[str, int] = {}
    found = lines_around(shown, lines, addresses=addresses)
    for event, around in zip(shown.to_pylist(), found, strict=True):
        label = event["group_label"]
        numbers[label] = number = numbers.get(label, 0) + 1
        rows += [
            {
                "group_label": label,
                "event": number,
                "event_time": event["event_time"],
                "member_id": event["member_id"],
                "event_type": event["event_type"],
                **{name: line[name] for name in EVENT_LOG.names[5:-1]},
                "line_member_id": line["member_id"],
            }
            for line in around
        ]
    return pa.Table.from_pylist(rows, schema=EVENT_LOG)


def is_election(event: Event) -> bool:
    """Whether ``event`` is a secondary elected primary."""
    return bool(
        event["event_type"] == EventType.MEMBER_ROLE
        and event["old_value"] == _SECONDARY
        and event["new_value"] == _PRIMARY
    )


def _is_loss(event: Event) -> bool:
    kind = event["event_type"]
    if kind in (EventType.SOURCE_FAILED, EventType.LEFT):
        return True
    if kind == EventType.MEMBER_STATE:
        return bool(event["new_value"] != MemberState.ONLINE)
    return bool(kind == EventType.MEMBER_ROLE and event["old_value"] == _PRIMARY)


def _is_fine(event: Event) -> bool:
    kind = event["event_type"]
    if kind == EventType.SOURCE_RECOVERED:
        return True
    if kind == EventType.MEMBER_STATE:
        return bool(event["new_value"] == MemberState.ONLINE)
    return bool(kind == EventType.MEMBER_ROLE and event["new_value"] == _PRIMARY)


def switchovers(found: pa.Table, start: dt.datetime | None, end: dt.datetime | None) -> pa.Table:
    """The SWITCHOVERS result table of ``found`` (ARROW_EVENTS): elections in [start, end)."""
    rows: list[Event] = []
    every = ordered(in_range(found, None, end)).to_pylist()
    by_group: dict[str, list[Event]] = {}
    for event in every:
        by_group.setdefault(event["group_label"], []).append(event)
    for label, group in by_group.items():
        elections = [event for event in group if is_election(event)]
        for index, election in enumerate(elections):
            after = elections[index + 1]["event_time"] if index + 1 < len(elections) else None
            old = (
                elections[index - 1]["member_id"]
                if index > 0
                else _first_to_lose_primary(group, election["member_id"], after)
            )
            lost = None if old is None else _lost(group, old, election["event_time"])
            at = election["event_time"]
            if (start is not None and at < start) or (end is not None and at >= end):
                continue
            writable = _writable(group, election, after)
            outage_end = at if writable is None else writable["event_time"]
            rows.append(
                {
                    "group_label": label,
                    "time": at,
                    "old_primary": old,
                    "new_primary": election["member_id"],
                    "view_id": election["view_id"],
                    "primary_lost_at": None if lost is None else lost["event_time"],
                    "primary_lost_by": None if lost is None else lost["event_type"],
                    "no_primary_s": None
                    if lost is None
                    else (at - lost["event_time"]).total_seconds(),
                    "writable_at": None if writable is None else writable["event_time"],
                    "write_outage_s": None
                    if lost is None
                    else (outage_end - lost["event_time"]).total_seconds(),
                    "write_outage_end": str(
                        EventType.MEMBER_ROLE if writable is None else EventType.SUPER_READ_ONLY
                    ),
                }
            )
    return pa.Table.from_pylist(rows, schema=SWITCHOVERS)


def _first_to_lose_primary(
    group: Sequence[Event], elected: str, before: dt.datetime | None
) -> str | None:
    """The first other member to report losing PRIMARY before ``before`` (None: unbounded)."""
    for event in group:
        if before is not None and event["event_time"] >= before:
            break
        if (
            event["event_type"] == EventType.MEMBER_ROLE
            and event["old_value"] == _PRIMARY
            and event["member_id"] != elected
        ):
            return str(event["member_id"])
    return None


def _writable(group: Sequence[Event], election: Event, before: dt.datetime | None) -> Event | None:
    """The elected member's first SUPER_READ_ONLY to OFF from its election on, if any.

    None when it loses PRIMARY first, or the next election (``before``) comes first.
    """
    member, elected_at = election["member_id"], election["event_time"]
    for event in group:
        if before is not None and event["event_time"] >= before:
            break
        if event["event_time"] < elected_at or event["member_id"] != member:
            continue
        kind = event["event_type"]
        if kind == EventType.SUPER_READ_ONLY and event["new_value"] == OFF:
            return event
        if kind == EventType.MEMBER_ROLE and event["old_value"] == _PRIMARY:
            return None
    return None


def _lost(group: Sequence[Event], member: str, elected_at: dt.datetime) -> Event | None:
    """The first sign of ``member``'s loss at or before ``elected_at``, after its last fine one."""
    first: Event | None = None
    for event in group:
        if event["event_time"] > elected_at:
            break
        if event["member_id"] != member:
            continue
        if _is_fine(event):
            first = None
        elif first is None and _is_loss(event):
            first = event
    return first
