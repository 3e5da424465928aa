"""The member's events: what changed between two reads of it, and how long they are kept.

Each agent records its own member's events (Group Replication writes the same changes to each
member's own error log only: ``Plugin_gcs_events_handler::on_view_changed``,
plugin/group_replication/src/gcs_event_handlers.cc, logs "Plugin group_replication reported:
'Members joined the group: ...'" and the primary's election):

* from two successive reads (:func:`changes`): its MEMBER_STATE and MEMBER_ROLE changing, its
  ``super_read_only`` turning ON or OFF (SUPER_READ_ONLY: a new primary turns it OFF only once
  its applier has applied the backlog, ``Primary_election_primary_process::
  primary_election_process_handler`` in plugin_handlers/primary_election_primary_process.cc,
  so that is when writes can go on), a new view (VIEW_CHANGE, with the members that joined
  and left it), the member joining or leaving the group, and the other members of its view
  turning UNREACHABLE and back (only the others see that);
* its source failing and recovering (:func:`source_event`), flow control beginning and
  ceasing to hold its writers back (:func:`throttle_event`), and what only another agent can
  see: a member's agent turning silent and heard again (:func:`liveness_event`).

Each event carries the reporting member's clock and its view id. :func:`kept` bounds a
member's list: :data:`MAX_AGE_S` and :data:`MAX_EVENTS`. Pure: no I/O, no clock of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grstats.core.rows import EventRow, EventType, MemberState

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from grstats.core.model import MemberSnapshot
    from grstats.core.rows import MemberRow

#: How long a member's events are kept: 7 days.
MAX_AGE_S = 7 * 24 * 3600
#: How many of a member's events are kept, the newest: 500 (a day of a failover every hour
#: holds about 100: docs/benchmarks.md, "Events").
MAX_EVENTS = 500
#: OLD_VALUE and NEW_VALUE of a SUPER_READ_ONLY event, as ``SHOW GLOBAL VARIABLES`` shows a
#: boolean variable
ON, OFF = "ON", "OFF"
#: The event types that come in pairs: one says a condition began, the other that it ended.
OPPOSITES = {
    EventType.AGENT_SILENT: EventType.AGENT_HEARD,
    EventType.AGENT_HEARD: EventType.AGENT_SILENT,
    EventType.SOURCE_FAILED: EventType.SOURCE_RECOVERED,
    EventType.SOURCE_RECOVERED: EventType.SOURCE_FAILED,
    EventType.THROTTLE_STARTED: EventType.THROTTLE_STOPPED,
    EventType.THROTTLE_STOPPED: EventType.THROTTLE_STARTED,
}


def kept(
    events: Iterable[EventRow],
    now_us: int,
    *,
    max_age_s: float = MAX_AGE_S,
    max_count: int = MAX_EVENTS,
) -> tuple[EventRow, ...]:
    """``events`` in time order, none older than ``max_age_s``: the newest ``max_count``."""
    oldest = now_us - int(max_age_s * 1_000_000)
    ordered = sorted((e for e in events if e.event_time >= oldest), key=_order)
    return tuple(ordered[-max_count:]) if max_count > 0 else ()


def _order(event: EventRow) -> tuple[int, str, str]:
    return event.event_time, event.event_type, event.member_id


def _state(row: MemberRow | None) -> str:
    return row.member_state if row is not None else MemberState.OFFLINE


def _role(row: MemberRow | None) -> str:
    return row.member_role if row is not None else ""


def changes(before: MemberSnapshot | None, after: MemberSnapshot) -> list[EventRow]:
    """The events between two successful reads of the member (``before`` None: the first).

    The first read gives none: there is nothing to compare with (an agent restarted beside
    a member that is ONLINE does not report it joining).
    """
    if before is None or before.member_id != after.member_id:
        return []
    found = _own_changes(before, after)
    was_in, is_in = _in_group(before), _in_group(after)
    if is_in and after.view.view_id != before.view.view_id:
        found.append(_view_change(before, after, was_in=was_in))
    if was_in and is_in:
        found += _reachability(before, after)
    return found


def _event(
    after: MemberSnapshot, kind: EventType, member: str, change: tuple[str, str], detail: str = ""
) -> EventRow:
    """An event of ``after``'s read, reported by its member: ``change`` is (old, new)."""
    old, new = change
    view = after.view.view_id
    return EventRow(after.read_at_us, member, kind, old, new, view, after.member_id, detail)


