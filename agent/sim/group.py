"""The simulated group: a deterministic model of a Group Replication group, stepped in ticks.

The whole group's state is a function of (scenario, seed, group start, group name, tick): every
agent process steps its own copy from the group's start and they all agree on GTIDs and
certification outcomes. The group's UUID and its members' follow from the scenario's name, the
seed and the group's name (:func:`group_uuid`, :func:`member_uuid`), so two groups of one fleet
that differ in any of them share no UUID. One tick is 0.1 s. Each tick:

1. the scenario's events for the tick happen (crash, start, stop, partition, heal, rate, capacity);
2. failure detection: a member nobody hears is suspected after ``suspicion_s`` (UNREACHABLE in the
   others' views) and expelled ``expel_timeout_s`` later (a view change), but only while a
   majority of the view is reachable: without quorum XCom agrees on no new view, so the
   members stay UNREACHABLE; the primary is elected again when it leaves (single-primary: by
   version, member weight and uuid, :mod:`grstats.agent.sim.election`);
3. if a majority of the view can talk, the writers commit transactions at their rates; a
   commit over the writer's flow-control quota waits in ``do_wait`` (the scenario reference
   says how), its original commit time and snapshot stamped before the wait as
   ``group_replication_trans_before_commit`` does (observer_trans.cc); each writes
   ``keys_per_transaction`` keys drawn with Zipf skew;
4. certification in one total order: in multi-primary mode a transaction conflicts when one of
   its keys was certified at a version its snapshot (what its origin had applied) does not
   contain; single-primary mode does not detect conflicts (``conflict_detection_enable`` in the
   ``Certifier`` constructor, certifier.cc). Positive ones get the next GNO of their origin's
   block of the group uuid (:mod:`grstats.agent.sim.gno`), negative ones roll back at the
   origin;
5. every member's applier applies remote transactions in order at its capacity, which gives the
   WL#7374 times. A RECOVERING member follows ``Recovery_module::recovery_thread_handle``
   (recovery.cc): its applier is suspended while state transfer catches it up to the point it
   joined (``Plugin_gcs_events_handler::handle_joining_members`` queues what the group orders
   meanwhile, uncertified); then, still RECOVERING, step 4 wakes the applier, which certifies
   the queued backlog and every later transaction as it is ordered (conflicts counted) and
   applies them, and ``wait_for_applier_module_recovery`` waits until the backlog fits in what
   the applier applied in the last flow-control period and the applier has applied what it
   had queued then; step 5 turns the member ONLINE;
6. every flow-control period each member computes its quota from the stats messages of the
   periods before, releases its waiting commits and sends its own stats message
   (``Flow_control_module::flow_control_step``);
   every ``gc_period_s`` the stable set round runs and the certification database is
   garbage-collected (``Certifier::handle_certifier_data``, ``Certifier::garbage_collect``).

The stable set (TRANSACTIONS_COMMITTED_ALL_MEMBERS) follows plugin/group_replication/src/
certifier.cc. A round completes only when every ONLINE member of the view has sent its
``gtid_executed`` (``Certifier::intersect_members_gtid_executed_and_garbage_collect`` compares
the messages received with ``get_number_of_members_online()``, which counts UNREACHABLE members
too), so a silent member stalls it until a view change clears it
(``Certifier::handle_view_change``). A view with a joining member also intersects the executed
sets of its non-RECOVERING members and garbage-collects with them
(``Plugin_gcs_events_handler::handle_joining_members``, ``collect_members_executed_sets``,
``Applier_module::apply_view_change_packet``); a view where members only leave does not, and
the joiner's own certifier, new and empty, learns the stable set only at its first complete
round.
Garbage collection erases a write-set only when its version is a strict subset of the stable
set (``Certifier::garbage_collect_internal``, ``is_subset_not_equals``). A write-set's version
is what its origin had executed when the transaction committed plus its own GTID
(``Certifier::certify``): the keys of the last transaction in the stable set stay when its
origin had executed every earlier transaction, which is what a lone writer's are.

A view with a joiner (the first members' too) is logged below 8.3.0 as a GTID transaction,
ordered after what was delivered before the view (:meth:`SimulatedGroup._log_view_change`):
members in the group apply it when their applier gets there, a joiner gets it through
recovery. ``gtid_executed`` and the stable set hold those GTIDs (``view_log``).
"""

from __future__ import annotations

import hashlib
import random
import uuid
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate
from typing import TYPE_CHECKING

from grstats.agent.sim.certification import certification
from grstats.agent.sim.election import Candidate, pick_primary
from grstats.agent.sim.flow_control import Quota, StatsMessage, StatsTable, next_quota
from grstats.agent.sim.gno import GnoAssigner
from grstats.agent.sim.member import AppliedTransaction, SimMember
from grstats.agent.sim.txlog import NEGATIVE, ORIGIN, TxLog
from grstats.core.errors import ConfigError
from grstats.core.model import LABEL_RULE, is_group_label
from grstats.core.rows import MemberState, encode_version

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from grstats.agent.sim.scenario import Event, Scenario

