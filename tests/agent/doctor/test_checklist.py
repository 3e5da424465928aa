"""The checklist's lines as text and JSON, and when a run passes."""

from __future__ import annotations

import json

import pytest

from grstats.agent.doctor.checklist import Check, passed, render_json, render_table, summary
from grstats.core.errors import ConfigError

CHECKS = [
    Check.ok("state_dir", "state directory '/var/lib/grstats' is writable by user grstats"),
    Check.failed("port.listen", "listen 0.0.0.0:7400: port 7400 is in use", "stop it"),
    Check.warning("file:token_file", "token_file '/etc/grstats/token' has mode 0660", "chmod 640"),
    Check.skipped("mysql", "MySQL: not checked, source is simulated"),
]


def test_table() -> None:
    """One line per check, its fix indented under it, and the summary last."""
    assert render_table(CHECKS) == (
        "[ ok ] state directory '/var/lib/grstats' is writable by user grstats\n"
        "[FAIL] listen 0.0.0.0:7400: port 7400 is in use\n"
        "       fix: stop it\n"
        "[warn] token_file '/etc/grstats/token' has mode 0660\n"
        "       fix: chmod 640\n"
        "[skip] MySQL: not checked, source is simulated\n"
        "FAILED: 1 ok, 1 warning, 1 skipped, 1 failed\n"
    )


def test_colour_only_when_asked() -> None:
    """Colour codes appear only with ``colour``, around the labels."""
    coloured = render_table(CHECKS, colour=True)
    assert "\x1b[1;31m[FAIL]\x1b[0m listen" in coloured
    assert "\x1b[" not in render_table(CHECKS)


def test_json() -> None:
    """The document scripts read: ok, and each check's name, status, message and fix."""
    document = json.loads(render_json(CHECKS))
    assert document["ok"] is False
    assert document["checks"][1] == {
        "name": "port.listen",
        "status": "failed",
        "message": "listen 0.0.0.0:7400: port 7400 is in use",
        "fix": "stop it",
    }
    assert [check["status"] for check in document["checks"]] == [
        "ok",
        "failed",
        "warning",
        "skipped",
    ]


def test_warnings_and_skips_pass() -> None:
    """A run passes with warnings and skipped checks, and fails with one failure."""
    assert passed([CHECKS[0], CHECKS[2], CHECKS[3]])
    assert summary([CHECKS[0], CHECKS[2]]) == "passed: 1 ok, 1 warning"
    assert not passed(CHECKS)


def test_unknown_status_is_refused() -> None:
    """A status outside the four is a programming error, named as a config error is."""
    with pytest.raises(ConfigError, match="status: 'bad' is not ok, warning, skipped, failed"):
        Check("x", "bad", "message")
