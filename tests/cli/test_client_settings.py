"""grstats query's settings from flags, the environment and a client config file."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from grstats.cli import build_parser
from grstats.cli.client_settings import (
    ClientSettings,
    client_settings,
    default_client_config,
    time_zone_setting,
)
from grstats.cli.errors import CliError
from grstats.core.rows.zone import UTC_ZONE
from grstats.core.security import Security
from tests.agent.test_tls import TOKEN, UUIDS, start_secure_group, stop_all, tls
from tests.certs import make_certs
from tests.inprocess import grstats_in_thread

if TYPE_CHECKING:
    import argparse
    import subprocess
    from collections.abc import AsyncIterator, Callable

    from tests.agent.test_runtime import Group
    from tests.inprocess import Grstats

PYTHON = [sys.executable, "-m", "grstats"]
#: Every variable the settings read: cleared for the runs of grstats the tests make.
VARIABLES = (
    "GRSTATS_NODE",
    "GRSTATS_TLS_CA",
    "GRSTATS_TLS_CERT",
    "GRSTATS_TLS_KEY",
    "GRSTATS_TOKEN_FILE",
    "GRSTATS_TIME_ZONE",
    "GRSTATS_CLIENT_CONFIG",
    "XDG_CONFIG_HOME",
)


def parse(*argv: str) -> argparse.Namespace:
    """``grstats query ARGV`` as the real parser reads it."""
    return build_parser().parse_args(["query", *argv])


@pytest.fixture(name="home")
def _home(tmp_path: Path) -> Path:
    """An empty home directory: no client config file in it."""
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture(name="write")
def _write(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write a client config file at a path under tmp_path; return its path."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return write


class TestSources:
    def test_environment_only(self, home: Path) -> None:
        """With no flag and no file, every setting comes from its GRSTATS_ variable."""
        environ = {
            "HOME": str(home),
            "GRSTATS_NODE": "db1:7400",
            "GRSTATS_TLS_CA": "ca.pem",
            "GRSTATS_TLS_CERT": "me.pem",
            "GRSTATS_TLS_KEY": "me.key",
            "GRSTATS_TOKEN_FILE": "token",
        }
        settings = client_settings(parse("status"), environ)
        assert settings == ClientSettings(
            node="db1:7400",
            ca_file=Path("ca.pem"),
            cert_file=Path("me.pem"),
            key_file=Path("me.key"),
            token_file=Path("token"),
            origins={
                "node": "GRSTATS_NODE",
                "ca_file": "GRSTATS_TLS_CA",
                "cert_file": "GRSTATS_TLS_CERT",
                "key_file": "GRSTATS_TLS_KEY",
                "token_file": "GRSTATS_TOKEN_FILE",
            },
        )

    def test_file_only_with_paths_relative_to_it(
        self, home: Path, tmp_path: Path, write: Callable[[str, str], Path]
    ) -> None:
        """The file's settings; its relative paths are under its directory, absolute ones kept."""
        path = write(
            "etc/client.toml",
            'node = "db2:7400"\ntoken_file = "token"\n'
            '[tls]\nca_file = "tls/ca.pem"\ncert_file = "/abs/me.pem"\nkey_file = "me.key"\n',
        )
        settings = client_settings(
            parse("members", "--client-config", str(path)), {"HOME": str(home)}
        )
        assert settings.node == "db2:7400"
        assert settings.token_file == tmp_path / "etc" / "token"
        assert settings.ca_file == tmp_path / "etc" / "tls" / "ca.pem"
        assert settings.cert_file == Path("/abs/me.pem")
        assert settings.key_file == tmp_path / "etc" / "me.key"
        assert settings.origin("node") == f"client config {str(path)!r}: node"

    def test_flag_beats_environment_beats_file(
        self, home: Path, write: Callable[[str, str], Path]
    ) -> None:
        """Each setting comes from its flag, else its variable, else the file, one by one."""
        path = write(
            "client.toml",
            'node = "file:1"\ntoken_file = "/file/token"\n[tls]\nca_file = "/file/ca"\n',
        )
        environ = {
            "HOME": str(home),
            "GRSTATS_CLIENT_CONFIG": str(path),
            "GRSTATS_NODE": "env:1",
            "GRSTATS_TLS_CA": "/env/ca",
        }
        flagged = client_settings(parse("status", "--node", "flag:1"), environ)
        assert (flagged.node, flagged.ca_file, flagged.token_file) == (
            "flag:1",
            Path("/env/ca"),
            Path("/file/token"),
        )
        assert client_settings(parse("status"), environ).node == "env:1"
        del environ["GRSTATS_NODE"]
        assert client_settings(parse("status"), environ).node == "file:1"
        environ["GRSTATS_NODE"] = ""  # an empty variable is unset
        assert client_settings(parse("status"), environ).node == "file:1"

    def test_which_file(
        self, home: Path, tmp_path: Path, write: Callable[[str, str], Path]
    ) -> None:
        """--client-config, else $GRSTATS_CLIENT_CONFIG, else $XDG_CONFIG_HOME or ~/.config."""
        write("home/.config/grstats/client.toml", 'node = "home:1"\n')
        write("xdg/grstats/client.toml", 'node = "xdg:1"\n')
        named = write("named.toml", 'node = "named:1"\n')
        flagged = write("flagged.toml", 'node = "flagged:1"\n')
        environ = {"HOME": str(home)}
        assert default_client_config(environ) == home / ".config" / "grstats" / "client.toml"
        assert client_settings(parse("status"), environ).node == "home:1"
        environ["XDG_CONFIG_HOME"] = "relative"  # the XDG spec: a relative one is ignored
        assert client_settings(parse("status"), environ).node == "home:1"
        environ["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
        assert client_settings(parse("status"), environ).node == "xdg:1"
        environ["GRSTATS_CLIENT_CONFIG"] = str(named)
        assert client_settings(parse("status"), environ).node == "named:1"
        args = parse("status", "--client-config", str(flagged))
        assert client_settings(args, environ).node == "flagged:1"

    def test_no_home_means_no_default_file(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without $HOME or a passwd entry (a bare chroot), there is no default client config."""

        def no_home() -> Path:
            raise RuntimeError("Could not determine home directory.")

        monkeypatch.setattr(Path, "home", no_home)
        assert default_client_config({}) is None
        assert client_settings(parse("status"), {"GRSTATS_NODE": "db1:7400"}).node == "db1:7400"
        with pytest.raises(CliError, match=r"^--node: missing"):
            client_settings(parse("status"), {})


class TestTimeZone:
    def test_flag_beats_environment_beats_file_and_utc_by_default(
        self, home: Path, write: Callable[[str, str], Path]
    ) -> None:
        """The time zone comes from --time-zone, else GRSTATS_TIME_ZONE, else the file, else UTC."""
        path = write("client.toml", 'node = "db1:7400"\ntime_zone = "europe/paris"\n')
        environ = {"HOME": str(home), "GRSTATS_CLIENT_CONFIG": str(path)}
        assert client_settings(parse("status"), environ).time_zone.name == "Europe/Paris"
        assert time_zone_setting(parse("status"), environ).name == "Europe/Paris"
        environ["GRSTATS_TIME_ZONE"] = "system"
        assert client_settings(parse("status"), environ).time_zone.name == "SYSTEM"
        flagged = parse("status", "--time-zone", "+5:30")
        assert client_settings(flagged, environ).time_zone.name == "+05:30"
        assert time_zone_setting(flagged, environ).name == "+05:30"
        bare = {"HOME": str(home), "GRSTATS_NODE": "db1:7400"}
        assert client_settings(parse("status"), bare).time_zone is UTC_ZONE
        assert time_zone_setting(parse("status"), {"HOME": str(home)}) is UTC_ZONE

    def test_bad_zones_name_where_they_came_from(
        self, home: Path, write: Callable[[str, str], Path]
    ) -> None:
        """A bad zone is a CliError (2) with MySQL's 1298 text, naming its flag, variable or key."""
        environ = {"HOME": str(home), "GRSTATS_NODE": "db1:7400"}
        with pytest.raises(
            CliError, match=r"^--time-zone: Unknown or incorrect time zone: '\+14:01' \(give SYSTEM"
        ) as caught:
            client_settings(parse("status", "--time-zone", "+14:01"), environ)
        assert caught.value.code == 2
        environ["GRSTATS_TIME_ZONE"] = "Mars/Olympus"
        with pytest.raises(CliError, match=r"^GRSTATS_TIME_ZONE: Unknown .*'Mars/Olympus'"):
            client_settings(parse("status"), environ)
        path = write("client.toml", 'time_zone = "+25:00"\n')
        named = parse("status", "--client-config", str(path))
        with pytest.raises(CliError) as caught:
            time_zone_setting(named, {"HOME": str(home)})
        assert str(caught.value).startswith(
            f"client config {str(path)!r}: time_zone: Unknown or incorrect time zone: '+25:00'"
        )
        path = write("client.toml", "time_zone = 2\n")
        with pytest.raises(CliError, match=r"time_zone: 2 is not a time zone$"):
            time_zone_setting(named, {"HOME": str(home)})


class TestErrors:
    def test_missing_node_names_the_three_ways(self, home: Path) -> None:
        """No node anywhere: exit 2, naming --node, GRSTATS_NODE and the client config file."""
        with pytest.raises(CliError) as caught:
            client_settings(parse("status"), {"HOME": str(home)})
        assert caught.value.code == 2
        message = str(caught.value)
        assert message.startswith("--node: missing; ")
        for way in (
            "--node HOST:PORT",
            "GRSTATS_NODE=HOST:PORT",
            'node = "HOST:PORT"',
            "--client-config FILE",
            "$GRSTATS_CLIENT_CONFIG",
            "~/.config/grstats/client.toml",
        ):
            assert way in message

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            pytest.param('nod = "db1:7400"\n', "nod: unknown setting (did you mean node?)", id="top-level"),
            pytest.param('[tls]\nca_fil = "ca.pem"\n', "tls.ca_fil: unknown setting (did you mean tls.ca_file?)", id="in-tls"),
            pytest.param("timeout = 3\n", "timeout: unknown setting", id="not-a-setting"),
            pytest.param("node = 7400\n", "node: 7400 is not host:port", id="number-node"),
            pytest.param('node = "db1"\n', "node: 'db1' is not host:port with a port in 1..65535", id="no-port"),
            pytest.param("token_file = 3\n", "token_file: 3 is not a file path", id="number-path"),
            pytest.param('[tls]\nca_file = ""\n', "tls.ca_file: '' is not a file path", id="blank-path"),
            pytest.param('tls = "ca.pem"\n', "tls: 'ca.pem' is not a table ([tls])", id="tls-not-a-table"),
            pytest.param("node = \n", "is not valid TOML", id="bad-toml"),
        ],
    )  # fmt: skip
    def test_bad_file_names_file_and_key(
        self, home: Path, write: Callable[[str, str], Path], text: str, message: str
    ) -> None:
        """An unknown key or a bad value: exit 2, naming the file and the key."""
        path = write("client.toml", text)
        with pytest.raises(CliError) as caught:
            client_settings(parse("status", "--client-config", str(path)), {"HOME": str(home)})
        assert caught.value.code == 2
        assert str(caught.value).startswith(f"client config {str(path)!r}")
        assert message in str(caught.value)

    def test_a_named_file_that_is_missing(self, home: Path, tmp_path: Path) -> None:
        """A file named by the flag or the variable must exist; the error says which named it."""
        absent = str(tmp_path / "absent.toml")
        with pytest.raises(CliError, match=r"^--client-config: cannot read .*absent\.toml"):
            client_settings(parse("status", "--client-config", absent), {"HOME": str(home)})
        environ = {"HOME": str(home), "GRSTATS_CLIENT_CONFIG": absent}
        with pytest.raises(CliError, match=r"^GRSTATS_CLIENT_CONFIG: cannot read"):
            client_settings(parse("status"), environ)

    def test_bad_values_name_where_they_came_from(
        self, home: Path, tmp_path: Path, write: Callable[[str, str], Path]
    ) -> None:
        """A bad node or file is named by its flag, its variable, or the file and key."""
        environ = {"HOME": str(home), "GRSTATS_NODE": "db1"}
        with pytest.raises(CliError, match=r"^GRSTATS_NODE: 'db1' is not host:port"):
            client_settings(parse("status"), environ)
        with pytest.raises(CliError, match=r"^--node: 'db1' is not host:port"):
            client_settings(parse("status", "--node", "db1"), {"HOME": str(home)})
        environ = {
            "HOME": str(home),
            "GRSTATS_NODE": "db1:1",
            "GRSTATS_TLS_CA": str(tmp_path / "no.pem"),
        }
        with pytest.raises(CliError, match=r"^GRSTATS_TLS_CA: '.*no\.pem' is not a readable file"):
            client_settings(parse("status"), environ).security()
        path = write("client.toml", 'node = "db1:1"\ntoken_file = "no-token"\n')
        with pytest.raises(CliError) as caught:
            client_settings(
                parse("status", "--client-config", str(path)), {"HOME": str(home)}
            ).security()
        assert str(caught.value).startswith(f"client config {str(path)!r}: token_file: ")
        assert caught.value.code == 2


