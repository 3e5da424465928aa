"""How long until a member is back: transactions left, the apply rate and ``eta_s`` (issue 48).

MySQL says nothing of a member's progress through distributed recovery or through its
applier's backlog (``performance_schema.clone_progress`` covers a clone only). grstats counts
it from what the agents already read and gossip:

* **transactions left**. An ONLINE member's: what its applier and certifier queues hold
  (COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE plus COUNT_TRANSACTIONS_IN_QUEUE of its stats
  row), known of every member each period. A RECOVERING member's, known to its own agent
  only (it alone reads the member's ``gtid_executed`` each period; the others get it once a
  minute): what the group has committed minus what the member executed. The group's
  committed count is an ONLINE member's last sampled ``gtid_executed`` (sampled on the same
  marks of the wall clock by every agent), plus what waited in its applier queue then, plus
  the transactions it certified positively since (COUNT_TRANSACTIONS_CHECKED less
  COUNT_CONFLICTS_DETECTED: every member certifies every transaction of the group,
  ``Certifier::certify`` in plugin/group_replication/src/certifier.cc), the largest over the
  ONLINE members; never less than what the member's applier channel holds
  (TRANSACTIONS_BEHIND) nor than the sampled GTIDs it lacks. NULL for any other member.
* **the apply rate**: transactions applied per second over the last minute
  (:data:`WINDOW_US`): the growth of the member's ``gtid_executed`` while it recovers, of its
  COUNT_TRANSACTIONS_REMOTE_APPLIED while ONLINE.
* **eta_s**: the transactions left over the rate they fell at since their peak of the last
  minute (the apply rate less what the group adds meanwhile). 0 when nothing is left, NULL
  while they do not fall (a backlog that grows, or a single sample).

:data:`STATED_ERROR` is the error promised: recovery ends within ``max(2 s, 25 %)`` of the ETA
(tests/agent/test_recovery_sim.py holds the simulator to it: in crash-rejoin every ETA is
within 0.12 s; a recovery of half a minute ends a period early, as MySQL turns a member ONLINE
once what is left fits in what it applied in the last flow-control period,
``Recovery_module::wait_for_applier_module_recovery`` in plugin/group_replication/src/
recovery.cc). Pure, but for the history :class:`RecoveryWatch` keeps: the agent feeds it once
a period (:meth:`RecoveryWatch.observe`) and the status reads it
(:meth:`RecoveryWatch.progress`). Samples are on each member's own clock, so no offset enters
a rate; the offsets only count the ETA from now rather than from the member's last sample.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grstats.agent.gossip import Counts, Key
from grstats.agent.known import executed_of, served_view
from grstats.agent.status import Progress
from grstats.core.gtid import GtidSet

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from grstats.agent.gossip import GossipState
    from grstats.core.model import MemberSnapshot
    from grstats.core.rows import MemberStatsRow

#: The span of the apply rate and of the fall of the transactions left: the last minute.
WINDOW_US = 60_000_000
#: How far back each member's counts are kept: a ``gtid_executed`` sample is up to 60 s old
#: (``executed_interval_s``) when it arrives, and the counts of its instant are looked up.
COUNTS_SPAN_US = 150_000_000
#: The error promised for ``eta_s``: the larger of this many seconds and this share of it.
STATED_ERROR = (2.0, 0.25)
#: The states whose progress is counted.
COUNTED_STATES = ("ONLINE", "RECOVERING")


@dataclass(frozen=True, slots=True)
class Sample:
    """One member's figures at ``at_us`` (its clock): transactions left and applied so far."""

    at_us: int
    left: int
    applied: int


def window(samples: Sequence[Sample]) -> list[Sample]:
    """The samples of the last minute before the newest one, oldest first."""
    if not samples:
        return []
    newest = samples[-1].at_us
    return [found for found in samples if newest - found.at_us <= WINDOW_US]


def apply_rate(samples: Sequence[Sample]) -> float | None:
    """Transactions applied per second over the last minute; None with less than two samples."""
    recent = window(samples)
    if len(recent) < 2:
        return None
    first, last = recent[0], recent[-1]
    span_s = (last.at_us - first.at_us) / 1_000_000
    if span_s <= 0 or last.applied < first.applied:
        return None
    return (last.applied - first.applied) / span_s


