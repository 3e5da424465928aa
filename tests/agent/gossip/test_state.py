"""The gossip core: stamps, digests, merge rules, relay, CONNECTED, and convergence."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from grstats.agent.gossip import (
    LOCAL,
    ClockOffset,
    Counts,
    Events,
    GossipState,
    Key,
    LogLines,
    Stamp,
    Update,
)
from grstats.agent.sources import GroupView, SourceHealth
from grstats.core.gtid import GtidSet
from grstats.core.model import ServerSettings
from grstats.core.rows import ApplierStatusRow, EventRow, EventType, MemberRow, MemberStatsRow
from grstats.core.rows.member_log import MemberLogRow

A, B, C, D = (f"{c * 8}-{c * 4}-{c * 4}-{c * 4}-{c * 12}" for c in "abcd")
GROUP = "8a84f397-aaa4-18df-89ab-c70aa9823561"
SECOND = 1_000_000


def view(*members: str, view_id: str = "16036502905383892:9") -> GroupView:
    """A membership view listing ``members`` ONLINE."""
    rows = tuple(
        MemberRow(member_id=m, member_host="h", member_port=3306, member_state="ONLINE")
        for m in members
    )
    return GroupView(members=rows, view_id=view_id, group_name=GROUP)


def counts(member: str, checked: int, committed: str = "", present: bool = True) -> Counts:
    """A COUNTS value of ``member``."""
    row = MemberStatsRow(
        view_id="16036502905383892:9",
        member_id=member,
        count_transactions_checked=checked,
        transactions_committed_all_members=committed,
    )
    return Counts(row, gtids_present=present)


def agent(member: str, *group: str, now: int = 0) -> GossipState:
    """An agent of ``member`` whose source sees ``group`` (default: only itself)."""
    state = GossipState(member, incarnation=1)
    state.record_local(Key.VIEW, view(member, *group), now)
    return state


def exchange(left: GossipState, right: GossipState, now: int) -> None:
    """One push-pull round: each side sends the other what the other's digest lacks."""
    right.merge(left.updates_for(right.digest()), now, via=left.local_id)
    left.merge(right.updates_for(left.digest()), now, via=right.local_id)


def held_row(state: GossipState, member: str) -> MemberStatsRow | None:
    """The stats row that ``state`` holds for ``member``."""
    heard = state.value(member, Key.COUNTS)
    if heard is None:
        return None
    assert isinstance(heard.update.value, Counts)
    return heard.update.value.row


def checked(state: GossipState, member: str) -> int | None:
    """COUNT_TRANSACTIONS_CHECKED that ``state`` holds for ``member``."""
    row = held_row(state, member)
    return None if row is None else row.count_transactions_checked


