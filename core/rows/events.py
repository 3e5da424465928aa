"""A row of ``replication_group_events``: one thing that happened to a member, and who saw it.

Each agent records its own member's events (:mod:`grstats.core.events` says which and how);
they travel to every agent with the member's other values, so every agent serves every
member's events. EVENT_TIME is on the clock of the member whose agent recorded it
(REPORTED_BY), not corrected for its offset: two agents serve the same rows.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import ClassVar

from grstats.core.rows.domains import RowValueError, is_uuid
from grstats.core.rows.row import Row
from grstats.core.rows.schema import REPLICATION_GROUP_EVENTS, Table


class EventType(enum.StrEnum):
    """What happened (EVENT_TYPE). OLD_VALUE and NEW_VALUE say from what to what."""

    #: the member's MEMBER_STATE changed (its own agent saw it; UNREACHABLE and back, others)
    MEMBER_STATE = "MEMBER_STATE"
    #: the member's MEMBER_ROLE changed: PRIMARY elected (NEW_VALUE PRIMARY) or lost
    MEMBER_ROLE = "MEMBER_ROLE"
    #: the reporting member installed a new view (VIEW_ID is the new one, OLD_VALUE the old)
    VIEW_CHANGE = "VIEW_CHANGE"
    #: the member joined the group (its own view lists it, in a view it was not in)
    JOINED = "JOINED"
    #: the member left the group (its own view no longer lists it)
    LEFT = "LEFT"
    #: its agent could not read the member's server any more (DETAIL: why)
    SOURCE_FAILED = "SOURCE_FAILED"
    #: its agent reads the member's server again
    SOURCE_RECOVERED = "SOURCE_RECOVERED"
    #: flow control began to hold the member's writers back (DETAIL: the members over the
    #: threshold)
    THROTTLE_STARTED = "THROTTLE_STARTED"
    #: flow control stopped holding the member's writers back
    THROTTLE_STOPPED = "THROTTLE_STOPPED"
    #: another agent stopped hearing the member's agent (or its server): CONNECTED NO there
    AGENT_SILENT = "AGENT_SILENT"
    #: another agent hears the member's agent again: CONNECTED YES there
    AGENT_HEARD = "AGENT_HEARD"
    #: the member's ``@@GLOBAL.super_read_only`` changed, ON or OFF: GR turns it OFF on a
    #: new primary only once it has applied its backlog, so OFF is when writes can go on
    SUPER_READ_ONLY = "SUPER_READ_ONLY"


#: What an EVENT_TYPE may be: a newer agent's types are kept as they come.
_TYPE_RE = re.compile(r"[A-Z][A-Z_]{0,31}")


@dataclass(frozen=True, slots=True)
class EventRow(Row):
    """One event, as ``replication_group_events`` shows it."""

    TABLE: ClassVar[Table] = REPLICATION_GROUP_EVENTS

    event_time: int = 0
    member_id: str = ""
    event_type: str = EventType.MEMBER_STATE
    old_value: str = ""
    new_value: str = ""
    view_id: str = ""
    reported_by: str = ""
    detail: str = ""

    def __post_init__(self) -> None:
        super(EventRow, self).__post_init__()
        for column, member in (("MEMBER_ID", self.member_id), ("REPORTED_BY", self.reported_by)):
            if not is_uuid(member):
                raise RowValueError(column, member, "a 36-character UUID")
        if _TYPE_RE.fullmatch(self.event_type) is None:
            raise RowValueError(
                "EVENT_TYPE", self.event_type, "an upper-case word like VIEW_CHANGE"
            )
        object.__setattr__(self, "event_type", str(self.event_type))
