"""/member/health and /member/ready: restart it or leave it alone, route to it or not (issue 48).

The rule is grstats' own (MySQL has no probe; ProxySQL's and MySQL Router's checks read
MEMBER_STATE and the backlog the same way): a RECOVERING member is healthy and not ready.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from http import HTTPStatus
from typing import TYPE_CHECKING

import pytest

from grstats.agent.config import load_config
from grstats.agent.member_probe import (
    HEALTH_PATH,
    READY_PATH,
    HealthConfig,
    ProbeAnswer,
    health,
    ready,
)
from grstats.core.errors import ConfigError
from tests.agent.test_metrics_http import metrics_agent
from tests.agent.test_runtime import start_group, stop_all
from tests.waiting import wait_until_async

if TYPE_CHECKING:
    from pathlib import Path

    from grstats.core.rows import Value

ME = "cccccccc-0000-0000-0000-000000000000"


def row(state: str = "ONLINE", **cells: Value) -> dict[str, Value]:
    """The member's replication_group_member_status row, by column name."""
    return {
        "MEMBER_ID": ME,
        "MEMBER_STATE": state,
        "CONNECTED": "YES",
        "SPLIT_BRAIN": "NO",
        "TRANSACTIONS_BEHIND": 0,
        "APPLIER_QUEUE": 0,
        **cells,
    }


def reasons(answer: ProbeAnswer) -> tuple[bool, str]:
    """What a probe sees: ok or not, and why."""
    body = json.loads(answer.json_bytes())
    assert body["ok"] is answer.ok
    assert answer.status == ("200 OK" if answer.ok else "503 Service Unavailable")
    return answer.ok, body["reason"]


@pytest.mark.parametrize(
    ("member", "read_failed", "healthy", "is_ready"),
    [
        (row(), False, (True, ""), (True, "")),
        (row("RECOVERING", TRANSACTIONS_BEHIND=9000), False, (True, ""), (False, "recovering")),
        (row("UNREACHABLE"), False, (True, ""), (False, "unreachable")),
        (row("ERROR"), False, (False, "error"), (False, "error")),
        (row("OFFLINE"), False, (False, "offline"), (False, "offline")),
        (row(SPLIT_BRAIN="YES"), False, (False, "split_brain"), (False, "split_brain")),
        (row(CONNECTED="NO"), False, (False, "server_not_read"), (False, "server_not_read")),
        (row(), True, (False, "server_not_read"), (False, "server_not_read")),
        (None, False, (False, "not_known"), (False, "not_known")),
        (row(TRANSACTIONS_BEHIND=101), False, (True, ""), (False, "applier_backlog")),
        (
            row(TRANSACTIONS_BEHIND=None, APPLIER_QUEUE=101),
            False,
            (True, ""),
            (False, "applier_backlog"),
        ),
        (row(TRANSACTIONS_BEHIND=100), False, (True, ""), (True, "")),
    ],
)
def test_health_and_readiness_of_each_state(
    member: dict[str, Value] | None,
    read_failed: bool,
    healthy: tuple[bool, str],
    is_ready: tuple[bool, str],
) -> None:
    """Healthy unless an operator is needed; ready only ONLINE, in the majority, caught up."""
    assert reasons(health(ME, member, read_failed=read_failed)) == healthy
    assert reasons(ready(ME, member, "OK", read_failed=read_failed)) == is_ready


def test_a_member_of_a_group_without_quorum_is_healthy_and_not_ready() -> None:
    """ONLINE in a view without quorum (NO_QUORUM): leave it alone, route nothing to it."""
    assert reasons(health(ME, row())) == (True, "")
    assert reasons(ready(ME, row(), "NO_QUORUM")) == (False, "no_quorum")
    assert reasons(ready(ME, row(), "OK_NO_TOLERANCE_PARTIAL")) == (True, "")


def test_the_backlog_threshold_is_the_configs() -> None:
    """[health] ready_max_backlog sets the most transactions to apply; bad values are named."""
    assert reasons(ready(ME, row(TRANSACTIONS_BEHIND=5), "OK", HealthConfig(ready_max_backlog=4)))[
        1
    ] == ("applier_backlog")
    body = ready(ME, row(TRANSACTIONS_BEHIND=5), "OK", HealthConfig(ready_max_backlog=5)).body
    assert (body["ok"], body["max_backlog"], body["transactions_behind"]) == (True, 5, 5)
    with pytest.raises(ConfigError, match=r"health\.ready_max_backlog: -1"):
        HealthConfig(ready_max_backlog=-1)


