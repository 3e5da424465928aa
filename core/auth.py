"""The shared-secret token: read from a file, sent as gRPC metadata, checked by the server.

Every agent of a group and every client are given the same token in a file (``token_file``,
``--token-file``). Clients send it on each call as ``authorization: Bearer <token>``; the
server's :class:`TokenInterceptor` answers UNAUTHENTICATED to a Gossip or Query call whose
token is missing or wrong (compared in constant time) and logs the refusal, never the token
(at most once per 10 s per reason, with the count of the refusals not logged, so that a
flood of bad calls does not flood the log).
Health and reflection stay open: they tell nothing about the members. The token protects
nothing on the wire by itself: use it on a trusted network, or with TLS.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Any

import grpc

from grstats.core.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path

    import structlog

#: The metadata key the token travels under.
METADATA_KEY = "authorization"
#: A refusal is logged at most this often per reason, with the count of those not logged.
LOG_EVERY_S = 10.0
#: A token's length bounds, in characters.
MIN_TOKEN_CHARS = 16
MAX_TOKEN_CHARS = 4096


def read_token(path: Path, key: str = "token_file") -> str:
    """Return the token in ``path``: its text without surrounding whitespace.

    Raises:
        ConfigError: naming ``key``, when the file cannot be read or the token is shorter
            than 16 or longer than 4096 characters or not printable ASCII without spaces.
            The message never holds the token.
    """
    try:
        token = path.read_bytes().strip()
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {str(path)!r}: {exc.strerror}") from exc
    if not MIN_TOKEN_CHARS <= len(token) <= MAX_TOKEN_CHARS:
        raise ConfigError(
            f"{key}: the token in {str(path)!r} has {len(token)} characters, not "
            f"{MIN_TOKEN_CHARS}..{MAX_TOKEN_CHARS}"
        )
    if any(not 0x21 <= byte <= 0x7E for byte in token):
        raise ConfigError(
            f"{key}: the token in {str(path)!r} is not printable ASCII without spaces"
        )
    return token.decode("ascii")


def token_metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    """The call metadata that carries ``token`` (none without a token)."""
    return () if token is None else ((METADATA_KEY, f"Bearer {token}"),)


class TokenInterceptor(grpc.aio.ServerInterceptor):
    """Lets a call to one of ``services`` through only with the token; see the module doc."""

    def __init__(
        self, token: str, services: tuple[str, ...], log: structlog.typing.FilteringBoundLogger
    ) -> None:
        self._expected = f"Bearer {token}".encode("ascii")
        self._services = frozenset(services)
        self._log = log
        from grstats.core.log import ThrottledWarning  # noqa: PLC0415  (structlog: the agent's)

        self._warn = ThrottledWarning(self._log, "rpc_unauthenticated", LOG_EVERY_S)

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        """The method's handler, or one that refuses the call UNAUTHENTICATED."""
        handler = await continuation(handler_call_details)
        method: str = handler_call_details.method
        if handler is None or not self._guarded(method):
            return handler
        presented = b""
        for key, value in handler_call_details.invocation_metadata or ():
            if key == METADATA_KEY:
                presented = value.encode("utf-8", "replace") if isinstance(value, str) else value
        if hmac.compare_digest(presented, self._expected):
            return handler
        reason = "no token" if not presented else "wrong token"
        return _refusing(handler, method, reason, self._refused)

    def _refused(self, method: str, peer: str, reason: str) -> None:
        """Log a refusal: the first, then at most one per ``LOG_EVERY_S`` per reason."""
        self._warn(reason, method=method, peer=peer, reason=reason)

    def _guarded(self, method: str) -> bool:
        _, _, rest = method.partition("/")
        return rest.partition("/")[0] in self._services


def _refusing(
    handler: grpc.RpcMethodHandler[Any, Any],
    method: str,
    reason: str,
    note: Callable[[str, str, str], None],
) -> grpc.RpcMethodHandler[Any, Any]:
    """A handler of ``handler``'s kind that notes the refusal and aborts UNAUTHENTICATED."""

    async def refuse(_request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        note(method, context.peer(), reason)
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, f"{reason}: give the group's token")

    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(refuse)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(refuse)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(refuse)
    return grpc.unary_unary_rpc_method_handler(refuse)
