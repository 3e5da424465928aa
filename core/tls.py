"""``TlsConfig``: the ``[tls]`` section, and the gRPC credentials built from its files.

An agent serves Gossip and Query over TLS with ``cert_file`` and ``key_file``, and dials its
peers over TLS, checking their certificates against ``ca_file``. With
``require_client_cert`` the TLS is mutual: every client, agent or ``grstats query``, must
present a certificate that ``ca_file`` signed, and an agent presents its own certificate
when it dials its peers. How a certificate names the member it may speak for is in
:mod:`grstats.agent.identity`.

The server re-reads the three files when one of them changes (by modification time or
size), at the next connection, and the agent's transport reconnects to its peers with the
new files (see :meth:`grstats.core.security.Security.renewed`): a renewed certificate needs no
restart. Connections the server already accepted keep the certificate they were made with.
"""

from __future__ import annotations

import dataclasses
import ssl
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import grpc

from grstats.core.checks import check_bool, check_path
from grstats.core.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

#: What a :class:`TlsConfig` field is called in the config file.
_KEYS = {
    "cert_file": "tls.cert_file",
    "key_file": "tls.key_file",
    "ca_file": "tls.ca_file",
    "require_client_cert": "tls.require_client_cert",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsConfig:
    """Certificate files of one TLS endpoint; validated on construction.

    Errors are :class:`~grstats.core.errors.ConfigError` naming the key (``tls.cert_file: ...``).
    The files must exist and parse, and the key must be the certificate's.

    Attributes:
        cert_file: this side's certificate chain, PEM (None: present none, for a client).
        key_file: its private key, PEM, unencrypted; given exactly when ``cert_file`` is.
        ca_file: the CA certificates peers' certificates must chain to, PEM (None: the
            system's roots, for a client only).
        require_client_cert: whether the server demands a client certificate signed by
            ``ca_file`` (mutual TLS); needs ``ca_file``.
    """

    cert_file: Path | None = None
    key_file: Path | None = None
    ca_file: Path | None = None
    require_client_cert: bool = False

    def __post_init__(self) -> None:
        for name in ("cert_file", "key_file", "ca_file"):
            value: object = getattr(self, name)
            if value is None:
                continue
            object.__setattr__(self, name, check_path(_KEYS[name], value))
        check_bool("tls.require_client_cert", self.require_client_cert)
        if (self.cert_file is None) != (self.key_file is None):
            given, missing = (
                ("cert_file", "key_file") if self.key_file is None else ("key_file", "cert_file")
            )
            raise ConfigError(f"{_KEYS[missing]}: missing; {_KEYS[given]} needs it")
        if self.require_client_cert and self.ca_file is None:
            raise ConfigError(
                "tls.ca_file: missing; tls.require_client_cert needs the CA that signs "
                "the clients' certificates"
            )
        self._check_files()

    def _check_files(self) -> None:
        """Parse the files as TLS will; ConfigError names the key whose file is at fault."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        for name in ("cert_file", "key_file", "ca_file"):
            path: Path | None = getattr(self, name)
            if path is not None and not path.is_file():
                raise ConfigError(f"{_KEYS[name]}: {str(path)!r} is not a readable file")
        if self.ca_file is not None:
            try:
                context.load_verify_locations(cafile=self.ca_file)
            except (ssl.SSLError, OSError) as exc:
                raise ConfigError(
                    f"tls.ca_file: {str(self.ca_file)!r} holds no PEM CA certificate: {exc}"
                ) from exc
        if self.cert_file is not None and self.key_file is not None:
            try:
                ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(self.cert_file)
            except (ssl.SSLError, OSError) as exc:
                raise ConfigError(
                    f"tls.cert_file: {str(self.cert_file)!r} holds no PEM certificate: {exc}"
                ) from exc
            try:
                # An empty password: an encrypted key fails here rather than prompting.
                context.load_cert_chain(self.cert_file, self.key_file, password=b"")
            except (ssl.SSLError, OSError) as exc:
                raise ConfigError(
                    f"tls.key_file: {str(self.key_file)!r} is not the unencrypted PEM key of "
                    f"tls.cert_file {str(self.cert_file)!r}: {exc}"
                ) from exc

    def server_credentials(self) -> grpc.ServerCredentials:
        """Server credentials that re-read the files when they change (see the module doc)."""
        if self.cert_file is None or self.key_file is None:
            raise ConfigError("tls.cert_file: missing; a server needs a certificate")
        files = CertificateFiles(self)
        return grpc.dynamic_ssl_server_credentials(
            files.configuration(),
            files.fetch,  # type: ignore[arg-type]  # None keeps the configuration (gRPC's doc)
            require_client_authentication=self.require_client_cert,
        )

    def channel_credentials(self) -> grpc.ChannelCredentials:
        """Channel credentials: ``ca_file`` to check the server, plus this side's certificate."""
        return grpc.ssl_channel_credentials(
            root_certificates=_read(self.ca_file),
            private_key=_read(self.key_file),
            certificate_chain=_read(self.cert_file),
        )


class FileWatch:
    """Notices when the files of a :class:`TlsConfig` change to a set that loads.

    A change is a file's modification time or size. :meth:`changed` is true once per change,
    and only when the new files pass :class:`TlsConfig`'s checks: a set caught half-replaced
    (a new certificate beside the old key) is not a change yet, and is looked at again on the
    next call. Safe to call from several threads.
    """

    def __init__(self, config: TlsConfig) -> None:
        self._config = config
        self._paths = [path for path in (config.cert_file, config.key_file, config.ca_file) if path]
        self._lock = threading.Lock()
        self._seen = self._stamps()

    def _stamps(self) -> tuple[tuple[int, int], ...]:
        stamps = []
        for path in self._paths:
            try:
                status = path.stat()
            except OSError:
                stamps.append((-1, -1))
            else:
                stamps.append((status.st_mtime_ns, status.st_size))
        return tuple(stamps)

    def changed(self) -> bool:
        """Whether the files changed, to a set that loads, since the last change seen."""
        with self._lock:
            stamps = self._stamps()
            if stamps == self._seen:
                return False
            try:
                dataclasses.replace(self._config)  # checks the files anew
            except ConfigError:
                return False
            self._seen = stamps
            return True


class CertificateFiles:
    """The server's certificate files, re-read when one of them changes.

    gRPC calls :meth:`fetch` before each new TLS handshake (from its own threads); it returns
    a new configuration when the files changed (see :class:`FileWatch`), else None (keep the
    current one).
    """

    def __init__(self, config: TlsConfig) -> None:
        assert config.cert_file is not None
        assert config.key_file is not None
        self._config = config
        self._watch = FileWatch(config)
        self.reloads = 0  #: configurations read after the first

    def configuration(self) -> grpc.ServerCertificateConfiguration:
        """The files' contents now, as a server certificate configuration."""
        config = self._config
        assert config.cert_file is not None
        assert config.key_file is not None
        return grpc.ssl_server_certificate_configuration(
            [(config.key_file.read_bytes(), config.cert_file.read_bytes())],
            root_certificates=_read(config.ca_file),
        )

    def fetch(self) -> grpc.ServerCertificateConfiguration | None:
        """A new configuration when the files changed since the last read, else None."""
        if not self._watch.changed():
            return None
        try:
            configuration = self.configuration()
        except OSError:
            return None
        self.reloads += 1
        return configuration


def _read(path: Path | None) -> bytes | None:
    return None if path is None else path.read_bytes()
