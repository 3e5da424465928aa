"""Certificates for tests, made by the project's own deploy/tls/make-certs.sh."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

MAKE_CERTS = Path(__file__).parents[1] / "deploy" / "tls" / "make-certs.sh"


def make_certs(directory: Path, *members: str) -> Path:
    """Run make-certs.sh into ``directory`` for ``members`` (NAME=UUID@HOSTS); return it."""
    bash = shutil.which("bash")
    assert bash is not None
    done = subprocess.run(
        [bash, str(MAKE_CERTS), str(directory), *members],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return directory
