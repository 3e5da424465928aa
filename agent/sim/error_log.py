"""One simulated member's error log: the lines Group Replication writes for what happens to it.

``ServerErrorLog`` watches member ``index`` of a :class:`~grstats.agent.sim.group.SimulatedGroup`
at the end of every tick (``SimulatedGroup.after_tick``), compares what the member's server
shows (its replication_group_members, :func:`~grstats.agent.sim.views.member_rows`) with what it
showed a tick before, and writes the lines MySQL's plugin writes for each change, with their
codes, levels and texts (share/messages_to_error_log.txt; when each is written:
plugin/group_replication/src/gcs_event_handlers.cc):

* ``Plugin_gcs_events_handler::on_suspicions``: another member "has become unreachable"
  (ER_GRP_RPL_MEMBER_UNREACHABLE, Warning MY-011493) and "is reachable again"
  (ER_GRP_RPL_MEMBER_REACHABLE_AGAIN, Warning MY-011494); the server losing the majority
  ("... will now block all updates ...", Error MY-011495) and regaining it ("... Regular
  operation is restored ...", Warning MY-011498);
* ``on_view_changed``: the members removed (ER_GRP_RPL_MEMBER_REMOVED, Warning MY-011499), the
  primary leaving (ER_GRP_RPL_PRIMARY_MEMBER_LEFT_GRP, System MY-011500), a new primary elected
  (ER_GRP_RPL_NEW_PRIMARY_ELECTED, System MY-011507) and the new membership
  (ER_GRP_RPL_MEMBER_CHANGE, System MY-011503: the view's hosts, ``get_string_current_view_
  active_hosts``, the primary first, and the view id), and this member leaving on STOP
  GROUP_REPLICATION (ER_GRP_RPL_MEMBER_LEFT_GRP, System MY-011504);
* ``handle_recovery_message``: this server ONLINE (ER_GRP_RPL_SRV_ONLINE, System MY-011490) or
  another (ER_GRP_RPL_MEM_ONLINE, System MY-011492); a joiner of a single-primary group names its
  primary (ER_GRP_RPL_SRV_SECONDARY_MEM, System MY-011511);
* ``on_view_changed`` of a member expelled (ER_GRP_RPL_MEMBER_EXPELLED, Error MY-011505, then
  "... set into read only mode after an error ...", Error MY-011712);
* ``compare_member_transaction_sets`` refusing a joiner with more transactions
  (ER_GRP_RPL_MEMBER_TRANS_GREATER_THAN_GRP, Error MY-011526, then
  ER_GRP_RPL_TRANS_NOT_PRESENT_IN_GRP, Error MY-011522).

A crashed server writes nothing (its error_log table, in memory, starts empty again when it
restarts); a restarted one writes the lines of its join. THREAD_ID is 0, the GCS thread's; each
line's LOGGED is the tick's start, one µs after the previous line's at least (LOGGED is
error_log's primary key). The log keeps the newest :data:`KEPT_LINES`, as error_log's ring
buffer keeps the newest.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from grstats.agent.sim.views import errant_set, executed_set, member_rows
from grstats.core.rows import MemberState, Role
from grstats.core.rows.member_log import GR_PREFIX, REPL, MemberLogRow

if TYPE_CHECKING:
    from grstats.agent.sim.group import SimulatedGroup
    from grstats.core.gtid import GtidSet

#: Lines the simulated error_log keeps (MySQL's ring buffer holds performance_schema_error_size,
#: 1 MiB by default: some thousands of lines).
KEPT_LINES = 2000


@dataclass(frozen=True, slots=True)
class Message:
    """One of GR's messages: its ERROR_CODE, its PRIO and its text (``{}`` for each value)."""

    code: str
    prio: str
    text: str


