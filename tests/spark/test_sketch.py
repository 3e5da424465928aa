"""spark.sketch: log-bucket keys in value order, representatives within 1%, Spark's ranks."""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from grstats.spark.sketch import (
    ACCURACY_TEXT,
    BIAS,
    GAMMA,
    LINEAR_LIMIT,
    MIN_MAGNITUDE,
    RELATIVE_ACCURACY,
    RESOLUTION,
    bucket_keys,
    key_of,
    quantile,
    value_of,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

# The accuracy with room for the last bit of a value on a bucket's edge.
_ACCURACY = RELATIVE_ACCURACY * (1 + 1e-9)


def allowed(value: float) -> float:
    """How far a representative may be from ``value``: 1%, or half a linear bucket below 0.1."""
    if abs(value) < LINEAR_LIMIT:
        return RESOLUTION / 2 * (1 + 1e-9)
    return _ACCURACY * abs(value)


def spread(count: int, seed: int) -> list[float]:
    """Values of every sign and from 1e-12 to 1e12 in magnitude, and a few zeros."""
    rng = random.Random(seed)  # noqa: S311 (seeded test data, no secret)
    values = [0.0, -0.0, 1.0, -1.0, GAMMA, GAMMA**7, -(GAMMA**-3), MIN_MAGNITUDE, 1e-10]
    for _ in range(count):
        magnitude = 10 ** rng.uniform(-12, 12)
        values.append(magnitude if rng.random() < 0.7 else -magnitude)
    return values


def order_statistic(values: Sequence[float], q: float) -> float:
    """The value of rank max(1, ceil(q * n)) of ``values`` (Spark's percentile_approx rank)."""
    ranked = sorted(values)
    return ranked[max(1, math.ceil(q * len(ranked))) - 1]


class TestKeys:
    def test_key_order_is_value_order(self) -> None:
        """Sorting values by key never puts a larger value before a smaller one, negatives and zero included."""
        values = sorted(spread(5000, seed=1))
        keys = [key_of(v) for v in values]
        assert keys == sorted(keys)
        assert key_of(0.0) == 0
        assert key_of(-1e-3) < 0 < key_of(1e-3)

    def test_every_representative_is_within_the_accuracy(self) -> None:
        """value_of(key_of(v)) is within 1% of v (0.5 ms below 0.1), and 0.0 below MIN_MAGNITUDE."""
        for value in spread(5000, seed=2):
            representative = value_of(key_of(value))
            if abs(value) < MIN_MAGNITUDE:
                assert representative == 0.0
            else:
                assert abs(representative - value) <= allowed(value), value

    def test_keys_follow_the_contract(self) -> None:
        """1.0 is bucket 0 (BIAS), GAMMA bucket 1, -1.0 the negative of 1.0's key."""
        assert key_of(1.0) == BIAS
        assert key_of(GAMMA * 1.000001) == BIAS + 2
        assert key_of(-1.0) == -BIAS
        assert key_of(1e-10) == key_of(-1e-10) == 0

    def test_small_magnitudes_have_linear_buckets(self) -> None:
        """Below 0.1 a bucket is 1 ms wide, so an idle member's 2-4 ms lags take 2-3 buckets."""
        assert key_of(0.0025) == 3
        assert key_of(-0.0025) == -3
        assert value_of(3) == pytest.approx(0.0025)
        assert {key_of(v / 10_000) for v in range(20, 40)} == {3, 4}
        assert key_of(0.0999) < key_of(0.1) < key_of(0.11)

    def test_bucket_keys_equal_key_of_elementwise(self) -> None:
        """The vectorised keys are key_of's, value by value; nulls stay null."""
        values: list[float | None] = [*spread(5000, seed=3), None]
        got = bucket_keys(pa.array(values, pa.float64())).to_pylist()
        assert got == [None if v is None else key_of(v) for v in values]

    def test_bucket_keys_of_integers_and_chunks(self) -> None:
        """An int64 column, chunked, gives the keys of its values as floats."""
        chunked = pa.chunked_array([[0, 1, 49], [50, None, 25_000]], pa.int64())
        assert bucket_keys(chunked).to_pylist() == [
            0,
            key_of(1),
            key_of(49),
            key_of(50),
            None,
            key_of(25_000),
        ]

    def test_values_that_are_not_finite_have_no_bucket(self) -> None:
        """NaN and infinities get null keys (they are left out of a sketch), not an error."""
        keys = bucket_keys(pa.array([math.nan, math.inf, -math.inf, 2.0]))
        assert keys.to_pylist() == [None, None, None, key_of(2.0)]


class TestQuantile:
    @pytest.mark.parametrize("q", [0.0, 0.01, 0.5, 0.95, 0.99, 1.0])
    def test_within_the_accuracy_of_the_order_statistic(self, q: float) -> None:
        """On random data the quantile is within 1% of the sorted list's value of that rank."""
        values = spread(20_000, seed=4)
        buckets: dict[int, int] = {}
        for value in values:
            buckets[key_of(value)] = buckets.get(key_of(value), 0) + 1
        got = quantile(list(buckets.items()), q, integer=False)
        want = order_statistic(values, q)
        assert got is not None
        if abs(want) < MIN_MAGNITUDE:
            assert got == 0.0
        else:
            assert abs(got - want) <= allowed(want)

    def test_whole_numbers_below_50_are_exact(self) -> None:
        """Integer gauges below 50 come back as the exact value of the rank."""
        rng = random.Random(5)  # noqa: S311 (seeded test data, no secret)
        values = [rng.randrange(50) for _ in range(3000)]
        buckets: dict[int, int] = {}
        for value in values:
            buckets[key_of(value)] = buckets.get(key_of(value), 0) + 1
        for q in (0.0, 0.1, 0.25, 0.5, 0.9, 0.95, 0.99, 1.0):
            assert quantile(buckets.items(), q, integer=True) == order_statistic(values, q), q
        for value in range(50):
            assert quantile([(key_of(value), 1)], 0.5, integer=True) == value

    def test_buckets_in_any_order_and_repeated_keys_add_up(self) -> None:
        """Pairs may come unsorted, and one key twice (two partials merged): counts add."""
        pairs = [(key_of(30), 2), (key_of(10), 1), (key_of(30), 1), (key_of(20), 1)]
        assert quantile(pairs, 0.4, integer=True) == 20  # rank 2 of 10, 20, 30, 30, 30
        assert quantile(pairs, 0.41, integer=True) == 30  # rank 3

    def test_rank_is_ceil_q_n_as_spark(self) -> None:
        """Rank max(1, ceil(q * n)): q=0 is the smallest, q=0.5 of 4 values is the second."""
        pairs = [(key_of(v), 1) for v in (1, 2, 3, 4)]
        assert quantile(pairs, 0.0, integer=True) == 1
        assert quantile(pairs, 0.5, integer=True) == 2
        assert quantile(pairs, 0.51, integer=True) == 3

    def test_an_empty_sketch_has_no_quantile(self) -> None:
        """No values: None, as Spark's percentile_approx of no rows is null."""
        assert quantile([], 0.5, integer=False) is None
        assert quantile([(key_of(3.0), 0)], 0.5, integer=True) is None

    def test_q_outside_0_to_1_is_refused(self) -> None:
        """A q above 1 is an error that names q and the value."""
        with pytest.raises(ValueError, match=r"q: 1\.5 is not a quantile from 0 to 1"):
            quantile([(key_of(1.0), 1)], 1.5, integer=False)


def test_the_accuracy_text_names_the_accuracy() -> None:
    """The sentence the report prints says 1% and names the sketch."""
    assert "within 1%" in ACCURACY_TEXT
    assert "DDSketch" in ACCURACY_TEXT
