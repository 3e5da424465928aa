"""The grstats command line: help, version, exit statuses, and the installed console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grstats import __version__
from grstats.cli import main
from tests.inprocess import run_main


def test_help_explains_the_product(capsys: pytest.CaptureFixture[str]) -> None:
    """--help says what grstats is and lists the commands, then exits 0."""
    with pytest.raises(SystemExit) as caught:
        main(["--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: grstats")
    assert "Group Replication" in out
    assert "replication_group_member_stats" in out
    assert "version" in out
    assert "exit status" in out


def test_no_command_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    """Running grstats with no command shows the help and exits 2 (usage error)."""
    assert main([]) == 2
    assert "usage: grstats" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["members", "spark"])
def test_command_without_its_action_prints_its_help_and_fails(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A command that needs an action, given none, prints its own help and exits 2."""
    assert main([command]) == 2
    assert f"usage: grstats {command}" in capsys.readouterr().out


def test_unknown_command_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown command is a usage error: exit status 2 and a message naming it."""
    with pytest.raises(SystemExit) as caught:
        main(["frobnicate"])
    assert caught.value.code == 2
    assert "frobnicate" in capsys.readouterr().err


def test_version_text(capsys: pytest.CaptureFixture[str]) -> None:
    """The version command prints the package version."""
    assert main(["version"]) == 0
    assert capsys.readouterr().out == f"grstats {__version__}\n"


def test_version_json_for_scripts(capsys: pytest.CaptureFixture[str]) -> None:
    """The version command with --format json --verbose gives library versions for scripts."""
    assert main(["version", "--format", "json", "--verbose"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["grstats"] == __version__
    assert set(found) >= {"python", "grpcio", "protobuf", "msgpack", "structlog", "pyspark"}
    assert "not installed" not in found.values()


def test_an_unknown_format_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """An option value argparse refuses is a usage error: exit status 2 naming the value."""
    done = run_main(["version", "--format", "xml"], capsys)
    assert done.returncode == 2
    assert "xml" in done.stderr


def test_installed_console_script() -> None:
    """The grstats script installed by pyproject runs: the version command, as a process."""
    script = Path(sys.executable).parent / "grstats"
    assert script.exists(), "grstats is not installed in this environment: run make install"
    version = subprocess.run(
        [script, "version"], capture_output=True, text=True, check=True, timeout=60
    )
    assert version.stdout == f"grstats {__version__}\n"
