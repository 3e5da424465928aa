"""The verdict's rows: ``replication_group_status`` and ``replication_group_member_status``.

Their values are built by :mod:`grstats.agent.status` with MySQL Shell's rules
(:mod:`grstats.core.verdict`); these classes only hold and check them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from grstats.core.gtid import GtidSet
from grstats.core.rows.domains import RowValueError, canonical_gtid_text, is_uuid
from grstats.core.rows.row import Row
from grstats.core.rows.schema import (
    REPLICATION_GROUP_MEMBER_STATUS,
    REPLICATION_GROUP_STATUS,
    Table,
)

#: group_replication_member_weight's greatest value (plugin.cc, ``MAX_MEMBER_WEIGHT``).
MAX_MEMBER_WEIGHT = 100

#: MySQL Shell's cluster statuses that grstats gives (``Cluster_status`` in
#: modules/adminapi/common/cluster_types.h), best first.
STATUSES = (
    "OK",
    "OK_PARTIAL",
    "OK_NO_TOLERANCE",
    "OK_NO_TOLERANCE_PARTIAL",
    "NO_QUORUM",
    "UNKNOWN",
)
#: The MODE values: group_replication_single_primary_mode ON or OFF ('' when no view is known).
MODES = ("single-primary", "multi-primary", "")


def _ids(column: str, text: str) -> None:
    if text and not all(is_uuid(part) for part in text.split(",")):
        raise RowValueError(column, text, "MEMBER_IDs separated by commas, or ''")


@dataclass(frozen=True, slots=True)
class GroupStatusRow(Row):
    """The group's verdict as one agent gives it (one row)."""

    TABLE: ClassVar[Table] = REPLICATION_GROUP_STATUS

    group_name: str = ""
    view_id: str = ""
    status: str = "UNKNOWN"
    status_text: str = ""
    tolerance: int = 0
    mode: str = ""
    primary_members: str = ""
    throttled: str = "NO"
    throttled_by: str = ""
    as_of: int = 0
    group_label: str = ""
    stable_set_stalled_s: int | None = None
    stable_set_held_by: str = ""
    rows_validating_per_minute: int | None = None

    def __post_init__(self) -> None:
        super(GroupStatusRow, self).__post_init__()
        if self.status not in STATUSES:
            raise RowValueError("STATUS", self.status, f"one of {', '.join(STATUSES)}")
        if self.mode not in MODES:
            raise RowValueError("MODE", self.mode, "single-primary, multi-primary or ''")
        if self.throttled not in ("YES", "NO"):
            raise RowValueError("THROTTLED", self.throttled, "YES or NO")
        _ids("PRIMARY_MEMBERS", self.primary_members)
        _ids("THROTTLED_BY", self.throttled_by)
        _ids("STABLE_SET_HELD_BY", self.stable_set_held_by)

    @property
    def primaries(self) -> tuple[str, ...]:
        """PRIMARY_MEMBERS as a tuple of MEMBER_IDs."""
        return tuple(self.primary_members.split(",")) if self.primary_members else ()


@dataclass(frozen=True, slots=True)
class MemberStatusRow(Row):
    """One member's part of the verdict."""

    TABLE: ClassVar[Table] = REPLICATION_GROUP_MEMBER_STATUS

    member_id: str = ""
    member_host: str = ""
    member_port: int | None = None
    member_state: str = "OFFLINE"
    member_role: str = ""
    member_version: str = ""
    connected: str = "NO"
    age_ms: int | None = None
    applier_lag_seconds: float | None = None
    applier_queue: int | None = None
    certifier_queue: int | None = None
    transactions_behind: int | None = None
    read_only: str | None = None
    super_read_only: str | None = None
    throttling: str = "NO"
    clock_skew_ms: int | None = None
    errant_transactions: str | None = None
    split_brain: str = "NO"
    member_weight: int | None = None
    transactions_left: int | None = None
    apply_rate: float | None = None
    eta_s: float | None = None

    def __post_init__(self) -> None:
        super(MemberStatusRow, self).__post_init__()
        if not is_uuid(self.member_id):
            raise RowValueError("MEMBER_ID", self.member_id, "a 36-character UUID")
        for column, value in (
            ("CONNECTED", self.connected),
            ("THROTTLING", self.throttling),
            ("SPLIT_BRAIN", self.split_brain),
        ):
            if value not in ("YES", "NO"):
                raise RowValueError(column, value, "YES or NO")
        for column, flag in (
            ("READ_ONLY", self.read_only),
            ("SUPER_READ_ONLY", self.super_read_only),
        ):
            if flag not in (None, "ON", "OFF"):
                raise RowValueError(column, flag, "ON, OFF or NULL")
        if self.errant_transactions is not None:
            text = canonical_gtid_text(
                "ERRANT_TRANSACTIONS", self.errant_transactions, GtidSet.parse, "a GTID set"
            )
            object.__setattr__(self, "errant_transactions", text)
        if self.member_weight is not None and not 0 <= self.member_weight <= MAX_MEMBER_WEIGHT:
            raise RowValueError("MEMBER_WEIGHT", self.member_weight, "in 0..100")
