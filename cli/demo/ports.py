"""Free TCP ports on 127.0.0.1 for the demo's agents (and for tests that start agents)."""

from __future__ import annotations

import contextlib
import random
import socket
from pathlib import Path

#: Where Linux keeps the range it takes a connection's own port from (and port 0's).
_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: The lowest port handed out: above the well-known and most services' registered ones.
_LOWEST = 20_000


def free_ports(count: int) -> list[int]:
    """Return ``count`` ports that are free on 127.0.0.1 now, below the ephemeral range.

    A port the kernel chose for a bind to port 0 is in the ephemeral range, where any
    outgoing connection (an agent dialling its peers) may take it before the agent it was
    meant for listens on it; below that range only a listener asking for it by number does.
    """
    low, _ = _ephemeral_range()
    chosen: list[int] = []
    sockets: list[socket.socket] = []
    candidates = random.sample(range(_LOWEST, low), low - _LOWEST) if low > _LOWEST else []
    try:
        for port in candidates:
            if len(chosen) == count:
                break
            sock = socket.socket()
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                sock.close()
                continue
            sockets.append(sock)
            chosen.append(port)
        while len(chosen) < count:  # no room below the range: the kernel's choice
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
            chosen.append(sock.getsockname()[1])
        return chosen
    finally:
        for sock in sockets:
            sock.close()


def _ephemeral_range() -> tuple[int, int]:
    """The kernel's ephemeral port range (Linux's default when it cannot be read)."""
    with contextlib.suppress(OSError, ValueError):
        low, high = (int(part) for part in _EPHEMERAL.read_text(encoding="ascii").split())
        return low, high
    return 32_768, 60_999
