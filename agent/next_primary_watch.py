"""``NextPrimaryWatch``: tells the operator when the member GR would elect next is unsafe, once.

Called once per period by the agent, after its round with the peers. The forecast is
:func:`grstats.core.election.next_primary` over the agent's served verdict (the rows of
``replication_group_status`` and ``replication_group_member_status``, MEMBER_WEIGHT as gossiped,
built once a period for everything that asks): the member the single-primary election picks
if the primary failed now, the same forecast ``grstats query status`` shows. It turning
unsafe (errant transactions, or more than :data:`~grstats.core.election.BACKLOG_WARNING`
transactions to apply) is one warning,
``next_primary_unsafe``, naming the member and why; a change of member or of reason is a new
warning, and its end (safe again, another member next, or none) one info line,
``next_primary_safe``. Nothing is logged while it stays so, however its backlog moves. Pure:
no I/O, no clock of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grstats.core.election import BACKLOG_WARNING, next_primary
from grstats.core.rows import REPLICATION_GROUP_MEMBER_STATUS, REPLICATION_GROUP_STATUS, by_name

if TYPE_CHECKING:
    from collections.abc import Mapping

    import structlog

    from grstats.agent.served import Table
    from grstats.core.election import NextPrimary

#: What makes it unsafe, as logged: (member, holds errant transactions, backlog over the mark).
Unsafe = tuple[str, bool, bool]


class NextPrimaryWatch:
    """The next primary's unsafety, as last logged."""

    def __init__(self) -> None:
        self._unsafe: Unsafe | None = None

    def check(
        self, served: Mapping[str, Table], log: structlog.typing.FilteringBoundLogger
    ) -> NextPrimary | None:
        """Log when the next primary turned unsafe, or safe again; return the forecast.

        ``served`` are the agent's tables now (plain), of which the verdict's two are read.
        """
        groups = by_name(*served[REPLICATION_GROUP_STATUS.name])
        mode = groups[0].get("MODE") if groups else ""
        found = next_primary(
            by_name(*served[REPLICATION_GROUP_MEMBER_STATUS.name]),
            single_primary=mode == "single-primary",
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
