"""``grstats`` the program (:func:`grstats.cli.script`): a query leaves at once, the rest exit as Python does."""

from __future__ import annotations

import subprocess
import sys

import pytest

from grstats import cli


class Left(BaseException):
    """Raised where ``os._exit`` would end the process."""


def test_a_query_flushes_its_output_and_leaves_without_the_teardown(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """After ``query ...`` returns 3, its output is flushed and os._exit(3) is called."""
    exits: list[int] = []

    def leave(code: int) -> None:
        exits.append(code)
        raise Left

    def fake_main(words: list[str]) -> int:
        print("a table")
        assert words == ["query", "members", "--node", "h:1"]
        return 3

    monkeypatch.setattr(cli, "main", fake_main)
    monkeypatch.setattr("grstats.cli.os._exit", leave)
    with pytest.raises(Left):
        cli.script(["query", "members", "--node", "h:1"])
    assert exits == [3]
    assert capsys.readouterr().out == "a table\n"


@pytest.mark.parametrize("words", [["spool", "status"], [], ["--version"]])
def test_other_commands_exit_as_python_does(
    monkeypatch: pytest.MonkeyPatch, words: list[str]
) -> None:
    """Any other command (or none) ends with SystemExit of its code, os._exit never called."""
    monkeypatch.setattr(cli, "main", lambda _words: 4)
    monkeypatch.setattr("grstats.cli.os._exit", lambda code: pytest.fail(f"os._exit({code})"))
    with pytest.raises(SystemExit) as exited:
        cli.script(words)
    assert exited.value.code == 4


def test_a_failing_query_through_the_program_says_why_and_exits_1() -> None:
    """`python -m grstats query members` at a port nobody listens on: its error, exit 1."""
    done = subprocess.run(
        [sys.executable, "-m", "grstats", "query", "members", "--node", "127.0.0.1:1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "127.0.0.1:1: unreachable" in done.stderr
