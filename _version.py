"""The grstats version: a release's tag's, and between tags one that names the commit.

A commit tagged ``v0.2.0`` is version ``0.2.0``. Any other commit is a development version of
the next release that names it: ``0.2.1.dev12+g0d30b06`` is 12 commits after ``v0.2.0``, at
commit ``0d30b06``; with no tag reachable (a clone without tags), the next release is
:data:`RELEASE` and the count is of every commit from the first. The version is the commit's:
uncommitted changes do not show in it (``make release`` refuses a modified tree). Where the
version is read from:

* an installed wheel, or an executable frozen from one: this module, rewritten by the build
  (setup.py) to hold the version as a literal;
* a git checkout (an editable install): git, so that it is never stale after a commit. The
  commit is read from ``.git``'s files, and ``git describe`` runs once a commit (or a change of
  the tags): its answer is kept in ``__pycache__/grstats-version.txt`` beside this file;
* an unpacked sdist: its PKG-INFO;
* a ``git archive`` of a commit: the line git fills in below (.gitattributes' export-subst).
"""

from __future__ import annotations

import re
from pathlib import Path

#: The release this tree is, or leads to while no tag says a later one. Raise it when the next
#: release is to be a minor or a major one (a patch release follows from the last tag alone).
RELEASE = "0.1.0"

#: Filled in by ``git archive`` (export-subst): the commit and its description.
_ARCHIVE = "$Format:%h %(describe:tags=true,match=v[0-9]*)$"

_ROOT = Path(__file__).resolve().parent
_DESCRIBED = re.compile(
    r"(?:v(?P<tag>[0-9][^-]*)-(?P<distance>[0-9]+)-g)?(?P<commit>[0-9a-f]{7,40})"
)
#: Where a checkout keeps the version git gave for its commit.
_CACHE = Path("__pycache__", "grstats-version.txt")
_NUMERIC = re.compile(r"[0-9]+(?:\.[0-9]+)*")


def compose(tag: str | None, distance: int, commit: str) -> str:
    """The version of ``commit``, ``distance`` commits after the tag ``v{tag}`` (or none)."""
    if tag is not None and distance == 0:
        return tag
    base = RELEASE
    if tag is not None and _NUMERIC.fullmatch(tag):
        parts = [int(part) for part in tag.split(".")]
        following = [*parts[:-1], parts[-1] + 1]
        if following > [int(part) for part in RELEASE.split(".")]:
            base = ".".join(map(str, following))
    return f"{base}.dev{distance}+g{commit}"


def from_description(described: str, count: int | None) -> str:
    """The version a ``git describe --long --always`` line gives.

    ``count`` is the number of commits up to this one, for a description without a tag.
    """
    found = _DESCRIBED.fullmatch(described.strip())
    if found is None:
        raise ValueError(f"not a description of a commit: {described!r}")
    tag = found["tag"]
    distance = int(found["distance"]) if tag is not None else (count or 0)
    return compose(tag, distance, found["commit"])


def from_git(root: Path) -> str | None:
    """The version of the checkout at ``root``, from git; None if git cannot tell."""
    import os  # noqa: PLC0415 - only a checkout pays for these
    import shutil  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    git = shutil.which("git", path=os.environ.get("PATH") or os.defpath)
    if git is None:
        return None
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}

    def git_out(*args: str) -> str | None:
        try:
            done = subprocess.run(  # noqa: S603 - git, with fixed arguments
                [git, "-C", str(root), *args],
                capture_output=True,
                text=True,
                check=False,
                env=environ,
                timeout=30,
            )
        except OSError:
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    described = git_out(
        "describe", "--tags", "--match", "v[0-9]*", "--long", "--always", "--abbrev=7"
    )
    if described is None:
        return None
    count = None
    if not described.startswith("v"):
        counted = git_out("rev-list", "--count", "HEAD")
        count = int(counted) if counted and counted.isdigit() else None
    return from_description(described, count)


def from_pkg_info(path: Path) -> str | None:
    """The ``Version:`` of a PKG-INFO (an sdist's), or None without one."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    found = re.search(r"^Version: *(\S+)", text, re.MULTILINE)
    return found[1] if found else None


def from_archive(filled: str) -> str | None:
    """The version of a ``git archive``'s commit, from :data:`_ARCHIVE` as git filled it in."""
    if filled.startswith("$Format"):
        return None
    commit, _, described = filled.partition(" ")
    found = re.fullmatch(r"v(.+)-([0-9]+)-g[0-9a-f]+", described)
    if found is not None:
        return compose(found[1], int(found[2]), commit[:7])
    if described.startswith("v"):
        return compose(described[1:], 0, commit[:7])
    return compose(None, 0, commit[:7])  # no tag, no history: the count is unknown


def _head(git_dir: Path) -> str | None:
    """The commit ``git_dir``'s HEAD names, read from its files; None if they do not say."""
    try:
        head = (git_dir / "HEAD").read_text(encoding="ascii").strip()
        if not head.startswith("ref: "):
            return head
        ref = head.removeprefix("ref: ")
        loose = git_dir / ref
        if loose.is_file():
            return loose.read_text(encoding="ascii").strip()
        for line in (git_dir / "packed-refs").read_text(encoding="ascii").splitlines():
            if line.endswith(f" {ref}"):
                return line.split(" ")[0]
    except (OSError, UnicodeDecodeError):
        return None
    return None


def _tags_state(git_dir: Path) -> str:
    """What changes when a tag is made or removed: the times of the files that hold tags."""
    times = []
    for path in (git_dir / "packed-refs", git_dir / "refs" / "tags"):
        try:
            times.append(str(path.stat().st_mtime_ns))
        except OSError:
            times.append("-")
    return " ".join(times)


def from_checkout(root: Path) -> str | None:
    """The version of the git checkout at ``root``: kept from an earlier ask, or git's."""
    git_dir = root / ".git"
    head = _head(git_dir) if git_dir.is_dir() else None
    if head is None:
        return from_git(root)
    key = f"{head} {_tags_state(git_dir)} "
    cache = root / _CACHE
    try:
        kept = cache.read_text(encoding="utf-8")
    except OSError:
        kept = ""
    if kept.startswith(key) and kept.endswith("\n"):
        return kept.removeprefix(key).strip()
    found = from_git(root)
    if found is not None:
        try:
            cache.parent.mkdir(exist_ok=True)
            partial = cache.with_name(f"{cache.name}.{id(found)}.tmp")
            partial.write_text(f"{key}{found}\n", encoding="utf-8")
            partial.replace(cache)
        except OSError:
            pass  # a read-only checkout asks git each time
    return found


def find(root: Path = _ROOT) -> str:
    """The version of the source tree at ``root`` (a checkout, an sdist, an archive)."""
    if (root / ".git").exists():
        found = from_checkout(root)
        if found is not None:
            return found
    return from_pkg_info(root / "PKG-INFO") or from_archive(_ARCHIVE) or f"{RELEASE}+unknown"


#: This grstats' version (PEP 440).
__version__ = find()
