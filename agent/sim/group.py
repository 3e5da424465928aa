"""The simulated group: a deterministic model of a Group Replication group, stepped in ticks.

The whole group's state is a function of (scenario, seed, group start, tick): every agent
process steps its own copy from the group's start and they all agree on GTIDs and certification
outcomes. One tick is 0.1 s. Each tick:

1. the scenario's events for the tick happen (crash, start, stop, partition, heal, rate, capacity);
2. failure detection: a member nobody hears is suspected after ``suspicion_s`` (UNREACHABLE in the
   others' views) and expelled ``expel_timeout_s`` later (a view change), but only while a
   majority of the view is reachable: without quorum XCom agrees on no new view, so the
   members stay UNREACHABLE; the primary is elected again when it leaves (single-primary: the
   ONLINE member with the lowest uuid);
3. if a majority of the view can talk, the writers commit transactions at their rates, within
   their flow-control quota; each writes ``keys_per_transaction`` keys drawn with Zipf skew;
4. certification in one total order: in multi-primary mode a transaction conflicts when one of
   its keys was certified at a version its snapshot (what its origin had applied) does not
   contain; single-primary mode does not detect conflicts (``conflict_detection_enable`` in the
   ``Certifier`` constructor, certifier.cc). Positive ones get the next GNO of their origin's
   block of the group uuid, negative ones roll back at the origin;
5. every member's applier applies remote transactions in order at its capacity, which gives the
   WL#7374 times; a RECOVERING member catches up to the point it joined, then turns ONLINE and
   certifies what it queued meanwhile;
6. every flow-control period the quota is computed (``Flow_control_module::flow_control_step``);
   every ``gc_period_s`` the stable set round runs and the certification database is
   garbage-collected (``Certifier::handle_certifier_data``, ``Certifier::garbage_collect``).
"""

from __future__ import annotations

import hashlib
import random
import uuid
from dataclasses import dataclass, field
from itertools import accumulate, islice
from typing import TYPE_CHECKING

from grstats.agent.rows import MemberState
from grstats.agent.sim.flow_control import MemberPeriod, Quota, next_quota
from grstats.agent.sim.member import AppliedTransaction, SimMember
from grstats.agent.sim.txlog import NEGATIVE, ORIGIN, TxLog

if TYPE_CHECKING:
    from collections.abc import Iterator

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


