"""Fixtures of the doctor's tests: the MySQL source tests' MariaDB server and schemas.

The fixtures are the MySQL source tests' own (tests/agent/sources/conftest.py), so the doctor
is checked against the same performance_schema look-alikes and accounts.
"""

from __future__ import annotations

from tests.agent.sources.conftest import _accounts, _make_config, _mariadb, _ps80

__all__ = ["_accounts", "_make_config", "_mariadb", "_ps80"]
