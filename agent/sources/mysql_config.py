"""``MySQLSourceConfig``: where and how :class:`~grstats.agent.sources.mysql.MySQLSource` connects.

The config never holds the password: it names a file or an environment variable, and the
source reads it at connect time (:func:`read_password`), so rotating the secret needs no
restart, and neither ``repr()`` nor a log line of the config can show it.
"""

from __future__ import annotations

import os
import re
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grstats.core.address import MAX_PORT, join_address
from grstats.core.checks import check_bool, check_int, check_path, check_seconds
from grstats.core.errors import ConfigError, SourceUnavailable

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

#: How long a connect or a read may take at most, and the longest backoff (seconds).
MAX_TIMEOUT_S = 300.0
MAX_BACKOFF_S = 3600.0

_SCHEMA_RE = re.compile(r"[A-Za-z0-9_$]{1,64}")
_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_USER_MAX = 80  # MariaDB's limit; MySQL's is 32


@dataclass(frozen=True, slots=True)
class MySQLSourceConfig:
    """How to reach one member's server; validated on construction (ConfigError names the field).

    Attributes:
        host: the server's host name or IP address.
        port: its TCP port, 1..65535.
        user: the account; it needs only ``SELECT`` on ``schema``.
        password_file: a file whose content (less trailing newlines) is the password.
        password_env: the name of an environment variable holding the password. Give at most
            one of ``password_file`` and ``password_env``; neither means an empty password.
        schema: the schema every table is read from, ``performance_schema`` unless a test or a
            proxy exposes the same tables elsewhere.
        metadata_schema: MySQL Shell's InnoDB Cluster metadata, whose ``clusters.cluster_name``
            names the group (``mysql_innodb_cluster_metadata`` unless a test puts it elsewhere);
            reading it needs ``SELECT`` on it, and a member without it has no name from it.
        connect_timeout_s: how long connecting (TCP, TLS and login) may take, in (0, 300].
        query_timeout_s: how long the queries of one read may take together, in (0, 300].
        backoff_initial_s: after a failure, how long the next connect waits, in [0, 3600];
            doubled after each further failure up to ``backoff_max_s`` (0 disables backoff).
        backoff_max_s: the longest wait between connects, in [backoff_initial_s, 3600]. The
            default 5 s is short enough that a server that answers again (a grant restored,
            a restart over, connections freed) is read within 5 s and its member is
            ``CONNECTED YES`` at every agent within 10 s, and long enough that an agent makes
            one connect attempt per 5 s to a server that refuses.
        ssl_ca: a CA bundle; when set, the connection uses TLS and the server's certificate
            must be signed by it (MySQL's ``--ssl-mode=VERIFY_CA``).
        ssl_cert: the client certificate (with ``ssl_key``), for accounts that REQUIRE X509.
        ssl_key: the client certificate's private key.
        ssl_verify_identity: also check that the certificate names ``host``
            (``--ssl-mode=VERIFY_IDENTITY``); needs ``ssl_ca``.
    """

    host: str
    port: int = 3306
    user: str = "grstats"
    password_file: Path | None = None
    password_env: str | None = None
    schema: str = "performance_schema"
    metadata_schema: str = "mysql_innodb_cluster_metadata"
    connect_timeout_s: float = 5.0
    query_timeout_s: float = 5.0
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 5.0
    ssl_ca: Path | None = None
    ssl_cert: Path | None = None
    ssl_key: Path | None = None
    ssl_verify_identity: bool = False

    def __post_init__(self) -> None:
        for name in ("password_file", "ssl_ca", "ssl_cert", "ssl_key"):
            _normalise_path(self, name)
        _check_text("host", self.host, 255)
        check_int("port", self.port, 1, MAX_PORT)
        _check_text("user", self.user, _USER_MAX)
        if self.password_env is not None and not (
            isinstance(self.password_env, str) and _ENV_NAME_RE.fullmatch(self.password_env)
        ):
            raise ConfigError(
                f"password_env: {self.password_env!r} is not an environment variable name"
            )
        if self.password_file is not None and self.password_env is not None:
            raise ConfigError(
                "password_file and password_env: give at most one (neither: empty password)"
            )
        for key in ("schema", "metadata_schema"):
            value = getattr(self, key)
            if not isinstance(value, str) or _SCHEMA_RE.fullmatch(value) is None:
                raise ConfigError(
                    f"{key}: {value!r} is not 1 to 64 characters of A-Z, a-z, 0-9, _ and $"
                )
        check_seconds("connect_timeout_s", self.connect_timeout_s, 0, MAX_TIMEOUT_S, open_low=True)
        check_seconds("query_timeout_s", self.query_timeout_s, 0, MAX_TIMEOUT_S, open_low=True)
        check_seconds("backoff_initial_s", self.backoff_initial_s, 0, MAX_BACKOFF_S)
        check_seconds("backoff_max_s", self.backoff_max_s, 0, MAX_BACKOFF_S)
        if self.backoff_max_s < self.backoff_initial_s:
            raise ConfigError(
                f"backoff_max_s: {self.backoff_max_s!r} is not in "
                f"[backoff_initial_s={self.backoff_initial_s!r}, {MAX_BACKOFF_S:g}]"
            )
        self._check_tls()

    def _check_tls(self) -> None:
        check_bool("ssl_verify_identity", self.ssl_verify_identity, accepted="True or False")
        if (self.ssl_cert is None) != (self.ssl_key is None):
            raise ConfigError("ssl_cert and ssl_key: give both (a client certificate) or neither")
        if self.ssl_ca is None:
            for name in ("ssl_cert", "ssl_verify_identity"):
                if getattr(self, name):
                    raise ConfigError(f"{name}: needs ssl_ca (the CA that signed the server)")

    @property
    def address(self) -> str:
        """``host:port``, as messages show the server."""
        return join_address(self.host, self.port)

    @property
    def uses_tls(self) -> bool:
        """Whether connections use TLS (``ssl_ca`` is set)."""
        return self.ssl_ca is not None


