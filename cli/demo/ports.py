"""Free TCP ports on 127.0.0.1 for the demo's agents (and for tests that start agents)."""

from __future__ import annotations

import socket


def free_ports(count: int) -> list[int]:
    """Return ``count`` ports that are free on 127.0.0.1 now."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
