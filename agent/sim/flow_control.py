"""Group Replication's flow control in QUOTA mode, one step per period (pipeline_stats.cc).

:class:`StatsTable` is ``Flow_control_module``'s table of the members' last stats messages
(``m_info``), its step counter (``m_stamp``) and the holds counted as messages arrive
(``m_holds_in_period``); :func:`next_quota` is the quota part of
``Flow_control_module::flow_control_step``, a pure function of a member's previous quota and
that table, so that every member computes the same quota from the same messages, as GR's
members do. A member's own quota differs from the others' only by its overshoot
(``extra_quota``): the commits it let through over its quota, waiting in ``do_wait``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from grstats.core.model import FlowControlSettings

#: INT_MAX32, the quota ceiling of the release phase.
MAXTPS = 2_147_483_647
#: A member's last stats stay in ``m_info`` for this many steps after they arrived: the held
#: quota purges entries with ``stamp < m_stamp - 10`` (``flow_control_step``).
STATS_KEPT_STEPS = 10


@dataclass(frozen=True, slots=True)
class MemberPeriod:
    """What one member's stats message says about the period that ended.

    ``waiting_certification`` and ``waiting_apply`` are the queues (IN_QUEUE and
    REMOTE_IN_APPLIER_QUEUE); the deltas are how much CHECKED, REMOTE_APPLIED and LOCAL_PROPOSED
    grew in the period; ``recovering`` marks a member in distributed recovery.
    """

    waiting_certification: int
    waiting_apply: int
    delta_certified: int
    delta_applied: int
    delta_local: int
    recovering: bool = False


@dataclass(frozen=True, slots=True)
class Quota:
    """The quota of a period: at most ``size`` local commits (0 means unthrottled)."""

    size: int = 0
    used: int = 0


@dataclass(frozen=True, slots=True)
class StatsMessage:
    """The counts one member's stats message carries (``Pipeline_stats_member_message``).

    The queues, and the cumulative CHECKED, REMOTE_APPLIED and LOCAL_PROPOSED counters of the
    member's collector since its START GROUP_REPLICATION.
    """

    waiting_certification: int
    waiting_apply: int
    certified: int
    applied: int
    local: int
    recovering: bool = False


_NOTHING = StatsMessage(0, 0, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class _Entry:
    message: StatsMessage
    period: MemberPeriod
    stamp: int


class StatsTable:
    """The group's ``m_info``, ``m_stamp`` and ``m_holds_in_period`` (pipeline_stats.cc).

    Every member that hears the group receives the same stats messages, so one table stands
    for all of theirs. A message sent at step ``s`` arrives after that step's quota was
    computed and is read by the quotas of steps ``s + 1`` to ``s + 10``: a member that goes
    silent keeps its last stats that long, then the held quota purges them.
    """

    def __init__(self) -> None:
        #: ``m_stamp``: the steps run, counting the one at START GROUP_REPLICATION, whose
        #: message (all counts 0) every member sends before the first period.
        self.stamp = 1
        self._holds = 0
        self._entries: dict[int, _Entry] = {}

    def receive(self, member: int, message: StatsMessage, settings: FlowControlSettings) -> None:
        """Take ``member``'s message in (``Flow_control_module::handle_stats_data``).

        ``Pipeline_member_stats::update_member_stats``: the deltas are the counters minus
        those of the member's last message still in the table (0 for a new entry), so a
        member whose counters restarted reports negative deltas, which the quota ignores.
        A message over a threshold counts one hold for the coming step.
        """
        entry = self._entries.get(member)
        last = entry.message if entry is not None else _NOTHING
        period = MemberPeriod(
            waiting_certification=message.waiting_certification,
            waiting_apply=message.waiting_apply,
            delta_certified=message.certified - last.certified,
            delta_applied=message.applied - last.applied,
            delta_local=message.local - last.local,
            recovering=message.recovering,
        )
        self._entries[member] = _Entry(message, period, self.stamp)
        if needs_flow_control(period, settings):
            self._holds += 1

    def step(self) -> int:
        """Start a ``flow_control_step``: return the period's holds and count the step."""
        holds, self._holds = self._holds, 0
        self.stamp += 1
        return holds

    def held_periods(self) -> list[MemberPeriod]:
        """Purge the entries not updated in the last 10 steps; return the others.

        Run only when the step holds, as ``flow_control_step`` purges only then. In MySQL
        ``m_stamp - 10`` is unsigned and wraps around in the first 10 steps after START GROUP
        REPLICATION, purging every entry; the simulator does not copy that: its members load
        the group from its first second, where real members have run for a while.
        """
        floor = self.stamp - STATS_KEPT_STEPS
        self._entries = {key: e for key, e in self._entries.items() if e.stamp >= floor}
        return [entry.period for entry in self._entries.values()]