def eta_s(samples: Sequence[Sample]) -> float | None:
    """Seconds until nothing is left, at the rate the left fell since their peak of the minute.

    0 when the newest sample has nothing left; None while they do not fall.
    """
    recent = window(samples)
    if not recent:
        return None
    last = recent[-1]
    if last.left == 0:
        return 0.0
    peak = max(reversed(recent), key=lambda found: found.left)  # the latest of the highest
    span_s = (last.at_us - peak.at_us) / 1_000_000
    if span_s <= 0 or peak.left <= last.left:
        return None
    return last.left / ((peak.left - last.left) / span_s)


def progress(samples: Sequence[Sample], age_us: int = 0) -> Progress | None:
    """The newest sample's left, with the apply rate and the ETA (None without samples).

    ``age_us`` is how old the newest sample is now: the ETA counts from now, not from it.
    """
    if not samples:
        return None
    rate, eta = apply_rate(samples), eta_s(samples)
    if eta is not None:
        eta = max(0.0, eta - max(0, age_us) / 1_000_000)
    return Progress(
        samples[-1].left,
        None if rate is None else round(rate, 3),
        None if eta is None else round(eta, 3),
    )


def within_stated_error(eta: float, actual: float) -> bool:
    """Whether ``actual`` seconds left is within :data:`STATED_ERROR` of an ETA of ``eta``."""
    seconds, share = STATED_ERROR
    return abs(actual - eta) <= max(seconds, share * eta)


@dataclass(frozen=True, slots=True)
class Counted:
    """A member's counts at ``at_us``: positively certified, waiting to apply, applied."""

    at_us: int
    certified: int
    queued: int
    applied: int


def counted(at_us: int, row: MemberStatsRow) -> Counted:
    """The figures of one stats row (see the module docstring)."""
    return Counted(
        at_us,
        row.count_transactions_checked - row.count_conflicts_detected,
        row.count_transactions_remote_in_applier_queue,
        row.count_transactions_remote_applied,
    )


def certified_at(history: Sequence[Counted], at_us: int) -> tuple[float, int] | None:
    """The positive certifications at ``at_us`` (interpolated) and the queue then; None if unknown.

    Before the oldest counts kept, extrapolated at the rate of those kept.
    """
    if not history:
        return None
    if at_us >= history[-1].at_us:
        return float(history[-1].certified), history[-1].queued
    first = history[0]
    if at_us < first.at_us:
        last = history[-1]
        if last.at_us <= first.at_us:
            return None
        per_us = (last.certified - first.certified) / (last.at_us - first.at_us)
        return first.certified - per_us * (first.at_us - at_us), first.queued
    for before, after in zip(history, list(history)[1:], strict=False):
        if before.at_us <= at_us <= after.at_us:
            share = (at_us - before.at_us) / max(1, after.at_us - before.at_us)
            return before.certified + share * (after.certified - before.certified), before.queued
    return None  # pragma: no cover  (the history is in time order)


def committed_now(executed: GtidSet, sampled_at_us: int, history: Sequence[Counted]) -> int | None:
    """How many transactions the group has committed, from an ONLINE member's sample and counts.

    Its sampled ``gtid_executed`` (at ``sampled_at_us``, its clock), what waited in its applier
    queue then and what it certified positively since; None when its counts do not say.
    """
    then = certified_at(history, sampled_at_us)
    if then is None or not history:
        return None
    certified, queued = then
    since = max(0.0, history[-1].certified - certified)
    return executed.count() + queued + round(since)


def recovering_left(
    executed: GtidSet,
    behind: int | None,
    stats: MemberStatsRow,
    samples: Mapping[str, tuple[GtidSet, int]],
    histories: Mapping[str, Sequence[Counted]],
) -> int:
    """A RECOVERING member's transactions left (module docstring), its own ``gtid_executed`` read.

    ``samples`` are the ONLINE members' sampled sets and times, ``histories`` their counts.
    """
    group = []
    for member, (found, at_us) in samples.items():
        estimate = committed_now(found, at_us, histories.get(member, ()))
        if estimate is not None:
            group.append(estimate)
    sampled = GtidSet.union_of(found for found, _ in samples.values()) if samples else GtidSet()
    floors = (
        (sampled - executed).count(),
        behind or 0,
        stats.count_transactions_remote_in_applier_queue + stats.count_transactions_in_queue,
    )
    return max(max(group, default=0) - executed.count(), *floors)


def online_left(row: MemberStatsRow) -> int:
    """An ONLINE member's transactions left: its applier and certifier queues."""
    return row.count_transactions_remote_in_applier_queue + row.count_transactions_in_queue


