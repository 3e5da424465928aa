"""Who may log in to the SQL endpoint: anyone on loopback, or the accounts of a password file.

Clients authenticate with ``caching_sha2_password`` (MySQL 8's default, and the only one of
MySQL 9's clients) or ``mysql_native_password`` (mysql-mimic's), whichever the client starts
with; a client that starts with another is switched to ``caching_sha2_password``. The password
never crosses the wire: the client proves it knows it with a scramble of the server's nonce.
:class:`OpenIdentity` lets any user in with any password: the endpoint of an agent without
``sql_password_file`` listens on loopback only (the config refuses anything else).
:class:`PasswordFileIdentity` reads ``sql_password_file`` (:func:`read_sql_users`) at each
login, so accounts can be added, changed or removed without a restart.

A wrong password and an unknown user get the same answer, MySQL's error 1045 ``Access denied
for user 'u' (using password: YES)``, so a client cannot tell which user names exist (mysql-
mimic itself would answer 3162 for an unknown user: the provider answers it with a user whose
password matches nothing). A password file that cannot be read at login refuses every login
with 1045 and is logged once per distinct problem (file and line, never a password). Refused
logins are logged at most once per 10 s, with the count of those not logged.

Failed logins of one account, ``'user'@'host'`` (the user name the client gave, from its
address), slow that account down, by MySQL's connection_control rule
(:class:`ConnectionControl`): past ``limits.sql_failed_connections_threshold`` failures in a
row, each further login of the account waits 1 s more than the last before it is answered
(between ``sql_min_connection_delay_ms`` and ``sql_max_connection_delay_ms``), a success
ending the count. Another account on the same host is not delayed. The wait is an
``asyncio`` sleep: it holds the connection's slot of ``sql_connections_per_host``, never the
event loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import hmac
from collections import OrderedDict
from typing import TYPE_CHECKING

from mysql_mimic import utils as mimic_utils
from mysql_mimic.auth import (
    AuthInfo,
    AuthPlugin,
    AuthState,
    Forbidden,
    IdentityProvider,
    NativePasswordAuthPlugin,
    Success,
    User,
)

from grstats.agent.config import read_sql_users
from grstats.core.errors import ConfigError
from grstats.core.log import ThrottledWarning

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence
    from pathlib import Path

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


def access_denied(user: str, with_password: bool) -> str:
    """MySQL's message of error 1045 for ``user``."""
    return f"Access denied for user '{user}' (using password: {'YES' if with_password else 'NO'})"


