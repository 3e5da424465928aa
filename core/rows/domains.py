"""Value domains of Group Replication's columns and MySQL's display rules.

The group tables follow MySQL's ``plugin/group_replication/src/member_info.cc``,
``member_version.cc`` and ``ps_information.cc``; the applier channel's transactions and times
follow WL#7374.

Errors tree::

    ValueError
    └── RowValueError     a value outside its column's domain; the message starts "COLUMN: "
"""

from __future__ import annotations

import enum
import re
from typing import TYPE_CHECKING

from grstats.core.gtid import GtidError
from grstats.core.rows.zone import UTC_ZONE

if TYPE_CHECKING:
    from collections.abc import Callable

    from grstats.core.rows.zone import TimeZone

#: Largest BIGINT UNSIGNED.
BIGINT_UNSIGNED_MAX = (1 << 64) - 1
#: How MySQL prints a TIMESTAMP(6) whose value is 0, "not set" (WL#7374 F5).
ZERO_TIMESTAMP = "0000-00-00 00:00:00.000000"

_UUID_RE = re.compile(
    r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
)
_VIEW_ID_RE = re.compile(r"[0-9]{1,29}:[0-9]{1,29}")
_VERSION_RE = re.compile(r"([0-9]{1,2})\.([0-9]{1,2})\.([0-9]{1,2})")


class RowValueError(ValueError):
    """A value outside its column's domain; the message names the column and the value."""

    def __init__(self, column: str, value: object, expected: str) -> None:
        self.column = column
        self.value = value
        super().__init__(f"{column}: {value!r} is not {expected}")


class MemberState(enum.StrEnum):
    """MEMBER_STATE strings (``Group_member_info::get_member_status_string``, member_info.cc).

    UNREACHABLE is never stored by GR: it overrides the displayed state while GR suspects the
    member. Any unknown value prints as OFFLINE.
    """

    ONLINE = "ONLINE"
    OFFLINE = "OFFLINE"
    RECOVERING = "RECOVERING"
    ERROR = "ERROR"
    UNREACHABLE = "UNREACHABLE"

    @classmethod
    def from_status(cls, status: str) -> MemberState:
        """Return the state MySQL prints for ``status``: unknown values print as OFFLINE."""
        try:
            return cls(status.upper())
        except ValueError:
            return cls.OFFLINE


class Role(enum.StrEnum):
    """A member's role in the group's member manager, before the display rule of MEMBER_ROLE."""

    PRIMARY = "PRIMARY"
    SECONDARY = "SECONDARY"
    NONE = ""


#: The values MEMBER_ROLE can show.
MEMBER_ROLES = frozenset(("", "PRIMARY", "SECONDARY"))

#: MEMBER_COMMUNICATION_STACK (``Communication_stack_to_string``): code 0 and 1.
COMMUNICATION_STACKS = ("XCom", "MySQL")
INVALID_PROTOCOL = "Invalid Protocol"


def displayed_state(status: MemberState, unreachable: bool) -> MemberState:
    """Return MEMBER_STATE: UNREACHABLE while GR suspects the member, else its status."""
    return MemberState.UNREACHABLE if unreachable else status


def member_role(status: MemberState, role: Role, single_primary_mode: bool) -> str:
    """Return MEMBER_ROLE as ``Group_member_info::get_member_role_string`` does (member_info.cc).

    ``status`` is the stored status (not UNREACHABLE, which keeps its underlying role): ``''``
    unless ONLINE or RECOVERING; every member is PRIMARY in multi-primary mode.
    """
    if status not in (MemberState.ONLINE, MemberState.RECOVERING):
        return ""
    if not single_primary_mode or role is Role.PRIMARY:
        return "PRIMARY"
    if role is Role.SECONDARY:
        return "SECONDARY"
    return ""


def encode_version(version: str) -> int:
    """Return the server version as GR stores it: decimal digits read as hex (0x080032).

    Accepts the server's version string with any suffix (``8.0.32-commercial``), as
    ``get_server_parameters`` reads it.
    """
    match = _VERSION_RE.match(version)
    if match is None:
        raise RowValueError("MEMBER_VERSION", version, "a MySQL version like 8.0.32")
    major, minor, patch = (int(part, 16) for part in match.groups())
    return major << 16 | minor << 8 | patch


def version_string(encoded: int) -> str:
    """Return MEMBER_VERSION: major, minor and patch printed in hex (``Member_version``)."""
    return f"{encoded >> 16 & 0xFF:x}.{encoded >> 8 & 0xFF:x}.{encoded & 0xFF:x}"


def member_version(version: str, state: MemberState, blank_when_offline: bool = True) -> str:
    """Return MEMBER_VERSION for a member advertising ``version`` (``''`` if unknown).

    8.0 and 8.4 print ``''`` for an OFFLINE member; the newest 9.x does not
    (``blank_when_offline=False``).
    """
    if not version or (blank_when_offline and state is MemberState.OFFLINE):
        return ""
    return version_string(encode_version(version))


def communication_stack(code: int) -> str:
    """Return MEMBER_COMMUNICATION_STACK for protocol ``code`` (0 XCom, 1 MySQL)."""
    return COMMUNICATION_STACKS[code] if code in (0, 1) else INVALID_PROTOCOL


def member_port(port: int) -> int | None:
    """Return MEMBER_PORT: NULL when the stored port is 0 (``read_row_values``)."""
    return port or None


def timestamp_text(micros: int, zone: TimeZone = UTC_ZONE) -> str:
    """Return a TIMESTAMP(6) as MySQL prints it, in ``zone``; 0 (unset) is all zeros.

    MySQL shows a TIMESTAMP in the session's ``time_zone`` (``Time_zone::gmt_sec_to_TIME``,
    sql/tztime.cc); grstats' default zone is UTC.
    """
    if micros == 0:
        return ZERO_TIMESTAMP
    return f"{zone.moment(micros):%Y-%m-%d %H:%M:%S.%f}"


def timestamp_iso(micros: int) -> str | None:
    """Return a TIMESTAMP(6) for JSON: ISO 8601 in UTC with ``Z``, always 6 decimals.

    ``2026-11-24T10:15:02.123456Z``; 0 (unset, MySQL's ``0000-00-00 00:00:00.000000``) is None.
    """
    if micros == 0:
        return None
    return f"{UTC_ZONE.moment(micros):%Y-%m-%dT%H:%M:%S.%f}Z"


def is_uuid(text: str) -> bool:
    """Return whether ``text`` is a 36-character dashed UUID."""
    return len(text) == 36 and _UUID_RE.fullmatch(text) is not None


def is_view_id(text: str) -> bool:
    """Return whether ``text`` is a GCS view id ``<fixed>:<monotonic>``.

    That is the text ``Gcs_xcom_view_identifier::init`` builds (gcs_xcom_view_identifier.cc).
    """
    return len(text) <= 60 and _VIEW_ID_RE.fullmatch(text) is not None


def is_version(text: str) -> bool:
    """Return whether ``text`` is a MEMBER_VERSION like ``8.0.32``."""
    return _VERSION_RE.fullmatch(text) is not None


def canonical_gtid_text(
    column: str, text: str, parse: Callable[[str], object], expected: str
) -> str:
    """Return ``text`` as ``parse`` reads and MySQL prints it; RowValueError names ``column``."""
    try:
        return str(parse(text))
    except GtidError as exc:
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise RowValueError(column, shown, f"{expected} ({exc})") from exc
