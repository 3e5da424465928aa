""".ci/floors.txt pins every runtime dependency to the floor pyproject.toml declares for it."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
FLOORS = ROOT / ".ci" / "floors.txt"
#: The extras that are part of what runs (the spark extra); test, dev and bench are tooling.
RUNTIME_EXTRAS = ("spark",)


def runtime_requirements() -> list[Requirement]:
    """The [project] dependencies and the runtime extras' requirements of pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = list(project["dependencies"])
    for extra in RUNTIME_EXTRAS:
        lines += project["optional-dependencies"][extra]
    return [Requirement(line) for line in lines]


def floor(requirement: Requirement) -> str:
    """The version of the one ``>=`` clause of ``requirement`` (any other clause is an upper bound)."""
    lows = [spec.version for spec in requirement.specifier if spec.operator == ">="]
    assert len(lows) == 1, f"{requirement}: needs exactly one >= floor"
    others = [spec for spec in requirement.specifier if spec.operator not in {">=", "<"}]
    assert not others, f"{requirement}: only >= (and an upper bound <) may be given"
    return lows[0]


def pins() -> dict[str, str]:
    """The pins of .ci/floors.txt by normalized name (each line ``name==version``)."""
    found: dict[str, str] = {}
    for line in FLOORS.read_text(encoding="utf-8").splitlines():
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        requirement = Requirement(text)
        (spec,) = requirement.specifier
        assert spec.operator == "==", f"{text}: a pin is name==version"
        assert not requirement.extras, f"{text}: constraints take no extras"
        assert requirement.marker is None, f"{text}: a pin holds for every platform"
        name = canonicalize_name(requirement.name)
        assert name not in found, f"{requirement.name} is pinned twice"
        found[name] = spec.version
    return found


def test_floors_pin_exactly_the_runtime_dependencies() -> None:
    """The file names each runtime dependency once, and nothing else (test or dev tools)."""
    declared = {canonicalize_name(requirement.name) for requirement in runtime_requirements()}
    assert set(pins()) == declared


def test_each_pin_is_the_declared_floor() -> None:
    """Each pin is the version of the dependency's ``>=`` in pyproject.toml."""
    pinned = pins()
    for requirement in runtime_requirements():
        name = canonicalize_name(requirement.name)
        assert pinned.get(name) == floor(requirement), f"{requirement}: pinned {pinned.get(name)}"
