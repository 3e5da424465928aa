"""``ServedTables``: the tables an agent serves, built only when what they show changed.

The plain tables change only when the gossip state or the local read does, and once a period
(the local applier's lag): they are built once per change and shared by every query until
then. The extended columns hold the time, so those tables are built per query. Before the
first read, the tables show what the registry remembers and the peers gave.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grstats.agent.served import served_tables

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from grstats.agent.config import AgentConfig
    from grstats.agent.local import LocalMember
    from grstats.agent.recovery import RecoveryWatch
    from grstats.agent.served import Served
    from grstats.core.clock import Clock
    from grstats.core.stable_set import StableSetWatch


class ServedTables:
    """What Query serves: :func:`~grstats.agent.served.served_tables` of the agent, cached.

    ``offsets`` are the members' clock offsets and ``offset_errors`` how far each may be wrong
    (both kept up to date by the rounds); ``address``
    gives the agent's address once it serves (named by an UNKNOWN verdict of an agent that
    cannot read its member); ``stable_set`` watches its member's stable set, ``recovery`` the
    members' progress through recovery or a backlog.
    """

    def __init__(  # noqa: PLR0913  (the agent's parts the tables are built from)
        self,
        config: AgentConfig,
        member: LocalMember,
        offsets: Mapping[str, int],
        offset_errors: Mapping[str, int],
        *,
        clock: Clock,
        address: Callable[[], str],
        stable_set: StableSetWatch | None = None,
        recovery: RecoveryWatch | None = None,
    ) -> None:
        self.config = config
        self._stable_set = stable_set
        self._recovery = recovery
        self._address = address
        self._member = member
        self._offsets = offsets
        self._offset_errors = offset_errors
        self._clock = clock
        self._cached: tuple[tuple[int, int | None, int], Served] | None = None

    def version(self, periods: int) -> tuple[int, int | None, int]:
        """Changes whenever the tables may: the state's changes, the last read, ``periods``.

        It reads a few ints only, so any thread may call it (``/metrics``' does).
        """
        state, snapshot = self._member.state, self._member.snapshot
        return (
            state.changes,
            snapshot.read_at_us if snapshot is not None else None,
            periods,
        )

    def get(self, extended: bool, periods: int) -> Served:
        """The served tables now; ``periods`` counts the agent's periods (a cache key)."""
        if not extended:
            key = self.version(periods)
            if self._cached is None or self._cached[0] != key:
                self._cached = (key, self._build(extended=False))
            return self._cached[1]
        return self._build(extended)

    def _build(self, extended: bool) -> Served:
        state = self._member.state
        silence = int(self.config.silence_periods * self.config.period_s * 1_000_000)
        now_us = self._clock()
        return served_tables(
            state,
            self._member.snapshot,
            now_us,
            silence,
            offsets_us=self._offsets,
            offset_errors_us=self._offset_errors,
            extended=extended,
            cannot_read=(
                None
                if self._member.fault is None
                else (self._address(), self._member.fault.message)
            ),
            stall=self._stable_set.stall(now_us) if self._stable_set is not None else None,
            progress=self._recovery.progress() if self._recovery is not None else None,
        )