class TestLocalValues:
    def test_each_local_value_gets_the_next_stamp(self) -> None:
        """Local values are stamped (incarnation, 1), (incarnation, 2), ... and held as local."""
        state = agent(A)
        update = state.record_local(Key.COUNTS, counts(A, 5), now_us=SECOND)
        assert update.stamp == Stamp(1, 2)
        assert state.digest() == {A: {Key.VIEW: Stamp(1, 1), Key.COUNTS: Stamp(1, 2)}}
        assert state.value(A, Key.COUNTS).via == LOCAL  # type: ignore[union-attr]

    def test_a_restarted_agent_orders_after_its_past(self) -> None:
        """A new incarnation's first values beat the old run's last ones at every peer."""
        old, peer = GossipState(A, incarnation=1), agent(B, A)
        for n in range(50):
            old.record_local(Key.COUNTS, counts(A, n), 0)
        exchange(old, peer, 0)
        new = GossipState(A, incarnation=2)
        new.record_local(Key.COUNTS, counts(A, 0), SECOND)
        exchange(new, peer, SECOND)
        assert checked(peer, A) == 0

    def test_a_restart_on_a_clock_stepped_back_refutes_its_past(self) -> None:
        """A run whose clock went back 600 s outranks the stamp a peer holds and is taken."""
        ahead, peer = GossipState(A, incarnation=1_000 * SECOND), agent(B, A)
        for n in range(50):
            ahead.record_local(Key.COUNTS, counts(A, n), 0)
        exchange(ahead, peer, 0)
        behind = GossipState(A, incarnation=400 * SECOND)
        behind.record_local(Key.COUNTS, counts(A, 7), SECOND)
        assert behind.refute(peer.digest(), SECOND) == Stamp(1_000 * SECOND, 50)
        assert behind.incarnation == 1_000 * SECOND + 1
        exchange(behind, peer, 2 * SECOND)
        assert checked(peer, A) == 7
        assert behind.refute(peer.digest(), 2 * SECOND) is None  # nothing left to refute

    def test_the_past_relayed_back_is_refuted_too(self) -> None:
        """An agent's own old value arriving in a merge also makes it outrank that value."""
        ahead, peer = GossipState(A, incarnation=1_000 * SECOND), agent(B, A)
        ahead.record_local(Key.COUNTS, counts(A, 1), 0)
        exchange(ahead, peer, 0)
        behind = GossipState(A, incarnation=400 * SECOND)
        behind.record_local(Key.COUNTS, counts(A, 7), SECOND)
        exchange(behind, peer, SECOND)  # the peer drops 7 as stale, then sends A's old value
        assert checked(peer, A) == 1
        assert behind.incarnation == 1_000 * SECOND + 1
        exchange(behind, peer, 2 * SECOND)
        assert checked(peer, A) == 7

    def test_a_forged_stamp_past_any_clock_is_not_refuted(self) -> None:
        """A stamp at 2**63 or more (no clock gives it) leaves the incarnation alone."""
        a = agent(A, B)
        assert a.refute({A: {Key.COUNTS: Stamp(2**63, 1)}}, 0) is None
        assert a.incarnation == 1


