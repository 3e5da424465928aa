"""The member rows a report reads: the ingested table, cut to the report's time range."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812 (pyspark's own idiom)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def select_range(rows: DataFrame, start: dt.datetime | None, end: dt.datetime | None) -> DataFrame:
    """Return the rows collected in [``start``, ``end``) (None: unbounded on that side).

    The filter on the partition column ``collected_date`` comes first, so Spark reads only
    the days the range touches.
    """
    if start is not None:
        rows = rows.filter(F.col("collected_date") >= F.lit(start.astimezone(dt.UTC).date()))
        rows = rows.filter(F.col("collected_at") >= F.lit(start))
    if end is not None:
        rows = rows.filter(F.col("collected_date") <= F.lit(end.astimezone(dt.UTC).date()))
        rows = rows.filter(F.col("collected_at") < F.lit(end))
    return rows
