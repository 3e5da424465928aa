"""The doctor's peer and clock lines, against real agents over gRPC on 127.0.0.1.

The agents run the real server with TLS (certificates of deploy/tls/make-certs.sh) and the
token; the doctor dials them as the agent would. Each test breaks one thing: the CA, the
token, a peer down or silent, the member a certificate names, a peer's clock.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

import pytest

from grstats.agent.doctor.checklist import FAILED, OK, SKIPPED, WARNING
from grstats.agent.doctor.peers import check_peers
from grstats.agent.doctor.run import DoctorOptions, examine
from grstats.core.clock import now_us
from grstats.core.security import Security
from tests.agent.doctor.agents import (
    TOKEN,
    UUIDS,
    certificates,
    doctor_config,
    running_agents,
    silent_listener,
    tls,
)
from tests.mariadb import free_port

if TYPE_CHECKING:
    from pathlib import Path

    from grstats.agent.config import AgentConfig
    from grstats.agent.doctor import Check


@pytest.fixture(name="certs", scope="module")
def _certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return certificates(tmp_path_factory.mktemp("tls"))


@pytest.fixture(name="other_certs", scope="module")
def _other_certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same members' certificates, signed by another CA."""
    return certificates(tmp_path_factory.mktemp("other-tls"))


@pytest.fixture(name="token_file")
def _token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n", encoding="ascii")
    path.chmod(0o600)
    return path


async def peer_lines(config: AgentConfig, timeout_s: float = 3.0) -> dict[str, Check]:
    """The doctor's peer and clock lines for ``config``, by name."""
    security = Security.from_files(config.tls, config.token_file)
    checks = await check_peers(
        config, security, config.peers, timeout_s=timeout_s, max_offset_s=0.1
    )
    return {check.name: check for check in checks}


class TestTls:
    async def test_every_peer_passes(self, certs: Path, token_file: Path) -> None:
        """Peers with the group's certificates and token pass, each naming its member."""
        securities = [Security(tls(certs, f"m{i}"), TOKEN) for i in (1, 2)]
        async with running_agents(securities) as agents:
            peers = [agent.address for agent in agents]
            config = doctor_config(peers, tls_config=tls(certs, "m0"), token_file=token_file)
            lines = await peer_lines(config)
        assert {name: line.status for name, line in lines.items()} == {
            **{f"peer:{peer}": OK for peer in peers},
            **{f"clock:{peer}": OK for peer in peers},
        }
        first = lines[f"peer:{peers[0]}"].message
        assert f"TLS verified, certificate of member {UUIDS[1]}, token accepted" in first
        assert f"answers as agent {peers[0]} of member {UUIDS[1]}" in first

    async def test_wrong_ca(self, certs: Path, other_certs: Path) -> None:
        """A CA that did not sign the peers' certificates reads "certificate verify failed"."""
        async with running_agents([Security(tls(certs, "m1"))]) as agents:
            peer = agents[0].address
            config = doctor_config([peer], tls_config=tls(other_certs, "m0"))
            lines = await peer_lines(config)
        line = lines[f"peer:{peer}"]
        assert line.status == FAILED
        assert "certificate verify failed: unable to get local issuer certificate" in line.message
        assert "tls.ca_file" in line.fix
        assert lines[f"clock:{peer}"].status == SKIPPED

    async def test_peer_refuses_our_certificate(self, certs: Path, other_certs: Path) -> None:
        """With mutual TLS, a certificate of another CA is refused by the peer, and said so."""
        async with running_agents([Security(tls(certs, "m1"))]) as agents:
            peer = agents[0].address
            config = doctor_config([peer], tls_config=tls(other_certs, "m0", ca=certs / "ca.pem"))
            lines = await peer_lines(config)
        line = lines[f"peer:{peer}"]
        assert line.status == FAILED
        assert f"peer {peer} refused this agent's certificate" in line.message

    async def test_certificate_of_another_member(self, certs: Path) -> None:
        """A peer serving with another member's certificate fails its identity."""
        async with running_agents([Security(tls(certs, "m2"))]) as agents:
            peer = agents[0].address  # member 1, with member 2's certificate
            config = doctor_config([peer], tls_config=tls(certs, "m0"))
            lines = await peer_lines(config)
        line = lines[f"peer:{peer}"]
        assert line.status == FAILED
        assert f"its certificate names member {UUIDS[2]}" in line.message
        assert f"reads member {UUIDS[1]}" in line.message
        assert f"the certificate made for member {UUIDS[1]}" in line.fix

    async def test_plain_doctor_against_tls_peer(self, certs: Path) -> None:
        """A config without [tls] dialing a TLS agent fails: it answers no plain gRPC."""
        async with running_agents([Security(tls(certs, "m1"))]) as agents:
            peer = agents[0].address
            lines = await peer_lines(doctor_config([peer]), timeout_s=2)
        line = lines[f"peer:{peer}"]
        assert line.status == FAILED
        assert "[tls] section" in line.fix


