"""Who may log in to the SQL endpoint: anyone on loopback, or the accounts of a password file.

Clients authenticate with ``mysql_native_password``, the plugin mysql-mimic implements (the
password never crosses the wire: the client proves it knows it with a scramble of the server's
nonce). :class:`OpenIdentity` lets any user in with any password: the endpoint of an agent
without ``sql_password_file`` listens on loopback only (the config refuses anything else).
:class:`PasswordFileIdentity` reads ``sql_password_file`` (:func:`read_sql_users`) at each
login, so accounts can be added, changed or removed without a restart.

A wrong password and an unknown user get the same answer, MySQL's error 1045 ``Access denied
for user 'u' (using password: YES)``, so a client cannot tell which user names exist (mysql-
mimic itself would answer 3162 for an unknown user: the provider answers it with a user whose
password matches nothing). A password file that cannot be read at login refuses every login
with 1045 and is logged once per distinct problem (file and line, never a password). Refused
logins are logged at most once per 10 s, with the count of those not logged.

Failed logins from one client host slow that host down, by MySQL's connection_control rule
(:class:`ConnectionControl`): past ``limits.sql_failed_connections_threshold`` failures in a
row, each further login from the host waits 1 s more than the last before it is answered
(between ``sql_min_connection_delay_ms`` and ``sql_max_connection_delay_ms``), a success
ending the count. The wait is an ``asyncio`` sleep: it holds the connection's slot of
``sql_connections_per_host``, never the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from typing import TYPE_CHECKING

from mysql_mimic import utils as mimic_utils
from mysql_mimic.auth import (
    AuthInfo,
    AuthState,
    Forbidden,
    IdentityProvider,
    NativePasswordAuthPlugin,
    Success,
    User,
)

from grstats.agent.config import read_sql_users
from grstats.agent.errors import ConfigError
from grstats.agent.log import ThrottledWarning

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence
    from pathlib import Path

    from mysql_mimic.auth import AuthPlugin
    from structlog.typing import FilteringBoundLogger

__all__ = [
    "ConnectionControl",
    "OpenIdentity",
    "PasswordFileIdentity",
    "access_denied",
    "read_sql_users",
]

#: A refused login is logged at most this often, with the count of those not logged.
LOG_EVERY_S = 10.0
_PLUGIN = NativePasswordAuthPlugin.name


def access_denied(user: str, with_password: bool) -> str:
    """MySQL's message of error 1045 for ``user``."""
    return f"Access denied for user '{user}' (using password: {'YES' if with_password else 'NO'})"


