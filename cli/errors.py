"""``CliError``: the one error every subcommand raises for a failure the user can act on."""

from __future__ import annotations


class CliError(Exception):
    """A failure the user can act on: printed as one line to stderr, exit status ``code``.

    Subcommands of every layer (agent, collector, spark) raise it; :func:`grstats.cli.main`
    prints it and returns ``code``.
    """

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code
