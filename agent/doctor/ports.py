"""The doctor's check of the agent's ports: each free, or held by this very agent.

For ``listen``, ``metrics_listen`` and ``sql_listen`` the doctor binds the address, and then
starts on each free one the server the agent would start there, all at once, and stops them
(:mod:`~grstats.agent.doctor.start`): a listener that does not start fails its line, as it
would stop the agent. A port already taken is looked at: the gRPC port is this agent's when its
``Query`` service answers as the config's advertised address; ``/metrics`` and the SQL
endpoint are a grstats agent's when ``/metrics`` serves ``grstats_build_info`` and the MySQL
greeting's server version ends with ``-grstats`` (:mod:`grstats.agent.sql`), and this agent's
when its gRPC port is held by this agent too. Anything else holding a port fails the check.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, TypeAlias

from grstats.agent.config import is_unspecified
from grstats.agent.doctor.checklist import Check
from grstats.agent.doctor.local import current_user
from grstats.agent.doctor.start import start_listeners
from grstats.agent.doctor.wire import UNAUTHENTICATED, CallFailed, ask_agent
from grstats.core.address import join_address, split_address

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from grstats.agent.config import AgentConfig
    from grstats.core.security import Security

#: The metric every grstats agent's ``/metrics`` serves.
BUILD_INFO = "grstats_build_info"
#: How the SQL endpoint's server version ends (its ``version`` variable).
SQL_VERSION_SUFFIX = "-grstats"
#: Says whether a grstats agent's endpoint answers at (host, port, timeout_s): True, or what
#: answered instead.
Probe: TypeAlias = "Callable[[str, int, float], Awaitable[bool | str]]"
#: The most of ``/metrics`` read while looking for :data:`BUILD_INFO`.
_METRICS_READ_LIMIT = 16 << 20


async def check_ports(config: AgentConfig, security: Security, timeout_s: float) -> list[Check]:
    """The ``port.*`` lines: ``listen``, then ``metrics_listen`` and ``sql_listen`` if set."""
    addresses = {
        key: value
        for key, value in (
            ("listen", config.listen),
            ("metrics_listen", config.metrics_listen),
            ("sql_listen", config.sql_listen),
        )
        if value is not None
    }
    clash = _shared_port(addresses)
    listen, ours = await _check_listen(config, security, timeout_s)
    checks = {"listen": listen}
    for key, probe in (("metrics_listen", _is_metrics), ("sql_listen", _is_sql_endpoint)):
        if key in addresses:
            checks[key] = await _check_other(
                key, addresses[key], probe, ours=ours, listen=config.listen, timeout_s=timeout_s
            )
    free = [key for key, check in checks.items() if check == _free(key, addresses[key])]
    if clash is None and free:
        for key, reason in (await start_listeners(config, security, free)).items():
            checks[key] = Check.failed(
                checks[key].name,
                f"{key} {addresses[key]} is free, but the agent's server does not start "
                f"there: {reason}",
                _start_fix(key, reason),
            )
    lines = list(checks.values())
    return lines if clash is None else [*lines, clash]


def _free(key: str, address: str) -> Check:
    """The line of a port the doctor's bind found free."""
    return Check.ok(f"port.{key}", f"{key} {address} is free")


def _start_fix(key: str, reason: str) -> str:
    """What to do about a listener that does not start for ``reason``."""
    if reason.startswith(("ImportError", "ModuleNotFoundError")):
        return (
            f"reinstall grstats: this installation lacks a module {key} needs (a frozen build "
            "must bundle it)"
        )
    return f"stop what holds that port, or choose another {key}"


def _shared_port(addresses: dict[str, str]) -> Check | None:
    """A failed ``port.shared`` line when two of the addresses would bind one port."""
    seen: dict[int, tuple[str, str]] = {}
    for key, address in addresses.items():
        host, port = split_address(address, key, lowest_port=0)
        if port == 0:
            continue
        other = seen.get(port)
        if other is not None and (
            host == other[1] or is_unspecified(host) or is_unspecified(other[1])
        ):
            return Check.failed(
                "port.shared",
                f"{other[0]} {addresses[other[0]]} and {key} {address} are the same port",
                f"give {key} a port of its own",
            )
        seen[port] = (key, host)
    return None


async def _check_listen(
    config: AgentConfig, security: Security, timeout_s: float
) -> tuple[Check, bool]:
    """The ``port.listen`` line, and whether this agent holds the port."""
    name, address = "port.listen", config.listen
    host, port = split_address(address, "listen", lowest_port=0)
    early = _probe(name, "listen", address, host, port)
    if early is not None:
        return early, False
    options: list[tuple[str, object]] = []
    advertised_host, _ = split_address(config.advertised, "advertise", lowest_port=0)
    if config.tls is not None:  # the certificate names the advertised host, maybe not loopback
        options.append(("grpc.ssl_target_name_override", advertised_host))
    target = join_address(_dial_host(host), port)
    try:
        answer = await ask_agent(security, target, timeout_s, samples=1, options=options)
    except CallFailed as exc:
        if exc.kind == UNAUTHENTICATED:
            return Check.failed(
                name,
                f"listen {address}: port {port} is held by a grstats agent that refuses "
                f"this config's token ({exc.details})",
                "stop that agent, or choose another listen; if it is this agent, it runs with "
                "another token_file than this config's",
            ), False
        why = f"it does not answer as a grstats agent: {exc}"
        return _taken(name, "listen", address, port, why), False
    if answer.agent == config.advertised:
        message = f"listen {address} is held by this agent (it answers as {answer.agent})"
        return Check.ok(name, message), True
    return Check.failed(
        name,
        f"listen {address}: port {port} is held by another grstats agent, which answers as "
        f"{answer.agent}, not as {config.advertised}",
        "stop that agent, or choose another listen",
    ), False


