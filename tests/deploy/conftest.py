"""Fixtures of the deploy tests: a member host's /etc/grstats and a pod's, under a temporary root.

The deploy files name absolute paths (``/etc/grstats/tls/db1.pem``); the tests move them under
a root (:func:`tests.deploy.files.under`) that holds real files: certificates made by
deploy/tls/make-certs.sh, a token and a password.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.certs import make_certs
from tests.deploy.files import DEPLOY, TOKEN, under

if TYPE_CHECKING:
    from pathlib import Path

#: server_uuid of the members the certificates are made for (db1.., and mysql-0.. in a pod).
UUIDS = (
    "3e11fa47-71ca-11e1-9e33-c80aa9429562",
    "4f22ab58-82db-22f2-af44-d91bb0530673",
    "5a33bc69-93ec-33a3-b055-ea2cc1641784",
)


@pytest.fixture(name="host_root", scope="session")
def _host_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A member host's files as deploy/README.md installs them, under a temporary root."""
    root = tmp_path_factory.mktemp("host")
    etc = root / "etc" / "grstats"
    members = [f"db{i + 1}={uuid}@db{i + 1}.example.net" for i, uuid in enumerate(UUIDS)]
    make_certs(etc / "tls", *members)
    (etc / "token").write_text(TOKEN + "\n", encoding="utf-8")
    (etc / "mysql-password").write_text("0123456789abcdef\n", encoding="utf-8")
    (etc / "mysql-ca.pem").write_bytes((etc / "tls" / "ca.pem").read_bytes())
    # the agent's config, as deploy/README.md installs it: every test that runs the unit's
    # command finds it, in whatever order and on whichever worker the tests run
    config = (DEPLOY / "systemd" / "agent.toml").read_text(encoding="utf-8")
    (etc / "agent.toml").write_text(under(root, config), encoding="utf-8")
    (root / "var" / "lib" / "grstats").mkdir(parents=True)
    return root


@pytest.fixture(name="pod_root", scope="session")
def _pod_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pod's mounted secrets as deploy/kubernetes mounts them, under a temporary root."""
    root = tmp_path_factory.mktemp("pod")
    etc = root / "etc" / "grstats"
    members = [
        f"mysql-{i}={uuid}@mysql-{i}.mysql-gr,mysql-{i}.mysql-gr.default.svc.cluster.local"
        for i, uuid in enumerate(UUIDS)
    ]
    make_certs(etc / "tls", *members)
    (etc / "token").mkdir()
    (etc / "token" / "token").write_text(TOKEN, encoding="utf-8")
    (etc / "mysql").mkdir()
    (etc / "mysql" / "password").write_text("0123456789abcdef", encoding="utf-8")
    (etc / "config").mkdir()
    (root / "var" / "run" / "mysql-ca").mkdir(parents=True)
    (root / "var" / "run" / "mysql-ca" / "ca.pem").write_bytes(
        (etc / "tls" / "ca.pem").read_bytes()
    )
    (root / "var" / "lib" / "grstats").mkdir(parents=True)
    return root
