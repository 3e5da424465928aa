"""``grstats doctor``: check one agent's set-up; print the checklist, each failure with its fix."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from grstats.agent import doctor
from grstats.agent.doctor.peers import DEFAULT_MAX_OFFSET_S
from grstats.agent.doctor.run import DEFAULT_TIMEOUT_S
from grstats.cli.errors import CliError
from grstats.core.errors import ConfigError

if TYPE_CHECKING:
    from grstats.agent.doctor import Check
    from grstats.cli.types import Subparsers

DESCRIPTION = """\
Check everything one agent needs, as its config describes it, and print a checklist: each
line is ok, failed (followed by its fix), a warning, or skipped (a check that depends on one
that failed, or that does not apply). Run it on the agent's host, as the agent's user, before
starting the agent or while it runs.
"""

EPILOG = """\
checks, in order:
  config        the file loads and every key is valid (else nothing more is checked)
  state_dir     the state directory is writable, or can be created
  file:KEY      each secret file (mysql.password_file, token_file, sql_password_file,
                tls.key_file) is readable, and no other user may read or write it
  advertise     the peers can dial the advertised address
  port.KEY      listen, metrics_listen and sql_listen are free, or held by this agent
  mysql.*       one read as the agent makes it: the login (password), the privileges (the
                GRANT to run), performance_schema, Group Replication running, and the
                member's server_uuid; skipped for source = "simulated"
  tls.certificate  this agent's certificate: signed by tls.ca_file, names the advertised
                host and the member read
  peer:HOST:PORT   each peer (given, or discovered from the member's view): reachable, the
                TLS handshake, the identity in its certificate, the token accepted
  clock:HOST:PORT  each peer's clock offset, under --max-clock-offset

Each check waits at most --timeout (the MySQL read: its connect and its queries each), and the
peers are checked at once, so a run takes a few times --timeout at most, peers down included.

exit status: 0 when no check failed (warnings and skipped checks allowed), 1 when one
failed, 2 for invalid arguments (such as a config file that does not exist).
examples:
  grstats doctor --config /etc/grstats/agent.toml
  grstats doctor --config /etc/grstats/agent.toml --format json
"""


def register(subparsers: Subparsers) -> None:
    """Add the ``doctor`` subcommand."""
    parser = subparsers.add_parser(
        "doctor",
        help="check an agent's set-up: config, ports, MySQL, TLS, peers, clocks",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--config", required=True, type=Path, metavar="FILE", help="the agent's TOML config"
    )
    same = parser.add_argument_group(
        "the agent's own flags",
        "give these as the agent is started with them (the Kubernetes manifest passes the "
        "pod's --advertise and certificate): they beat the config file, as for the agent",
    )
    same.add_argument("--advertise", metavar="HOST:PORT", help="the address peers reach it at")
    same.add_argument("--tls-cert", metavar="FILE", help="its certificate, PEM")
    same.add_argument("--tls-key", metavar="FILE", help="the certificate's private key, PEM")
    parser.add_argument(
        "--format",
        choices=("table", "json"),
        default="table",
        help="table for people (default), json for scripts",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help="seconds each check may wait: a connect, a read, a call "
        f"(default {DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--max-clock-offset",
        type=float,
        default=DEFAULT_MAX_OFFSET_S,
        metavar="S",
        help="the largest clock offset to a peer that passes: APPLIER_LAG_SECONDS compares "
        f"two members' clocks, so the offset goes into it (default {DEFAULT_MAX_OFFSET_S:g})",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Check the set-up and print the checklist; 1 when a check failed."""
    path: Path = args.config
    if not path.is_file():
        reason = "does not exist" if not path.exists() else "is not a file"
        raise CliError(f"--config: {str(path)!r} {reason}", code=2)
    options = _options(args)
    overrides = {
        key: value
        for key, value in (
            ("advertise", args.advertise),
            ("tls.cert_file", args.tls_cert),
            ("tls.key_file", args.tls_key),
        )
        if value is not None
    }
    first, config = doctor.check_config(path, overrides)
    checks: list[Check] = [first]
    if config is None:
        checks += doctor.not_checked("the config is not valid")
    else:
        checks += asyncio.run(doctor.examine(config, options))
    if args.format == "json":
        print(doctor.render_json(checks), end="")
    else:
        colour = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        print(doctor.render_table(checks, colour=colour), end="")
    return 0 if doctor.passed(checks) else 1


def _options(args: argparse.Namespace) -> doctor.DoctorOptions:
    """The options of the flags; CliError (exit 2) names the flag of a bad value."""
    try:
        return doctor.DoctorOptions(
            timeout_s=args.timeout, max_clock_offset_s=args.max_clock_offset
        )
    except ConfigError as exc:
        text = str(exc)
        for field, flag in (
            ("timeout_s", "--timeout"),
            ("max_clock_offset_s", "--max-clock-offset"),
        ):
            if text.startswith(f"{field}:"):
                text = flag + text[len(field) :]
        raise CliError(text, code=2) from exc
