"""gRPC's C-core log level: :func:`quiet_grpc_core` turns its own stderr lines off.

gRPC's C core reads ``GRPC_VERBOSITY`` once, when ``grpc`` is imported, so the ``grstats``
command calls :func:`quiet_grpc_core` before it imports anything that imports ``grpc``. This
module imports nothing but the standard library's ``os`` and ``sys``, so that the command can
call it before it knows which of its subcommands runs (:mod:`grstats.core.log` says why the
lines are off, and what grstats logs instead).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, MutableMapping

#: The variable gRPC's C core takes its log level from: ``DEBUG``, ``INFO``, ``ERROR``, ``NONE``.
GRPC_VERBOSITY = "GRPC_VERBOSITY"


def quiet_grpc_core(
    environ: MutableMapping[str, str] | None = None, modules: Mapping[str, object] | None = None
) -> bool:
    """Turn gRPC's C-core log lines off (``GRPC_VERBOSITY=NONE``) unless the user chose a level.

    It works only before ``grpc`` is imported, which is when gRPC reads the variable; after,
    it changes nothing. Child processes inherit the variable.

    Args:
        environ: the environment to set it in (default: the process's).
        modules: the modules imported (default: :data:`sys.modules`).

    Returns:
        Whether it set the variable (false: the user had set it, or ``grpc`` was imported).
    """
    env = os.environ if environ is None else environ
    if env.get(GRPC_VERBOSITY) or "grpc" in (sys.modules if modules is None else modules):
        return False
    env[GRPC_VERBOSITY] = "NONE"
    return True
