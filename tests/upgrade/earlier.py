"""The earlier release: main at :data:`EARLIER`, extracted once per commit and run beside this checkout.

``git archive`` writes the commit as ``TREE/grstats/...`` into a cache directory outside the
checkout, named by the commit (built once, then reused by every run and worker); its processes
run this checkout's Python, with ``PYTHONPATH=TREE``, so they import the earlier grstats and
this environment's dependencies (docs/upgrades.md says which).
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

#: The release before this one: the last main that landed before protocol revision 5.
EARLIER = "e5928da6c4a2cf42f46873d2e867bb61f4358fc6"
#: The checkout: the repository's root is the package grstats.
ROOT = Path(__file__).resolve().parents[2]


def cache_root() -> Path:
    """Where extracted commits are kept: $XDG_CACHE_HOME (or ~/.cache)/grstats-tests."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "grstats-tests"


def earlier_tree(commit: str = EARLIER) -> Path:
    """The directory that imports grstats of ``commit``: extracted on first use, then reused.

    A missing git or commit (a shallow clone) fails the test: the upgrade proofs need it.
    """
    tree = cache_root() / f"tree-{commit}"
    if (tree / "grstats" / "__init__.py").is_file():
        return tree
    git = shutil.which("git")
    if git is None:
        pytest.fail("git is needed: the upgrade tests extract the earlier release from history")
    found = subprocess.run(
        [git, "-C", str(ROOT), "cat-file", "-e", f"{commit}^{{commit}}"],
        capture_output=True,
        check=False,
        timeout=30,
    )
    if found.returncode != 0:
        pytest.fail(
            f"commit {commit[:12]}, the earlier release, is not in this clone's history "
            "(a shallow clone? fetch main's history: git fetch --unshallow)"
        )
    tree.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{tree.name}-", dir=tree.parent))
    archive = subprocess.run(
        [git, "-C", str(ROOT), "archive", "--format=tar", commit],
        capture_output=True,
        check=True,
        timeout=60,
    )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(staging / "grstats", filter="data")
    try:
        staging.rename(tree)  # atomic: another worker's copy may have won, which is the same
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
    return tree


def earlier_env(tree: Path) -> dict[str, str]:
    """The environment of a process of the earlier release (run with ``cwd=tree``)."""
    return {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}


#: The command that runs ``grstats``: one interpreter for both releases, the tree chosen by
#: ``cwd`` and ``PYTHONPATH``.
GRSTATS = (sys.executable, "-m", "grstats")


def run(tree: Path | None, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``grstats ARGS`` of the earlier release (``tree``) or of this checkout (None)."""
    return subprocess.run(
        [*GRSTATS, *args],
        cwd=tree,
        env=earlier_env(tree) if tree is not None else None,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def popen(tree: Path | None, log: Path, *args: str) -> subprocess.Popen[bytes]:
    """Start ``grstats ARGS`` of the earlier release (``tree``) or this checkout's, output to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [*GRSTATS, *args],
            cwd=tree,
            env=earlier_env(tree) if tree is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        )
