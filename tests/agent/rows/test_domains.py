"""MySQL's display rules for MEMBER_STATE, MEMBER_ROLE, MEMBER_VERSION, ports, stacks and times."""

from __future__ import annotations

import pytest

from grstats.core.rows import (
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

ONLINE, RECOVERING, OFFLINE, ERROR = (
    MemberState.ONLINE,
    MemberState.RECOVERING,
    MemberState.OFFLINE,
    MemberState.ERROR,
)


@pytest.mark.parametrize(
    ("status", "role", "single_primary", "shown"),
    [
        pytest.param(ONLINE, Role.PRIMARY, True, "PRIMARY", id="single-primary-primary"),
        pytest.param(ONLINE, Role.SECONDARY, True, "SECONDARY", id="single-primary-secondary"),
        pytest.param(RECOVERING, Role.SECONDARY, True, "SECONDARY", id="recovering-keeps-role"),
        pytest.param(ONLINE, Role.SECONDARY, False, "PRIMARY", id="multi-primary-all-primary"),
        pytest.param(ONLINE, Role.NONE, True, "", id="no-role"),
        pytest.param(ERROR, Role.PRIMARY, True, "", id="error-has-no-role"),
        pytest.param(OFFLINE, Role.SECONDARY, False, "", id="offline-has-no-role"),
    ],
)
def test_member_role(status: MemberState, role: Role, single_primary: bool, shown: str) -> None:
    """MEMBER_ROLE follows ``Group_member_info::get_member_role_string`` (member_info.cc)."""
    assert member_role(status, role, single_primary) == shown


def test_unreachable_overrides_the_state_not_the_role() -> None:
    """UNREACHABLE replaces the displayed state while the role keeps its ONLINE value.

    As ``get_group_members_info`` (ps_information.cc) and ``get_member_role_string`` show them.
    """
    assert displayed_state(ONLINE, unreachable=True) is MemberState.UNREACHABLE
    assert displayed_state(ONLINE, unreachable=False) is ONLINE
    assert member_role(ONLINE, Role.PRIMARY, single_primary_mode=True) == "PRIMARY"


def test_unknown_status_prints_as_offline() -> None:
    """Any unknown member status prints as OFFLINE (get_member_status_string)."""
    assert MemberState.from_status("weird") is OFFLINE
    assert MemberState.from_status("online") is ONLINE


@pytest.mark.parametrize(
    ("server_version", "encoded", "shown"),
    [
        pytest.param("8.0.32", 0x080032, "8.0.32", id="8.0.32-hex-looks-decimal"),
        pytest.param("5.9.30", 0x050930, "5.9.30", id="get_server_parameters-example"),
        pytest.param("8.4.0-commercial", 0x080400, "8.4.0", id="suffix-ignored"),
        pytest.param("9.4.0", 0x090400, "9.4.0", id="docs-sample"),
    ],
)
def test_member_version(server_version: str, encoded: int, shown: str) -> None:
    """Versions are stored with decimal digits read as hex and printed in hex.

    As ``Member_version::get_version_string`` (member_version.cc) prints them.
    """
    assert encode_version(server_version) == encoded
    assert version_string(encoded) == shown
    assert member_version(server_version, ONLINE) == shown


def test_member_version_blank_for_offline_members() -> None:
    """8.0 and 8.4 show '' as the version of an OFFLINE member; the newest 9.x does not."""
    assert member_version("8.0.32", OFFLINE) == ""
    assert member_version("8.0.32", OFFLINE, blank_when_offline=False) == "8.0.32"
    assert member_version("", ONLINE) == ""


def test_bad_version_names_the_column() -> None:
    """A version string that is no version is a RowValueError naming MEMBER_VERSION."""
    with pytest.raises(RowValueError, match=r"^MEMBER_VERSION: 'x\.y'"):
        encode_version("x.y")


def test_communication_stack_and_port() -> None:
    """Stack codes print XCom/MySQL/Invalid Protocol; a stored port 0 shows NULL.

    As ``Communication_stack_to_string::to_string`` and the members table's ``read_row_values``.
    """
    assert [communication_stack(code) for code in (0, 1, 7)] == [
        "XCom",
        "MySQL",
        "Invalid Protocol",
    ]
    assert member_port(0) is None
    assert member_port(3306) == 3306


@pytest.mark.parametrize(
    ("micros", "text"),
    [
        pytest.param(0, ZERO_TIMESTAMP, id="unset-prints-zeros"),
        pytest.param(1, "1970-01-01 00:00:00.000001", id="one-microsecond"),
        pytest.param(1_700_000_000_123_456, "2023-11-14 22:13:20.123456", id="microseconds"),
    ],
)
def test_timestamp_text(micros: int, text: str) -> None:
    """TIMESTAMP(6) values print with microseconds; 0 prints as 0000-00-00 00:00:00.000000."""
    assert timestamp_text(micros) == text
    assert ZERO_TIMESTAMP == "0000-00-00 00:00:00.000000"
