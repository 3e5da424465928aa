"""deploy/mysql/grstats-user.sql on a real server: the account it makes can do nothing else.

The script runs as its header says, piped into the ``mysql`` client after the password's
``SET``, against the MariaDB server the tests start; the Kubernetes init script runs it the
same way with ``docker_process_sql`` standing for the image's function of that name.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import TYPE_CHECKING, Any

import pymysql  # type: ignore[import-untyped]
import pytest

from tests.deploy.files import DEPLOY, manifest
from tests.mariadb import MariaDB, missing, require_server_binaries

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

SQL = DEPLOY / "mysql" / "grstats-user.sql"
#: The how-to of the SQL file's header, with the client's connection options as ``$CLIENT``.
HOW_TO = """{ printf "SET @grstats_password = '%s';\\n" "$(cat "$PASSWORD_FILE")";
  cat "$SQL"; } | $CLIENT"""


@pytest.fixture(name="server", scope="module")
def _server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDB]:
    binaries = require_server_binaries()
    with MariaDB.running(binaries, tmp_path_factory.mktemp("mariadb")) as server:
        yield server


def client(server: MariaDB) -> str:
    """The mysql client's command line, logged in as root through the server's socket."""
    program = shutil.which("mariadb") or shutil.which("mysql")
    if program is None:
        missing("the mysql client (mariadb-client) is not installed")
    return f"{program} --no-defaults --socket={server.socket} -u root"


def run_how_to(server: MariaDB, password_file: Path) -> subprocess.CompletedProcess[str]:
    """Run the SQL file as its header says, with the password in ``password_file``."""
    bash = shutil.which("bash")
    assert bash is not None
    environment = os.environ | {
        "PASSWORD_FILE": str(password_file),
        "SQL": str(SQL),
        "CLIENT": client(server),
    }
    return subprocess.run(
        [bash, "-c", HOW_TO], env=environment, capture_output=True, text=True, check=False
    )


def connect(server: MariaDB, password: str) -> Any:
    """Log in as grstats over TCP on 127.0.0.1, as the agent does."""
    return pymysql.connect(
        host="127.0.0.1", port=server.port, user="grstats", password=password, connect_timeout=5
    )


def test_header_shows_the_how_to() -> None:
    """The SQL file's header gives the command these tests run."""
    header = SQL.read_text(encoding="utf-8")
    assert (
        """printf "SET @grstats_password = '%s';\\n" "$(cat /etc/grstats/mysql-password)";"""
        in (header)
    )
    assert "cat deploy/mysql/grstats-user.sql; } | mysql -h PRIMARY -u root -p" in header


def test_account_has_select_on_performance_schema_only(server: MariaDB, tmp_path: Path) -> None:
    """The account logs in over 127.0.0.1 and may read performance_schema and Shell's metadata only."""
    password_file = tmp_path / "mysql-password"
    password_file.write_text("5f0c1e2d3a4b5c6d7e8f90a1b2c3d4e5\n", encoding="utf-8")
    done = run_how_to(server, password_file)
    assert done.returncode == 0, done.stderr
    with connect(server, "5f0c1e2d3a4b5c6d7e8f90a1b2c3d4e5") as conn, conn.cursor() as cursor:
        cursor.execute("SHOW GRANTS FOR CURRENT_USER")
        grants = [row[0] for row in cursor.fetchall()]
        assert len(grants) == 3
        assert grants[0].startswith("GRANT USAGE ON *.* TO `grstats`@`127.0.0.1`")
        assert sorted(grants[1:]) == [
            "GRANT SELECT ON `mysql_innodb_cluster_metadata`.* TO `grstats`@`127.0.0.1`",
            "GRANT SELECT ON `performance_schema`.* TO `grstats`@`127.0.0.1`",
        ]
        with pytest.raises(pymysql.err.OperationalError) as denied:
            cursor.execute("SELECT user FROM mysql.user")
        assert denied.value.args[0] == 1142  # SELECT command denied


def test_running_again_rotates_the_password(server: MariaDB, tmp_path: Path) -> None:
    """Run again with a new password file, the old password no longer logs in and the new does."""
    password_file = tmp_path / "mysql-password"
    for password in ("aaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbb"):
        password_file.write_text(password + "\n", encoding="utf-8")
        done = run_how_to(server, password_file)
        assert done.returncode == 0, done.stderr
    with pytest.raises(pymysql.err.OperationalError) as refused:
        connect(server, "aaaaaaaaaaaaaaaaaaaaaaaa")
    assert refused.value.args[0] == 1045  # access denied
    connect(server, "bbbbbbbbbbbbbbbbbbbbbbbb").close()


def test_without_the_password_it_fails(server: MariaDB) -> None:
    """Piped without the password's SET, the script fails rather than make an account."""
    bash = shutil.which("bash")
    assert bash is not None
    done = subprocess.run(
        [bash, "-c", f'{client(server)} < "$SQL"'],
        env=os.environ | {"SQL": str(SQL)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "syntax" in done.stderr


def test_kubernetes_init_script_makes_the_account(server: MariaDB, tmp_path: Path) -> None:
    """The pod's init script makes the same account from the mounted password, off the binlog."""
    data = manifest("ConfigMap", "mysql-gr")["data"]
    (tmp_path / "grstats-user.sql.txt").write_text(data["grstats-user.sql.txt"], encoding="utf-8")
    (tmp_path / "password").write_text("cccccccccccccccccccccccc", encoding="utf-8")
    script = (
        data["10-grstats-user.sh"]
        .replace("/etc/grstats/mysql/password", str(tmp_path / "password"))
        .replace("/docker-entrypoint-initdb.d/", f"{tmp_path}/")
    )
    assert "SET SQL_LOG_BIN = 0;" in script
    bash = shutil.which("bash")
    assert bash is not None
    # The image sources the script with its own docker_process_sql (the client, as root).
    sourced = f'docker_process_sql() {{ {client(server)} "$@"; }}\n{script}'
    done = subprocess.run([bash, "-c", sourced], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    connect(server, "cccccccccccccccccccccccc").close()
