"""The errant-write event: a write on a member out of the group, and the rejoin MySQL refuses."""

from __future__ import annotations

from typing import Any

import pytest

from grstats.agent.sim.group import TICKS_PER_SECOND, SimulatedGroup
from grstats.agent.sim.scenario import from_mapping, load_scenario
from grstats.agent.sim.views import snapshot
from grstats.core.errors import ConfigError
from grstats.core.gtid import GtidSet

START_US = 1_700_000_000_000_000


def scenario(*events: dict[str, Any]) -> dict[str, Any]:
    """A 3-member scenario mapping with ``events``."""
    return {"name": "t", "description": "d", "members": 3, "events": list(events)}


def run_to(group: SimulatedGroup, seconds: float) -> None:
    """Advance ``group`` to ``seconds`` after its start."""
    group.advance_to(round(seconds * TICKS_PER_SECOND))


def own(group: SimulatedGroup, index: int) -> GtidSet:
    """The GTIDs of member ``index``'s gtid_executed under its own server_uuid."""
    member = group.members[index]
    return GtidSet(i for i in snapshot(group, index).gtid_executed if i.uuid == member.uuid)


def test_value_is_a_count_of_transactions_one_by_default() -> None:
    """An errant-write writes 1 transaction unless its value, a whole number from 1, says more."""
    event = {"at": 1, "action": "errant-write", "member": 2}
    assert from_mapping(scenario(event)).events[0].value == 1
    assert from_mapping(scenario(event | {"value": 5})).events[0].value == 5
    for bad in (0, 1.5, "3", True):
        with pytest.raises(ConfigError, match=r"events\[0\]\.value: .* is not a whole number"):
            from_mapping(scenario(event | {"value": bad}))


def test_stopped_member_written_on_is_refused_when_it_starts() -> None:
    """The built-in scenario: member 2's own GTIDs 1-3 from 15 s; its start at 50 s ends in ERROR, alone."""
    group = SimulatedGroup(load_scenario("errant-write"), 1, START_US)
    run_to(group, 14)
    assert not own(group, 2)
    run_to(group, 16)
    errant = group.members[2].uuid
    assert own(group, 2) == GtidSet([(errant, "", 1, 3)])
    assert all(not own(group, index) for index in (0, 1))
    view_before = group.view_id
    run_to(group, 51)
    rows = snapshot(group, 2).view.members
    assert [(row.member_id, row.member_state) for row in rows] == [(errant, "ERROR")]
    for index in (0, 1):
        assert errant not in {row.member_id for row in snapshot(group, index).view.members}
    assert group.view_id == view_before  # no view with it installed
    run_to(group, 70)  # it does not rejoin by itself
    assert snapshot(group, 2).view.members[0].member_state == "ERROR"


def test_a_write_in_the_group_or_on_a_crashed_server_does_nothing() -> None:
    """In the view GR certifies writes under the group's name; a crashed server takes none."""
    group = SimulatedGroup(
        from_mapping(
            scenario(
                {"at": 5, "action": "errant-write", "member": 1},
                {"at": 6, "action": "crash", "member": 2},
                {"at": 7, "action": "errant-write", "member": 2},
                {"at": 20, "action": "start", "member": 2},
            )
        ),
        1,
        START_US,
    )
    run_to(group, 40)
    assert [group.members[i].errant for i in range(3)] == [0, 0, 0]
    rows = {row.member_id: row.member_state for row in snapshot(group, 2).view.members}
    assert rows[group.members[2].uuid] == "ONLINE"  # rejoined
