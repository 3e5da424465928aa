"""A partition that heals before the expulsion: the member gets the backlog, its queue stays whole."""

from __future__ import annotations

from grstats.agent.sim.group import TICKS_PER_SECOND, SimulatedGroup
from grstats.agent.sim.scenario import from_mapping
from grstats.agent.sim.views import received_set, snapshot
from grstats.core.rows import MemberState


def test_a_short_partition_leaves_no_negative_queue() -> None:
    """Cut at 10 s, healed at 13 s (expulsion would be at 20 s): every read succeeds, queues add up."""
    scenario = from_mapping(
        {
            "name": "short-partition",
            "description": "member 1 is cut off for 3 s",
            "members": 3,
            "workload": {"rate_tps": 500},
            "appliers": {"capacity_tps": 4000},
            "events": [
                {"at": 10, "action": "partition", "member": 1},
                {"at": 13, "action": "heal", "member": 1},
            ],
        }
    )
    group = SimulatedGroup(scenario, 7, 1_700_000_000_000_000)
    queues = []
    for tick in range(1, 30 * TICKS_PER_SECOND + 1):
        group.advance_to(tick)
        read = snapshot(group, 1)
        queue = read.stats.count_transactions_remote_in_applier_queue
        behind = (received_set(group, group.members[1]).difference(read.gtid_executed)).count()
        queues.append(queue)
        if group.members[1].status is MemberState.ONLINE and not group.members[1].partitioned:
            assert queue == behind
    assert group.members[1].in_view  # never expelled
    assert max(queues[13 * TICKS_PER_SECOND :]) > 0  # the backlog was queued, then applied
    assert queues[-1] == 0
