"""A row of ``replication_group_member_log``: one of Group Replication's own error-log lines.

The first six columns are ``performance_schema.error_log``'s as MySQL 8.0.22+ defines them
(``table_error_log::m_table_def``, storage/perfschema/table_error_log.cc): LOGGED
TIMESTAMP(6) NOT NULL (the table's primary key, so unique within one server's table), THREAD_ID
BIGINT UNSIGNED, PRIO ENUM('System', 'Error', 'Warning', 'Note') NOT NULL, ERROR_CODE
VARCHAR(10) (``MY-`` and six digits, as ``log_sink_pfs`` stores it), SUBSYSTEM VARCHAR(7)
(``Repl`` for Group Replication's lines) and DATA TEXT NOT NULL (the message: "Plugin
group_replication reported: '...'" for the plugin's, ``LogPluginErr``'s ``lookup_quoted`` in
include/mysql/components/services/log_builtins.h). grstats appends MEMBER_ID, the member whose
server wrote the line. LOGGED is on that member's clock, so every agent serves the same rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from grstats.core.rows.domains import RowValueError, is_uuid
from grstats.core.rows.row import Row
from grstats.core.rows.schema import BIN, Column, Kind, Table

if TYPE_CHECKING:
    from collections.abc import Iterable

#: PRIO's values in the ENUM's order (``enum_prio`` of table_error_log.h: System is 1).
PRIOS = ("System", "Error", "Warning", "Note")
#: SUBSYSTEM of Group Replication's lines (``LOG_SUBSYSTEM_TAG`` "Repl" of the plugin).
REPL = "Repl"
#: How each of Group Replication's own messages begins in DATA (``LogPluginErr``).
GR_PREFIX = "Plugin group_replication reported: "
#: The longest DATA kept: ``LOG_BUFF_MAX`` (8192, include/mysql/components/services/
#: log_shared.h), the most a line's message holds in the ring buffer of ``log_sink_pfs``.
MAX_DATA = 8192
#: How many of a member's lines every agent keeps, the newest: 200 (a failover writes about 6
#: lines on each member, a rejoin about 5).
KEPT_LINES = 200
#: At most this many characters of DATA are kept of a member's lines, the newest lines' (so a
#: member's list stays under 64 KiB on the wire whatever its lines hold).
KEPT_CHARS = 65536
#: ERROR_CODE as error_log shows it: MY- and six digits (``MY-011503``).
_CODE_RE = re.compile(r"MY-[0-9]{6}")

#: grstats's table of every member's Group Replication error-log lines: error_log's columns
#: and MEMBER_ID, ordered by LOGGED (each member's clock) and MEMBER_ID.
REPLICATION_GROUP_MEMBER_LOG = Table(
    "replication_group_member_log",
    (
        Column("LOGGED", "TIMESTAMP(6)", nullable=False, kind=Kind.TIMESTAMP),
        Column("THREAD_ID", "BIGINT UNSIGNED", nullable=True, kind=Kind.INTEGER),
        Column("PRIO", "ENUM('System','Error','Warning','Note')", nullable=False, kind=Kind.TEXT),
        Column("ERROR_CODE", "VARCHAR(10)", nullable=True, kind=Kind.TEXT),
        Column("SUBSYSTEM", "VARCHAR(7)", nullable=True, kind=Kind.TEXT),
        Column("DATA", "TEXT", nullable=False, kind=Kind.TEXT),
        # grstats: the member whose server wrote the line
        Column("MEMBER_ID", "CHAR(36)", nullable=False, kind=Kind.TEXT, collation=BIN),
    ),
)


@dataclass(frozen=True, slots=True)
class MemberLogRow(Row):
    """One line, as ``replication_group_member_log`` shows it."""

    TABLE: ClassVar[Table] = REPLICATION_GROUP_MEMBER_LOG

    logged: int = 0
    thread_id: int | None = 0
    prio: str = "System"
    error_code: str | None = None
    subsystem: str | None = REPL
    data: str = ""
    member_id: str = ""

    def __post_init__(self) -> None:
        super(MemberLogRow, self).__post_init__()
        if self.prio not in PRIOS:
            raise RowValueError("PRIO", self.prio, f"one of {', '.join(PRIOS)}")
        if self.error_code is not None and _CODE_RE.fullmatch(self.error_code) is None:
            raise RowValueError("ERROR_CODE", self.error_code, "MY- and six digits, or NULL")
        if self.subsystem is not None and len(self.subsystem) > 7:
            raise RowValueError("SUBSYSTEM", self.subsystem, "at most 7 characters")
        if len(self.data) > MAX_DATA:
            raise RowValueError("DATA", self.data[:40] + "...", f"at most {MAX_DATA} characters")
        if not is_uuid(self.member_id):
            raise RowValueError("MEMBER_ID", self.member_id, "a 36-character UUID")


def is_group_replication(subsystem: str | None, data: str) -> bool:
    """Whether an error_log line is Group Replication's own: SUBSYSTEM Repl, the plugin's prefix.

    The asynchronous channels' lines are Repl too (MY-010597 'CHANGE MASTER TO ...'), without
    the prefix; GR's codes span several ranges (MY-0114xx to MY-0117xx, MY-013xxx, MY-015xxx),
    so the prefix, which every ``LogPluginErr`` of the plugin writes, is what tells.
    """
    return subsystem == REPL and data.startswith(GR_PREFIX)


def log_order(row: MemberLogRow) -> tuple[int, str, str]:
    """How the table orders its rows: LOGGED, then MEMBER_ID, then DATA."""
    return row.logged, row.member_id, row.data


def kept_lines(
    lines: Iterable[MemberLogRow], *, count: int = KEPT_LINES, chars: int = KEPT_CHARS
) -> tuple[MemberLogRow, ...]:
    """One member's ``lines`` in LOGGED order, each once: the newest ``count``, within ``chars``."""
    unique = sorted(set(lines), key=log_order)[-count:] if count > 0 else []
    total, start = 0, len(unique)
    while start > 0 and total + len(unique[start - 1].data) <= chars:
        start -= 1
        total += len(unique[start].data)
    return tuple(unique[start:])
