"""Where ``grstats query`` finds its agent, TLS files and token: flags, environment, a file.

Each setting is taken from the first of:

1. its flag: ``--node``, ``--tls-ca``, ``--tls-cert``, ``--tls-key``, ``--token-file``;
2. the environment: ``GRSTATS_NODE``, ``GRSTATS_TLS_CA``, ``GRSTATS_TLS_CERT``,
   ``GRSTATS_TLS_KEY``, ``GRSTATS_TOKEN_FILE`` (an empty variable counts as unset);
3. a client config file, TOML::

       node = "db1:7400"
       token_file = "/etc/grstats/token"
       [tls]
       ca_file = "/etc/grstats/tls/ca.pem"
       cert_file = "tls/client.pem"     # optional, for mutual TLS
       key_file = "tls/client.key"

   found at ``--client-config FILE``, else ``$GRSTATS_CLIENT_CONFIG``, else
   ``$XDG_CONFIG_HOME/grstats/client.toml`` (``~/.config`` when ``XDG_CONFIG_HOME`` is unset
   or relative) if that file exists. Relative paths in it are relative to its directory.

So that a DBA with a client config types ``grstats query status``. Every error is a
:class:`~grstats.agent.cli.errors.CliError` with exit status 2 that names where the value came
from: the flag, the variable, or the file and its key.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grstats.agent.address import split_address
from grstats.agent.cli.errors import CliError
from grstats.agent.errors import ConfigError
from grstats.agent.security import Security
from grstats.agent.tls import TlsConfig

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping

__all__ = [
    "CLIENT_CONFIG_ENV",
    "SETTINGS",
    "ClientSettings",
    "client_settings",
    "default_client_config",
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
)
_FILE_KEYS = tuple(setting.key for setting in SETTINGS)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientSettings:
    """The agent a client asks and how it proves who it is; validated on construction.

    Attributes:
        node: the agent's ``host:port``.
        ca_file: the CA that signs the agents' certificates; any TLS file given means TLS.
        cert_file: the client's certificate, for mutual TLS (with ``key_file``).
        key_file: its private key.
        token_file: the file holding the group's shared-secret token.
        origins: setting name -> where its value came from, as messages name it (``--node``,
            ``GRSTATS_NODE``, ``client config '/etc/grstats/client.toml': node``).
    """

    node: str
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    token_file: Path | None = None
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
    try:
        return ClientSettings(**values, origins=origins)
    except ConfigError as exc:
        raise CliError(str(exc), code=2) from exc


def default_client_config(environ: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/grstats/client.toml``; ``~/.config`` when it is unset or relative."""
    base = environ.get("XDG_CONFIG_HOME", "")
    if not Path(base).is_absolute():
        home = environ.get("HOME")
        base = str((Path(home) if home else Path.home()) / ".config")
    return Path(base) / "grstats" / "client.toml"


def _config_file(flag: str | None, env: Mapping[str, str]) -> tuple[Path | None, str]:
    """The client config file to read and what named it; None when there is none."""
    if flag is not None:
        return Path(flag), "--client-config"
    if env.get(CLIENT_CONFIG_ENV):
        return Path(env[CLIENT_CONFIG_ENV]), CLIENT_CONFIG_ENV
    found = default_client_config(env)
    return (found, "") if found.is_file() else (None, "")


def _named(path: Path | None) -> str:
    return f"client config {str(path)!r}"


def _read(path: Path, named_by: str) -> dict[str, object]:
    """The file's settings by dotted key, relative paths made relative to the file."""
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
            close = difflib.get_close_matches(key, _FILE_KEYS, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise CliError(f"{where}: {key}: unknown setting{hint}", code=2)
        if not isinstance(value, str) or not value.strip():
            accepted = "host:port" if key == "node" else "a file path"
            raise CliError(f"{where}: {key}: {value!r} is not {accepted}", code=2)
        if key != "node":
            found[key] = str(path.absolute().parent / value)
    return found
