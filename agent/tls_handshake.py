"""TLS as the doctor checks it, with Python's ssl: this agent's certificate, and a peer's.

``grstats doctor`` (:mod:`grstats.agent.doctor.handshake` names this module for it) and the
running agent (:mod:`grstats.agent.tls_watch`) share it; it lives outside the doctor's package
so that an agent loads none of the doctor's other modules.

:func:`check_own` makes TLS handshakes in memory between two contexts built from the
``[tls]`` files, as a peer would see this agent (server) and as a peer would see it dialing
(client): the certificate must chain to ``ca_file``, serve for the advertised host and be
accepted as a client certificate. :func:`dial_peer` makes the handshake with a peer over TCP,
as the agent's gRPC channel does (ALPN ``h2``, this agent's certificate presented), so that a
wrong CA reads "certificate verify failed: ..." rather than gRPC's UNAVAILABLE, and returns
the peer's certificate; :func:`dial_plain` only connects, for a group without TLS. All raise
:class:`TlsProblem`, whose ``kind`` says what failed (connecting is part of it).

:func:`diagnose` is the same classification for a running agent whose dial of a peer failed
(gRPC's own error says "Tls handshake failed" or "Socket closed", and no more than BoringSSL's
code): it dials the peer as the doctor does and words what it found for the ``tls_mismatch``
warning (:func:`mismatch_reason`), or says nothing when TLS is not why.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from grstats.agent.identity import MEMBER_URI_PREFIX

if TYPE_CHECKING:
    from pathlib import Path

    from grstats.core.tls import TlsConfig

#: The parsed certificate :meth:`ssl.SSLSocket.getpeercert` returns.
Certificate = dict[str, Any]

#: How :class:`TlsProblem` says what failed.
REFUSED = "refused"  # nothing listens there
UNREACHABLE = "unreachable"  # no route, no such host, reset
TIMEOUT = "timeout"  # no answer within the deadline
VERIFY = "verify"  # the certificate does not verify (CA, expiry, purpose)
HOSTNAME = "hostname"  # it verifies but does not name the host dialed
CLIENT_REFUSED = "client_refused"  # the other side refused our certificate
HANDSHAKE = "handshake"  # another TLS failure (not TLS at all, no common protocol)

#: HTTP/2's client connection preface and an empty SETTINGS frame (RFC 9113, section 3.4):
#: sent after the handshake so that a server that refuses our certificate says so (TLS 1.3
#: servers check it after the client has finished its handshake).
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
#: How long to wait for the server's first bytes after the preface.
_ANSWER_WAIT_S = 1.0

#: The ``tls_mismatch`` reasons that name the mistake (others add OpenSSL's words).
PEER_PLAINTEXT = "peer speaks plaintext"
PEER_TLS = "peer speaks TLS and this agent has no [tls] section"
NOT_OUR_CA = "peer's certificate is not signed by our CA"
#: OpenSSL's reasons of a handshake with a server that answered something other than TLS (a
#: plaintext HTTP/2 server answers the ClientHello with a GOAWAY frame, or closes).
_NOT_TLS_REASONS = ("wrong version number", "record layer failure", "packet length too long")
#: OpenSSL's verify messages of a chain that does not lead to a CA of ``ca_file``.
_UNKNOWN_CA_REASONS = (
    "unable to get local issuer certificate",
    "unable to get issuer certificate",
    "self-signed certificate",
    "self signed certificate",
    "certificate signature failure",
)


class TlsProblem(Exception):
    """A TLS check failed: ``kind`` (:data:`VERIFY`, ...) and what the library said."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


@dataclass(frozen=True, slots=True)
class CertificateFacts:
    """What a certificate names, from its parsed form.

    Attributes:
        members: the members its ``urn:grstats:member:`` URIs name, lowercase.
        hosts: its DNS names and IP addresses.
        not_after: when it expires, UNIX seconds.
        subject: its common name, or ``""``.
    """

    members: tuple[str, ...]
    hosts: tuple[str, ...]
    not_after: float
    subject: str

    @classmethod
    def of(cls, certificate: Certificate) -> CertificateFacts:
        """The facts of ``certificate`` (:meth:`ssl.SSLSocket.getpeercert`'s dict)."""
        names = certificate.get("subjectAltName", ())
        members = tuple(
            value[len(MEMBER_URI_PREFIX) :].lower()
            for kind, value in names
            if kind == "URI" and value.lower().startswith(MEMBER_URI_PREFIX)
        )
        hosts = tuple(value for kind, value in names if kind in {"DNS", "IP Address"})
        subject = next(
            (
                value
                for rdn in certificate.get("subject", ())
                for key, value in rdn
                if key == "commonName"
            ),
            "",
        )
        expiry = certificate.get("notAfter")
        not_after = ssl.cert_time_to_seconds(expiry) if expiry else 0.0
        return cls(members, hosts, not_after, subject)

    def days_left(self, now_s: float | None = None) -> float:
        """Days until the certificate expires (negative once expired)."""
        return (self.not_after - (time.time() if now_s is None else now_s)) / 86_400


