"""What an agent knows of each member: the values its tables are built from. Pure, no I/O.

Each function answers for one member from the gossip state and the local read (None when the
local server is down): the local member's values are the read's, the others' the last received.
The served tables (:mod:`grstats.agent.served`) and the group status
(:mod:`grstats.agent.status`) both build on these, so they never disagree.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from grstats.agent.gossip import Counts, Key
from grstats.agent.gtid import GtidSet
from grstats.agent.model import GroupView, ServerSettings
from grstats.agent.rows import ApplierStatusRow, MemberRow, MemberStatsRow, lag_seconds

if TYPE_CHECKING:
    from grstats.agent.gossip import GossipState
    from grstats.agent.model import MemberSnapshot

_V = TypeVar("_V")


def member_ids(state: GossipState, local: MemberSnapshot | None, view: GroupView) -> list[str]:
    """Every member to serve a row of: in ``view``, held in ``state``, or the local one."""
    members = {row.member_id for row in view.members} | set(state.origins)
    if local is not None:
        members.add(local.member_id)
    return sorted(m for m in members if m)


def served_view(state: GossipState, local: MemberSnapshot | None) -> tuple[GroupView, str]:
    """Return the membership view to serve and the member whose view it is (``''`` if none).

    The local member's own view when it is in a group, else the freshest view read of another
    member, else the local member's (not in a group) or an empty one.
    """
    if local is not None and local.view.view_id:
        return local.view, local.member_id
    candidates = [
        heard.update
        for origin in state.origins.values()
        if (heard := origin.values.get(Key.VIEW)) is not None
        and isinstance(heard.update.value, GroupView)
        and heard.update.value.view_id
    ]
    if candidates:
        freshest = max(candidates, key=lambda update: (update.sent_at_us, update.origin))
        assert isinstance(freshest.value, GroupView)
        return freshest.value, freshest.origin
    if local is not None:
        return local.view, local.member_id
    return GroupView(), ""


def freshest_view(state: GossipState, local: MemberSnapshot | None) -> GroupView:
    """Return the membership view to serve (see :func:`served_view`)."""
    return served_view(state, local)[0]


def departed(state: GossipState, member: str) -> MemberRow:
    """A member outside the served view: OFFLINE, with its last host and port (WL#2860)."""
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
    return replace(
        row, applier_lag_seconds=lag_seconds(row, member_now_us), transactions_behind=behind
    )


def transactions_behind(
    state: GossipState, local: MemberSnapshot | None, member: str
) -> int | None:
    """The count ``member``'s agent last sent with its counts (the local one's read now)."""
    if local is not None and member == local.member_id:
        return local.transactions_behind
    counts = _heard(state, member, Key.COUNTS, Counts)
    return counts.transactions_behind if counts is not None else None


def executed_of(state: GossipState, local: MemberSnapshot | None, member: str) -> GtidSet:
    """``member``'s gtid_executed, empty when never received."""
    if local is not None and member == local.member_id:
        return local.gtid_executed
    executed = _heard(state, member, Key.GTID_EXECUTED, GtidSet)
    return executed if executed is not None else GtidSet()


def server_of(
    state: GossipState, local: MemberSnapshot | None, member: str
) -> ServerSettings | None:
    """``member``'s read_only, super_read_only and flow-control variables, None if never heard."""
    if local is not None and member == local.member_id:
        return local.server
    return _heard(state, member, Key.SERVER, ServerSettings)
