"""Records for the registry tests: members A, B and C, and generations of many members."""

from __future__ import annotations

from grstats.agent.registry import MemberRecord
from grstats.core.rows import ApplierStatusRow, MemberStatsRow

A, B, C = (f"{c * 8}-{c * 4}-{c * 4}-{c * 4}-{c * 12}" for c in "abc")
NOW_US = 1_700_000_000_000_000
MINUTE_US = 60_000_000
VIEW_ID = "16036502905383892:9"


def full(member_id: str, seen_us: int = NOW_US, checked: int = 7) -> MemberRecord:
    """A member heard at ``seen_us`` with every row, ``checked`` counting its transactions."""
    stats = MemberStatsRow(
        view_id=VIEW_ID,
        member_id=member_id,
        count_transactions_in_queue=2,
        count_transactions_checked=checked,
        count_conflicts_detected=1,
        count_transactions_rows_validating=11,
        transactions_committed_all_members=f"{A}:1-{checked}",
        last_conflict_free_transaction=f"{A}:{checked}",
        count_transactions_remote_applied=checked,
    )
    applier = ApplierStatusRow(
        member_id=member_id,
        last_queued_transaction=f"{A}:{checked}",
        last_queued_transaction_original_commit_timestamp=seen_us - 2_000,
        last_queued_transaction_end_queue_timestamp=seen_us - 1_000,
        queueing_transaction=None,
        last_applied_transaction=f"{A}:{checked}",
        last_applied_transaction_original_commit_timestamp=seen_us - 2_000,
        last_applied_transaction_end_apply_timestamp=seen_us,
        applier_lag_seconds=0.002,
    )
    return MemberRecord(
        member_id=member_id,
        member_host="db-1.example",
        member_port=3306,
        agent_address="db-1.example:7406",
        first_seen_us=seen_us - MINUTE_US,
        last_seen_us=seen_us,
        last_state="ONLINE",
        stats=stats,
        applier=applier,
        gtid_executed=f"{A}:1-{checked},\n{B}:1-3",
    )


def bare(member_id: str, seen_us: int = NOW_US) -> MemberRecord:
    """A member seen in a view only: no port, no agent, no rows, no GTIDs."""
    return MemberRecord(
        member_id=member_id,
        member_host="",
        member_port=None,
        agent_address="",
        first_seen_us=seen_us,
        last_seen_us=seen_us,
        last_state="UNREACHABLE",
    )


def member(number: int) -> str:
    """The UUID of member ``number``."""
    return f"{number:08x}-0000-4000-8000-{number:012x}"


def generation(number: int, members: int = 30) -> list[MemberRecord]:
    """One save's records: every member last seen at ``number`` with ``number`` checked."""
    return [full(member(n), seen_us=NOW_US + number, checked=number + 1) for n in range(members)]


def generation_of(records: list[MemberRecord]) -> set[int]:
    """The generations that ``records`` come from (one, if they are one save)."""
    return {r.last_seen_us - NOW_US for r in records} | {
        r.stats.count_transactions_checked - 1 for r in records if r.stats is not None
    }
