"""Whether the other agents can dial the address this agent advertises, checked at its start.

An agent tells its peers where to reach it: ``advertise``, else ``listen``
(:attr:`~grstats.agent.config.AgentConfig.advertised`). Three settings pass the config's
validation and still leave the peers unable to dial it, so ``grstats agent`` refuses them
before it starts (and ``grstats doctor`` reports them):

- a host name that resolves only to an unspecified address (``0.0.0.0``, ``::``); the literal
  addresses are already refused by :class:`~grstats.agent.config.AgentConfig`;
- a host name that does not resolve (the resolver says the name is unknown; when it fails
  otherwise, such as a DNS server that does not answer, the problem is ``temporary``);
- a loopback address (``127.0.0.0/8``, ``::1``, ``localhost``) while some peer of ``peers``
  is on another host: that peer would dial itself.

A name that resolves here only to loopback is not refused: the peers resolve the name
themselves (Debian maps the host's own name to ``127.0.1.1`` in ``/etc/hosts``, which peers
on other hosts do not see). Discovered peers are not known at the start and are not checked.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from grstats.agent.config import is_loopback, is_unspecified
from grstats.core.address import split_address

if TYPE_CHECKING:
    from collections.abc import Sequence

    from grstats.agent.config import AgentConfig

__all__ = ["AdvertiseProblem", "Resolver", "advertise_problem", "check_advertise"]

#: getaddrinfo's answers that say the name does not exist (the rest may pass).
_UNKNOWN_NAME = frozenset(
    code for code in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", None)) if code is not None
)


class Resolver(Protocol):
    """Name resolution as :func:`socket.getaddrinfo` does it (the default)."""

    def __call__(
        self, host: str, port: int | None, /
    ) -> Sequence[tuple[Any, Any, Any, Any, tuple[Any, ...]]]:
        """Return the addresses of ``host``; raise :class:`OSError` when it does not resolve."""
        ...


@dataclass(frozen=True, slots=True)
class AdvertiseProblem:
    """Why the peers cannot dial the advertised address.

    Attributes:
        message: the reason and the fix, starting with ``advertise:`` and the value.
        temporary: whether the name could not be resolved for a reason that may pass (the
            DNS did not answer), rather than a setting that is wrong.
    """

    message: str
    temporary: bool = False


def advertise_problem(config: AgentConfig, resolve: Resolver = socket.getaddrinfo) -> str | None:
    """Return why the peers cannot dial ``config.advertised``, with the fix; None when they can.

    The message starts with ``advertise:`` and the value, the shape of a config error. It
    resolves the advertised host and the ``peers`` given as names (blocking I/O: call it
    once, at the start, from a thread if a loop is running).

    Args:
        config: the agent's validated config.
        resolve: the name resolution (default :func:`socket.getaddrinfo`); tests pass their own.
    """
    problem = check_advertise(config, resolve)
    return None if problem is None else problem.message


def check_advertise(
    config: AgentConfig, resolve: Resolver = socket.getaddrinfo
) -> AdvertiseProblem | None:
    """:func:`advertise_problem`, saying also whether the problem may pass by itself."""
    value = config.advertised
    host, _ = split_address(value, "advertise", lowest_port=0)
    what = (
        f"advertise: {value!r}"
        if config.advertise is not None
        else f"advertise: not set, so peers dial listen {value!r}, which"
    )
    fix = "set advertise to an address of this host that the other agents can dial"
    if is_unspecified(host):  # AgentConfig refuses it too: a config built otherwise
        return AdvertiseProblem(f"{what} is an unspecified address that no peer can dial; {fix}")
    if _is_literal(host) or host.lower() == "localhost":
        addresses = [host.partition("%")[0]]
    else:
        try:
            addresses = _addresses(host, resolve)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            if isinstance(exc, socket.gaierror) and exc.errno not in _UNKNOWN_NAME:
                return AdvertiseProblem(
                    f"{what} names a host that could not be resolved now ({reason}); check "
                    "the name service, or " + fix,
                    temporary=True,
                )
            return AdvertiseProblem(f"{what} names a host that does not resolve ({reason}); {fix}")
        if addresses and all(is_unspecified(address) for address in addresses):
            return AdvertiseProblem(
                f"{what} names a host that resolves only to {', '.join(sorted(addresses))}, "
                f"an unspecified address that no peer can dial; {fix}"
            )
    if is_loopback(host):
        remote = [peer for peer in config.peers if not _on_this_host(peer, resolve)]
        if remote:
            shown = ", ".join(repr(peer) for peer in remote)
            return AdvertiseProblem(
                f"{what} is a loopback address: peers on other hosts ({shown}) cannot dial "
                f"{host}; {fix}"
            )
    return None


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return False
    return True


def _addresses(host: str, resolve: Resolver) -> list[str]:
    """The distinct addresses ``host`` resolves to (without IPv6 zones); OSError if none."""
    found = {str(entry[4][0]).partition("%")[0] for entry in resolve(host, None)}
    return sorted(found)


def _on_this_host(peer: str, resolve: Resolver) -> bool:
    """Whether ``peer`` is a loopback address, or a name that resolves only to loopback.

    A peer whose name does not resolve counts as on this host: it cannot be dialled at all,
    and that is the peer's problem, not the advertised address's.
    """
    host, _ = split_address(peer, "peers")
    if is_loopback(host):
        return True
    if _is_literal(host):
        return False
    try:
        addresses = _addresses(host, resolve)
    except OSError:
        return True
    return all(is_loopback(address) for address in addresses)
