"""The performance_schema look-alike schemas and accounts the MySQL source tests use.

``ps80`` is MySQL 8.0.27+, ``ps8026`` 8.0 before 8.0.27 (no MEMBER_COMMUNICATION_STACK) and
``ps57`` MySQL 5.7, each filled from ``fixtures/*.sql``; ``md`` is MySQL Shell's InnoDB Cluster
metadata (``mysql_innodb_cluster_metadata``) naming the group of ``ps80``. The account ``grstats`` has only
``SELECT`` on them; ``grstats_x509`` must also log in over TLS with a client certificate.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.mariadb import MariaDB

FIXTURES = Path(__file__).parent / "fixtures"
#: Schema name -> the scripts that fill it, in order.
SCHEMAS = {
    "ps80": ("mysql80.sql",),
    "ps8026": ("mysql80.sql", "mysql8026.sql"),
    "ps57": ("mysql57.sql",),
    "md": ("innodb_cluster_metadata.sql",),  # MySQL Shell's mysql_innodb_cluster_metadata
}
USER = "grstats"
X509_USER = "grstats_x509"


@dataclass(frozen=True)
class Accounts:
    """The test accounts' shared password and the file that holds it."""

    password: str
    password_file: Path


def create_accounts(mariadb: MariaDB, password: str) -> None:
    """Create the least-privilege accounts: SELECT on the test schemas only."""
    grants = "".join(f"GRANT SELECT ON `{schema}`.* TO '{USER}'@'%%';" for schema in SCHEMAS)
    mariadb.execute(
        f"CREATE USER '{USER}'@'%%' IDENTIFIED BY %s; {grants}"
        f"CREATE USER '{X509_USER}'@'%%' IDENTIFIED BY %s REQUIRE X509;"
        f"GRANT SELECT ON `ps80`.* TO '{X509_USER}'@'%%';",
        (password, password),
    )


def load_schema(mariadb: MariaDB, schema: str) -> str:
    """(Re)create ``schema`` from its fixture scripts; return its name."""
    scripts = "\n".join((FIXTURES / name).read_text(encoding="utf-8") for name in SCHEMAS[schema])
    mariadb.execute(
        f"DROP DATABASE IF EXISTS `{schema}`; CREATE DATABASE `{schema}`; USE `{schema}`;\n"
        f"{scripts}"
    )
    return schema