def stable_uuid(*parts: object) -> str:
    """Return a version-4 UUID derived from ``parts`` (the same in every process)."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=16).digest()
    return str(uuid.UUID(bytes=digest, version=4))


@dataclass(slots=True)
class GroupTotals:
    """Ground truth that only the simulator knows: time spent per state, throttling, totals."""

    state_ticks: list[dict[str, int]] = field(default_factory=list)
    throttled_ticks: list[int] = field(default_factory=list)
    committed: int = 0
    rolled_back: int = 0


class SimulatedGroup:
    """A Group Replication group of 1-9 members, advanced one tick at a time.

    Build it with the scenario (already sized), a seed and the group's start time (µs since the
    epoch); :meth:`advance_to` steps it to a tick; read members
    through :mod:`grstats.agent.sim.views`.
    """

    def __init__(self, scenario: Scenario, seed: int, start_us: int) -> None:
        self.scenario = scenario
        self.seed = seed
        self.start_us = start_us
        self.tick = 0  #: ticks done: the group's time is start_us + tick * TICK_US
        self.group_name = stable_uuid("group", seed)
        size = scenario.members
        self.members = [
            SimMember(
                index=i,
                uuid=stable_uuid("member", seed, i),
                port=BASE_PORT + i,
                capacity_tps=scenario.capacity_of(i),
                rate_tps=scenario.workload.rate_tps,
                members=size,
            )
            for i in range(size)
        ]
        self.by_uuid_order = sorted(range(size), key=lambda i: self.members[i].uuid)
        # GCS view id: bootstrap time in 100 ns units plus a random 0-999, then a counter
        # that the bootstrap and every join increase (Gcs_xcom_state_exchange::state_exchange,
        # Gcs_xcom_view_identifier::init).
        self.view_fixed = start_us * 10 + random.Random(seed).randrange(1000)  # noqa: S311
        self.view_number = size
        for member in self.members:
            member.view_id = self.view_id
            member.known_members = tuple(range(size))
        self.primary: int | None = 0 if scenario.single_primary else None
        self.log = TxLog(TICK_US)
        self.certification: dict[int, int] = {}  # key -> commit µs << 4 | origin
        self.conflicts = 0
        self.positives_by_origin = [0] * size
        self.blocks: list[list[int]] = [[] for _ in range(size)]
        self.next_block = 0
        self.last_positive: tuple[int, int] | None = None
        self.quota = Quota()
        self.totals = GroupTotals(
            state_ticks=[{} for _ in range(size)],
            throttled_ticks=[0] * size,
        )
        self._events = list(scenario.events)
        self._cumulative_weights = self._key_weights()

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
        self.log.start_tick(tick_start)
        if self._has_quorum():
            self._certify(self._generate())
            yield
        tick_end = tick_start + TICK_US
        for member in self.members:
            self._apply(member, tick_end)
            yield
        self._account()  # the state during this tick, as seen from its start
        self.tick += 1
        if self.tick % (TICKS_PER_SECOND * self.scenario.flow_control.period) == 0:
            self._flow_control_step()
        if self.tick % (TICKS_PER_SECOND * self.scenario.timing.gc_period_s) == 0:
            yield from self._stable_set_round()
        low = min(member.applied_upto for member in self.members)
        self.log.trim(low)

    # -- events and membership -----------------------------------------------------------

    def _run_events(self, seconds: float) -> None:
        end = seconds + 1 / TICKS_PER_SECOND
        while self._events and self._events[0].at < end:
            self._happen(self._events.pop(0), seconds)

    def _happen(self, event: Event, seconds: float) -> None:  # noqa: C901  (one branch per action)
        member = self.members[event.member]
        if event.action == "crash" and member.server_up:
            member.server_up = False
            member.down_since_us = self.now_us
            member.rows_validating_when_down = len(self.certification)
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
            member.unreachable_since = seconds
        elif event.action == "heal" and member.partitioned:
            member.partitioned = False
            if member.in_view:
                member.unreachable_since = None
            else:  # expelled meanwhile: it finds out, errs, and rejoins after a while
                member.status = MemberState.ERROR
                member.rejoin_at = seconds + self.scenario.timing.autorejoin_delay_s
        elif event.action == "rate":
            member.rate_tps = event.value
        elif event.action == "capacity":
            member.capacity_tps = event.value

    def _detect_failures(self, seconds: float) -> None:
        timing = self.scenario.timing
        for member in self.members:
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

    def suspected(self, member: SimMember) -> bool:
        """Whether the group suspects ``member`` (UNREACHABLE in the others' views)."""
        since = member.unreachable_since
        seconds = self.tick / TICKS_PER_SECOND
        return (
            since is not None
            and member.in_view
            and seconds - since >= self.scenario.timing.suspicion_s
        )

    def _view_change(self) -> None:
        self.view_number += 1
        view = tuple(m.index for m in self.members if m.in_view)
        for member in self.members:
            if member.in_view and member.reachable:
                member.view_id = self.view_id
                member.known_members = view
        in_group = [m for m in self.members if m.in_group]
        if in_group:  # the executed sets exchanged in the view change advance the stable set
            meet = [min(m.applied_by_origin[o] for m in in_group) for o in range(len(self.members))]
            for member in in_group:
                member.stable_by_origin = list(map(max, member.stable_by_origin, meet))
        self._elect()

    def _leave(self, member: SimMember, expelled: bool = False) -> None:
        member.in_view = False
        if not expelled or not member.server_up:
            member.unreachable_since = None
        self._view_change()

    def _join(self, member: SimMember) -> None:
        """START GROUP_REPLICATION: join, recover what was missed, counters from 0.

        MySQL builds a new ``Certifier`` and ``Pipeline_stats_member_collector`` at each START.
        """
        member.in_view = True
        member.partitioned = False
        member.unreachable_since = None
        member.status = MemberState.RECOVERING
        member.join_seq = self.log.last
        member.recovering_target = self.log.last
        member.certified_upto = self.log.last
        member.base_conflicts = self.conflicts
        member.local_proposed = member.local_rollback = member.remote_applied = 0
        member.queue = 0
        member.period_checked = member.period_applied = member.period_local = 0
        member.stable_by_origin = [0] * len(self.members)
        member.rejoin_at = None
        member.down_since_us = None
        member.write_carry = 0.0
        member.quota_used = 0
        member.last_conflict_free = None
        member.last_applied = member.last_queued = None
        self._view_change()

    def _elect(self) -> None:
        """Single-primary: when the primary is gone, the ONLINE member with the lowest uuid."""
        if not self.scenario.single_primary:
            return
        current = self.members[self.primary] if self.primary is not None else None
        if current is not None and current.online:
            return
        candidates = [i for i in self.by_uuid_order if self.members[i].online]
        self.primary = candidates[0] if candidates else None

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

    def _generate(self) -> list[int]:
        """Return the origins of this tick's transactions, in total order.

        Each writer's commits are spread evenly over the tick and the writers' commits are
        merged by time, so that the total order interleaves them as real clients would.
        """
        timed: list[tuple[float, int]] = []
        for writer in self.writers():
            wanted = writer.rate_tps / TICKS_PER_SECOND + writer.write_carry
            count = int(wanted)
            writer.write_carry = wanted - count
            if self.quota.size > 0:
                allowed = max(0, self.quota.size - writer.quota_used)
                if count > allowed:
                    writer.throttled = True
                    count = allowed
            writer.quota_used += count
            timed += [((k + 1) / (count + 1), writer.index) for k in range(count)]
        return [origin for _, origin in sorted(timed)]

    def _key_weights(self) -> list[float] | None:
        workload = self.scenario.workload
        if workload.skew == 0:
            return None
        return list(
            accumulate(1 / (rank**workload.skew) for rank in range(1, workload.key_space + 1))
        )

    def _certify(self, origins: list[int]) -> None:
        if not origins:
            return
        workload = self.scenario.workload
        rng = random.Random(self.seed * 1_000_003 + self.tick)  # noqa: S311  (a simulation)
        keys_of = range(workload.key_space)
        detect = not self.scenario.single_primary
        running_us = int(workload.transaction_ms * 1000)
        windows = [running_us + self._visibility_us(m) for m in self.members]
        tick_start = self.now_us
        spacing = TICK_US / (len(origins) + 1)
        certification = self.certification
        last_remote: dict[int, tuple[int, int]] = {}  # origin -> (seq, rank) of its last positive
        for position, origin in enumerate(origins):
            keys = rng.choices(
                keys_of, cum_weights=self._cumulative_weights, k=workload.keys_per_transaction
            )
            committed = tick_start + int((position + 1) * spacing)
            # The snapshot was taken when the transaction started and holds what the origin had
            # applied by then: a version committed later, or not yet delivered and applied at
            # the origin, is not in it.
            horizon = committed - windows[origin]
            conflict = False
            if detect:
                for key in keys:
                    version = certification.get(key)
                    if (
                        version is not None
                        and version >> 4 > horizon
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
            stamp = committed << 4 | origin
            for key in keys:
                certification[key] = stamp
            rank = self._next_gno_rank(origin)
            member.applied_by_origin[origin] += 1  # the origin commits its own at once
            self.last_positive = (origin, rank)
            last_remote[origin] = (seq, rank)
            self.totals.committed += 1
        self._deliver(last_remote, len(origins))

    def _deliver(self, last_remote: dict[int, tuple[int, int]], count: int) -> None:
        """ONLINE members certify this tick's ``count`` transactions and queue the remote ones."""
        total = self.log.last
        first = total - count + 1
        for member in self.members:
            if not member.online:
                continue
            # A member back from a short partition (healed before its expulsion) gets what it
            # missed too: XCom delivers the backlog when the link is back.
            missed_from = min(first, member.certified_upto + 1)
            member.certified_upto = total
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
        if (rank - 1) % self.scenario.timing.block_size == 0:
            self.blocks[origin].append(self.next_block * self.scenario.timing.block_size + 1)
            self.next_block += 1
        return rank

    def gno(self, origin: int, rank: int) -> int:
        """Return the GNO of ``origin``'s ``rank``-th positively certified transaction."""
        size = self.scenario.timing.block_size
        return self.blocks[origin][(rank - 1) // size] + (rank - 1) % size

    def _apply(self, member: SimMember, tick_end: int) -> None:
        """Advance ``member``'s applier (or recovery) until the end of the tick."""
        if not member.in_group and not (member.partitioned and member.in_view):
            return
        recovering = member.status is MemberState.RECOVERING
        limit = member.recovering_target if recovering else member.certified_upto
        applied = member.applied_upto
        if applied >= limit or member.capacity_tps <= 0:
            return
        service = int(1_000_000 / member.capacity_tps)
        clock = max(member.applier_clock_us, tick_end - TICK_US)
        log = self.log
        own = member.index
        by_origin = member.applied_by_origin
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
            begin = max(clock, start_us + (seq - first + 1) * TICK_US // (count + 1) + DELIVERY_US)
            if begin + service > tick_end:
                break
            applied = seq
            clock = begin + service
            by_origin[entry] += 1
            done += 1
            last = (entry, seq, begin, clock)
        if not recovering and last is not None:
            member.remote_applied += done
            member.queue -= done
            entry, seq, begin, end = last
            member.last_applied = AppliedTransaction(entry, by_origin[entry], seq, begin, end)
        member.applied_upto = applied
        member.applier_clock_us = clock
        if recovering and applied >= member.recovering_target:
            self._recovered(member)

    def _recovered(self, member: SimMember) -> None:
        """Distributed recovery is done: ONLINE, and certify what was queued meanwhile."""
        member.status = MemberState.ONLINE
        first, total = member.recovering_target + 1, self.log.last
        if total >= first:
            member.queue = self._remote_positives(member, first, total)
        member.certified_upto = total
        member.last_conflict_free = self.last_positive
        self._elect()

    # -- periodic work ---------------------------------------------------------------------

    def checked(self, member: SimMember) -> int:
        """COUNT_TRANSACTIONS_CHECKED: every certification since the member joined."""
        return member.certified_upto - member.join_seq

    def conflicts_detected(self, member: SimMember) -> int:
        """COUNT_CONFLICTS_DETECTED: negative certifications since the member joined."""
        return self.conflicts - member.base_conflicts if member.status is MemberState.ONLINE else 0

    def _flow_control_step(self) -> None:
        periods = []
        for member in self.members:
            if not member.in_group:
                continue
            checked = self.checked(member)
            periods.append(
                MemberPeriod(
                    waiting_certification=self.log.last - member.certified_upto,
                    waiting_apply=member.queue,
                    delta_certified=checked - member.period_checked,
                    delta_applied=member.remote_applied - member.period_applied,
                    delta_local=member.local_proposed - member.period_local,
                    recovering=member.status is MemberState.RECOVERING,
                )
            )
            member.period_checked = checked
            member.period_applied = member.remote_applied
            member.period_local = member.local_proposed
        used = max((m.quota_used for m in self.members), default=0)
        self.quota = Quota(
            next_quota(Quota(self.quota.size, used), periods, self.scenario.flow_control), 0
        )
        for member in self.members:
            member.quota_used = 0

    def _stable_set_round(self) -> Iterator[None]:
        """The stable-set round: intersect ONLINE members' executed sets, GC.

        As ``Certifier::handle_certifier_data`` and ``Certifier::garbage_collect`` do. The
        certification database is swept ``GC_PART`` keys at a time, pausing between them.
        """
        online = [m for m in self.members if m.online]
        if not online:
            return
        meet = [min(m.applied_by_origin[o] for m in online) for o in range(len(self.members))]
        for member in self.members:
            if member.in_group:
                member.stable_by_origin = list(map(max, member.stable_by_origin, meet))
        stable_seq = min(m.applied_upto for m in online)
        if stable_seq > self.log.base:  # versions are commit times: drop what all have applied
            stable_us = self.log.commit_us(stable_seq)
            items = iter(self.certification.items())
            kept: dict[int, int] = {}
            while part := list(islice(items, GC_PART)):
                kept.update((key, version) for key, version in part if version >> 4 > stable_us)
                yield
            self.certification = kept

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