class TestToken:
    async def test_wrong_token(self, tmp_path: Path) -> None:
        """A token the peer does not hold is refused, and the fix says to give the same one."""
        wrong = tmp_path / "wrong-token"
        wrong.write_text("not-the-group-token-0123456789", encoding="ascii")
        async with running_agents([Security(token=TOKEN)]) as agents:
            peer = agents[0].address
            lines = await peer_lines(doctor_config([peer], token_file=wrong))
        line = lines[f"peer:{peer}"]
        assert line.status == FAILED
        assert f"peer {peer} refused this config's token: wrong token" in line.message
        assert "same token" in line.fix
        assert "not-the-group-token" not in repr(lines)

    async def test_no_token(self) -> None:
        """A config without a token, against peers that want one, is told to set token_file."""
        async with running_agents([Security(token=TOKEN)]) as agents:
            peer = agents[0].address
            lines = await peer_lines(doctor_config([peer]))
        line = lines[f"peer:{peer}"]
        assert line.status == FAILED
        assert "set token_file" in line.fix


class TestReachability:
    async def test_peer_down(self) -> None:
        """A port nothing listens on is a peer down."""
        peer = f"127.0.0.1:{free_port()}"
        lines = await peer_lines(doctor_config([peer]))
        line = lines[f"peer:{peer}"]
        assert line.status == FAILED
        assert line.message == f"peer {peer} is down: connection refused"
        assert line.fix == f"start the grstats agent on {peer}, or correct peers"

    async def test_nine_peers_some_down_or_silent_within_the_timeout(
        self, certs: Path, token_file: Path
    ) -> None:
        """Eight peers (3 up, 2 down, 3 silent) are checked at once, in about the timeout."""
        securities = [Security(tls(certs, f"m{i}"), TOKEN) for i in (1, 2, 0)]
        with silent_listener() as a, silent_listener() as b, silent_listener() as c:
            async with running_agents(securities) as agents:
                down = [f"127.0.0.1:{free_port()}" for _ in range(2)]
                peers = [*(agent.address for agent in agents), *down, a, b, c]
                config = doctor_config(peers, tls_config=tls(certs, "m0"), token_file=token_file)
                began = time.monotonic()
                checks = await examine(config, DoctorOptions(timeout_s=2.0))
                took = time.monotonic() - began
        assert took < 5.0, took
        found = {check.name: check.status for check in checks}
        # The third agent reads member 0, the doctor's own: up, but a failed identity? No: its
        # certificate is m0's and it reads member 0, so it passes like the others.
        assert [found[f"peer:{peer}"] for peer in peers] == [OK, OK, OK] + [FAILED] * 5
        for silent in (a, b, c):
            line = next(check for check in checks if check.name == f"peer:{silent}")
            assert "does not answer: no answer within 2 s" in line.message


class TestClock:
    async def test_offset_over_the_tolerance_fails(self) -> None:
        """A peer whose clock is 2 s ahead fails its clock line; its peer line passes."""
        async with running_agents([Security()], [lambda: now_us() + 2_000_000]) as agents:
            peer = agents[0].address
            lines = await peer_lines(doctor_config([peer]))
        assert lines[f"peer:{peer}"].status == OK
        line = lines[f"clock:{peer}"]
        assert line.status == FAILED
        found = re.search(
            rf"clock of {re.escape(peer)} is \+(\d+\.\d) ms \(± (\d+\.\d) ms\)", line.message
        )
        assert found is not None, line.message
        offset, error = float(found.group(1)), float(found.group(2))
        # the stated error covers the true +2000 ms (a loaded run said +1999.2 ± 1.7)
        assert abs(offset - 2000) <= error + 0.1, line.message
        assert "over the 0.1 s the lag columns tolerate" in line.message
        assert "APPLIER_LAG_SECONDS" in line.fix

    async def test_offset_within_the_tolerance_passes(self) -> None:
        """A peer 20 ms behind passes with a tolerance of 0.1 s."""
        async with running_agents([Security()], [lambda: now_us() - 20_000]) as agents:
            peer = agents[0].address
            lines = await peer_lines(doctor_config([peer]))
        line = lines[f"clock:{peer}"]
        assert line.status == OK
        found = re.search(r"is (-\d+\.\d) ms \(± (\d+\.\d) ms\) from ours", line.message)
        assert found is not None, line.message
        offset, error = float(found.group(1)), float(found.group(2))
        # the estimate's stated error covers the true -20 ms (under load it widens: -18.3 ± 2.3)
        assert abs(offset + 20) <= error + 0.1, line.message


def test_statuses_are_known() -> None:
    """The statuses used above are the checklist's."""
    assert {OK, FAILED, SKIPPED, WARNING} == {"ok", "failed", "skipped", "warning"}
