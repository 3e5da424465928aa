"""A row of ``replication_group_member_gtid_executed``: one member's ``gtid_executed``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from grstats.core.gtid import GtidSet
from grstats.core.rows.domains import RowValueError, canonical_gtid_text, is_uuid
from grstats.core.rows.row import Row
from grstats.core.rows.schema import REPLICATION_GROUP_MEMBER_GTID_EXECUTED, Table


@dataclass(frozen=True, slots=True)
class GtidExecutedRow(Row):
    """A member, its ``gtid_executed`` in MySQL's canonical text, and when it was sampled (µs)."""

    TABLE: ClassVar[Table] = REPLICATION_GROUP_MEMBER_GTID_EXECUTED

    member_id: str = ""
    gtid_executed: str = ""
    sampled_at: int = 0

    def __post_init__(self) -> None:
        super(GtidExecutedRow, self).__post_init__()
        if self.member_id and not is_uuid(self.member_id):
            raise RowValueError("MEMBER_ID", self.member_id, "a 36-character UUID or ''")
        text = canonical_gtid_text("GTID_EXECUTED", self.gtid_executed, GtidSet.parse, "a GTID set")
        object.__setattr__(self, "gtid_executed", text)

    @classmethod
    def of(cls, member_id: str, executed: GtidSet, sampled_at: int = 0) -> GtidExecutedRow:
        """Return the row of ``member_id`` with ``executed``, sampled at ``sampled_at`` (µs)."""
        return cls(member_id=member_id, gtid_executed=str(executed), sampled_at=sampled_at)
