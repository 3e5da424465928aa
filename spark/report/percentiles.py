"""Percentiles of the sampled gauges, with Spark's ``percentile_approx``.

Accuracy: ``percentile_approx(column, ..., ACCURACY)`` with ACCURACY = 10,000 keeps a
Greenwald-Khanna summary whose rank error is at most 1/10,000 of the samples: the p95 of a
day of one-second snapshots (86,400 samples) is a value whose rank is within 9 of the true
p95's. Up to 10,000 samples the summary holds every value and the result is exact. The
result is always one of the sampled values (Spark does not interpolate).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)
from pyspark.sql.types import DoubleType, LongType, StringType

from grstats.spark.report.frame import conform, schema
from grstats.spark.report.stitch import PERCENTILES, percentile_name

__all__ = [
    "ACCURACY",
    "GROUP_PERCENTILES",
    "MEMBER_PERCENTILES",
    "PERCENTILES",
    "group_percentiles",
    "member_percentiles",
    "percentile_name",
]

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DataType

#: percentile_approx's accuracy: rank error at most 1/ACCURACY of the samples.
ACCURACY = 10_000


def _type(gauge: str) -> DataType:
    return DoubleType() if gauge == "lag_seconds" else LongType()


#: Output of :func:`member_percentiles`.
MEMBER_PERCENTILES = schema(
    ("group_label", StringType()),
    ("member_id", StringType()),
    *(
        (percentile_name(gauge, q), _type(gauge))
        for gauge, quantiles in PERCENTILES.items()
        for q in quantiles
    ),
)
#: Output of :func:`group_percentiles`: the same without member_id.
GROUP_PERCENTILES = schema(
    *((f.name, f.dataType) for f in MEMBER_PERCENTILES.fields if f.name != "member_id")
)


def _aggregates() -> list[tuple[str, float, str]]:
    return [
        (gauge, q, percentile_name(gauge, q))
        for gauge, quantiles in PERCENTILES.items()
        for q in quantiles
    ]


def _percentiles(frame: DataFrame, keys: list[str]) -> DataFrame:
    arrays = {
        gauge: F.percentile_approx(gauge, list(quantiles), ACCURACY).alias(gauge)
        for gauge, quantiles in PERCENTILES.items()
    }
    grouped = frame.groupBy(*keys).agg(*arrays.values())
    return grouped.select(
        *keys,
        *(
            F.col(gauge)[PERCENTILES[gauge].index(q)].alias(name)
            for gauge, q, name in _aggregates()
        ),
    )


def member_percentiles(gauge_rows: DataFrame) -> DataFrame:
    """Return MEMBER_PERCENTILES: each member's percentiles over its sampled snapshots.

    ``gauge_rows`` are :data:`grstats.spark.report.steps.GAUGES_SCHEMA` rows, whose gauges are null
    where the row is not sampled, so that only sampled values count.
    """
    return conform(_percentiles(gauge_rows, ["group_label", "member_id"]), MEMBER_PERCENTILES)


def group_percentiles(snapshot_rows: DataFrame) -> DataFrame:
    """Return GROUP_PERCENTILES (a row per group) over the snapshots' largest value of any member.

    ``snapshot_rows`` are :data:`grstats.spark.report.snapshots.SNAPSHOTS` rows: the group's p95
    applier queue is the p95, over snapshots, of the largest applier queue of any member
    (the member that holds the group back at that moment).
    """
    return conform(_percentiles(snapshot_rows, ["group_label"]), GROUP_PERCENTILES)
