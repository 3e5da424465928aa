"""The release files the tests of tests/release use: built once, on the worker that runs them.

Each module here marks its tests ``xdist_group("packaging")``, so that one worker builds them.
``release_dist`` holds the sdist and the wheel (built from the sdist) of a copy of this
checkout, built as ``make release`` builds them (SOURCE_DATE_EPOCH set); ``release_binary`` is
the single-file executable ``make dist`` builds, made by the same script
(deploy/release/build-binary.sh) from that wheel, and ``release_bundle``
the directory bundle the same build writes beside it (``BINARY.dir``), which the Debian
package installs. Setting GRSTATS_RELEASE_BINARY to an executable already built uses it (and
the bundle beside it) instead (a rerun while editing).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grstats import __version__

ROOT = Path(__file__).resolve().parents[2]
BUILD_BINARY = ROOT / "deploy" / "release" / "build-binary.sh"


#: The SOURCE_DATE_EPOCH of the builds here, as release.sh takes a commit's time from git
#: (2026-12-01 00:00:00 UTC).
EPOCH = 1_796_083_200


def _build(args: list[str], cwd: Path, timeout: float) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environ |= {"PYTHON": sys.executable, "SOURCE_DATE_EPOCH": str(EPOCH), "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        args, capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd, env=environ
    )
    assert done.returncode == 0, f"{args} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def build_dist(source: Path, out: Path) -> Path:
    """The sdist and the wheel (from the sdist) of ``source`` in ``out``, as make release builds them."""
    _build([sys.executable, "-m", "build", "--outdir", str(out), str(source)], out.parent, 600)
    return out


@pytest.fixture(scope="session")
def release_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout's files (tracked and untracked, as they stand), without git.

    A build in the checkout writes its egg-info there, which test_packaging's own build would
    race. The copy has no git to give its version, so it has what an sdist has instead: a
    PKG-INFO naming the checkout's version.
    """
    source = tmp_path_factory.mktemp("source")
    git = shutil.which("git") or "git"
    archive = subprocess.run(
        [git, "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, archive):
        relative = Path(name.decode())
        if not (ROOT / relative).is_file():
            continue
        (source / relative).parent.mkdir(parents=True, exist_ok=True)
        (source / relative).write_bytes((ROOT / relative).read_bytes())
    (source / "PKG-INFO").write_text(
        f"Metadata-Version: 2.4\nName: grstats\nVersion: {__version__}\n", encoding="utf-8"
    )
    return source


@pytest.fixture(scope="session")
def release_dist(tmp_path_factory: pytest.TempPathFactory, release_source: Path) -> Path:
    """The folder of the sdist and the wheel built from ``release_source`` as make release does."""
    return build_dist(release_source, tmp_path_factory.mktemp("release-dist") / "dist")


@pytest.fixture(scope="session")
def release_binary(tmp_path_factory: pytest.TempPathFactory, release_dist: Path) -> Path:
    """The single-file grstats executable for this machine, as ``make dist`` builds it."""
    given = os.environ.get("GRSTATS_RELEASE_BINARY")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("release")
    (wheel,) = release_dist.glob("grstats-*.whl")
    printed = _build(["bash", str(BUILD_BINARY), str(wheel), str(out)], out, 900)
    return Path(printed.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def release_bundle(release_binary: Path) -> Path:
    """The directory bundle (its executable ``grstats`` and ``_internal/``) of the same build."""
    bundle = release_binary.with_name(release_binary.name + ".dir")
    assert (bundle / "grstats").is_file(), f"build-binary.sh wrote no bundle {bundle}"
    return bundle
