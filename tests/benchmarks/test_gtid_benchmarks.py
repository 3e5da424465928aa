"""pytest-benchmark figures for grstats' GtidSet at the issue's target size, results checked.

Not part of the normal suite; run with ``pytest tests/benchmarks -p no:cacheprovider``.
The inputs are the ones ``bench_gtid.py`` times against mysql-replication.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from grstats.core.gtid import GtidSet
from tests.benchmarks.bench_gtid import MEMBERS, base_set, halves, stable_members

if TYPE_CHECKING:
    from pytest_benchmark.fixture import BenchmarkFixture

INTERVALS = 10_000


@pytest.fixture(scope="module")
def base() -> GtidSet:
    return base_set(INTERVALS, 1)


@pytest.fixture(scope="module")
def parts(base: GtidSet) -> tuple[GtidSet, GtidSet]:
    return halves(base)


def test_inputs_have_the_intended_shape(base: GtidSet, parts: tuple[GtidSet, GtidSet]) -> None:
    """The base set has one UUID of 10,000 intervals, split into two disjoint halves."""
    even, odd = parts
    assert len(base.uuids()) == 1
    assert len(list(base)) == INTERVALS
    assert len(list(even)) == len(list(odd)) == INTERVALS // 2
    assert not even & odd


def test_parse(benchmark: BenchmarkFixture, base: GtidSet) -> None:
    """Parsing MySQL's text of a 10,000-interval set gives back that set."""
    text = str(base)
    parsed = benchmark(GtidSet.parse, text)
    assert parsed == base
    assert parsed.count() == base.count()


def test_format(benchmark: BenchmarkFixture, base: GtidSet) -> None:
    """Formatting a 10,000-interval set gives text that parses back to it, one interval each."""
    text = benchmark(str, base)
    assert GtidSet.parse(text) == base
    assert text.count(":") == INTERVALS


def test_union(benchmark: BenchmarkFixture, base: GtidSet, parts: tuple[GtidSet, GtidSet]) -> None:
    """The union of the even- and odd-indexed intervals is the whole set."""
    even, odd = parts
    assert benchmark(even.__or__, odd) == base


def test_difference(
    benchmark: BenchmarkFixture, base: GtidSet, parts: tuple[GtidSet, GtidSet]
) -> None:
    """Removing the odd-indexed intervals leaves exactly the even-indexed ones."""
    even, odd = parts
    assert benchmark(base.__sub__, odd) == even


def test_stable_set_of_nine_members(benchmark: BenchmarkFixture) -> None:
    """The intersection of 9 members that share a history and differ in tails is the shortest."""
    members, expected = stable_members("tails", INTERVALS)
    assert len(members) == MEMBERS
    result = benchmark(GtidSet.intersection_of, members)
    assert result == expected
    assert result == min(members, key=GtidSet.count)
    assert all(result <= member for member in members)


@pytest.mark.parametrize("shape", ["holes", "random"])
def test_stable_set_matches_gno_by_gno(shape: str) -> None:
    """On 1,000-interval members, the 9-way intersection equals the one of plain GNO sets."""
    members, _ = stable_members(shape, 1_000)
    gnos = [
        {gno for interval in m for gno in range(interval.start, interval.end + 1)} for m in members
    ]
    expected = set.intersection(*gnos)
    result = GtidSet.intersection_of(members)
    assert {gno for i in result for gno in range(i.start, i.end + 1)} == expected
