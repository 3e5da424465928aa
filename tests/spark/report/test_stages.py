"""The report's lag by stage on hand-made rows, in-process: percentiles, unknown stages, older files."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

from grstats.spark.report.arrow_tables import rows_of
from grstats.spark.report.model import partials_of_rows, stitch
from grstats.spark.report.page import PageData, render
from grstats.spark.report.rollup_job import read_partials, read_rows
from grstats.spark.report.stages import UNKNOWN_57, UNKNOWN_NONE, lag_stages
from grstats.spark.report.tables import LAG_STAGES
from grstats.spark.rollup import ARROW_GROUP_ROLLUPS, ARROW_MEMBER_ROLLUPS, STAGES, RollupSettings
from grstats.spark.sketch import RELATIVE_ACCURACY
from tests.spark.report.model_rows import arrow_rows, report
from tests.spark.report.rows import at, row

if TYPE_CHECKING:
    from pathlib import Path

GTID = "aaaaaaaa-bbbb-cccc-dddd-000000000000:7"
#: The columns ingest appended for the lag by stage (absent from older files).
LATER = {"wl7374_n", *(f"{s}_{part}" for s in STAGES for part in ("max", "n", "sketch"))}


def timed(member: str, second: int, **values: Any) -> dict[str, Any]:
    """A row of an 8.0 member: WL#7374 fields known, each stage's time varying with the second."""
    stages = {
        "transport_seconds": 0.001 * (1 + second % 7),
        "waiting_seconds": 0.25 * (second % 11) - 0.05,  # skew: below 0 at times
        "apply_seconds": 0.2 + 0.01 * (second % 13),
    }
    return row(member, second, last_applied_transaction=GTID, **stages | values)


def stages_of(tables: dict[str, list[dict[str, Any]]]) -> dict[tuple[str, str], dict[str, Any]]:
    """LAG_STAGES rows by (member, stage)."""
    return {(r["member_id"], r["stage"]): r for r in tables["lag_stages"]}


def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


@pytest.mark.parametrize(("grain_s", "cuts"), [(60, ()), (10, (at(61), at(150)))])
def test_percentiles_and_max_over_sampled_snapshots(grain_s: int, cuts: tuple[Any, ...]) -> None:
    """Each stage's percentiles are its sampled values' at rank, within 1%; the max is exact."""
    rows = [timed("a", s) for s in range(200)]
    rows[50] |= {"member_state": "OFFLINE", "transport_seconds": 99.0}  # not sampled
    found = stages_of(report(rows, grain_s=grain_s, cuts=cuts))
    sampled = [r for r in rows if r["member_state"] == "ONLINE"]
    for stage in STAGES:
        values = [r[stage] for r in sampled]
        got = found["a", stage.removesuffix("_seconds")]
        assert (got["samples"], got["max"], got["unknown"]) == (len(values), max(values), None)
        for q in (0.5, 0.95, 0.99):
            expected = nearest_rank(values, q)
            allowed = max(RELATIVE_ACCURACY * abs(expected), 0.0005) + 1e-12
            assert got[f"p{round(q * 100)}"] == pytest.approx(expected, abs=allowed)
    assert [r["stage"] for r in report(rows)["lag_stages"]] == ["transport", "waiting", "apply"]


def test_a_57_member_and_one_that_applied_nothing_are_unknown_not_zero() -> None:
    """A 5.7 member's three stages are unknown for 5.7; an idle 8.0 one's waiting and apply too."""
    rows = [row("old", s) for s in range(0, 120, 5)]  # no WL#7374 fields at all
    rows += [timed("idle", s, waiting_seconds=None, apply_seconds=None) for s in range(0, 120, 5)]
    tables = report(rows)
    found = stages_of(tables)
    for stage in ("transport", "waiting", "apply"):
        old = found["old", stage]
        assert (old["samples"], old["p50"], old["max"], old["unknown"]) == (
            0,
            None,
            None,
            UNKNOWN_57,
        )
    assert found["idle", "transport"]["unknown"] is None
    assert found["idle", "waiting"]["unknown"] == found["idle", "apply"]["unknown"] == UNKNOWN_NONE
    page = render(
        PageData(
            "t", "r", "s", tables["figures"], [], [], [], 60, [], lag_stages=tables["lag_stages"]
        )
    )
    section = page[page.index("<h3>Lag by stage") : page.index("<h2>Over time")]
    assert section.count("MySQL 5.7 gives no WL#7374 timestamps") == 3


def test_older_rollups_and_data_files_without_the_stages_still_report(tmp_path: Path) -> None:
    """Rollup and data files from before the stages read them as null: every stage unknown."""
    rows = arrow_rows([timed("a", s) for s in range(0, 120, 5)])
    older_rows = rows.drop_columns(list(STAGES))
    pq.write_table(older_rows, tmp_path / "rows.parquet")
    read = read_rows(str(tmp_path / "rows.parquet"), None, None)
    assert read.column("transport_seconds").null_count == read.num_rows
    members, groups = partials_of_rows(read, RollupSettings(), 60)
    pq.write_table(members.drop_columns(sorted(LATER)), tmp_path / "members.parquet")
    pq.write_table(groups, tmp_path / "groups.parquet")
    older = read_partials([str(tmp_path / "members.parquet")], ARROW_MEMBER_ROLLUPS, None, None)
    assert older.schema == ARROW_MEMBER_ROLLUPS
    assert older.column("wl7374_n").null_count == older.num_rows
    for partials in (members, older):  # from the older rows, and from the older rollups
        pieces = stitch(partials, ARROW_GROUP_ROLLUPS.empty_table(), 30.0, 60)
        found = rows_of(lag_stages(pieces.member_stages))
        assert [(r["samples"], r["p99"], r["unknown"]) for r in found] == [
            (0, None, UNKNOWN_NONE)
        ] * 3
        assert lag_stages(pieces.member_stages).schema == LAG_STAGES