TICK_US = 100_000
TICKS_PER_SECOND = 1_000_000 // TICK_US
#: Time from commit at the origin to delivery at another member (one GCS round, in µs).
DELIVERY_US = 500
#: Time a member takes to queue a delivered transaction in its relay log (µs).
QUEUE_US = 50
#: The first SQL port of the simulated members (member i listens on BASE_PORT + i).
BASE_PORT = 13306
#: Certification keys swept between two pauses of the stable-set round (about 1 ms of work).
GC_PART = 20_000
#: A write-set's version in the certification database is ``commit µs << VERSION_SHIFT``, or'ed
#: with SNAPSHOT_FULL when its origin had executed every transaction certified before it, and
#: with its origin's index (txlog.ORIGIN).
VERSION_SHIFT = 5
SNAPSHOT_FULL = 0x10
#: MEMBER_VERSION_REMOVING_VCLE (plugin/group_replication/include/member_version.h): a group
#: whose members are all at this version or later logs no View_change_log_event.
VERSION_REMOVING_VCLE = 0x080300


def stable_uuid(*parts: object) -> str:
    """Return a version-4 UUID derived from ``parts`` (the same in every process)."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=16).digest()
    return str(uuid.UUID(bytes=digest, version=4))


def check_group_name(field: str, name: object) -> str:
    """Return ``name`` if it may name a simulated group; else ConfigError names ``field``.

    The rule is a group label's (:data:`~grstats.core.model.LABEL_RULE`): the name is also
    the group's label, as an InnoDB Cluster's name is.
    """
    if not (isinstance(name, str) and is_group_label(name)):
        raise ConfigError(f"{field}: {name!r} is not a group name ({LABEL_RULE})")
    return name


def group_uuid(scenario: str, seed: int, name: str = "") -> str:
    """Return the group_replication_group_name of the simulated group (scenario, seed, name).

    ``scenario`` is the scenario's ``name``, ``name`` the group's name ('' when it has none):
    two groups differ in their UUIDs when they differ in any of the three, and every agent of
    one group, given the same three, computes the same UUIDs.
    """
    return stable_uuid("group", scenario, seed, name)


def member_uuid(scenario: str, seed: int, index: int, name: str = "") -> str:
    """Return the server_uuid of member ``index`` of the simulated group (scenario, seed, name)."""
    return stable_uuid("member", scenario, seed, name, index)


@dataclass(slots=True)
class GroupTotals:
    """Ground truth that only the simulator knows: time spent per state, throttling, totals."""

    state_ticks: list[dict[str, int]] = field(default_factory=list)
    throttled_ticks: list[int] = field(default_factory=list)
    committed: int = 0
    rolled_back: int = 0


class SimulatedGroup:
    """A Group Replication group of 1-9 members, advanced one tick at a time.

    Build it with the scenario (already sized), a seed, the group's start time (µs since the
    epoch) and its name, if any; :meth:`advance_to` steps it to a tick; read members
    through :mod:`grstats.agent.sim.views`. The group's UUID (``group_name``, GR's
    group_replication_group_name) and its members' follow from the scenario's name, the seed
    and ``name`` (:func:`group_uuid`, :func:`member_uuid`); ``name`` is also the group's
    label (``GroupView.group_label``), '' for none.
    """

    def __init__(self, scenario: Scenario, seed: int, start_us: int, name: str = "") -> None:
        self.scenario = scenario
        self.seed = seed
        self.start_us = start_us
        self.name = check_group_name("group_name", name) if name else ""
        self.tick = 0  #: ticks done: the group's time is start_us + tick * TICK_US
        self.group_name = group_uuid(scenario.name, seed, self.name)
        size = scenario.members
        self.members = [
            SimMember(
                index=i,
                uuid=member_uuid(scenario.name, seed, i, self.name),
                port=BASE_PORT + i,
                capacity_tps=scenario.capacity_of(i),
                rate_tps=scenario.workload.rate_tps,
                members=size,
            )
            for i in range(size)
        ]
        # GCS view id: bootstrap time in 100 ns units plus a random 0-999, then a counter
        # that the bootstrap and every join increase (Gcs_xcom_state_exchange::state_exchange,
        # Gcs_xcom_view_identifier::init); the random part is the group's own.
        self.view_fixed = start_us * 10 + random.Random(self.group_name).randrange(1000)  # noqa: S311
        self.view_number = size
        for member in self.members:
            member.view_id = self.view_id
            member.known_members = tuple(range(size))
        self.primary: int | None = 0 if scenario.single_primary else None
        self.log = TxLog(TICK_US)
        #: key -> commit µs << VERSION_SHIFT | SNAPSHOT_FULL | origin
        self.certification = certification(scenario.workload.key_space, start_us)
        self.conflicts = 0
        self.positives_by_origin = [0] * size
        self.gnos = GnoAssigner(scenario.timing.block_size)
        #: each origin's runs of consecutive GNOs: (rank of the first, its GNO), in order
        self.runs: list[list[tuple[int, int]]] = [[] for _ in range(size)]
        #: the UUID of the view changes' GTIDs: group_replication_view_change_uuid, or the
        #: group name when it is AUTOMATIC (Certifier::initialize_server_gtid_set)
        self.view_uuid = scenario.view_change_uuid or self.group_name
        #: prepare_view_change_packet: m_need_vcle while a member is below 8.3.0
        self.logs_views = scenario.lowest_version() < VERSION_REMOVING_VCLE
        #: the view changes logged: (seq after which they are in the total order, GNO)
        self.view_log: list[tuple[int, int]] = []
        # The bootstrap and each first join log a view change before any write, so a new
        # 8.0 group of 3 shows group_name:1-3 (Plugin_gcs_events_handler::handle_joining_members).
        for _ in range(size):
            self._log_view_change()
        for member in self.members:
            member.views_upto = len(self.view_log)
        self.last_positive: tuple[int, int] | None = None
        self.stats = StatsTable()  #: the members' stats messages, as flow control keeps them
        #: a stable-set round is under way: the members' gtid_executed were broadcast and the
        #: round waits for every ONLINE member's (Certifier::handle_certifier_data). The first
        #: broadcast is at the start: Certifier_broadcast_thread::dispatcher broadcasts when
        #: its counter, from 0, is a multiple of BROADCAST_GTID_EXECUTED_PERIOD (60).
        self.round_pending = True
        #: stable-set rounds and view changes that garbage-collected (8.4's
        #: Gr_certification_garbage_collector_count counts both)
        self.gc_runs = 0
        self._gc_upto: int | None = None  # a view change's GC, swept at the end of its tick
        self.totals = GroupTotals(
            state_ticks=[{} for _ in range(size)],
            throttled_ticks=[0] * size,
        )
        self._events = list(scenario.events)
        self._cumulative_weights = self._key_weights()
        #: called at the end of each tick's work, before the tick counts (``now_us`` is still
        #: the tick's start): what watches the group as it runs, such as a member's error log
        #: (:mod:`grstats.agent.sim.error_log`)
        self.after_tick: list[Callable[[], None]] = []

    # -- time ---------------------------------------------------------------------------

    @property
    def now_us(self) -> int:
        """The group's current time, µs since the epoch (the end of the last tick)."""
        return self.start_us + self.tick * TICK_US

    @property
    def view_id(self) -> str:
        """The current view id, ``<fixed>:<monotonic>``."""
        return f"{self.view_fixed}:{self.view_number}"

    def advance_to(self, tick: int) -> None:
        """Step the group until ``tick`` ticks have run."""
        while self.tick < tick:
            self.step()

    def step(self) -> None:
        """Run one tick."""
        for _ in self.step_in_parts():
            pass

    def step_in_parts(self) -> Iterator[None]:
        """Run one tick, pausing between its parts: certification, each applier, the GC.

        Called by a stepper on an event loop, which lets other work run at each pause (a part
        takes well under a millisecond at 9 members). The tick is half done at a pause: the
        group must not be read or stepped again until the iterator is exhausted.
        """
        seconds = self.tick / TICKS_PER_SECOND
        tick_start = self.now_us
        self._run_events(seconds)
        self._detect_failures(seconds)
        self._detect_blocks()
        self.log.start_tick(tick_start)
        if self._has_quorum():
            self._certify(self._generate())
            yield
        tick_end = tick_start + TICK_US
        for member in self.members:
            self._apply(member, tick_end)
            yield
        self._account()  # the state during this tick, as seen from its start
        for watch in self.after_tick:
            watch()
        self.tick += 1
        if self.tick % (TICKS_PER_SECOND * self.scenario.flow_control.period) == 0:
            self._flow_control_step()
        if self.tick % (TICKS_PER_SECOND * self.scenario.timing.gc_period_s) == 0:
            self.round_pending = True  # the next broadcast of gtid_executed
        if self._gc_upto is not None:
            upto, self._gc_upto = self._gc_upto, None
            yield from self._garbage_collect(upto)
        if self.round_pending:
            yield from self._stable_set_round()
        low = min(member.applied_upto for member in self.members)
        self.log.trim(low)

    # -- events and membership -----------------------------------------------------------

    def _run_events(self, seconds: float) -> None:
        end = seconds + 1 / TICKS_PER_SECOND
        while self._events and self._events[0].at < end:
            self._happen(self._events.pop(0), seconds)

    def _happen(self, event: Event, seconds: float) -> None:  # noqa: C901, PLR0912  (one branch per action)
        member = self.members[event.member]
        if event.action == "crash" and member.server_up:
            member.server_up = False
            member.down_since_us = self.now_us
            if not member.partitioned:  # a cut-off member's certifier stopped at the cut
                member.rows_validating_last_heard = len(self.certification)
            member.unreachable_since = seconds if member.in_view else None
        elif event.action == "start":
            if member.in_view and not member.server_up:  # a restarted server is a new incarnation
                self._leave(member)
            member.server_up = True
            if not member.in_view:
                self._join(member)
        elif event.action == "stop" and member.in_view and member.server_up:
            self._leave(member)
            member.status = MemberState.OFFLINE
        elif event.action == "partition" and member.server_up and not member.partitioned:
            member.partitioned = True
            member.rows_validating_last_heard = len(self.certification)
            member.unreachable_since = seconds
        elif event.action == "heal" and member.partitioned:
            member.partitioned = False
            if member.in_view:
                member.unreachable_since = None
            else:  # expelled meanwhile: it finds out, errs, and rejoins after a while
                member.status = MemberState.ERROR
                member.rejoin_at = seconds + self.scenario.timing.autorejoin_delay_s
        elif event.action == "block":
            for receiver in event.members:
                self.members[receiver].deaf_to.setdefault(event.member, seconds)
        elif event.action == "unblock":
            for receiver in event.members or range(len(self.members)):
                self.members[receiver].deaf_to.pop(event.member, None)
                self.members[receiver].suspecting.discard(event.member)
        elif event.action == "rate":
            member.rate_tps = event.value
        elif event.action == "capacity":
            member.capacity_tps = event.value
        elif event.action == "force-members" and member.online:
            self._force_members(event.members, seconds)
        elif event.action == "errant-write" and member.server_up and not member.in_view:
            member.errant += int(event.value)

    def _force_members(self, members: tuple[int, ...], seconds: float) -> None:
        """``group_replication_force_members``: the view becomes ``members``, without quorum.

        ``Gcs_operations::force_members`` (plugin/group_replication/src/gcs_operations.cc)
        runs only on an ONLINE member and hands XCom the new ``peer_nodes``
        (``modify_configuration``). The members left out leave the view as expelled ones do:
        one that can still talk finds out, errs and rejoins after ``autorejoin_delay_s``, as
        after a healed partition.
        """
        out = [m for m in self.members if m.in_view and m.index not in members]
        if not out:
            return
        for member in out:
            member.in_view = False
            if member.reachable:
                member.status = MemberState.ERROR
                member.rejoin_at = seconds + self.scenario.timing.autorejoin_delay_s
                member.unreachable_since = None
            elif not member.server_up:
                member.unreachable_since = None
        self._view_change()

    def _detect_failures(self, seconds: float) -> None:
        timing = self.scenario.timing
        for member in self.members:
            suspected = self.suspected(member)
            if suspected and not member.suspected_now:
                member.suspicions += 1
            member.suspected_now = suspected
            since = member.unreachable_since
            if (
                member.in_view
                and since is not None
                and seconds - since >= timing.suspicion_s + timing.expel_timeout_s
                and self._has_quorum()  # a view changes only by a majority's consensus
            ):
                self._leave(member, expelled=True)
            if member.rejoin_at is not None and seconds >= member.rejoin_at and member.reachable:
                member.rejoin_at = None
                self._join(member)

    def _detect_blocks(self) -> None:
        """Each receiver's own failure detector: a blocked sender suspected ``suspicion_s`` on."""
        for receiver in self.members:
            for sender in receiver.deaf_to:
                if sender not in receiver.suspecting and self.deaf(receiver, self.members[sender]):
                    receiver.suspecting.add(sender)
                    receiver.local_suspicions[sender] = receiver.local_suspicions.get(sender, 0) + 1

    def deaf(self, viewer: SimMember, other: SimMember) -> bool:
        """Whether ``viewer``'s failure detector suspects ``other`` over a one-way block."""
        since = viewer.deaf_to.get(other.index)
        seconds = self.tick / TICKS_PER_SECOND
        return since is not None and seconds - since >= self.scenario.timing.suspicion_s

    def suspected(self, member: SimMember) -> bool:
        """Whether the group suspects ``member`` (UNREACHABLE in the others' views)."""
        since = member.unreachable_since
        seconds = self.tick / TICKS_PER_SECOND
        return (
            since is not None
            and member.in_view
            and seconds - since >= self.scenario.timing.suspicion_s
        )

    def _view_change(self, joiner: SimMember | None = None) -> None:
        """Install a new view; ``joiner`` is the member whose join it is, if any."""
        joined = joiner is not None
        self.view_number += 1
        view = tuple(m.index for m in self.members if m.in_view)
        for member in self.members:
            if member.in_view and member.reachable:
                member.view_id = self.view_id
                member.known_members = view
        self.round_pending = False  # Certifier::handle_view_change clears the round
        # ONLINE members of the view, UNREACHABLE ones too: their last executed sets bound it
        online = [m for m in self.members if m.in_view and m.status is MemberState.ONLINE]
        if joined and online:
            # handle_joining_members: the executed sets of the view's non-RECOVERING members
            # are intersected (collect_members_executed_sets) and apply_view_change_packet
            # hands them to Certifier::garbage_collect. A view where members only leave
            # (handle_leaving_members) carries no executed sets. The joiner's own packet carries
            # none either (handle_joining_members builds it without collect_members_executed_sets
            # when is_joining), so its new certifier's stable set stays empty until a round.
            self._advance_stable_set(online, joiner)
            self._gc_upto = min(m.applied_upto for m in online)
        if joined and self._log_view_change():
            for member in self.members:
                if member.certifying:  # queued by the applier, ONLINE or at recovery's step 4
                    member.queue += 1
                    member.views_queued += 1
                    self._apply_views(member)  # at once by an applier with nothing before it
        self._elect()

    def _log_view_change(self) -> bool:
        """Log a view with a joiner as a GTID transaction; return whether one was logged.

        ``Applier_module::apply_view_change_packet`` logs a ``View_change_log_event`` while
        ``m_need_vcle`` (a member below 8.3.0). ``Certification_handler::
        log_view_change_event_in_order`` wraps it in GTID, BEGIN, VCLE, COMMIT with the GTID of
        ``Certifier::generate_view_change_group_gtid``; it is ordered after the transactions
        delivered before the view and every member applies it.
        """
        if not self.logs_views:
            return False
        gno = self.gnos.view_change(on_group_uuid=self.view_uuid == self.group_name)
        if not gno:  # its own UUID, which nothing else uses: 1, 2, 3, ...
            gno = len(self.view_log) + 1
        self.view_log.append((self.log.last, gno))
        return True

    def _advance_stable_set(self, online: list[SimMember], joiner: SimMember | None = None) -> None:
        """Union the intersection of ``online``'s executed sets into the stable set.

        ``Certifier::update_stable_set``; every member that can hear the group keeps the same
        stable set, a RECOVERING one included (it reports ''), but for ``joiner``, the member
        joining in this view: its certifier is new (empty stable set) and learns the stable
        set only at its first complete round (``Certifier::handle_certifier_data``, certifier.cc);
        the donor's certification info (``Certifier::set_certification_info``) holds none.
        """
        meet = [min(m.applied_by_origin[o] for m in online) for o in range(len(self.members))]
        views = min(m.views_upto for m in online)
        for member in self.members:
            if member.in_group and member is not joiner:
                member.stable_by_origin = list(map(max, member.stable_by_origin, meet))
                member.stable_views = max(member.stable_views, views)

    def _leave(self, member: SimMember, expelled: bool = False) -> None:
        member.in_view = False
        if not expelled or not member.server_up:
            member.unreachable_since = None
        self._view_change()

    def _join(self, member: SimMember) -> None:
        """START GROUP_REPLICATION: join, recover what was missed, counters from 0.

        MySQL builds a new ``Certifier`` and ``Pipeline_stats_member_collector`` at each START.
        A member with errant transactions is refused: ERROR, out of the view (scenario.py).
        """
        if member.errant:
            member.status = MemberState.ERROR
            member.partitioned = False
            member.unreachable_since = member.rejoin_at = None
            return
        member.in_view = True
        member.partitioned = False
        member.unreachable_since = None
        member.status = MemberState.RECOVERING
        member.transferred = False
        member.online_at = None
        member.recovery_applied = member.recovery_applied_mark = member.recovery_delta = 0
        member.join_seq = self.log.last
        member.recovering_target = self.log.last
        member.certified_upto = self.log.last
        member.base_conflicts = member.conflicts_upto = self.conflicts
        member.local_proposed = member.local_rollback = member.remote_applied = 0
        member.queue = 0
        member.stable_by_origin = [0] * len(self.members)
        member.stable_views = member.views_queued = 0
        member.rejoin_at = None
        member.down_since_us = None
        member.write_carry = 0.0
        member.quota = member.quota_used = 0  # a new Flow_control_module
        member.waiting = []
        member.waiting_stamps_us = []
        member.last_conflict_free = None
        member.last_applied = member.last_queued = None
        self._view_change(joiner=member)

    def _elect(self) -> None:
        """Single-primary: when the primary left the view, pick one as GR does.

        An UNREACHABLE primary is still in the view and still the primary: the election runs
        at a view change (``Plugin_gcs_events_handler::handle_leader_election_if_needed``,
        called by ``on_view_changed``) and looks for a new primary only when the old one is
        not in the group any more (``DEAD_OLD_PRIMARY``). The pick is
        ``Primary_election_handler::pick_primary_member`` over the view's members
        (:func:`~grstats.agent.sim.election.pick_primary`): the lowest version, the highest
        member weight, the lowest server_uuid, among the ONLINE members.
        """
        if not self.scenario.single_primary:
            return
        current = self.members[self.primary] if self.primary is not None else None
        if current is not None and current.in_view and current.status is MemberState.ONLINE:
            return
        self.primary = pick_primary(
            [
                Candidate(
                    index=member.index,
                    uuid=member.uuid,
                    version=encode_version(self.scenario.version_of(member.index)),
                    weight=self.scenario.weight_of(member.index),
                    online=member.online,
                )
                for member in self.members
                if member.in_view
            ]
        )

    def _has_quorum(self) -> bool:
        view = [m for m in self.members if m.in_view]
        return 2 * sum(1 for m in view if m.reachable) > len(view)

    # -- transactions ---------------------------------------------------------------------

    def writers(self) -> list[SimMember]:
        """The members that commit transactions now."""
        if self.scenario.single_primary:
            if self.primary is None:
                return []
            primary = self.members[self.primary]
            return [primary] if primary.online and primary.queue == 0 else []
        allowed = self.scenario.workload.writers
        return [m for m in self.members if m.online and (allowed is None or m.index in allowed)]

    def _generate(self) -> list[tuple[int, int]]:
        """Return (origin, original commit µs or 0) of this tick's transactions, in total order.

        Each writer's commits are spread evenly over the tick and the writers' commits are
        merged by time, so that the total order interleaves them as real clients would. The
        commits released from ``do_wait`` go first, at the start of the tick, with the original
        commit time stamped before their wait; the others' (0) is when they are broadcast.
        """
        timed: list[tuple[float, int, int]] = []
        for writer in self.writers():
            timed += [(0.0, writer.index, stamp) for stamp in self._released(writer)]
            count = self._admitted(writer)
            timed += [((k + 1) / (count + 1), writer.index, 0) for k in range(count)]
        return [(origin, stamp) for _, origin, stamp in sorted(timed, key=lambda t: t[0])]

    def _released(self, writer: SimMember) -> list[int]:
        """Return the original commit µs of ``writer``'s waiting commits that go on now.

        They go on at a flow-control step or after 1 s of waiting.
        """
        waiting = writer.waiting
        released = 0
        while released < len(waiting) and waiting[released] <= self.tick:
            released += 1
        del waiting[:released]
        stamps = writer.waiting_stamps_us[:released]
        del writer.waiting_stamps_us[:released]
        return stamps

    def _admitted(self, writer: SimMember) -> int:
        """Count ``writer``'s new commits this tick that pass ``do_wait`` at once.

        ``Flow_control_module::do_wait`` counts every commit in ``m_quota_used``; one over a
        nonzero quota waits on the flow-control condition for at most 1 s, and its session
        with it: the sessions left issue the writer's share of ``rate_tps``.
        """
        clients = self.scenario.workload.clients
        free = clients - len(writer.waiting)
        wanted = writer.rate_tps / TICKS_PER_SECOND * free / clients + writer.write_carry
        count = int(wanted)
        writer.write_carry = wanted - count
        admitted = 0
        for k in range(count):
            writer.quota_used += 1
            if 0 < writer.quota < writer.quota_used:
                writer.waiting.append(self.tick + TICKS_PER_SECOND)  # set_timespec(&delay, 1)
                # original_commit_timestamp is stamped before do_wait (observer_trans.cc)
                writer.waiting_stamps_us.append(self.now_us + (k + 1) * TICK_US // (count + 1))
                if len(writer.waiting) == clients:
                    break
            else:
                admitted += 1
        if writer.waiting:
            writer.throttled = True
        return admitted

    def _key_weights(self) -> list[float] | None:
        workload = self.scenario.workload
        if workload.skew == 0:
            return None
        return list(
            accumulate(1 / (rank**workload.skew) for rank in range(1, workload.key_space + 1))
        )

    def _certify(self, origins: list[tuple[int, int]]) -> None:
        """Certify this tick's transactions: (origin, original commit µs or 0), in total order.

        A transaction's snapshot is what its origin had applied when it was stamped: the
        ``Transaction_context_log_event`` and the original commit time are made before
        ``do_wait`` in ``group_replication_trans_before_commit`` (observer_trans.cc), so a
        commit held by flow control certifies against the snapshot it had before the wait.
        """
        if not origins:
            return
        workload = self.scenario.workload
        rng = random.Random(self.seed * 1_000_003 + self.tick)  # noqa: S311  (a simulation)
        keys_of = range(workload.key_space)
        detect = not self.scenario.single_primary
        running_us = int(workload.transaction_ms * 1000)
        windows = [running_us + self._visibility_us(m) for m in self.members]
        tick_start = self.now_us
        slots = len(origins) + 1
        certification = self.certification
        last_remote: dict[int, tuple[int, int]] = {}  # origin -> (seq, rank) of its last positive
        for position, (origin, stamped) in enumerate(origins):
            keys = rng.choices(
                keys_of, cum_weights=self._cumulative_weights, k=workload.keys_per_transaction
            )
            committed = tick_start + (position + 1) * TICK_US // slots  # TxLog.commit_us
            # The snapshot was taken when the transaction started and holds what the origin had
            # applied by then: a version committed later, or not yet delivered and applied at
            # the origin, is not in it.
            horizon = (stamped or committed) - windows[origin]
            conflict = False
            if detect:
                for key in keys:
                    version = certification.get(key)
                    if (
                        version is not None
                        and version >> VERSION_SHIFT > horizon
                        and version & ORIGIN != origin
                    ):
                        conflict = True
                        break
            member = self.members[origin]
            member.local_proposed += 1
            if conflict:
                self.log.append(origin | NEGATIVE)
                self.conflicts += 1
                member.local_rollback += 1
                self.totals.rolled_back += 1
                continue
            seq = self.log.append(origin)
            if stamped:
                self.log.stamp(seq, stamped)
            # The version holds what the origin had executed at commit (certify() adds the
            # transaction's GTID to its snapshot): all that was certified before it, or not.
            full = sum(member.applied_by_origin) == self.totals.committed
            stamp = committed << VERSION_SHIFT | (SNAPSHOT_FULL if full else 0) | origin
            certification.write(keys, stamp)
            rank = self._next_gno_rank(origin)
            member.applied_by_origin[origin] += 1  # the origin commits its own at once
            self.last_positive = (origin, rank)
            last_remote[origin] = (seq, rank)
            self.totals.committed += 1
        self._deliver(last_remote, len(origins))

    def _deliver(self, last_remote: dict[int, tuple[int, int]], count: int) -> None:
        """Certifying members certify this tick's ``count`` transactions and queue remote ones.

        ONLINE members, and RECOVERING ones past state transfer (:attr:`SimMember.certifying`).
        """
        total = self.log.last
        first = total - count + 1
        for member in self.members:
            if not member.certifying:
                continue
            # A member back from a short partition (healed before its expulsion) gets what it
            # missed too: XCom delivers the backlog when the link is back.
            missed_from = min(first, member.certified_upto + 1)
            member.certified_upto = total
            member.conflicts_upto = self.conflicts
            member.last_conflict_free = self.last_positive
            remote = [item for origin, item in last_remote.items() if origin != member.index]
            if remote:
                seq, rank = max(remote)
                origin = self.log.entry(seq) & ORIGIN
                arrival = self.log.commit_us(seq) + DELIVERY_US
                member.last_queued = AppliedTransaction(
                    origin, rank, seq, arrival, arrival + QUEUE_US
                )
            member.queue += self._remote_positives(member, missed_from, total)

    def _remote_positives(self, member: SimMember, first: int, last: int) -> int:
        """Count the positive transactions of other origins in seqs ``first..last``."""
        return sum(
            self.log.count(first, last, origin)
            for origin in range(len(self.members))
            if origin != member.index
        )

    def _visibility_us(self, member: SimMember) -> int:
        """How long after a remote commit ``member`` has applied it: delivery, queue, apply."""
        service = 1_000_000 / member.capacity_tps if member.capacity_tps > 0 else 1_000_000
        return DELIVERY_US + int(service * (1 + member.queue))

    def _next_gno_rank(self, origin: int) -> int:
        """Count a positive transaction of ``origin``; allocate a new GNO block when needed."""
        rank = self.positives_by_origin[origin] + 1
        self.positives_by_origin[origin] = rank
        gno = self.gnos.next_for(origin)
        runs = self.runs[origin]
        if not runs or runs[-1][1] + rank - runs[-1][0] != gno:
            runs.append((rank, gno))
        return rank

    def gno(self, origin: int, rank: int) -> int:
        """Return the GNO of ``origin``'s ``rank``-th positively certified transaction."""
        runs = self.runs[origin]
        first, start = runs[bisect_right(runs, rank, key=lambda run: run[0]) - 1]
        return start + rank - first

    def _apply(self, member: SimMember, tick_end: int) -> None:
        """Advance ``member``'s applier (or state transfer) until the end of the tick."""
        self._apply_views(member)
        if not member.in_group and not (member.partitioned and member.in_view):
            return
        transferring = member.status is MemberState.RECOVERING and not member.transferred
        limit = member.recovering_target if transferring else member.certified_upto
        if member.applied_upto < limit and member.capacity_tps > 0:
            self._run_applier(member, limit, tick_end, transferring)
            self._apply_views(member)
        if member.status is not MemberState.RECOVERING or not member.in_group:
            return
        if transferring and member.applied_upto >= member.recovering_target:
            self._transferred(member)
        elif not transferring:
            self._wait_for_applier_module_recovery(member)

    def _run_applier(
        self, member: SimMember, limit: int, tick_end: int, transferring: bool
    ) -> None:
        """Apply seqs up to ``limit`` in order at the member's capacity, within the tick.

        During state transfer the recovery channel applies (no applier counters move); the
        ``group_replication_applier`` channel's transactions leave the queue and count in
        REMOTE_APPLIED only while ONLINE (``group_replication_trans_before_commit`` counts
        them as applied during recovery while RECOVERING).
        """
        service = int(1_000_000 / member.capacity_tps)
        clock = max(member.applier_clock_us, tick_end - TICK_US)
        log = self.log
        own = member.index
        by_origin = member.applied_by_origin
        applied = member.applied_upto
        # Commit times of consecutive seqs, tick by tick, without a search per transaction.
        tick, first, count, start_us = log.tick_of(applied + 1)
        last: tuple[int, int, int, int] | None = None  # entry, seq, start, end of the last applied
        done = 0
        while applied < limit:
            seq = applied + 1
            entry = log.entry(seq)
            if entry & NEGATIVE or entry == own:
                applied = seq
                continue
            while seq >= first + count:
                tick, first, count, start_us = log.tick_at(tick + 1)
            # a worker starts it once it is in the relay log: delivered, then queued
            queued = start_us + (seq - first + 1) * TICK_US // (count + 1) + DELIVERY_US + QUEUE_US
            begin = max(clock, queued)
            if begin + service > tick_end:
                break
            applied = seq
            clock = begin + service
            by_origin[entry] += 1
            done += 1
            last = (entry, seq, begin, clock)
        if not transferring and last is not None:
            if member.status is MemberState.ONLINE:
                member.remote_applied += done
            else:
                member.recovery_applied += done
            member.queue -= done
            entry, seq, begin, end = last
            member.last_applied = AppliedTransaction(entry, by_origin[entry], seq, begin, end)
        member.applied_upto = applied
        member.applier_clock_us = clock

    def _apply_views(self, member: SimMember) -> None:
        """Apply the logged view changes that ``member``'s applier or recovery has reached.

        A member in the group applies a view change once it has applied what came before it,
        taking no time; a joiner gets the views up to its own through recovery. Applied by
        the applier channel, it leaves the queue it entered (ONLINE or at recovery's step 4)
        and counts in COUNT_TRANSACTIONS_REMOTE_APPLIED while ONLINE
        (``group_replication_trans_before_commit``); it is not certified, so
        COUNT_TRANSACTIONS_CHECKED does not count it.
        """
        if not member.in_group:
            return
        log = self.view_log
        while member.views_upto < len(log) and log[member.views_upto][0] <= member.applied_upto:
            member.views_upto += 1
            if member.status is MemberState.ONLINE:
                member.remote_applied += 1
            if member.views_queued:  # queued by its applier, ONLINE or at recovery's step 4
                member.views_queued -= 1
                member.queue -= 1

    def _transferred(self, member: SimMember) -> None:
        """State transfer is done: step 4 wakes the applier, which certifies the backlog.

        ``Recovery_module::recovery_thread_handle`` calls ``awake_applier_module``: the
        transactions queued since the join (``handle_joining_members`` suspended the applier)
        go through ``Certification_handler::handle_event`` and ``Certifier::certify`` against
        the donor's certification information, conflicts counted, and the member stays
        RECOVERING while its applier applies them.
        """
        member.transferred = True
        first, total = member.recovering_target + 1, self.log.last
        member.queue = self._remote_positives(member, first, total) if total >= first else 0
        member.certified_upto = total
        member.conflicts_upto = self.conflicts
        member.last_conflict_free = self.last_positive
        member.recovery_applied = member.recovery_applied_mark = member.recovery_delta = 0
        member.online_at = None
        self._wait_for_applier_module_recovery(member)

    def _wait_for_applier_module_recovery(self, member: SimMember) -> None:
        """Turn a RECOVERING member past state transfer ONLINE once its applier caught up.

        ``Recovery_module::wait_for_applier_module_recovery`` (recovery.cc): once what waits
        to be applied is at most what the applier applied in the last flow-control period
        (``get_transactions_waiting_apply_during_recovery`` against
        ``get_delta_transactions_applied_during_recovery``), it waits for the applier
        channel's received set (what it had queued then) to be applied; then step 5,
        ``notify_group_recovery_end``, turns the member ONLINE.
        """
        if member.online_at is None and member.queue <= member.recovery_delta:
            member.online_at = member.certified_upto
        if member.online_at is not None and member.applied_upto >= member.online_at:
            member.status = MemberState.ONLINE
            member.online_at = None
            self._elect()

    # -- periodic work ---------------------------------------------------------------------

    def checked(self, member: SimMember) -> int:
        """COUNT_TRANSACTIONS_CHECKED: every certification since the member joined.

        RECOVERING included, from recovery's step 4 on: current MySQL's
        ``Certifier::update_certified_transaction_count`` counts in MEMBER_IN_RECOVERY too
        (older files counted only while ONLINE); nothing is certified during state transfer.
        """
        return member.certified_upto - member.join_seq

    def conflicts_detected(self, member: SimMember) -> int:
        """COUNT_CONFLICTS_DETECTED: the negative certifications among those it certified.

        ``Certifier::certify`` counts them as it certifies (``get_negative_certified``), in
        any state: a RECOVERING member from recovery's step 4 on, when its woken applier
        certifies the backlog and what follows (``Recovery_module::recovery_thread_handle``);
        nothing during state transfer, when its applier is suspended. The count stays when
        the member stops certifying (cut off, expelled), as CHECKED does.
        """
        return member.conflicts_upto - member.base_conflicts

    def _flow_control_step(self) -> None:
        """Every member's ``Flow_control_module::flow_control_step``, then their messages.

        The quota of each member comes from the messages received since the step before
        (``m_holds_in_period``) and the table of last messages, and is lowered by its own
        overshoot; the broadcast of the step releases the commits waiting in ``do_wait``.
        Then every member in the group sends its stats message: it arrives after the quota
        was computed, and is read from the next step on. Without a majority XCom delivers
        nothing.
        """
        settings = self.scenario.flow_control
        holds = self.stats.step()
        periods = self.stats.held_periods() if holds > 0 else []
        for member in self.members:
            # flow_control_step ends with compute_transactions_deltas_during_recovery (only
            # RECOVERING members apply during recovery), which recovery's step 4 reads
            member.recovery_delta = member.recovery_applied - member.recovery_applied_mark
            member.recovery_applied_mark = member.recovery_applied
            previous = Quota(member.quota, member.quota_used)
            member.quota = next_quota(previous, periods, settings, holds)
            member.quota_used = 0
            member.waiting = [self.tick] * len(member.waiting)
        if not self._has_quorum():
            return
        for member in self.members:
            if member.in_group:
                message = StatsMessage(
                    waiting_certification=self.log.last - member.certified_upto,
                    waiting_apply=member.queue,
                    certified=self.checked(member),
                    applied=member.remote_applied,
                    local=member.local_proposed,
                    recovering=member.status is MemberState.RECOVERING,
                )
                self.stats.receive(member.index, message, settings)

    def _stable_set_round(self) -> Iterator[None]:
        """Complete the stable-set round if every ONLINE member of the view has been heard.

        ``Certifier::handle_certifier_data`` queues one ``gtid_executed`` per ONLINE member
        and ``intersect_members_gtid_executed_and_garbage_collect`` waits until it has
        ``get_number_of_members_online()`` of them, UNREACHABLE members included: while one
        is silent the round stays pending, and so does garbage collection.
        """
        online = [m for m in self.members if m.in_view and m.status is MemberState.ONLINE]
        if not online or not all(m.reachable for m in online):
            return
        self.round_pending = False
        self._advance_stable_set(online)
        yield from self._garbage_collect(min(m.applied_upto for m in online))

    def _garbage_collect(self, stable_seq: int) -> Iterator[None]:
        """Erase the write-sets whose version is a strict subset of the stable set.

        ``Certifier::garbage_collect_internal``. The stable set is taken as every transaction
        up to ``stable_seq`` (applied everywhere): versions of transactions after it are not
        in it, and the version of the last positive one up to it equals it when its origin
        had executed all before it (SNAPSHOT_FULL), so its keys stay. The certification
        database is swept ``GC_PART`` keys at a time, pausing between them.
        """
        self.gc_runs += 1
        if stable_seq <= self.log.base:
            return
        last = stable_seq
        while last > self.log.base and self.log.entry(last) & NEGATIVE:
            last -= 1
        stable_us = self.log.commit_us(stable_seq)
        equal = (
            self.log.commit_us(last) << VERSION_SHIFT | SNAPSHOT_FULL | self.log.entry(last)
            if last > self.log.base
            else -1
        )
        # version >> VERSION_SHIFT > stable_us, exactly: version >= below
        below = (stable_us + 1) << VERSION_SHIFT
        yield from self.certification.sweep(below, equal, GC_PART)

    def group_state(self, member: SimMember) -> str:
        """MEMBER_STATE of ``member`` as the group shows it; OFFLINE or ERROR once it is out."""
        if member.in_view:
            return MemberState.UNREACHABLE if self.suspected(member) else member.status
        if member.server_up and member.status in (MemberState.OFFLINE, MemberState.ERROR):
            return member.status
        return MemberState.OFFLINE

    def _account(self) -> None:
        for member in self.members:
            state = self.group_state(member)
            ticks = self.totals.state_ticks[member.index]
            ticks[state] = ticks.get(state, 0) + 1
            if member.throttled:
                self.totals.throttled_ticks[member.index] += 1
                member.throttled = False
