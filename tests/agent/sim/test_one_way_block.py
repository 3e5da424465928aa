"""The scenario's ``block`` event: one direction of a link cut, as in MySQL bug #118704.

Only the receivers' failure detectors suspect the sender: each receiver's own
``replication_group_members`` (``get_group_members_info``, plugin/group_replication/src/
ps_information.cc) shows it UNREACHABLE, everyone else's ONLINE, and no majority expels it.
"""

from __future__ import annotations

import json

from grstats.agent.sim.group import TICKS_PER_SECOND, SimulatedGroup
from grstats.agent.sim.scenario import from_mapping
from grstats.agent.sim.views import snapshot

#: Member 0's messages stop reaching member 1 at 10 s (suspected at 15 s) until 40 s.
SCENARIO = from_mapping(
    {
        "name": "one-way",
        "description": "member 1 stops hearing member 0",
        "members": 3,
        "version": "8.4.0",
        "events": [
            {"at": 10, "action": "block", "member": 0, "members": [1]},
            {"at": 40, "action": "unblock", "member": 0},
        ],
    }
)


def states(group: SimulatedGroup, viewer: int) -> list[str]:
    """MEMBER_STATE of each member in ``viewer``'s own view, by member index."""
    by_id = {row.member_id: row.member_state for row in snapshot(group, viewer).view.members}
    return [str(by_id.get(member.uuid, "NOT_LISTED")) for member in group.members]


def suspicions(group: SimulatedGroup, viewer: int) -> list[int]:
    """MEMBER_FAILURE_SUSPICIONS_COUNT of each member on ``viewer``, by member index."""
    communication = snapshot(group, viewer).communication
    assert communication is not None
    assert communication.failure_suspicions is not None
    counts: dict[str, int] = json.loads(communication.failure_suspicions)
    return [counts[member.uuid] for member in group.members]


def test_only_the_receiver_suspects_the_blocked_sender_and_no_view_expels_it() -> None:
    """Member 1 lists 0 UNREACHABLE from 15 s to 40 s (counted once); 0 and 2 list it ONLINE."""
    group = SimulatedGroup(SCENARIO, 1, 1_700_000_000_000_000)
    seen: dict[int, list[list[str]]] = {}
    for second in (14, 15, 39, 41):
        group.advance_to(second * TICKS_PER_SECOND)
        seen[second] = [states(group, viewer) for viewer in range(3)]
    online = ["ONLINE"] * 3
    assert seen[14] == [online] * 3
    assert seen[15] == seen[39] == [online, ["UNREACHABLE", "ONLINE", "ONLINE"], online]
    assert seen[41] == [online] * 3
    assert suspicions(group, 1) == [1, 0, 0]
    assert suspicions(group, 0) == suspicions(group, 2) == [0, 0, 0]
    assert all(member.in_view for member in group.members)
