"""Typed rows: MySQL's default rows, value checks that name the column, normalisation, lag."""

from __future__ import annotations

import dataclasses

import pytest

from grstats.core.rows import (
    GROUP_REPLICATION_APPLIER,
    ApplierStatusRow,
    MemberRow,
    MemberStatsRow,
    RowValueError,
    lag_seconds,
    stage_seconds,
)

ID = "d8a706aa-0000-1111-2222-333344445555"
GROUP = "8a84f397-aaa4-18df-89ab-c70aa9823561"


class TestDefaults:
    def test_members_row_before_start(self) -> None:
        """Before START GROUP_REPLICATION the row is CHANNEL_NAME, OFFLINE, '' and NULL.

        As ``get_group_members_info`` (ps_information.cc) fills it when GR never started.
        """
        assert MemberRow().values() == (
            GROUP_REPLICATION_APPLIER,
            "",
            "",
            None,
            "OFFLINE",
            "",
            "",
            "",
        )

    def test_stats_row_before_start(self) -> None:
        """Before START only CHANNEL_NAME is set: counters 0, strings ''.

        As MySQL's mtr test ``group_replication.gr_perfschema_group_member_stats`` shows.
        """
        row = MemberStatsRow().as_dict()
        assert row["CHANNEL_NAME"] == GROUP_REPLICATION_APPLIER
        assert all(value == 0 for name, value in row.items() if name.startswith("COUNT_"))
        assert row["VIEW_ID"] == row["MEMBER_ID"] == row["TRANSACTIONS_COMMITTED_ALL_MEMBERS"] == ""
        assert row["LAST_CONFLICT_FREE_TRANSACTION"] == ""

    def test_unheard_remote_member(self) -> None:
        """A remote member with no stats message shows VIEW_ID and MEMBER_ID, zeros and ''.

        As ``get_group_member_stats`` (ps_information.cc) fills it.
        """
        row = MemberStatsRow.unheard(ID, "16036502905383892:9")
        assert (row.view_id, row.member_id, row.count_transactions_checked) == (
            "16036502905383892:9",
            ID,
            0,
        )

    def test_idle_channel(self) -> None:
        """An applier channel that has seen nothing shows empty transactions, zero times (WL#7374 F5), lag 0."""
        row = ApplierStatusRow(member_id=ID)
        assert row.last_applied_transaction == ""
        assert row.applying_transaction_start_apply_timestamp == 0
        assert lag_seconds(row, now_us=10**15) == 0.0


class TestValidation:
    @pytest.mark.parametrize(
        ("changes", "column"),
        [
            pytest.param({"member_id": "nope"}, "MEMBER_ID", id="bad-uuid"),
            pytest.param({"member_port": 0}, "MEMBER_PORT", id="port-zero-must-be-null"),
            pytest.param({"member_port": 70000}, "MEMBER_PORT", id="port-too-big"),
            pytest.param({"member_state": "DOWN"}, "MEMBER_STATE", id="unknown-state"),
            pytest.param({"member_role": "LEADER"}, "MEMBER_ROLE", id="unknown-role"),
            pytest.param(
                {"member_state": "ERROR", "member_role": "PRIMARY"},
                "MEMBER_ROLE",
                id="role-in-error",
            ),
            pytest.param({"member_version": "eight"}, "MEMBER_VERSION", id="bad-version"),
            pytest.param(
                {"member_communication_stack": "TCP"}, "MEMBER_COMMUNICATION_STACK", id="bad-stack"
            ),
            pytest.param({"member_host": "h" * 256}, "MEMBER_HOST", id="host-over-char-255"),
            pytest.param({"member_host": "hôte"}, "MEMBER_HOST", id="host-not-ascii"),
            pytest.param({"channel_name": None}, "CHANNEL_NAME", id="not-null"),
        ],
    )
    def test_member_row(self, changes: dict[str, object], column: str) -> None:
        """A bad members value raises RowValueError whose message starts with the column name."""
        with pytest.raises(RowValueError, match=f"^{column}: ") as caught:
            MemberRow(**changes)  # type: ignore[arg-type]
        assert caught.value.column == column

    @pytest.mark.parametrize(
        ("changes", "column"),
        [
            pytest.param(
                {"count_transactions_checked": -1}, "COUNT_TRANSACTIONS_CHECKED", id="negative"
            ),
            pytest.param(
                {"count_transactions_in_queue": 2**64}, "COUNT_TRANSACTIONS_IN_QUEUE", id="overflow"
            ),
            pytest.param({"count_conflicts_detected": True}, "COUNT_CONFLICTS_DETECTED", id="bool"),
            pytest.param(
                {"count_transactions_local_rollback": 1.5},
                "COUNT_TRANSACTIONS_LOCAL_ROLLBACK",
                id="float",
            ),
            pytest.param({"view_id": "abc"}, "VIEW_ID", id="bad-view-id"),
            pytest.param(
                {"transactions_committed_all_members": "garbage"},
                "TRANSACTIONS_COMMITTED_ALL_MEMBERS",
                id="garbage-gtid-set",
            ),
            pytest.param(
                {"last_conflict_free_transaction": f"{GROUP}:1-5"},
                "LAST_CONFLICT_FREE_TRANSACTION",
                id="interval-is-not-one-gtid",
            ),
        ],
    )
    def test_stats_row(self, changes: dict[str, object], column: str) -> None:
        """A bad stats value raises RowValueError naming the column and the value."""
        with pytest.raises(RowValueError, match=f"^{column}: ") as caught:
            MemberStatsRow(**changes)  # type: ignore[arg-type]
        assert repr(caught.value.value)[:20] in str(caught.value)

    def test_bigint_unsigned_maximum_is_accepted(self) -> None:
        """Counters are BIGINT UNSIGNED: 2^64-1 fits."""
        assert (
            MemberStatsRow(count_transactions_checked=2**64 - 1).count_transactions_checked
            == 2**64 - 1
        )

    @pytest.mark.parametrize(
        ("changes", "column"),
        [
            pytest.param({"applying_transaction": "x:1"}, "APPLYING_TRANSACTION", id="bad-gtid"),
            pytest.param(
                {"last_applied_transaction_end_apply_timestamp": -5},
                "LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP",
                id="negative-time",
            ),
            pytest.param(
                {"applier_lag_seconds": "1s"}, "APPLIER_LAG_SECONDS", id="lag-not-a-number"
            ),
        ],
    )
    def test_applier_row(self, changes: dict[str, object], column: str) -> None:
        """A bad WL#7374 value raises RowValueError naming the column."""
        with pytest.raises(RowValueError, match=f"^{column}: "):
            ApplierStatusRow(**changes)  # type: ignore[arg-type]