# -- this agent's certificate -------------------------------------------------------------


def check_own(tls: TlsConfig, host: str) -> CertificateFacts:
    """Check the ``[tls]`` files as peers will see them; return what the certificate names.

    Three handshakes in memory: the certificate against ``ca_file`` as a server's and as a
    client's (the agent presents it when it dials), then for ``host``, the advertised host
    its peers dial.

    Raises:
        TlsProblem: :data:`VERIFY` (the chain, expiry or purpose), :data:`CLIENT_REFUSED` (not
            usable as a client certificate) or :data:`HOSTNAME` (it does not name ``host``).
    """
    server = _server_context(tls)
    certificate = _handshake(server, _client_context(tls), None)
    server.verify_mode = ssl.CERT_REQUIRED  # now also as a client certificate
    _handshake(server, _client_context(tls, present=True), None)
    _handshake(_server_context(tls), _client_context(tls, hostname=True), host)
    return CertificateFacts.of(certificate)


def _server_context(tls: TlsConfig) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    assert tls.cert_file is not None
    assert tls.key_file is not None
    context.load_cert_chain(tls.cert_file, tls.key_file)
    if tls.ca_file is not None:
        context.load_verify_locations(cafile=tls.ca_file)
    return context


def _client_context(
    tls: TlsConfig, *, present: bool = False, hostname: bool = False
) -> ssl.SSLContext:
    """A client context that checks the server against ``ca_file`` (and the host name)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = hostname
    if tls.ca_file is not None:
        context.load_verify_locations(cafile=tls.ca_file)
    else:
        context.load_default_certs()
    if present and tls.cert_file is not None and tls.key_file is not None:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    return context


def _handshake(
    server_context: ssl.SSLContext, client_context: ssl.SSLContext, host: str | None
) -> Certificate:
    """Run a handshake between the two contexts in memory; return the server's certificate."""
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    from_server, from_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    server = server_context.wrap_bio(to_server, from_server, server_side=True)
    client = client_context.wrap_bio(to_client, from_client, server_hostname=host)
    done = {"client": False, "server": False}
    for _ in range(20):  # a handshake takes 2-3 flights each way
        for side, end in (("client", client), ("server", server)):
            if done[side]:
                continue
            try:
                end.do_handshake()
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLCertVerificationError as exc:
                kind = VERIFY if side == "client" else CLIENT_REFUSED
                if side == "client" and "hostname" in str(exc.verify_message).lower():
                    kind = HOSTNAME
                raise TlsProblem(kind, _verify_text(exc)) from exc
            except ssl.SSLError as exc:
                raise TlsProblem(
                    VERIFY if side == "client" else CLIENT_REFUSED, _text(exc)
                ) from exc
            else:
                done[side] = True
        to_server.write(from_client.read())
        to_client.write(from_server.read())
        if all(done.values()):
            break
    # TLS 1.3: the server checks the client's certificate after the client has finished.
    with contextlib.suppress(ssl.SSLWantReadError):
        server.read(1)
    certificate = client.getpeercert()
    assert certificate is not None
    return certificate


# -- a peer's certificate -----------------------------------------------------------------


