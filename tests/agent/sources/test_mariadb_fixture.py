"""The test server's policy when MariaDB is missing: a failure under CI, else a skip."""

from __future__ import annotations

import pytest

from tests import mariadb


@pytest.fixture(name="no_server")
def _no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mariadb, "find_server_binaries", lambda: None)


def test_missing_server_fails_under_ci(no_server: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """With CI=true a missing server fails the tests, naming the package to install."""
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="install the Debian package mariadb-server"):
        mariadb.require_server_binaries()


def test_missing_server_skips_outside_ci(no_server: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside CI, when it cannot install the server, the tests skip with the reason."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(pytest.skip.Exception, match="install mariadb-server"):
        mariadb.require_server_binaries()


def test_found_server() -> None:
    """On a machine with MariaDB the server and its data-dir installer are both found."""
    if mariadb.find_server_binaries() is None:
        mariadb.missing("mariadbd not found")
    found = mariadb.find_server_binaries()
    assert found is not None
    assert found.server.name in mariadb.SERVER_NAMES
    assert found.install_db.name in mariadb.INSTALL_DB_NAMES
