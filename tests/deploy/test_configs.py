"""Every agent config in deploy/ loads through agent.config, and a broken copy names the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from grstats.agent.config import load_config
from grstats.core.errors import ConfigError
from tests.deploy.files import DEPLOY, configmap_toml, under

#: Each TOML file of deploy/, with the overrides it needs from the command line.
TOMLS: dict[str, dict[str, object]] = {
    "examples/agent-mysql.toml": {},
    "examples/agent-simulated.toml": {"simulated.group_start_s": 1_767_225_600},
    "systemd/agent.toml": {},
}

#: (file, a line of it, the line broken, how the error starts).
BROKEN = [
    ("examples/agent-mysql.toml", "port = 3306", "port = 0", "mysql.port: 0 is not in 1..65535"),
    (
        "examples/agent-mysql.toml",
        "period_s = 1 ",
        "period_s = 0 ",
        "period_s: 0 is not in [1, 60]",
    ),
    (
        "examples/agent-simulated.toml",
        "members = 3",
        "members = 10",
        "simulated.members: 10 is not in 1..9",
    ),
    (
        "examples/agent-simulated.toml",
        "fanout = 0 ",
        "fan_out = 0 ",
        "fan_out: unknown setting (did you mean fanout?)",
    ),
    (
        "systemd/agent.toml",
        'listen = "0.0.0.0:7400"',
        'listen = "0.0.0.0"',
        "listen: '0.0.0.0' is not host:port",
    ),
    (
        "systemd/agent.toml",
        "require_client_cert = true",
        'require_client_cert = "yes"',
        "tls.require_client_cert: 'yes' is not true or false",
    ),
    (
        "systemd/agent.toml",
        'password_file = "/etc/grstats/mysql-password"',
        'password = "hunter2"',
        "mysql.password: a password is never accepted inline",
    ),
]


def test_every_toml_of_deploy_is_checked() -> None:
    """No TOML file in deploy/ is left out of these tests."""
    found = {str(path.relative_to(DEPLOY)) for path in DEPLOY.rglob("*.toml")}
    assert found == set(TOMLS)


@pytest.mark.parametrize("name", sorted(TOMLS))
def test_toml_loads(name: str, host_root: Path, tmp_path: Path) -> None:
    """The file loads through the agent's own loader, its /etc/grstats files made real."""
    copy = tmp_path / "agent.toml"
    copy.write_text(under(host_root, (DEPLOY / name).read_text(encoding="utf-8")), "utf-8")
    config = load_config(copy, TOMLS[name])
    assert config.source in {"mysql", "simulated"}
    if config.mysql is not None:
        assert config.mysql.password_file is not None
        assert config.mysql.user == "grstats"


@pytest.mark.parametrize("case", BROKEN, ids=lambda case: f"{case[0]}:{case[2]}")
def test_broken_copy_fails_naming_the_field(
    case: tuple[str, str, str, str], host_root: Path, tmp_path: Path
) -> None:
    """A copy with one value broken fails with an error that starts with the key."""
    name, line, broken, error = case
    text = (DEPLOY / name).read_text(encoding="utf-8")
    assert text.count(line) == 1, f"{line!r} is not once in {name}"
    copy = tmp_path / "agent.toml"
    copy.write_text(under(host_root, text.replace(line, broken)), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(copy, TOMLS[name])
    assert str(caught.value).startswith(error)


def test_secret_files_must_exist(tmp_path: Path) -> None:
    """Without the certificate it names, the installed config does not load (the unit exits 2)."""
    if Path("/etc/grstats/tls/db1.pem").exists():
        pytest.skip("/etc/grstats/tls/db1.pem exists on this machine")
    copy = tmp_path / "agent.toml"
    copy.write_text((DEPLOY / "systemd/agent.toml").read_text(encoding="utf-8"), "utf-8")
    with pytest.raises(
        ConfigError, match=r"^tls.cert_file: '/etc/grstats/tls/db1.pem' is not a readable file"
    ):
        load_config(copy)


def test_configmap_toml_broken_fails_naming_the_field(pod_root: Path, tmp_path: Path) -> None:
    """The Kubernetes ConfigMap's TOML, with a peer's port broken, fails naming peers[1]."""
    text = under(pod_root, configmap_toml())
    copy = tmp_path / "agent.toml"
    copy.write_text(text.replace("mysql-1.mysql-gr:7400", "mysql-1.mysql-gr:74000"), "utf-8")
    tls = pod_root / "etc/grstats/tls"
    overrides = {"tls.cert_file": tls / "mysql-0.pem", "tls.key_file": tls / "mysql-0.key"}
    with pytest.raises(ConfigError, match=r"^peers\[1\]: 'mysql-1.mysql-gr:74000' is not host"):
        load_config(copy, overrides)
