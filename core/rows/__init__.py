"""The rows grstats serves, defined once: tables, typed rows, MySQL's value rules and rendering.

The agent builds these rows, the CLI prints them, the collector spools them and the Spark
jobs derive their schema from :mod:`grstats.core.rows.schema`.
"""

from __future__ import annotations

from grstats.core.rows.applier import (
    ANONYMOUS,
    TRANSACTION_FIELDS,
    ApplierStatusRow,
    lag_seconds,
    stage_seconds,
)
from grstats.core.rows.domains import (
    ZERO_TIMESTAMP,
    MemberState,
    Role,
    RowValueError,
    communication_stack,
    displayed_state,
    encode_version,
    member_port,
    member_role,
    member_version,
    timestamp_text,
    version_string,
)
from grstats.core.rows.events import EventRow, EventType
from grstats.core.rows.gtids import GtidExecutedRow
from grstats.core.rows.members import MemberRow
from grstats.core.rows.render import FORMATS, render, render_json, render_table, render_vertical
from grstats.core.rows.row import Row, Value, by_name
from grstats.core.rows.schema import (
    EXTENDED_COLUMNS,
    GROUP_REPLICATION_APPLIER,
    MYSQL57_STATS_COLUMNS,
    REPLICATION_GROUP_EVENTS,
    REPLICATION_GROUP_MEMBER_GTID_EXECUTED,
    REPLICATION_GROUP_MEMBER_LAG,
    REPLICATION_GROUP_MEMBER_STATS,
    REPLICATION_GROUP_MEMBER_STATUS,
    REPLICATION_GROUP_MEMBER_VIEWS,
    REPLICATION_GROUP_MEMBERS,
    REPLICATION_GROUP_STATUS,
    ROW_TABLES,
    TABLES,
    Column,
    Kind,
    Table,
)
from grstats.core.rows.stats import MemberStatsRow
from grstats.core.rows.status import MODES, STATUSES, GroupStatusRow, MemberStatusRow
from grstats.core.rows.views import NOT_LISTED, MemberViewRow

__all__ = [
    "ANONYMOUS",
    "EXTENDED_COLUMNS",
    "FORMATS",
    "GROUP_REPLICATION_APPLIER",
    "MODES",
    "MYSQL57_STATS_COLUMNS",
    "NOT_LISTED",
    "REPLICATION_GROUP_EVENTS",
    "REPLICATION_GROUP_MEMBERS",
    "REPLICATION_GROUP_MEMBER_GTID_EXECUTED",
    "REPLICATION_GROUP_MEMBER_LAG",
    "REPLICATION_GROUP_MEMBER_STATS",
    "REPLICATION_GROUP_MEMBER_STATUS",
    "REPLICATION_GROUP_MEMBER_VIEWS",
    "REPLICATION_GROUP_STATUS",
    "ROW_TABLES",
    "STATUSES",
    "TABLES",
    "TRANSACTION_FIELDS",
    "ZERO_TIMESTAMP",
    "ApplierStatusRow",
    "Column",
    "EventRow",
    "EventType",
    "GroupStatusRow",
    "GtidExecutedRow",
    "Kind",
    "MemberRow",
    "MemberState",
    "MemberStatsRow",
    "MemberStatusRow",
    "MemberViewRow",
    "Role",
    "Row",
    "RowValueError",
    "Table",
    "Value",
    "by_name",
    "communication_stack",
    "displayed_state",
    "encode_version",
    "lag_seconds",
    "member_port",
    "member_role",
    "member_version",
    "render",
    "render_json",
    "render_table",
    "render_vertical",
    "stage_seconds",
    "timestamp_text",
    "version_string",
]
