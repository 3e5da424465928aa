"""``NextPrimaryWatch``: tells the operator when the member GR would elect next is unsafe, once.

Called once per period by the agent, after its round with the peers. The forecast is
:func:`grstats.agent.election.next_primary` over the agent's member status rows
(:func:`grstats.agent.status.group_status`), each weight as gossiped
(:func:`~grstats.agent.status.member_weights`): the member the single-primary election picks if
the primary failed now. It turning unsafe (errant transactions, or more than
:data:`~grstats.agent.election.BACKLOG_WARNING` transactions to apply) is one warning,
``next_primary_unsafe``, naming the member and why; a change of member or of reason is a new
warning, and its end (safe again, another member next, or none) one info line,
``next_primary_safe``. Nothing is logged while it stays so, however its backlog moves. Pure:
no I/O, no clock of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grstats.agent.election import BACKLOG_WARNING, next_primary
from grstats.agent.status import group_status, member_weights

if TYPE_CHECKING:
    from collections.abc import Mapping

    import structlog

    from grstats.agent.election import NextPrimary
    from grstats.agent.gossip import GossipState
    from grstats.agent.model import MemberSnapshot

#: What makes it unsafe, as logged: (member, holds errant transactions, backlog over the mark).
Unsafe = tuple[str, bool, bool]


class NextPrimaryWatch:
    """The next primary's unsafety, as last logged."""

    def __init__(self) -> None:
        self._unsafe: Unsafe | None = None

    def check(  # noqa: PLR0913  (the inputs of group_status(), plus the logger)
        self,
        state: GossipState,
        local: MemberSnapshot | None,
        log: structlog.typing.FilteringBoundLogger,
        *,
        now_us: int,
        silence_us: int,
        offsets: Mapping[str, int],
    ) -> NextPrimary | None:
        """Log when the next primary turned unsafe, or safe again; return the forecast."""
        group, rows = group_status(state, local, now_us, silence_us, offsets_us=offsets)
        found = next_primary(
            [row.as_dict() for row in rows],
            single_primary=group.mode == "single-primary",
            weights=member_weights(state, local, (row.member_id for row in rows)),
        )
        unsafe = None
        if found is not None and found.warning:
            backlog = (found.transactions_behind or 0) > BACKLOG_WARNING
            unsafe = (found.member_id, bool(found.errant_transactions), backlog)
        if unsafe != self._unsafe and found is not None and unsafe is not None:
            log.warning(
                "next_primary_unsafe",
                member_id=found.member_id,
                warning=found.warning,
                transactions_behind=found.transactions_behind,
                errant_transactions=found.errant_transactions or None,
            )
        elif unsafe is None and self._unsafe is not None:
            log.info(
                "next_primary_safe",
                member_id=found.member_id if found is not None else None,
                was=self._unsafe[0],
            )
        self._unsafe = unsafe
        return found
