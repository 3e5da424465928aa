"""Read a simulated member the way a stats source reads a real one: a ``MemberSnapshot``.

What each member shows follows MySQL's ``get_group_members_info`` and ``get_group_member_stats``
(plugin/group_replication/src/ps_information.cc): a member in the group lists every member of
the view, UNREACHABLE while suspected; a partitioned member still lists its last view and sees
the others UNREACHABLE; a stopped (OFFLINE) or expelled (ERROR) member lists only itself.

``transactions_behind`` is the column of ProxySQL's ``sys.gr_member_routing_candidate_status``
(``sys.gr_applier_queue_length()``): the GTID count of the ``group_replication_applier``
channel's RECEIVED_TRANSACTION_SET minus ``gtid_executed`` (:func:`received_set`). An ONLINE
member's applier channel has received every transaction it certified, so the figure is its
remote transactions certified and not applied (seqs ``applied_upto + 1 .. certified_upto``),
the same as COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE.
A RECOVERING member fetches what it missed through the ``group_replication_recovery`` channel,
which is not the applier channel; during that state transfer its applier channel holds what the
group delivered since it joined (seqs after ``recovering_target``, up to when it last heard the
group), suspended: the figure is that, which is what its applier queue holds once state transfer
ends. From then on (recovery's step 4, still RECOVERING) it certifies and applies like an ONLINE
member, and the figure is what it certified and has not applied.
A member that stopped, was expelled or crashed keeps what it had received and not applied.

``read_only`` and ``super_read_only`` are as GR sets them: it turns ``super_read_only`` ON (and
with it ``read_only``) when it starts (``initialize_plugin_and_join``) and when it stops
(``plugin_group_replication_stop``) in plugin/group_replication/src/plugin.cc, and on a
secondary at an election
(``Primary_election_secondary_process::enable_read_mode_on_server``); it turns ``read_only`` OFF
(and with it ``super_read_only``) on a single-primary group's primary once it has applied its
backlog (``Primary_election_primary_process::primary_election_process_handler``,
primary_election_primary_process.cc) and on a multi-primary member when it turns ONLINE
(``Plugin_gcs_events_handler::handle_recovery_message``, gcs_event_handlers.cc); both helpers are
``enable_server_read_mode`` and ``disable_server_read_mode``
(plugin_handlers/read_mode_handler.cc). A member that leaves on an error stays read-only
(``group_replication_exit_state_action=READ_ONLY``). So only a writer is read-write: an ONLINE
member of a multi-primary group, or the ONLINE primary that the simulator lets write (its
applier queue empty); every other member has both ON.

The group's name (``SimulatedGroup.name``, ``[simulated] group_name``) is its label
(``GroupView.group_label``), as a real group's InnoDB Cluster name is, before the group
starts too; a group without one has none ('').
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING

from grstats.agent.sim.election import MEMBER_WEIGHT_SINCE
from grstats.agent.sim.group import DELIVERY_US, QUEUE_US, TICKS_PER_SECOND
from grstats.agent.sim.txlog import NEGATIVE
from grstats.core.errors import SourceUnavailable
from grstats.core.fault import server_down
from grstats.core.gtid import GtidSet
from grstats.core.model import (
    CommunicationInfo,
    GroupView,
    MemberSnapshot,
    ServerSettings,
)
from grstats.core.rows import (
    ApplierStatusRow,
    MemberRow,
    MemberState,
    MemberStatsRow,
    Role,
    encode_version,
    member_role,
    member_version,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from grstats.agent.sim.group import SimulatedGroup
    from grstats.agent.sim.member import AppliedTransaction, SimMember

#: Every simulated member's MEMBER_HOST: they all run on this machine.
HOST = "127.0.0.1"
#: MEMBER_COMMUNICATION_STACK of the simulated group.
STACK = "XCom"
#: The first MySQL with replication_group_communication_information (and protocol V3), and
#: the first whose table has MEMBER_FAILURE_SUSPICIONS_COUNT.
COMMUNICATION_INFORMATION_SINCE = encode_version("8.0.27")
FAILURE_SUSPICIONS_SINCE = encode_version("8.4.0")
#: group_replication_set_write_concurrency's default (the event horizon, 10 from 8.0.16).
WRITE_CONCURRENCY = 10


def snapshot(group: SimulatedGroup, index: int, last_known: bool = False) -> MemberSnapshot:
    """Return member ``index`` as its stats source would read it now.

    Raises:
        SourceUnavailable: the member's server is down, unless ``last_known`` asks for what it
            showed when it went down.
    """
    member = group.members[index]
    if not member.server_up and not last_known:
        raise SourceUnavailable(
            f"simulated member {index} ({member.uuid}) is down",
            fault=server_down(
                f"the simulated server of member {index} is down (a crash in the scenario)"
            ),
        )
    read_at = (
        member.down_since_us if not member.server_up and member.down_since_us else group.now_us
    )
    members = (
        _member_rows(group, member) if member.server_up else (_row(group, member, member.status),)
    )
    return MemberSnapshot(
        member_id=member.uuid,
        read_at_us=read_at,
        view=GroupView(
            members=tuple(sorted(members, key=lambda row: row.member_id)),
            view_id=_view_id(member),
            group_name=group.group_name,
            single_primary_mode=group.scenario.single_primary,
            group_label=group.name,
        ),
        stats=_stats_row(group, member),
        applier=_applier_row(group, member),
        gtid_executed=executed_set(group, member.applied_by_origin, member.views_upto).union(
            errant_set(member)
        ),
        transactions_behind=sum(_waiting(group, member, *_received_span(group, member))),
        server=_server(group, member),
        member_weight=_member_weight(group, index),
        communication=_communication(group, member, members) if member.server_up else None,
    )


def _communication(
    group: SimulatedGroup, member: SimMember, rows: Sequence[MemberRow]
) -> CommunicationInfo | None:
    """The member's replication_group_communication_information row, as MySQL fills it.

    ``fetch_row_data`` (table_communication_information.cc) gives no row unless the member
    is in a group (ONLINE or RECOVERING here); the group runs protocol V3 (shown as 8.0.27,
    ``convert_to_mysql_version``) with every member a consensus leader (the simulator does not
    model ``group_replication_paxos_single_leader``, OFF by default). The suspicion counts are
    how often the group suspected each member of the member's view, plus how often the
    member's own failure detector alone suspected it over a one-way block, by UUID as
    ``Group_member_info_manager`` orders them.
    """
    version = encode_version(group.scenario.version_of(member.index))
    if version < COMMUNICATION_INFORMATION_SINCE or member.status not in {
        MemberState.ONLINE,
        MemberState.RECOVERING,
    }:
        return None
    leaders = tuple(sorted(row.member_id for row in rows))
    suspicions = None
    if version >= FAILURE_SUSPICIONS_SINCE:
        by_uuid = {
            other.uuid: other.suspicions + member.local_suspicions.get(other.index, 0)
            for other in group.members
        }
        suspicions = "{" + ",".join(f'"{uuid}":{by_uuid.get(uuid, 0)}' for uuid in leaders) + "}"
    return CommunicationInfo(
        write_concurrency=WRITE_CONCURRENCY,
        protocol_version="8.0.27",
        leaders_preferred=leaders,
        leaders_actual=leaders,
        single_leader_capable=False,
        failure_suspicions=suspicions,
    )


def _member_weight(group: SimulatedGroup, index: int) -> int | None:
    """Return ``@@group_replication_member_weight`` of member ``index``.

    None below 5.7.20 (``PRIMARY_ELECTION_MEMBER_WEIGHT_VERSION``), which has no such variable.
    """
    if encode_version(group.scenario.version_of(index)) < MEMBER_WEIGHT_SINCE:
        return None
    return group.scenario.weight_of(index)


def executed_set(group: SimulatedGroup, counts: list[int], views: int = 0) -> GtidSet:
    """Return the GTIDs of the first ``counts[o]`` positive transactions of each origin ``o``.

    With the first ``views`` view changes the group logged (``SimulatedGroup.view_log``).
    """
    intervals = [(group.view_uuid, "", gno, gno) for _, gno in group.view_log[:views]]
    for origin, count in enumerate(counts):
        runs = group.runs[origin]
        for position, (first, start) in enumerate(runs):
            if first > count:
                break
            after = runs[position + 1][0] if position + 1 < len(runs) else count + 1
            used = min(after, count + 1) - first
            intervals.append((group.group_name, "", start, start + used - 1))
    return GtidSet(intervals)


def errant_set(member: SimMember) -> GtidSet:
    """Return the transactions written on the member out of the group (errant-write events)."""
    return GtidSet([(member.uuid, "", 1, member.errant)]) if member.errant else GtidSet()


def received_set(group: SimulatedGroup, member: SimMember) -> GtidSet:
    """Return the member's ``group_replication_applier`` RECEIVED_TRANSACTION_SET.

    Its executed set plus the remote transactions its applier channel received and has not
    applied (see the module's docstring); ``snapshot`` gives only the count of the latter.
    """
    first, last = _received_span(group, member)
    applied = member.applied_by_origin
    # A RECOVERING member's channel skips what recovery still has to fetch (seqs applied_upto+1
    # .. recovering_target): those ranks of each origin are neither executed nor received.
    skipped = _waiting(group, member, member.applied_upto + 1, first - 1)
    waiting = _waiting(group, member, first, last)
    below = [a + s for a, s in zip(applied, skipped, strict=True)]
    above = [b + w for b, w in zip(below, waiting, strict=True)]
    queued = executed_set(group, above).difference(executed_set(group, below))
    return executed_set(group, applied, member.views_upto).union(queued)


def _received_span(group: SimulatedGroup, member: SimMember) -> tuple[int, int]:
    """Return the seqs (first, last) the member's applier channel received and has not applied.

    ONLINE or past state transfer, and a member that left after state transfer: what it
    certified and has not applied. In state transfer, or one that left then (crashed, cut
    off, stopped): what the group
    delivered after the point it joined at, until it stopped hearing the group; nothing for one
    that was stopped, as the simulator keeps no time for a STOP.
    """
    if member.transferred:
        return member.applied_upto + 1, member.certified_upto
    first = member.recovering_target + 1
    if member.in_group:
        return first, group.log.last
    if not member.server_up and member.down_since_us is not None:
        until = member.down_since_us
    elif member.unreachable_since is not None:
        until = group.start_us + round(member.unreachable_since * 1_000_000)
    else:
        return first, first - 1
    # Each tick's transactions are delivered during the tick: a member cut off at the start of
    # a tick received those committed before it (commit times grow with seq).
    heard = bisect_left(range(first, group.log.last + 1), until, key=group.log.commit_us)
    return first, first + heard - 1


def _waiting(group: SimulatedGroup, member: SimMember, first: int, last: int) -> list[int]:
    """Count each origin's positive transactions in seqs ``first..last``, 0 for the member's own.

    One count per origin over the log's bytes, not a loop over transactions: a slow member's
    queue can hold thousands.
    """
    if last < first:
        return [0] * len(group.members)
    return [
        0 if origin == member.index else group.log.count(first, last, origin)
        for origin in range(len(group.members))
    ]


def _server(group: SimulatedGroup, member: SimMember) -> ServerSettings:
    """The member's read_only, super_read_only and flow-control variables (module docstring)."""
    writer = member.status is MemberState.ONLINE and (
        not group.scenario.single_primary or (group.primary == member.index and member.queue == 0)
    )
    return ServerSettings(
        read_only=not writer,
        super_read_only=not writer,
        flow_control=group.scenario.flow_control,
    )


def gtid_text(group: SimulatedGroup, origin: int, rank: int) -> str:
    """Return the GTID of ``origin``'s ``rank``-th positive transaction."""
    return f"{group.group_name}:{group.gno(origin, rank)}"


def _view_id(member: SimMember) -> str:
    """The member's VIEW_ID; a crashed member keeps the one it had (its last known rows)."""
    return member.view_id if member.in_view or member.partitioned or not member.server_up else ""


def _rows_validating(group: SimulatedGroup, member: SimMember) -> int:
    """COUNT_TRANSACTIONS_ROWS_VALIDATING: the size of the member's certification info.

    A member cut off (still ONLINE in its own view, in the view or expelled) keeps what its
    certifier had when it last heard the group: it certifies nothing without consensus and
    only a new stable set garbage-collects (``Certifier::garbage_collect``, certifier.cc); a
    crashed member shows what it had then (its last known rows). A member out of the group
    otherwise (stopped, in ERROR) shows 0.
    """
    if not member.server_up or member.partitioned:
        return member.rows_validating_last_heard
    return len(group.certification) if member.in_view else 0


def _role(group: SimulatedGroup, member: SimMember) -> Role:
    if not group.scenario.single_primary or group.primary == member.index:
        return Role.PRIMARY
    return Role.SECONDARY


def _row(group: SimulatedGroup, member: SimMember, state: MemberState) -> MemberRow:
    status = member.status if state is MemberState.UNREACHABLE else state
    return MemberRow(
        member_id=member.uuid,
        member_host=HOST,
        member_port=member.port,
        member_state=state,
        member_role=member_role(status, _role(group, member), group.scenario.single_primary),
        member_version=member_version(group.scenario.version_of(member.index), state),
        member_communication_stack=STACK,
    )


def member_rows(group: SimulatedGroup, viewer: SimMember) -> list[MemberRow]:
    """``viewer``'s replication_group_members as its server shows it now (module docstring)."""
    return _member_rows(group, viewer)


def _member_rows(group: SimulatedGroup, viewer: SimMember) -> list[MemberRow]:
    if viewer.partitioned:  # its own picture: the last view, everyone else silent
        seconds = group.tick / TICKS_PER_SECOND
        since = viewer.unreachable_since if viewer.unreachable_since is not None else seconds
        silent = seconds - since >= group.scenario.timing.suspicion_s
        return [
            _row(
                group,
                other,
                MemberState.UNREACHABLE if silent and other is not viewer else other.status,
            )
            for other in (group.members[i] for i in viewer.known_members)
        ]
    if not viewer.in_view:  # OFFLINE after STOP, ERROR after expulsion: only the local row
        return [_row(group, viewer, viewer.status)]
    return [
        _row(
            group,
            other,
            MemberState.UNREACHABLE
            if group.suspected(other) or group.deaf(viewer, other)
            else other.status,
        )
        for other in group.members
        if other.in_view
    ]


def _stats_row(group: SimulatedGroup, member: SimMember) -> MemberStatsRow:
    if member.status is MemberState.OFFLINE and not member.in_view:
        # An OFFLINE member's row: MEMBER_ID only, VIEW_ID '' and counters 0
        # (get_group_member_stats, plugin/group_replication/src/ps_information.cc).
        return MemberStatsRow(member_id=member.uuid)
    stable = (
        ""
        if member.status is MemberState.RECOVERING
        else str(executed_set(group, member.stable_by_origin, member.stable_views))
    )
    last = member.last_conflict_free
    return MemberStatsRow(
        view_id=_view_id(member),
        member_id=member.uuid,
        count_transactions_in_queue=group.log.last - member.certified_upto
        if member.in_group
        else 0,
        count_transactions_checked=group.checked(member),
        count_conflicts_detected=group.conflicts_detected(member),
        count_transactions_rows_validating=_rows_validating(group, member),
        transactions_committed_all_members=stable,
        last_conflict_free_transaction=gtid_text(group, *last) if last else "",
        count_transactions_remote_in_applier_queue=member.queue,
        count_transactions_remote_applied=member.remote_applied,
        count_transactions_local_proposed=member.local_proposed,
        count_transactions_local_rollback=member.local_rollback,
    )


def _applier_row(group: SimulatedGroup, member: SimMember) -> ApplierStatusRow:
    queued = member.last_queued
    applied = member.last_applied
    fields: dict[str, str | int] = {}
    if queued is not None:
        commit = group.log.original_commit_us(queued.seq) if queued.seq > group.log.base else 0
        fields |= {
            "last_queued_transaction": gtid_text(group, queued.origin, queued.rank),
            "last_queued_transaction_original_commit_timestamp": commit,
            "last_queued_transaction_immediate_commit_timestamp": commit,
            "last_queued_transaction_start_queue_timestamp": queued.start_us,
            "last_queued_transaction_end_queue_timestamp": queued.end_us,
        }
    if applied is not None:
        commit = _commit_us(group, applied)
        fields |= {
            "last_applied_transaction": gtid_text(group, applied.origin, applied.rank),
            "last_applied_transaction_original_commit_timestamp": commit,
            "last_applied_transaction_immediate_commit_timestamp": commit,
            "last_applied_transaction_start_apply_timestamp": applied.start_us,
            "last_applied_transaction_end_apply_timestamp": applied.end_us,
        }
    applying = _applying(group, member)
    if applying is not None:
        origin, rank, seq = applying
        commit = group.log.original_commit_us(seq)
        fields |= {
            "applying_transaction": gtid_text(group, origin, rank),
            "applying_transaction_original_commit_timestamp": commit,
            "applying_transaction_immediate_commit_timestamp": commit,
            "applying_transaction_start_apply_timestamp": max(
                member.applier_clock_us, group.log.commit_us(seq) + DELIVERY_US + QUEUE_US
            ),
        }
    return ApplierStatusRow(member_id=member.uuid, **fields)  # type: ignore[arg-type]


def _commit_us(group: SimulatedGroup, transaction: AppliedTransaction) -> int:
    """Return the original commit time of a transaction still in the log, else its start.

    Stamped before flow control's wait (``TxLog.original_commit_us``).
    """
    return (
        group.log.original_commit_us(transaction.seq)
        if transaction.seq > group.log.base
        else transaction.start_us
    )


def _applying(group: SimulatedGroup, member: SimMember) -> tuple[int, int, int] | None:
    """Return (origin, rank, seq) of the remote transaction the applier works on, if any."""
    if not member.past_state_transfer or not member.server_up or member.queue <= 0:
        return None
    seq = member.applied_upto
    while seq < member.certified_upto:
        seq += 1
        entry = group.log.entry(seq)
        if entry & NEGATIVE or entry == member.index:
            continue
        return entry, member.applied_by_origin[entry] + 1, seq
    return None


def group_rows(group: SimulatedGroup) -> list[MemberRow]:
    """Return every member's row as the group shows it; members out of the view as OFFLINE/ERROR.

    This is the ground truth of MEMBER_STATE: what the majority's view says of each member,
    and for a member outside the view what it says of itself (OFFLINE, or ERROR once expelled).
    """
    rows = [_row(group, member, MemberState(group.group_state(member))) for member in group.members]
    return sorted(rows, key=lambda row: row.member_id)


def not_started(group: SimulatedGroup, index: int) -> MemberSnapshot:
    """Return member ``index`` before the group starts: GR never started.

    One members row (CHANNEL_NAME and MEMBER_STATE OFFLINE, the rest empty) and one stats row
    (CHANNEL_NAME only), as ``get_group_members_info`` and ``get_group_member_stats`` show a
    server whose Group Replication never started (plugin/group_replication/src/ps_information.cc).
    It has no ``group_replication_applier`` channel, so ``transactions_behind`` is None; the
    simulated servers start with ``super_read_only`` ON (nothing writes to a member before it
    joins) and the scenario's flow-control variables.
    """
    return MemberSnapshot(
        member_id=group.members[index].uuid,
        read_at_us=group.start_us,
        view=GroupView(
            members=(MemberRow(),),
            single_primary_mode=group.scenario.single_primary,
            group_label=group.name,
        ),
        stats=MemberStatsRow(),
        applier=ApplierStatusRow(member_id=group.members[index].uuid),
        gtid_executed=GtidSet(),
        transactions_behind=None,
        server=ServerSettings(
            read_only=True, super_read_only=True, flow_control=group.scenario.flow_control
        ),
        member_weight=_member_weight(group, index),
    )
