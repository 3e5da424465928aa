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
"""

from __future__ import annotations

import contextlib
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
    from collections.abc import Sequence
    from pathlib import Path

    from mysql_mimic.auth import AuthPlugin
    from structlog.typing import FilteringBoundLogger

__all__ = ["OpenIdentity", "PasswordFileIdentity", "access_denied", "read_sql_users"]

#: A refused login is logged at most this often, with the count of those not logged.
LOG_EVERY_S = 10.0
_PLUGIN = NativePasswordAuthPlugin.name


def access_denied(user: str, with_password: bool) -> str:
    """MySQL's message of error 1045 for ``user``."""
    return f"Access denied for user '{user}' (using password: {'YES' if with_password else 'NO'})"


class _NativePassword(NativePasswordAuthPlugin):
    """``mysql_native_password`` with MySQL's refusal message; ``open_`` admits any password.

    A user whose ``auth_string`` is None (unknown, or the file unreadable) never matches.
    """

    def __init__(self, open_: bool, log: FilteringBoundLogger) -> None:
        self._open = open_
        self._warn = ThrottledWarning(log, "sql_access_denied", LOG_EVERY_S)

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
            yield Success(user.name)
            return
        scramble: bytes = auth_info.data
        if user.auth_string is not None and self.verify_scramble(user.auth_string, scramble, nonce):
            yield Success(user.name)
            return
        self._warn("denied", user=user.name)
        yield Forbidden(access_denied(user.name, bool(scramble)))


class OpenIdentity(IdentityProvider):
    """Any user, any password: for an endpoint on loopback without ``sql_password_file``."""

    def __init__(self, log: FilteringBoundLogger) -> None:
        self._plugin = _NativePassword(open_=True, log=log)

    def get_plugins(self) -> Sequence[AuthPlugin]:
        """The one plugin: ``mysql_native_password``, admitting any password."""
        return [self._plugin]

    async def get_user(self, username: str) -> User | None:
        """Any user name is a user."""
        return User(name=username, auth_plugin=_PLUGIN)


class PasswordFileIdentity(IdentityProvider):
    """The accounts of ``path``, read at each login (see the module docstring).

    Args:
        path: the password file (``sql_password_file``).
        log: where an unreadable file and refused logins are logged.
    """

    def __init__(self, path: Path, log: FilteringBoundLogger) -> None:
        self._path = path
        self._log = log
        self._plugin = _NativePassword(open_=False, log=log)
        self._problem: str | None = None  # the last problem logged, until the file reads again

    def get_plugins(self) -> Sequence[AuthPlugin]:
        """The one plugin: ``mysql_native_password``, checking the file's passwords."""
        return [self._plugin]

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
