"""``Liveness``: tells the operator when a member's agent turns silent, and when it is heard again.

Called once per period by the agent, after its round with the peers. A member turning
``CONNECTED NO`` (its agent not heard, directly or relayed, for ``silence_periods`` periods:
:meth:`grstats.agent.gossip.GossipState.connected`, the rule the tables use) is one warning,
``member_not_connected``, naming the member, its ``host:port`` as the group's view lists it
(MEMBER_HOST and MEMBER_PORT), its agent's address when known, and for how long it has been
silent; its return is one info line, ``member_connected``, with how long it was silent. Nothing
is logged in between, however long the silence lasts.

A member the agent only remembers (its registry, after a restart) and has not heard yet is
given one full ``silence_us`` from the agent's first period before it is called silent (its
agent may simply not have pushed yet); its silence counts from when the registry last saw it.
Pure: no I/O, no clock of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from grstats.agent.address import join_address
from grstats.agent.known import departed

if TYPE_CHECKING:
    from collections.abc import Mapping

    import structlog

    from grstats.agent.gossip import GossipState


class Watcher(Protocol):
    """What :class:`Liveness` reads of the agent's local member (``LocalMember`` has it)."""

    @property
    def state(self) -> GossipState:
        """The gossip state."""
        ...

    @property
    def log(self) -> structlog.typing.FilteringBoundLogger:
        """The agent's logger (bound to its member once known)."""
        ...


class Liveness:
    """The members found silent so far, and the two log lines of each change: see the module."""

    def __init__(self, local: Watcher) -> None:
        self._local = local
        self._started_us: int | None = None
        self._silent: dict[str, int] = {}  # member -> when it was last heard, µs

    @property
    def silent(self) -> Mapping[str, int]:
        """Member -> when it was last heard (µs), for the members now logged as silent."""
        return self._silent

    def check(self, now_us: int, silence_us: int, agents: Mapping[str, str]) -> None:
        """Log the members whose agent turned silent, or was heard again, since the last call.

        ``agents`` maps members to their agents' addresses, as heard directly.
        """
        state, log = self._local.state, self._local.log
        if self._started_us is None:
            self._started_us = now_us
        for member_id, origin in state.origins.items():
            if member_id == state.local_id:
                continue
            heard_us = origin.fresh_at_us if origin.fresh_at_us > 0 else None
            if state.connected(member_id, now_us, silence_us):
                since = self._silent.pop(member_id, None)
                if since is not None:
                    log.info(
                        "member_connected",
                        member_id=member_id,
                        member=_address(state, member_id),
                        agent=agents.get(member_id),
                        silent_s=_seconds(now_us - since),
                    )
                continue
            if member_id in self._silent:
                continue
            if heard_us is None and now_us - self._started_us <= silence_us:
                continue  # only remembered: its agent may not have pushed yet
            # Never heard in this run: last seen as the registry remembers it.
            last_us = heard_us if heard_us is not None else origin.first_seen_us
            self._silent[member_id] = last_us
            log.warning(
                "member_not_connected",
                member_id=member_id,
                member=_address(state, member_id),
                agent=agents.get(member_id),
                silent_s=_seconds(now_us - last_us),
            )
        for member_id in [m for m in self._silent if m not in state.origins]:
            del self._silent[member_id]  # purged or forgotten: nothing more to say


def _address(state: GossipState, member_id: str) -> str | None:
    """``member_id``'s MEMBER_HOST:MEMBER_PORT as a view held lists it, else None."""
    row = departed(state, member_id)
    return join_address(row.member_host, row.member_port or 0) if row.member_host else None


def _seconds(us: int) -> float:
    return round(max(us, 0) / 1_000_000, 1)
