"""Where ``grstats query`` finds its agent, TLS files, token and time zone: flags, env, a file.

Each setting is taken from the first of:

1. its flag: ``--node``, ``--tls-ca``, ``--tls-cert``, ``--tls-key``, ``--token-file``,
   ``--time-zone``;
2. the environment: ``GRSTATS_NODE``, ``GRSTATS_TLS_CA``, ``GRSTATS_TLS_CERT``,
   ``GRSTATS_TLS_KEY``, ``GRSTATS_TOKEN_FILE``, ``GRSTATS_TIME_ZONE`` (an empty variable
   counts as unset);
3. a client config file, TOML::

       node = "db1:7400"
       token_file = "/etc/grstats/token"
       time_zone = "SYSTEM"             # optional: the zone times are shown in (UTC)
       [tls]
       ca_file = "/etc/grstats/tls/ca.pem"
       cert_file = "tls/client.pem"     # optional, for mutual TLS
       key_file = "tls/client.key"

   found at ``--client-config FILE``, else ``$GRSTATS_CLIENT_CONFIG``, else
   ``$XDG_CONFIG_HOME/grstats/client.toml`` (``~/.config`` when ``XDG_CONFIG_HOME`` is unset
   or relative) if that file exists. Relative paths in it are relative to its directory.

So that a DBA with a client config types ``grstats query status``. The time zone is the one
``grstats query`` and ``grstats simulate`` show TIMESTAMP(6) columns and times in, written
as MySQL's ``time_zone`` (:mod:`grstats.core.rows.zone`); ``grstats simulate`` reads it
alone (:func:`time_zone_setting`). Every error is a
:class:`~grstats.cli.errors.CliError` with exit status 2 that names where the value came
from: the flag, the variable, or the file and its key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grstats.cli.errors import CliError
from grstats.core.address import split_address
from grstats.core.errors import ConfigError
from grstats.core.rows.zone import UTC_ZONE, TimeZone, TimeZoneError, parse_time_zone

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping

    from grstats.core.security import Security

__all__ = [
    "CLIENT_CONFIG_ENV",
    "SETTINGS",
    "ClientSettings",
    "add_time_zone_argument",
    "client_settings",
    "default_client_config",
    "time_zone_setting",
]

#: The variable that names the client config file.
CLIENT_CONFIG_ENV = "GRSTATS_CLIENT_CONFIG"


@dataclass(frozen=True, slots=True)
class Setting:
    """One client setting: its field, its flag's namespace name, its variable, its file key."""

    name: str
    dest: str
    variable: str
    key: str

    @property
    def flag(self) -> str:
        """The flag as typed (``--tls-ca``)."""
        return "--" + self.dest.replace("_", "-")


#: Every client setting, in the order the messages list them.
SETTINGS = (
    Setting("node", "node", "GRSTATS_NODE", "node"),
    Setting("ca_file", "tls_ca", "GRSTATS_TLS_CA", "tls.ca_file"),
    Setting("cert_file", "tls_cert", "GRSTATS_TLS_CERT", "tls.cert_file"),
    Setting("key_file", "tls_key", "GRSTATS_TLS_KEY", "tls.key_file"),
    Setting("token_file", "token_file", "GRSTATS_TOKEN_FILE", "token_file"),
    Setting("time_zone", "time_zone", "GRSTATS_TIME_ZONE", "time_zone"),
)
_FILE_KEYS = tuple(setting.key for setting in SETTINGS)
#: The file keys whose values are paths, relative to the file.
_PATH_KEYS = frozenset({"tls.ca_file", "tls.cert_file", "tls.key_file", "token_file"})
#: The time zone setting.
_TIME_ZONE = SETTINGS[-1]
#: What a time zone may be, for the messages.
TIME_ZONE_FORMS = (
    "SYSTEM, an offset from -13:59 to +14:00 such as +02:00, or a tz database name such as "
    "Europe/Paris"
)


