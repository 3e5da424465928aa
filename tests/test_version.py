"""The version comes from git: a tag's, or between tags one naming the commit, never stale."""

from __future__ import annotations

import importlib.util
import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from grstats import __version__, _version
from grstats.cli.version import versions

if TYPE_CHECKING:
    from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
GIT = shutil.which("git") or "git"


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` as a fixed author at a fixed time; return what it printed."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    environ |= {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_AUTHOR_DATE": "2026-12-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-12-01T00:00:00Z",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(
        [GIT, "-C", str(repo), *args], capture_output=True, text=True, check=True, env=environ
    )
    return done.stdout.strip()


def commit(repo: Path, name: str) -> str:
    """Commit a new file ``name``; return the commit's 7-digit hash."""
    (repo / name).write_text(name, encoding="utf-8")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", name)
    return git(repo, "rev-parse", "--short=7", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository holding this tree's _version.py and .gitattributes, in one commit."""
    git(tmp_path, "init", "-q", "-b", "main")
    shutil.copy(ROOT / "_version.py", tmp_path / "_version.py")
    shutil.copy(ROOT / ".gitattributes", tmp_path / ".gitattributes")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "first")
    return tmp_path


def load(path: Path) -> ModuleType:
    """The module ``path`` is, imported afresh (as setup.py loads it at a build)."""
    spec = importlib.util.spec_from_file_location(f"version_under_test_{id(path)}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("tag", "distance", "expected"),
    [
        pytest.param("0.2.0", 0, "0.2.0", id="tagged"),
        pytest.param("0.2.0", 12, "0.2.1.dev12+g0d30b06", id="after-a-tag"),
        pytest.param(None, 12, f"{_version.RELEASE}.dev12+g0d30b06", id="no-tag"),
        pytest.param("0.0.1", 3, f"{_version.RELEASE}.dev3+g0d30b06", id="older-tag-than-release"),
        pytest.param("0.2.0rc1", 2, f"{_version.RELEASE}.dev2+g0d30b06", id="pre-release-tag"),
    ],
)
def test_compose(tag: str | None, distance: int, expected: str) -> None:
    """A tagged commit is the tag's version; any other, the next release's .devN naming it."""
    assert _version.compose(tag, distance, "0d30b06") == expected


def test_a_description_needs_a_commit() -> None:
    """What is not ``git describe``'s output is refused, not turned into a version."""
    with pytest.raises(ValueError, match="not a description"):
        _version.from_description("v0.1.0-x", None)


def test_a_checkout_is_its_commits_version_and_never_stale(repo: Path) -> None:
    """Without a tag the count is of every commit; a tag, and each commit after, shows at once."""
    first = git(repo, "rev-parse", "--short=7", "HEAD")
    assert _version.from_checkout(repo) == f"{_version.RELEASE}.dev1+g{first}"
    second = commit(repo, "b")
    assert _version.from_checkout(repo) == f"{_version.RELEASE}.dev2+g{second}"
    git(repo, "tag", "v0.3.0")
    assert _version.from_checkout(repo) == "0.3.0"
    third = commit(repo, "c")
    assert _version.from_checkout(repo) == f"0.3.1.dev1+g{third}"
    git(repo, "pack-refs", "--all")
    assert _version.from_checkout(repo) == f"0.3.1.dev1+g{third}"
    (repo / "b").write_text("changed", encoding="utf-8")
    assert load(repo / "_version.py").__version__ == f"0.3.1.dev1+g{third}"


def test_a_checkout_asks_git_once_a_commit(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The version git gave for a commit is kept: the next process reads it without git."""
    expected = _version.from_checkout(repo)
    monkeypatch.setattr(_version, "from_git", lambda root: pytest.fail(f"asked git in {root}"))
    assert _version.from_checkout(repo) == expected


def test_an_archive_of_a_commit_knows_its_version(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``git archive`` fills in _version.py (export-subst), so its tree needs no git."""
    git(repo, "tag", "v0.3.0")
    after = commit(repo, "b")
    out = tmp_path_factory.mktemp("archive")
    packed = subprocess.run(
        [GIT, "-C", str(repo), "archive", "--format=tar", "HEAD"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(packed)) as archive:
        archive.extractall(out, filter="data")
    assert not (out / ".git").exists()
    assert load(out / "_version.py").__version__ == f"0.3.1.dev1+g{after}"


def test_an_sdist_tree_reads_its_pkg_info(tmp_path: Path) -> None:
    """An unpacked sdist (no git, a PKG-INFO) is the version its PKG-INFO says."""
    shutil.copy(ROOT / "_version.py", tmp_path / "_version.py")
    (tmp_path / "PKG-INFO").write_text(
        "Metadata-Version: 2.4\nName: grstats\nVersion: 0.4.0.dev7+g1234567\n", encoding="utf-8"
    )
    assert load(tmp_path / "_version.py").__version__ == "0.4.0.dev7+g1234567"


def test_this_checkout_shows_its_commit() -> None:
    """This tree's version names its commit (or is its tag's), and ``grstats version`` says it."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the version is its PKG-INFO's or its archive's")
    head = git(ROOT, "rev-parse", "--short=7", "HEAD")
    tags = git(ROOT, "tag", "--points-at", "HEAD", "--list", "v[0-9]*").split()
    assert __version__.endswith(f"+g{head}") or f"v{__version__}" in tags
    assert versions(verbose=False) == {"grstats": __version__}