# share/messages_to_error_log.txt; the codes as 8.0 servers write them.
UNREACHABLE = Message("MY-011493", "Warning", "Member with address {} has become unreachable.")
REACHABLE_AGAIN = Message("MY-011494", "Warning", "Member with address {} is reachable again.")
BLOCKED = Message(
    "MY-011495",
    "Error",
    "This server is not able to reach a majority of members in the group. This server will "
    "now block all updates. The server will remain blocked until contact with the majority is "
    "restored. It is possible to use group_replication_force_members to force a new group "
    "membership.",
)
UNBLOCKED = Message(
    "MY-011498",
    "Warning",
    "The member has resumed contact with a majority of the members in the group. Regular "
    "operation is restored and transactions are unblocked.",
)
REMOVED = Message("MY-011499", "Warning", "Members removed from the group: {}")
PRIMARY_LEFT = Message(
    "MY-011500", "System", "Primary server with address {} left the group. Electing new Primary."
)
NEW_PRIMARY = Message(
    "MY-011507",
    "System",
    "A new primary with address {} was elected. The new primary will execute all previous "
    "group transactions before allowing writes.",
)
MEMBER_CHANGE = Message("MY-011503", "System", "Group membership changed to {} on view {}.")
SRV_ONLINE = Message(
    "MY-011490", "System", "This server was declared online within the replication group."
)
MEM_ONLINE = Message(
    "MY-011492",
    "System",
    "The member with address {} was declared online within the replication group.",
)
SECONDARY = Message(
    "MY-011511",
    "System",
    "This server is working as secondary member with primary member address {}.",
)
LEFT = Message("MY-011504", "System", "Group membership changed: This member has left the group.")
EXPELLED = Message(
    "MY-011505",
    "Error",
    "Member was expelled from the group due to network failures, changing member status to ERROR.",
)
READ_ONLY_ON_ERROR = Message(
    "MY-011712",
    "Error",
    "The server was automatically set into read only mode after an error was detected.",
)
TRANS_GREATER = Message(
    "MY-011526",
    "Error",
    "This member has more executed transactions than those present in the group. Local "
    "transactions: {} > Group transactions: {}",
)
NOT_PRESENT = Message(
    "MY-011522",
    "Error",
    "The member contains transactions not present in the group. The member will now exit the "
    "group.",
)

