"""The tables an agent serves, built from its gossip state and a fresh read of its own member.

Pure: the caller passes the time, the local snapshot (or None when its server is down) and the
clock offsets it estimated. Rules (MySQL's where MySQL defines them):

* membership comes from the freshest membership view: the local member's own view when it is
  in a group (so grstats never contradicts MySQL there), else the most recently read view of
  another member; MEMBER_STATE and MEMBER_ROLE are Group Replication's own;
* every member known but absent from that view stays listed (WL#2860) as OFFLINE, with its
  last rows; rows are sorted by MEMBER_ID;
* the local stats row is read now; other rows are the last values received; VIEW_ID is the
  served view's, the same on every row (``get_group_member_stats`` in
  plugin/group_replication/src/ps_information.cc); a member in the view whose stats were
  never received shows MySQL's empty remote row;
* APPLIER_LAG_SECONDS: while applying, now minus the original commit, ``now`` taken on the
  member's clock (our clock plus its estimated offset); otherwise end of apply minus original
  commit, as the member's server reported both;
* with ``extended``, every row also gets CONNECTED, IN_VIEW, LAST_SEEN, AGE_MS and SOURCE.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from grstats.agent.gossip import LOCAL, Counts, Key
from grstats.agent.gtid import GtidSet
from grstats.agent.model import GroupView
from grstats.agent.rows import (
    EXTENDED_COLUMNS,
    REPLICATION_GROUP_MEMBER_GTID_EXECUTED,
    REPLICATION_GROUP_MEMBER_LAG,
    REPLICATION_GROUP_MEMBER_STATS,
    REPLICATION_GROUP_MEMBERS,
    ApplierStatusRow,
    Column,
    GtidExecutedRow,
    MemberRow,
    MemberStatsRow,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from grstats.agent.gossip import GossipState, Heard
    from grstats.agent.model import MemberSnapshot
    from grstats.agent.rows import Row, Value

Served = dict[str, tuple[tuple[Column, ...], list[tuple["Value", ...]]]]


def served_tables(  # noqa: PLR0913  (every input of the tables is explicit)
    state: GossipState,
    local: MemberSnapshot | None,
    now_us: int,
    silence_us: int,
    *,
    offsets_us: Mapping[str, int] | None = None,
    extended: bool = False,
) -> Served:
    """Return every served table, by name: columns and rows in MEMBER_ID order."""
    offsets = offsets_us or {}
    view = freshest_view(state, local)
    in_view = {row.member_id: row for row in view.members}
    members = sorted(
        set(in_view) | (set(state.origins) - {""}) | ({local.member_id} if local else set())
    )
    members = [m for m in members if m]
    tables: Served = {}

    def add(
        table_columns: Sequence[Column], name: str, rows: list[tuple[Row, str, Key | None]]
    ) -> None:
        columns = tuple(table_columns) + (EXTENDED_COLUMNS if extended else ())
        values = []
        for row, member, key in rows:
            cells = row.values()
            if extended:
                cells += _extended(
                    state,
                    local,
                    member,
                    key,
                    in_view=member in in_view,
                    now_us=now_us,
                    silence_us=silence_us,
                    offsets=offsets,
                )
            values.append(cells)
        tables[name] = (columns, values)

    add(
        REPLICATION_GROUP_MEMBERS.columns,
        REPLICATION_GROUP_MEMBERS.name,
        [(in_view.get(m) or _departed(state, m), m, Key.COUNTS) for m in members],
    )
    add(
        REPLICATION_GROUP_MEMBER_STATS.columns,
        REPLICATION_GROUP_MEMBER_STATS.name,
        [(_stats(state, local, m, view.view_id, m in in_view), m, Key.COUNTS) for m in members],
    )
    add(
        REPLICATION_GROUP_MEMBER_LAG.columns,
        REPLICATION_GROUP_MEMBER_LAG.name,
        [(_applier(state, local, m, now_us + offsets.get(m, 0)), m, Key.APPLIER) for m in members],
    )
    add(
        REPLICATION_GROUP_MEMBER_GTID_EXECUTED.columns,
        REPLICATION_GROUP_MEMBER_GTID_EXECUTED.name,
        [
            (GtidExecutedRow.of(m, _executed(state, local, m)), m, Key.GTID_EXECUTED)
            for m in members
        ],
    )
    return tables


def freshest_view(state: GossipState, local: MemberSnapshot | None) -> GroupView:
    """Return the membership view to serve: the local one in a group, else the freshest known."""
    if local is not None and local.view.view_id:
        return local.view
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
        return freshest.value
    if local is not None:
        return local.view
    return GroupView()


def _departed(state: GossipState, member: str) -> MemberRow:
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


def _stats(
    state: GossipState, local: MemberSnapshot | None, member: str, view_id: str, in_view: bool
) -> MemberStatsRow:
    if local is not None and member == local.member_id:
        row = local.stats
    else:
        heard = state.value(member, Key.COUNTS)
        if heard is None or not isinstance(heard.update.value, Counts):
            return MemberStatsRow.unheard(member, view_id if in_view else "")
        row = heard.update.value.row
    return replace(row, view_id=view_id) if in_view and row.view_id != view_id else row


def _applier(
    state: GossipState, local: MemberSnapshot | None, member: str, member_now_us: int
) -> ApplierStatusRow:
    if local is not None and member == local.member_id:
        return local.applier.with_lag(member_now_us)
    heard = state.value(member, Key.APPLIER)
    if heard is None or not isinstance(heard.update.value, ApplierStatusRow):
        return ApplierStatusRow(member_id=member)
    return heard.update.value.with_lag(member_now_us)


def _executed(state: GossipState, local: MemberSnapshot | None, member: str) -> GtidSet:
    if local is not None and member == local.member_id:
        return local.gtid_executed
    heard = state.value(member, Key.GTID_EXECUTED)
    if heard is not None and isinstance(heard.update.value, GtidSet):
        return heard.update.value
    return GtidSet()


def _extended(  # noqa: PLR0913  (the five columns need all of these)
    state: GossipState,
    local: MemberSnapshot | None,
    member: str,
    key: Key | None,
    *,
    in_view: bool,
    now_us: int,
    silence_us: int,
    offsets: Mapping[str, int],
) -> tuple[Value, ...]:
    """CONNECTED, IN_VIEW, LAST_SEEN, AGE_MS and SOURCE of ``member``'s row for ``key``."""
    heard: Heard | None = state.value(member, key) if key is not None else None
    if local is not None and member == local.member_id:
        seen, source = local.read_at_us, LOCAL
    elif heard is not None:
        seen, source = heard.update.sent_at_us - offsets.get(member, 0), heard.via
    else:
        seen, source = 0, ""
    connected = state.connected(member, now_us, silence_us)
    age = max(0, (now_us - seen) // 1000) if seen else None
    return ("YES" if connected else "NO", "YES" if in_view else "NO", max(seen, 0), age, source)