async def _check_other(  # noqa: PLR0913  (the address, how to probe it, what listen found)
    key: str, address: str, probe: Probe, *, ours: bool, listen: str, timeout_s: float
) -> Check:
    name = f"port.{key}"
    host, port = split_address(address, key, lowest_port=0)
    early = _probe(name, key, address, host, port)
    if early is not None:
        return early
    target_host = _dial_host(host)
    try:
        async with asyncio.timeout(timeout_s):
            found = await probe(target_host, port, timeout_s)
    except (OSError, TimeoutError) as exc:
        found = f"{exc.strerror if isinstance(exc, OSError) and exc.strerror else exc!r}"
    if found is not True:
        return _taken(name, key, address, port, f"it is not a grstats agent's: {found}")
    if ours:
        return Check.ok(name, f"{key} {address} is held by this agent")
    return Check.failed(
        name,
        f"{key} {address}: port {port} is held by a grstats agent, but not by this one (it "
        f"does not hold listen {listen})",
        f"stop that agent, or choose another {key}",
    )


def _probe(  # noqa: PLR0911  (one return per way a bind fails)
    name: str, key: str, address: str, host: str, port: int
) -> Check | None:
    """Bind ``host:port`` as the agent would: a line unless the port is taken (None)."""
    if port == 0:
        return Check.skipped(name, f"{key} {address}: port 0 takes any free port")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        return Check.failed(
            name,
            f"{key} {address}: host {host!r} does not resolve ({exc.strerror or exc})",
            f"set {key} to an address of this host",
        )
    family, kind, protocol, _, bound = infos[0]
    with socket.socket(family, kind, protocol) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(bound)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return None
            if exc.errno == errno.EADDRNOTAVAIL:
                return Check.failed(
                    name,
                    f"{key} {address}: {host} is not an address of this host",
                    f"set {key} to an address of this host (or 0.0.0.0 for all of them)",
                )
            if exc.errno == errno.EACCES:
                return Check.failed(
                    name,
                    f"{key} {address}: user {current_user()} may not bind port {port} "
                    f"({exc.strerror})",
                    f"choose a port above 1023 for {key}, or give the agent CAP_NET_BIND_SERVICE",
                )
            return Check.failed(
                name, f"{key} {address} cannot be bound: {exc.strerror or exc}", f"correct {key}"
            )
    return _free(key, address)


def _taken(name: str, key: str, address: str, port: int, why: str) -> Check:
    return Check.failed(
        name,
        f"{key} {address}: port {port} is in use by another program ({why})",
        f"stop it or choose another {key}",
    )


def _dial_host(host: str) -> str:
    """Where to dial a server bound to ``host``: loopback for an unspecified address."""
    if is_unspecified(host):
        return "::1" if ":" in host else "127.0.0.1"
    return host


async def _is_metrics(host: str, port: int, timeout_s: float) -> bool | str:
    url = f"http://{join_address(host, port)}/metrics"

    def fetch() -> bytes:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            body: bytes = response.read(_METRICS_READ_LIMIT)
            return body

    try:
        body = await asyncio.to_thread(fetch)
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code} for /metrics"
    except urllib.error.URLError as exc:
        return f"no HTTP answer ({exc.reason})"
    return True if BUILD_INFO.encode() in body else f"its /metrics has no {BUILD_INFO}"


async def _is_sql_endpoint(host: str, port: int, timeout_s: float) -> bool | str:
    """Whether the MySQL greeting there names a grstats agent (server version ``…-grstats``).

    The greeting is MySQL's Protocol::HandshakeV10 (sql/auth/sql_authentication.cc,
    ``send_server_handshake_packet``): a 4-byte header, protocol version 10, then the server
    version, NUL-terminated.
    """
    reader, writer = await asyncio.open_connection(host, port)
    try:
        async with asyncio.timeout(timeout_s):
            header = await reader.readexactly(4)
            length = int.from_bytes(header[:3], "little")
            payload = await reader.readexactly(min(length, 512))
    except asyncio.IncompleteReadError:
        return "it closed the connection without a MySQL greeting"
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    if not payload or payload[0] != 10 or 0 not in payload[1:]:
        return "it does not greet as a MySQL server"
    version = payload[1 : payload.index(0, 1)].decode("latin-1")
    if version.endswith(SQL_VERSION_SUFFIX):
        return True
    return f"a MySQL server {version}"
