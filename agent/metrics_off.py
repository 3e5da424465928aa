"""The agent's figures without ``/metrics``: what its parts count, and a counter of nothing.

An agent counts its reads, its messages and its periods for ``/metrics``
(:class:`~grstats.agent.metrics.AgentMetrics`, prometheus-client's counters and registry).
Without ``metrics_listen`` nobody reads them, so ``grstats agent`` hands the agent
:class:`NoMetrics` instead and never imports prometheus-client (issue 50: the lightest
agent; 3.6 MiB of RSS). Both satisfy :class:`Figures`, the seam the agent's parts call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable, Sequence

    from grstats.agent.metrics_series import SeriesInput

__all__ = ["Figures", "NoMetrics"]


class Figures(Protocol):
    """What the agent counts, called from its event loop; every call must be cheap.

    :class:`~grstats.agent.local.LocalMember` calls :meth:`source_read` once a read (once a
    period); :class:`~grstats.agent.rounds.PeerRounds` calls :meth:`sent`, :meth:`received`,
    :meth:`failed` and :meth:`round_trip` once a message (a few a period per peer),
    :meth:`peer_build` once a message that names its build and :meth:`peer_gone` once a
    forgotten member; :class:`~grstats.agent.runtime.Agent` calls :meth:`overran` once an
    overrun period, :meth:`events` once a period with new events, :meth:`prepare` once a
    period mid-period while ``/metrics`` is served, and :meth:`watch` once, at start.
    """

    def source_read(self, seconds: float, *, ok: bool) -> None:
        """Note one read of the agent's own member: its duration and whether it succeeded."""

    def sent(self, peer: str, kind: str, size: int) -> None:
        """Count one message of ``size`` bytes sent to ``peer``."""

    def received(self, member: str, kind: str, size: int) -> None:
        """Count one message of ``size`` bytes from ``member``'s agent (``unknown``: not known)."""

    def failed(self, peer: str, kind: str) -> None:
        """Count one failed push or exchange with ``peer``."""

    def round_trip(self, peer: str, seconds: float) -> None:
        """Observe one exchange's round trip with ``peer``."""

    def overran(self) -> None:
        """Count one period overrun."""

    def peer_build(self, member: str, version: str, revision: int) -> None:
        """Say which grstats ``member``'s agent runs (``version`` ``''``: it did not say)."""

    def peer_gone(self, member: str) -> None:
        """Forget ``member``'s build (the member was forgotten)."""

    def events(self, group_name: str, primaries: int, states: Sequence[tuple[str, str]]) -> None:
        """Count primary elections and (member, state) changes newly found in the events."""

    def prepare(self, valid_s: float) -> None:
        """Render ``/metrics`` ahead, on the agent's loop, for scrapes in ``valid_s`` seconds."""

    def watch(
        self,
        build: Callable[[], SeriesInput],
        version: Callable[[], object],
        loop: asyncio.AbstractEventLoop,
    ) -> object:
        """Serve the members' and the group's series, built by ``build`` on ``loop``."""


def _nothing(*_args: object, **_kwargs: object) -> None:
    """Count nothing: nobody reads the figures."""


class NoMetrics:
    """:class:`Figures` that count nothing, for an agent without ``metrics_listen``.

    Every method is the same call that does nothing (one definition, whatever the signature).
    """

    source_read = sent = received = failed = round_trip = overran = staticmethod(_nothing)
    peer_build = peer_gone = events = prepare = watch = staticmethod(_nothing)
