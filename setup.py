"""The build steps pyproject.toml cannot state: the version from git, and a reproducible sdist.

The version is :mod:`_version`'s (a git tag's, or one naming the commit; an sdist's PKG-INFO
when built from one). The wheel's copy of ``_version.py`` is rewritten to hold it as a literal,
so that an installed grstats, or an executable frozen from it, knows its version without git.
With ``SOURCE_DATE_EPOCH`` set, the sdist is the same bytes at each build of one tree: its
members sorted, dated then, owned by root, the gzip header without a time or a name (the wheel
is already: setuptools dates its members then and sorts them).
"""

from __future__ import annotations

import gzip
import importlib.util
import os
import tarfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent


def _source_version() -> tuple[str, str]:
    """This tree's version and :data:`RELEASE`, from its ``_version.py``."""
    spec = importlib.util.spec_from_file_location("_grstats_version", HERE / "_version.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.__version__, module.RELEASE


VERSION, RELEASE = _source_version()

STAMP = f'''"""The grstats version, stamped by the build (setup.py) from its source tree's."""

RELEASE = {RELEASE!r}
__version__ = {VERSION!r}
'''


class StampedBuildPy(build_py):
    """build_py, then the built ``_version.py`` replaced by the version as a literal.

    The root is the package grstats, so this file would be its module ``grstats.setup``: it is
    left out of the wheel.
    """

    def find_package_modules(self, package: str, package_dir: str) -> list[tuple[str, str, str]]:
        """The package's modules, but this build script."""
        found: list[tuple[str, str, str]] = super().find_package_modules(package, package_dir)
        return [m for m in found if not (package == "grstats" and m[1] == "setup")]

    def run(self) -> None:
        """Build the modules, then stamp the version (not in an editable install: git tells)."""
        super().run()
        if getattr(self, "editable_mode", False):
            return
        stamped = Path(self.build_lib) / "grstats" / "_version.py"
        if stamped.exists():
            stamped.unlink()  # a hard link to the source in some builds: never write through it
            stamped.write_text(STAMP, encoding="utf-8")


def _normalized(member: tarfile.TarInfo, epoch: int) -> tarfile.TarInfo:
    """``member`` as any build makes it: dated ``epoch``, root's, mode 0755 or 0644."""
    member.mtime = epoch
    member.uid = member.gid = 0
    member.uname = member.gname = "root"
    executable = member.isdir() or member.mode & 0o100
    member.mode = 0o755 if executable else 0o644
    return member


def _tarball(base_name: str, base_dir: str, epoch: int) -> str:
    """Write ``base_name``.tar.gz of ``base_dir``, sorted, every member as :func:`_normalized`."""
    top = Path(base_dir)
    names = sorted({top, *top.rglob("*")}, key=lambda path: path.as_posix())
    target = f"{base_name}.tar.gz"
    with (
        Path(target).open("wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=epoch, compresslevel=9) as packed,
        tarfile.open(fileobj=packed, mode="w", format=tarfile.PAX_FORMAT) as archive,
    ):
        for name in names:
            archive.add(name, recursive=False, filter=lambda m: _normalized(m, epoch))
    return target


class ReproducibleSdist(sdist):
    """sdist, its tarball written alike at each build when ``SOURCE_DATE_EPOCH`` is set."""

    def make_archive(  # noqa: PLR0913, PLR0917 - distutils' signature
        self,
        base_name: str,
        format: str,  # noqa: A002 - distutils' name
        root_dir: str | None = None,
        base_dir: str | None = None,
        owner: str | None = None,
        group: str | None = None,
    ) -> str:
        """The tarball :func:`_tarball` writes, or distutils' without a ``SOURCE_DATE_EPOCH``."""
        epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
        if format != "gztar" or not epoch.isdigit() or root_dir is not None or base_dir is None:
            return str(super().make_archive(base_name, format, root_dir, base_dir, owner, group))
        return _tarball(base_name, base_dir, int(epoch))


setup(version=VERSION, cmdclass={"build_py": StampedBuildPy, "sdist": ReproducibleSdist})
