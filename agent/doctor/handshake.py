"""TLS as the doctor checks it: :mod:`grstats.agent.tls_handshake`, where it is defined.

The running agent names TLS mistakes with the same classification (:mod:`grstats.agent.tls_watch`),
so the definitions live outside the doctor's package, which an agent does not load.
"""

from __future__ import annotations

from grstats.agent.tls_handshake import (
    CLIENT_REFUSED,
    H2_PREFACE,
    HANDSHAKE,
    HOSTNAME,
    NOT_OUR_CA,
    PEER_PLAINTEXT,
    PEER_TLS,
    REFUSED,
    TIMEOUT,
    UNREACHABLE,
    VERIFY,
    Certificate,
    CertificateFacts,
    TlsProblem,
    check_own,
    der_not_after,
    diagnose,
    dial_peer,
    dial_plain,
    file_not_after,
    mismatch_reason,
    peer_not_after,
    speaks_tls,
    utc_text,
)

__all__ = [
    "CLIENT_REFUSED",
    "H2_PREFACE",
    "HANDSHAKE",
    "HOSTNAME",
    "NOT_OUR_CA",
    "PEER_PLAINTEXT",
    "PEER_TLS",
    "REFUSED",
    "TIMEOUT",
    "UNREACHABLE",
    "VERIFY",
    "Certificate",
    "CertificateFacts",
    "TlsProblem",
    "check_own",
    "der_not_after",
    "diagnose",
    "dial_peer",
    "dial_plain",
    "file_not_after",
    "mismatch_reason",
    "peer_not_after",
    "speaks_tls",
    "utc_text",
]
