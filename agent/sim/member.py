"""One simulated member's state: its server, its place in the group, its pipeline and counters."""

from __future__ import annotations

from dataclasses import dataclass, field

from grstats.core.rows import MemberState


@dataclass(slots=True)
class AppliedTransaction:
    """A transaction a member's applier finished (or queued): its GTID and WL#7374 times."""

    origin: int
    rank: int  #: the origin's n-th positively certified transaction: gives its GNO
    seq: int
    start_us: int
    end_us: int


@dataclass(slots=True)
class SimMember:
    """Mutable state of member ``index``; the group engine is the only writer.

    Counters restart at 0 when the member (re)joins: MySQL builds a new ``Certifier`` and
    ``Pipeline_stats_member_collector`` at START GROUP_REPLICATION, whose constructors zero them
    (certifier.cc, pipeline_stats.cc). ``certified_upto`` and ``applied_upto`` are seqs of the
    total order: every transaction up to them has been certified (applied, or skipped as the
    member's own or rolled back).
    """

    index: int
    uuid: str
    port: int
    capacity_tps: float
    rate_tps: float
    members: int
    server_up: bool = True
    partitioned: bool = False
    status: MemberState = MemberState.ONLINE
    in_view: bool = True
    unreachable_since: float | None = None
    suspicions: int = 0  #: how often the group suspected it (MEMBER_FAILURE_SUSPICIONS_COUNT)
    suspected_now: bool = False  #: whether the group suspects it now
    #: one-way blocks (scenario ``block``): sender index -> when its messages stopped reaching
    #: this member; its failure detector suspects the sender ``suspicion_s`` later
    deaf_to: dict[int, float] = field(default_factory=dict)
    #: how often this member's own failure detector suspected each sender over a block
    local_suspicions: dict[int, int] = field(default_factory=dict)
    suspecting: set[int] = field(default_factory=set)  #: blocked senders it suspects now
    down_since_us: int | None = None  #: when the server crashed
    #: its certification database's size when it last heard the group (it crashed or was cut
    #: off): a cut-off member certifies nothing and garbage-collects nothing after that
    rows_validating_last_heard: int = 0
    rejoin_at: float | None = None
    #: transactions written on it out of the group (errant-write), GNOs 1.. of its own uuid
    errant: int = 0
    view_id: str = ""
    #: uuids of the view the member last joined, for its own picture while partitioned
    known_members: tuple[int, ...] = ()
    # -- counters since the member joined --------------------------------------------
    join_seq: int = 0
    base_conflicts: int = 0
    conflicts_upto: int = 0  #: the group's negative certifications up to ``certified_upto``
    local_proposed: int = 0
    local_rollback: int = 0
    remote_applied: int = 0
    queue: int = 0  #: COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE
    # -- pipeline ----------------------------------------------------------------------
    certified_upto: int = 0
    applied_upto: int = 0
    recovering_target: int = 0
    #: distributed recovery's state transfer is done (step 4 of
    #: ``Recovery_module::recovery_thread_handle`` on): the applier certifies and applies
    transferred: bool = True
    #: the seq the applier must reach before the member turns ONLINE, once
    #: ``wait_for_applier_module_recovery`` saw the backlog fit in a period; None until then
    online_at: int | None = None
    #: remote transactions applied while RECOVERING (``m_transactions_applied_during_recovery``),
    #: the count at the last flow-control step, and those applied in the period before it
    #: (``get_delta_transactions_applied_during_recovery``)
    recovery_applied: int = 0
    recovery_applied_mark: int = 0
    recovery_delta: int = 0
    applier_clock_us: int = 0
    applied_by_origin: list[int] = field(default_factory=list)
    stable_by_origin: list[int] = field(default_factory=list)
    #: the group's logged view changes (SimulatedGroup.view_log) in its gtid_executed, and in
    #: its stable set; and those queued in its applier while ONLINE, not applied yet
    views_upto: int = 0
    stable_views: int = 0
    views_queued: int = 0
    last_conflict_free: tuple[int, int] | None = None  #: (origin, rank)
    last_applied: AppliedTransaction | None = None
    last_queued: AppliedTransaction | None = None
    # -- writer and its flow control (Flow_control_module) --------------------------------
    write_carry: float = 0.0
    quota: int = 0  #: ``m_quota_size``: commits allowed this period, 0 for no limit
    quota_used: int = 0  #: ``m_quota_used``: commits that passed ``do_wait`` this period
    #: the tick at which each commit waiting in ``do_wait`` goes on (its session is blocked)
    waiting: list[int] = field(default_factory=list)
    #: the original commit time of each of them, stamped before ``do_wait`` (observer_trans.cc)
    waiting_stamps_us: list[int] = field(default_factory=list)
    throttled: bool = False

    def __post_init__(self) -> None:
        if not self.applied_by_origin:
            self.applied_by_origin = [0] * self.members
        if not self.stable_by_origin:
            self.stable_by_origin = [0] * self.members

    @property
    def reachable(self) -> bool:
        """Whether the rest of the group can hear this member."""
        return self.server_up and not self.partitioned

    @property
    def in_group(self) -> bool:
        """Whether the member is in the view, reachable and ONLINE or RECOVERING."""
        return (
            self.in_view
            and self.reachable
            and self.status in (MemberState.ONLINE, MemberState.RECOVERING)
        )

    @property
    def past_state_transfer(self) -> bool:
        """Whether the applier certifies what the group orders: ONLINE, or RECOVERING at step 4."""
        return self.status is MemberState.ONLINE or (
            self.status is MemberState.RECOVERING and self.transferred
        )

    @property
    def certifying(self) -> bool:
        """Whether the member is in the group and certifies (:attr:`past_state_transfer`)."""
        return self.in_group and self.past_state_transfer

    @property
    def online(self) -> bool:
        """Whether the member is in the group and ONLINE."""
        return self.in_group and self.status is MemberState.ONLINE
