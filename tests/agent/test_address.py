"""split_address and join_address: ``host:port`` and ``[ipv6]:port`` as settings spell them."""

from __future__ import annotations

import pytest

from grstats.core.address import join_address, split_address
from grstats.core.errors import ConfigError


class TestSplitAddress:
    @pytest.mark.parametrize(
        ("address", "expected"),
        [
            ("127.0.0.1:7400", ("127.0.0.1", 7400)),
            ("db-1.example.net:1", ("db-1.example.net", 1)),
            ("[::1]:7400", ("::1", 7400)),
            ("[fe80::1%eth0]:7400", ("fe80::1%eth0", 7400)),
            ("db1:65535", ("db1", 65535)),
        ],
    )
    def test_host_and_port(self, address: str, expected: tuple[str, int]) -> None:
        """split_address returns the host (IPv6 without brackets) and the port."""
        assert split_address(address) == expected

    @pytest.mark.parametrize(
        "address",
        ["", ":7400", "db1:", "db1:+1", "db1:\uff11", "[db1]:1", "db1:123456", "db1:65536"],
    )
    def test_refuses_what_is_not_host_port(self, address: str) -> None:
        """split_address refuses what is not host:port, naming the setting."""
        with pytest.raises(ConfigError, match=r"^peers\[0\]: "):
            split_address(address, "peers[0]")

    def test_refuses_what_is_not_text(self) -> None:
        """A value that is not a string is refused, shown as given."""
        with pytest.raises(ConfigError, match=r"^listen: 7400 is not host:port"):
            split_address(7400, "listen")

    def test_lowest_port(self) -> None:
        """Port 0 passes only where the lowest port allows it; the message names the range."""
        assert split_address("127.0.0.1:0", "listen", lowest_port=0) == ("127.0.0.1", 0)
        with pytest.raises(ConfigError, match=r"^advertise: 'db1:0' .* port in 1\.\.65535$"):
            split_address("db1:0", "advertise")


@pytest.mark.parametrize(
    ("host", "port", "expected"),
    [("db1", 3306, "db1:3306"), ("10.0.0.5", 7400, "10.0.0.5:7400"), ("::1", 3306, "[::1]:3306")],
)
def test_join_address(host: str, port: int, expected: str) -> None:
    """join_address puts an IPv6 host in brackets, and split_address undoes it."""
    assert join_address(host, port) == expected
    assert split_address(expected) == (host, port)
