"""A row of ``replication_group_member_lag``: WL#7374 fields of a member's applier channel.

WL#7374 keeps, per stage, the last transaction that completed it and the one in it now, each
with its GTID, original and immediate commit times and the stage's start (and end) times, all
in µs since the epoch (``Trx_monitoring_info``, sql/rpl_gtid_misc.cc). A transaction text is
``''`` when nothing is there (F5), ``ANONYMOUS``, or ``uuid:gno`` / ``uuid:tag:gno``; a time of
0 means "not set" and prints as ``0000-00-00 00:00:00.000000``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from grstats.core.gtid import Gtid
from grstats.core.rows.domains import RowValueError, canonical_gtid_text, is_uuid
from grstats.core.rows.row import Row
from grstats.core.rows.schema import GROUP_REPLICATION_APPLIER, REPLICATION_GROUP_MEMBER_LAG, Table

#: The transaction text of a transaction without a GTID.
ANONYMOUS = "ANONYMOUS"

#: The four transactions of the channel: all NULL (None) when the server has no WL#7374
#: columns (MySQL 5.7), so that nothing about them, the lag included, is known.
TRANSACTION_FIELDS = (
    "last_queued_transaction",
    "queueing_transaction",
    "last_applied_transaction",
    "applying_transaction",
)


@dataclass(frozen=True, slots=True)
class ApplierStatusRow(Row):
    """One member's ``group_replication_applier`` transaction monitoring, plus its lag.

    The defaults are an idle channel that has seen nothing: empty transactions, zero times.
    """

    TABLE: ClassVar[Table] = REPLICATION_GROUP_MEMBER_LAG

    channel_name: str = GROUP_REPLICATION_APPLIER
    member_id: str = ""
    last_queued_transaction: str | None = ""
    last_queued_transaction_original_commit_timestamp: int = 0
    last_queued_transaction_immediate_commit_timestamp: int = 0
    last_queued_transaction_start_queue_timestamp: int = 0
    last_queued_transaction_end_queue_timestamp: int = 0
    queueing_transaction: str | None = ""
    queueing_transaction_original_commit_timestamp: int = 0
    queueing_transaction_immediate_commit_timestamp: int = 0
    queueing_transaction_start_queue_timestamp: int = 0
    last_applied_transaction: str | None = ""
    last_applied_transaction_original_commit_timestamp: int = 0
    last_applied_transaction_immediate_commit_timestamp: int = 0
    last_applied_transaction_start_apply_timestamp: int = 0
    last_applied_transaction_end_apply_timestamp: int = 0
    applying_transaction: str | None = ""
    applying_transaction_original_commit_timestamp: int = 0
    applying_transaction_immediate_commit_timestamp: int = 0
    applying_transaction_start_apply_timestamp: int = 0
    applier_lag_seconds: float | None = None
    transactions_behind: int | None = None
    transport_seconds: float | None = None
    waiting_seconds: float | None = None
    apply_seconds: float | None = None

    def __post_init__(self) -> None:
        super(ApplierStatusRow, self).__post_init__()
        if self.member_id and not is_uuid(self.member_id):
            raise RowValueError("MEMBER_ID", self.member_id, "a 36-character UUID or ''")
        for field in TRANSACTION_FIELDS:
            text = getattr(self, field)
            if text and text != ANONYMOUS:
                canonical = canonical_gtid_text(
                    field.upper(), text, Gtid.parse, "'', ANONYMOUS or one GTID"
                )
                object.__setattr__(self, field, canonical)

    @classmethod
    def unknown(cls, member_id: str) -> ApplierStatusRow:
        """The row of a server without WL#7374's columns (MySQL 5.7): every transaction NULL."""
        return cls(
            member_id=member_id,
            last_queued_transaction=None,
            queueing_transaction=None,
            last_applied_transaction=None,
            applying_transaction=None,
        )

    @property
    def timestamps_unknown(self) -> bool:
        """Whether the server has no WL#7374 columns (MySQL 5.7): every transaction NULL."""
        return all(getattr(self, field) is None for field in TRANSACTION_FIELDS)

    def with_lag(self, now_us: int) -> ApplierStatusRow:
        """Return this row with APPLIER_LAG_SECONDS at ``now_us`` and the lag by stage."""
        transport, waiting, apply = stage_seconds(self)
        return replace(
            self,
            applier_lag_seconds=lag_seconds(self, now_us),
            transport_seconds=transport,
            waiting_seconds=waiting,
            apply_seconds=apply,
        )


