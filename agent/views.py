"""Every member's own view, from any agent, and where two of them disagree (issue 47). Pure.

Each agent reads its own member's ``replication_group_members`` and gossips it (the VIEW
value): what that member's server says of every member, as ``get_group_members_info``
(plugin/group_replication/src/ps_information.cc) fills it from the member's own view, the
state of a member its failure detector suspects overridden with UNREACHABLE. So any agent
knows, for every observer and member, the MEMBER_STATE the observer's own server gives the
member (NOT_LISTED where its view lacks it) and the observer's VIEW_ID:
``replication_group_member_views`` (:func:`member_views`), one row per pair of known members
whose observer's view was heard, in OBSERVER_ID then MEMBER_ID order.

Beside each observation: MEMBER_FAILURE_SUSPICIONS_COUNT, how often the observer's server
suspected the member (MySQL 8.4's ``replication_group_communication_information``, read by
the observer's agent and not gossiped: the serving agent's own member only, NULL elsewhere);
ROUND_TRIP_MS, the observer's agent's round trip to the member's agent (the delay of the clock
estimate the observer's agent shares on its counts, :class:`~grstats.agent.gossip.ClockOffset`;
NULL where the two agents do not exchange directly); AGE_MS and CONNECTED, how old the
observer's last report is and whether it is live (:func:`~grstats.agent.known.reported`,
:func:`~grstats.agent.known.connected`).

DISAGREEMENT names what an observation contradicts, for connected observers only:

* ``SPLIT_BRAIN`` on a member's own row: it shows itself ONLINE or RECOVERING while the
  group's view (with quorum) lists it UNREACHABLE or not at all, MySQL Shell's split-brain
  (:func:`~grstats.agent.known.split_brain`, the verdict's SPLIT_BRAIN);
* ``VIEW_LAG`` on a member's own row: in the group by its own view, whose VIEW_ID is older
  than the group's (:func:`~grstats.agent.known.served_view`), though it reported that view
  after the group's was reported: it did not install the view the group did;
* ``ONE_WAY`` on both rows of a pair: both in the group by their own views, one lists the other
  UNREACHABLE or not at all while the other lists it ONLINE: the first does not hear the
  second, which hears it (a link blocked one way, or an expulsion the member missed).

Two observations disagree only if both views held at once: each view was first reported
(its VIEW value sent) no later than the other observer's last report. So a view change the
agents read a period apart (a joiner listing a member whose own read predates the join) is no
disagreement; a view that stays so is one from the next read on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grstats.agent.gossip import Counts, Key
from grstats.agent.known import (
    SPLIT_BRAIN_STATES,
    connected,
    member_ids,
    own_view,
    reported,
    served_view,
    split_brain,
    state_in,
    view_order,
)
from grstats.core.rows import NOT_LISTED, MemberViewRow
from grstats.core.rows.views import ONE_WAY, SPLIT_BRAIN, VIEW_LAG

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from grstats.agent.gossip import GossipState
    from grstats.core.model import GroupView, MemberSnapshot
    from grstats.core.rows import Value

#: The states in which an observer's view lists a member it does not hear: UNREACHABLE, or
#: not at all ('' from :func:`~grstats.agent.known.state_in`).
_NOT_HEARD = ("UNREACHABLE", "")


def member_views(
    state: GossipState,
    local: MemberSnapshot | None,
    *,
    now_us: int,
    silence_us: int,
    offsets: Mapping[str, int],
) -> list[MemberViewRow]:
    """The rows of ``replication_group_member_views`` (see the module docstring)."""
    group, origin = served_view(state, local)
    members = member_ids(state, local, group)
    found = _Observed(
        views={m: view for m in members if (view := own_view(state, local, m)) is not None},
        live={},
        seen={},
        since={},
    )
    for m in found.views:
        found.live[m] = connected(
            state, local, m, now_us=now_us, silence_us=silence_us, offsets=offsets
        )
        found.seen[m] = reported(state, local, m, offsets)
        found.since[m] = _view_since(state, local, m, offsets)
    split = split_brain(state, local, group, now_us=now_us, silence_us=silence_us, offsets=offsets)
    marks = _marks(found, group, _view_since(state, local, origin, offsets), split)
    suspicions = _suspicions(local)
    rows = []
    for observer in sorted(found.views):
        view = found.views[observer]
        trips = _round_trips(state, observer)
        seen = found.seen[observer]
        own = local is not None and observer == local.member_id
        rows += [
            MemberViewRow(
                observer_id=observer,
                member_id=member,
                member_state=state_in(view, member) or NOT_LISTED,
                view_id=view.view_id,
                member_failure_suspicions_count=suspicions.get(member) if own else None,
                round_trip_ms=trips.get(member) if member != observer else None,
                age_ms=max(0, (now_us - seen) // 1000) if seen else None,
                connected="YES" if found.live[observer] else "NO",
                disagreement=marks.get((observer, member), ""),
            )
            for member in members
        ]
    return rows


@dataclass(frozen=True, slots=True)
class _Observed:
    """Each observer's own view, whether it is live, its last report and since when its view."""

    views: dict[str, GroupView]
    live: dict[str, bool]
    seen: dict[str, int]  #: its last report (µs, this agent's clock; 0: never)
    since: dict[str, int]  #: when its view as it is now was first reported (µs)


