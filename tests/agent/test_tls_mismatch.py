"""TLS mistakes are named: a plaintext agent in a TLS group, the wrong CA, an expired certificate.

Two agents with real gRPC servers on 127.0.0.1 (the loop disabled: the test runs their periods)
dial each other and fail; each says once, as a ``tls_mismatch`` warning, what is wrong from its
side, with the doctor's classification (``grstats.agent.tls_handshake``), not only that the
other's member is not connected. Certificates come from ``deploy/tls/make-certs.sh``; an
expired one is the same member's certificate re-signed by the group's CA with a past notAfter.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
from typing import TYPE_CHECKING, Any

import pytest
import structlog
from cryptography import x509
from structlog.testing import capture_logs

from grstats.agent.runtime import Agent
from grstats.agent.sim.group import member_uuid
from grstats.agent.sim.scenario import load_scenario
from grstats.agent.sources.simulated import SimulatedSource
from grstats.agent.tls_handshake import (
    CLIENT_REFUSED,
    HANDSHAKE,
    REFUSED,
    VERIFY,
    TlsProblem,
    der_not_after,
    file_not_after,
    mismatch_reason,
)
from grstats.agent.tls_watch import TlsWatch
from grstats.core.security import Security
from grstats.core.tls import TlsConfig
from tests.agent.test_runtime import START_S, Clock, settings
from tests.certs import EXPIRED_AT, expired_copy, make_certs
from tests.waiting import wait_until_async

if TYPE_CHECKING:
    from collections.abc import Iterator, MutableMapping
    from pathlib import Path

    Line = MutableMapping[str, Any]  # a log line capture_logs captured

UUIDS = [member_uuid("steady", 1, index) for index in range(2)]
#: Periods run after both warnings: more failed dials, none warned again.
MORE_PERIODS = 4


@pytest.fixture(name="cas", scope="module")
def _cas(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two certificate directories for the same members, from two CAs; the first has m1x.pem.

    m1x.pem is m1's certificate (same key, names, extensions) re-signed by the first CA with
    a notAfter of EXPIRED_AT.
    """
    members = [f"m{index}={uuid}@127.0.0.1" for index, uuid in enumerate(UUIDS)]
    first = make_certs(tmp_path_factory.mktemp("ca-a"), *members)
    second = make_certs(tmp_path_factory.mktemp("ca-b"), *members)
    expired_copy(first, "m1")
    return first, second


def tls(certs: Path, name: str, cert: str | None = None) -> Security:
    """Mutual TLS with member ``name``'s key and certificate (or ``cert``) and ``certs``'s CA."""
    return Security(
        TlsConfig(
            cert_file=certs / (cert or f"{name}.pem"),
            key_file=certs / f"{name}.key",
            ca_file=certs / "ca.pem",
            require_client_cert=True,
        )
    )


async def start_pair(securities: tuple[Security, Security]) -> tuple[list[Agent], Clock]:
    """Two agents of a simulated group, each the other's peer, with gRPC as Agent builds it."""
    clock = Clock()
    size = load_scenario("steady").with_members(2)
    agents = []
    for index, security in enumerate(securities):
        source = SimulatedSource(size, index, seed=1, group_start_s=START_S, clock=clock.s)
        agent = Agent(settings(), source, clock=clock.us, security=security)
        await agent.start()
        assert agent._task is not None
        agent._task.cancel()
        agents.append(agent)
    addresses = tuple(agent.address for agent in agents)
    for agent in agents:
        agent.config = dataclasses.replace(agent.config, peers=addresses)
    return agents, clock


@pytest.fixture(name="logs")
def _logs() -> Iterator[list[Line]]:
    with capture_logs() as logs:
        yield logs


async def mismatches(
    securities: tuple[Security, Security], logs: list[Line]
) -> tuple[list[Agent], list[Line]]:
    """Run the pair's periods until each side warned; then some more. Return every warning."""
    agents, clock = await start_pair(securities)

    def warned() -> list[Line]:
        return [line for line in logs if line["event"] == "tls_mismatch"]

    async def each_side_warned() -> bool:
        clock.seconds += 1
        for agent in agents:
            await agent.run_period()
        return {line["peer"] for line in warned()} == {agent.address for agent in agents}

    try:
        await wait_until_async(each_side_warned, 20, "a tls_mismatch from each side", detail=str)
        for _ in range(MORE_PERIODS):
            await each_side_warned()
            await asyncio.sleep(0.05)  # a diagnosis that would run again has time to end
    finally:
        for agent in agents:
            await agent.stop(grace_s=0)
    return agents, warned()


def said(agents: list[Agent], warnings: list[Line]) -> dict[int, list[str]]:
    """Each agent's (by index) warnings' reasons: the warning names the other agent as peer."""
    by_peer = {agent.address: index for index, agent in enumerate(agents)}
    reasons: dict[int, list[str]] = {0: [], 1: []}
    for line in warnings:
        reasons[1 - by_peer[line["peer"]]].append(line["reason"])
    return reasons


