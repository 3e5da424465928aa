"""MemberRecord: what the registry keeps of a member, checked field by field."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import pytest

from grstats.core.rows import MemberStatsRow, RowValueError
from tests.agent.registry.records import A, B, bare, full

if TYPE_CHECKING:
    from grstats.agent.registry import MemberRecord


class TestMemberRecord:
    def test_full_and_bare_records_are_valid(self) -> None:
        """A record with every row and one seen only in a view are both accepted."""
        assert full(A).stats is not None
        assert bare(A).stats is None
        assert bare(A).applier is None

    def test_gtid_text_is_canonical(self) -> None:
        """gtid_executed is kept in MySQL's canonical text, whatever valid text was given."""
        record = dataclasses.replace(bare(A), gtid_executed=f"{B.upper()}:3-4:1-2")
        assert record.gtid_executed == f"{B}:1-4"

    def test_ipv6_agent_address(self) -> None:
        """An agent address may be a bracketed IPv6 host with a port."""
        assert dataclasses.replace(bare(A), agent_address="[::1]:7406").agent_address

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            pytest.param("member_id", "not-a-uuid", id="member-id-not-a-uuid"),
            pytest.param("member_id", A[:-1], id="member-id-35-chars"),
            pytest.param("member_host", "h" * 256, id="host-too-long"),
            pytest.param("member_host", "db-\udcff", id="host-not-ascii"),
            pytest.param("member_port", 0, id="port-zero"),
            pytest.param("member_port", 65536, id="port-too-big"),
            pytest.param("agent_address", "db-1.example", id="address-without-port"),
            pytest.param("agent_address", ":7406", id="address-without-host"),
            pytest.param("agent_address", "db-1:http", id="address-port-not-a-number"),
            pytest.param("agent_address", "db-1:٧٤٠٦", id="address-port-not-ascii-digits"),
            pytest.param("agent_address", "dé-1:7406", id="address-not-ascii"),
            pytest.param("first_seen_us", -1, id="first-seen-negative"),
            pytest.param("last_seen_us", -1, id="last-seen-negative"),
            pytest.param("last_seen_us", 1 << 63, id="last-seen-beyond-int64"),
            pytest.param("last_seen_us", 1.5, id="last-seen-not-an-integer"),
            pytest.param("last_state", "SLEEPING", id="unknown-state"),
            pytest.param("stats", MemberStatsRow(member_id=B), id="stats-of-another-member"),
            pytest.param("applier", MemberStatsRow(member_id=A), id="applier-of-wrong-class"),
            pytest.param("gtid_executed", "garbage", id="gtids-not-a-set"),
        ],
    )
    def test_invalid_field_is_named(self, field: str, value: object) -> None:
        """A value outside its field's domain raises RowValueError naming the field."""
        changes: dict[str, Any] = {field: value}
        with pytest.raises(RowValueError, match=f"^{field}: ") as raised:
            dataclasses.replace(bare(A), **changes)
        assert raised.value.column == field

    def test_is_frozen(self) -> None:
        """Records are immutable values, safe to share between the agent and a registry."""
        record: MemberRecord = bare(A)
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.last_seen_us = 0  # type: ignore[misc]
