"""The doctor's lines on this host: the config file, the state directory, the secret files."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from grstats.agent.doctor.checklist import FAILED, OK
from grstats.agent.doctor.local import (
    NEEDS_CONFIG,
    check_advertise,
    check_config,
    check_state_dir,
    not_checked,
    secret_files,
)
from tests.agent.doctor.agents import TOKEN, doctor_config

SIMULATED = """\
source = "simulated"
listen = "127.0.0.1:7400"
peers = ["127.0.0.1:7401"]
[simulated]
member_index = 0
group_start_s = 0
"""


class TestConfig:
    def test_valid(self, tmp_path: Path) -> None:
        """A valid file passes, and the line sums it up."""
        path = tmp_path / "agent.toml"
        path.write_text(SIMULATED, encoding="utf-8")
        line, config = check_config(path)
        assert config is not None
        assert line.status == OK
        assert line.message == (
            f"config {str(path)!r} is valid: source simulated, listen 127.0.0.1:7400, "
            "advertise 127.0.0.1:7400, 1 peer(s), plain gRPC"
        )

    def test_invalid_key_names_it(self, tmp_path: Path) -> None:
        """A bad value fails the line with the loader's message; the fix names the key."""
        path = tmp_path / "agent.toml"
        path.write_text("period_s = 0\n" + SIMULATED, encoding="utf-8")
        line, config = check_config(path)
        assert config is None
        assert line.status == FAILED
        assert "period_s: 0 is not in [1, 60] seconds" in line.message
        assert line.fix.startswith(f"correct period_s in {str(path)!r}")

    def test_not_toml(self, tmp_path: Path) -> None:
        """A file that is not TOML fails the line, and the fix says what the file must be."""
        path = tmp_path / "agent.toml"
        path.write_text("source = \n", encoding="utf-8")
        line, _ = check_config(path)
        assert line.status == FAILED
        assert "is not valid TOML" in line.message
        assert "readable TOML file" in line.fix

    def test_the_rest_is_skipped(self) -> None:
        """Without a valid config, every other check is skipped with the reason."""
        lines = not_checked("the config is not valid")
        assert [line.name for line in lines] == list(NEEDS_CONFIG)
        assert all(line.message.endswith("not checked, the config is not valid") for line in lines)


class TestStateDir:
    def test_existing_directory(self, tmp_path: Path) -> None:
        """A directory the user may write passes, and the probe leaves nothing behind."""
        line = check_state_dir(tmp_path)
        assert line.status == OK
        assert "is writable by user" in line.message
        assert list(tmp_path.iterdir()) == []

    def test_created_at_start(self, tmp_path: Path) -> None:
        """A directory that does not exist passes when its parent may be written."""
        line = check_state_dir(tmp_path / "a" / "b")
        assert line.status == OK
        assert f"may create it (in {str(tmp_path)!r})" in line.message
        assert list(tmp_path.iterdir()) == []

    def test_a_file(self, tmp_path: Path) -> None:
        """A file where the directory should be fails."""
        path = tmp_path / "state"
        path.write_text("", encoding="utf-8")
        line = check_state_dir(path)
        assert line.status == FAILED
        assert line.message == f"state directory {str(path)!r} is not a directory"

    def test_not_writable(self) -> None:
        """A directory nobody may write in (procfs, even for root) fails with the chown fix."""
        line = check_state_dir(Path("/proc"))
        assert line.status == FAILED
        assert "state directory '/proc' is not writable by user" in line.message
        assert line.fix.startswith("make it writable by the agent's user (chown ")

    def test_cannot_be_created(self) -> None:
        """A directory that cannot be created where it should be fails with the install fix."""
        line = check_state_dir(Path("/proc/grstats-state"))
        assert line.status == FAILED
        assert "does not exist, and user" in line.message
        assert "may not create it in '/proc'" in line.message
        assert line.fix.startswith("create it for the agent's user: install -d -o ")


def test_secret_files_of_a_config(tmp_path: Path) -> None:
    """The token file and the TLS key are the secrets of a config that has them."""
    token = tmp_path / "token"
    token.write_text(TOKEN, encoding="ascii")
    config = doctor_config([], token_file=token)
    assert secret_files(config) == [("token_file", token)]


def test_advertise_loopback_with_remote_peers_fails() -> None:
    """Advertising loopback to peers on other hosts fails, with the fix of grstats agent."""
    config = dataclasses.replace(doctor_config(["192.0.2.7:7400"]), advertise="127.0.0.1:7400")
    line = check_advertise(config)
    assert line.status == FAILED
    assert line.message.startswith("advertise: '127.0.0.1:7400' is a loopback address")
    assert line.fix.startswith("set advertise to an address of this host")
    assert check_advertise(doctor_config(["127.0.0.1:7401"])).status == OK
