"""The demo's (and the tests') free ports: distinct, free, and out of the kernel's ephemeral range."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

from grstats.cli.demo import free_ports, ports
from grstats.cli.demo.ports import _ephemeral_range

if TYPE_CHECKING:
    import pytest


def test_free_ports_are_distinct_bindable_and_below_the_ephemeral_range() -> None:
    """Nine ports, none twice, each bindable now, none where an outgoing connection's may fall."""
    low, high = _ephemeral_range()
    ports = free_ports(9)
    assert len(set(ports)) == 9
    assert all(port < low for port in ports), (ports, low, high)
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_a_port_in_use_is_not_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Out of a range of five ports, one listened on, the four others are handed out."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", free_ports(1)[0]))
        held.listen()
        taken = held.getsockname()[1]
        monkeypatch.setattr(ports, "_LOWEST", taken - 2)
        monkeypatch.setattr(ports, "_ephemeral_range", lambda: (taken + 3, 60_999))
        assert sorted(free_ports(4)) == [taken - 2, taken - 1, taken + 1, taken + 2]
