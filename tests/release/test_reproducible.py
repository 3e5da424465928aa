"""Two builds of one tree are the same bytes (``make release``): the sdist, the wheel, the bundle.

The sdist and the wheel the other release tests freeze (``python -m build``, SOURCE_DATE_EPOCH
set, as ``make release`` builds them) are built once more here, from the same copy of the
checkout; that takes seconds. PyInstaller's build is not repeated (a minute or more of the step's
budget): what made two of them differ, the dist-info files that name the build environment's
paths, is checked gone from the bundle the other tests use, and ``make release`` twice compares everything
(docs/benchmarks.md). The Debian package's second build is in test_deb.py.
"""

from __future__ import annotations

import hashlib
import tarfile
import zipfile
from typing import TYPE_CHECKING

import pytest

from grstats import __version__
from tests.release.conftest import EPOCH, build_dist

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("packaging")]


@pytest.fixture(scope="module")
def builds(
    release_source: Path, release_dist: Path, tmp_path_factory: pytest.TempPathFactory
) -> list[Path]:
    """The folders of two builds of the same tree: the other release tests' and one more."""
    return [release_dist, build_dist(release_source, tmp_path_factory.mktemp("again") / "dist")]


def test_two_builds_of_a_tree_give_the_same_sdist_and_wheel(builds: list[Path]) -> None:
    """The sdist and the wheel of two builds are byte-identical, and named by the version."""
    first, second = (
        {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in out.iterdir()}
        for out in builds
    )
    assert first == second
    assert set(first) == {
        f"grstats-{__version__}.tar.gz",
        f"grstats-{__version__}-py3-none-any.whl",
    }


def test_the_sdist_is_sorted_dated_and_owned_alike(builds: list[Path]) -> None:
    """Every sdist member is dated SOURCE_DATE_EPOCH, root's, in sorted order; the gzip has no time."""
    (sdist,) = builds[0].glob("*.tar.gz")
    raw = sdist.read_bytes()
    assert int.from_bytes(raw[4:8], "little") == EPOCH  # the gzip header's MTIME
    with tarfile.open(sdist) as archive:
        members = archive.getmembers()
    names = [member.name for member in members]
    assert names == sorted(names)
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members} == {
        (EPOCH, 0, 0, "root", "root")
    }
    assert f"grstats-{__version__}/_version.py" in names
    assert f"grstats-{__version__}/PKG-INFO" in names


def test_the_wheel_holds_its_version_stamped(builds: list[Path]) -> None:
    """The wheel's _version.py is the version as a literal (no git where it is installed)."""
    (wheel,) = builds[0].glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        stamped = archive.read("grstats/_version.py").decode()
        names = archive.namelist()
        dates = {info.date_time for info in archive.infolist()}
    assert f"__version__ = {__version__!r}" in stamped
    assert "git" not in stamped.split('"""')[-1]
    assert "grstats/setup.py" not in names
    assert dates == {(2026, 12, 1, 0, 0, 0)}


def test_the_bundle_holds_nothing_of_the_build_environment(release_bundle: Path) -> None:
    """The metadata of grstats in the bundle lacks RECORD and direct_url.json (the build's paths)."""
    dist_info = release_bundle / "_internal" / f"grstats-{__version__}.dist-info"
    names = {path.name for path in dist_info.iterdir()}
    assert {"METADATA", "entry_points.txt"} <= names
    assert names.isdisjoint({"RECORD", "direct_url.json"}), names
