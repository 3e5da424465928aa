"""A stalled stable set: when TRANSACTIONS_COMMITTED_ALL_MEMBERS stops while the group certifies.

Group Replication garbage-collects its certification info up to the *stable set*, the GTIDs
every member has executed (``TRANSACTIONS_COMMITTED_ALL_MEMBERS``). Each member broadcasts its
``gtid_executed`` every ``BROADCAST_GTID_EXECUTED_PERIOD`` (60) seconds
(``Certifier_broadcast_thread::dispatcher`` in plugin/group_replication/src/certifier.cc,
the period in certifier.h), and the certifier computes the intersection once it has every
member's set (``Certifier::handle_certifier_data``). While one member of the view stays
UNREACHABLE (no set comes from it) or its applier stalls (its set stops), the stable set does
not advance and the certification info (COUNT_TRANSACTIONS_ROWS_VALIDATING) grows with every
transaction certified: memory that is freed only once that member catches up or leaves.

:class:`StableSetWatch` remembers, from its member's stats rows, when the stable set last
changed and how the rows grew since. Pure: the agent feeds it each read
(:meth:`~StableSetWatch.observe`), and the status asks it (:meth:`~StableSetWatch.stall`). It
calls the stable set stalled once it has not advanced for two broadcast rounds
(:data:`STALLED_AFTER_US`) while the member certified transactions (COUNT_TRANSACTIONS_CHECKED
grew): an idle group's stable set has nothing to advance to. Who holds it back is the
status's to say (:mod:`grstats.agent.status`): it knows the view and the members' sets.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grstats.core.rows import MemberStatsRow

#: Seconds between two broadcasts of the members' gtid_executed (BROADCAST_GTID_EXECUTED_PERIOD,
#: plugin/group_replication/include/certifier.h).
BROADCAST_PERIOD_S = 60
#: How long the stable set may stay unchanged while transactions are certified: two rounds.
STALLED_AFTER_US = 2 * BROADCAST_PERIOD_S * 1_000_000
#: The span over which ROWS_VALIDATING's growth is measured (the rate is per minute).
GROWTH_SPAN_US = 60_000_000


@dataclass(frozen=True, slots=True)
class Stall:
    """The stable set has not advanced for ``for_us`` while ``certified`` were certified."""

    for_us: int
    certified: int
    #: ROWS_VALIDATING's growth per minute over the last minute, None before a minute of reads.
    rows_per_minute: int | None


class StableSetWatch:
    """When the member's stable set last changed, and ROWS_VALIDATING over the last minute.

    The agent calls :meth:`observe` with each new read of its member (once a period) and
    :meth:`stall` when it builds the status; both on the agent's event loop.
    """

    def __init__(self) -> None:
        self._committed: str | None = None
        self._changed_at_us = 0
        self._checked_at_change = 0
        self._checked = 0
        self._rows: deque[tuple[int, int]] = deque()

    def observe(self, read_at_us: int, row: MemberStatsRow, *, online: bool) -> None:
        """Take one read of the member's stats row, read at ``read_at_us``.

        Only an ONLINE member's certifier keeps the group's stable set (a RECOVERING one shows
        none: "stable set may not be accurate during recovery"); any other read starts over.
        """
        if not online or not row.transactions_committed_all_members:
            self._committed = None
            self._rows.clear()
            return
        if self._rows and read_at_us <= self._rows[-1][0]:
            return  # the same read again
        if row.transactions_committed_all_members != self._committed:
            self._committed = row.transactions_committed_all_members
            self._changed_at_us = read_at_us
            self._checked_at_change = row.count_transactions_checked
        self._checked = row.count_transactions_checked
        self._rows.append((read_at_us, row.count_transactions_rows_validating))
        while len(self._rows) > 1 and self._rows[1][0] <= read_at_us - GROWTH_SPAN_US:
            self._rows.popleft()

    def stall(self, now_us: int) -> Stall | None:
        """The stall at ``now_us``, None while the stable set advances (or nothing is known)."""
        if self._committed is None:
            return None
        unchanged_us = now_us - self._changed_at_us
        certified = self._checked - self._checked_at_change
        if unchanged_us < STALLED_AFTER_US or certified <= 0:
            return None
        (first_us, first_rows), (last_us, last_rows) = self._rows[0], self._rows[-1]
        span_us = last_us - first_us
        rate = (
            round((last_rows - first_rows) * 60_000_000 / span_us)
            if span_us >= GROWTH_SPAN_US - 5_000_000
            else None
        )
        return Stall(for_us=unchanged_us, certified=certified, rows_per_minute=rate)
