"""The ``spark`` extra: pyspark, pyarrow and deltalake, which ``pip install 'grstats[spark]'`` adds.

``pip install grstats`` leaves them out: the agent, the collector and the queries need
neither. ``grstats spark --help`` and argument errors need neither too (the command modules
import them only when a job runs); each job's handler calls :func:`require_spark` first, so
that without the extra it stops with one line saying what to install, not a traceback.
"""

from __future__ import annotations

import importlib

from grstats.cli.errors import CliError

#: The import names of what the extra installs.
MODULES = ("pyspark", "pyarrow", "deltalake")
#: The command that installs them.
INSTALL = "pip install 'grstats[spark]'"


def require_spark() -> None:
    """Import pyspark and pyarrow, or raise CliError (exit 1) saying how to install them.

    When one of them is installed but cannot be imported (a module it needs is missing), the
    message adds the import's error, on the same line.
    """
    for name in MODULES:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            missing = (exc.name or "").partition(".")[0]
            detail = "" if missing in MODULES else f" ({' '.join(str(exc).split())})"
            raise CliError(
                f"grstats spark needs pyspark, pyarrow and deltalake: {INSTALL}{detail}"
            ) from exc