async def test_a_plaintext_agent_in_a_tls_group(cas: tuple[Path, Path], logs: list[Line]) -> None:
    """The TLS agent says its peer speaks plaintext; the plaintext agent that its peer speaks TLS.

    Both as ``grstats doctor`` finds it (agent/tls_handshake.py, dial_peer and speaks_tls).
    """
    agents, warnings = await mismatches((tls(cas[0], "m0"), Security()), logs)
    assert said(agents, warnings) == {
        0: ["peer speaks plaintext"],
        1: ["peer speaks TLS and this agent has no [tls] section"],
    }
    assert all(line["log_level"] == "warning" for line in warnings)


async def test_the_wrong_ca(cas: tuple[Path, Path], logs: list[Line]) -> None:
    """Agents whose certificates two CAs signed each say the other's is not signed by their CA."""
    agents, warnings = await mismatches((tls(cas[0], "m0"), tls(cas[1], "m1")), logs)
    reason = (
        "peer's certificate is not signed by our CA "
        "(certificate verify failed: unable to get local issuer certificate)"
    )
    assert said(agents, warnings) == {0: [reason], 1: [reason]}


async def test_an_expired_certificate(cas: tuple[Path, Path], logs: list[Line]) -> None:
    """The peer of the expired certificate names its expiry; its holder, that it was refused for it."""
    agents, warnings = await mismatches((tls(cas[0], "m0"), tls(cas[0], "m1", "m1x.pem")), logs)
    assert said(agents, warnings) == {
        0: ["peer's certificate expired at 2026-01-02 03:04:05 UTC"],
        1: ["peer refused our certificate, which expired at 2026-01-02 03:04:05 UTC"],
    }


async def test_a_peer_that_is_reached_again_is_resolved(
    cas: tuple[Path, Path], logs: list[Line]
) -> None:
    """A warned peer that answers an Exchange again is logged resolved, at info, once."""
    reasons = iter(["peer speaks plaintext", None])

    async def diagnose(*_: object) -> str | None:
        return next(reasons)

    watch = TlsWatch(None, structlog.get_logger, diagnose=diagnose)
    watch.failed("127.0.0.1:7400", "failed to connect to all addresses; Socket closed")
    await wait_until_async(lambda: watch.mismatches, 5, "the mismatch warned")
    watch.reached("127.0.0.1:7400")
    watch.reached("127.0.0.1:7400")
    events = [(line["event"], line["log_level"]) for line in logs]
    assert events == [("tls_mismatch", "warning"), ("tls_mismatch_resolved", "info")]
    assert watch.mismatches == {}


async def test_a_refused_or_plain_failure_is_not_diagnosed(logs: list[Line]) -> None:
    """A dial refused (nothing listens) is no TLS mistake: no dial to diagnose it, no warning."""
    dialled: list[object] = []

    async def diagnose(*args: object) -> str | None:
        dialled.append(args)
        return None

    watch = TlsWatch(None, structlog.get_logger, diagnose=diagnose)
    watch.failed("127.0.0.1:1", "failed to connect to all addresses; Connection refused")
    await asyncio.sleep(0)
    assert dialled == []
    assert logs == []


class TestReasons:
    """mismatch_reason words the doctor's TlsProblem kinds (agent/tls_handshake.py)."""

    def test_each_kind(self) -> None:
        """Each kind has its words; a peer that is down is no TLS mistake."""
        now = EXPIRED_AT.timestamp() + 60
        cases = [
            (TlsProblem(HANDSHAKE, "wrong version number"), {}, "peer speaks plaintext"),
            (
                TlsProblem(VERIFY, "certificate verify failed: certificate has expired"),
                {"peer_expiry": EXPIRED_AT.timestamp()},
                "peer's certificate expired at 2026-01-02 03:04:05 UTC",
            ),
            (
                TlsProblem(CLIENT_REFUSED, "sslv3 alert certificate expired"),
                {"own_expiry": EXPIRED_AT.timestamp()},
                "peer refused our certificate, which expired at 2026-01-02 03:04:05 UTC",
            ),
            (
                TlsProblem(CLIENT_REFUSED, "it closed the connection after the handshake"),
                {"own_expiry": now + 86_400},
                (
                    "peer refused our certificate (it closed the connection after the handshake): "
                    "is it signed by the peer's CA?"
                ),
            ),
            (TlsProblem(REFUSED, "connection refused"), {}, None),
        ]
        for problem, expiries, reason in cases:
            assert mismatch_reason(problem, "db1", now_s=now, **expiries) == reason

    def test_not_after_of_a_certificate(self, cas: tuple[Path, Path]) -> None:
        """The DER notAfter is the certificate's own (as Python's ssl parses it), UTC or not."""
        path = cas[0] / "m1x.pem"
        assert file_not_after(path) == EXPIRED_AT.timestamp()
        der = ssl.PEM_cert_to_DER_cert((cas[0] / "m0.pem").read_text(encoding="ascii"))
        parsed = x509.load_der_x509_certificate(der).not_valid_after_utc.timestamp()
        assert der_not_after(der) == parsed
        assert der_not_after(b"\x30\x03\x02\x01\x01") is None
