"""Build small MEMBER_ROWS frames for report tests: name the columns a test cares about."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from grstats.spark.schema import COUNTER_COLUMNS, MEMBER_ROWS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

T0 = dt.datetime(2026, 1, 5, 12, 0, tzinfo=dt.UTC)

#: What a healthy, heard, ONLINE member row holds unless a test says otherwise.
DEFAULTS: dict[str, Any] = {
    "agent": "127.0.0.1:7400",
    "group_label": "default",
    "group_name": "",
    "member_host": "db1",
    "member_port": 3306,
    "member_state": "ONLINE",
    "member_role": "PRIMARY",
    "member_version": "8.0.36",
    "connected": True,
    "in_view": True,
    **dict.fromkeys(COUNTER_COLUMNS, 0),
    "applier_lag_seconds": 0.0,
    "gtids_ahead_of_committed_all": 0,
}


def at(seconds: float) -> dt.datetime:
    """The moment ``seconds`` after T0."""
    return T0 + dt.timedelta(seconds=seconds)


def row(member: str, seconds: float, **values: Any) -> dict[str, Any]:
    """One member row at T0 + ``seconds``: DEFAULTS overridden by ``values``."""
    collected = at(seconds)
    return {
        **DEFAULTS,
        "member_id": member,
        "collected_at": collected,
        "collected_date": collected.date(),
        "served_at": collected,
        **values,
    }


def frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    """A MEMBER_ROWS frame of ``rows`` (columns they do not name are null)."""
    names = MEMBER_ROWS.fieldNames()
    unknown = {key for r in rows for key in r} - set(names)
    assert not unknown, f"not MEMBER_ROWS columns: {sorted(unknown)}"
    return spark.createDataFrame([tuple(r.get(n) for n in names) for r in rows], MEMBER_ROWS)
