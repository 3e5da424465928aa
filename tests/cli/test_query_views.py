"""grstats query views, and the views in query status and its watch screen (issue 47).

Real agents over gRPC on 127.0.0.1 (tests.agent.test_runtime), one period per second of a fake
clock; the command runs in-process. The screen is rendered with rich into a string.
"""

from __future__ import annotations

import io
import json
import re
from typing import TYPE_CHECKING, Any

import pytest
from grpc_health.v1 import health
from rich.console import Console

from grstats.agent.server import build_server
from grstats.cli.status_view import GroupStatus
from grstats.cli.watch import WatchScreen
from grstats.core.rows import REPLICATION_GROUP_MEMBER_VIEWS
from tests.agent.test_runtime import Group, start_group, stop_all
from tests.cli.test_query_status import OlderAgent, wire
from tests.inprocess import grstats_in_thread

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.inprocess import Grstats

VIEWS = REPLICATION_GROUP_MEMBER_VIEWS.name


@pytest.fixture(name="grstats")
def _grstats(capsys: pytest.CaptureFixture[str]) -> Grstats:
    """``grstats`` run in-process, in a thread, while the agents serve on the test's loop."""
    return grstats_in_thread(capsys)


@pytest.fixture(name="group")
async def _group() -> AsyncIterator[Group]:
    group = await start_group(3)
    await group.rounds(4)  # every agent exchanged with every other: round trips known
    yield group
    await stop_all(group)


async def test_views_as_json_keyed_by_column_name(group: Group, grstats: Grstats) -> None:
    """--format json: a row per observer and member, keyed by the columns, every state ONLINE."""
    asked = group.agents[1]
    done = await grstats("query", "views", "--node", asked.address, "--format", "json")
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    assert (found["agent"], found["table"], found["agent_source"]) == (asked.address, VIEWS, None)
    rows = found["rows"]
    everyone = sorted(agent.member_id for agent in group.agents)
    assert [(r["OBSERVER_ID"], r["MEMBER_ID"]) for r in rows] == [
        (o, m) for o in everyone for m in everyone
    ]
    for row in rows:
        assert list(row) == list(REPLICATION_GROUP_MEMBER_VIEWS.column_names)
        assert (row["MEMBER_STATE"], row["CONNECTED"], row["DISAGREEMENT"]) == ("ONLINE", "YES", "")
        assert row["VIEW_ID"] == asked.local.view.view_id  # type: ignore[union-attr]
        assert isinstance(row["AGE_MS"], int)
        if row["OBSERVER_ID"] == row["MEMBER_ID"]:
            assert row["ROUND_TRIP_MS"] is None
        else:  # every agent exchanges with both others
            assert isinstance(row["ROUND_TRIP_MS"], float)
            assert row["ROUND_TRIP_MS"] >= 0


async def test_views_as_a_table_and_extended_refused(group: Group, grstats: Grstats) -> None:
    """The table lists the 9 pairs; --extended exits 2: the table has its own freshness."""
    done = await grstats("query", "views", "--node", group.agents[0].address)
    assert done.returncode == 0, done.stderr
    assert "| OBSERVER_ID " in done.stdout.splitlines()[1]
    assert done.stdout.splitlines()[-1].startswith("9 rows in set (")
    refused = await grstats("query", "views", "--node", group.agents[0].address, "--extended")
    assert refused.returncode == 2
    assert refused.stderr.startswith("grstats: error: --extended:")


async def test_status_json_names_no_disagreement_in_a_healthy_group(
    group: Group, grstats: Grstats
) -> None:
    """Query status --format json has disagreements: [] when every member's view agrees."""
    done = await grstats("query", "status", "--node", group.agents[2].address, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["disagreements"] == []


async def test_status_of_an_agent_without_the_views_table(group: Group, grstats: Grstats) -> None:
    """An older agent's status still answers, its disagreements unknown (null)."""
    agent = group.agents[0]
    older = OlderAgent(agent, lacks=lambda name: name == VIEWS)
    server = build_server(older, agent.rounds, health.aio.HealthServicer())
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        done = await grstats("query", "status", "--node", f"127.0.0.1:{port}", "--format", "json")
    finally:
        await server.stop(grace=None)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert (found["status"], found["disagreements"]) == ("OK", None)


def screen_lines(status: GroupStatus, height: int) -> tuple[list[str], str]:
    """The watch screen of ``status`` at 80 columns and ``height`` lines: plain lines, and raw."""
    screen = WatchScreen(status.agent, 1.0, height=height)
    screen.answered(status)
    console = Console(
        file=io.StringIO(), width=80, height=height, force_terminal=True, color_system="standard"
    )
    console.print(screen.render(1e9))
    shown: str = console.file.getvalue()  # type: ignore[attr-defined]
    return re.sub(r"\x1b\[[0-9;]*m", "", shown).splitlines(), shown


async def test_the_watch_screen_draws_the_views_matrix() -> None:
    """A row per member of letters, the one-way pair on red; 9 members on 24 lines get one line."""
    group = await start_group(5, memory=True)
    try:
        await group.rounds(2)
        tables = wire(group.agents[0])
        columns, rows = group.agents[0].tables(extended=False)[VIEWS]
        names = [column.name for column in columns]
    finally:
        await stop_all(group)
    everyone = sorted(agent.member_id for agent in group.agents)
    at = {name: names.index(name) for name in ("OBSERVER_ID", "MEMBER_ID", "MEMBER_STATE")}
    changed = []
    for row in rows:  # the second member lists the first UNREACHABLE, which lists it ONLINE
        cells = list(row)
        pair = (cells[at["OBSERVER_ID"]], cells[at["MEMBER_ID"]])
        if pair == (everyone[1], everyone[0]):
            cells[at["MEMBER_STATE"]] = "UNREACHABLE"
        if pair in ((everyone[1], everyone[0]), (everyone[0], everyone[1])):
            cells[names.index("DISAGREEMENT")] = "ONE_WAY"
        changed.append(tuple(cells))
    tables[VIEWS] = (names, changed)
    status = GroupStatus.from_tables("db1:7400", tables)
    plain, shown = screen_lines(status, 24)
    assert len(plain) <= 24
    assert max(len(line) for line in plain) <= 80
    matrix = [line for line in plain if re.match(r"[1-5] [0-9a-f]{8} ", line)]
    assert [line.split()[2:] for line in matrix] == [
        list("OOOOO"),
        list("UOOOO"),
        *[list("OOOOO")] * 3,
    ]
    (second,) = [line for line in shown.splitlines() if line.startswith(f"2 {everyone[1][:8]}")]
    assert "\x1b[1;37;41mU" in second  # bold white on red: the one-way pair
    assert any(line.startswith("views: row = ") for line in plain)


async def test_nine_members_on_24_lines_count_the_disagreements_instead() -> None:
    """Nine members leave no room for the matrix on 24 lines: one line counts instead; 40 fit it."""
    group = await start_group(9, memory=True)
    try:
        await group.rounds(2)
        tables = wire(group.agents[0])
        columns, rows = group.agents[0].tables(extended=False)[VIEWS]
        tables[VIEWS] = ([column.name for column in columns], list(rows))
    finally:
        await stop_all(group)
    status = GroupStatus.from_tables("db1:7400", tables)
    plain, _ = screen_lines(status, 24)
    assert len(plain) <= 24
    assert any(line.startswith("views: 0 disagreements (the matrix needs ") for line in plain)
    tall, _ = screen_lines(status, 40)
    assert len([line for line in tall if re.match(r"[1-9] [0-9a-f]{8} ", line)]) == 9
