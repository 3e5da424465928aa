"""``SplitBrainWatch``: tells the operator when a member is split from the group, once.

Called once per period by the agent, after its round with the peers. A member turning split
from the group's view (:func:`grstats.agent.known.split_brain`, the rule of the verdict's
SPLIT_BRAIN: MySQL Shell's "split-brain!", ``instance_diagnostics`` in
modules/adminapi/cluster/status.cc) is one warning, ``member_split_brain``, naming the member,
its ``host:port`` and the state its own server shows (ONLINE or RECOVERING). Its end (the
member rejoined, left in ERROR, or is no longer connected) is one info line,
``member_split_brain_ended``; a new split after that is a new warning. Nothing is logged in
between, however long the split lasts. Pure: no I/O, no clock of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grstats.agent.known import departed, served_view, split_brain
from grstats.core.address import join_address

if TYPE_CHECKING:
    from collections.abc import Mapping

    import structlog

    from grstats.agent.gossip import GossipState
    from grstats.core.model import MemberSnapshot


class SplitBrainWatch:
    """The members split from the group now, as last logged."""

    def __init__(self) -> None:
        self._split: dict[str, str] = {}  #: member -> the state its own server showed

    def check(  # noqa: PLR0913  (the inputs of split_brain(), plus the logger)
        self,
        state: GossipState,
        local: MemberSnapshot | None,
        log: structlog.typing.FilteringBoundLogger,
        *,
        now_us: int,
        silence_us: int,
        offsets: Mapping[str, int],
    ) -> dict[str, str]:
        """Log the members whose split began or ended since the last call; return the split."""
        view, _ = served_view(state, local)
        found = split_brain(
            state, local, view, now_us=now_us, silence_us=silence_us, offsets=offsets
        )
        for member_id, own in sorted(found.items()):
            if member_id not in self._split:
                log.warning(
                    "member_split_brain",
                    member_id=member_id,
                    member=_address(state, local, member_id),
                    state=own,
                    view_id=view.view_id,
                )
        for member_id in sorted(m for m in self._split if m not in found):
            log.info(
                "member_split_brain_ended",
                member_id=member_id,
                member=_address(state, local, member_id),
            )
        self._split = found
        return found


def _address(state: GossipState, local: MemberSnapshot | None, member_id: str) -> str | None:
    """``member_id``'s MEMBER_HOST:MEMBER_PORT as a view held lists it, else None."""
    rows = local.view.members if local is not None else ()
    row = next((r for r in rows if r.member_id == member_id), None) or departed(state, member_id)
    return join_address(row.member_host, row.member_port or 0) if row.member_host else None