class ConnectionControl:
    """MySQL's connection_control plugin for the endpoint: failed logins per account.

    The rule is ``Connection_delay_action::notify_event`` and ``get_wait_time``
    (plugin/connection_control/connection_delay.cc, .h in mysql-server): when a login's
    outcome is known, an account with ``count`` failures in a row, ``count >= threshold``,
    waits ``(count + 1 - threshold)`` seconds, but at least ``min_delay_ms`` and at most
    ``max_delay_ms``, whether the login failed or not; then a failure adds one to the count
    and a success forgets it. A threshold of 0 turns it off.

    The count is per account, as ``make_hash_key`` builds its key ``'user'@'host'``: for a
    refused login priv_user and priv_host are empty (sql/auth/sql_authentication.cc's
    ``acl_authenticate`` sets them for an authenticated account), so the key is the user
    name the client gave and its host name, or its IP address when it has none. The endpoint
    resolves no names: the host is the client's address. (For a success MySQL keys by the
    account matched, ``'u'@'%'`` for a wildcard account, so a success need not end the count
    of ``'u'@'10.0.0.5'``; the endpoint's accounts have no host part, and a success ends the
    count of the user and address that logged in.) At most ``max_accounts`` are counted (the
    least recently failing is forgotten first).

    Args:
        threshold: ``limits.sql_failed_connections_threshold``.
        min_delay_ms: ``limits.sql_min_connection_delay_ms``.
        max_delay_ms: ``limits.sql_max_connection_delay_ms``.
        max_accounts: the most accounts counted at once (``limits.max_clients``).
        sleep: how to wait (``asyncio.sleep``; a test's own).
    """

    def __init__(
        self,
        threshold: int,
        min_delay_ms: int,
        max_delay_ms: int,
        max_accounts: int,
        *,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._threshold = threshold
        self._min_ms = min_delay_ms
        self._max_ms = max_delay_ms
        self._max_accounts = max_accounts
        self._sleep = sleep
        self._failures: OrderedDict[tuple[str, str], int] = OrderedDict()

    def failures(self, user: str, host: str) -> int:
        """The failed logins in a row counted for the account ``'user'@'host'``."""
        return self._failures.get((user, host), 0)

    def delay_ms(self, count: int) -> int:
        """The wait of a login of an account with ``count`` failures in a row (0: none)."""
        if self._threshold <= 0 or count < self._threshold:
            return 0
        proposed = (count + 1 - self._threshold) * 1000
        if proposed >= self._min_ms and proposed < self._max_ms:  # get_wait_time
            return proposed
        return self._max_ms if proposed >= self._max_ms else self._min_ms

    async def settle(self, user: str, host: str, *, failed: bool) -> float:
        """Wait as the rule says for a login of ``'user'@'host'``, then count it; the wait."""
        account = (user, host)
        waited = self.delay_ms(self._failures.get(account, 0)) / 1000
        if waited:
            await self._sleep(waited)
        if failed:
            self._failures[account] = self._failures.get(account, 0) + 1
            self._failures.move_to_end(account)
            while len(self._failures) > self._max_accounts:
                self._failures.popitem(last=False)
        else:
            self._failures.pop(account, None)
        return waited


@dataclasses.dataclass
class Account(User):
    """A user and what each plugin checks a scramble against (None: nothing matches).

    ``auth_string`` is ``mysql_native_password``'s SHA1(SHA1(password)), in hex; ``sha2_stage2``
    ``caching_sha2_password``'s SHA256(SHA256(password)).
    """

    sha2_stage2: bytes | None = None


def account(name: str, password: str | None, plugin: str) -> Account:
    """The account ``name`` whose password is ``password`` (None: unknown), for ``plugin``."""
    if password is None:
        return Account(name=name, auth_plugin=plugin)
    stage1 = hashlib.sha256(password.encode()).digest()
    return Account(
        name=name,
        auth_string=NativePasswordAuthPlugin.create_auth_string(password),
        auth_plugin=plugin,
        sha2_stage2=hashlib.sha256(stage1).digest(),
    )


class _Password(AuthPlugin):
    """What both password plugins share: the nonce, the decision, the refusal and its delay.

    ``open_`` admits any password. With a ``control`` and the client's ``host``, the answer
    waits as :class:`ConnectionControl` says for the account, the user and that host.
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

    async def _settle(self, user: str, *, failed: bool) -> None:
        if self._control is not None:
            await self._control.settle(user, self._host, failed=failed)

    def matches(self, user: User, scramble: bytes, nonce: bytes) -> bool:
        """Whether ``scramble`` of ``nonce`` proves ``user``'s password."""
        raise NotImplementedError

    def accepted(self, scramble: bytes) -> None:
        """Called when a login is admitted, before its OK packet."""

    async def auth(self, auth_info: AuthInfo | None = None) -> AuthState:
        if auth_info and auth_info.handshake_auth_data:
            # the handshake's scramble serves every plugin, as MySQL's does
            nonce = auth_info.handshake_auth_data.rstrip(b"\x00")
        else:  # an auth switch: a nonce of our own
            nonce = mimic_utils.nonce(20)
            auth_info = yield nonce + b"\x00"
        assert auth_info is not None
        user: User = auth_info.user
        scramble: bytes = auth_info.data
        if self._open or self.matches(user, scramble, nonce):
            await self._settle(user.name, failed=False)
            self.accepted(scramble)
            yield Success(user.name)
            return
        self._warn("denied", user=user.name)
        await self._settle(user.name, failed=True)
        yield Forbidden(access_denied(user.name, bool(scramble)))


class _NativePassword(_Password):
    """``mysql_native_password`` (mysql-mimic's check) with MySQL's refusal message."""

    name = NativePasswordAuthPlugin.name
    client_plugin_name = NativePasswordAuthPlugin.client_plugin_name

    def matches(self, user: User, scramble: bytes, nonce: bytes) -> bool:
        return user.auth_string is not None and NativePasswordAuthPlugin().verify_scramble(
            user.auth_string, scramble, nonce
        )


#: caching_sha2_password's AuthMoreData after a scramble that matched
#: (sql/auth/sha2_password.cc, ``fast_auth_success``).
FAST_AUTH_SUCCESS = b"\x03"


class _CachingSha2(_Password):
    """``caching_sha2_password``'s fast authentication: MySQL 8's default, 9.x clients' only.

    The client sends XOR(SHA256(password), SHA256(SHA256(SHA256(password)) + nonce))
    (``generate_sha2_scramble``, sql/auth/sha2_password_common.cc); the endpoint knows every
    password, so its "cache" always holds the account and a login never needs the full
    authentication (the password over TLS or RSA): a matching scramble gets
    ``fast_auth_success`` then OK, an empty password the OK alone, anything else 1045.
    ``on_fast_auth`` sends the ``fast_auth_success`` packet (the connection's stream).
    """

    name = "caching_sha2_password"
    client_plugin_name = "caching_sha2_password"

    def __init__(
        self,
        open_: bool,
        warn: ThrottledWarning,
        control: ConnectionControl | None = None,
        host: str = "",
        on_fast_auth: Callable[[bytes], None] | None = None,
    ) -> None:
        super().__init__(open_, warn, control, host)
        self._on_fast_auth = on_fast_auth

    def matches(self, user: User, scramble: bytes, nonce: bytes) -> bool:
        stage2 = getattr(user, "sha2_stage2", None)
        if stage2 is None or len(scramble) != len(stage2):
            return False
        stage1 = mimic_utils.xor(scramble, hashlib.sha256(stage2 + nonce).digest())
        return hmac.compare_digest(hashlib.sha256(stage1).digest(), stage2)

    def accepted(self, scramble: bytes) -> None:
        if scramble and self._on_fast_auth is not None:
            self._on_fast_auth(FAST_AUTH_SUCCESS)


#: The plugins, MySQL 8.4's default (``caching_sha2_password``) first: the handshake offers it.
PLUGINS = (_CachingSha2.name, _NativePassword.name)


class _Identity(IdentityProvider):
    """What both identities share: the plugins, and a copy of them per client connection."""

    _open = False

    def __init__(self, log: FilteringBoundLogger, control: ConnectionControl | None) -> None:
        self._warn = ThrottledWarning(log, "sql_access_denied", LOG_EVERY_S)
        self._control = control
        self._plugins = (
            _CachingSha2(self._open, self._warn),
            _NativePassword(self._open, self._warn),
        )

    def get_plugins(self) -> Sequence[AuthPlugin]:
        """``caching_sha2_password``, then ``mysql_native_password``."""
        return self._plugins

    def for_client(
        self, host: str, on_fast_auth: Callable[[bytes], None] | None = None
    ) -> ClientIdentity:
        """This identity for one connection from ``host``: its logins count for its accounts.

        ``on_fast_auth`` sends caching_sha2_password's ``fast_auth_success`` to the client.
        """
        return ClientIdentity(
            self,
            (
                _CachingSha2(self._open, self._warn, self._control, host, on_fast_auth),
                _NativePassword(self._open, self._warn, self._control, host),
            ),
        )

    async def account(self, username: str, plugin: str) -> Account:
        """The account ``username`` for ``plugin`` (see the subclasses)."""
        raise NotImplementedError


class ClientIdentity(IdentityProvider):
    """An identity's users, with plugins of one connection's own (its client host).

    An account authenticates with the plugin its client chose, when the endpoint has it
    (:attr:`client_plugin`, set by the connection before it asks for the user), else with
    ``caching_sha2_password``, to which the client is switched (MySQL 8's default).
    """

    def __init__(self, identity: _Identity, plugins: Sequence[AuthPlugin]) -> None:
        self._identity = identity
        self._plugins = plugins
        self.client_plugin: str | None = None

    def get_plugins(self) -> Sequence[AuthPlugin]:
        """The plugins, for this connection."""
        return self._plugins

    async def get_user(self, username: str) -> User | None:
        """The identity's account, for the client's plugin where the endpoint has it."""
        plugin = self.client_plugin if self.client_plugin in PLUGINS else PLUGINS[0]
        return await self._identity.account(username, plugin)


class OpenIdentity(_Identity):
    """Any user, any password: for an endpoint on loopback without ``sql_password_file``."""

    _open = True

    def __init__(self, log: FilteringBoundLogger, control: ConnectionControl | None = None) -> None:
        super().__init__(log, control)

    async def account(self, username: str, plugin: str) -> Account:
        """Any user name is a user, whatever its password."""
        return Account(name=username, auth_plugin=plugin)


class PasswordFileIdentity(_Identity):
    """The accounts of ``path``, read at each login (see the module docstring).

    Args:
        path: the password file (``sql_password_file``).
        log: where an unreadable file and refused logins are logged.
        control: what delays the logins of an account that keeps failing (None: nothing).
    """

    def __init__(
        self, path: Path, log: FilteringBoundLogger, control: ConnectionControl | None = None
    ) -> None:
        super().__init__(log, control)
        self._path = path
        self._log = log
        self._problem: str | None = None  # the last problem logged, until the file reads again

    async def account(self, username: str, plugin: str) -> Account:
        """The account, with the hashes its password must match (see the module doc)."""
        password: str | None = None
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
            password = users.get(username)
        return account(username, password, plugin)
