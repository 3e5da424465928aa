"""``SimulatedSource``: read one member of the built-in simulated group as if it were real."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from grstats.agent.sim.error_log import ServerErrorLog
from grstats.agent.sim.group import TICK_US, SimulatedGroup
from grstats.agent.sim.views import not_started, snapshot
from grstats.agent.sources.base import LOG_LINES_PER_READ
from grstats.core.errors import ConfigError, SourceError
from grstats.core.fault import SourceFault, gr_not_started

if TYPE_CHECKING:
    from collections.abc import Callable

    from grstats.agent.sim.scenario import Scenario
    from grstats.core.model import MemberSnapshot
    from grstats.core.rows.member_log import MemberLogRow


#: Ticks stepped per worker-thread call while catching up (60 simulated seconds).
CHUNK = 600
#: On the event loop, a tick is stepped in parts and the loop runs others' work at least this
#: often (seconds): a whole tick of 9 members takes 0.4-1.5 ms, the stable-set round ~10 ms.
PAUSE_EVERY_S = 0.0002


class SimulatedSource:
    """A :class:`~grstats.agent.sources.base.StatsSource` for member ``member_index`` of a sim.

    Every agent of one simulated group is given the same scenario (sized to the group), seed,
    group start and group name: each steps its own copy of the whole group to the present and
    reads its own member, and all of them agree, because the group is a function of those and
    of the time. The group's UUID and its members' follow from the scenario's name, the seed and
    the group name (:func:`~grstats.agent.sim.group.group_uuid`), and the name is the group's
    label in every snapshot ('' without one).
    A member whose server is down (``crash`` in the scenario) raises SourceUnavailable, as a
    real server that is down would (fault ``server_down``); before the group starts, Group
    Replication is not started: a read returns the member OFFLINE, with the fault
    ``gr_not_started``, as MySQLSource does.

    Catching up on a group that started long ago runs in a worker thread so that it does not
    stall the agent's event loop; the last tick or two are stepped on the loop, in parts with
    pauses between them (``PAUSE_EVERY_S``). Reads and steps never overlap, so the copy is safe.

    With ``step_ahead``, the group is also stepped in the background, one tick (0.1 s) at a
    time from the first read on, as a real server's state moves on its own: a read then finds
    the group nearly at the present and returns at once, and the simulator's CPU is spread over
    the period instead of landing on its start, when the agents exchange. ``aclose`` stops it.

    It is a :class:`~grstats.agent.sources.base.LogSource`: its member's server writes Group
    Replication's lines as the group runs (:mod:`grstats.agent.sim.error_log`), and
    :meth:`take_log` hands over those a read found after the last one taken (by LOGGED), as
    MySQLSource does from performance_schema.error_log; none while the server is down.
    """

    def __init__(  # noqa: PLR0913  (the group's definition, plus how to run it)
        self,
        scenario: Scenario,
        member_index: int,
        seed: int,
        group_start_s: float,
        clock: Callable[[], float] = time.time,
        *,
        step_ahead: bool = False,
        group_name: str = "",
    ) -> None:
        if not 0 <= member_index < scenario.members:
            raise ConfigError(
                f"member_index: {member_index} is not in 0..{scenario.members - 1} "
                f"for a group of {scenario.members}"
            )
        self.member_index = member_index
        self._clock = clock
        self._group = SimulatedGroup(scenario, seed, int(group_start_s * 1_000_000), group_name)
        self._error_log = ServerErrorLog(self._group, member_index)
        self._logged_us = 0  # LOGGED of the last line taken
        self._new_lines: tuple[MemberLogRow, ...] = ()
        self.log_note = ""  # a simulated server always has its error_log
        self._closed = False
        self._step_ahead = step_ahead
        self._stepper: asyncio.Task[None] | None = None
        self._stepping = asyncio.Lock()

    @property
    def group(self) -> SimulatedGroup:
        """The source's copy of the group (for tests and tools)."""
        return self._group

    async def read(self) -> MemberSnapshot:
        """Step the group to now and return this member's snapshot."""
        if self._closed:
            raise SourceError("read after aclose")
        elapsed = int(self._clock() * 1_000_000) - self._group.start_us
        if elapsed < 0:  # OFFLINE, as MySQL shows a member whose GR never started
            return dataclasses.replace(
                not_started(self._group, self.member_index), fault=self._not_started()
            )
        async with self._stepping:
            await self._advance(elapsed // TICK_US)
        if self._step_ahead and self._stepper is None:
            self._stepper = asyncio.create_task(self._step_in_background(), name="simulator")
        read = snapshot(self._group, self.member_index)
        found = self._error_log.since(self._logged_us, LOG_LINES_PER_READ)
        if found:
            self._logged_us = found[-1].logged
            self._new_lines += tuple(found)
        return read

    def take_log(self) -> tuple[MemberLogRow, ...]:
        """The Group Replication lines the last read found, not taken before (oldest first)."""
        lines, self._new_lines = self._new_lines, ()
        return lines

    def _start_text(self) -> str:
        start = datetime.fromtimestamp(self._group.start_us / 1_000_000, UTC)
        return f"{start:%Y-%m-%d %H:%M:%S} UTC"

    def _not_started(self) -> SourceFault:
        fault = gr_not_started(
            f"simulated member {self.member_index}",
            "OFFLINE in replication_group_members",
        )
        return SourceFault(
            fault.kind,
            f"{fault.message} until the simulated group starts at {self._start_text()}",
            "wait for the group's start, or set [simulated] group_start_s to a past time",
        )

    async def _advance(self, tick: int) -> None:
        # Catching up (a group that started long ago): many ticks, off the event loop, in
        # chunks, so that stopping the agent cancels it within one chunk.
        while tick > self._group.tick + 1:
            await asyncio.to_thread(self._group.advance_to, min(tick, self._group.tick + CHUNK))
        while tick > self._group.tick:
            paused_at = time.perf_counter()
            for _ in self._group.step_in_parts():
                if time.perf_counter() - paused_at >= PAUSE_EVERY_S:
                    await asyncio.sleep(0)  # let queries and gossip run mid-tick
                    paused_at = time.perf_counter()

    async def _step_in_background(self) -> None:
        tick_s = TICK_US / 1_000_000
        while not self._closed:
            await asyncio.sleep(tick_s)
            elapsed = int(self._clock() * 1_000_000) - self._group.start_us
            async with self._stepping:
                await self._advance(elapsed // TICK_US)

    async def aclose(self) -> None:
        """Stop stepping in the background; later reads raise."""
        self._closed = True
        if self._stepper is not None:
            self._stepper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._stepper
            self._stepper = None
