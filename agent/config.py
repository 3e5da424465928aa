"""``AgentConfig``: everything one ``grstats agent`` needs, read from TOML and overridden by flags.

A config file looks like this; every key but ``source`` and its section has a default::

    source = "simulated"              # or "mysql": exactly that section must be present
    listen = "127.0.0.1:7400"         # where the gossip server listens (port 0: any free port)
    advertise = "10.0.0.5:7400"       # the address peers reach this agent at (default: listen)
    peers = ["10.0.0.6:7400"]         # default none: discovered from the member's view
    discover_peers = true             # default: true when peers is empty
    agent_port = 7400                 # discovery dials member host + this (0: listen's port)
    state_dir = "/srv/grstats/db1"    # the member registry (relative: to this file's directory);
                                      # default: <base>/<listen port>, see default_state_dir
    period_s = 1                      # read and push every 1-60 s
    gtid_interval_s = 30              # GTID fields ride every 30-60 s
    executed_interval_s = 60          # gtid_executed travels every 30-60 s
    silence_periods = 10              # a member unheard or unread this long (1-1000 periods)
                                      # is not connected (CONNECTED NO)
    retention_s = 86400               # purge rows unseen this long; 0 never purges
    fanout = 0                        # peers pushed to each period: 0 all, else 1-8
    pull_fanout = 1                   # peers push-pulled with each period (relay), 1-8
    rpc_timeout_s = 0.5               # one push, 0.05-30 s and shorter than period_s
    flush_interval_s = 5              # registry flush, 1-3600 s
    metrics_listen = "0.0.0.0:9474"   # serve Prometheus /metrics here; default: not served
    sql_listen = "127.0.0.1:7406"     # serve the tables over the MySQL protocol, read-only;
                                      # default: not served. Other than loopback: a password file
    sql_password_file = "/etc/grstats/sql-users"  # lines user:password; read at each login
    log_format = "auto"               # auto, json or console
    log_level = "info"                # debug, info, warning or error
    token_file = "/etc/grstats/token" # shared secret of Gossip and Query calls; default none
    group_label = "orders"            # the group's name for people where the member has no
                                      # InnoDB Cluster metadata (its cluster_name wins)

    [tls]                             # serve and dial over TLS; see grstats.core.tls
    cert_file = "/etc/grstats/tls/db1.pem"   # this member's certificate and key
    key_file = "/etc/grstats/tls/db1.key"
    ca_file = "/etc/grstats/tls/ca.pem"      # the group's CA
    require_client_cert = true        # mutual TLS: peers speak only for their own member

    [metrics]                         # what /metrics exports: see grstats.agent.metrics_scope
    scope = "own"                     # own: each series from one agent; all: every series

    [health]                          # /member/health and /member/ready: grstats.agent.member_probe
    ready_max_backlog = 100           # ready only with at most this many transactions to apply

    [limits]                          # what a peer or client may send: see grstats.agent.limits
    max_message_bytes = 16777216      # also max_gtid_text, max_updates, gossip_rate, ...
    sql_connections_per_host = 16     # also sql_query_timeout_s, sql_max_rows

    [simulated]                       # for source = "simulated"
    scenario = "steady"               # a built-in scenario's name, or a scenario file
    member_index = 0                  # this agent's member, from 0 (required)
    members = 3                       # default: the scenario's own size
    seed = 1
    group_start_s = 1767225600        # UNIX seconds (required)

    [mysql]                           # for source = "mysql": MySQLSourceConfig's fields
    host = "127.0.0.1"
    password_file = "/etc/grstats/mysql-password"

Every agent of one simulated group must be given the same scenario, members, seed and
group start; only ``member_index`` differs.

:func:`load_config` reads a file, applies overrides (the command line's flags, as dotted keys)
and validates the result. Errors are :class:`~grstats.core.errors.ConfigError` whose message starts
with the key as the file spells it (``period_s: 0 is not in [1, 60] seconds``,
``mysql.port: ...``, ``peers[1]: ...``), so one message serves the file and the flag.
"""

