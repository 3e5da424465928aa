"""``EventLog``: the agent's own member's events, recorded in the gossip state as one value.

The agent's period hands it what changed (:mod:`grstats.core.events` finds it): the events
between two reads of the member, its source failing and recovering, flow control beginning
and ceasing to hold its writers back, and other members' agents turning silent and heard
again (:mod:`grstats.agent.liveness`). The member's list, bounded by age and count
(:func:`~grstats.core.events.kept`), is its EVENTS value: it travels to every agent like the
member's other values, and the registry keeps every member's list across restarts.

An event that only repeats the last of its kind for the same member (a silence already
reported, say by this agent's previous run) is not added again. Called on the agent's event
loop only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grstats.agent.gossip import Events, Key
from grstats.core.events import OPPOSITES, kept
from grstats.core.rows import EventType

if TYPE_CHECKING:
    from collections.abc import Sequence

    from grstats.agent.gossip import GossipState
    from grstats.core.clock import Clock
    from grstats.core.rows import EventRow


class EventLog:
    """Adds the agent's own member's events to its EVENTS value (see the module)."""

    def __init__(self, state: GossipState, *, clock: Clock) -> None:
        self._state = state
        self._clock = clock

    def held(self) -> tuple[EventRow, ...]:
        """The member's events as the state holds them (those of earlier runs too)."""
        heard = self._state.value(self._state.local_id, Key.EVENTS)
        if heard is None or not isinstance(heard.update.value, Events):
            return ()
        return heard.update.value.events

    def add(self, events: Sequence[EventRow]) -> None:
        """Add ``events`` of the agent's member, and record the list if it changed."""
        if not self._state.local_id:
            return
        current = self.held()
        fresh = [e for e in events if not _repeats(e, current)]
        if not fresh:
            return
        now = self._clock()
        self._state.record_local(Key.EVENTS, Events(kept((*current, *fresh), now)), now)


def _repeats(event: EventRow, held: Sequence[EventRow]) -> bool:
    """Whether ``event`` says again what the last event of its pair for its member said."""
    pair = OPPOSITES.get(EventType(event.event_type)) if event.event_type in OPPOSITES else None
    if pair is None:
        return False
    for earlier in reversed(held):
        if earlier.member_id == event.member_id and earlier.event_type in (event.event_type, pair):
            return earlier.event_type == event.event_type
    return False


class EventCounts:
    """Counts the primary elections and state changes in every member's events, once each.

    The agent calls :meth:`update` once a period. Only events that happened after the agent
    started count (on their reporter's clock): the history an agent learns at start, from
    its registry or its peers, does not, so a restart never looks like a burst of failovers.
    A member's state change counts as the member itself reported it, and UNREACHABLE (which
    a member cannot see of itself) as this agent's own member saw it.
    """

    def __init__(self, state: GossipState, started_us: int) -> None:
        self._state = state
        self._started_us = started_us
        self._seen: set[tuple[int, str, str, str, str]] = set()
        self._changes = -1

    def update(self) -> tuple[int, list[tuple[str, str]]]:
        """The primary elections and (member, new state) changes not counted before."""
        if self._state.changes == self._changes:
            return 0, []
        self._changes = self._state.changes
        current: set[tuple[int, str, str, str, str]] = set()
        primaries, states = 0, []
        for origin in self._state.origins.values():
            heard = origin.values.get(Key.EVENTS)
            if heard is None or not isinstance(heard.update.value, Events):
                continue
            for event in heard.update.value.events:
                key = (
                    event.event_time,
                    event.member_id,
                    event.event_type,
                    event.reported_by,
                    event.new_value,
                )
                current.add(key)
                if key in self._seen or event.event_time < self._started_us:
                    continue
                if event.event_type == EventType.MEMBER_ROLE and event.new_value == "PRIMARY":
                    primaries += 1
                elif event.event_type == EventType.MEMBER_STATE and _counted_state(
                    event, self._state.local_id
                ):
                    states.append((event.member_id, event.new_value))
        self._seen = current
        return primaries, states


def _counted_state(event: EventRow, local_id: str) -> bool:
    """Whether a MEMBER_STATE event counts: its member's own, or UNREACHABLE as ours saw it."""
    if event.reported_by == event.member_id:
        return True
    unreachable = "UNREACHABLE" in (event.old_value, event.new_value)
    return unreachable and event.reported_by == local_id
