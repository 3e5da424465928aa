"""Ground truth only the simulator knows: time in each state, time throttled, totals per member.

The Spark reports estimate these from collected snapshots; tests compare the two.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grstats.agent.sim.group import TICKS_PER_SECOND
from grstats.core.rows import Column, Kind, MemberState, Table

if TYPE_CHECKING:
    from grstats.agent.sim.group import SimulatedGroup
    from grstats.core.rows import Value

_STATES = (
    MemberState.ONLINE,
    MemberState.RECOVERING,
    MemberState.UNREACHABLE,
    MemberState.ERROR,
    MemberState.OFFLINE,
)

#: One row per member of the simulated group.
SIMULATION_SUMMARY = Table(
    "simulation_summary",
    (
        Column("MEMBER_ID", "CHAR(36)", nullable=False, kind=Kind.TEXT),
        *(
            Column(f"SECONDS_{state}", "DECIMAL(20,6)", nullable=False, kind=Kind.DECIMAL)
            for state in _STATES
        ),
        Column("SECONDS_THROTTLED", "DECIMAL(20,6)", nullable=False, kind=Kind.DECIMAL),
        Column("SERVER_UP", "CHAR(3)", nullable=False, kind=Kind.TEXT),
    ),
)


def summary_rows(group: SimulatedGroup) -> list[tuple[Value, ...]]:
    """Return the summary of every member, sorted by MEMBER_ID."""
    rows: list[tuple[Value, ...]] = []
    for member in sorted(group.members, key=lambda m: m.uuid):
        ticks = group.totals.state_ticks[member.index]
        rows.append(
            (
                member.uuid,
                *(ticks.get(state, 0) / TICKS_PER_SECOND for state in _STATES),
                group.totals.throttled_ticks[member.index] / TICKS_PER_SECOND,
                "YES" if member.server_up else "NO",
            )
        )
    return rows
