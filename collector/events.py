"""Which of the group's events the collector has not spooled yet.

Every agent serves every member's events (``replication_group_events``), each member's kept
7 days, at most its newest 500 (:mod:`grstats.core.events`): a whole list is 216 KB for a
group of 9 after a day of hourly failovers (``tests/benchmarks/bench_events.py``). So the
collector asks for the events every
:attr:`grstats.collector.poller.PollerSettings.events_every_s`, only those of the last
:data:`~grstats.collector.poller.EVENTS_LATE_S` by the agent's clock
(``QueryRequest.events_since_us``), and for the whole list every
:data:`~grstats.collector.poller.EVENTS_WHOLE_EVERY_S`, at its first ask and after a failover
(another agent may hold an event the first did not yet); it spools only the rows not taken
before.

Not "only since the last event time seen": EVENT_TIME is on the clock of the member that
reported the event, and an event may reach the agent asked long after it happened (its
reporter's agent cut off from the others, or down, hands it on when it is heard again). The
recent window (by the answering agent's clock, a margin back) takes a late event within the
margin; the whole list takes any later one, within the whole-list interval. An event is its
whole row: every agent serves the same rows (:mod:`grstats.core.rows.events`), so an answer
of the agent failed over to holds the same rows again, and only what it has that the other
had not is new. The members' GR log lines (``replication_group_member_log``) are taken the same
way, by a :class:`NewEvents` of their own: a line too is its whole row, and each answer whole.

What this does not prevent, and ingest deduplicates (``grstats spark ingest``): a collector
restarted spools every event the agent holds once more (at most 500 per member), and an event
absent from a whole answer and back in a later one (a failover to an agent that had not heard
it yet, then back) is spooled twice. Pure: no I/O, no clock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from grstats.collector.records import Cell


class NewEvents:
    """The rows of each events answer not taken from an earlier one.

    The poller asks for the agent's whole list now and then, and in between only for the
    recent events (``QueryRequest.events_since_us``): a whole answer is what the agent still
    keeps, so what it no longer holds is forgotten here too; a recent one only adds. The rows
    held are thus at most the agent's kept events plus those of one whole-list interval.
    """

    def __init__(self) -> None:
        self._columns: tuple[str, ...] = ()
        self._seen: set[tuple[Cell, ...]] = set()

    def take(
        self, columns: Sequence[str], rows: Sequence[Sequence[Cell]], *, whole: bool = True
    ) -> list[list[Cell]]:
        """Return the rows of this answer not taken before, in the answer's order.

        ``whole``: the answer holds every event the agent keeps (not only recent ones).
        ``columns`` are the answer's; an answer of other columns (an agent of another version)
        has every row new.
        """
        current = [tuple(row) for row in rows]
        if tuple(columns) != self._columns:
            self._columns, self._seen = tuple(columns), set()
        new = [list(row) for row in current if row not in self._seen]
        if whole:
            self._seen = set(current)
        else:
            self._seen.update(current)
        return new
