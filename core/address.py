"""Network addresses as settings spell them: ``host:port``, or ``[ipv6]:port``.

Used by the agent's config (``listen``, ``advertise``, ``peers``, ...), by the MySQL source's
messages and by the collector's ``--node``. Errors are
:class:`~grstats.core.errors.ConfigError` naming the setting and the value.
"""

from __future__ import annotations

import re

from grstats.core.errors import ConfigError

#: The highest TCP port.
MAX_PORT = 65535

_HOST_RE = re.compile(r"[A-Za-z0-9_.-]{1,253}")
_IPV6_RE = re.compile(r"[0-9A-Fa-f:.]+(%[A-Za-z0-9_.-]+)?")


def split_address(address: object, name: str = "address", lowest_port: int = 1) -> tuple[str, int]:
    """Return ``(host, port)`` of ``host:port`` or ``[ipv6]:port``; ConfigError names ``name``.

    The host is a name or an IPv4 address (letters, digits, ``.``, ``-``, ``_``) or a bracketed
    IPv6 address, returned without its brackets; the port is decimal, in
    ``lowest_port..65535``.
    """
    host, port = _split(address) if isinstance(address, str) else ("", -1)
    if not host or not lowest_port <= port <= MAX_PORT:
        raise ConfigError(
            f"{name}: {address!r} is not host:port with a port in {lowest_port}..{MAX_PORT}"
        )
    return host, port


def join_address(host: str, port: int) -> str:
    """Return ``host:port``, with an IPv6 host in brackets (``[::1]:3306``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _split(address: str) -> tuple[str, int]:
    """Return ``(host, port)``, or ``("", -1)`` when ``address`` is not ``host:port``."""
    head, colon, port_text = address.rpartition(":")
    if not colon or not (port_text.isascii() and port_text.isdecimal()) or len(port_text) > 5:
        return "", -1
    if head.startswith("[") and head.endswith("]"):
        host = head[1:-1]
        ok = ":" in host and _IPV6_RE.fullmatch(host) is not None
    else:
        host = head
        ok = _HOST_RE.fullmatch(host) is not None
    return (host, int(port_text)) if ok else ("", -1)
