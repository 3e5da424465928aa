"""A mergeable quantile sketch: counts of values in logarithmic buckets (DDSketch).

DDSketch (Masson, Rim and Lee, "DDSketch: a fast and fully-mergeable quantile sketch with
relative-error guarantees", VLDB 2019) puts a value ``v > 0`` in bucket
``i = ceil(log(v) / log(GAMMA))``, which holds ``(GAMMA**(i-1), GAMMA**i]``; the bucket's
representative value ``2 * GAMMA**i / (GAMMA + 1)`` is within RELATIVE_ACCURACY of every value
in it. A sketch is a map from bucket key to count, so two sketches merge by adding counts:
the per-minute partials of :mod:`grstats.spark.rollup` add up to the sketch of any range.

Below LINEAR_LIMIT the buckets are linear instead, RESOLUTION wide: APPLIER_LAG_SECONDS of an
idle member wanders between 2 and 4 ms, and 1% buckets there would give a minute of 60 such
lags some 40 buckets (docs/benchmarks.md, "Spark report"): more sketch than rows, for a
precision nobody reads. So a value is within RELATIVE_ACCURACY, or within RESOLUTION / 2 below
LINEAR_LIMIT (no whole number is there but 0, which is exact).

Keys are int64 and ordered as the values are: 0 for values of magnitude below MIN_MAGNITUDE;
``1 + floor(|v| / RESOLUTION)`` (1 to 100) below LINEAR_LIMIT; ``BIAS + i`` above (BIAS keeps
``BIAS + i`` above the linear keys); negative values the negated key of their magnitude. Values
that are not finite (NaN, infinities) have no bucket.

Pure Python and pyarrow: this runs in Spark's Python workers at ingest and in the driver at
report time.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from collections.abc import Iterable

#: Every value's bucket representative is within this fraction of the value.
RELATIVE_ACCURACY = 0.01
GAMMA = (1 + RELATIVE_ACCURACY) / (1 - RELATIVE_ACCURACY)
#: Values of smaller magnitude share key 0 (and come back as 0.0).
MIN_MAGNITUDE = 1e-9
#: Added to the bucket index, so that positive keys stay positive for magnitudes down to
#: MIN_MAGNITUDE (index about -1,036) and negative values' keys stay below 0.
BIAS = 1 << 20

#: Magnitudes below this have linear buckets of RESOLUTION (absolute error RESOLUTION / 2).
LINEAR_LIMIT = 0.1
RESOLUTION = 0.001

#: What the report says about percentiles read from the sketches.
ACCURACY_TEXT = (
    "from the partials' log-bucket sketches (DDSketch), merged: each percentile is within "
    f"{RELATIVE_ACCURACY:.0%} of the value at its rank, or {RESOLUTION / 2 * 1000:g} ms for "
    f"lags under {LINEAR_LIMIT:g} s (whole numbers below 50 exact)"
)

_LOG_GAMMA = math.log(GAMMA)
# Arrow scalars: a Python number given to a compute function is converted on every call.
_LOG_GAMMA_SCALAR = pa.scalar(_LOG_GAMMA, pa.float64())
_MIN_MAGNITUDE_SCALAR = pa.scalar(MIN_MAGNITUDE, pa.float64())
_ZERO_F = pa.scalar(0.0, pa.float64())
_ZERO_KEY = pa.scalar(0, pa.int64())
_BIAS_SCALAR = pa.scalar(BIAS, pa.int64())
_LINEAR_LIMIT_SCALAR = pa.scalar(LINEAR_LIMIT, pa.float64())
_RESOLUTION_SCALAR = pa.scalar(RESOLUTION, pa.float64())
_ONE_KEY = pa.scalar(1, pa.int64())
_NULL_KEY = pa.scalar(None, pa.int64())


def key_of(value: float) -> int:
    """Return the bucket key of ``value`` (finite)."""
    magnitude = abs(value)
    if magnitude < MIN_MAGNITUDE:
        return 0
    if magnitude < LINEAR_LIMIT:
        key = 1 + math.floor(magnitude / RESOLUTION)
    else:
        key = BIAS + math.ceil(math.log(magnitude) / _LOG_GAMMA)
    return key if value > 0 else -key


def value_of(key: int) -> float:
    """Return the representative value of bucket ``key``: within the accuracy of its values."""
    if key == 0:
        return 0.0
    if abs(key) < BIAS // 2:  # a linear bucket: its middle
        value = (abs(key) - 0.5) * RESOLUTION
    else:
        index = abs(key) - BIAS
        value = 2 * GAMMA**index / (GAMMA + 1)
    return value if key > 0 else -value


def bucket_keys(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Return the int64 bucket key of each value (:func:`key_of`); null where null or not finite.

    Vectorised with pyarrow compute: the same operations as :func:`key_of`, so the same keys.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    floats = values.cast(pa.float64())
    finite = pc.is_finite(floats)  # null where null
    usable = pc.if_else(finite, floats, _ZERO_F)  # NaN and infinities cannot be cast to int
    magnitude = pc.abs(usable)
    small = pc.less(magnitude, _MIN_MAGNITUDE_SCALAR)
    # ln(0) is -inf: those are small and replaced, but the cast below must see no infinity.
    logs = pc.ln(pc.if_else(small, pa.scalar(1.0, pa.float64()), magnitude))
    index = pc.ceil(pc.divide(logs, _LOG_GAMMA_SCALAR)).cast(pa.int64())
    linear = pc.add(pc.floor(pc.divide(magnitude, _RESOLUTION_SCALAR)).cast(pa.int64()), _ONE_KEY)
    key = pc.if_else(pc.less(magnitude, _LINEAR_LIMIT_SCALAR), linear, pc.add(index, _BIAS_SCALAR))
    signed = pc.if_else(pc.less(usable, _ZERO_F), pc.negate(key), key)
    keyed = pc.if_else(small, _ZERO_KEY, signed)
    return pc.if_else(finite, keyed, _NULL_KEY)


def quantile(buckets: Iterable[tuple[int, int]], q: float, *, integer: bool) -> float | int | None:
    """Return the ``q`` quantile of a sketch given as ``(key, count)`` pairs in any order.

    The value of rank ``max(1, ceil(q * n))`` among the ``n`` values, as Spark's
    ``percentile_approx`` ranks (QuantileSummaries.query), read as its bucket's representative;
    ``integer`` rounds it to the nearest whole number (a whole number below 50 comes back
    exact, as 1% of it is under 0.5). None when the sketch is empty.
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q: {q!r} is not a quantile from 0 to 1")
    counts: dict[int, int] = {}
    for key, count in buckets:
        counts[key] = counts.get(key, 0) + count
    total = sum(counts.values())
    if total <= 0:
        return None
    rank = max(1, math.ceil(q * total))
    seen = 0
    chosen = max(counts)
    for key in sorted(counts):
        seen += counts[key]
        if seen >= rank:
            chosen = key
            break
    value = value_of(chosen)
    return math.floor(value + 0.5) if integer else value
