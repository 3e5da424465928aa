"""Interval algebra on the GNOs of one (uuid, tag): "bounds", a flat tuple of half-open edges.

A GNO set is stored as ``(s0, e0, s1, e1, ...)``: the half-open intervals ``[s, e)`` that MySQL
keeps internally (``Gtid_set::Interval``, merged by ``Gtid_set::add_gno_interval``), sorted,
disjoint and never touching, so every edge is strictly greater than the one before it. That
canonical form gives value semantics for free (equality is tuple equality) and lets every
operation run as a few passes of C-level built-ins (``sorted``, ``map``, ``itertools``,
``bisect``, ``set``) instead of a Python loop per interval:

* a GNO ``g`` is in the set iff the number of edges ``<= g`` is odd (``bisect``);
* the symmetric difference is the symmetric difference of the edge sets, since membership is the
  parity of edges passed;
* intersection of ``k`` sets is one sorted sweep (:func:`intersect_many`); union and difference
  are intersections of complements.

Everything here is pure: no I/O, no validation (callers pass canonical bounds).
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_right
from itertools import chain, compress, count
from operator import add, eq, lt
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

Bounds: TypeAlias = tuple[int, ...]

#: Smallest GNO (``Gtid_set::add_gtid_text``: 0 is malformed).
GNO_MIN = 1
#: Largest GNO, 2^63 - 2 (``parse_gno`` in sql/rpl_gtid_set.cc: 2^63 - 1 is malformed).
GNO_MAX = (1 << 63) - 2
#: Exclusive end of the GNO space, the ``e`` of an interval that holds ``GNO_MAX``.
GNO_END = GNO_MAX + 1

EMPTY: Bounds = ()
_ONE = 1


def is_canonical(flat: list[int] | Bounds) -> bool:
    """Return whether ``flat`` (even length) is sorted, disjoint and non-touching."""
    return all(map(lt, flat, flat[1:]))


def from_pairs(pairs: Iterable[tuple[int, int]]) -> Bounds:
    """Return the canonical bounds of half-open ``(start, end)`` pairs in any order.

    Pairs may overlap, touch, repeat or be empty (``end <= start``, dropped), as MySQL's parser
    accepts them (``Gtid_set::add_gtid_text``).
    """
    ordered = sorted(pair for pair in pairs if pair[0] < pair[1])
    if not ordered:
        return EMPTY
    merged: list[int] = []
    start, end = ordered[0]
    for next_start, next_end in ordered:
        if next_start <= end:  # overlaps or touches: merge, as add_gno_interval does
            end = max(end, next_end)
        else:
            merged += (start, end)
            start, end = next_start, next_end
    merged += (start, end)
    return tuple(merged)


def from_flat(flat: list[int] | Bounds) -> Bounds:
    """Return the canonical bounds of a flat ``[s0, e0, s1, e1, ...]`` list in any order."""
    if is_canonical(flat):
        return tuple(flat)
    return from_pairs(zip(flat[0::2], flat[1::2], strict=True))


def pairs(bounds: Bounds) -> Iterator[tuple[int, int]]:
    """Yield the half-open ``(start, end)`` intervals of ``bounds`` in order."""
    return zip(bounds[0::2], bounds[1::2], strict=True)


def count_gnos(bounds: Bounds) -> int:
    """Return how many GNOs ``bounds`` holds (GTID_COUNT for one uuid and tag)."""
    return sum(bounds[1::2]) - sum(bounds[0::2])


def contains(bounds: Bounds, gno: int) -> bool:
    """Return whether ``gno`` is in ``bounds``."""
    return bool(bisect_right(bounds, gno) & 1)


def complement(bounds: Bounds) -> Bounds:
    """Return every GNO in ``[GNO_MIN, GNO_MAX]`` that is not in ``bounds``."""
    edges = (GNO_MIN, *bounds, GNO_END)
    # An interval that starts at GNO_MIN or ends at GNO_END leaves an empty gap: drop it.
    low = 2 if edges[1] == GNO_MIN else 0
    high = len(edges) - 2 if edges[-2] == GNO_END else len(edges)
    return edges[low:high]


def _sweep(sets: Sequence[Bounds]) -> Bounds:
    """Return the GNOs held by all of ``sets`` with one sort of all their edges.

    Edges are doubled, starts as ``2s + 1`` and ends as ``2e``, so that after sorting an end
    comes before a start at the same GNO (touching intervals of different sets do not overlap)
    and the parity tells a start from an end. After the ``i``-th start, at sorted position
    ``p``, ``i + 1`` starts and ``p - i`` ends have been passed, so ``2i + 1 - p`` sets cover
    it; where that equals ``k`` an interval of the result begins, and it ends at the next edge.
    """
    k = len(sets)
    edges: list[int] = []
    for bounds in sets:
        starts = bounds[0::2]
        ends = bounds[1::2]
        edges += map(_ONE.__add__, map(add, starts, starts))
        edges += map(add, ends, ends)
    edges.sort()
    start_at = list(compress(count(), map(_ONE.__and__, edges)))
    hits = list(compress(start_at, map(eq, start_at, range(1 - k, 2 * len(start_at) + 1 - k, 2))))
    result = [0] * (2 * len(hits))
    result[0::2] = map(edges.__getitem__, hits)
    result[1::2] = map(edges.__getitem__, map(_ONE.__add__, hits))
    return tuple(map(_ONE.__rrshift__, result))


def _cut(bounds: Bounds, removed: Bounds) -> Bounds:
    """Return ``bounds`` minus ``removed`` by splicing: fast when ``removed`` is small.

    Each removed interval costs two bisections; the kept runs of ``bounds`` are copied as
    slices, so the cost is ``O(len(removed) log n)`` plus one C-level copy of ``bounds``.
    """
    pieces: list[Sequence[int]] = []
    kept_from = 0
    for start, end in zip(removed[0::2], removed[1::2], strict=True):
        low = bisect_right(bounds, start)  # edges <= start
        high = bisect_right(bounds, end - 1)  # edges <= end - 1: odd if end - 1 is inside
        if low >= len(bounds):
            break
        pieces.append(bounds[kept_from:low])
        if low & 1 and bounds[low - 1] < start:  # start falls inside an interval: cut it at start
            pieces.append((start,))
        elif low & 1:  # the interval began exactly at start: drop its start edge
            pieces[-1] = pieces[-1][:-1]
        if high & 1:  # end - 1 is inside an interval: it resumes at end
            if end < bounds[high]:
                pieces.append((end,))
            kept_from = high
            if end == bounds[high]:
                kept_from = high + 1
        else:
            kept_from = high
    pieces.append(bounds[kept_from:])
    return tuple(chain.from_iterable(pieces))


def _deltas(first: Bounds, others: Sequence[Bounds], budget: int) -> list[Bounds] | None:
    """Return ``first ^ other`` for each of ``others``, or None once they pass ``budget`` edges."""
    first_edges = set(first)
    deltas = []
    for other in others:
        delta = first_edges.symmetric_difference(other)
        budget -= len(delta)
        if budget < 0:
            return None
        deltas.append(tuple(sorted(delta)))
    return deltas


def _shared_prefix(first: Bounds, others: Sequence[Bounds]) -> int:
    """Return the longest even ``n`` such that every one of ``others`` starts with ``first[:n]``.

    One C-level tuple comparison settles the usual case, where members differ only in their
    newest intervals. Otherwise the edges are packed big-endian into one integer per set and
    the first differing edge is found by one XOR: its highest set bit lies in that edge.
    """
    shared = len(first)
    packed_first = _packed(first)
    for other in others:
        common = min(shared, len(other))
        if other[:common] == first[:common]:  # the usual case: members differ only in their tails
            shared = common
            continue
        differ = (packed_first >> (64 * (len(first) - common))) ^ _packed(other[:common])
        if differ:  # edges are 64 bits: count whole edges above the highest differing bit
            common = (64 * common - differ.bit_length()) // 64
        shared = common
        if shared < 2:
            return 0
    return shared & ~1


def _packed(bounds: Bounds) -> int:
    """Return the edges of ``bounds`` as one big-endian integer, 8 bytes an edge."""
    packed = array("q", bounds)
    if sys.byteorder == "little":
        packed.byteswap()
    return int.from_bytes(packed.tobytes(), "big")


def intersect_many(sets: Sequence[Bounds]) -> Bounds:
    """Return the GNOs held by every one of ``sets`` (at least one set).

    This is the stable-set computation (``Certifier::stable_set_handle``): the
    ``gtid_executed`` of up to 9 members, often thousands of intervals each, that mostly share
    their history. Intervals that every set starts with are kept as they are (they cannot touch
    what follows, as the sets are canonical). Of the rest, when the sets differ from the first
    one in few edges, the result is the first minus everything another set disagrees on
    (``A1 - union(A1 ^ Ai)``), spliced in; otherwise one sweep of all edges.
    """
    if not sets:
        raise ValueError("intersect_many needs at least one set")
    first = sets[0]
    if len(sets) == 1:
        return first
    if not all(sets):
        return EMPTY
    shared = _shared_prefix(first, sets[1:])
    head = first[:shared]
    rest = [bounds[shared:] for bounds in sets]
    if not all(rest):
        return head
    deltas = _deltas(rest[0], rest[1:], budget=len(rest[0]) // 4)
    if deltas is None:
        return head + _sweep(rest)
    disagreed = deltas[0] if len(deltas) == 1 else union_many(deltas)
    return head + _cut(rest[0], disagreed)


def intersection(left: Bounds, right: Bounds) -> Bounds:
    """Return the GNOs in both ``left`` and ``right``."""
    if not left or not right:
        return EMPTY
    return intersect_many((left, right))


def union_many(sets: Sequence[Bounds]) -> Bounds:
    """Return the GNOs held by any of ``sets``: the complement of the complements' intersection."""
    present = [bounds for bounds in sets if bounds]
    if not present:
        return EMPTY
    if len(present) == 1:
        return present[0]
    return complement(intersect_many([complement(bounds) for bounds in present]))


def union(left: Bounds, right: Bounds) -> Bounds:
    """Return the GNOs in ``left`` or ``right``."""
    return union_many((left, right))


def difference(left: Bounds, right: Bounds) -> Bounds:
    """Return the GNOs in ``left`` and not in ``right`` (GTID_SUBTRACT for one uuid and tag)."""
    if not left or not right:
        return left
    return intersect_many((left, complement(right)))


def symmetric_difference(left: Bounds, right: Bounds) -> Bounds:
    """Return the GNOs in exactly one of ``left`` and ``right``: the edges in exactly one."""
    return tuple(sorted(set(left).symmetric_difference(right)))


def is_subset(left: Bounds, right: Bounds) -> bool:
    """Return whether every GNO of ``left`` is in ``right`` (GTID_SUBSET for one uuid and tag)."""
    if not left:
        return True
    if len(left) == 2:  # one interval: inside iff both edges fall in the same interval of right
        at = bisect_right(right, left[0])
        return bool(at & 1) and left[1] <= right[at]
    return not difference(left, right)
