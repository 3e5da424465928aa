"""What an agent knows of each member: the values its tables are built from. Pure, no I/O.

Each function answers for one member from the gossip state and the local read (None when the
local server is down): the local member's values are the read's, the others' the last received.
The served tables (:mod:`grstats.agent.served`) and the group status
(:mod:`grstats.agent.status`) both build on these, so they never disagree.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from grstats.agent.gossip import Counts, Key
from grstats.core.gtid import GtidSet
from grstats.core.model import GroupView, ServerSettings
from grstats.core.rows import ApplierStatusRow, MemberRow, MemberStatsRow
from grstats.core.verdict import has_quorum

if TYPE_CHECKING:
    from collections.abc import Mapping

    from grstats.agent.gossip import GossipState
    from grstats.core.model import MemberSnapshot

_V = TypeVar("_V")


def member_ids(state: GossipState, local: MemberSnapshot | None, view: GroupView) -> list[str]:
    """Every member to serve a row of: in ``view``, held in ``state``, or the local one."""
    members = {row.member_id for row in view.members} | set(state.origins)
    if local is not None:
        members.add(local.member_id)
    return sorted(m for m in members if m)


def reported(
    state: GossipState, local: MemberSnapshot | None, member: str, offsets: Mapping[str, int]
) -> int:
    """When ``member``'s agent last reported it, on this agent's clock (µs; 0: never heard).

    An agent reports its member at every read that succeeds: it sends the counts, and with them
    that its other values (view, applier fields, variables, gtid_executed) still hold, as each
    is sent when it changes. So this is how old every row of the member is, in every table
    (LAST_SEEN and AGE_MS; the verdict's AGE_MS too): the local member's last read, another
    member's last counts, sent on its clock and moved to this agent's by its ``offsets``. A
    member whose server cannot be read is not reported, though its agent is heard (CONNECTED).
    A report is never later than this agent received it: a member whose clock is not known yet
    (no offset estimated or relayed to this agent), or is known wrongly, never shows a
    LAST_SEEN in the future or an AGE_MS stuck at 0.
    """
    if local is not None and member == local.member_id:
        return local.read_at_us
    heard = state.value(member, Key.COUNTS)
    if heard is None or not isinstance(heard.update.value, Counts):
        return 0
    sent = heard.update.sent_at_us - offsets.get(member, 0)
    return max(0, min(sent, heard.received_at_us))


def connected(  # noqa: PLR0913  (the inputs of reported(), plus the time and the silence)
    state: GossipState,
    local: MemberSnapshot | None,
    member: str,
    *,
    now_us: int,
    silence_us: int,
    offsets: Mapping[str, int],
) -> bool:
    """CONNECTED: whether this agent has live values of ``member`` (WL#2860's "not connected").

    Live means its agent was heard within ``silence_us`` (directly or relayed,
    :meth:`~grstats.agent.gossip.GossipState.connected`) and reported the member within it: a
    read of its server that succeeded (:func:`reported`, the LAST_SEEN every table shows). So a
    member whose agent is silent and a member whose agent runs but cannot read its server (a
    crashed mysqld) both turn ``CONNECTED NO`` once AGE_MS passes the silence: grstats no longer
    knows how that member is, whatever the reason. The local member follows the same rule.
    """
    if not state.connected(member, now_us, silence_us):
        return False
    seen = reported(state, local, member, offsets)
    return seen > 0 and now_us - seen <= silence_us


def served_view(state: GossipState, local: MemberSnapshot | None) -> tuple[GroupView, str]:
    """Return the membership view to serve and the member whose view it is (``''`` if none).

    Of the views with a VIEW_ID (the local member's read, the others' last received), the
    group's newest: the highest VIEW_ID (:func:`view_order`), so that the view a minority or an
    expelled member still shows gives way to the one the group installed after it; of views
    with the same VIEW_ID, the local member's, then the freshest read. Else the local member's
    view (not in a group) or an empty one.
    """
    candidates = [
        (heard.update.value, heard.update.origin, heard.update.sent_at_us)
        for origin in state.origins.values()
        if (heard := origin.values.get(Key.VIEW)) is not None
        and isinstance(heard.update.value, GroupView)
        and heard.update.value.view_id
        and (local is None or heard.update.origin != local.member_id)
    ]
    if local is not None and local.view.view_id:
        candidates.append((local.view, local.member_id, local.read_at_us))
    if candidates:
        view, origin, _ = max(
            candidates,
            key=lambda found: (
                view_order(found[0].view_id),
                local is not None and found[1] == local.member_id,
                found[2],
                found[1],
            ),
        )
        return view, origin
    if local is not None:
        return local.view, local.member_id
    return GroupView(), ""


#: The states in which a member left out of the majority's view is split from it: Shell's
#: split-brain check (``instance_diagnostics`` in modules/adminapi/cluster/status.cc).
SPLIT_BRAIN_STATES = ("ONLINE", "RECOVERING")
#: The states the majority's view gives a member split from it: Shell's ``minfo.state``
#: UNREACHABLE or MISSING (not listed) in ``instance_diagnostics``.
_SPLIT_FROM_STATES = ("UNREACHABLE", "")


def own_view(state: GossipState, local: MemberSnapshot | None, member: str) -> GroupView | None:
    """``member``'s own ``replication_group_members`` as read or last received, None if unheard."""
    if local is not None and member == local.member_id:
        return local.view
    return _heard(state, member, Key.VIEW, GroupView)


def state_in(view: GroupView, member: str) -> str:
    """The MEMBER_STATE ``view`` lists ``member`` in, ``''`` when it does not list it."""
    return next((row.member_state for row in view.members if row.member_id == member), "")


def split_state(majority: GroupView, own: GroupView | None, member: str) -> str:
    """The state ``member`` shows itself in while split from ``majority`` (``''``: it is not).

    Shell's split-brain (``instance_diagnostics``, modules/adminapi/cluster/status.cc): the
    majority's view lists the member UNREACHABLE or not at all (MISSING) while the member's own
    server says it is ONLINE or RECOVERING (Shell's ``status`` of it is then the quorum's,
    ``(MISSING)``, and its ``memberState`` the member's own: ``Status::feed_member_info``).
    Shell reads the member live; grstats has its last read, so it also asks that the
    majority's view has quorum and the member's own view of the same group has none
    (:func:`~grstats.core.verdict.has_quorum`): a member whose own view has quorum is in a
    majority itself, and a member that crashed left a last view that had quorum, not one of a
    member cut off. The caller asks for a connected member only.
    """
    if own is None or not majority.view_id or own.group_name != majority.group_name:
        return ""
    found = state_in(own, member)
    if (
        found not in SPLIT_BRAIN_STATES
        or state_in(majority, member) not in _SPLIT_FROM_STATES
        or not has_quorum([row.member_state for row in majority.members])
        or has_quorum([row.member_state for row in own.members])
    ):
        return ""
    return found


def split_brain(  # noqa: PLR0913  (the inputs of connected(), plus the majority's view)
    state: GossipState,
    local: MemberSnapshot | None,
    majority: GroupView,
    *,
    now_us: int,
    silence_us: int,
    offsets: Mapping[str, int],
) -> dict[str, str]:
    """Every connected member split from ``majority`` (:func:`split_state`), with its own state."""
    found = {}
    for member in member_ids(state, local, majority):
        shown = split_state(majority, own_view(state, local, member), member)
        if shown and connected(
            state, local, member, now_us=now_us, silence_us=silence_us, offsets=offsets
        ):
            found[member] = shown
    return found


def tables_view(local: MemberSnapshot | None, majority: GroupView) -> GroupView:
    """The view MySQL's tables are served from: ``majority``, or the local member's own.

    The local member's own view while it is split from ``majority`` (:func:`split_state`): its
    server still shows itself ONLINE (or RECOVERING) and the others as it sees them
    (UNREACHABLE), and so does its agent, as MySQL does on that member, so that applications
    on it see what its server says. Every other agent serves ``majority``, where the member is
    absent or UNREACHABLE; every agent's verdict flags it (:mod:`grstats.agent.status`).
    """
    if local is not None and split_state(majority, local.view, local.member_id):
        return local.view
    return majority


def group_label(state: GossipState, local: MemberSnapshot | None, view: GroupView) -> str:
    """The group's human name: ``view``'s label, else the one most members' views give.

    Each member's agent labels the views it sends (its InnoDB Cluster name, else its
    ``group_label``). The served ``view`` gives the group's label when its origin has one; an
    origin without one (an older agent, one with no label configured) gives way to the label
    most of the views of the same group carry, the first by name on a tie, so that every agent
    that heard the same views shows the same label. ``''`` when no view of the group has one.
    """
    if view.group_label:
        return view.group_label
    views = [
        heard.update.value
        for origin in state.origins.values()
        if (heard := origin.values.get(Key.VIEW)) is not None
        and isinstance(heard.update.value, GroupView)
    ]
    if local is not None:
        views.append(local.view)
    counted = Counter(
        found.group_label
        for found in views
        if found.group_label and found.group_name == view.group_name
    )
    if not counted:
        return ""
    return min(counted, key=lambda label: (-counted[label], label))


def view_order(view_id: str) -> tuple[int, int]:
    """Order VIEW_IDs by age: ``<fixed>:<monotonic>``, compared as two numbers.

    The fixed part is the group's bootstrap time and the monotonic part goes up by one at
    each view change (``Gcs_xcom_view_identifier::init`` in
    plugin/group_replication/libmysqlgcs/src/bindings/xcom/gcs_xcom_view_identifier.cc), so
    the higher pair is the later view. One of another form orders first: ``(-1, -1)``.
    """
    fixed, colon, monotonic = view_id.partition(":")
    if colon and fixed.isdecimal() and monotonic.isdecimal():
        return int(fixed), int(monotonic)
    return -1, -1


def freshest_view(state: GossipState, local: MemberSnapshot | None) -> GroupView:
    """Return the membership view to serve (see :func:`served_view`)."""
    return served_view(state, local)[0]


def departed(state: GossipState, member: str) -> MemberRow:
    """A member outside the served view: OFFLINE, with its last host and port (WL#2860).

    ERROR when the member's own last view says so: a member that left the group on an error,
    or whose join the group refused (``Plugin_gcs_events_handler::handle_joining_members``
    ends such a join in ERROR), shows itself ERROR, alone, in its own
    ``replication_group_members``; its agent reports that view, and every agent serves it, so
    that the operator (and ``GrstatsMemberError``) sees the error and not a clean leave.
    """
    own = state.origins.get(member)
    heard = own.values.get(Key.VIEW) if own is not None else None
    if heard is not None and isinstance(heard.update.value, GroupView):
        for row in heard.update.value.members:
            if row.member_id == member and row.member_state == "ERROR":
                return MemberRow(
                    member_id=member,
                    member_host=row.member_host,
                    member_port=row.member_port,
                    member_state="ERROR",
                )
    for origin in state.origins.values():
        heard = origin.values.get(Key.VIEW)
        if heard is not None and isinstance(heard.update.value, GroupView):
            for row in heard.update.value.members:
                if row.member_id == member:
                    return MemberRow(
                        member_id=member, member_host=row.member_host, member_port=row.member_port
                    )
    return MemberRow(member_id=member)


def stats_of(
    state: GossipState, local: MemberSnapshot | None, member: str, view_id: str, in_view: bool
) -> MemberStatsRow:
    """``member``'s stats row, VIEW_ID set to the served view's; MySQL's empty one if unheard."""
    if local is not None and member == local.member_id:
        row = local.stats
    else:
        counts = _heard(state, member, Key.COUNTS, Counts)
        if counts is None:
            return MemberStatsRow.unheard(member, view_id if in_view else "")
        row = counts.row
    return replace(row, view_id=view_id) if in_view and row.view_id != view_id else row


def _heard(state: GossipState, member: str, key: Key, kind: type[_V]) -> _V | None:
    """The last value received of ``member``'s ``key``, None if none or not a ``kind``."""
    heard = state.value(member, key)
    value = heard.update.value if heard is not None else None
    return value if isinstance(value, kind) else None


def applier_held(
    state: GossipState, local: MemberSnapshot | None, member: str
) -> ApplierStatusRow | None:
    """``member``'s applier fields as read or last received (lag not computed), None if unheard."""
    if local is not None and member == local.member_id:
        return local.applier
    return _heard(state, member, Key.APPLIER, ApplierStatusRow)


def applier_of(
    state: GossipState, local: MemberSnapshot | None, member: str, member_now_us: int
) -> ApplierStatusRow:
    """``member``'s lag row: its applier fields, lag at ``member_now_us``, TRANSACTIONS_BEHIND."""
    behind = transactions_behind(state, local, member)
    row = applier_held(state, local, member)
    if row is None:
        return ApplierStatusRow(member_id=member, transactions_behind=behind)
    return replace(row.with_lag(member_now_us), transactions_behind=behind)


def lag_time(
    state: GossipState,
    local: MemberSnapshot | None,
    member: str,
    *,
    now_us: int,
    offsets: Mapping[str, int],
) -> int:
    """When, on ``member``'s clock, its APPLIER_LAG_SECONDS is computed (µs): its last report.

    The local member's last read; another member's last counts (or applier fields), at the
    time its agent sent them on its own clock. Its applier fields are as of then, so the lag
    is the one it had then, the same at every agent whatever each one's estimate of its clock,
    and it stays at that last known value once nothing more is heard of the member, rather
    than a figure that grows with the time this agent has not heard it (an estimate that
    would show 56 s for a member last seen 4 s behind). AGE_MS says how old that report is.
    Never reported: now on its clock.
    """
    if local is not None and member == local.member_id:
        return local.read_at_us
    for key in (Key.COUNTS, Key.APPLIER):
        heard = state.value(member, key)
        if heard is not None:
            return heard.update.sent_at_us
    return now_us + offsets.get(member, 0)


def transactions_behind(
    state: GossipState, local: MemberSnapshot | None, member: str
) -> int | None:
    """The count ``member``'s agent last sent with its counts (the local one's read now)."""
    if local is not None and member == local.member_id:
        return local.transactions_behind
    counts = _heard(state, member, Key.COUNTS, Counts)
    return counts.transactions_behind if counts is not None else None


def executed_of(state: GossipState, member: str) -> tuple[GtidSet, int]:
    """``member``'s gtid_executed as last sampled, and when (its clock, µs; 0: never received).

    The local member's too is its last sample, never the fresher read: every member samples on
    the same marks of the wall clock (:mod:`grstats.agent.local`), so the sets served side by
    side describe one instant.
    """
    heard = state.value(member, Key.GTID_EXECUTED)
    if heard is None or not isinstance(heard.update.value, GtidSet):
        return GtidSet(), 0
    return heard.update.value, heard.update.sent_at_us


def server_of(
    state: GossipState, local: MemberSnapshot | None, member: str
) -> ServerSettings | None:
    """``member``'s read_only, super_read_only and flow-control variables, None if never heard."""
    if local is not None and member == local.member_id:
        return local.server
    return _heard(state, member, Key.SERVER, ServerSettings)
