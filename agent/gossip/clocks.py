"""Every member's clock, as one agent knows it: composed from its own and relayed estimates.

Pure: no I/O, no clock. An agent estimates the offset of each peer it exchanges with (NTP's
formula on the exchange's four times, right within half the round trip) and shares those
estimates on its counts (:class:`~grstats.agent.gossip.updates.ClockOffset`). A member heard
only through relays is then known through a chain of estimates: its offset from us is the sum
of the offsets along the chain, and its error at most the sum of their half round trips
(:func:`compose` takes the chain of least error, so a direct estimate wins a relayed one).

A member's *skew* is its clock minus the median of the known clocks (the local one counted):
with three or more members the median is a clock most agree on, so the member that is off is
named, whichever agent is asked (:func:`skews`), once three clocks are known. Off by more
than :data:`SKEW_WARN_US` is worth a warning. In a group of two the median is halfway: both are
named, as no one can tell which is off.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from grstats.agent.gossip.updates import ClockOffset

#: A member whose clock is off the group's median by more than this (µs) is warned about.
SKEW_WARN_US = 500_000
#: An offset known to within this (µs) is reliable: the times moved by it (LAST_SEEN, AGE_MS,
#: lag) are right to within it. A member whose offset is not (not estimated yet, or only
#: through slow links) has no CLOCK_SKEW_MS: the flag that its times here are unreliable.
RELIABLE_US = 100_000
#: An agent shares its estimates again when one moved by more than this (µs), its error shrank
#: by more than this, or a peer came or went; else only with the GTID columns (every
#: ``gtid_interval_s``).
RESEND_US = 10_000
#: How many of a peer's latest exchanges the clock filter chooses from (RFC 5905 section 10's
#: clock filter keeps 8).
FILTER_SAMPLES = 8


@dataclass(frozen=True, slots=True)
class Estimate:
    """A member's clock minus ours (µs), and the most that figure can be wrong by (µs)."""

    offset_us: int
    error_us: int


def compose(
    local_id: str,
    direct: Iterable[ClockOffset],
    shared: Mapping[str, Iterable[ClockOffset]],
) -> dict[str, Estimate]:
    """Every member's offset reachable through estimates, by the chain of least error.

    ``direct`` are this agent's own estimates, ``shared`` each other origin's (as its counts
    carried them). An estimate ``A -> B`` also gives ``B -> A`` (the opposite offset, the
    same error). The local member is at offset 0.
    """
    edges: dict[str, list[tuple[str, int, int]]] = {}

    def link(source: str, estimates: Iterable[ClockOffset]) -> None:
        for estimate in estimates:
            if estimate.member == source:
                continue
            error = estimate.delay_us // 2 + 1  # + 1: of equal errors, the shorter chain
            edges.setdefault(source, []).append((estimate.member, estimate.offset_us, error))
            edges.setdefault(estimate.member, []).append((source, -estimate.offset_us, error))

    link(local_id, direct)
    for origin, estimates in shared.items():
        if origin != local_id:
            link(origin, estimates)
    found: dict[str, Estimate] = {}
    queue = [(0, local_id, 0)]
    while queue:
        error, member, offset = heapq.heappop(queue)
        if member in found:
            continue
        found[member] = Estimate(offset, error)
        for other, step, step_error in edges.get(member, ()):
            if other not in found:
                heapq.heappush(queue, (error + step_error, other, offset + step))
    del found[local_id]
    return found


def skews(offsets: Mapping[str, int], local_id: str, members: int) -> dict[str, int]:
    """Each member's clock minus the median of the known clocks (the local one at 0), µs.

    Empty while fewer than three clocks are known of a group of ``members`` (two in a group
    of two): the median of two clocks of a bigger group would name a member wrongly.
    """
    clocks = {**offsets, local_id: 0}
    if len(clocks) < min(3, members):
        return {}
    ordered = sorted(clocks.values())
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) // 2
    return {member: offset - median for member, offset in clocks.items()}


def filtered(samples: Sequence[ClockOffset]) -> ClockOffset:
    """The estimate to use of one peer's latest ``samples`` (oldest first, at least one).

    NTP's clock filter (RFC 5905 section 10): the sample of least delay, as its error is the
    least; one slow exchange (a loaded host, a new connection) then does not widen the error.
    Only samples that agree with the newest within both errors count: a clock stepped since
    makes the older ones disagree, and the newest is used at once.
    """
    newest = samples[-1]
    agreeing = [
        sample
        for sample in samples
        if abs(sample.offset_us - newest.offset_us) <= (sample.delay_us + newest.delay_us) // 2
    ]
    return min(reversed(agreeing), key=lambda sample: sample.delay_us)


def moved(before: Iterable[ClockOffset], after: Iterable[ClockOffset]) -> bool:
    """Whether ``after`` is worth sharing: a member came or went, moved or got surer.

    Moved, or its error shrank, by more than :data:`RESEND_US`: a first slow estimate that a
    later exchange betters is then shared at once.
    """
    old = {estimate.member: estimate for estimate in before}
    new = {estimate.member: estimate for estimate in after}
    return old.keys() != new.keys() or any(
        abs(estimate.offset_us - old[member].offset_us) > RESEND_US
        or (old[member].delay_us - estimate.delay_us) // 2 > RESEND_US
        for member, estimate in new.items()
    )
