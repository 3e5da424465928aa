"""The agent's clock: µs since the epoch, injected wherever a time is taken.

One :data:`Clock` is given to the agent (tests give one they move by hand); the agent hands
the same one to every part that stamps a time: the gossip rounds, the registry sync and the
gRPC servicers (``ExchangeResponse`` times, ``QueryResponse.served_at_us``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeAlias

#: A clock: returns the time in µs since the epoch.
Clock: TypeAlias = Callable[[], int]


def now_us() -> int:
    """The wall clock in µs since the epoch: the agent's clock unless one is injected."""
    return time.time_ns() // 1000
