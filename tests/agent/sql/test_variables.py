"""The member's Group Replication variables and status as the SQL endpoint shows them (agent/sql/variables.py)."""

from __future__ import annotations

import dataclasses

from grstats.agent.sql.variables import (
    SCHEMA,
    communication_rows,
    member_status,
    member_variables,
    shown,
)
from grstats.core.gtid import GtidSet
from grstats.core.model import (
    CommunicationInfo,
    FlowControlSettings,
    GroupView,
    MemberSnapshot,
    ServerSettings,
)
from grstats.core.rows import ApplierStatusRow, MemberRow, MemberStatsRow

A, B = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa", "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"


def snapshot(*, single_primary: bool = True, weight: int | None = 70) -> MemberSnapshot:
    """A member A of a two-member group whose primary is B (both PRIMARY in multi-primary)."""
    roles = ("SECONDARY", "PRIMARY") if single_primary else ("PRIMARY", "PRIMARY")
    members = tuple(
        MemberRow(member_id=m, member_state="ONLINE", member_role=r)
        for m, r in zip((A, B), roles, strict=True)
    )
    return MemberSnapshot(
        member_id=A,
        read_at_us=1,
        view=GroupView(members, "1:2", "cccccccc-cccc-cccc-cccc-cccccccccccc", single_primary),
        stats=MemberStatsRow(member_id=A),
        applier=ApplierStatusRow(member_id=A),
        gtid_executed=GtidSet(),
        server=ServerSettings(flow_control=FlowControlSettings(mode="DISABLED", period=5)),
        member_weight=weight,
    )


def test_every_variable_is_null_while_the_member_is_not_read() -> None:
    """Without a read, the GR variables and gtid_executed are NULL, the read-only flags 1, the status NULL."""
    flags = {"read_only": True, "super_read_only": True}
    assert member_variables(None) == {**dict.fromkeys(SCHEMA), **flags}
    assert len(SCHEMA) == 16
    assert member_status(None, None) == {"group_replication_primary_member": None}


def test_the_variables_are_the_members_as_read() -> None:
    """Group name, mode, weight and flow control come from the read; SHOW prints ON/OFF."""
    values = member_variables(snapshot())
    assert values["group_replication_group_name"] == "cccccccc-cccc-cccc-cccc-cccccccccccc"
    assert values["group_replication_single_primary_mode"] is True
    assert values["group_replication_member_weight"] == 70
    assert values["group_replication_flow_control_mode"] == "DISABLED"
    assert values["group_replication_flow_control_period"] == 5
    assert [shown(v) for v in (True, False, None, 25000)] == ["ON", "OFF", None, "25000"]
    unnamed = dataclasses.replace(snapshot(), view=GroupView())
    assert member_variables(unnamed)["group_replication_group_name"] is None


def test_primary_member_status_as_mysql_80_gives_it() -> None:
    """The primary's UUID in single-primary mode, '' in multi-primary, nothing from MySQL 8.4."""
    assert member_status(snapshot(), "8.0.36") == {"group_replication_primary_member": B}
    multi = snapshot(single_primary=False)
    assert member_status(multi, "8.0.36") == {"group_replication_primary_member": ""}
    assert member_status(snapshot(), "8.4.3") == {}
    assert member_status(snapshot(), "9.1.0") == {}


def test_read_only_flags_are_the_members_own() -> None:
    """@@read_only and @@super_read_only are the member's as read: 0 on a primary, 1 elsewhere."""
    # Group Replication sets them (plugin_handlers/read_mode_handler.cc, ``enable_server_read_mode``
    # on a secondary, ``disable_server_read_mode`` on the primary); the agent reads them into
    # ServerSettings, and the endpoint no longer answers 1 for both whatever the member has.
    primary = dataclasses.replace(snapshot(), server=ServerSettings())
    assert {k: member_variables(primary)[k] for k in ("read_only", "super_read_only")} == {
        "read_only": False,
        "super_read_only": False,
    }
    secondary = dataclasses.replace(
        snapshot(), server=ServerSettings(read_only=True, super_read_only=True)
    )
    assert member_variables(secondary)["super_read_only"] is True
    assert member_variables(secondary)["read_only"] is True


def test_primary_member_is_undefined_without_a_primary() -> None:
    """UNDEFINED in single-primary mode with no PRIMARY or the member in ERROR; '' if not running."""
    # As ``Group_member_info_manager::get_primary_member_uuid`` (plugin/group_replication/src/
    # member_info.cc) assigns it, and ``show_primary_member`` (plugin.cc) leaves it NULL ('' in
    # SHOW STATUS) while Group Replication is not running.
    no_primary = dataclasses.replace(
        snapshot(),
        view=GroupView(
            tuple(
                MemberRow(member_id=m, member_state="ONLINE", member_role="SECONDARY")
                for m in (A, B)
            ),
            "1:3",
            "cccccccc-cccc-cccc-cccc-cccccccccccc",
            single_primary_mode=True,
        ),
    )
    assert member_status(no_primary, "8.0.36") == {"group_replication_primary_member": "UNDEFINED"}
    in_error = dataclasses.replace(
        snapshot(),
        view=dataclasses.replace(
            snapshot().view,
            members=(
                MemberRow(member_id=A, member_state="ERROR"),
                MemberRow(member_id=B, member_state="ONLINE", member_role="PRIMARY"),
            ),
        ),
    )
    assert member_status(in_error, "8.0.36") == {"group_replication_primary_member": "UNDEFINED"}
    stopped = dataclasses.replace(
        snapshot(), view=GroupView((MemberRow(member_id=A, member_state="OFFLINE"),))
    )
    assert member_status(stopped, "8.0.36") == {"group_replication_primary_member": ""}


def test_communication_rows_are_the_members_row_or_none() -> None:
    """No read or no table gives no row; a read gives MySQL's text, leaders comma-separated."""
    assert communication_rows(None) == []
    assert communication_rows(snapshot()) == []
    info = CommunicationInfo(
        10, "8.0.27", (A, B), (B,), single_leader_capable=True, failure_suspicions=f'{{"{A}":0}}'
    )
    read = dataclasses.replace(snapshot(), communication=info)
    assert communication_rows(read) == [(10, "8.0.27", f"{A},{B}", B, 1, f'{{"{A}":0}}')]
    older = dataclasses.replace(
        read, communication=dataclasses.replace(info, failure_suspicions=None)
    )
    assert communication_rows(older)[0][5] == ""
