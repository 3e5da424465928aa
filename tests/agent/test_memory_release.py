"""The agent's memory release after messages: its timers never fail once the agent stopped."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from grstats.agent import server
from grstats.agent.server import MemoryRelease
from tests.waiting import wait_until_async

if TYPE_CHECKING:
    import pytest


async def test_a_trim_due_after_the_executor_shut_down_is_skipped() -> None:
    """A trim timer that fires after the loop's executor shut down neither raises nor logs an error."""
    loop = asyncio.get_running_loop()
    errors: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    try:
        release = MemoryRelease(delay_s=0.001, every_s=0.001)
        release.noticed()
        release.soon()
        await loop.shutdown_default_executor()
        await asyncio.sleep(0.05)
    finally:
        loop.set_exception_handler(None)
    assert errors == []


async def test_trims_go_on_after_the_last_call_each_twice_as_late(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a burst's last call, LATE_TRIMS more trims come, at 2, 4, ... every_s apart: what is freed late goes back too."""
    loop = asyncio.get_running_loop()
    trimmed: list[float] = []

    def trim(_pad: int) -> int:
        trimmed.append(loop.time())
        return 0

    monkeypatch.setattr(server, "_malloc_trim", lambda: trim)
    release = server.MemoryRelease(delay_s=10.0, every_s=0.01)
    began = loop.time()
    release.noticed()
    await wait_until_async(
        lambda: len(trimmed) == 1 + server.LATE_TRIMS, 5.0, "the trims after the last call"
    )
    assert len(trimmed) >= 4  # not the one trim after the call alone
    gaps = [later - earlier for earlier, later in zip([began, *trimmed], trimmed, strict=False)]
    assert all(gap >= 0.01 * 2**index * 0.9 for index, gap in enumerate(gaps)), gaps
    await asyncio.sleep(0.7)  # the last one schedules none: 0.01 * 2**6 = 0.64 s
    assert len(trimmed) == 1 + server.LATE_TRIMS
    release.noticed()  # a new call starts the series again
    await wait_until_async(lambda: len(trimmed) >= 2 + server.LATE_TRIMS, 1.0, "a new series")
