"""TLS as the doctor checks it, with Python's ssl: this agent's certificate, and a peer's.

:func:`check_own` makes TLS handshakes in memory between two contexts built from the
``[tls]`` files, as a peer would see this agent (server) and as a peer would see it dialing
(client): the certificate must chain to ``ca_file``, serve for the advertised host and be
accepted as a client certificate. :func:`dial_peer` makes the handshake with a peer over TCP,
as the agent's gRPC channel does (ALPN ``h2``, this agent's certificate presented), so that a
wrong CA reads "certificate verify failed: ..." rather than gRPC's UNAVAILABLE, and returns
the peer's certificate; :func:`dial_plain` only connects, for a group without TLS. All raise
:class:`TlsProblem`, whose ``kind`` says what failed (connecting is part of it).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from grstats.agent.identity import MEMBER_URI_PREFIX

if TYPE_CHECKING:
    from grstats.agent.tls import TlsConfig

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