from __future__ import annotations

import difflib
import ipaddress
import os
import tomllib
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grstats.agent.limits import DEFAULT_LIMITS, LimitsConfig
from grstats.agent.member_probe import DEFAULT_HEALTH, HealthConfig
from grstats.agent.metrics_scope import DEFAULT_METRICS, MetricsConfig
from grstats.agent.sources.mysql_config import MySQLSourceConfig
from grstats.agent.sources.simulated_config import SimulatedSourceConfig
from grstats.core.address import MAX_PORT, split_address
from grstats.core.auth import read_token
from grstats.core.checks import (
    check_bool,
    check_choice,
    check_int,
    check_path,
    check_seconds,
    format_number,
)
from grstats.core.errors import ConfigError
from grstats.core.log import LOG_FORMATS, LOG_LEVELS
from grstats.core.model import LABEL_RULE, is_group_label
from grstats.core.tls import TlsConfig

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "MAX_FANOUT",
    "MAX_RETENTION_S",
    "MIN_RETENTION_S",
    "SOURCES",
    "STATE_BASE_ROOT",
    "AgentConfig",
    "default_state_dir",
    "is_loopback",
    "is_unspecified",
    "load_config",
    "read_sql_users",
]

#: The stats sources an agent can read, each configured by the section of the same name.
SOURCES = ("simulated", "mysql")
#: The longest retention, in seconds (366 days).
MAX_RETENTION_S = 366 * 86_400
MIN_RETENTION_S = 60
MAX_FANOUT = 8
#: The base of the default state directories of an agent run as root (without systemd's).
STATE_BASE_ROOT = Path("/var/lib/grstats")

