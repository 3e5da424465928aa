"""``TlsWatch``: a TLS mistake between this agent and a peer is named once, as a warning.

gRPC's error of a dial that failed in the handshake says no more than BoringSSL's code ("Tls
handshake failed ... WRONG_VERSION_NUMBER"), or only "Socket closed" when the peer refused
this agent (a TLS server that got plaintext, or our certificate); and the agent that refused
never hears of it in Python. So when a dial fails that way, the peer is dialled once more as
``grstats doctor`` dials it (:func:`~grstats.agent.tls_handshake.diagnose`, the doctor's
classification), and what it found is logged:

* ``tls_mismatch`` (warning): ``peer``, ``reason`` ("peer speaks plaintext", "peer speaks TLS
  and this agent has no [tls] section", "peer's certificate is not signed by our CA (...)",
  "peer's certificate expired at ...", "peer refused our certificate, which expired at
  ...") and gRPC's ``error``; once per peer and reason;
* ``tls_mismatch_resolved`` (info): an Exchange with that peer succeeded again.

In a group each agent dials the other, so both sides of a mistake say it, each in its own
words. The peer is dialled again at most every :data:`DIAGNOSE_EVERY_S` while its dials fail,
so a peer is never probed more than that. The diagnosis (and Python's ``ssl`` with it) is
loaded at the first dial that needs it: an agent whose dials never fail so loads none of it.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from grstats.core.address import split_address
from grstats.core.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import structlog

    from grstats.core.tls import TlsConfig

    Diagnose = Callable[[TlsConfig | None, str, int, float], Awaitable[str | None]]

#: How long the dial that diagnoses may take (seconds).
DIAGNOSE_TIMEOUT_S = 2.0
#: How often a peer whose dials keep failing is diagnosed again, at most (seconds).
DIAGNOSE_EVERY_S = 60.0
#: gRPC's words of a dial that failed in, or right after, the TLS handshake.
HANDSHAKE_SIGNS = ("handshake failed", "Socket closed", "Connection reset")


class TlsWatch:
    """Diagnoses the failed dials whose gRPC error looks like TLS (see the module docstring).

    ``tls`` is this agent's ``[tls]`` (None: plaintext); ``log`` returns the agent's logger
    when a line is written (it is bound to the member once that is known).
    """

    def __init__(
        self,
        tls: TlsConfig | None,
        log: Callable[[], structlog.typing.FilteringBoundLogger],
        *,
        clock: Callable[[], float] = time.monotonic,
        diagnose: Diagnose | None = None,
    ) -> None:
        self._tls = tls
        self._log = log
        self._clock = clock
        self._diagnose = diagnose
        self._warned: dict[str, str] = {}  # peer -> the reason last warned
        self._tried_at: dict[str, float] = {}  # peer -> when it was last diagnosed
        self._tasks: dict[str, asyncio.Task[None]] = {}

    @property
    def mismatches(self) -> dict[str, str]:
        """The peers with a TLS mistake warned and not resolved, and its reason."""
        return dict(self._warned)

    def failed(self, peer: str, error: str) -> None:
        """A call to ``peer`` failed UNAVAILABLE with ``error``: diagnose it if it may be TLS."""
        if not any(sign in error for sign in HANDSHAKE_SIGNS) or peer in self._tasks:
            return
        now = self._clock()
        last = self._tried_at.get(peer)
        if last is not None and now - last < DIAGNOSE_EVERY_S:
            return
        self._tried_at[peer] = now
        self._tasks[peer] = asyncio.get_running_loop().create_task(
            self._diagnosed(peer, error), name=f"tls-diagnose-{peer}"
        )

    def reached(self, peer: str) -> None:
        """An Exchange with ``peer`` succeeded: a mistake warned of it is over."""
        self._tried_at.pop(peer, None)
        reason = self._warned.pop(peer, None)
        if reason is not None:
            self._log().info("tls_mismatch_resolved", peer=peer, reason=reason)

    def _diagnose_with(self) -> Diagnose:
        """The diagnosis given, else the doctor's (loaded now: the first dial to diagnose)."""
        if self._diagnose is None:
            from grstats.agent.tls_handshake import diagnose  # noqa: PLC0415 (ssl on demand)

            self._diagnose = diagnose
        return self._diagnose

    async def _diagnosed(self, peer: str, error: str) -> None:
        try:
            host, port = split_address(peer, "peers")
            reason = await self._diagnose_with()(self._tls, host, port, DIAGNOSE_TIMEOUT_S)
        except ConfigError:  # not host:port: the dial's own error says so
            return
        finally:
            self._tasks.pop(peer, None)
        if reason is None or self._warned.get(peer) == reason:
            return
        self._warned[peer] = reason
        self._log().warning("tls_mismatch", peer=peer, reason=reason, error=error)

    async def aclose(self) -> None:
        """Cancel the diagnoses under way."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
