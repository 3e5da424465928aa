"""``grstats agent``: run the agent beside one member; ``grstats members forget``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import fcntl
import gc
import os
import signal
from pathlib import Path
from typing import IO, TYPE_CHECKING

from grstats.agent.advertise import check_advertise
from grstats.agent.config import AgentConfig, load_config
from grstats.agent.metrics_off import NoMetrics
from grstats.agent.registry import RegistryError, SqliteRegistry
from grstats.agent.runtime import Agent
from grstats.cli.errors import CliError
from grstats.cli.security import add_security_arguments
from grstats.core.errors import AgentError, ConfigError
from grstats.core.log import configure_logging, get_logger
from grstats.core.security import Security

if TYPE_CHECKING:
    from grstats.agent.sources.base import StatsSource
    from grstats.cli.types import Subparsers

EPILOG = """\
Flags override the same keys of the config file. Every agent of one simulated group is started
with the same --scenario, --members, --seed, --group-start and --group-name, and its own
--member-index (0..N-1). Two simulated groups of one fleet differ in --group-name (or scenario,
or seed): their group and member UUIDs follow from those three.

examples:
  grstats agent --config deploy/examples/agent-mysql.toml
  grstats agent --config deploy/examples/agent-mysql.toml --sql-listen 127.0.0.1:7406
      then: mysql -h 127.0.0.1 -P 7406 -u grstats \\
                -e 'SELECT * FROM performance_schema.replication_group_members'
  grstats agent --source simulated --scenario steady --members 3 --member-index 0 \\
      --group-start "$(date +%s)" --listen 127.0.0.1:7400 \\
      --peers 127.0.0.1:7400,127.0.0.1:7401,127.0.0.1:7402 --state-dir /tmp/grstats-0

Without --state-dir (or state_dir), the registry lives in $STATE_DIRECTORY/PORT under systemd,
/var/lib/grstats/PORT as root, else ~/.local/state/grstats/PORT (PORT: the listen port). Two
agents never share one: the second is refused.

