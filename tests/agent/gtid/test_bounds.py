"""The interval engine's internal paths, each checked against brute force on its own."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grstats.core.gtid import _bounds
from grstats.core.gtid._bounds import GNO_END, GNO_MAX

small_gno_sets = st.frozensets(st.integers(min_value=1, max_value=40), max_size=30)


def bounds_of(gnos: frozenset[int]) -> _bounds.Bounds:
    """Return canonical bounds of a set of GNOs."""
    return _bounds.from_pairs((g, g + 1) for g in gnos)


def gnos_of(bounds: _bounds.Bounds) -> frozenset[int]:
    """Expand bounds (small ones only) into their GNOs."""
    return frozenset(g for start, end in _bounds.pairs(bounds) for g in range(start, end))


class TestPaths:
    @given(st.lists(small_gno_sets, min_size=1, max_size=9))
    def test_sweep(self, gno_sets: list[frozenset[int]]) -> None:
        """The sorted sweep alone intersects any number of sets exactly."""
        result = _bounds._sweep([bounds_of(g) for g in gno_sets])
        assert result == bounds_of(frozenset.intersection(*gno_sets))

    @given(small_gno_sets, small_gno_sets)
    def test_cut(self, kept: frozenset[int], removed: frozenset[int]) -> None:
        """Splicing removed intervals out gives canonical bounds of the difference."""
        result = _bounds._cut(bounds_of(kept), bounds_of(removed))
        assert result == bounds_of(kept - removed)

    @given(small_gno_sets, st.lists(small_gno_sets, min_size=1, max_size=8))
    def test_shared_history(self, history: frozenset[int], extras: list[frozenset[int]]) -> None:
        """Sets sharing a long common prefix (members of one group) intersect exactly."""
        base = frozenset(g + 100 for g in history)  # the differences come first or last
        members = [base | extra for extra in extras] + [base - frozenset(range(100, 110))]
        result = _bounds.intersect_many([bounds_of(m) for m in members])
        assert result == bounds_of(frozenset.intersection(*members))

    @given(st.lists(small_gno_sets, min_size=1, max_size=9))
    def test_intersect_many(self, gno_sets: list[frozenset[int]]) -> None:
        """intersect_many, whichever path it takes, equals the brute-force intersection."""
        result = _bounds.intersect_many([bounds_of(g) for g in gno_sets])
        assert result == bounds_of(frozenset.intersection(*gno_sets))

    @given(small_gno_sets, small_gno_sets)
    def test_subset(self, left: frozenset[int], right: frozenset[int]) -> None:
        """is_subset, including its one-interval shortcut, matches <=."""
        assert _bounds.is_subset(bounds_of(left), bounds_of(right)) == (left <= right)


@given(small_gno_sets, st.lists(small_gno_sets, min_size=1, max_size=8))
def test_shared_prefix_is_the_longest(first: frozenset[int], others: list[frozenset[int]]) -> None:
    """_shared_prefix finds the longest whole-interval prefix common to all sets, no shorter."""
    head = bounds_of(first)
    rest = [bounds_of(other) for other in others]
    expected = 0
    for n in range(0, len(head) + 1, 2):
        if all(other[:n] == head[:n] for other in rest):
            expected = n
    assert _bounds._shared_prefix(head, rest) == expected


@given(
    st.lists(st.integers(min_value=1, max_value=2**63 - 1), min_size=2, max_size=40, unique=True)
)
def test_shared_prefix_with_huge_gnos(edges: list[int]) -> None:
    """Packing edges near 2^63 into integers finds the same prefix as tuple comparison."""
    ordered = tuple(sorted(edges))[: len(edges) // 2 * 2]
    changed = (*ordered[:-1], ordered[-1] + 1) if ordered[-1] < GNO_END else ordered
    assert _bounds._shared_prefix(ordered, [changed]) == (
        len(ordered) - 2 if changed != ordered else len(ordered)
    )


def test_complement_at_both_ends_of_the_gno_space() -> None:
    """The complement drops empty gaps at 1 and at 2^63-2, the ends of the GNO space."""
    assert _bounds.complement(()) == (1, GNO_END)
    assert _bounds.complement((1, GNO_END)) == ()
    assert _bounds.complement((1, 5)) == (5, GNO_END)
    assert _bounds.complement((5, GNO_END)) == (1, 5)
    assert _bounds.complement((3, 4)) == (1, 3, 4, GNO_END)
    assert GNO_END == GNO_MAX + 1


def test_from_pairs_merges_touching_and_drops_empty() -> None:
    """Touching and overlapping pairs merge and empty ones vanish, as add_gno_interval does."""
    assert _bounds.from_pairs([(5, 9), (1, 3), (3, 5), (10, 10), (12, 11)]) == (1, 9)


def test_intersect_many_needs_a_set() -> None:
    """Intersecting no sets is a programming error, not an empty result."""
    with pytest.raises(ValueError, match="at least one"):
        _bounds.intersect_many([])