#: A message to write and the values of its ``{}``.
Line = tuple[Message, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class _Seen:
    """What the member's server shows at the end of one tick (empty: a server just started)."""

    me: str = ""  #: the member's own server_uuid
    view_id: str = ""
    view: tuple[str, ...] = ()  #: the members its replication_group_members lists
    addresses: dict[str, str] = field(default_factory=dict)  #: member -> host:port
    unreachable: frozenset[str] = frozenset()
    online: frozenset[str] = frozenset()
    primary: str = ""
    state: str = MemberState.OFFLINE  #: its own MEMBER_STATE
    majority: bool = True

    @property
    def in_group(self) -> bool:
        return self.state in (MemberState.ONLINE, MemberState.RECOVERING) and bool(self.view_id)


class ServerErrorLog:
    """Member ``index``'s error log as its server writes it (see the module)."""

    def __init__(self, group: SimulatedGroup, index: int) -> None:
        self._group = group
        self._member = group.members[index]
        self._seen = _Seen()
        self._last_us = 0
        self._shown: tuple[object, ...] | None = None  # what the last rows were built from
        #: the lines its performance_schema.error_log holds now, oldest first
        self.lines: deque[MemberLogRow] = deque(maxlen=KEPT_LINES)
        group.after_tick.append(self.observe)

    def since(self, logged_us: int, limit: int) -> list[MemberLogRow]:
        """The first ``limit`` lines logged after ``logged_us`` (the server's; [] while down)."""
        if not self._member.server_up:
            return []
        found = [line for line in self.lines if line.logged > logged_us]
        return found[:limit]

    def observe(self) -> None:
        """Write the lines for what changed since the last tick."""
        member = self._member
        if not member.server_up:  # a crash: nothing written; the restart's table is empty
            if self._seen != _Seen() or self.lines:
                self._seen = _Seen()
                self._shown = None
                self.lines.clear()
            return
        shown = self._shows()
        if shown is not None and shown == self._shown:
            return  # its replication_group_members cannot have changed: nothing to write
        self._shown = shown
        seen = self._now()
        for message, args in _changes(self._seen, seen):
            self._write(message, *args)
        if self._refused(seen):
            local = executed_set(self._group, member.applied_by_origin, member.views_upto)
            local = local.union(errant_set(member))
            self._write(TRANS_GREATER, local.to_text(","), self._group_set().to_text(","))
            self._write(NOT_PRESENT)
        self._seen = seen

    def _shows(self) -> tuple[object, ...] | None:
        """What the member's replication_group_members is built from (views.member_rows).

        None for a member cut off, whose picture also moves with the time.
        """
        group, me = self._group, self._member
        if me.partitioned:
            return None
        others = tuple(
            (m.status, m.in_view, group.suspected(m), group.deaf(me, m)) for m in group.members
        )
        return (me.status, me.in_view, me.view_id, group.primary, me.errant, others)

    def _refused(self, seen: _Seen) -> bool:
        """Whether the member's join was refused this tick: errant transactions, ERROR, alone."""
        was = self._seen.state
        return bool(self._member.errant) and seen.state == MemberState.ERROR != was

    def _group_set(self) -> GtidSet:
        """The executed set of the group's members in the view (its ONLINE ones')."""
        group = self._group
        online = [m for m in group.members if m.in_view and m.status is MemberState.ONLINE]
        if not online:
            return executed_set(group, [0] * len(group.members))
        donor = online[0]
        return executed_set(group, donor.applied_by_origin, donor.views_upto)

    def _now(self) -> _Seen:
        member = self._member
        rows = member_rows(self._group, member)
        own = next(row for row in rows if row.member_id == member.uuid)
        listed = own.member_state in (MemberState.ONLINE, MemberState.RECOVERING)
        view = tuple(row.member_id for row in rows) if listed else ()
        unreachable = frozenset(
            row.member_id for row in rows if row.member_state == MemberState.UNREACHABLE
        )
        reachable = len(view) - len(unreachable)
        primary = next((row.member_id for row in rows if row.member_role == Role.PRIMARY), "")
        return _Seen(
            me=member.uuid,
            view_id=member.view_id if listed else "",
            view=view,
            addresses={row.member_id: f"{row.member_host}:{row.member_port}" for row in rows},
            unreachable=unreachable,
            online=frozenset(r.member_id for r in rows if r.member_state == MemberState.ONLINE),
            primary=primary if self._group.scenario.single_primary else "",
            state=own.member_state,
            majority=not view or 2 * reachable > len(view),
        )

    def _write(self, message: Message, *args: str) -> None:
        code, prio, text = message.code, message.prio, message.text
        logged = max(self._group.now_us, self._last_us + 1)
        self._last_us = logged
        data = f"{GR_PREFIX}'{text.format(*args)}'"
        self.lines.append(
            MemberLogRow(logged, 0, prio, code, REPL, data, member_id=self._member.uuid)
        )


def _changes(before: _Seen, after: _Seen) -> list[Line]:  # noqa: C901  (one branch per message)
    """The messages for ``before`` to ``after``, in the order GR writes them, with their args."""
    found: list[Line] = []
    me_in = after.in_group
    if before.in_group and me_in and before.view_id == after.view_id:
        found += [(UNREACHABLE, (after.addresses[m],)) for m in _new(after.unreachable, before)]
        if before.majority and not after.majority:
            found.append((BLOCKED, ()))
        for member in sorted(before.unreachable - after.unreachable):
            if member in after.view:
                found.append((REACHABLE_AGAIN, (after.addresses[member],)))
        if not before.majority and after.majority:
            found.append((UNBLOCKED, ()))
    if me_in and after.view_id != before.view_id:
        found += _view_changed(before, after)
    if me_in and after.state == MemberState.ONLINE != before.state:
        found.append((SRV_ONLINE, ()))
    if me_in and before.in_group:
        for member in sorted(after.online - before.online - after.unreachable):
            if member != after.me and member in before.view and member in after.view:
                found.append((MEM_ONLINE, (after.addresses[member],)))
    if before.in_group and not me_in and after.state == MemberState.ERROR:
        found += [(EXPELLED, ()), (READ_ONLY_ON_ERROR, ())]
    if before.in_group and not me_in and after.state == MemberState.OFFLINE:  # STOP
        found.append((LEFT, ()))
    return found


def _new(members: frozenset[str], before: _Seen) -> list[str]:
    """``members`` that ``before`` did not show UNREACHABLE, in MEMBER_ID order."""
    return sorted(members - before.unreachable)


def _view_changed(before: _Seen, after: _Seen) -> list[Line]:
    """``on_view_changed``'s lines: who left, the primary's election, the new membership."""
    found: list[Line] = []
    joining = not before.in_group
    if not joining:
        removed = [m for m in before.view if m not in after.view]
        if removed:
            found.append((REMOVED, (", ".join(before.addresses[m] for m in removed),)))
        if before.primary and before.primary in removed:
            found.append((PRIMARY_LEFT, (before.addresses[before.primary],)))
        if after.primary and after.primary != before.primary:
            found.append((NEW_PRIMARY, (after.addresses[after.primary],)))
    hosts = ", ".join(
        after.addresses[m] for m in sorted(after.view, key=lambda m: (m != after.primary, m))
    )
    found.append((MEMBER_CHANGE, (hosts, after.view_id)))
    if joining and after.primary and after.primary != after.me:
        found.append((SECONDARY, (after.addresses[after.primary],)))
    return found
