"""Every member's clock from direct and shared estimates; skews from the median."""

from __future__ import annotations

from grstats.agent.gossip import ClockOffset
from grstats.agent.gossip.clocks import Estimate, compose, filtered, moved, skews

A, B, C, D = "a", "b", "c", "d"
MS = 1_000


def test_a_chain_of_relays_adds_its_offsets_and_its_errors() -> None:
    """A hears D only through B and C: D's offset is the chain's sum, its error the half delays'."""
    direct = [ClockOffset(B, 2 * MS, 2 * MS)]
    shared = {B: [ClockOffset(C, 5 * MS, 4 * MS)], C: [ClockOffset(D, -30 * MS, 6 * MS)]}
    found = compose(A, direct, shared)
    assert found == {
        B: Estimate(2 * MS, 1 * MS + 1),
        C: Estimate(7 * MS, 3 * MS + 2),
        D: Estimate(-23 * MS, 6 * MS + 3),
    }


def test_the_estimate_of_least_error_wins_and_works_backwards() -> None:
    """A direct estimate beats a relayed one with more error; B's estimate of A gives A's of B."""
    shared = {B: [ClockOffset(A, -2 * MS, 0), ClockOffset(C, 1 * MS, 80 * MS)]}
    found = compose(A, [ClockOffset(C, 4 * MS, 10 * MS)], shared)
    assert found[B] == Estimate(2 * MS, 1)
    assert found[C] == Estimate(4 * MS, 5 * MS + 1)


def test_the_member_off_the_median_is_named_whoever_asks() -> None:
    """With C 5 s ahead, A and C both find C 5 s off the median; two clocks of three: nothing."""
    assert skews({B: 0, C: 5_000 * MS}, A, 3) == {A: 0, B: 0, C: 5_000 * MS}
    assert skews({A: -5_000 * MS, B: -5_000 * MS}, C, 3) == {A: 0, B: 0, C: 5_000 * MS}
    assert skews({C: 5_000 * MS}, A, 3) == {}
    assert skews({B: 1_000 * MS}, A, 2) == {A: -500 * MS, B: 500 * MS}


def test_estimates_are_shared_again_only_when_they_moved() -> None:
    """A new peer or a move past 10 ms is news; jitter below it is not."""
    before = [ClockOffset(B, 0, 100)]
    assert not moved(before, [ClockOffset(B, 9 * MS, 100)])
    assert moved(before, [ClockOffset(B, 11 * MS, 100)])
    assert moved(before, [*before, ClockOffset(C, 0, 100)])


def test_an_estimate_whose_error_shrank_is_shared_again() -> None:
    """A first slow estimate (300 ms round trip) bettered to 4 ms is news though it did not move."""
    slow = [ClockOffset(B, 30_000 * MS, 300 * MS)]
    assert moved(slow, [ClockOffset(B, 30_000 * MS, 4 * MS)])
    assert not moved([ClockOffset(B, 0, 24 * MS)], [ClockOffset(B, 0, 4 * MS)])
    assert not moved([ClockOffset(B, 0, 4 * MS)], [ClockOffset(B, 0, 300 * MS)])


def test_the_clock_filter_keeps_the_exchange_of_least_delay() -> None:
    """Of agreeing samples the least delayed wins (RFC 5905 section 10), of equal delays the newest."""
    fast = ClockOffset(B, 30_000 * MS, 2 * MS)
    slow = ClockOffset(B, 30_040 * MS, 250 * MS)
    assert filtered([fast, slow]) == fast
    assert filtered([slow, fast]) == fast
    later = ClockOffset(B, 30_001 * MS, 2 * MS)
    assert filtered([fast, slow, later]) == later


def test_the_clock_filter_follows_a_stepped_clock_at_once() -> None:
    """Samples that disagree with the newest beyond both errors are from before a step: dropped."""
    before = [ClockOffset(B, 30_000 * MS, 2 * MS), ClockOffset(B, 30_000 * MS, 1 * MS)]
    stepped = ClockOffset(B, 0, 20 * MS)
    assert filtered([*before, stepped]) == stepped