class TestNormalisation:
    def test_gtid_columns_are_stored_in_mysql_text(self) -> None:
        """GTID columns are normalised to canonical MySQL text (lowercase, ',\\n' between UUIDs)."""
        row = MemberStatsRow(
            transactions_committed_all_members=f"{GROUP.upper()}:3:1-2, aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1",
            last_conflict_free_transaction=f"{GROUP.upper()}:3",
        )
        assert (
            row.transactions_committed_all_members
            == f"{GROUP}:1-3,\naaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1"
        )
        assert row.last_conflict_free_transaction == f"{GROUP}:3"
        assert row.committed_all_members().count() == 4

    def test_transactions_are_gtid_or_anonymous(self) -> None:
        """WL#7374 transaction texts are '', ANONYMOUS or one GTID, lowercased.

        As ``Trx_monitoring_info::copy_to_ps_table`` (sql/rpl_gtid_misc.cc) writes them.
        """
        row = ApplierStatusRow(
            applying_transaction="ANONYMOUS", last_applied_transaction=f"{GROUP.upper()}:tag:7"
        )
        assert row.applying_transaction == "ANONYMOUS"
        assert row.last_applied_transaction == f"{GROUP}:tag:7"

    def test_rows_are_values(self) -> None:
        """Rows are frozen: equal rows compare equal and cannot be changed."""
        assert MemberRow(member_id=ID) == MemberRow(member_id=ID)
        with pytest.raises(dataclasses.FrozenInstanceError):
            MemberRow().member_id = ID  # type: ignore[misc]


class TestLag:
    def test_idle_member_that_applied_all_it_queued_has_no_lag(self) -> None:
        """Nothing queued or applying: lag is 0, however old the last applied transaction."""
        row = ApplierStatusRow(
            last_queued_transaction=f"{GROUP}:5",
            last_queued_transaction_original_commit_timestamp=1_000_000,
            last_applied_transaction=f"{GROUP}:5",
            last_applied_transaction_original_commit_timestamp=1_000_000,
            last_applied_transaction_end_apply_timestamp=3_500_000,
        )
        assert lag_seconds(row, now_us=99_000_000) == 0.0
        assert lag_seconds(row, now_us=10**15) == 0.0
        assert row.with_lag(99_000_000).applier_lag_seconds == 0.0

    def test_waiting_work_lag_grows_from_the_last_applied_commit(self) -> None:
        """Queued but not applying yet: lag is now minus the last applied one's original commit."""
        row = ApplierStatusRow(
            last_queued_transaction=f"{GROUP}:7",
            last_queued_transaction_original_commit_timestamp=9_000_000,
            last_applied_transaction=f"{GROUP}:5",
            last_applied_transaction_original_commit_timestamp=1_000_000,
            last_applied_transaction_end_apply_timestamp=3_500_000,
        )
        assert lag_seconds(row, now_us=11_000_000) == 10.0
        assert lag_seconds(row, now_us=21_000_000) == 20.0
        queueing = ApplierStatusRow(
            queueing_transaction=f"{GROUP}:1",
            last_queued_transaction_original_commit_timestamp=0,
        )
        first = ApplierStatusRow(
            last_queued_transaction=f"{GROUP}:1",
            last_queued_transaction_original_commit_timestamp=4_000_000,
        )
        assert lag_seconds(queueing, now_us=5_000_000) is None  # nothing to measure from
        assert lag_seconds(first, now_us=5_000_000) == 1.0  # nothing applied yet

    def test_applying_lag_grows_with_now(self) -> None:
        """While applying: lag is now minus the applying transaction's original commit."""
        row = ApplierStatusRow(
            applying_transaction=f"{GROUP}:6",
            applying_transaction_original_commit_timestamp=10_000_000,
            last_applied_transaction=f"{GROUP}:5",
            last_applied_transaction_original_commit_timestamp=1_000_000,
            last_applied_transaction_end_apply_timestamp=3_500_000,
        )
        assert lag_seconds(row, now_us=12_000_000) == 2.0
        assert lag_seconds(row, now_us=15_000_000) == 5.0

    def test_unset_original_commit_gives_no_lag(self) -> None:
        """A 5.7 origin sends no original commit time (0): the lag is unknown, not huge."""
        row = ApplierStatusRow(
            last_queued_transaction=f"{GROUP}:6",
            last_applied_transaction=f"{GROUP}:5",
            last_applied_transaction_end_apply_timestamp=3_500_000,
        )
        applying = ApplierStatusRow(applying_transaction=f"{GROUP}:6")
        assert lag_seconds(row, now_us=10**12) is None
        assert lag_seconds(applying, now_us=10**12) is None


