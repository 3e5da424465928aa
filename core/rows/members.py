"""A row of ``replication_group_members`` (ps_information.cc, ``get_group_members_info``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from grstats.core.rows.domains import (
    COMMUNICATION_STACKS,
    INVALID_PROTOCOL,
    MEMBER_ROLES,
    MemberState,
    RowValueError,
    is_uuid,
    is_version,
)
from grstats.core.rows.row import Row
from grstats.core.rows.schema import GROUP_REPLICATION_APPLIER, REPLICATION_GROUP_MEMBERS, Table


@dataclass(frozen=True, slots=True)
class MemberRow(Row):
    """One member as ``replication_group_members`` shows it.

    The defaults are MySQL's row when Group Replication was never started: CHANNEL_NAME, state
    OFFLINE, empty strings and a NULL port. Build displayed values with the rules in
    :mod:`grstats.core.rows.domains` (``member_role``, ``member_version``, ``member_port``, ...).
    """

    TABLE: ClassVar[Table] = REPLICATION_GROUP_MEMBERS

    channel_name: str = GROUP_REPLICATION_APPLIER
    member_id: str = ""
    member_host: str = ""
    member_port: int | None = None
    member_state: str = MemberState.OFFLINE
    member_role: str = ""
    member_version: str = ""
    member_communication_stack: str = ""

    def __post_init__(self) -> None:
        super(MemberRow, self).__post_init__()
        if self.member_id and not is_uuid(self.member_id):
            raise RowValueError("MEMBER_ID", self.member_id, "a 36-character UUID or ''")
        if not self.member_host.isascii():
            raise RowValueError("MEMBER_HOST", self.member_host, "ASCII (CHARACTER SET ascii)")
        if self.member_port is not None and not 1 <= self.member_port <= 65535:
            raise RowValueError("MEMBER_PORT", self.member_port, "a port in 1..65535 or NULL")
        if self.member_state not in MemberState.__members__:
            raise RowValueError("MEMBER_STATE", self.member_state, "a MEMBER_STATE")
        object.__setattr__(self, "member_state", MemberState(self.member_state).value)
        if self.member_role not in MEMBER_ROLES:
            raise RowValueError("MEMBER_ROLE", self.member_role, "'', 'PRIMARY' or 'SECONDARY'")
        if self.member_version and not is_version(self.member_version):
            raise RowValueError("MEMBER_VERSION", self.member_version, "a version like 8.0.32")
        stacks = ("", *COMMUNICATION_STACKS, INVALID_PROTOCOL)
        if self.member_communication_stack not in stacks:
            raise RowValueError(
                "MEMBER_COMMUNICATION_STACK",
                self.member_communication_stack,
                "'XCom', 'MySQL', 'Invalid Protocol' or ''",
            )
        if self.member_role and self.member_state not in ("ONLINE", "RECOVERING", "UNREACHABLE"):
            raise RowValueError(
                "MEMBER_ROLE", self.member_role, f"shown for a member in state {self.member_state}"
            )
