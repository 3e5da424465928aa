"""Which of the group's events the collector has not spooled yet.

Every agent serves every member's events (``replication_group_events``), each member's kept
7 days, at most its newest 500 (:mod:`grstats.agent.events`), so the collector asks for the
whole table now and then (:attr:`grstats.collector.poller.PollerSettings.events_every_s`)
rather than on every poll, and spools only the rows the previous answer did not hold.

Not "only since the last event time seen": EVENT_TIME is on the clock of the member that
reported the event, and an event may reach the agent asked long after it happened (its
reporter's agent cut off from the others, or down, hands it on when it is heard again), so
a time cut would drop it. Comparing with the previous answer's rows spools a late event when
it arrives, whatever its time. An event is its whole row: every agent serves the same rows
(:mod:`grstats.agent.rows.events`), so an answer of the agent failed over to holds the same
rows again, and only what it has that the other had not is new.

What this does not prevent, and ingest deduplicates (``grstats spark ingest``): a collector
restarted spools every event the agent holds once more (at most 500 per member), and an event
absent from one answer and back in the next (a failover to an agent that had not heard it
yet, then back) is spooled twice. Pure: no I/O, no clock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from grstats.collector.records import Cell


class NewEvents:
    """The rows of each events answer that the answer before it did not hold."""

    def __init__(self) -> None:
        self._columns: tuple[str, ...] = ()
        self._seen: frozenset[tuple[Cell, ...]] = frozenset()

    def take(self, columns: Sequence[str], rows: Sequence[Sequence[Cell]]) -> list[list[Cell]]:
        """Return the rows of this answer not in the previous one, in the answer's order.

        ``columns`` are the answer's; an answer of other columns (an agent of another version)
        has every row new.
        """
        current = [tuple(row) for row in rows]
        previous = self._seen if tuple(columns) == self._columns else frozenset()
        self._columns, self._seen = tuple(columns), frozenset(current)
        return [list(row) for row in current if row not in previous]
