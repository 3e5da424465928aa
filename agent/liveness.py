"""``Liveness``: tells the operator when a member turns not connected, and when it is live again.

Called once per period by the agent, after its round with the peers. A member turning
``CONNECTED NO`` (nothing live heard of it for ``silence_periods`` periods: its agent silent,
directly and relayed, or heard but not reading its server; :func:`grstats.agent.known.connected`,
the rule the tables use) is one warning, ``member_not_connected``, naming the member, its
``host:port`` as the group's view lists it (MEMBER_HOST and MEMBER_PORT), its agent's address
when known, for how long nothing live was heard of it, the ``reason`` (:func:`silence_reason`:
``agent_silent`` or ``server_not_read``, from what the gossip holds, so the same at every agent)
and ``member_state``, the state its own ``replication_group_members`` showed at its last read
(:func:`own_state`: ERROR for a member that left on an error, not the OFFLINE of a clean leave).
Its return is one info line, ``member_connected``, with how long it was not connected. Nothing
is logged in between, however long the silence lasts.

A member the agent only remembers (its registry, after a restart) and has not heard yet is
given one full ``silence_us`` from the agent's first period before it is called silent (its
agent may simply not have pushed yet); its silence counts from when the registry last saw it.
Pure: no I/O, no clock of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from grstats.agent.gossip import Key
from grstats.agent.known import connected, departed, own_view, reported, state_in
from grstats.core.address import join_address
from grstats.core.model import SourceHealth

if TYPE_CHECKING:
    from collections.abc import Mapping

    import structlog

    from grstats.agent.gossip import GossipState
    from grstats.core.model import MemberSnapshot


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

    @property
    def snapshot(self) -> MemberSnapshot | None:
        """The last read of the member (None when it failed)."""
        ...


@dataclass(frozen=True, slots=True)
class Turn:
    """A member turned not connected (``silent``) or connected again, and why, in words."""

    member_id: str
    silent: bool
    detail: str


class Liveness:
    """The members found silent so far, and the two log lines of each change: see the module."""

    def __init__(self, local: Watcher) -> None:
        self._local = local
        self._started_us: int | None = None
        self._silent: dict[str, int] = {}  # member -> when it was last live, µs

    @property
    def silent(self) -> Mapping[str, int]:
        """Member -> when it was last live (µs), for the members now logged as not connected."""
        return self._silent

    def check(
        self,
        now_us: int,
        silence_us: int,
        agents: Mapping[str, str],
        offsets: Mapping[str, int] | None = None,
    ) -> list[Turn]:
        """Log the members that turned not connected, or connected again, since the last call.

        ``agents`` maps members to their agents' addresses, as heard directly; ``offsets`` are
        the members' clock offsets (µs), which place their last reports on this agent's clock.
        Returns the same changes (the agent records them as events).
        """
        turns: list[Turn] = []
        state, log, local = self._local.state, self._local.log, self._local.snapshot
        offsets = offsets or {}
        if self._started_us is None:
            self._started_us = now_us
        for member_id, origin in state.origins.items():
            if member_id == state.local_id:
                continue
            heard_us = origin.fresh_at_us if origin.fresh_at_us > 0 else None
            if connected(
                state, local, member_id, now_us=now_us, silence_us=silence_us, offsets=offsets
            ):
                since = self._silent.pop(member_id, None)
                if since is not None:
                    log.info(
                        "member_connected",
                        member_id=member_id,
                        member=_address(state, member_id),
                        agent=agents.get(member_id),
                        silent_s=_seconds(now_us - since),
                    )
                    silent_for = _seconds(now_us - since)
                    turns.append(Turn(member_id, silent=False, detail=f"silent {silent_for} s"))
                continue
            if member_id in self._silent:
                continue
            if heard_us is None and now_us - self._started_us <= silence_us:
                continue  # only remembered: its agent may not have pushed yet
            seen = reported(state, local, member_id, offsets)
            if not seen and now_us - origin.first_seen_us <= silence_us:
                continue  # heard, but its first report may still be on its way
            # The last live report; never reported in this run: as the registry remembers it.
            last_us = seen or heard_us or origin.first_seen_us
            self._silent[member_id] = last_us
            reason, member_state = silence_reason(state, member_id), own_state(state, member_id)
            log.warning(
                "member_not_connected",
                member_id=member_id,
                member=_address(state, member_id),
                agent=agents.get(member_id),
                silent_s=_seconds(now_us - last_us),
                reason=reason,
                member_state=member_state,
            )
            detail = (
                f"{reason}: nothing live heard for {_seconds(now_us - last_us)} s; "
                f"{member_state} at its last read"
            )
            turns.append(Turn(member_id, silent=True, detail=detail))
        for member_id in [m for m in self._silent if m not in state.origins]:
            del self._silent[member_id]  # purged or forgotten: nothing more to say
        return turns


def silence_reason(state: GossipState, member_id: str) -> str:
    """Why ``member_id`` is not connected, from its agent's last word: the same at every agent.

    ``server_not_read`` when the newest value its agent sent (by stamp) after its last report
    is a HEALTH that says its read failed: an agent records one at every read that fails
    (:meth:`grstats.agent.local.LocalMember.read`), so an agent that runs beside a server it
    cannot read keeps saying so. Else ``agent_silent``: its last word was a report (COUNTS), or
    nothing was heard of it in this run, and then nothing came. Not when it was last heard, as
    :meth:`~grstats.agent.gossip.GossipState.connected` says: a peer that got its last report
    relayed a period late would still hear it when its report's age passes the silence, and
    give another reason for the same SIGKILL.
    """
    origin = state.origins.get(member_id)
    if origin is None or origin.fresh_at_us <= 0:
        return "agent_silent"  # only remembered (a registry): not heard in this run
    health, report = origin.values.get(Key.HEALTH), origin.values.get(Key.COUNTS)
    if health is None or not isinstance(health.update.value, SourceHealth):
        return "agent_silent"
    after_report = report is None or health.update.stamp > report.update.stamp
    return "server_not_read" if after_report and not health.update.value.ok else "agent_silent"


def own_state(state: GossipState, member_id: str) -> str:
    """The MEMBER_STATE of ``member_id``'s own row in its own last view, as its agent sent it.

    What the member's own ``replication_group_members`` showed at its last read: ERROR for a
    member that left the group on an error (MySQL lists it alone, ERROR), ONLINE for a member
    whose agent alone died. A member whose agent never sent a view listing it: the state this
    agent serves for it out of the view (:func:`~grstats.agent.known.departed`).
    """
    own = own_view(state, None, member_id)
    listed = state_in(own, member_id) if own is not None else ""
    return listed or departed(state, member_id).member_state


def _address(state: GossipState, member_id: str) -> str | None:
    """``member_id``'s MEMBER_HOST:MEMBER_PORT as a view held lists it, else None."""
    row = departed(state, member_id)
    return join_address(row.member_host, row.member_port or 0) if row.member_host else None


def _seconds(us: int) -> float:
    return round(max(us, 0) / 1_000_000, 1)