def _marks(
    found: _Observed, group: GroupView, group_since: int, split: Mapping[str, str]
) -> dict[tuple[str, str], str]:
    """DISAGREEMENT by (observer, member), '' left out (see the module docstring).

    ``group_since`` is when the group's view was first reported, ``split`` the members split
    from it.
    """
    views, seen, since = found.views, found.seen, found.since
    marks = {(m, m): SPLIT_BRAIN for m in split}
    for member, view in views.items():
        if (
            member not in split
            and found.live[member]
            and _in_group(view, member, group)
            and view_order(view.view_id) < view_order(group.view_id)
            and group_since <= seen[member]
        ):
            marks[member, member] = VIEW_LAG
    placed = [m for m in views if found.live[m] and _in_group(views[m], m, views[m])]
    for first in placed:
        for second in placed:
            if (
                first < second
                and views[first].group_name == views[second].group_name
                and since[first] <= seen[second]
                and since[second] <= seen[first]
                and _one_way(views[first], views[second], first, second)
            ):
                marks[first, second] = marks[second, first] = ONE_WAY
    return marks


def _in_group(view: GroupView, member: str, group: GroupView) -> bool:
    """Whether ``view``, of ``group``'s group, has a VIEW_ID and lists ``member`` in it."""
    return (
        bool(view.view_id)
        and view.group_name == group.group_name
        and state_in(view, member) in SPLIT_BRAIN_STATES
    )


def _one_way(first_view: GroupView, second_view: GroupView, first: str, second: str) -> bool:
    """Whether one of the two lists the other UNREACHABLE or not at all, the other it ONLINE."""
    first_sees, second_sees = state_in(first_view, second), state_in(second_view, first)
    return (first_sees in _NOT_HEARD and second_sees == "ONLINE") or (
        second_sees in _NOT_HEARD and first_sees == "ONLINE"
    )


def _view_since(
    state: GossipState, local: MemberSnapshot | None, member: str, offsets: Mapping[str, int]
) -> int:
    """When ``member``'s view as it is now was first reported, on this agent's clock (µs).

    Its VIEW value is sent when it changes, so its time is the first read that found it; moved
    as :func:`~grstats.agent.known.reported` moves a report, never later than it arrived.
    """
    heard = state.value(member, Key.VIEW)
    if heard is None:
        return 0
    if local is not None and member == local.member_id:
        return heard.update.sent_at_us
    sent = heard.update.sent_at_us - offsets.get(member, 0)
    return max(0, min(sent, heard.received_at_us))


def _round_trips(state: GossipState, observer: str) -> dict[str, float]:
    """The round trips (ms) of ``observer``'s agent to the agents it exchanges with directly.

    The delays of the clock estimates its counts share (the local agent's own too: its counts
    carry its estimates), the round trip without the answerer's time.
    """
    heard = state.value(observer, Key.COUNTS)
    if heard is None or not isinstance(heard.update.value, Counts):
        return {}
    return {o.member: o.delay_us / 1000 for o in heard.update.value.offsets}


def _suspicions(local: MemberSnapshot | None) -> dict[str, int]:
    """MEMBER_FAILURE_SUSPICIONS_COUNT of the local member's server by member (MySQL 8.4+).

    ``{"uuid":count,...}``, as ``table_communication_information.cc`` writes it; ``{}`` before
    8.4, outside a group, or for a text that is not such an object.
    """
    text = local.communication.failure_suspicions if local and local.communication else None
    if not text:
        return {}
    try:
        found = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(found, dict):
        return {}
    return {
        str(member): count
        for member, count in found.items()
        if isinstance(count, int) and not isinstance(count, bool) and count >= 0
    }


@dataclass(frozen=True, slots=True)
class Disagreement:
    """One disagreement between members' views, as :func:`disagreements` reads it from rows.

    ``member_id`` is the member whose own view is off: split from the group or lagging it
    (``state`` how its server shows itself), or, ``ONE_WAY``, the one that does not hear
    ``peer_id`` (``state`` how it lists the peer: UNREACHABLE or NOT_LISTED; ``peer_state``
    how the peer lists it: ONLINE). ``view_id`` is the member's own.
    """

    kind: str
    member_id: str
    state: str
    view_id: str
    peer_id: str | None = None
    peer_state: str | None = None


def disagreements(rows: Iterable[Mapping[str, Value]]) -> list[Disagreement]:
    """The disagreements that rows of ``replication_group_member_views`` name, each once.

    Rows are keyed by column name; a ONE_WAY pair (two rows) is one disagreement. In the order
    of the rows: by member.
    """
    listed = list(rows)
    states = {(str(r["OBSERVER_ID"]), str(r["MEMBER_ID"])): str(r["MEMBER_STATE"]) for r in listed}
    found = []
    for row in listed:
        kind = row.get("DISAGREEMENT") or ""
        observer, member = str(row["OBSERVER_ID"]), str(row["MEMBER_ID"])
        if kind in (SPLIT_BRAIN, VIEW_LAG) and observer == member:
            found.append(Disagreement(str(kind), member, states[member, member], _text(row)))
        elif kind == ONE_WAY and states[observer, member] in ("UNREACHABLE", NOT_LISTED):
            found.append(
                Disagreement(
                    ONE_WAY,
                    observer,
                    states[observer, member],
                    _text(row),
                    peer_id=member,
                    peer_state=states.get((member, observer)),
                )
            )
    return found


def _text(row: Mapping[str, Value]) -> str:
    value = row.get("VIEW_ID")
    return "" if value is None else str(value)
