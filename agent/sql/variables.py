"""The member's Group Replication variables and status, as its SQL endpoint shows them.

A MySQL member's ``@@group_replication_*`` variables are the plugin's system variables
(plugin/group_replication/src/plugin.cc, ``group_replication_system_vars``: global, with the
defaults of plugin_variables.h); the endpoint shows those the agent reads of its own member, as
it last read them: the group name, single-primary mode, member weight and the ten flow-control
settings. Through ``@@`` (a boolean is 1 or 0), SHOW [GLOBAL] VARIABLES and
``performance_schema.global_variables`` (ON or OFF). While the agent cannot read its member
they are NULL, as is the group name of a member that has none.

``@@read_only`` and ``@@super_read_only`` are the member's own, as the agent last read them
(``ServerSettings``: a primary's are 0, a secondary's 1, as Group Replication sets them); 1
until the agent has read its member (a proxy reading them then routes no writes to it).
``@@gtid_executed`` is the member's executed set as the agent last read it, in MySQL's text
(``Gtid_set::to_string``), NULL until then: ``SELECT GTID_SUBTRACT(@@gtid_executed, ...)``
on the endpoint asks what it asks on the member, as of that read.

Its status is ``group_replication_primary_member`` as MySQL 8.0 gives it
(``show_primary_member``, plugin.cc, through ``Group_member_info_manager::
get_primary_member_uuid``, member_info.cc): in single-primary mode the primary's server_uuid,
or ``UNDEFINED`` while there is none (an election, or the member itself in ERROR); ``''`` in
multi-primary mode. MySQL 8.4 removed it, so a member of 8.4 or later shows none (SHOW STATUS,
``global_status``).

``performance_schema.replication_group_communication_information`` is the member's one row as
the agent last read it (:func:`communication_rows`), none while it cannot read it, as MySQL
gives none while the member is not in a group.

``@@connect_timeout``, ``@@wait_timeout`` and ``@@interactive_timeout`` are the endpoint's
``limits.sql_connect_timeout_s``, ``sql_wait_timeout_s`` and ``sql_interactive_timeout_s``
(:func:`timeout_schema`), which the endpoint applies as MySQL applies those variables.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, cast

from mysql_mimic.errors import ErrorCode, MysqlError

from grstats.core.model import FlowControlSettings
from grstats.core.mysql_errors import (
    ER_GLOBAL_VARIABLE,
    ER_WRONG_TYPE_FOR_VAR,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from mysql_mimic.variables import VariableSchema

    from grstats.agent.sql.bounds import SqlLimits
    from grstats.core.model import MemberSnapshot
    from grstats.core.rows import Value

PREFIX = "group_replication_"
#: The flow-control variables, by FlowControlSettings field.
_FLOW_CONTROL = {
    field.name: f"{PREFIX}flow_control_{field.name}"
    for field in dataclasses.fields(FlowControlSettings)
}
#: Each variable's type for mysql-mimic: NULL until the agent has read its member.
SCHEMA: dict[str, VariableSchema] = {
    "read_only": (bool, True, False),
    "super_read_only": (bool, True, False),
    "gtid_executed": (str, None, False),
    f"{PREFIX}group_name": (str, None, False),
    f"{PREFIX}single_primary_mode": (bool, None, False),
    f"{PREFIX}member_weight": (int, None, False),
    **{
        name: (str if field == "mode" else int, None, False)
        for field, name in _FLOW_CONTROL.items()
    },
}
PRIMARY_MEMBER = f"{PREFIX}primary_member"
#: ``get_primary_member_uuid``'s answer in single-primary mode while there is no primary.
UNDEFINED = "UNDEFINED"
_VERSION = re.compile(r"(\d+)\.(\d+)")


def member_variables(snapshot: MemberSnapshot | None) -> dict[str, object]:
    """The variables' values from the agent's last read of its member (all None without one)."""
    if snapshot is None:
        return {**dict.fromkeys(SCHEMA), "read_only": True, "super_read_only": True}
    flow = snapshot.server.flow_control
    return {
        "read_only": snapshot.server.read_only,
        "super_read_only": snapshot.server.super_read_only,
        "gtid_executed": str(snapshot.gtid_executed),
        f"{PREFIX}group_name": snapshot.view.group_name or None,
        f"{PREFIX}single_primary_mode": snapshot.view.single_primary_mode,
        f"{PREFIX}member_weight": snapshot.member_weight,
        **{name: getattr(flow, field) for field, name in _FLOW_CONTROL.items()},
    }


def member_status(snapshot: MemberSnapshot | None, version: str | None) -> dict[str, str | None]:
    """The member's Group Replication status variables (none for MySQL 8.4 and later)."""
    found = _VERSION.match(version or "")
    if found is not None and (int(found.group(1)), int(found.group(2))) >= (8, 4):
        return {}
    if snapshot is None:
        return {PRIMARY_MEMBER: None}
    return {PRIMARY_MEMBER: primary_member(snapshot)}


