"""The README's examples run as written."""

from __future__ import annotations

import doctest
from pathlib import Path

README = Path(__file__).parent.parent / "README.md"


def test_readme_examples_run() -> None:
    """Every >>> example in README.md gives the output the README shows."""
    failures, attempted = doctest.testfile(str(README), module_relative=False, verbose=False)
    assert attempted > 0
    assert failures == 0


def test_readme_shows_the_two_commands() -> None:
    """The README gives the newcomer's two commands: make demo and make test."""
    text = README.read_text(encoding="utf-8")
    assert "make demo" in text
    assert "make test" in text