_MISSING_HINTS = {
    "source": 'give "simulated" or "mysql"',
    "simulated.member_index": "this agent's member of the group, counted from 0",
    "simulated.group_start_s": (
        "the UNIX time the simulated group starts, the same for every agent of the group"
    ),
    "mysql.host": "the member's server: a host name or address",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentConfig:
    """How one agent runs: where it listens, whom it gossips with, how often, what it reads.

    Validated on construction (ConfigError names the key and what it accepts). ``advertise``
    and ``discover_peers`` default to None, resolved by the properties ``advertised`` and
    ``discovery_enabled``; ``agent_port`` is resolved on construction (0 becomes the listen
    port), so :func:`dataclasses.replace` of ``listen`` keeps the old ``agent_port``.

    Attributes:
        source: ``simulated`` or ``mysql``; exactly the section of that name must be given.
        listen: ``host:port`` the gossip server binds; port 0 picks a free port (tests).
        advertise: ``host:port`` peers reach this agent at (None: ``listen``).
        peers: other agents' ``host:port``; empty means discover them.
        discover_peers: whether to find peers from the member's own membership (member host
            plus ``agent_port``); None means "when ``peers`` is empty".
        agent_port: the port the other members' agents listen on, used by discovery;
            0 (the default) means this agent's listen port (and stays 0 if that is 0).
        state_dir: the directory of the member registry, kept across restarts; None (the
            default) is :func:`default_state_dir` of the listen port, which the property
            ``state_path`` resolves.
        period_s: how often the agent reads its source and pushes, 1..60 s (default 1, like
            ``group_replication_flow_control_period``).
        gtid_interval_s: GTID fields ride on the first message after each such mark, 30..60 s.
        executed_interval_s: each member's ``gtid_executed`` travels this often, 30..60 s.
        silence_periods: a member whose agent is not heard from, or has not read its server,
            for this many periods is not connected, 1..1000.
        retention_s: rows of members unseen this long are purged; 0 never purges, else
            60..31622400 s and longer than the silence.
        fanout: peers the agent pushes its own news to each period, on a stream per peer;
            0 pushes to every peer (full mesh, like GR's stats message), else 1..8 in turn.
        pull_fanout: peers the agent push-pulls with each period (anti-entropy: the values of
            third members, which bridge broken links), 1..8 in turn; unreachable ones skipped.
        rpc_timeout_s: the deadline of one push, 0.05..30 s and shorter than ``period_s``.
        flush_interval_s: how often the registry is written to ``state_dir``, 1..3600 s.
        metrics_listen: where to serve Prometheus' ``/metrics`` (host:port, port 0: any free
            port); None (the default) serves no metrics.
        sql_listen: where to serve the tables over the MySQL protocol, read-only
            (:mod:`grstats.agent.sql`; host:port, port 0: any free port); None (the default)
            serves no SQL. Without ``sql_password_file`` only a loopback address is accepted
            (127.0.0.0/8, ``::1``, ``localhost``), since any client could log in.
        sql_password_file: the SQL endpoint's accounts, a file of ``user:password`` lines
            (blank lines and ``#`` comments skipped); checked here, then read again at each
            login, so it can be changed without a restart; never logged.
        simulated: the simulated source's section (``source = "simulated"``), a
            :class:`~grstats.agent.sources.SimulatedSourceConfig`.
        mysql: the MySQL source's section (``source = "mysql"``), a
            :class:`~grstats.agent.sources.MySQLSourceConfig`.
        limits: the ``[limits]`` section (:class:`~grstats.agent.limits.LimitsConfig`); a table from
            TOML becomes one, and its errors name ``limits.<key>``.
        log_format: ``auto`` (console on a terminal, else JSON), ``json`` or ``console``.
        log_level: ``debug``, ``info``, ``warning`` or ``error``.
        tls: the ``[tls]`` section (:class:`~grstats.core.tls.TlsConfig`; a table from TOML becomes
            one): serve and dial peers over TLS; the agent needs all of ``cert_file``,
            ``key_file`` and ``ca_file``. None: plain gRPC.
        token_file: a file holding the shared-secret token every Gossip and Query call must
            carry (:mod:`grstats.core.auth`); read and checked here, never kept or logged.
        group_label: the group's human name (``orders``), shown beside its UUID in status,
            SQL, metrics, the collector's records and reports, where the member's InnoDB
            Cluster metadata gives none (its ``cluster_name`` wins); None (the default): none.
        metrics: the ``[metrics]`` section (:class:`~grstats.agent.metrics_scope.MetricsConfig`;
            a table from TOML becomes one): ``scope``, which series ``/metrics`` exports.
        health: the ``[health]`` section (:class:`~grstats.agent.member_probe.HealthConfig`):
            ``ready_max_backlog``, what ``/member/ready`` allows.
    """

    source: str
    listen: str = "127.0.0.1:7400"
    advertise: str | None = None
    peers: tuple[str, ...] = ()
    discover_peers: bool | None = None
    agent_port: int = 0
    state_dir: Path | None = None
    period_s: float = 1.0
    gtid_interval_s: float = 30.0
    executed_interval_s: float = 60.0
    silence_periods: int = 10
    retention_s: float = 86_400.0
    fanout: int = 0
    pull_fanout: int = 1
    rpc_timeout_s: float = 0.5
    flush_interval_s: float = 5.0
    metrics_listen: str | None = None
    sql_listen: str | None = None
    sql_password_file: Path | None = None
    simulated: SimulatedSourceConfig | None = None
    mysql: MySQLSourceConfig | None = None
    limits: LimitsConfig = DEFAULT_LIMITS
    log_format: str = "auto"
    log_level: str = "info"
    tls: TlsConfig | None = None
    token_file: Path | None = None
    group_label: str | None = None
    metrics: MetricsConfig = DEFAULT_METRICS
    health: HealthConfig = DEFAULT_HEALTH

    def __post_init__(self) -> None:
        self._check_source()
        object.__setattr__(self, "limits", LimitsConfig.from_table(self.limits))
        object.__setattr__(self, "metrics", MetricsConfig.from_table(self.metrics))
        object.__setattr__(self, "health", HealthConfig.from_table(self.health))
        self._check_network()
        self._check_timing()
        self._check_security()
        check_choice("log_format", self.log_format, LOG_FORMATS)
        check_choice("log_level", self.log_level, LOG_LEVELS)
        label = self.group_label
        if label is not None and not (isinstance(label, str) and is_group_label(label)):
            raise ConfigError(f"group_label: {label!r} is not a group label ({LABEL_RULE})")
        self._check_advertised()  # last: a wrong key's own error comes first

    def _check_source(self) -> None:
        for name, kind in (("simulated", SimulatedSourceConfig), ("mysql", MySQLSourceConfig)):
            section = getattr(self, name)
            if section is not None and not isinstance(section, kind):
                raise ConfigError(f"{name}: {section!r} is not a {kind.__name__}")
        _check_sections(self.source, [name for name in SOURCES if getattr(self, name) is not None])

    def _check_network(self) -> None:
        _, listen_port = split_address(self.listen, "listen", lowest_port=0)
        if self.advertise is not None:
            split_address(self.advertise, "advertise")
        if self.metrics_listen is not None:
            split_address(self.metrics_listen, "metrics_listen", lowest_port=0)
        peers: object = self.peers  # a list from TOML becomes a tuple
        if isinstance(peers, list):
            object.__setattr__(self, "peers", tuple(peers))
        elif not isinstance(peers, tuple):
            raise ConfigError(f"peers: {peers!r} is not a list of host:port")
        seen: dict[str, int] = {}
        for position, peer in enumerate(self.peers):
            split_address(peer, f"peers[{position}]")
            if peer in seen:
                raise ConfigError(f"peers[{position}]: {peer!r} is already peers[{seen[peer]}]")
            seen[peer] = position
        if self.discover_peers is not None:
            check_bool("discover_peers", self.discover_peers)
        check_int("agent_port", self.agent_port, 0, MAX_PORT)
        if self.agent_port == 0:
            object.__setattr__(self, "agent_port", listen_port)
        if self.state_dir is not None:  # a string from TOML becomes a Path
            state_dir = check_path("state_dir", self.state_dir, "a directory path")
            object.__setattr__(self, "state_dir", state_dir)

    def _check_advertised(self) -> None:
        """Refuse to advertise ``0.0.0.0`` or ``::``: names are resolved at the start."""
        host, _ = split_address(self.advertised, "advertise", lowest_port=0)
        if not is_unspecified(host):
            return
        if self.advertise is not None:
            raise ConfigError(
                f"advertise: {self.advertise!r} is an unspecified address that no peer can "
                "dial; give an address of this host that the other agents can dial"
            )
        raise ConfigError(
            f"advertise: not set, so peers dial listen {self.listen!r}, which is an "
            "unspecified address that no peer can dial; set advertise to an address of this "
            "host that the other agents can dial (db1.example.net:7400)"
        )

    def _check_timing(self) -> None:
        check_seconds("period_s", self.period_s, 1, 60)
        check_seconds("gtid_interval_s", self.gtid_interval_s, 30, 60)
        check_seconds("executed_interval_s", self.executed_interval_s, 30, 60)
        check_int("silence_periods", self.silence_periods, 1, 1000)
        check_seconds(
            "retention_s", self.retention_s, MIN_RETENTION_S, MAX_RETENTION_S, zero="never purges"
        )
        silence_s = self.silence_periods * self.period_s
        if self.retention_s != 0 and self.retention_s <= silence_s:
            raise ConfigError(
                f"retention_s: {self.retention_s!r} is not longer than silence_periods * "
                f"period_s = {format_number(silence_s)} seconds (0 never purges)"
            )
        check_int(
            "fanout", self.fanout, 0, MAX_FANOUT, accepted=f"0 (every peer) or in 1..{MAX_FANOUT}"
        )
        check_int("pull_fanout", self.pull_fanout, 1, MAX_FANOUT)
        check_seconds("rpc_timeout_s", self.rpc_timeout_s, 0.05, 30)
        if self.rpc_timeout_s >= self.period_s:
            raise ConfigError(
                f"rpc_timeout_s: {self.rpc_timeout_s!r} is not less than "
                f"period_s = {self.period_s!r}"
            )
        check_seconds("flush_interval_s", self.flush_interval_s, 1, 3600)

    def _check_security(self) -> None:
        tls: object = self.tls  # a table from TOML becomes a TlsConfig
        if isinstance(tls, dict):
            tls = TlsConfig(**tls)
            object.__setattr__(self, "tls", tls)
        if tls is not None:
            if not isinstance(tls, TlsConfig):
                raise ConfigError(f"tls: {tls!r} is not a table ([tls])")
            for name in ("cert_file", "key_file", "ca_file"):
                if getattr(tls, name) is None:
                    raise ConfigError(
                        f"tls.{name}: missing; an agent serves with its member's certificate "
                        "and checks its peers' against the group's CA"
                    )
        if self.token_file is not None:  # a string from TOML becomes a Path
            token_file = check_path("token_file", self.token_file)
            object.__setattr__(self, "token_file", token_file)
            read_token(token_file, "token_file")
        if self.sql_password_file is not None:  # a string from TOML becomes a Path
            users_file = check_path("sql_password_file", self.sql_password_file)
            object.__setattr__(self, "sql_password_file", users_file)
            read_sql_users(users_file)
        if self.sql_listen is not None:
            host, _ = split_address(self.sql_listen, "sql_listen", lowest_port=0)
            if self.sql_password_file is None and not is_loopback(host):
                raise ConfigError(
                    f"sql_listen: {self.sql_listen!r} is not a loopback address (127.0.0.0/8, "
                    "::1, localhost); without sql_password_file any client that reaches it "
                    "logs in, so give sql_password_file to listen there"
                )

    @property
    def advertised(self) -> str:
        """The ``host:port`` peers reach this agent at: ``advertise``, else ``listen``."""
        return self.listen if self.advertise is None else self.advertise

    @property
    def state_path(self) -> Path:
        """The member registry's directory: ``state_dir``, else :func:`default_state_dir`.

        The default depends on the environment (``STATE_DIRECTORY``, ``XDG_STATE_HOME``,
        ``HOME``) and the user, read when this is read; never on the working directory.
        """
        if self.state_dir is not None:
            return self.state_dir
        _, port = split_address(self.listen, "listen", lowest_port=0)
        return default_state_dir(port)

    @property
    def discovery_enabled(self) -> bool:
        """Whether peers are discovered from the member's view (``discover_peers`` resolved)."""
        return not self.peers if self.discover_peers is None else self.discover_peers

    @property
    def period_us(self) -> int:
        """``period_s`` in microseconds."""
        return round(self.period_s * 1_000_000)

    @property
    def silence_us(self) -> int:
        """How long an agent may be silent and still count as connected, in microseconds."""
        return self.silence_periods * self.period_us

    @property
    def retention_us(self) -> int:
        """``retention_s`` in microseconds (0: never purge)."""
        return round(self.retention_s * 1_000_000)


def default_state_dir(
    port: int, environ: Mapping[str, str] | None = None, *, root: bool | None = None
) -> Path:
    """The state directory of an agent that listens on ``port`` and has no ``state_dir``.

    It is ``<base>/<port>``, so that the agents of one host (each on its own port) never
    share a registry by accident. The base is, as daemons choose theirs:

    - ``$STATE_DIRECTORY``, which systemd sets for a unit with ``StateDirectory=``
      (systemd.exec(5); of a colon-separated list, the first);
    - else ``/var/lib/grstats`` when running as root;
    - else ``$XDG_STATE_HOME/grstats``, where an unset or relative ``XDG_STATE_HOME`` is
      ``~/.local/state`` (the XDG Base Directory Specification).

    Args:
        port: the agent's listen port (0 when it picks a free one).
        environ: the environment (default: the process's).
        root: whether the process runs as root (default: its effective user id is 0).
    """
    env = os.environ if environ is None else environ
    systemd = env.get("STATE_DIRECTORY", "").split(":")[0]
    if systemd:
        return Path(systemd) / str(port)
    if root if root is not None else os.geteuid() == 0:
        return STATE_BASE_ROOT / str(port)
    xdg = env.get("XDG_STATE_HOME", "")
    if not Path(xdg).is_absolute():
        home = env.get("HOME")
        try:
            xdg = str((Path(home) if home else Path.home()) / ".local" / "state")
        except RuntimeError as exc:  # no $HOME and no passwd entry for the user
            message = "state_dir: no default without a home directory: set state_dir or --state-dir"
            raise ConfigError(message) from exc
    return Path(xdg) / "grstats" / str(port)


def is_unspecified(host: str) -> bool:
    """Whether ``host`` (without brackets) is an unspecified address: ``0.0.0.0``, ``::``.

    Such an address means "every interface" to a server that binds it, and no address to a
    client that dials it, so it is never an address to advertise.
    """
    try:
        address = ipaddress.ip_address(host.partition("%")[0])
    except ValueError:  # a host name: it may resolve to anything
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_unspecified or (mapped is not None and mapped.is_unspecified)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, without brackets) is this machine's loopback."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.partition("%")[0]).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def read_sql_users(path: Path) -> dict[str, str]:
    """Return the accounts of the SQL password file at ``path``: user name -> password.

    Each line is ``user:password`` (split at the first ``:``; surrounding whitespace is
    dropped); blank lines and lines starting with ``#`` are skipped. Called when the config
    loads and again at each login of the SQL endpoint.

    Raises:
        ConfigError: naming ``sql_password_file``, the file and the line number, when the file
            cannot be read, is not UTF-8, holds a line that is not ``user:password`` with both
            parts non-empty (a user name has no whitespace), names a user twice, or holds no
            account. The message never holds a password nor the line's text.
    """
    where = f"sql_password_file: {str(path)!r}"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"sql_password_file: cannot read {str(path)!r}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where} is not UTF-8 text") from exc
    users: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        user, colon, password = entry.partition(":")
        user = user.strip()
        password = password.strip()
        if not colon or not user or not password or any(c.isspace() for c in user):
            raise ConfigError(
                f"{where} line {number} is not user:password (a user name without spaces, "
                "a colon, a non-empty password)"
            )
        if user in users:
            raise ConfigError(f"{where} line {number} names user {user!r} a second time")
        users[user] = password
    if not users:
        raise ConfigError(f"{where} holds no user:password line")
    return users