class TestMerge:
    def test_newer_value_wins_and_replay_is_stale(self) -> None:
        """A newer stamp replaces the held value; replaying an update is counted stale."""
        a, b = agent(A, B), agent(B, A)
        update = a.record_local(Key.COUNTS, counts(A, 1), 0)
        assert b.merge([update], 0, via=A).accepted == 1
        result = b.merge([update], SECOND, via=A)
        assert (result.accepted, result.stale) == (0, 1)
        b.merge([a.record_local(Key.COUNTS, counts(A, 2), SECOND)], SECOND, via=A)
        assert checked(b, A) == 2

    def test_unknown_member_never_gets_a_row(self) -> None:
        """Values about a member no membership lists are refused and create nothing."""
        b = agent(B, A)
        stranger = Update(D, Stamp(1, 1), Key.COUNTS, counts(D, 99), 0)
        result = b.merge([stranger], 0, via=A)
        assert result.unknown == (D,)
        assert D not in b.origins

    def test_a_member_that_left_is_known_by_its_own_view_of_the_group_until_forgotten(
        self,
    ) -> None:
        """A member's own view listing it in this group makes it known; not another group's, nor once forgotten."""
        b = agent(B, A)
        left = agent(D, A, B)  # its last view, from before it left the group
        stranger = GossipState(C, incarnation=1)
        stranger.record_local(Key.VIEW, dataclasses.replace(view(C), group_name=GROUP[::-1]), 0)
        assert b.merge(stranger.updates_for({}), 0, via=A).unknown == (C,)
        assert b.merge(left.updates_for({}), 0, via=A).unknown == ()
        assert D in b.origins
        b.forget(D)
        assert b.merge(left.updates_for({}), SECOND, via=A).unknown == (D,)
        assert D not in b.origins

    def test_a_view_in_the_batch_introduces_a_member(self) -> None:
        """A known member's new view that lists a newcomer lets the newcomer's values in."""
        a, b = agent(A, B), agent(B, A)
        exchange(a, b, 0)
        c = agent(C, A, B)
        newer_view = a.record_local(Key.VIEW, view(A, B, C, view_id="16036502905383892:10"), SECOND)
        batch = [c.record_local(Key.COUNTS, counts(C, 7), SECOND), newer_view]
        result = b.merge(batch, SECOND, via=A)
        assert result.unknown == ()
        assert checked(b, C) == 7

    def test_peers_cannot_overwrite_local_values(self) -> None:
        """Values about the local member are taken from its own source only."""
        a = agent(A, B)
        a.record_local(Key.COUNTS, counts(A, 1), 0)
        forged = Update(A, Stamp(99, 99), Key.COUNTS, counts(A, 666), 0)
        assert a.merge([forged], 0, via=B).accepted == 0
        assert checked(a, A) == 1

    def test_counts_without_gtids_keep_the_previous_gtid_columns(self) -> None:
        """TRANSACTIONS_COMMITTED_ALL_MEMBERS stays until a message carries it.

        As in ``Pipeline_member_stats::update_member_stats``.
        """
        a, b = agent(A, B), agent(B, A)
        b.merge([a.record_local(Key.COUNTS, counts(A, 1, f"{GROUP}:1-5"), 0)], 0, via=A)
        b.merge([a.record_local(Key.COUNTS, counts(A, 2, present=False), SECOND)], SECOND, via=A)
        row = held_row(b, A)
        assert row is not None
        assert (row.count_transactions_checked, row.transactions_committed_all_members) == (
            2,
            f"{GROUP}:1-5",
        )
        b.merge(
            [a.record_local(Key.COUNTS, counts(A, 3, f"{GROUP}:1-9"), 2 * SECOND)],
            2 * SECOND,
            via=A,
        )
        newest = held_row(b, A)
        assert newest is not None
        assert newest.transactions_committed_all_members == f"{GROUP}:1-9"

    def test_the_kept_gtid_columns_make_the_row_a_checked_construction_makes(self) -> None:
        """A row given the held GTID columns unchecked equals the row MemberStatsRow checks of the same values."""
        held = dataclasses.replace(
            counts(A, 1, f"{GROUP}:1-5:7").row, last_conflict_free_transaction=f"{GROUP}:7"
        )
        fresh = counts(A, 2, present=False).row
        kept = fresh.with_gtid_columns_of(held)
        checked_row = dataclasses.replace(
            fresh,
            transactions_committed_all_members=held.transactions_committed_all_members,
            last_conflict_free_transaction=held.last_conflict_free_transaction,
        )
        assert kept == checked_row
        assert kept.values() == checked_row.values()
        assert (kept.count_transactions_checked, fresh.transactions_committed_all_members) == (
            2,
            "",
        )

    def test_counts_without_offsets_keep_the_previous_offsets(self) -> None:
        """Clock offsets ride on some counts only: a receiver keeps the last ones it got."""
        a, b = agent(A, B), agent(B, A)
        offsets = (ClockOffset(B, 5 * SECOND, 300),)
        with_offsets = dataclasses.replace(counts(A, 1), offsets=offsets, offsets_present=True)
        b.merge([a.record_local(Key.COUNTS, with_offsets, 0)], 0, via=A)
        b.merge([a.record_local(Key.COUNTS, counts(A, 2), SECOND)], SECOND, via=A)
        heard = b.value(A, Key.COUNTS)
        assert heard is not None
        assert isinstance(heard.update.value, Counts)
        assert heard.update.value.offsets == offsets

    def test_every_key_travels(self) -> None:
        """All eight keys (counts, view, applier, gtid_executed, health, server, events, log) travel."""
        a, b = agent(A, B), agent(B, A)
        a.record_local(Key.COUNTS, counts(A, 1), 0)
        a.record_local(Key.APPLIER, ApplierStatusRow(member_id=A), 0)
        a.record_local(Key.GTID_EXECUTED, GtidSet.parse(f"{GROUP}:1-9"), 0)
        a.record_local(Key.HEALTH, SourceHealth(ok=False, message="server is down"), 0)
        a.record_local(Key.SERVER, ServerSettings(read_only=True, super_read_only=True), 0)
        event = EventRow(1, A, EventType.MEMBER_ROLE, "SECONDARY", "PRIMARY", "1:2", A)
        a.record_local(Key.EVENTS, Events((event,)), 0)
        line = MemberLogRow(1, 0, "Warning", "MY-011493", "Repl", "unreachable", A)
        a.record_local(Key.LOG, LogLines((line,)), 0)
        exchange(a, b, 0)
        assert set(b.origins[A].values) == set(Key)
        held = b.value(A, Key.EVENTS)
        assert held is not None
        assert held.update.value == Events((event,))


