"""Issue 34, errant transactions, through real agents: the warning comes before the refused rejoin.

In-memory agents over the simulator's built-in ``errant-write`` scenario (tests.agent.test_runtime,
one period per second of a fake clock that starts 10 s after the group): member 2 stops at
10 s, takes an errant write of 3 transactions at 15 s, and starts at 50 s. Every agent samples
its member's gtid_executed on the marks of the minute, which fall 40 s after the group starts,
so the errant set is known from 40 s, 10 s before the join MySQL refuses.
"""

from __future__ import annotations

from grstats.cli.status_view import GroupStatus, document, render_status
from grstats.core.gtid import GtidSet
from tests.agent.test_group_status import ids, member_status, run_to, states, status
from tests.agent.test_metrics_series import export_everything, rendered, value
from tests.agent.test_runtime import start_group, stop_all
from tests.cli.test_query_status import wire


async def test_errant_write_is_named_before_the_rejoin_is_refused() -> None:
    """Every agent names member 2 and its own-UUID GTIDs from 40 s; at 50 s its join fails: ERROR everywhere."""
    group = await start_group(3, scenario="errant-write", memory=True)
    export_everything(*group.agents)  # every agent's /metrics of every member, below
    try:
        await run_to(group, 39)  # stopped, written on, not sampled since the write
        errant = ids(group)[2]
        for agent in group.agents:
            assert {row["ERRANT_TRANSACTIONS"] for row in member_status(agent).values()} == {""}
        await run_to(group, 41)  # the marks of the minute: every set sampled again
        expected = str(GtidSet([(errant, "", 1, 3)]))
        for agent in group.agents:
            rows = member_status(agent)
            assert rows[errant]["ERRANT_TRANSACTIONS"] == expected
            assert {rows[m]["ERRANT_TRANSACTIONS"] for m in ids(group)[:2]} == {""}
            assert states(agent)[errant] == "OFFLINE"
        answer = GroupStatus.from_tables("agent-0:7400", wire(group.agents[0]))
        text = render_status(answer, "table")
        assert f"errant: 127.0.0.1:13308 has {errant}:1-3 the group lacks" in text
        (member,) = [m for m in document(answer)["members"] if m["member_id"] == errant]
        assert member["errant_transactions"] == f"{errant}:1-3"
        group_name = status(group.agents[0])["GROUP_NAME"]
        for agent in group.agents:
            counts = {
                m: value(
                    rendered(agent),
                    "grstats_member_errant_transactions",
                    group_name=group_name,
                    member_id=m,
                )
                for m in ids(group)
            }
            assert counts == dict(zip(ids(group), [0.0, 0.0, 3.0], strict=True))
        await run_to(group, 52)  # START GROUP_REPLICATION at 50 s: refused
        views = [agent.local.view if agent.local else None for agent in group.agents]
        assert views[2] is not None
        assert [(r.member_id, r.member_state) for r in views[2].members] == [(errant, "ERROR")]
        for view in views[:2]:  # not in the others' view
            assert view is not None
            assert errant not in {row.member_id for row in view.members}
        for agent in group.agents:
            assert states(agent)[errant] == "ERROR"  # outside the group's view, ERROR in its own
            assert (
                value(
                    rendered(agent),
                    "grstats_member_state",
                    group_name=group_name,
                    member_id=errant,
                    state="ERROR",
                )
                == 1.0
            )
            assert member_status(agent)[errant]["ERRANT_TRANSACTIONS"] == expected
            assert status(agent)["STATUS"] == "OK_NO_TOLERANCE_PARTIAL"
    finally:
        await stop_all(group)