@pytest.fixture(name="secure")
async def _secure(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Group, Path]]:
    """Two agents over mutual TLS with a token, and the directory of their files."""
    members = [f"m{index}={uuid}@127.0.0.1" for index, uuid in enumerate(UUIDS[:2])]
    files = make_certs(tmp_path_factory.mktemp("tls"), *members)
    (files / "token").write_text(TOKEN, encoding="ascii")
    group = await start_secure_group(
        [Security(tls(files, f"m{index}"), TOKEN) for index in range(2)]
    )
    await group.rounds(2)
    yield group, files
    await stop_all(group)


@pytest.fixture(name="grstats")
def _grstats(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Grstats:
    """``await grstats(*args, env=..., cwd=...)``: in-process, with only ``env``'s variables set.

    Of the variables the settings read (VARIABLES and HOME), only those of ``env`` are set.
    """
    run = grstats_in_thread(capsys)

    async def grstats(
        *args: str, env: dict[str, str], cwd: Path
    ) -> subprocess.CompletedProcess[str]:
        for name in (*VARIABLES, "HOME"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.chdir(cwd)
        return await run(*args)

    return grstats


class TestQueryWithoutFlags:
    """``grstats query status`` with no flag, against real agents with mutual TLS and a token."""

    async def test_node_tls_and_token_from_the_environment(
        self, secure: tuple[Group, Path], home: Path, grstats: Grstats
    ) -> None:
        """GRSTATS_NODE, GRSTATS_TLS_* and GRSTATS_TOKEN_FILE are enough; without the token, refused."""
        group, files = secure
        env = {
            "HOME": str(home),
            "GRSTATS_NODE": group.agents[0].address,
            "GRSTATS_TLS_CA": str(files / "ca.pem"),
            "GRSTATS_TLS_CERT": str(files / "client.pem"),
            "GRSTATS_TLS_KEY": str(files / "client.key"),
            "GRSTATS_TOKEN_FILE": str(files / "token"),
        }
        done = await grstats("query", "status", "--format", "json", env=env, cwd=home)
        assert done.returncode == 0, done.stderr
        found = json.loads(done.stdout)
        assert found["agent"] == group.agents[0].address
        assert {member["member_id"] for member in found["members"]} == set(UUIDS[:2])
        del env["GRSTATS_TOKEN_FILE"]
        refused = await grstats("query", "status", env=env, cwd=home)
        assert refused.returncode == 1
        assert "UNAUTHENTICATED" in refused.stderr

    async def test_everything_from_the_default_client_config(
        self, secure: tuple[Group, Path], home: Path, grstats: Grstats
    ) -> None:
        """~/.config/grstats/client.toml with paths relative to it serves query status and a table."""
        group, files = secure
        config = home / ".config" / "grstats"
        config.mkdir(parents=True)
        for name in ("ca.pem", "client.pem", "client.key", "token"):
            (config / name).write_bytes((files / name).read_bytes())
        (config / "client.toml").write_text(
            f'node = "{group.agents[1].address}"\ntoken_file = "token"\n'
            '[tls]\nca_file = "ca.pem"\ncert_file = "client.pem"\nkey_file = "client.key"\n',
            encoding="utf-8",
        )
        env = {"HOME": str(home)}
        done = await grstats("query", "status", env=env, cwd=home.parent)
        assert done.returncode == 0, done.stderr
        assert f"agent: {group.agents[1].address}" in done.stdout
        table = await grstats("query", "members", "--format", "json", env=env, cwd=home.parent)
        assert table.returncode == 0, table.stderr
        assert {row["MEMBER_ID"] for row in json.loads(table.stdout)["rows"]} == set(UUIDS[:2])

    async def test_watch_takes_the_node_from_the_environment(
        self, secure: tuple[Group, Path], home: Path
    ) -> None:
        """``query status --watch`` as a process, piped: JSON Lines from the agent GRSTATS_NODE names."""
        group, files = secure
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "GRSTATS_NODE": group.agents[1].address,
            "GRSTATS_TLS_CA": str(files / "ca.pem"),
            "GRSTATS_TLS_CERT": str(files / "client.pem"),
            "GRSTATS_TLS_KEY": str(files / "client.key"),
            "GRSTATS_TOKEN_FILE": str(files / "token"),
        }
        process = await asyncio.create_subprocess_exec(
            *PYTHON, "query", "status", "--format", "json", "--watch", "0.2",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, cwd=home,
        )  # fmt: skip
        assert process.stdout is not None
        try:
            lines = [await asyncio.wait_for(process.stdout.readline(), 30) for _ in range(2)]
        finally:
            process.terminate()
            await process.communicate()
        for line in lines:
            assert json.loads(line)["agent"] == group.agents[1].address

    async def test_no_node_anywhere_exits_2(self, home: Path, grstats: Grstats) -> None:
        """Nothing names a node: exit 2 with the one line that says the three ways."""
        done = await grstats("query", "status", env={"HOME": str(home)}, cwd=home)
        assert done.returncode == 2
        assert done.stderr.startswith("grstats: error: --node: missing; ")
        assert "GRSTATS_NODE" in done.stderr