class TestRelay:
    def test_a_broken_link_is_bridged_by_a_third_agent(self) -> None:
        """A and C never talk directly, yet each gets the other's newest values through B."""
        a, b, c = agent(A, B, C), agent(B, A, C), agent(C, A, B)
        for second in range(1, 6):
            now = second * SECOND
            a.record_local(Key.COUNTS, counts(A, second), now)
            c.record_local(Key.COUNTS, counts(C, 10 * second), now)
            exchange(a, b, now)
            exchange(b, c, now)
            exchange(a, b, now)
        assert checked(a, C) == 50
        assert checked(c, A) == 5
        assert a.value(C, Key.COUNTS).via == B  # type: ignore[union-attr]
        assert a.connected(C, 5 * SECOND, silence_us=10 * SECOND)

    def test_a_silent_agent_is_not_connected_but_its_rows_stay(self) -> None:
        """After 10 silent periods a member is not connected; its last values are kept."""
        a, b = agent(A, B), agent(B, A)
        a.record_local(Key.COUNTS, counts(A, 42), 0)
        exchange(a, b, 0)
        silence = 10 * SECOND
        assert b.connected(A, 10 * SECOND, silence)
        assert not b.connected(A, 10 * SECOND + 1, silence)
        assert checked(b, A) == 42
        exchange(a, b, 11 * SECOND)  # nothing new from A: still not connected
        assert not b.connected(A, 11 * SECOND, silence)
        a.record_local(Key.COUNTS, counts(A, 43), 12 * SECOND)
        exchange(a, b, 12 * SECOND)
        assert b.connected(A, 12 * SECOND, silence)

    def test_forget(self) -> None:
        """A forgotten member's values are gone."""
        a, b = agent(A, B), agent(B, A)
        exchange(a, b, 0)
        assert b.forget(A)
        assert A not in b.origins
        assert not b.forget(A)


members = st.sampled_from((A, B, C, D))
steps = st.lists(
    st.one_of(
        st.tuples(st.just("record"), members, st.integers(0, 10**6)),
        st.tuples(st.just("exchange"), members, members),
    ),
    max_size=60,
)


@settings(max_examples=150)
@given(steps)
def test_random_exchanges_converge(plan: list[tuple[str, str, object]]) -> None:
    """Whatever order values and exchanges happen in, a final full round makes all agents agree."""
    agents = {m: agent(m, A, B, C, D) for m in (A, B, C, D)}
    for now, (action, first, second) in enumerate(plan):
        if action == "record":
            agents[first].record_local(Key.COUNTS, counts(first, int(second)), now)  # type: ignore[call-overload]
        elif first != second:
            exchange(agents[first], agents[str(second)], now)
    for _ in range(2):
        for left in agents.values():
            for right in agents.values():
                if left is not right:
                    exchange(left, right, len(plan))
    digests = [state.digest() for state in agents.values()]
    assert all(digest == digests[0] for digest in digests)
    for member in agents:
        assert len({checked(state, member) for state in agents.values()}) == 1
