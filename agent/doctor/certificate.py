"""The doctor's check of this agent's own certificate (the ``[tls]`` files).

Peers see the certificate twice: when they dial this agent (it must chain to the group's CA
and name the advertised host) and when this agent dials them with mutual TLS (it must be a
client certificate too, and name exactly one member, the one this agent reads, or the peers
refuse its gossip: :mod:`grstats.agent.identity`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from grstats.agent.doctor.checklist import Check
from grstats.agent.doctor.handshake import CLIENT_REFUSED, HOSTNAME, TlsProblem, check_own
from grstats.core.address import split_address

if TYPE_CHECKING:
    from grstats.agent.config import AgentConfig

NAME = "tls.certificate"
#: A certificate that expires sooner than this (days) is a warning.
RENEW_WITHIN_DAYS = 30
_MAKE_CERTS = "deploy/tls/make-certs.sh"


def check_certificate(config: AgentConfig, member_id: str, now_s: float | None = None) -> Check:
    """The ``tls.certificate`` line; ``member_id`` is the member read, ``""`` if unknown."""
    tls = config.tls
    if tls is None:
        return Check.skipped(NAME, "TLS: not checked, the config has no [tls] section")
    shown = f"tls.cert_file {str(tls.cert_file)!r}"
    host, _ = split_address(config.advertised, "advertise", lowest_port=0)
    try:
        facts = check_own(tls, host)
    except TlsProblem as exc:
        return _refused(config, shown, host, exc)
    mutual = tls.require_client_cert
    if len(facts.members) != 1:
        named = ", ".join(facts.members) or "no member"
        line = Check.failed if mutual else Check.warning
        return line(
            NAME,
            f"{shown} names {named}, not exactly one member: with mutual TLS the peers "
            "refuse this agent's gossip",
            f"make the certificate for member {member_id or 'SERVER_UUID'} "
            f"({_MAKE_CERTS} NAME={member_id or 'SERVER_UUID'}@{host})",
        )
    (certified,) = facts.members
    if member_id and certified != member_id.lower():
        return Check.failed(
            NAME,
            f"{shown} names member {certified}, but this agent reads member {member_id}",
            f"use the certificate made for member {member_id} "
            f"({_MAKE_CERTS} NAME={member_id}@{host})",
        )
    days = facts.days_left(time.time() if now_s is None else now_s)
    found = (
        f"{shown} is signed by tls.ca_file, names member {certified} and host {host}, "
        f"valid for {days:.0f} more days"
    )
    if not member_id:
        found += " (the member read is not known: not compared)"
    if days < RENEW_WITHIN_DAYS:
        return Check.warning(
            NAME,
            found,
            f"renew it ({_MAKE_CERTS}); the agent loads renewed files without a restart",
        )
    return Check.ok(NAME, found)


def _refused(config: AgentConfig, shown: str, host: str, exc: TlsProblem) -> Check:
    if exc.kind == HOSTNAME:
        return Check.failed(
            NAME,
            f"{shown} does not name {host}, the host of advertise {config.advertised} that "
            f"peers dial: {exc.reason}",
            f"make the certificate name {host} ({_MAKE_CERTS} NAME=UUID@{host}), or "
            "advertise a host it names",
        )
    if exc.kind == CLIENT_REFUSED:
        return Check.failed(
            NAME,
            f"{shown} is not accepted as a client certificate, which the agent presents to "
            f"its peers: {exc.reason}",
            f"make it with extendedKeyUsage serverAuth and clientAuth ({_MAKE_CERTS} does)",
        )
    return Check.failed(
        NAME,
        f"{shown} does not verify against tls.ca_file: {exc.reason}",
        f"use a certificate signed by the group's CA, the one in tls.ca_file ({_MAKE_CERTS}), "
        "and renew it if it expired",
    )
