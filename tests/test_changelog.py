"""CHANGELOG.md: Keep a Changelog's form, and each release's versions as the code defines them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHANGELOG = ROOT / "CHANGELOG.md"

#: Each row of a release's table of versions, and the constant that defines it.
VERSIONS = {
    "protocol revision": ("core/build.py", "PROTOCOL_REVISION"),
    "member registry: tables": ("agent/registry/sqlite.py", "SCHEMA_VERSION"),
    "member registry: records": ("agent/registry/sqlite.py", "RECORD_VERSION"),
    "collector spool records": ("collector/records.py", "SCHEMA_VERSION"),
    "Spark table commit log": ("collector/table_log.py", "LOG_FORMAT"),
    "Spark rollups": ("spark/rollup_settings.py", "ROLLUP_VERSION"),
}
#: Keep a Changelog 1.1.0's kinds of change.
KINDS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
#: A row of a table of versions.
ROW = r"^\| ([^|]+?) \| (\d+) \|$"


def constant(path: str, name: str) -> object:
    """The value a module assigns to ``name`` at its top level, read from its source."""
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(target, ast.Name) and target.id == name for target in targets):
            assert isinstance(node, ast.Assign)
            return ast.literal_eval(node.value)
    raise AssertionError(f"{path} assigns no {name}")


def sections() -> dict[str, str]:
    """Each release's section by its heading (``[Unreleased]``, ``[0.2.0] - 2027-01-31``), in order."""
    found = re.split(
        r"^## (\[[^\]]+\].*)\n", CHANGELOG.read_text(encoding="utf-8"), flags=re.MULTILINE
    )
    return dict(zip(found[1::2], found[2::2], strict=True))


def table(text: str) -> dict[str, int]:
    """A section's table of versions: each row's name and number."""
    return {row: int(value) for row, value in re.findall(ROW, text, flags=re.MULTILINE)}


def test_the_newest_versions_stated_are_the_codes() -> None:
    """The newest section with a table ([Unreleased], else the last release) states the code's."""
    found = sections()
    assert next(iter(found)) == "[Unreleased]"
    newest = next(table(text) for text in found.values() if table(text))
    assert newest == {row: constant(path, name) for row, (path, name) in VERSIONS.items()}


def test_every_release_states_its_versions_and_kinds_of_change() -> None:
    """Each release has the whole table and only Keep a Changelog's kinds of change."""
    for name, text in sections().items():
        released = re.fullmatch(r"\[\d+\.\d+\.\d+\] - \d{4}-\d\d-\d\d", name)
        assert name == "[Unreleased]" or released, name
        if released or table(text):
            assert set(table(text)) == set(VERSIONS), name
        assert set(re.findall(r"^### (.+)$", text, flags=re.MULTILINE)) <= KINDS, name
