"""The agent's memory release after messages: its timers never fail once the agent stopped."""

from __future__ import annotations

import asyncio

from grstats.agent.server import MemoryRelease


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
