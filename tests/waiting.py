"""The suite's one way to wait for something to happen: poll a condition to a deadline.

A fixed sleep either waits too long or, on a loaded machine, not long enough; these poll
instead, and on timeout fail naming what was awaited and the condition's last value.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

T = TypeVar("T")

#: Seconds between two polls: short next to every timeout the suite uses.
POLL_S = 0.05


def wait_until(
    condition: Callable[[], T],
    timeout_s: float,
    what: str,
    *,
    detail: Callable[[], str] | None = None,
) -> T:
    """Poll ``condition`` until it returns a true value, and return that value.

    Raises:
        AssertionError: ``condition`` was not true within ``timeout_s``; the message names
            ``what`` and the last value it returned, then ``detail()`` (logs, say) if given.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(_timed_out(what, timeout_s, value, detail))
        time.sleep(POLL_S)


@overload
async def wait_until_async(
    condition: Callable[[], Awaitable[T]],
    timeout_s: float,
    what: str,
    *,
    detail: Callable[[], str] | None = None,
) -> T: ...


@overload
async def wait_until_async(
    condition: Callable[[], T],
    timeout_s: float,
    what: str,
    *,
    detail: Callable[[], str] | None = None,
) -> T: ...


async def wait_until_async(
    condition: Callable[[], Any],
    timeout_s: float,
    what: str,
    *,
    detail: Callable[[], str] | None = None,
) -> Any:
    """Like :func:`wait_until`, sleeping on the event loop so its tasks run between polls.

    ``condition`` may be a coroutine function (a scrape, a call over the wire): it is awaited.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(_timed_out(what, timeout_s, value, detail))
        await asyncio.sleep(POLL_S)


def _timed_out(what: str, timeout_s: float, value: object, detail: Callable[[], str] | None) -> str:
    """The failure message of a wait that timed out."""
    message = f"{what}: not true within {timeout_s:g} s (last: {value!r})"
    return message if detail is None else f"{message}\n{detail()}"
