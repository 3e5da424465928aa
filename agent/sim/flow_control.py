"""Group Replication's flow control in QUOTA mode, one step per period (pipeline_stats.cc).

A pure function of the previous quota and what every member reported in the period, so that
every member computes the same quota, as GR's members do from the same stats messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from grstats.agent.model import FlowControlSettings

#: INT_MAX32, the quota ceiling of the release phase.
MAXTPS = 2_147_483_647


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


def needs_flow_control(member: MemberPeriod, settings: FlowControlSettings) -> bool:
    """Return whether ``member`` is over a threshold (``is_flow_control_needed``)."""
    return settings.mode == "QUOTA" and (
        member.waiting_certification > settings.certifier_threshold
        or member.waiting_apply > settings.applier_threshold
    )


def next_quota(
    previous: Quota, members: Sequence[MemberPeriod], settings: FlowControlSettings
) -> int:
    """Return the next period's quota, as ``Flow_control_module::flow_control_step`` computes it."""
    if settings.mode != "QUOTA":
        return 0
    hold = 1 - settings.hold_percent / 100
    release = 1 + settings.release_percent / 100
    extra = previous.used - previous.size if 0 < previous.size < previous.used else 0
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
    lim_throttle = 0.05 * min(cert_threshold, apply_threshold)
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
