"""``MemberLog``: the agent's own member's Group Replication log lines, as one gossip value.

The agent's period hands it the lines its source read since the last period
(:class:`~grstats.agent.sources.base.LogSource`: performance_schema.error_log's Group
Replication lines, or the simulator's). The member's list, the newest
:data:`~grstats.core.rows.member_log.KEPT_LINES` within
:data:`~grstats.core.rows.member_log.KEPT_CHARS` (:func:`~grstats.core.rows.member_log.
kept_lines`), is its LOG value: it travels to every agent like the member's events, so every
agent keeps every member's last lines, those of a member whose host died included. The list
outlives the member's server (a restarted server's error_log starts empty: the new lines
extend the kept ones) and this agent's restarts (the gossip state takes them back from a
peer, :meth:`~grstats.agent.gossip.GossipState.merge`'s rule for the local member's history).
Called on the agent's event loop only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grstats.agent.gossip import Key, LogLines
from grstats.core.rows.member_log import kept_lines

#: Periods an agent waits before it records its member's first lines, unless a peer (or the
#: registry) gives the lines of its earlier run first: while its digest has no LOG, a peer's
#: exchange still sends those (each period has one, :mod:`grstats.agent.rounds`), and the new
#: lines extend them. Once recorded, the agent's own LOG is newer than any peer's.
FIRST_RECORD_WAIT = 3

if TYPE_CHECKING:
    from collections.abc import Sequence

    from grstats.agent.gossip import GossipState
    from grstats.core.clock import Clock
    from grstats.core.rows.member_log import MemberLogRow


class MemberLog:
    """Adds the agent's own member's lines to its LOG value (see the module)."""

    def __init__(self, state: GossipState, *, clock: Clock) -> None:
        self._state = state
        self._clock = clock
        self._waited = 0  # periods waited for a peer before the first record
        self._pending: tuple[MemberLogRow, ...] = ()  # lines read meanwhile

    def held(self) -> tuple[MemberLogRow, ...]:
        """The member's lines as the state holds them (those of earlier runs too)."""
        heard = self._state.value(self._state.local_id, Key.LOG)
        if heard is None or not isinstance(heard.update.value, LogLines):
            return ()
        return heard.update.value.lines

    def add(self, lines: Sequence[MemberLogRow]) -> None:
        """Add ``lines`` of the agent's member, and record the list if it changed.

        With them, the lines of an earlier run that a peer held (``GossipState.earlier_log``):
        called every period, with no lines too.
        """
        member = self._state.local_id
        if not member:
            return
        if self._state.value(member, Key.LOG) is None and self._waits(lines):
            return
        lines, self._pending = (*self._pending, *lines), ()
        current = self.held()
        held = set(current)
        earlier, self._state.earlier_log = self._state.earlier_log, None
        before = earlier.value.lines if earlier and isinstance(earlier.value, LogLines) else ()
        fresh = [
            line for line in (*before, *lines) if line.member_id == member and line not in held
        ]
        if not fresh:
            return
        kept = kept_lines((*current, *fresh))
        if kept != current:
            self._state.record_local(Key.LOG, LogLines(kept), self._clock())

    def _waits(self, lines: Sequence[MemberLogRow]) -> bool:
        """Whether the first record waits (holding ``lines``) for a peer's copy of earlier ones."""
        if self._waited >= FIRST_RECORD_WAIT:
            return False
        self._waited += 1
        self._pending = kept_lines((*self._pending, *lines))
        return True
