"""The ``grstats`` command line: one entry point, one module per subcommand."""

from __future__ import annotations

from agent.cli.main import main

__all__ = ["main"]
