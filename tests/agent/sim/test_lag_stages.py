"""The simulated members' WL#7374 times stamp the original commit as MySQL does."""

from __future__ import annotations

import pytest

from grstats.agent.sim.group import DELIVERY_US, QUEUE_US, TICK_US, TICKS_PER_SECOND
from grstats.agent.sim.views import snapshot
from grstats.core.rows.applier import stage_seconds
from tests.agent.sim.test_do_wait import throttled_group


class TestTransportIncludesTheFlowControlWait:
    def test_a_held_commit_carries_the_time_it_entered_do_wait(self) -> None:
        """A commit held by flow control shows, on a secondary, transport from before its wait.

        ``group_replication_trans_before_commit`` (plugin/group_replication/src/
        observer_trans.cc) sets ``original_commit_timestamp`` to ``my_micro_time()`` and only
        then calls ``Flow_control_module::do_wait`` and broadcasts the transaction; the
        receiving member's LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP is that stamp, so
        TRANSPORT_SECONDS (original commit to end of queueing) holds the wait.
        """
        group = throttled_group()
        writer = group.members[0]
        for _ in range(60 * TICKS_PER_SECOND):  # until commits wait in do_wait
            group.advance_to(group.tick + 1)
            if writer.waiting:
                break
        else:
            pytest.fail("no commit waited in the first 60 s")
        writer.rate_tps = 0  # the clients stop after the held commits: they are the last ones
        stamps = list(writer.waiting_stamps_us)
        while writer.waiting:
            group.advance_to(group.tick + 1)
        released_at = group.now_us - TICK_US  # the start of the tick that released them
        assert group.log.original_commit_us(group.log.last) == stamps[-1] < released_at
        row = snapshot(group, 1).applier
        assert row.last_queued_transaction_original_commit_timestamp == stamps[-1]
        transport, _, _ = stage_seconds(row)
        assert transport is not None
        wait_s = (group.log.commit_us(group.log.last) - stamps[-1]) / 1_000_000
        assert wait_s > TICK_US / 1_000_000  # it waited more than a tick
        assert transport == pytest.approx(wait_s + (DELIVERY_US + QUEUE_US) / 1_000_000)


class TestApplyStartsAfterQueueing:
    def test_a_caught_up_secondary_waits_zero_not_less(self) -> None:
        """A transaction's worker starts it only after its queueing ended: WAITING_SECONDS >= 0.

        WL#7374 F1-F3: the ``group_replication_applier`` channel queues a transaction in its
        relay log (``Applier_handler::handle_event``, plugin/group_replication/src/handlers/
        applier_handler.cc, through ``Replication_thread_api::queue_packet``) and the channel's
        applier reads it from there, so LAST_APPLIED_TRANSACTION_START_APPLY_TIMESTAMP is not
        before the same transaction's LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP.
        """
        group = throttled_group()
        seen = 0
        for second in range(1, 6):  # member 1 applies 4000 tps: it keeps up with the writer
            group.advance_to(second * TICKS_PER_SECOND)
            row = snapshot(group, 1).applier
            if row.last_applied_transaction != row.last_queued_transaction:
                continue
            seen += 1
            assert (
                row.last_applied_transaction_start_apply_timestamp
                >= row.last_queued_transaction_end_queue_timestamp
            )
            _, waiting, _ = stage_seconds(row)
            assert waiting == 0
        assert seen > 0