def stage_seconds(row: ApplierStatusRow) -> tuple[float | None, float | None, float | None]:
    """Return the lag by stage, in seconds: (transport, waiting, apply); None where not known.

    From WL#7374's times of the ``group_replication_applier`` channel, each stage measured on
    one transaction, as the worklog keeps them:

    * transport: the last queued transaction, from its original commit to the end of its
      queueing (sent, certified and written to the channel's relay log);
    * apply: the last applied transaction, from the start to the end of its apply;
    * waiting: the last applied transaction, from its original commit to the start of its
      apply, less the transport. Exact when it is also the last queued transaction (the
      applier keeps up); otherwise MySQL no longer keeps its own queueing times, and the last
      queued transaction's transport stands for its own (an estimate, never below 0).

    MySQL 5.7 has none of these columns (every transaction NULL): all three are None. A time
    not set (0) makes its stage None. Clock skew between members can make transport (and so
    waiting) negative: returned as is, as for APPLIER_LAG_SECONDS.
    """
    if row.timestamps_unknown:
        return None, None, None
    transport = _span(
        row.last_queued_transaction,
        row.last_queued_transaction_original_commit_timestamp,
        row.last_queued_transaction_end_queue_timestamp,
    )
    apply = _span(
        row.last_applied_transaction,
        row.last_applied_transaction_start_apply_timestamp,
        row.last_applied_transaction_end_apply_timestamp,
    )
    delivered = _span(
        row.last_applied_transaction,
        row.last_applied_transaction_original_commit_timestamp,
        row.last_applied_transaction_start_apply_timestamp,
    )
    waiting = None if delivered is None or transport is None else round(delivered - transport, 6)
    if waiting is not None and row.last_applied_transaction != row.last_queued_transaction:
        waiting = max(0.0, waiting)  # another transaction's transport: below 0 means no wait
    return transport, waiting, apply


def _span(transaction: str | None, start_us: int, end_us: int) -> float | None:
    """``end_us`` - ``start_us`` in seconds, None without a transaction or either time."""
    if not transaction or not start_us or not end_us:
        return None
    return round((end_us - start_us) / 1_000_000, 6)


def lag_seconds(row: ApplierStatusRow, now_us: int) -> float | None:
    """Return how far behind the member's applier is, in seconds (None: not known).

    grstats's definition, from WL#7374's fields of the ``group_replication_applier`` channel:

    * applying a transaction: ``now`` minus its original commit time, so the figure grows while
      the applier is stuck on it;
    * not applying, with work waiting (a transaction being queued, or a last queued one that
      is not the last applied): ``now`` minus the last applied transaction's original commit time
      (its successor, the oldest waiting, committed after it: an upper bound within one
      transaction), or minus the last queued one's when nothing was applied yet;
    * nothing queued or applying (the last queued transaction is the last applied, none was
      queued, or the channel has seen none): 0. The member has applied all it received, so it
      is not behind, however long ago that last transaction committed (an idle secondary, or a
      primary whose applier channel carries only view changes).

    A server without these columns (MySQL 5.7: every transaction NULL), or a time needed but
    not set (0), gives None.
    Clock skew between members can make the figure negative; it is returned as is so that the
    skew stays visible.
    """
    if row.timestamps_unknown:
        return None
    if row.applying_transaction:
        original = row.applying_transaction_original_commit_timestamp
        return (now_us - original) / 1_000_000 if original else None
    waiting = bool(row.queueing_transaction) or (
        bool(row.last_queued_transaction)
        and row.last_queued_transaction != row.last_applied_transaction
    )
    if not waiting:
        return 0.0
    original = (
        row.last_applied_transaction_original_commit_timestamp
        if row.last_applied_transaction
        else row.last_queued_transaction_original_commit_timestamp
    )
    return (now_us - original) / 1_000_000 if original else None
