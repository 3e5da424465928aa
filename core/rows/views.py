"""A row of ``replication_group_member_views``: what one member's own server says of one member."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from grstats.core.rows.domains import MemberState, RowValueError, is_uuid
from grstats.core.rows.row import Row
from grstats.core.rows.schema import REPLICATION_GROUP_MEMBER_VIEWS, Table

#: MEMBER_STATE of a member the observer's view does not list.
NOT_LISTED = "NOT_LISTED"
#: The MEMBER_STATE values: GR's (``Group_member_info::get_member_status_string``) and NOT_LISTED.
VIEW_STATES = (*(state.value for state in MemberState), NOT_LISTED)
#: The DISAGREEMENT values ('' for none), see :mod:`grstats.agent.views`.
SPLIT_BRAIN = "SPLIT_BRAIN"
ONE_WAY = "ONE_WAY"
VIEW_LAG = "VIEW_LAG"
DISAGREEMENTS = (SPLIT_BRAIN, ONE_WAY, VIEW_LAG)


@dataclass(frozen=True, slots=True)
class MemberViewRow(Row):
    """The observer, the member, the state the observer's server gives it, and how fresh."""

    TABLE: ClassVar[Table] = REPLICATION_GROUP_MEMBER_VIEWS

    observer_id: str = ""
    member_id: str = ""
    member_state: str = NOT_LISTED
    view_id: str = ""
    member_failure_suspicions_count: int | None = None
    round_trip_ms: float | None = None
    age_ms: int | None = None
    connected: str = "NO"
    disagreement: str = ""

    def __post_init__(self) -> None:
        super(MemberViewRow, self).__post_init__()
        for column, value in (("OBSERVER_ID", self.observer_id), ("MEMBER_ID", self.member_id)):
            if not is_uuid(value):
                raise RowValueError(column, value, "a 36-character UUID")
        if self.member_state not in VIEW_STATES:
            raise RowValueError(
                "MEMBER_STATE", self.member_state, f"one of {', '.join(VIEW_STATES)}"
            )
        if self.connected not in ("YES", "NO"):
            raise RowValueError("CONNECTED", self.connected, "YES or NO")
        if self.disagreement and self.disagreement not in DISAGREEMENTS:
            raise RowValueError(
                "DISAGREEMENT", self.disagreement, f"'' or one of {', '.join(DISAGREEMENTS)}"
            )