class TestStages:
    """The lag by stage from WL#7374's times (core/rows/applier.py, stage_seconds)."""

    def test_a_transaction_both_last_queued_and_last_applied_gives_each_stage(self) -> None:
        """Committed at 1 s, queued by 1.25 s, applied from 3 s to 3.5 s: 0.25, 1.75, 0.5 s."""
        row = ApplierStatusRow(
            last_queued_transaction=f"{GROUP}:5",
            last_queued_transaction_original_commit_timestamp=1_000_000,
            last_queued_transaction_start_queue_timestamp=1_200_000,
            last_queued_transaction_end_queue_timestamp=1_250_000,
            last_applied_transaction=f"{GROUP}:5",
            last_applied_transaction_original_commit_timestamp=1_000_000,
            last_applied_transaction_start_apply_timestamp=3_000_000,
            last_applied_transaction_end_apply_timestamp=3_500_000,
        )
        assert stage_seconds(row) == (0.25, 1.75, 0.5)
        lagged = row.with_lag(10_000_000)
        assert (lagged.transport_seconds, lagged.waiting_seconds, lagged.apply_seconds) == (
            0.25,
            1.75,
            0.5,
        )

    def test_behind_the_last_queued_transport_stands_for_the_applied_ones(self) -> None:
        """GTID 9 queued in 0.1 s; GTID 5, committed at 1 s, started at 6 s: waited 4.9 s."""
        row = ApplierStatusRow(
            last_queued_transaction=f"{GROUP}:9",
            last_queued_transaction_original_commit_timestamp=8_000_000,
            last_queued_transaction_end_queue_timestamp=8_100_000,
            last_applied_transaction=f"{GROUP}:5",
            last_applied_transaction_original_commit_timestamp=1_000_000,
            last_applied_transaction_start_apply_timestamp=6_000_000,
            last_applied_transaction_end_apply_timestamp=6_300_000,
        )
        transport, waiting, apply = stage_seconds(row)
        assert (transport, apply) == (0.1, 0.3)
        assert waiting == pytest.approx(4.9)

    def test_mysql_57_and_unset_times_give_none(self) -> None:
        """A 5.7 member (no WL#7374 columns) gives no stage; a time of 0 leaves its stage out."""
        assert stage_seconds(ApplierStatusRow.unknown(ID)) == (None, None, None)
        assert stage_seconds(ApplierStatusRow()) == (None, None, None)
        queued_only = ApplierStatusRow(
            last_queued_transaction=f"{GROUP}:2",
            last_queued_transaction_original_commit_timestamp=1_000_000,
            last_queued_transaction_end_queue_timestamp=1_400_000,
        )
        assert stage_seconds(queued_only) == (0.4, None, None)

    def test_an_estimated_wait_below_zero_is_no_wait(self) -> None:
        """Another transaction's transport longer than this one's delivery: it did not wait."""
        row = ApplierStatusRow(
            last_queued_transaction=f"{GROUP}:9",
            last_queued_transaction_original_commit_timestamp=8_000_000,
            last_queued_transaction_end_queue_timestamp=8_300_000,
            last_applied_transaction=f"{GROUP}:8",
            last_applied_transaction_original_commit_timestamp=7_000_000,
            last_applied_transaction_start_apply_timestamp=7_200_000,
            last_applied_transaction_end_apply_timestamp=7_250_000,
        )
        assert stage_seconds(row) == (0.3, 0.0, 0.05)