def test_the_health_section_is_read_from_toml(tmp_path: Path) -> None:
    """The [health] section of a config file reaches the agent; an unknown key is named."""
    path = tmp_path / "agent.toml"
    base = 'source = "simulated"\n[simulated]\nmember_index = 0\ngroup_start_s = 1\n'
    path.write_text(base + "[health]\nready_max_backlog = 7\n")
    assert load_config(path).health.ready_max_backlog == 7
    path.write_text(base + "[health]\nready_max_lag = 7\n")
    with pytest.raises(ConfigError, match=r"health\.ready_max_lag"):
        load_config(path)


async def test_crash_and_rejoin_as_member_2s_agent_answers_its_probes() -> None:
    """Member 2 crashes at 30 s and restarts at 60 s: health 503 while down, ready after recovery."""
    group = await start_group(3, scenario="crash-rejoin", memory=True)
    seen: list[tuple[int, tuple[bool, str], tuple[bool, str], object]] = []
    try:
        agent = group.agents[2]
        await group.rounds(5)  # 15 s: a steady group
        for second in range(15, 120):
            answers = agent.probe(HEALTH_PATH), agent.probe(READY_PATH)
            assert answers[0] is not None
            assert answers[1] is not None
            seen.append(
                (second, reasons(answers[0]), reasons(answers[1]), answers[1].body["state"])
            )
            await group.rounds(1)
        assert agent.probe("/metrics") is None
    finally:
        await stop_all(group)
    phases = [(h, r) for _, h, r, _ in seen]
    assert phases[0] == ((True, ""), (True, ""))  # 15 s
    down = [s for s, h, _, _ in seen if h == (False, "server_not_read")]
    # Down from the first read after the crash (30 s) until the restart (60 s), at once.
    assert down
    assert down[0] <= 31
    assert down[-1] >= 59
    assert all(30 <= s <= 61 for s in down)
    recovering = [s for s, h, r, _ in seen if h == (True, "") and r == (False, "recovering")]
    assert recovering
    assert recovering[0] >= 60
    back = [s for s, h, r, _ in seen if h == (True, "") and r == (True, "") and s > 60]
    assert back
    assert back[0] > recovering[-1]
    assert all(r == (True, "") for s, _, r, _ in seen if s >= back[0])  # and it stays ready


def fetch(address: str, path: str, method: str = "GET") -> tuple[int, str, bytes]:
    """One HTTP request: the status, the Content-Type and the body (off the agent's loop)."""
    request = urllib.request.Request(f"http://{address}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:  # noqa: S310  (http only)
            return answer.status, answer.headers["Content-Type"], answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


async def test_the_probes_are_served_over_http_beside_metrics() -> None:
    """A running agent answers both paths with JSON on the metrics listener; /metrics is unchanged."""
    agent = metrics_agent(1)
    await agent.start()
    try:
        listen = agent.metrics_address
        assert listen is not None

        async def ready_now() -> bool:
            status, _, _ = await asyncio.to_thread(fetch, listen, READY_PATH)
            return status == HTTPStatus.OK

        await wait_until_async(ready_now, 10, "the member to be ready")
        for path in (HEALTH_PATH, READY_PATH):
            status, kind, body = await asyncio.to_thread(fetch, listen, path)
            answer = json.loads(body)
            assert (status, kind) == (HTTPStatus.OK, "application/json"), path
            assert (answer["member_id"], answer["state"], answer["ok"], answer["reason"]) == (
                agent.member_id,
                "ONLINE",
                True,
                "",
            )
        status, _, body = await asyncio.to_thread(fetch, listen, READY_PATH, "HEAD")
        assert (status, body) == (HTTPStatus.OK, b"")
        status, kind, body = await asyncio.to_thread(fetch, listen, "/metrics")
        assert status == HTTPStatus.OK
        assert kind.startswith("text/plain")
        assert b"grstats_member_state" in body
    finally:
        await agent.stop(grace_s=0)
