"""Run the report's model on hand-made member rows, in-process and without Spark."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from grstats.spark.decode import ARROW_MEMBER_ROWS
from grstats.spark.report.arrow_tables import rows_of
from grstats.spark.report.model import partials_of_rows, result_tables, stitch
from grstats.spark.rollup_settings import RollupSettings

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Sequence


def arrow_rows(rows: list[dict[str, Any]]) -> pa.Table:
    """ARROW_MEMBER_ROWS of ``rows`` (columns they do not name are null), in record order."""
    unknown = {key for r in rows for key in r} - set(ARROW_MEMBER_ROWS.names)
    assert not unknown, f"not member-row columns: {sorted(unknown)}"
    numbered = [
        {**r, "record_offset": r.get("record_offset", index)} for index, r in enumerate(rows)
    ]
    return pa.Table.from_pylist(numbered, schema=ARROW_MEMBER_ROWS)


def report(
    rows: list[dict[str, Any]],
    *,
    threshold: int = 25_000,
    max_gap_s: float = 30.0,
    grain_s: int = 60,
    cuts: Sequence[dt.datetime] = (),
    chart_points: int = 2_000,
) -> dict[str, list[dict[str, Any]]]:
    """Every result table of ``rows``, cut at ``cuts`` as segments cut them at ingest."""
    table = arrow_rows(rows)
    at = table.column("collected_at")
    edges = [None, *cuts, None]
    settings = RollupSettings(threshold, max_gap_s)
    members, groups = [], []
    for low, high in itertools.pairwise(edges):
        keep = pa.array([True] * table.num_rows)
        if low is not None:
            keep = pc.and_(keep, pc.greater_equal(at, pa.scalar(low, at.type)))
        if high is not None:
            keep = pc.and_(keep, pc.less(at, pa.scalar(high, at.type)))
        part = table.filter(keep)
        if part.num_rows:
            made = partials_of_rows(part, settings, grain_s)
            members.append(made[0])
            groups.append(made[1])
    pieces = stitch(pa.concat_tables(members), pa.concat_tables(groups), max_gap_s, grain_s)
    results = result_tables(pieces, chart_points=chart_points, worst_intervals=5)
    tables = {name: rows_of(found) for name, found in results.tables.items()}
    tables["bucket_s"] = [{"bucket_s": results.bucket_s}]
    return tables


def figures(
    rows: list[dict[str, Any]], **options: Any
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Each member's figures by member_id, and the group's (one group)."""
    found = report(rows, **options)["figures"]
    members = {r["member_id"]: r for r in found if r["scope"] == "member"}
    (group,) = [r for r in found if r["scope"] == "group"]
    return members, group


def episodes(rows: list[dict[str, Any]], kind: str, **options: Any) -> list[dict[str, Any]]:
    """The episodes of ``kind``, by member and start."""
    found = report(rows, **options)["episodes"]
    return sorted(
        (e for e in found if e["kind"] == kind), key=lambda e: (e["member_id"], e["start"])
    )
