"""The ``grstats`` command: builds the parser and dispatches to a subcommand.

This is the top layer: it sits above :mod:`grstats.agent`, :mod:`grstats.collector` and
:mod:`grstats.spark`, and nothing imports it but ``python -m grstats`` and the ``grstats``
script. Each subcommand lives in its own module of its layer, which exposes
``register(subparsers)`` and sets ``handler`` on its parser: a callable taking the parsed
namespace and returning the exit status. Each raises
:class:`grstats.cli.errors.CliError` for a failure the user can act on.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, NoReturn

from grstats import __version__
from grstats.cli.errors import CliError
from grstats.core.grpc_verbosity import quiet_grpc_core

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence

#: Modules that each add one subcommand, in the order ``--help`` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "grstats.cli.agent",
    "grstats.cli.demo",
    "grstats.cli.doctor",
    "grstats.cli.query",
    "grstats.cli.collector",
    "grstats.cli.spool",
    "grstats.cli.simulate",
    "grstats.cli.version",
    "grstats.cli.spark",
)

#: The module of each command (the agent's adds two): ``grstats COMMAND ...`` imports only
#: that one, so that a long-running agent does not hold every other command's code (the
#: demo's, the doctor's, the collector's, the simulator's for a MySQL member: some 2.5 MB).
COMMANDS: dict[str, str] = {
    "agent": "grstats.cli.agent",
    "members": "grstats.cli.agent",
    "demo": "grstats.cli.demo",
    "doctor": "grstats.cli.doctor",
    "query": "grstats.cli.query",
    "collect": "grstats.cli.collector",
    "spool": "grstats.cli.spool",
    "simulate": "grstats.cli.simulate",
    "version": "grstats.cli.version",
    "spark": "grstats.cli.spark",
}

DESCRIPTION = """\
grstats shows every MySQL Group Replication member's health from wherever you stand.

One agent runs beside each member. It reads its own member (a real MySQL 5.7/8.x server
through performance_schema, or a built-in group simulator) and gossips the rows to the
other agents, so any agent serves all members' replication_group_members and
replication_group_member_stats rows, exactly as MySQL formats them, plus what MySQL
lacks: lag in seconds, members that are down, and how fresh each row is.
"""

EPILOG = """\
exit status: 0 on success, 1 when the work failed, 2 for invalid arguments.
Run 'grstats COMMAND --help' for the options of one command.
"""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Return the top-level parser with every registered subcommand attached.

    With ``command``, one of :data:`COMMANDS`, only its module's subcommands are attached:
    they parse their arguments, and print their help and errors, as in the whole parser.
    """
    import argparse  # noqa: PLC0415  (not for --version)
    import importlib  # noqa: PLC0415

    parser = argparse.ArgumentParser(
        prog="grstats",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-V", "--version", action="version", version=f"grstats {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    modules = (COMMANDS[command],) if command in COMMANDS else COMMAND_MODULES
    for name in modules:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``grstats`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit status.

    ``grstats --version`` (``-V``) answers before any parser or command's module is loaded: it
    is what a script calls to check an install, and it takes the interpreter's start alone.
    """
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] in (["-V"], ["--version"]):  # at once: no parser, no command's module
        print(f"grstats {__version__}")
        return 0
    # gRPC's C core reads GRPC_VERBOSITY once, at import: the subcommands import it below.
    quiet_grpc_core()
    # The first word names the command (an option there, or a mistyped command: every one).
    parser = build_parser(words[0] if words else None)
    args = parser.parse_args(words)
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        build_parser().print_help()  # every command's
        return 2
    try:
        return handler(args)
    except CliError as exc:
        from grstats.core.log import is_journal  # noqa: PLC0415  (only on this path)

        # Under systemd, the journal's priority prefix, so `journalctl -p err` shows it.
        priority = "<3>" if is_journal(sys.stderr) else ""
        print(f"{priority}grstats: error: {exc}", file=sys.stderr)
        return exc.code


#: The commands whose process leaves at once when they return (:func:`script`): one-shot
#: clients of an agent that hold nothing to clean up once their output is out. Their
#: interpreter's own exit (gRPC's threads, every module torn down) took 35-55 ms of a 150-200
#: ms ``grstats query members`` (issue 50: a command line that answers in tens of ms).
QUICK_EXITS = frozenset({"query"})


def script(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``grstats`` program (and ``python -m grstats``): :func:`main`, then the exit.

    After a command of :data:`QUICK_EXITS` the output is flushed and the process leaves
    without the interpreter's teardown (``os._exit``); any other command, and any exception,
    exits as Python does. Tests call :func:`main`, which never leaves the process.
    """
    words = list(sys.argv[1:] if argv is None else argv)
    code = main(words)
    if words[:1] and words[0] in QUICK_EXITS:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:  # a closed pipe (| head): what could be written was
            code = code or 1
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    script()