def primary_member(snapshot: MemberSnapshot) -> str:
    """``group_replication_primary_member``: as ``get_primary_member_uuid`` (member_info.cc).

    ``''`` in multi-primary mode and while Group Replication is not running (the member
    OFFLINE: ``show_primary_member`` leaves the value NULL, which SHOW STATUS prints as ``''``);
    in single-primary mode the PRIMARY's server_uuid, but ``UNDEFINED`` when no member is
    PRIMARY or the member itself is in ERROR.
    """
    own = snapshot.own_row()
    if not snapshot.view.single_primary_mode or own is None or own.member_state == "OFFLINE":
        return ""
    if own.member_state == "ERROR":
        return UNDEFINED
    primaries = [row.member_id for row in snapshot.view.members if row.member_role == "PRIMARY"]
    return primaries[-1] if primaries else UNDEFINED


def shown(value: object) -> str | None:
    """A variable's value as SHOW VARIABLES and global_variables print it (ON or OFF)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    return str(value)


def communication_rows(snapshot: MemberSnapshot | None) -> list[tuple[Value, ...]]:
    """replication_group_communication_information: the member's row, if the agent read one.

    The leaders are comma-separated UUIDs (``read_column_value``). A server older than 8.4
    has no MEMBER_FAILURE_SUSPICIONS_COUNT: it shows ''.
    """
    info = snapshot.communication if snapshot is not None else None
    if info is None:
        return []
    return [
        (
            info.write_concurrency,
            info.protocol_version,
            ",".join(info.leaders_preferred),
            ",".join(info.leaders_actual),
            int(info.single_leader_capable),
            info.failure_suspicions or "",
        )
    ]


#: The largest wait_timeout and interactive_timeout (LONG_TIMEOUT, 3600 * 24 * 365 seconds).
LONG_TIMEOUT = 365 * 24 * 3600


@dataclasses.dataclass(frozen=True, slots=True)
class Configured:
    """Seconds from the config, set as a session's timeout as they are (a fraction included).

    A client's SET takes whole seconds only (:func:`session_timeout`); the endpoint itself sets
    ``wait_timeout`` to the configured ``interactive_timeout`` for an interactive client.
    """

    seconds: float


def seconds_shown(seconds: float) -> int | float:
    """A timeout as its variable shows it: whole seconds as an integer (MySQL's are)."""
    return int(seconds) if float(seconds).is_integer() else seconds


def session_timeout(name: str) -> Callable[[object], int | float]:
    """What ``SET SESSION name = value`` stores for ``wait_timeout`` or ``interactive_timeout``.

    As MySQL's ``Sys_var_ulong`` (sql/sys_vars.h, ``Sys_var_integral``): an integer, out of
    1..LONG_TIMEOUT brought to the nearest bound (sql/set_var.cc, ``throw_bounds_warning``:
    with a warning 1292 unless ``sql_mode`` has STRICT_ALL_TABLES, which MySQL's default has
    not; mysql-mimic sends no warnings); anything else (a string, a decimal) is error 1232,
    ``Incorrect argument type to variable 'wait_timeout'`` (``Sys_var_integral``'s
    ``check_update_type``).
    """

    def check(value: object) -> int | float:
        if isinstance(value, Configured):
            return seconds_shown(value.seconds)
        if isinstance(value, bool) or not isinstance(value, int):
            raise MysqlError(
                f"Incorrect argument type to variable '{name}'",
                code=cast("ErrorCode", ER_WRONG_TYPE_FOR_VAR),
            )
        return min(max(value, 1), LONG_TIMEOUT)

    return check


def global_only(name: str) -> Callable[[object], object]:
    """What ``SET SESSION name`` gets for a GLOBAL-only variable: MySQL's 1229.

    ``connect_timeout`` is ``GLOBAL_VAR`` (sql/sys_vars.cc, ``Sys_connect_timeout``): a
    session cannot set it (``set_var::check``); SET GLOBAL is refused before this (1290).
    """

    def check(_: object) -> object:
        raise MysqlError(
            f"Variable '{name}' is a GLOBAL variable and should be set with SET GLOBAL",
            code=cast("ErrorCode", ER_GLOBAL_VARIABLE),
        )

    return check


def timeout_schema(limits: SqlLimits) -> dict[str, VariableSchema]:
    """``connect_timeout``, ``wait_timeout`` and ``interactive_timeout`` for mysql-mimic.

    Their values are the endpoint's ``limits.sql_*_timeout_s``; a session may set its own
    ``wait_timeout`` and ``interactive_timeout``, and SET ... = DEFAULT goes back to them.
    """
    return {
        "connect_timeout": (
            global_only("connect_timeout"),
            seconds_shown(limits.sql_connect_timeout_s),
            True,
        ),
        "wait_timeout": (
            session_timeout("wait_timeout"),
            seconds_shown(limits.sql_wait_timeout_s),
            True,
        ),
        "interactive_timeout": (
            session_timeout("interactive_timeout"),
            seconds_shown(limits.sql_interactive_timeout_s),
            True,
        ),
    }
