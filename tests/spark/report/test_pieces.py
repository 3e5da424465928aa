"""Pieces of the report: time arguments, chart buckets, SVG charts, writing a result table."""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from grstats.spark.report import svg
from grstats.spark.report.config import ReportConfig, ReportConfigError, parse_time
from grstats.spark.report.model import bucket_seconds
from grstats.spark.report.output import write_csv, write_parquet

if TYPE_CHECKING:
    from pathlib import Path

T0 = dt.datetime(2026, 1, 5, tzinfo=dt.UTC)


class TestParseTime:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("2026-01-05T00:00:00Z", T0),
            ("2026-01-05", T0),
            ("2026-01-05T02:00:00+02:00", T0),
            ("1767571200", T0),
            ("1767571200.5", T0 + dt.timedelta(seconds=0.5)),
        ],
    )
    def test_iso_8601_or_unix_seconds_in_utc(self, text: str, expected: dt.datetime) -> None:
        """Both forms give the same aware UTC moment; no offset means UTC."""
        assert parse_time("--from", text) == expected

    @pytest.mark.parametrize("text", ["yesterday", "nan", "1e300", "2026-02-30"])
    def test_anything_else_names_the_field_and_the_value(self, text: str) -> None:
        """The error says which argument and what it was given."""
        with pytest.raises(ReportConfigError, match=rf"--to: {text!r}"):
            parse_time("--to", text)

    def test_the_range_must_not_be_empty(self, tmp_path: Path) -> None:
        """End must come after start."""
        with pytest.raises(ReportConfigError, match="end"):
            ReportConfig(tmp_path, tmp_path, start=T0, end=T0)


class TestBuckets:
    @pytest.mark.parametrize(
        ("span_s", "points"),
        [(0, 2000), (1, 2000), (1999, 2000), (2000, 2000), (30 * 86_400, 2000), (150, 10)],
    )
    def test_at_most_the_asked_points_with_the_smallest_width(
        self, span_s: int, points: int
    ) -> None:
        """The buckets fit; one step narrower (a second, or a minute from a minute up) not."""
        width = bucket_seconds(T0, T0 + dt.timedelta(seconds=span_s), points)
        assert span_s // width + 1 <= points
        step = 60 if width >= 60 else 1
        assert width % step == 0
        assert width == 1 or span_s // (width - step) + 1 > points


class TestSvg:
    def test_a_line_chart_is_well_formed_and_breaks_at_gaps(self) -> None:
        """One polyline per run of points; a gap of more than two steps starts a new one."""
        start = T0.timestamp()
        points = [(start + s, float(s % 7)) for s in [*range(10), *range(100, 110)]]
        chart = svg.line_chart("applier queue", {"db1 (0001)": points}, start, start + 110)
        root = ET.fromstring(chart)  # noqa: S314 (the SVG this test just drew)
        lines = root.findall(".//{http://www.w3.org/2000/svg}polyline")
        assert len(lines) == 2
        assert all(len(line.get("points", "").split()) == 10 for line in lines)

    def test_a_timeline_draws_a_bar_per_episode(self) -> None:
        """Each (start, end, state) becomes one coloured bar in its member's lane."""
        start = T0.timestamp()
        lanes = [
            ("a", [(start, start + 50, "ONLINE"), (start + 50, start + 60, "UNREACHABLE")]),
            ("b", [(start, start + 60, "ONLINE")]),
        ]
        drawn = svg.timeline(lanes, start, start + 60, {"b": [(start, start + 5)]})
        root = ET.fromstring(drawn)  # noqa: S314 (the SVG this test just drew)
        fills = [r.get("fill") for r in root.findall(".//{http://www.w3.org/2000/svg}rect")]
        assert fills.count(svg.STATE_COLOURS["UNREACHABLE"]) == 1
        assert fills.count(svg.STATE_COLOURS["ONLINE"]) == 2
        assert fills.count("#000") == 1


class TestWriteTable:
    def test_parquet_csv_and_rows_hold_the_same_table(self, tmp_path: Path) -> None:
        """The Parquet file read back equals the rows, schema and nulls included; CSV as text."""
        when = dt.datetime(2026, 1, 31, 12, 0, 0, 250_000, tzinfo=dt.UTC)
        schema = pa.schema(
            [
                ("member_id", pa.string()),
                ("n", pa.int64()),
                ("x", pa.float64()),
                ("flag", pa.bool_()),
                ("at", pa.timestamp("us", tz="UTC")),
            ]
        )
        rows: list[dict[str, Any]] = [
            {"member_id": "a", "n": 1, "x": 2.5, "flag": True, "at": when},
            {"member_id": "b", "n": None, "x": None, "flag": None, "at": None},
        ]
        write_parquet(tmp_path / "t", schema, rows)
        write_csv(tmp_path / "t.csv", schema.names, rows)
        back = pq.read_table(tmp_path / "t")
        assert back.schema.equals(schema)
        assert back.to_pylist() == rows
        csv_lines = (tmp_path / "t.csv").read_text(encoding="utf-8").splitlines()
        assert csv_lines == [
            "member_id,n,x,flag,at",
            "a,1,2.5,true,2026-01-31T12:00:00.250000Z",
            "b,,,,",
        ]
        write_parquet(tmp_path / "t", schema, rows[:1])  # a second run replaces the file
        assert pq.read_table(tmp_path / "t").num_rows == 1