def add_time_zone_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--time-zone TZ``: the zone the tables and times are shown in (JSON stays UTC)."""
    parser.add_argument(
        "--time-zone",
        metavar="TZ",
        help="show TIMESTAMP columns and times in TZ, as MySQL's time_zone: SYSTEM, +HH:MM, "
        "-HH:MM or a name such as Europe/Paris (default: $GRSTATS_TIME_ZONE, else the client "
        "config's time_zone, else +00:00, UTC); JSON is always UTC",
    )


def _zone(text: str, origin: str) -> TimeZone:
    """The zone ``text`` names; a CliError (2) naming ``origin`` and the value if none."""
    try:
        return parse_time_zone(text)
    except TimeZoneError as exc:
        raise CliError(f"{origin}: {exc} (give {TIME_ZONE_FORMS})", code=2) from exc


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientSettings:
    """The agent a client asks and how it proves who it is; validated on construction.

    Attributes:
        node: the agent's ``host:port``.
        ca_file: the CA that signs the agents' certificates; any TLS file given means TLS.
        cert_file: the client's certificate, for mutual TLS (with ``key_file``).
        key_file: its private key.
        token_file: the file holding the group's shared-secret token.
        time_zone: the zone TIMESTAMP(6) columns and times are shown in (UTC by default).
        origins: setting name -> where its value came from, as messages name it (``--node``,
            ``GRSTATS_NODE``, ``client config '/etc/grstats/client.toml': node``).
    """

    node: str
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    token_file: Path | None = None
    time_zone: TimeZone = UTC_ZONE
    origins: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        split_address(self.node, self.origin("node"))

    def origin(self, name: str) -> str:
        """Where setting ``name`` came from (its file key when nobody said)."""
        default = next(setting.key for setting in SETTINGS if setting.name == name)
        return self.origins.get(name, default)

    def security(self) -> Security:
        """The TLS and token of these settings; reads and checks the files.

        TLS is used when any TLS file is given: ``ca_file`` alone checks the agent's
        certificate, with ``cert_file`` and ``key_file`` the client presents its own.

        Raises:
            CliError: exit status 2, naming where the faulty value came from.
        """
        from grstats.core.security import Security  # noqa: PLC0415  (gRPC: not for --help)
        from grstats.core.tls import TlsConfig  # noqa: PLC0415

        try:
            tls = None
            if self.ca_file or self.cert_file or self.key_file:
                tls = TlsConfig(
                    cert_file=self.cert_file, key_file=self.key_file, ca_file=self.ca_file
                )
            return Security.from_files(tls, self.token_file, self.origin("token_file"))
        except ConfigError as exc:
            message = str(exc)
            for setting in SETTINGS[1:4]:
                message = message.replace(setting.key, self.origin(setting.name))
            raise CliError(message, code=2) from exc


def client_settings(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> ClientSettings:
    """The settings of ``args`` (flags), ``environ`` (default: the process's) and the file.

    ``args`` has the flags' values (None when not given) and ``client_config``.

    Raises:
        CliError: exit status 2 when no node is given anywhere (the message says the three
            ways), when the file named by ``--client-config`` or ``$GRSTATS_CLIENT_CONFIG``
            cannot be read, when the file is not TOML or has an unknown key or a bad value,
            or when a value does not validate.
    """
    env = os.environ if environ is None else environ
    path, name = _config_file(args.client_config, env)
    from_file = _read(path, name) if path is not None else {}
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for setting in SETTINGS:
        flag = getattr(args, setting.dest, None)
        if flag is not None:
            values[setting.name], origins[setting.name] = flag, setting.flag
        elif env.get(setting.variable):
            values[setting.name], origins[setting.name] = env[setting.variable], setting.variable
        elif setting.key in from_file:
            values[setting.name] = from_file[setting.key]
            origins[setting.name] = f"{_named(path)}: {setting.key}"
    if "node" not in values:
        raise CliError(
            "--node: missing; give the agent to ask as --node HOST:PORT, or in the "
            'environment as GRSTATS_NODE=HOST:PORT, or as node = "HOST:PORT" in a client '
            f"config file (--client-config FILE, ${CLIENT_CONFIG_ENV}, or "
            "~/.config/grstats/client.toml)",
            code=2,
        )
    for key in ("ca_file", "cert_file", "key_file", "token_file"):
        if key in values:
            values[key] = Path(values[key])
    if "time_zone" in values:
        values["time_zone"] = _zone(values["time_zone"], origins["time_zone"])
    try:
        return ClientSettings(**values, origins=origins)
    except ConfigError as exc:
        raise CliError(str(exc), code=2) from exc


def time_zone_setting(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> TimeZone:
    """The time zone of ``args`` (``--time-zone``), ``environ`` or the client config file.

    For commands that ask no agent (``grstats simulate``): the file is read only when neither
    the flag nor ``GRSTATS_TIME_ZONE`` gives the zone. UTC when nothing does.

    Raises:
        CliError: exit status 2, naming where the value came from and the value.
    """
    env = os.environ if environ is None else environ
    flag = getattr(args, _TIME_ZONE.dest, None)
    if flag is not None:
        return _zone(flag, _TIME_ZONE.flag)
    if env.get(_TIME_ZONE.variable):
        return _zone(env[_TIME_ZONE.variable], _TIME_ZONE.variable)
    path, name = _config_file(getattr(args, "client_config", None), env)
    from_file = _read(path, name) if path is not None else {}
    if _TIME_ZONE.key in from_file:
        return _zone(str(from_file[_TIME_ZONE.key]), f"{_named(path)}: {_TIME_ZONE.key}")
    return UTC_ZONE


def default_client_config(environ: Mapping[str, str]) -> Path | None:
    """``$XDG_CONFIG_HOME/grstats/client.toml``; ``~/.config`` when it is unset or relative.

    None when there is no home to look in: no ``$HOME`` and no passwd entry for the user (a
    bare container or chroot running the single-file executable).
    """
    base = environ.get("XDG_CONFIG_HOME", "")
    if not Path(base).is_absolute():
        home = environ.get("HOME")
        try:
            base = str((Path(home) if home else Path.home()) / ".config")
        except RuntimeError:  # Path.home(): "Could not determine home directory"
            return None
    return Path(base) / "grstats" / "client.toml"


def _config_file(flag: str | None, env: Mapping[str, str]) -> tuple[Path | None, str]:
    """The client config file to read and what named it; None when there is none."""
    if flag is not None:
        return Path(flag), "--client-config"
    if env.get(CLIENT_CONFIG_ENV):
        return Path(env[CLIENT_CONFIG_ENV]), CLIENT_CONFIG_ENV
    found = default_client_config(env)
    return (found, "") if found is not None and found.is_file() else (None, "")


def _named(path: Path | None) -> str:
    return f"client config {str(path)!r}"


def _read(path: Path, named_by: str) -> dict[str, object]:
    """The file's settings by dotted key, relative paths made relative to the file."""
    import tomllib  # noqa: PLC0415  (only with a client config file)

    where = _named(path)
    try:
        with path.open("rb") as file:
            data = tomllib.load(file)
    except OSError as exc:
        source = f"{named_by}: " if named_by else ""
        raise CliError(f"{source}cannot read {str(path)!r}: {exc.strerror}", code=2) from exc
    except tomllib.TOMLDecodeError as exc:
        raise CliError(f"{where} is not valid TOML: {exc}", code=2) from exc
    found: dict[str, object] = {}
    for key, value in data.items():
        if key == "tls":
            if not isinstance(value, dict):
                raise CliError(f"{where}: tls: {value!r} is not a table ([tls])", code=2)
            found |= {f"tls.{inner}": item for inner, item in value.items()}
        else:
            found[key] = value
    for key, value in found.items():
        if key not in _FILE_KEYS:
            import difflib  # noqa: PLC0415  (only for a mistyped key)

            close = difflib.get_close_matches(key, _FILE_KEYS, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise CliError(f"{where}: {key}: unknown setting{hint}", code=2)
        if not isinstance(value, str) or not value.strip():
            accepted = {"node": "host:port", "time_zone": "a time zone"}.get(key, "a file path")
            raise CliError(f"{where}: {key}: {value!r} is not {accepted}", code=2)
        if key in _PATH_KEYS:
            found[key] = str(path.absolute().parent / value)
    return found