SIGTERM or Ctrl-C: health turns NOT_SERVING, the registry is flushed, the agent stops within
1 s (calls still running get 0.2 s). SIGHUP: the config file and flags are read again; peers,
discover_peers, agent_port, fanout, pull_fanout, rpc_timeout_s, silence_periods,
gtid_interval_s, executed_interval_s, retention_s and flush_interval_s take effect from the
next period; a change to any other key is logged as needing a restart, and an invalid config
is logged and ignored.
exit status: 0 after a clean stop, 1 when it could not run, 2 for an invalid configuration
(also an advertised address the peers cannot dial).
"""

#: The file in the state directory that the running agent holds locked (and writes its pid to).
LOCK_FILENAME = "agent.lock"

#: How long calls still running at SIGTERM may go on (an exchange or a query takes ms; the
#: peers' push streams never end by themselves, so a longer grace is only a slower stop).
STOP_GRACE_S = 0.2

#: The config keys SIGHUP applies to the running agent: the ones read every period. The others
#: (addresses, the source, TLS, limits, logging, period_s) are read once, at start.
RELOADABLE = (
    "peers",
    "discover_peers",
    "agent_port",
    "fanout",
    "pull_fanout",
    "rpc_timeout_s",
    "silence_periods",
    "gtid_interval_s",
    "executed_interval_s",
    "retention_s",
    "flush_interval_s",
)

#: Flag -> config key (see agent.config.load_config).
OVERRIDES = {
    "listen": "listen",
    "advertise": "advertise",
    "peers": "peers",
    "state_dir": "state_dir",
    "period": "period_s",
    "fanout": "fanout",
    "pull_fanout": "pull_fanout",
    "metrics_listen": "metrics_listen",
    "sql_listen": "sql_listen",
    "sql_password_file": "sql_password_file",
    "source": "source",
    "scenario": "simulated.scenario",
    "member_index": "simulated.member_index",
    "members": "simulated.members",
    "seed": "simulated.seed",
    "group_start": "simulated.group_start_s",
    "group_name": "simulated.group_name",
    "host": "mysql.host",
    "port": "mysql.port",
    "user": "mysql.user",
    "password_file": "mysql.password_file",
    "password_env": "mysql.password_env",
    "log_format": "log_format",
    "log_level": "log_level",
    "tls_cert": "tls.cert_file",
    "tls_key": "tls.key_file",
    "tls_ca": "tls.ca_file",
    "tls_require_client_cert": "tls.require_client_cert",
    "token_file": "token_file",
    "group_label": "group_label",
}


def register(subparsers: Subparsers) -> None:
    """Add the ``agent`` and ``members`` subcommands."""
    parser = subparsers.add_parser(
        "agent",
        help="run the agent beside one member",
        description="Read one member every period, exchange its rows with the other members' "
        "agents over gRPC and serve every member's rows (Query service, health, reflection).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--config", type=Path, metavar="FILE", help="TOML config (see deploy/examples)"
    )
    parser.add_argument(
        "--listen", metavar="HOST:PORT", help="address to serve on (default 127.0.0.1:7400)"
    )
    parser.add_argument(
        "--advertise", metavar="HOST:PORT", help="address other agents reach this one at"
    )
    parser.add_argument(
        "--peers", metavar="HOST:PORT,...", help="the other agents (default: discovered)"
    )
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="where the member registry lives (default: by the listen port, see below)",
    )
    parser.add_argument(
        "--metrics-listen",
        metavar="HOST:PORT",
        help="serve Prometheus /metrics here (every member's rows and the agent's own figures)",
    )
    parser.add_argument(
        "--sql-listen",
        metavar="HOST:PORT",
        help="also serve every member's rows over the MySQL protocol here, read-only "
        "(performance_schema.replication_group_members and ..._member_stats, and schema "
        "grstats), for mysql clients and exporters; e.g. 127.0.0.1:7406. Only a loopback "
        "address unless --sql-password-file is given (default: not served)",
    )
    parser.add_argument(
        "--sql-password-file",
        metavar="FILE",
        help="accounts of --sql-listen, one user:password per line (# comments); read again "
        "at each login, so edits need no restart",
    )
    parser.add_argument(
        "--period", type=float, metavar="SECONDS", help="seconds between exchanges, 1-60"
    )
    parser.add_argument(
        "--fanout", type=int, metavar="N", help="peers pushed to per period, 0 for all (default)"
    )
    parser.add_argument(
        "--pull-fanout",
        type=int,
        metavar="N",
        help="peers push-pulled with per period, for relay (default 1)",
    )
    parser.add_argument("--source", choices=("simulated", "mysql"), help="what the agent reads")
    simulated = parser.add_argument_group("--source simulated")
    simulated.add_argument("--scenario", metavar="NAME|PATH", help="built-in scenario or TOML file")
    simulated.add_argument(
        "--member-index", type=int, metavar="I", help="this agent's member, from 0"
    )
    simulated.add_argument("--members", type=int, metavar="N", help="group size, 1-9")
    simulated.add_argument("--seed", type=int, metavar="K", help="the group's seed")
    simulated.add_argument(
        "--group-start", type=float, metavar="UNIX_SECONDS", help="when the group started"
    )
    simulated.add_argument(
        "--group-name",
        metavar="NAME",
        help="the simulated group's name (orders): its UUIDs follow from it, the scenario and "
        "the seed, and it is its label, as an InnoDB Cluster's name is (default: none)",
    )
    mysql = parser.add_argument_group("--source mysql")
    mysql.add_argument("--host", metavar="HOST", help="the member's MySQL server")
    mysql.add_argument("--port", type=int, metavar="PORT", help="its port (default 3306)")
    mysql.add_argument(
        "--user", metavar="USER", help="an account with SELECT on performance_schema"
    )
    mysql.add_argument("--password-file", metavar="FILE", help="file holding the password")
    mysql.add_argument(
        "--password-env", metavar="VAR", help="environment variable holding the password"
    )
    parser.add_argument(
        "--log-format", choices=("auto", "json", "console"), help="auto: console on a terminal"
    )
    parser.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        help="least severe level logged (default info)",
    )
    parser.add_argument(
        "--group-label",
        metavar="NAME",
        help="the group's name for people (orders), shown beside its UUID everywhere, where "
        "the member has no InnoDB Cluster metadata (its cluster_name wins)",
    )
    add_security_arguments(parser, agent=True)
    parser.set_defaults(handler=run_agent)

    members = subparsers.add_parser(
        "members",
        help="manage the registry of members an agent remembers",
        description="Manage the member registry in an agent's state directory. The agent may "
        "be running: it notices at its next registry flush (every flush_interval_s, 5 s by "
        "default) and drops the member from what it serves. A member still in some member's "
        "Group Replication view comes back: forget members that left the group.",
    )
    actions = members.add_subparsers(title="actions", metavar="ACTION")
    forget = actions.add_parser("forget", help="forget a member that left for good")
    forget.add_argument("uuid", metavar="UUID", help="the member's server_uuid")
    forget.add_argument(
        "--state-dir", required=True, metavar="DIR", help="the agent's state directory"
    )
    forget.set_defaults(handler=run_forget)
    members.set_defaults(handler=lambda _args: _usage(members))


def _usage(parser: argparse.ArgumentParser) -> int:
    """Print ``parser``'s help (a command given without its action) and exit 2."""
    parser.print_help()
    return 2


