"""The doctor's line on this agent's own certificate: made by deploy/tls/make-certs.sh."""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

import pytest

from grstats.agent.doctor.certificate import check_certificate
from grstats.agent.doctor.checklist import FAILED, OK, SKIPPED, WARNING
from grstats.core.tls import TlsConfig
from tests.agent.doctor.agents import UUIDS, certificates, doctor_config, tls

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(name="certs", scope="module")
def _certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return certificates(tmp_path_factory.mktemp("tls"))


@pytest.fixture(name="other_certs", scope="module")
def _other_certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return certificates(tmp_path_factory.mktemp("other-tls"))


def test_own_certificate_passes(certs: Path) -> None:
    """The member's certificate of the group's CA, for its host, passes and says so."""
    line = check_certificate(doctor_config([], tls_config=tls(certs, "m0")), UUIDS[0])
    assert line.status == OK
    assert f"names member {UUIDS[0]} and host 127.0.0.1" in line.message
    assert "signed by tls.ca_file" in line.message


def test_another_ca(certs: Path, other_certs: Path) -> None:
    """A certificate that tls.ca_file did not sign fails: peers would refuse it."""
    config = doctor_config([], tls_config=tls(other_certs, "m0", ca=certs / "ca.pem"))
    line = check_certificate(config, UUIDS[0])
    assert line.status == FAILED
    assert "certificate verify failed: unable to get local issuer certificate" in line.message


def test_another_member(certs: Path) -> None:
    """A certificate of another member than the one read fails, naming both."""
    line = check_certificate(doctor_config([], tls_config=tls(certs, "m1")), UUIDS[0])
    assert line.status == FAILED
    assert f"names member {UUIDS[1]}, but this agent reads member {UUIDS[0]}" in line.message
    assert f"NAME={UUIDS[0]}@127.0.0.1" in line.fix


def test_host_not_named(certs: Path) -> None:
    """A certificate that does not name the advertised host fails: peers cannot verify it."""
    config = dataclasses.replace(
        doctor_config([], tls_config=tls(certs, "m0")), advertise="localhost:7400"
    )
    line = check_certificate(config, UUIDS[0])
    assert line.status == FAILED
    assert "does not name localhost, the host of advertise localhost:7400" in line.message


def test_client_certificate_is_not_an_agents(certs: Path) -> None:
    """The client certificate (of grstats query) is no agent's: it cannot serve."""
    config = doctor_config(
        [],
        tls_config=TlsConfig(
            cert_file=certs / "client.pem",
            key_file=certs / "client.key",
            ca_file=certs / "ca.pem",
            require_client_cert=True,
        ),
    )
    line = check_certificate(config, UUIDS[0])
    assert line.status == FAILED
    assert "unsuitable certificate purpose" in line.message


def test_expiring_soon_warns(certs: Path) -> None:
    """A certificate that expires within 30 days warns, with the fix to renew it."""
    config = doctor_config([], tls_config=tls(certs, "m0"))
    now = check_certificate(config, UUIDS[0])
    days = int(now.message.rpartition("valid for ")[2].split()[0])
    later = check_certificate(config, UUIDS[0], now_s=time.time() + (days - 10) * 86_400)
    assert later.status == WARNING
    assert "renew it" in later.fix


def test_without_tls_is_skipped() -> None:
    """A config without [tls] skips the line."""
    assert check_certificate(doctor_config([]), UUIDS[0]).status == SKIPPED
