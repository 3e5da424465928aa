"""The doctor's checks of the peers: each one reachable, its TLS, identity and token, its clock.

Every peer is checked at once, each within the timeout, in three steps that each depend on
the one before: the connection (with TLS, the handshake, made with Python's ssl so that a
wrong CA is named as such: :func:`~grstats.agent.doctor.handshake.dial_peer`), the gRPC
``Query.Read`` with the token (:func:`~grstats.agent.doctor.wire.ask_agent`), and the identity:
the member the peer's certificate names must be the member the peer reads.

The clock line compares the peer's clock with ours, from the quickest call: offset = the
peer's time minus the middle of the round trip, give or take half the round trip (NTP's
estimate). APPLIER_LAG_SECONDS compares times taken on two members' clocks (the original
commit on one, now or the end of apply on another), so an offset between them goes into the
lag as is: the offset must be under the tolerance for sure to pass, and fails when it is over
it for sure; in between (a slow round trip) it is a warning.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from grstats.agent.doctor import handshake
from grstats.agent.doctor.checklist import Check
from grstats.agent.doctor.wire import TIMEOUT, UNAUTHENTICATED, UNREACHABLE, CallFailed, ask_agent
from grstats.core.address import split_address

if TYPE_CHECKING:
    from collections.abc import Sequence

    from grstats.agent.config import AgentConfig
    from grstats.agent.doctor.handshake import CertificateFacts
    from grstats.agent.doctor.wire import AgentAnswer
    from grstats.core.security import Security

#: The default tolerance of a peer's clock offset, seconds: a tenth of a second is far more
#: than NTP keeps hosts of one network apart (a few ms), and less than the lag of a member
#: that is really behind, which alerts count in seconds.
DEFAULT_MAX_OFFSET_S = 0.1


async def check_peers(
    config: AgentConfig,
    security: Security,
    peers: Sequence[str],
    *,
    timeout_s: float,
    max_offset_s: float,
) -> list[Check]:
    """The ``peer:`` lines of every peer, then their ``clock:`` lines, checked concurrently."""
    if not peers:
        if not config.discovery_enabled:
            why = "peers is empty"
        elif config.mysql is not None:
            why = "peers is empty, and the member's view names no other member"
        else:
            why = "peers is empty; a simulated member's peers are discovered by the agent"
        return [Check.skipped("peers", f"peers: none to check ({why})")]
    results = await asyncio.gather(
        *(check_peer(config, security, peer, timeout_s, max_offset_s) for peer in peers)
    )
    return [peer for peer, _ in results] + [clock for _, clock in results]


async def check_peer(
    config: AgentConfig, security: Security, peer: str, timeout_s: float, max_offset_s: float
) -> tuple[Check, Check]:
    """The ``peer:PEER`` and ``clock:PEER`` lines of one peer."""
    name, clock = f"peer:{peer}", f"clock:{peer}"
    host, port = split_address(peer, "peers")
    deadline = time.monotonic() + timeout_s
    facts: CertificateFacts | None = None
    try:
        if config.tls is not None:
            facts = await handshake.dial_peer(config.tls, host, port, timeout_s)
        else:
            await handshake.dial_plain(host, port, timeout_s)
        # What is left of the timeout (the call fails DEADLINE_EXCEEDED when nothing is).
        answer = await ask_agent(security, peer, max(deadline - time.monotonic(), 0.01))
    except handshake.TlsProblem as exc:
        return _tls_failed(config, name, peer, exc), _no_clock(clock, peer)
    except CallFailed as exc:
        return _call_failed(config, security, name, peer, exc), _no_clock(clock, peer)
    return _identity(config, name, peer, answer, facts), _clock(clock, peer, answer, max_offset_s)


def _no_clock(name: str, peer: str) -> Check:
    return Check.skipped(name, f"clock of {peer}: not checked, the peer did not answer")


def _tls_failed(  # noqa: PLR0911  (one line per way it fails)
    config: AgentConfig, name: str, peer: str, exc: handshake.TlsProblem
) -> Check:
    host, _ = split_address(peer, "peers")
    down_fix = f"start the grstats agent on {peer}, or correct peers"
    if exc.kind == handshake.REFUSED:
        return Check.failed(name, f"peer {peer} is down: connection refused", down_fix)
    if exc.kind == handshake.TIMEOUT:
        return Check.failed(
            name,
            f"peer {peer} does not answer: {exc.reason}",
            f"{down_fix}; check that no firewall drops the port",
        )
    if exc.kind == handshake.UNREACHABLE:
        return Check.failed(
            name,
            f"peer {peer} cannot be reached: {exc.reason}",
            f"check that {host} resolves and is reachable from this host, or correct peers",
        )
    if exc.kind == handshake.VERIFY:
        return Check.failed(
            name,
            f"peer {peer}: the TLS handshake failed: {exc.reason}",
            "give every agent the group's CA as tls.ca_file and a certificate it signed "
            "(deploy/tls/make-certs.sh); this config's tls.ca_file did not sign the peer's",
        )
    if exc.kind == handshake.HOSTNAME:
        return Check.failed(
            name,
            f"peer {peer}: its certificate does not name {host}: {exc.reason}",
            f"make the peer's certificate name {host} (make-certs.sh NAME=UUID@{host}), or "
            "list the peer in peers by a name its certificate has",
        )
    if exc.kind == handshake.CLIENT_REFUSED:
        assert config.tls is not None
        return Check.failed(
            name,
            f"peer {peer} refused this agent's certificate: {exc.reason}",
            f"make tls.cert_file {str(config.tls.cert_file)!r} with the CA the peer trusts "
            "(every agent: the group's CA)",
        )
    return Check.failed(
        name,
        f"peer {peer}: the TLS handshake failed: {exc.reason}",
        "check that a grstats agent with [tls] listens there: every agent of the group has "
        "the [tls] section, or none has",
    )


def _call_failed(
    config: AgentConfig, security: Security, name: str, peer: str, exc: CallFailed
) -> Check:
    if exc.kind == UNAUTHENTICATED:
        if security.token is None:
            return Check.failed(
                name,
                f"peer {peer} wants a token and this config has none: {exc.details}",
                "set token_file to the group's token file (the same on every agent)",
            )
        return Check.failed(
            name,
            f"peer {peer} refused this config's token: {exc.details}",
            "give every agent the same token: copy token_file's content to the other agents' "
            "token_file and restart those whose token changed",
        )
    if exc.kind == TIMEOUT:
        return Check.failed(
            name,
            f"peer {peer} accepted the connection but did not answer in time: {exc.details}",
            f"check the agent on {peer} (its log, its load)",
        )
    if exc.kind == UNREACHABLE and config.tls is None:
        return Check.failed(
            name,
            f"peer {peer} accepts connections but does not answer gRPC: {exc.details}",
            "check that a grstats agent listens there, and without TLS: every agent of the "
            "group has the [tls] section, or none has",
        )
    return Check.failed(
        name,
        f"peer {peer}: the call failed: {exc.details}",
        f"check that a grstats agent listens on {peer}",
    )


def _identity(
    config: AgentConfig,
    name: str,
    peer: str,
    answer: AgentAnswer,
    facts: CertificateFacts | None,
) -> Check:
    """The peer line of a peer that answered: its identity checked against its certificate."""
    member = answer.member or "not read yet"
    said = f"answers as agent {answer.agent} of member {member}"
    token = ", token accepted" if config.token_file is not None else ""
    if facts is None:
        found = f"peer {peer} {said}{token}"
    else:
        named = ", ".join(facts.members) or "no member"
        if answer.member and facts.members and answer.member not in facts.members:
            return Check.failed(
                name,
                f"peer {peer}: its certificate names member {named}, but the agent there "
                f"reads member {answer.member}",
                f"give the agent on {peer} the certificate made for member {answer.member} "
                "(deploy/tls/make-certs.sh NAME=UUID@HOST)",
            )
        if len(facts.members) != 1:
            line = Check.failed if config.tls and config.tls.require_client_cert else Check.warning
            return line(
                name,
                f"peer {peer} {said}, but its certificate names {named}, not exactly one "
                "member: with mutual TLS the other agents refuse its gossip",
                f"give the agent on {peer} a certificate made for its member "
                "(deploy/tls/make-certs.sh NAME=UUID@HOST)",
            )
        found = f"peer {peer}: TLS verified, certificate of member {named}{token}; it {said}"
    fault = answer.source.fault
    if fault is not None:
        return Check.warning(
            name, f"{found}, but it cannot read its member: {fault.message}", fault.fix
        )
    if not answer.member:
        return Check.warning(
            name,
            f"{found}; it has not read its member yet, so its identity is not compared",
        )
    return Check.ok(name, found)


def _clock(name: str, peer: str, answer: AgentAnswer, max_offset_s: float) -> Check:
    """The clock line: the peer's offset against the tolerance, its uncertainty counted."""
    offset_us, error_us = answer.offset_us, answer.uncertainty_us
    limit_us = max_offset_s * 1_000_000
    shown = f"{offset_us / 1000:+.1f} ms (± {error_us / 1000:.1f} ms)"
    if abs(offset_us) + error_us <= limit_us:
        return Check.ok(name, f"clock of {peer} is {shown} from ours, within {max_offset_s:g} s")
    fix = (
        "synchronise both hosts' clocks (chrony or systemd-timesyncd): APPLIER_LAG_SECONDS "
        "compares times taken on different members' clocks"
    )
    if abs(offset_us) - error_us > limit_us:
        return Check.failed(
            name,
            f"clock of {peer} is {shown} from ours, over the {max_offset_s:g} s the lag "
            "columns tolerate",
            fix,
        )
    return Check.warning(
        name,
        f"clock of {peer} is {shown} from ours: the round trip is too slow to tell whether it "
        f"is within {max_offset_s:g} s",
        "run grstats doctor again, nearer to the peer or when the network is quieter",
    )
