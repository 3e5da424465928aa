"""The system programs tests run (promtool, prometheus, bash, ...): found, or a clear miss."""

from __future__ import annotations

import shutil

from tests.mariadb import missing


def require(program: str, package: str | None = None) -> str:
    """The path of ``program``; fails under CI and skips elsewhere when it is missing.

    ``package`` names the Debian package that brings it, for the message.
    """
    found = shutil.which(program)
    if found is None:
        how = f": install the Debian package {package} (make system-deps)" if package else ""
        missing(f"{program} is not installed{how}")
    assert found is not None
    return found