def load_config(path: Path | None, overrides: Mapping[str, object] | None = None) -> AgentConfig:
    """Read the TOML file at ``path`` (None: no file), apply ``overrides`` and validate.

    Args:
        path: the config file; its keys are :class:`AgentConfig`'s, with the sections
            ``[simulated]`` and ``[mysql]``. Unknown keys are errors, so a typo never passes.
            A relative ``state_dir`` in it is relative to the file's directory.
        overrides: values that beat the file's, by dotted key: ``"listen"``, ``"peers"`` (a
            list, or a comma-separated string), ``"simulated.member_index"``,
            ``"mysql.password_file"``... A None value is skipped (a flag that was not given).
            A relative ``state_dir`` here stays relative to the working directory.

    Raises:
        ConfigError: the file cannot be read or parsed, a key is unknown, a value is of the
            wrong type or out of range, a required key is missing, or the simulated scenario
            does not load; the message starts with the key (``config`` for the file itself).
    """
    data = _read(path) if path is not None else {}
    _check_keys(data)
    state_dir = data.get("state_dir")
    if path is not None and isinstance(state_dir, str) and state_dir.strip():
        # Relative to the file, as the file's author sees it, not to wherever it is run from.
        data["state_dir"] = str(path.absolute().parent / state_dir)
    for key, value in (overrides or {}).items():
        if value is not None:
            _apply(data, key, value)
    if "source" not in data:
        raise ConfigError(f"source: missing; {_MISSING_HINTS['source']}")
    _check_sections(data["source"], [name for name in SOURCES if name in data])
    source = data.pop("source")
    section = data.pop(source)
    for field in fields(_SECTION_CLASSES[source]):
        if field.name not in section and _is_required(field.default, field.default_factory):
            key = f"{source}.{field.name}"
            raise ConfigError(f"{key}: missing; {_MISSING_HINTS[key]}")
    if source == "simulated":
        simulated = SimulatedSourceConfig(**section)
        simulated.sized_scenario()
        return AgentConfig(**data, source=source, simulated=simulated)
    return AgentConfig(**data, source=source, mysql=_mysql_section(section))