class ConnectionControl:
    """MySQL's connection_control plugin for the endpoint: failed logins per client host.

    The rule is ``Connection_delay_action::notify_event`` and ``get_wait_time``
    (plugin/connection_control/connection_delay.cc, .h in mysql-server): when a login's
    outcome is known, a host with ``count`` failures in a row, ``count >= threshold``, waits
    ``(count + 1 - threshold)`` seconds, but at least ``min_delay_ms`` and at most
    ``max_delay_ms``, whether the login failed or not; then a failure adds one to the count
    and a success forgets it. A threshold of 0 turns it off. MySQL counts per ``'user'@'host'``
    attempted; grstats counts per client host, so that guessing user names is slowed too.
    At most ``max_hosts`` hosts are counted (the least recently failing is forgotten first).

    Args:
        threshold: ``limits.sql_failed_connections_threshold``.
        min_delay_ms: ``limits.sql_min_connection_delay_ms``.
        max_delay_ms: ``limits.sql_max_connection_delay_ms``.
        max_hosts: the most hosts counted at once (``limits.max_clients``).
        sleep: how to wait (``asyncio.sleep``; a test's own).
    """

    def __init__(
        self,
        threshold: int,
        min_delay_ms: int,
        max_delay_ms: int,
        max_hosts: int,
        *,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._threshold = threshold
        self._min_ms = min_delay_ms
        self._max_ms = max_delay_ms
        self._max_hosts = max_hosts
        self._sleep = sleep
        self._failures: OrderedDict[str, int] = OrderedDict()

    def failures(self, host: str) -> int:
        """The failed logins in a row counted for ``host``."""
        return self._failures.get(host, 0)

    def delay_ms(self, count: int) -> int:
        """The wait of a login from a host with ``count`` failures in a row (0: none)."""
        if self._threshold <= 0 or count < self._threshold:
            return 0
        proposed = (count + 1 - self._threshold) * 1000
        if proposed >= self._min_ms and proposed < self._max_ms:  # get_wait_time
            return proposed
        return self._max_ms if proposed >= self._max_ms else self._min_ms

    async def settle(self, host: str, failed: bool) -> float:
        """Wait as the rule says for ``host``'s login, then count it; the seconds waited."""
        waited = self.delay_ms(self.failures(host)) / 1000
        if waited:
            await self._sleep(waited)
        if failed:
            self._failures[host] = self._failures.get(host, 0) + 1
            self._failures.move_to_end(host)
            while len(self._failures) > self._max_hosts:
                self._failures.popitem(last=False)
        else:
            self._failures.pop(host, None)
        return waited


class _NativePassword(NativePasswordAuthPlugin):
    """``mysql_native_password`` with MySQL's refusal message; ``open_`` admits any password.

    A user whose ``auth_string`` is None (unknown, or the file unreadable) never matches.
    With a ``control`` and the client's ``host``, the answer waits as
    :class:`ConnectionControl` says.
    """

    def __init__(
        self,
        open_: bool,
        warn: ThrottledWarning,
        control: ConnectionControl | None = None,
        host: str = "",
    ) -> None:
        self._open = open_
        self._warn = warn
        self._control = control
        self._host = host

    async def _settle(self, failed: bool) -> None:
        if self._control is not None:
            await self._control.settle(self._host, failed)

    async def auth(self, auth_info: AuthInfo | None = None) -> AuthState:
        if (
            auth_info
            and auth_info.handshake_plugin_name == self.name
            and auth_info.handshake_auth_data
        ):
            nonce = auth_info.handshake_auth_data.rstrip(b"\x00")
        else:  # a client that started with another plugin: send a nonce of our own
            nonce = mimic_utils.nonce(20)
            auth_info = yield nonce + b"\x00"
        assert auth_info is not None
        user: User = auth_info.user
        if self._open:
            await self._settle(failed=False)
            yield Success(user.name)
            return
        scramble: bytes = auth_info.data
        if user.auth_string is not None and self.verify_scramble(user.auth_string, scramble, nonce):
            await self._settle(failed=False)
            yield Success(user.name)
            return
        self._warn("denied", user=user.name)
        await self._settle(failed=True)
        yield Forbidden(access_denied(user.name, bool(scramble)))


class _Identity(IdentityProvider):
    """What both identities share: one plugin, and a copy of it per client host."""

    _open = False

    def __init__(self, log: FilteringBoundLogger, control: ConnectionControl | None) -> None:
        self._warn = ThrottledWarning(log, "sql_access_denied", LOG_EVERY_S)
        self._control = control
        self._plugin = _NativePassword(self._open, self._warn)

    def get_plugins(self) -> Sequence[AuthPlugin]:
        """The one plugin: ``mysql_native_password``."""
        return [self._plugin]

    def for_client(self, host: str) -> IdentityProvider:
        """This identity for one connection from ``host``: its logins count for the host."""
        return _ClientIdentity(self, _NativePassword(self._open, self._warn, self._control, host))


class _ClientIdentity(IdentityProvider):
    """An identity's users, with a plugin of one connection's own (its client host)."""

    def __init__(self, identity: IdentityProvider, plugin: _NativePassword) -> None:
        self._identity = identity
        self._plugin = plugin

    def get_plugins(self) -> Sequence[AuthPlugin]:
        """The one plugin: ``mysql_native_password``, for this connection."""
        return [self._plugin]

    async def get_user(self, username: str) -> User | None:
        """The identity's user."""
        return await self._identity.get_user(username)


class OpenIdentity(_Identity):
    """Any user, any password: for an endpoint on loopback without ``sql_password_file``."""

    _open = True

    def __init__(self, log: FilteringBoundLogger, control: ConnectionControl | None = None) -> None:
        super().__init__(log, control)

    async def get_user(self, username: str) -> User | None:
        """Any user name is a user."""
        return User(name=username, auth_plugin=_PLUGIN)


class PasswordFileIdentity(_Identity):
    """The accounts of ``path``, read at each login (see the module docstring).

    Args:
        path: the password file (``sql_password_file``).
        log: where an unreadable file and refused logins are logged.
        control: what delays the logins of a host that keeps failing (None: nothing).
    """

    def __init__(
        self, path: Path, log: FilteringBoundLogger, control: ConnectionControl | None = None
    ) -> None:
        super().__init__(log, control)
        self._path = path
        self._log = log
        self._problem: str | None = None  # the last problem logged, until the file reads again

    async def get_user(self, username: str) -> User | None:
        """The user, with the hash its password must match; None never (see the module doc)."""
        auth_string: str | None = None
        try:
            users = read_sql_users(self._path)
        except ConfigError as exc:
            if str(exc) != self._problem:
                self._problem = str(exc)
                self._log.warning("sql_password_file_unreadable", error=str(exc))
        else:
            if self._problem is not None:
                self._problem = None
                self._log.info("sql_password_file_readable", path=str(self._path))
            with contextlib.suppress(KeyError):
                auth_string = NativePasswordAuthPlugin.create_auth_string(users[username])
        return User(name=username, auth_string=auth_string, auth_plugin=_PLUGIN)
