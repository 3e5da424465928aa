"""``Security``: how one agent or client protects its gRPC calls, TLS and token together.

The one object the server (:func:`grstats.agent.server.build_server`), the agent's transport
(:class:`~grstats.agent.transports.rpc.GrpcTransport`) and ``grstats query`` take: it binds the
server's port, opens client channels and carries the token. The default protects nothing
(plain gRPC, no token), as an agent without ``[tls]`` and ``token_file`` runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import grpc

from grstats.core.auth import TokenInterceptor, read_token, token_metadata
from grstats.core.tls import FileWatch

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    import structlog

    from grstats.core.tls import TlsConfig


@dataclass(frozen=True, slots=True)
class Security:
    """TLS files and the token (never shown by ``repr``).

    Attributes:
        tls: the certificate files, or None for plain gRPC.
        token: the shared secret, or None for no token.
    """

    tls: TlsConfig | None = None
    token: str | None = field(default=None, repr=False)
    _watch: FileWatch | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.tls is not None:
            object.__setattr__(self, "_watch", FileWatch(self.tls))

    @classmethod
    def from_files(
        cls, tls: TlsConfig | None, token_file: Path | None, setting: str = "token_file"
    ) -> Security:
        """Read the token from ``token_file`` (ConfigError names ``setting``)."""
        token = None if token_file is None else read_token(token_file, setting)
        return cls(tls, token)

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        """The metadata every call carries (the token's, if any)."""
        return token_metadata(self.token)

    @property
    def binds_members(self) -> bool:
        """Whether every peer's messages are bound to the member its certificate names.

        With mutual TLS every peer presents a certificate, and the Gossip servicer takes a
        message only of the member it names (:mod:`grstats.agent.identity`); the agent then
        takes other members' values from answers only as the gossip state's
        :class:`~grstats.agent.gossip.relays.RelayRule` admits them.
        """
        return self.tls is not None and self.tls.require_client_cert

    def bind(self, server: grpc.aio.Server, address: str) -> int:
        """Add ``address`` to ``server``, over TLS when configured; return the bound port."""
        if self.tls is None:
            port: int = server.add_insecure_port(address)
        else:
            port = server.add_secure_port(address, self.tls.server_credentials())
        return port

    def interceptors(
        self, services: tuple[str, ...], log: structlog.typing.FilteringBoundLogger
    ) -> list[grpc.aio.ServerInterceptor]:
        """The server interceptors: the token check on ``services`` when there is a token."""
        return [] if self.token is None else [TokenInterceptor(self.token, services, log)]

    def renewed(self) -> bool:
        """Whether the TLS files changed to a set that loads since the last call said so.

        A client that keeps channels open (the agent's transport) asks before its calls and
        reopens them when true, so that it presents a renewed certificate without a restart.
        """
        return self._watch is not None and self._watch.changed()

    def channel(self, target: str, options: Sequence[tuple[str, object]] = ()) -> grpc.aio.Channel:
        """A client channel to ``target``, over TLS (with this side's certificate) if set."""
        if self.tls is None:
            return grpc.aio.insecure_channel(target, options=list(options))
        return grpc.aio.secure_channel(
            target, self.tls.channel_credentials(), options=list(options)
        )
