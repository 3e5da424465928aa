"""Small helpers every transform shares: explicit output schemas and time columns."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)
from pyspark.sql.types import StructField, StructType

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType


def schema(*fields: tuple[str, DataType]) -> StructType:
    """Return a StructType of nullable fields (Parquet reads every column back as nullable)."""
    return StructType([StructField(name, data_type, nullable=True) for name, data_type in fields])


def conform(frame: DataFrame, target: StructType) -> DataFrame:
    """Return ``frame``'s columns of ``target``, in its order, cast to its types.

    Every transform ends with this, so that its output has exactly the schema it declares,
    whatever types Spark inferred for the expressions on the way.
    """
    return frame.select([F.col(f.name).cast(f.dataType).alias(f.name) for f in target.fields])


def same_columns(left: StructType, right: StructType) -> bool:
    """Whether two schemas have the same column names and types, in the same order."""
    return [(f.name, f.dataType) for f in left.fields] == [
        (f.name, f.dataType) for f in right.fields
    ]


def epoch_seconds(column: str | Column) -> Column:
    """A timestamp column as seconds since the epoch (double, microsecond precision)."""
    return F.unix_micros(F.col(column) if isinstance(column, str) else column) / 1_000_000


def ratio(numerator: Column, denominator: Column) -> Column:
    """``numerator / denominator`` as a double, null when the denominator is null or 0."""
    return F.when(denominator > 0, numerator.cast("double") / denominator)