_TOP_KEYS = tuple(f.name for f in fields(AgentConfig) if f.name not in SOURCES)
_SECTION_KEYS: dict[str, tuple[str, ...]] = {
    "simulated": tuple(f.name for f in fields(SimulatedSourceConfig)),
    "mysql": tuple(f.name for f in fields(MySQLSourceConfig)),
    "limits": tuple(f.name for f in fields(LimitsConfig)),
    "tls": tuple(f.name for f in fields(TlsConfig)),
    "metrics": tuple(f.name for f in fields(MetricsConfig)),
    "health": tuple(f.name for f in fields(HealthConfig)),
}
_SECTION_CLASSES: dict[str, type] = {
    "simulated": SimulatedSourceConfig,
    "mysql": MySQLSourceConfig,
}


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except OSError as exc:
        raise ConfigError(f"config: cannot read {str(path)!r}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config: {str(path)!r} is not valid TOML: {exc}") from exc


def _check_keys(data: dict[str, Any]) -> None:
    """Raise ConfigError for a key the file should not have (named as the file spells it)."""
    for key, value in data.items():
        if key in _SECTION_KEYS:
            if not isinstance(value, dict):
                raise ConfigError(f"{key}: {value!r} is not a table ([{key}])")
            for inner in value:
                _check_key(f"{key}.{inner}")
        else:
            _check_key(key)


