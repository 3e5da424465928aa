"""Fixtures of the tests that read MariaDB (the MySQL source, the doctor): one server a session."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

import pytest

from grstats.agent.sources.mysql_config import MySQLSourceConfig
from tests.agent.sources.schemas import USER, Accounts, create_accounts, load_schema
from tests.mariadb import MariaDB, require_server_binaries

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


@pytest.fixture(name="mariadb", scope="session")
def _mariadb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDB]:
    binaries = require_server_binaries()
    with MariaDB.running(binaries, tmp_path_factory.mktemp("mariadb")) as server:
        yield server


@pytest.fixture(name="accounts", scope="session")
def _accounts(mariadb: MariaDB, tmp_path_factory: pytest.TempPathFactory) -> Accounts:
    password = secrets.token_urlsafe(18)
    create_accounts(mariadb, password)
    path = tmp_path_factory.mktemp("secrets") / "mysql-password"
    path.write_text(password + "\n", encoding="utf-8")
    path.chmod(0o600)
    return Accounts(password, path)


@pytest.fixture(name="ps80")
def _ps80(mariadb: MariaDB) -> str:
    return load_schema(mariadb, "ps80")


@pytest.fixture(name="ps8026")
def _ps8026(mariadb: MariaDB) -> str:
    return load_schema(mariadb, "ps8026")


@pytest.fixture(name="ps57")
def _ps57(mariadb: MariaDB) -> str:
    return load_schema(mariadb, "ps57")


@pytest.fixture(name="metadata")
def _metadata(mariadb: MariaDB) -> str:
    return load_schema(mariadb, "md")


@pytest.fixture(name="make_config")
def _make_config(mariadb: MariaDB, accounts: Accounts) -> Callable[..., MySQLSourceConfig]:
    """Return a config factory for the test server: fast timeouts and backoff, any override."""

    def make(schema: str = "ps80", **overrides: Any) -> MySQLSourceConfig:
        settings: dict[str, Any] = {
            "host": mariadb.host,
            "port": mariadb.port,
            "user": USER,
            "password_file": accounts.password_file,
            "schema": schema,
            "connect_timeout_s": 2.0,
            "query_timeout_s": 2.0,
            "backoff_initial_s": 0.1,
            "backoff_max_s": 0.4,
        }
        settings.update(overrides)
        return MySQLSourceConfig(**settings)

    return make