def config_from(args: argparse.Namespace) -> AgentConfig:
    """Return the config of ``args``: the file, then the flags given."""
    overrides = {
        key: getattr(args, flag)
        for flag, key in OVERRIDES.items()
        if getattr(args, flag) is not None
    }
    try:
        return load_config(args.config, overrides)
    except ConfigError as exc:
        raise CliError(str(exc), code=2) from exc


def build_source(config: AgentConfig) -> StatsSource:
    """Return the source the config names."""
    if config.source == "simulated":
        assert config.simulated is not None
        return config.simulated.build()
    assert config.mysql is not None
    # Imported here: the MySQL driver loads only for an agent that reads a real member.
    from grstats.agent.sources.mysql import MySQLSource  # noqa: PLC0415

    return MySQLSource(config.mysql)


def run_agent(args: argparse.Namespace) -> int:
    """Run the agent until SIGTERM or Ctrl-C."""
    config = config_from(args)
    problem = check_advertise(config)
    if problem is not None:  # a DNS that does not answer may answer at the next start
        raise CliError(problem.message, code=1 if problem.temporary else 2)
    configure_logging(config.log_format, config.log_level)
    state_dir = config.state_path
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        with lock_state_dir(state_dir):
            get_logger().info("state_dir_locked", state_dir=str(state_dir))
            asyncio.run(_serve(config, state_dir, args))
    except (AgentError, OSError) as exc:
        raise CliError(str(exc)) from exc
    return 0


def lock_state_dir(state_dir: Path) -> IO[str]:
    """Lock ``state_dir`` for this process (a lock on its agent.lock); close the file to free it.

    The lock is ``flock(2)``'s, so it ends with the process, also when it is killed.

    Raises:
        CliError: another process holds it (exit status 1, naming ``state_dir``, and the
            holder's pid when it wrote one).
    """
    file = (state_dir / LOCK_FILENAME).open("a+", encoding="utf-8")
    try:
        fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        file.seek(0)
        holder = file.read().strip()
        file.close()
        pid = f" (pid {holder})" if holder.isdecimal() else ""
        raise CliError(
            f"state_dir: {str(state_dir)!r} is in use by another agent{pid}; give each agent "
            "its own state_dir (--state-dir)"
        ) from exc
    file.seek(0)
    file.truncate()
    file.write(f"{os.getpid()}\n")
    file.flush()
    return file


def reload_config(agent: Agent, args: argparse.Namespace) -> None:
    """SIGHUP: read the config file and ``args`` again; apply the :data:`RELOADABLE` keys.

    Logs ``config_reloaded`` with the keys changed, a warning ``config_reload_needs_restart``
    naming the other keys that changed (they keep their values), or an error
    ``config_reload_failed`` when the new config is invalid (the agent goes on as it was).
    """
    log = get_logger()
    current = agent.config
    try:
        fresh = config_from(args)
        changed = {
            key: getattr(fresh, key)
            for key in RELOADABLE
            if getattr(fresh, key) != getattr(current, key)
        }
        updated = dataclasses.replace(current, **changed)
    except (CliError, ConfigError) as exc:
        log.error("config_reload_failed", error=str(exc))  # noqa: TRY400  (a bad file: no traceback)
        return
    agent.config = updated
    log.info("config_reloaded", changed=sorted(changed))
    ignored = [
        field.name
        for field in dataclasses.fields(fresh)
        if field.name not in RELOADABLE
        and getattr(fresh, field.name) != getattr(current, field.name)
    ]
    if ignored:
        log.warning("config_reload_needs_restart", keys=ignored)


async def _serve(config: AgentConfig, state_dir: Path, args: argparse.Namespace) -> None:
    agent = Agent(
        config,
        build_source(config),
        registry=SqliteRegistry.in_directory(state_dir),
        logger=get_logger(),
        security=Security.from_files(config.tls, config.token_file),
        # Without /metrics nothing is counted, and prometheus-client is never imported.
        figures=None if config.metrics_listen else NoMetrics(),
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGHUP, reload_config, agent, args)
    await agent.start()
    # What start-up allocated lives as long as the process: take it out of the collector's
    # sight, so that the full collections of a long-running agent scan only what it makes
    # while it runs (each one otherwise pauses the event loop, and every query waiting on it).
    gc.collect()
    gc.freeze()
    try:
        await stop.wait()
    finally:
        with contextlib.suppress(asyncio.CancelledError):
            await agent.stop(grace_s=STOP_GRACE_S)


def run_forget(args: argparse.Namespace) -> int:
    """Remove one member from the registry in ``--state-dir``."""
    registry = SqliteRegistry.in_directory(args.state_dir)
    try:
        forgotten = registry.forget(args.uuid)
    except RegistryError as exc:
        raise CliError(str(exc)) from exc
    finally:
        registry.close()
    if not forgotten:
        raise CliError(f"UUID: {args.uuid} is not in the registry in {args.state_dir}")
    print(f"forgot {args.uuid} (a running agent drops it at its next flush)")
    return 0