def _check_key(key: str) -> None:
    if key == "mysql.password":
        raise ConfigError(
            "mysql.password: a password is never accepted inline; "
            "use mysql.password_file or mysql.password_env"
        )
    section, _, inner = key.rpartition(".")
    known = _TOP_KEYS if not section else _SECTION_KEYS.get(section, ())
    if inner in known and "." not in section:
        return
    everything = [*_TOP_KEYS, *(f"{s}.{k}" for s, keys in _SECTION_KEYS.items() for k in keys)]
    close = difflib.get_close_matches(key, everything, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise ConfigError(f"{key}: unknown setting{hint}")


def _apply(data: dict[str, Any], key: str, value: object) -> None:
    _check_key(key)
    section, _, inner = key.rpartition(".")
    if key == "peers" and isinstance(value, str):
        value = [peer.strip() for peer in value.split(",") if peer.strip()]
    if not section:
        data[key] = value
        return
    table = data.setdefault(section, {})
    table[inner] = value


def _is_required(default: object, factory: object) -> bool:
    return default is MISSING and factory is MISSING


def _check_sections(source: object, given: list[str]) -> None:
    """Raise ConfigError (naming ``source``) unless exactly ``source``'s section is given."""
    check_choice("source", source, SOURCES)
    if given != [source]:
        found = ", ".join(f"[{name}]" for name in given) or "none"
        raise ConfigError(
            f"source: {source!r} needs the [{source}] section and no other source section "
            f"(given: {found})"
        )


def _mysql_section(table: dict[str, Any]) -> MySQLSourceConfig:
    """Build the MySQL section; its errors (named by field) get the ``mysql.`` prefix."""
    try:
        return MySQLSourceConfig(**table)
    except ConfigError as exc:
        raise ConfigError(f"mysql.{exc}") from exc
    except TypeError as exc:
        raise ConfigError(f"mysql: {exc}") from exc