async def dial_peer(tls: TlsConfig, host: str, port: int, timeout_s: float) -> CertificateFacts:
    """Make the TLS handshake with the agent at ``host:port``; return its certificate's facts.

    The peer is checked as the agent's channel checks it: against ``ca_file``, for ``host``,
    with this agent's certificate presented. Then the HTTP/2 preface is sent, so that a peer
    that refuses our certificate (mutual TLS) says so now.

    Raises:
        TlsProblem: any failure, its kind saying which (:data:`REFUSED`, :data:`VERIFY`, ...).
    """
    context = _client_context(tls, present=True, hostname=True)
    context.set_alpn_protocols(["h2"])
    try:
        async with asyncio.timeout(timeout_s):
            reader, writer = await asyncio.open_connection(
                host, port, ssl=context, server_hostname=host
            )
    except TimeoutError as exc:
        raise TlsProblem(TIMEOUT, f"no answer within {timeout_s:g} s") from exc
    except ssl.SSLCertVerificationError as exc:
        kind = HOSTNAME if "hostname" in str(exc.verify_message).lower() else VERIFY
        raise TlsProblem(kind, _verify_text(exc)) from exc
    except ssl.SSLError as exc:
        raise TlsProblem(HANDSHAKE, _text(exc)) from exc
    except ConnectionRefusedError as exc:
        raise TlsProblem(REFUSED, "connection refused") from exc
    except OSError as exc:
        raise TlsProblem(UNREACHABLE, exc.strerror or str(exc)) from exc
    try:
        certificate = writer.get_extra_info("peercert")
        writer.write(H2_PREFACE)
        await writer.drain()
        answer = None
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(min(_ANSWER_WAIT_S, timeout_s)):
                answer = await reader.read(9)  # the server's SETTINGS frame, or its refusal
        if answer == b"":  # closed without a word: gRPC's way of refusing a certificate
            raise TlsProblem(CLIENT_REFUSED, "it closed the connection after the handshake")
    except ssl.SSLError as exc:
        raise TlsProblem(CLIENT_REFUSED, _text(exc)) from exc
    except OSError as exc:
        raise TlsProblem(CLIENT_REFUSED, exc.strerror or str(exc)) from exc
    finally:
        writer.close()
        with contextlib.suppress(OSError, TimeoutError):
            async with asyncio.timeout(_ANSWER_WAIT_S):
                await writer.wait_closed()
    return CertificateFacts.of(certificate)


async def dial_plain(host: str, port: int, timeout_s: float) -> None:
    """Open and close a TCP connection to ``host:port``, as a plain gRPC channel would.

    Raises:
        TlsProblem: :data:`TIMEOUT`, :data:`REFUSED` or :data:`UNREACHABLE`.
    """
    try:
        async with asyncio.timeout(timeout_s):
            _, writer = await asyncio.open_connection(host, port)
    except TimeoutError as exc:
        raise TlsProblem(TIMEOUT, f"no answer within {timeout_s:g} s") from exc
    except ConnectionRefusedError as exc:
        raise TlsProblem(REFUSED, "connection refused") from exc
    except OSError as exc:
        raise TlsProblem(UNREACHABLE, exc.strerror or str(exc)) from exc
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


def _verify_text(exc: ssl.SSLCertVerificationError) -> str:
    """``certificate verify failed: REASON``, as OpenSSL words it."""
    return f"certificate verify failed: {exc.verify_message}"


def _text(exc: ssl.SSLError) -> str:
    """The library's reason of a TLS error (``tlsv13 alert certificate required``)."""
    reason = exc.reason or ""
    return reason.lower().replace("_", " ") if reason else str(exc)


# -- a running agent's failed dial ---------------------------------------------------------


async def diagnose(tls: TlsConfig | None, host: str, port: int, timeout_s: float) -> str | None:
    """Why this agent's dial of the agent at ``host:port`` fails, when TLS is why, else None.

    With ``[tls]``: :func:`dial_peer`, worded by :func:`mismatch_reason`. Without: whether the
    peer answers a TLS ClientHello (:func:`speaks_tls`), which a plaintext gRPC server never
    does. A peer that is down, unreachable or silent, or that accepts us, gives None.
    """
    if tls is None:
        return PEER_TLS if await speaks_tls(host, port, timeout_s) else None
    try:
        await dial_peer(tls, host, port, timeout_s)
    except TlsProblem as problem:
        peer_expiry = own_expiry = None
        if problem.kind == VERIFY and "expired" in problem.reason:
            peer_expiry = await peer_not_after(host, port, timeout_s)
        if problem.kind == CLIENT_REFUSED and tls.cert_file is not None:
            own_expiry = file_not_after(tls.cert_file)
        return mismatch_reason(
            problem, host, peer_expiry=peer_expiry, own_expiry=own_expiry, now_s=time.time()
        )
    return None


def mismatch_reason(  # noqa: PLR0911  (one wording per kind of problem)
    problem: TlsProblem,
    host: str,
    *,
    peer_expiry: float | None = None,
    own_expiry: float | None = None,
    now_s: float,
) -> str | None:
    """The words of a ``tls_mismatch`` warning for ``problem``, None when TLS is not why.

    ``peer_expiry`` and ``own_expiry`` are the notAfter (UNIX seconds) of the peer's and of
    this agent's certificate, when known: an expired one is named with its time.
    """
    reason = problem.reason
    if problem.kind in {REFUSED, UNREACHABLE, TIMEOUT}:
        return None
    if problem.kind == HANDSHAKE:
        if any(marker in reason for marker in _NOT_TLS_REASONS):
            return PEER_PLAINTEXT
        return f"the TLS handshake failed: {reason}"
    if problem.kind == VERIFY:
        if "expired" in reason:
            when = "" if peer_expiry is None else f" at {utc_text(peer_expiry)}"
            return f"peer's certificate expired{when}"
        if any(marker in reason for marker in _UNKNOWN_CA_REASONS):
            return f"{NOT_OUR_CA} ({reason})"
        return f"peer's certificate does not verify ({reason})"
    if problem.kind == HOSTNAME:
        return f"peer's certificate does not name {host} ({reason})"
    if own_expiry is not None and own_expiry <= now_s:
        return f"peer refused our certificate, which expired at {utc_text(own_expiry)}"
    return f"peer refused our certificate ({reason}): is it signed by the peer's CA?"