def _on_off(flag: bool) -> str:
    """A boolean server variable as ``SHOW GLOBAL VARIABLES`` shows it: ON or OFF."""
    return ON if flag else OFF


def _own_changes(before: MemberSnapshot, after: MemberSnapshot) -> list[EventRow]:
    """The member joining, its state, role and super_read_only changing, and it leaving."""
    me, old, new = after.member_id, before.own_row(), after.own_row()
    found = []
    was_in, is_in = _in_group(before), _in_group(after)
    if is_in and not was_in:
        found.append(_event(after, EventType.JOINED, me, ("", after.view.view_id)))
    if _state(old) != _state(new):
        found.append(_event(after, EventType.MEMBER_STATE, me, (_state(old), _state(new))))
    if _role(old) != _role(new):
        found.append(_event(after, EventType.MEMBER_ROLE, me, (_role(old), _role(new))))
    was_read_only, is_read_only = before.server.super_read_only, after.server.super_read_only
    if was_read_only != is_read_only:
        change = (_on_off(was_read_only), _on_off(is_read_only))
        found.append(_event(after, EventType.SUPER_READ_ONLY, me, change))
    if was_in and not is_in:
        found.append(_event(after, EventType.LEFT, me, (before.view.view_id, "")))
    return found


def _view_change(before: MemberSnapshot, after: MemberSnapshot, *, was_in: bool) -> EventRow:
    """The member's new view: who joined and left it, or (on joining) who is in it."""
    if was_in:
        old = {row.member_id for row in before.view.members}
        new = {row.member_id for row in after.view.members}
        parts = [f"joined: {','.join(sorted(new - old))}"] if new - old else []
        parts += [f"left: {','.join(sorted(old - new))}"] if old - new else []
        detail = "; ".join(parts)
    else:
        detail = "members: " + ",".join(row.member_id for row in after.view.members)
    old_view = before.view.view_id if was_in else ""
    change = (old_view, after.view.view_id)
    return _event(after, EventType.VIEW_CHANGE, after.member_id, change, detail)


def _reachability(before: MemberSnapshot, after: MemberSnapshot) -> list[EventRow]:
    """Other members of the view turning UNREACHABLE, and reachable again, as it shows them."""
    unreachable = MemberState.UNREACHABLE
    was = {row.member_id: row.member_state for row in before.view.members}
    found = []
    for row in after.view.members:
        old = was.get(row.member_id)
        if row.member_id == after.member_id or old is None:
            continue
        if (old == unreachable) != (row.member_state == unreachable):
            found.append(
                _event(after, EventType.MEMBER_STATE, row.member_id, (old, row.member_state))
            )
    return found


def _in_group(snapshot: MemberSnapshot) -> bool:
    """Whether the member is in a group: its view has an id and lists it, not OFFLINE or ERROR."""
    own = snapshot.own_row()
    out = (MemberState.OFFLINE, MemberState.ERROR)
    return bool(snapshot.view.view_id) and own is not None and own.member_state not in out


def source_event(member_id: str, at_us: int, view_id: str, *, failed: bool, why: str) -> EventRow:
    """The member's agent could not read it any more (``failed``), or can again."""
    kind = EventType.SOURCE_FAILED if failed else EventType.SOURCE_RECOVERED
    return EventRow(at_us, member_id, kind, "", "", view_id, member_id, why)


def throttle_event(member_id: str, at_us: int, view_id: str, by: Sequence[str]) -> EventRow:
    """Flow control began (``by`` the members over the threshold) or ceased (``by`` empty)."""
    if by:
        detail = f"queues over the threshold: {','.join(by)}"
        return EventRow(
            at_us, member_id, EventType.THROTTLE_STARTED, "NO", "YES", view_id, member_id, detail
        )
    return EventRow(at_us, member_id, EventType.THROTTLE_STOPPED, "YES", "NO", view_id, member_id)


def liveness_event(
    member_id: str, reporter: MemberSnapshot | None, at_us: int, *, silent: bool, detail: str
) -> EventRow | None:
    """The reporting agent stopped hearing ``member_id`` (``silent``), or hears it again.

    ``reporter`` is the reporting agent's last read of its own member (None: no event, the
    agent does not know its member yet).
    """
    if reporter is None:
        return None
    kind = EventType.AGENT_SILENT if silent else EventType.AGENT_HEARD
    old, new = ("YES", "NO") if silent else ("NO", "YES")
    view = reporter.view.view_id
    return EventRow(at_us, member_id, kind, old, new, view, reporter.member_id, detail)
