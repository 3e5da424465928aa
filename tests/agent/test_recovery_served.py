"""The ETA where the operator reads it: ``query status`` and /metrics of member 2's agent (issue 48).

In the crash-rejoin scenario member 2 crashes at 30 s and restarts at 60 s; while it recovers
its agent's status gives its transactions left, apply rate and ``eta_s`` (the table the Query
service serves, read as ``grstats query status --format json`` reads it), and /metrics the
gauges of both; once it is ONLINE, nothing is left and the two series are gone.
"""

from __future__ import annotations

import asyncio

from grstats.agent.metrics_http import serve_metrics
from grstats.cli.status_view import GroupStatus, document
from tests.agent.test_metrics import by_member, scrape
from tests.agent.test_recovery_sim import RECOVERING
from tests.agent.test_runtime import start_group, stop_all


async def test_member_2s_status_and_metrics_give_an_eta_while_it_recovers() -> None:
    """While member 2 recovers, its row has eta_s, and /metrics the ETA and transactions left."""
    group = await start_group(3, scenario="crash-rejoin", memory=True)
    agent = group.agents[RECOVERING]
    server, _, port = serve_metrics(agent.metrics, "127.0.0.1", 0)
    seen: list[tuple[str, int | None, float | None, float | None, float | None]] = []
    try:
        await group.rounds(50)  # 60 s: member 2 restarts
        for _ in range(10):
            await group.rounds(1)
            wire = {
                name: ([column.name for column in columns], rows)
                for name, (columns, rows) in agent.tables(extended=False).items()
                if name in ("replication_group_status", "replication_group_member_status")
            }
            status = document(GroupStatus.from_tables(agent.address, wire))
            (own,) = [m for m in status["members"] if m["member_id"] == agent.member_id]
            families = await scrape(f"127.0.0.1:{port}")
            eta = by_member(families["grstats_member_recovery_eta_seconds"])
            left = by_member(families["grstats_member_recovery_transactions_left"])
            seen.append(
                (
                    own["state"],
                    own["transactions_left"],
                    own["eta_s"],
                    eta.get(agent.member_id),
                    left.get(agent.member_id),
                )
            )
    finally:
        await asyncio.to_thread(server.shutdown)
        server.server_close()
        await stop_all(group)
    recovering = [found for found in seen if found[0] == "RECOVERING"]
    assert len(recovering) >= 2, seen  # 4 s of recovery: several periods
    assert all(found[1] is not None and found[1] > 0 for found in recovering), seen
    with_eta = [found for found in recovering if found[2] is not None]
    assert with_eta, seen  # an ETA from its second period of recovery on
    for _, left_now, eta_s, eta_series, left_series in with_eta:
        assert eta_series == eta_s
        assert left_series == left_now
    assert seen[-1] == ("ONLINE", 0, 0.0, None, None)  # no series while nothing is left