def needs_flow_control(member: MemberPeriod, settings: FlowControlSettings) -> bool:
    """Return whether ``member`` is over a threshold (``is_flow_control_needed``)."""
    return settings.mode == "QUOTA" and (
        member.waiting_certification > settings.certifier_threshold
        or member.waiting_apply > settings.applier_threshold
    )


def next_quota(
    previous: Quota,
    members: Sequence[MemberPeriod],
    settings: FlowControlSettings,
    holds: int | None = None,
) -> int:
    """Return the next period's quota, as ``Flow_control_module::flow_control_step`` computes it.

    ``holds`` is ``m_holds_in_period``, the messages over a threshold received in the period;
    by default the members over a threshold. ``previous.used`` over ``previous.size`` is the
    overshoot (``extra_quota``), taken off the held quota.
    """
    if settings.mode != "QUOTA":
        return 0
    hold = 1 - settings.hold_percent / 100
    release = 1 + settings.release_percent / 100
    extra = previous.used - previous.size if 0 < previous.size < previous.used else 0
    if holds is None:
        holds = sum(needs_flow_control(member, settings) for member in members)
    if holds > 0:
        quota = _held_quota(members, settings, hold, extra)
    elif previous.size > 0 and settings.release_percent > 0 and previous.size * release < MAXTPS:
        quota = max(int(previous.size * release), previous.size + 1)
    else:
        quota = 0
    if settings.max_quota > 0:
        quota = min(quota if quota > 0 else settings.max_quota, settings.max_quota)
    return quota


def _held_quota(
    members: Sequence[MemberPeriod], settings: FlowControlSettings, hold: float, extra: int
) -> int:
    """Return the quota while some member is over a threshold (``flow_control_step``, holds > 0).

    Both minimum capacities start at MAXTPS, as in the server, when no member qualifies.
    """
    cert_threshold = settings.certifier_threshold
    apply_threshold = settings.applier_threshold
    min_certifier = min(
        (
            m.delta_certified
            for m in members
            if cert_threshold > 0
            and m.delta_certified > 0
            and m.waiting_certification > cert_threshold
        ),
        default=MAXTPS,
    )
    slow_appliers = [
        m.delta_applied
        for m in members
        if apply_threshold > 0 and m.delta_applied > 0 and m.waiting_apply > apply_threshold
    ]
    min_applier = min(slow_appliers, default=MAXTPS)
    positive = [d for m in members for d in (m.delta_certified, m.delta_applied) if d > 0]
    safe_capacity = min(positive, default=MAXTPS)
    writers = max(1, sum(1 for m in members if m.delta_local > 0))
    min_capacity = min_certifier if 0 < min_certifier < min_applier else min_applier
    # static_cast<int64>: lim_throttle is truncated to an integer
    lim_throttle = int(0.05 * min(cert_threshold, apply_threshold))
    if settings.min_recovery_quota > 0 and not slow_appliers:
        lim_throttle = settings.min_recovery_quota
    if settings.min_quota > 0:
        lim_throttle = settings.min_quota
    capacity = max(min(min_capacity, safe_capacity), lim_throttle)
    quota = int(capacity * hold)
    if settings.max_quota > 0:
        quota = min(quota, settings.max_quota)
    if writers > 1:
        if settings.member_quota_percent == 0:
            quota //= writers
        else:
            quota = int(quota * settings.member_quota_percent / 100)
    return max(1, quota - extra)