class Secret(str):
    """A password: a ``str`` whose ``repr()`` hides it.

    Tracebacks rendered with their locals (``capture_locals``, structlog's dict tracebacks)
    show every frame's variables with ``repr()``, the driver's frames included; a Secret
    shows as ``'<secret>'`` there.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "'<secret>'"


def read_password(config: MySQLSourceConfig, environ: Mapping[str, str] | None = None) -> Secret:
    """Return the password ``config`` names, read now; SourceUnavailable says what is missing.

    Messages name the file or the variable, never the content.
    """
    if config.password_env is not None:
        env = os.environ if environ is None else environ
        value = env.get(config.password_env)
        if value is None:
            raise SourceUnavailable(f"password_env: ${config.password_env} is not set")
        return Secret(value)
    if config.password_file is not None:
        try:
            text = config.password_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise SourceUnavailable(
                f"password_file: cannot read {str(config.password_file)!r}: {reason}"
            ) from None
        return Secret(text.rstrip("\r\n"))
    return Secret()


def tls_context(config: MySQLSourceConfig) -> ssl.SSLContext | None:
    """Return the TLS context for ``config``, or None without TLS; SourceUnavailable if unusable.

    Certificates are read here, at connect time, so renewed files are picked up on reconnect.
    """
    if config.ssl_ca is None:
        return None
    try:
        context = ssl.create_default_context(cafile=str(config.ssl_ca))
        context.check_hostname = config.ssl_verify_identity
        if config.ssl_cert is not None and config.ssl_key is not None:
            context.load_cert_chain(str(config.ssl_cert), str(config.ssl_key))
    except (OSError, ssl.SSLError) as exc:
        raise SourceUnavailable(f"TLS files: {exc}") from exc
    return context


def _normalise_path(config: MySQLSourceConfig, name: str) -> None:
    """Make the path field ``name`` a Path (TOML gives a string); None stays None."""
    value = getattr(config, name)
    if value is not None:
        object.__setattr__(config, name, check_path(name, value))


def _check_text(name: str, value: object, longest: int) -> None:
    if not isinstance(value, str) or not 1 <= len(value) <= longest or "\0" in value:
        raise ConfigError(f"{name}: {value!r} is not 1 to {longest} characters")