class RecoveryWatch:
    """Each member's samples of the last minute, and its counts for the recovering one's group.

    The agent calls :meth:`observe` once a period, after its read, and the status reads
    :meth:`progress`; both on the agent's event loop.
    """

    def __init__(self) -> None:
        self._samples: dict[str, deque[Sample]] = {}
        self._states: dict[str, str] = {}
        self._counts: dict[str, deque[Counted]] = {}
        self._progress: dict[str, Progress] = {}

    def observe(
        self,
        state: GossipState,
        local: MemberSnapshot | None,
        now_us: int,
        offsets: Mapping[str, int],
    ) -> None:
        """Take this period's figures of every member of the served view, at ``now_us``.

        ``offsets`` are the members' clocks minus the agent's: an ETA counts from now.
        """
        view, _ = served_view(state, local)
        states = {row.member_id: row.member_state for row in view.members if row.member_id}
        if local is not None and (own := local.own_row()) is not None:
            states[local.member_id] = own.member_state
        for member in states:
            self._keep_counts(state, local, member)
        for member, member_state in states.items():
            sample = self._sample(state, local, member, member_state, states)
            self._add(member, member_state, sample)
        for member in set(self._samples) - set(states):
            self._forget(member)
        self._progress = {}
        for member, kept in self._samples.items():
            age_us = now_us + offsets.get(member, 0) - kept[-1].at_us if kept else 0
            found = progress(kept, age_us)
            if found is not None:
                self._progress[member] = found

    def progress(self) -> dict[str, Progress]:
        """Each member's progress as of the last :meth:`observe` (members with none absent)."""
        return dict(self._progress)

    def _keep_counts(self, state: GossipState, local: MemberSnapshot | None, member: str) -> None:
        at_row = _stats(state, local, member)
        if at_row is None:
            return
        kept = self._counts.setdefault(member, deque())
        found = counted(*at_row)
        if kept and (found.at_us <= kept[-1].at_us or found.certified < kept[-1].certified):
            if found.at_us <= kept[-1].at_us:
                return
            kept.clear()  # its counters started again (a new START GROUP_REPLICATION)
        kept.append(found)
        while kept and found.at_us - kept[0].at_us > COUNTS_SPAN_US:
            kept.popleft()

    def _sample(
        self,
        state: GossipState,
        local: MemberSnapshot | None,
        member: str,
        member_state: str,
        states: Mapping[str, str],
    ) -> Sample | None:
        """The member's sample this period, None when its progress is not known here."""
        at_row = _stats(state, local, member)
        if member_state not in COUNTED_STATES or at_row is None:
            return None
        at_us, row = at_row
        if member_state == "ONLINE":
            return Sample(at_us, online_left(row), row.count_transactions_remote_applied)
        if local is None or member != local.member_id:
            return None  # its own agent alone reads its gtid_executed each period
        online = [m for m, found in states.items() if found == "ONLINE" and m != member]
        left = recovering_left(
            local.gtid_executed,
            local.transactions_behind,
            row,
            _sampled(state, online),
            {m: self._counts.get(m, deque()) for m in online},
        )
        return Sample(at_us, left, local.gtid_executed.count())

    def _add(self, member: str, member_state: str, sample: Sample | None) -> None:
        if sample is None or self._states.get(member) != member_state:
            self._forget(member)
        if sample is None:
            return
        self._states[member] = member_state
        kept = self._samples.setdefault(member, deque())
        if kept and sample.at_us <= kept[-1].at_us:
            return  # no newer figures this period
        kept.append(sample)
        while kept and sample.at_us - kept[0].at_us > WINDOW_US:
            kept.popleft()

    def _forget(self, member: str) -> None:
        self._samples.pop(member, None)
        self._states.pop(member, None)


def _stats(
    state: GossipState, local: MemberSnapshot | None, member: str
) -> tuple[int, MemberStatsRow] | None:
    """The member's last stats row and when it was read (its clock), None if never heard."""
    if local is not None and member == local.member_id:
        return local.read_at_us, local.stats
    heard = state.value(member, Key.COUNTS)
    if heard is None or not isinstance(heard.update.value, Counts):
        return None
    return heard.update.sent_at_us, heard.update.value.row


def _sampled(state: GossipState, members: Iterable[str]) -> dict[str, tuple[GtidSet, int]]:
    """The members' last sampled ``gtid_executed`` and its time, those ever received."""
    found = {}
    for member in members:
        executed, sent_us = executed_of(state, member)
        if sent_us:
            found[member] = (executed, sent_us)
    return found
