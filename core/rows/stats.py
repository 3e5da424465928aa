"""A row of ``replication_group_member_stats`` (ps_information.cc, ``get_group_member_stats``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from grstats.core.gtid import Gtid, GtidSet
from grstats.core.rows.domains import RowValueError, canonical_gtid_text, is_uuid, is_view_id
from grstats.core.rows.row import Row
from grstats.core.rows.schema import (
    GROUP_REPLICATION_APPLIER,
    REPLICATION_GROUP_MEMBER_STATS,
    Table,
)


@dataclass(frozen=True, slots=True)
class MemberStatsRow(Row):
    """One member's counters as ``replication_group_member_stats`` shows them.

    The defaults are MySQL's row before START GROUP_REPLICATION: CHANNEL_NAME only, counters 0
    and strings ``''``. A remote member with no stats message yet is :meth:`unheard`. The two
    GTID columns are stored in MySQL's canonical text (lowercase, merged, ``",\\n"`` between
    UUIDs): any valid text given is normalised, invalid text raises RowValueError.
    """

    TABLE: ClassVar[Table] = REPLICATION_GROUP_MEMBER_STATS

    channel_name: str = GROUP_REPLICATION_APPLIER
    view_id: str = ""
    member_id: str = ""
    count_transactions_in_queue: int = 0
    count_transactions_checked: int = 0
    count_conflicts_detected: int = 0
    count_transactions_rows_validating: int = 0
    transactions_committed_all_members: str = ""
    last_conflict_free_transaction: str = ""
    count_transactions_remote_in_applier_queue: int = 0
    count_transactions_remote_applied: int = 0
    count_transactions_local_proposed: int = 0
    count_transactions_local_rollback: int = 0

    def __post_init__(self) -> None:
        super(MemberStatsRow, self).__post_init__()
        if self.view_id and not is_view_id(self.view_id):
            raise RowValueError("VIEW_ID", self.view_id, "a view id like 16036502905383892:9")
        if self.member_id and not is_uuid(self.member_id):
            raise RowValueError("MEMBER_ID", self.member_id, "a 36-character UUID or ''")
        committed = canonical_gtid_text(
            "TRANSACTIONS_COMMITTED_ALL_MEMBERS",
            self.transactions_committed_all_members,
            GtidSet.parse,
            "a GTID set",
        )
        object.__setattr__(self, "transactions_committed_all_members", committed)
        if self.last_conflict_free_transaction:
            last = canonical_gtid_text(
                "LAST_CONFLICT_FREE_TRANSACTION",
                self.last_conflict_free_transaction,
                Gtid.parse,
                "one GTID or ''",
            )
            object.__setattr__(self, "last_conflict_free_transaction", last)

    @classmethod
    def unheard(cls, member_id: str, view_id: str) -> MemberStatsRow:
        """Return the row MySQL shows for a member it has no stats message from.

        As ``get_group_member_stats`` in ps_information.cc fills it.
        """
        return cls(view_id=view_id, member_id=member_id)

    def with_gtid_columns_of(self, held: MemberStatsRow) -> MemberStatsRow:
        """This row with ``held``'s two GTID columns, which are not checked again.

        Both rows were checked when they were made, and each rule of this table is about one
        column, so a row of their columns holds them all. What a receiver does with a stats
        message without GTID columns (``Pipeline_member_stats::update_member_stats`` keeps the
        previous ones): 29 messages of 30, where ``dataclasses.replace`` parsed both GTID sets
        again at each (a tenth of a 9-member agent's Python time).
        """
        row = object.__new__(MemberStatsRow)
        for column in self.TABLE.columns:
            object.__setattr__(row, column.field, getattr(self, column.field))
        for field in ("transactions_committed_all_members", "last_conflict_free_transaction"):
            object.__setattr__(row, field, getattr(held, field))
        return row

    def committed_all_members(self) -> GtidSet:
        """Return TRANSACTIONS_COMMITTED_ALL_MEMBERS as a GtidSet."""
        return GtidSet.parse(self.transactions_committed_all_members)