async def speaks_tls(host: str, port: int, timeout_s: float) -> bool:
    """Whether ``host:port`` answers a TLS ClientHello with a TLS handshake (nothing checked)."""
    try:
        async with asyncio.timeout(timeout_s):
            _, writer = await asyncio.open_connection(host, port, ssl=_unchecked_context())
    except ssl.SSLError as exc:  # a TLS alert is TLS (a TLS 1.2 server refusing us); else not
        return "alert" in (exc.reason or "").lower()
    except (OSError, TimeoutError):
        return False
    await _close_quietly(writer)
    return True


async def peer_not_after(host: str, port: int, timeout_s: float) -> float | None:
    """When the certificate ``host:port`` presents expires (UNIX seconds), checked by no CA."""
    try:
        async with asyncio.timeout(timeout_s):
            _, writer = await asyncio.open_connection(host, port, ssl=_unchecked_context())
    except (OSError, TimeoutError):
        return None
    try:
        ssl_object = writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    finally:
        await _close_quietly(writer)
    return der_not_after(der) if der else None


def file_not_after(path: Path) -> float | None:
    """When the first certificate of the PEM file ``path`` expires, None if it cannot be read."""
    try:
        text = path.read_text(encoding="ascii")
        begin = text.index("-----BEGIN CERTIFICATE-----")
        end = text.index("-----END CERTIFICATE-----", begin) + len("-----END CERTIFICATE-----")
        return der_not_after(ssl.PEM_cert_to_DER_cert(text[begin:end]))
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def der_not_after(der: bytes) -> float | None:
    """The notAfter of a DER X.509 certificate (UNIX seconds), None if it is not one.

    RFC 5280, section 4.1: Certificate ::= SEQUENCE { tbsCertificate, ... }; TBSCertificate ::=
    SEQUENCE { [0] version OPTIONAL, serialNumber, signature, issuer, validity, ... };
    Validity ::= SEQUENCE { notBefore Time, notAfter Time }; Time is UTCTime (YYMMDDHHMMSSZ,
    years 50-99 are 19xx) or GeneralizedTime (YYYYMMDDHHMMSSZ).
    """
    try:
        _, body, _ = _der_item(der, 0)  # Certificate
        tag, tbs, _ = _der_item(der, body)  # TBSCertificate
        offset = tbs
        tag, _, offset = _der_item(der, offset)
        if tag == 0xA0:  # [0] version: skip it, the serial number follows
            tag, _, offset = _der_item(der, offset)
        for _ in range(2):  # signature, issuer
            tag, _, offset = _der_item(der, offset)
        tag, validity, _ = _der_item(der, offset)
        tag, _, after = _der_item(der, validity)  # notBefore
        tag, start, end = _der_item(der, after)  # notAfter
        text = der[start:end].decode("ascii")
    except (IndexError, UnicodeDecodeError):
        return None
    if tag == 0x17 and len(text) == 13:  # UTCTime
        text = ("19" if int(text[:2]) >= 50 else "20") + text
    elif tag != 0x18 or len(text) != 15:  # GeneralizedTime
        return None
    try:
        moment = datetime.strptime(text, "%Y%m%d%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None
    return moment.timestamp()


def _der_item(der: bytes, offset: int) -> tuple[int, int, int]:
    """The DER item at ``offset``: its tag, where its content starts, and where it ends."""
    tag, length = der[offset], der[offset + 1]
    start = offset + 2
    if length & 0x80:
        count = length & 0x7F
        length = int.from_bytes(der[start : start + count], "big")
        start += count
    end = start + length
    if end > len(der):
        raise IndexError("DER item runs past the end")
    return tag, start, end


def utc_text(moment_s: float) -> str:
    """``2026-11-30 21:50:00 UTC``: a certificate's time as the warning words it."""
    return f"{datetime.fromtimestamp(moment_s, UTC):%Y-%m-%d %H:%M:%S} UTC"


def _unchecked_context() -> ssl.SSLContext:
    """A client context that checks nothing: only to see what the peer answers."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    return context


async def _close_quietly(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(OSError, TimeoutError):
        async with asyncio.timeout(_ANSWER_WAIT_S):
            await writer.wait_closed()
