"""The report's SVG charts: lines inside the plot, axes with units, threshold, colours, legend."""

from __future__ import annotations

import datetime as dt
import json
import re
import xml.etree.ElementTree as ET

import pytest

from grstats.spark.report import svg

NS = "{http://www.w3.org/2000/svg}"
T0 = dt.datetime(2026, 11, 28, 5, 49, 40, tzinfo=dt.UTC).timestamp()
FRAME = svg.Frame()
PLOT = (FRAME.left, FRAME.top, FRAME.left + FRAME.inner_width, FRAME.top + FRAME.inner_height)


def _parse(drawn: str) -> ET.Element:
    return ET.fromstring(drawn)  # noqa: S314 (an SVG this module's test just drew)


def _vertices(root: ET.Element) -> list[tuple[float, float]]:
    """Every point of every polyline, and every dot of the dotted paths."""
    found = [
        (float(x), float(y))
        for line in root.iter(f"{NS}polyline")
        for x, y in (pair.split(",") for pair in line.get("points", "").split())
    ]
    for path in root.iter(f"{NS}path"):
        found += [
            (float(x), float(y)) for x, y in re.findall(r"M([\d.]+) ([\d.]+)", path.get("d", ""))
        ]
    return found


def _inside(point: tuple[float, float]) -> bool:
    x, y = point
    return PLOT[0] <= x <= PLOT[2] and PLOT[1] <= y <= PLOT[3]


class TestLinesInsideThePlot:
    @pytest.mark.parametrize("count", [2, 3, 100, 3000])
    def test_every_point_is_drawn_inside_the_plot_area(self, count: int) -> None:
        """Minute buckets that start before the range and end after it still land inside."""
        bucket = 60.0
        start, end = T0, T0 + bucket * (count - 1) + 20
        origin = start - 40  # the first bucket starts at the range's minute, before it
        points = [(origin + k * bucket, float(k % 13)) for k in range(count)]
        options = svg.LineOptions(bucket_s=bucket)
        root = _parse(
            svg.line_chart("queue", {"a": points, "b": points[::-1]}, start, end, options)
        )
        drawn = _vertices(root)
        assert len(drawn) >= 2 * count
        assert all(_inside(p) for p in drawn)

    def test_the_lines_span_the_plot_from_edge_to_edge(self) -> None:
        """With a point in the first and last bucket the line reaches both sides of the plot."""
        points = [(T0 + k * 10.0, 1.0) for k in range(31)]
        root = _parse(svg.line_chart("lag", {"a": points}, T0, T0 + 300))
        xs = [x for x, _ in _vertices(root)]
        assert min(xs) == pytest.approx(PLOT[0], abs=0.1)
        assert max(xs) == pytest.approx(PLOT[2], abs=0.1)

    def test_a_series_at_zero_is_drawn_above_the_bottom_edge(self) -> None:
        """Zero is inset from the x-axis, so a member with an empty queue still shows."""
        points = [(T0 + k, 0.0) for k in range(10)]
        root = _parse(svg.line_chart("queue", {"idle": points}, T0, T0 + 9))
        ys = {y for _, y in _vertices(root)}
        assert len(ys) == 1
        assert PLOT[3] - 8 <= ys.pop() <= PLOT[3] - 3

    def test_few_points_get_dots_and_many_do_not(self) -> None:
        """Two or three points show where they are; a dense series is a line only."""
        few = _parse(svg.line_chart("q", {"a": [(T0, 1.0), (T0 + 60, 2.0)]}, T0, T0 + 60))
        many = _parse(svg.line_chart("q", {"a": [(T0 + k, 1.0) for k in range(500)]}, T0, T0 + 499))
        assert len(list(few.iter(f"{NS}path"))) == 1
        assert not list(many.iter(f"{NS}path"))
        assert len(next(many.iter(f"{NS}polyline")).get("points", "").split()) == 500


class TestAxes:
    def test_the_last_time_label_is_not_cut(self) -> None:
        """A label near the right edge is anchored at its end, inside the drawing."""
        root = _parse(svg.line_chart("q", {"a": [(T0, 1.0), (T0 + 600, 1.0)]}, T0 - 0.5, T0 + 600))
        labels = root.find(f"{NS}g[@class='xaxis']")
        assert labels is not None
        texts = list(labels.iter(f"{NS}text"))
        last = max(texts, key=lambda t: float(t.get("x", 0)))
        x, width = float(last.get("x", 0)), len(last.text or "") * 6.4
        anchor = last.get("text-anchor")
        right = x if anchor == "end" else x + width / 2 if anchor == "middle" else x + width
        assert right <= FRAME.width

    def test_the_y_axis_names_its_unit_and_the_time_axis_its_zone(self) -> None:
        """The y title is the unit given; the x caption says UTC and the date."""
        options = svg.LineOptions(unit="transactions")
        root = _parse(svg.line_chart("q", {"a": [(T0, 1.0), (T0 + 9, 3.0)]}, T0, T0 + 9, options))
        texts = {t.get("class"): t.text for t in root.iter(f"{NS}text") if t.get("class")}
        assert texts["ytitle"] == "transactions"
        assert texts["xcap"] == "time, UTC: 2026-11-28"

    def test_counts_get_whole_number_ticks(self) -> None:
        """An applier queue that never passed 1 is not labelled 0.25, 0.5 ..."""
        options = svg.LineOptions(whole=True)
        root = _parse(svg.line_chart("q", {"a": [(T0, 0.0), (T0 + 9, 1.0)]}, T0, T0 + 9, options))
        ticks = [t.text for t in root.iter(f"{NS}text") if t.get("text-anchor") == "end"]
        assert "0.5" not in ticks
        assert "1" in ticks


class TestThreshold:
    def test_the_threshold_is_a_labelled_line_at_its_value(self) -> None:
        """The line sits where a point of the threshold's value would, with its label."""
        limit = svg.Threshold(25000, "flow-control threshold")
        points = [(T0, 0.0), (T0 + 30, 25000.0), (T0 + 60, 30000.0)]
        options = svg.LineOptions(threshold=limit)
        root = _parse(svg.line_chart("q", {"a": points}, T0, T0 + 60, options))
        line = next(e for e in root.iter(f"{NS}line") if e.get("class") == "threshold")
        polyline = next(root.iter(f"{NS}polyline")).get("points", "").split()
        on_threshold = [float(v) for v in polyline[1].split(",")]
        assert float(line.get("y1", 0)) == pytest.approx(on_threshold[1], abs=0.11)
        assert float(line.get("y1", 0)) == float(line.get("y2", 1))
        label = next(e for e in root.iter(f"{NS}text") if e.get("class") == "threshold-label")
        assert label.text == "flow-control threshold 25,000"

    def test_a_threshold_far_above_the_data_is_named_not_drawn(self) -> None:
        """A queue of 10 is not squashed flat to show a threshold of 25,000."""
        options = svg.LineOptions(threshold=svg.Threshold(25000, "flow-control threshold"))
        root = _parse(svg.line_chart("q", {"a": [(T0, 0.0), (T0 + 9, 10.0)]}, T0, T0 + 9, options))
        assert not [e for e in root.iter(f"{NS}line") if e.get("class") == "threshold"]
        label = next(e for e in root.iter(f"{NS}text") if e.get("class") == "threshold-label")
        assert "above this scale" in (label.text or "")


class TestColours:
    def test_nine_members_get_nine_distinct_colours(self) -> None:
        """The palette has a colour for each of nine members, none repeated."""
        labels = [f"db{k}:3306" for k in range(9, 0, -1)]
        colours = svg.member_colours(labels)
        assert len(set(colours.values())) == 9
        assert set(colours.values()) == set(svg.PALETTE)

    def test_a_member_keeps_its_colour_when_others_have_no_points(self) -> None:
        """Colours come from the member, not from its place among the charted series."""
        colours = svg.member_colours(["a", "b", "c"])
        options = svg.LineOptions(colours=colours)
        only_c = _parse(svg.line_chart("q", {"c": [(T0, 1.0), (T0 + 9, 2.0)]}, T0, T0 + 9, options))
        assert next(only_c.iter(f"{NS}polyline")).get("stroke") == colours["c"]
        assert f"background:{colours['c']}" in svg.legend(["c"], colours)
        assert colours == svg.member_colours(["c", "b", "a"])

    def test_the_chart_carries_its_values_for_the_hover_script(self) -> None:
        """Each series' bucket times, values, name and colour are in the chart's metadata."""
        colours = svg.member_colours(["db1 <x>"])
        points = [(T0 - 40, 3.0), (T0 + 20, 5.5)]
        options = svg.LineOptions(colours=colours, bucket_s=60)
        root = _parse(svg.line_chart("q", {"db1 <x>": points}, T0, T0 + 60, options))
        meta = root.find(f"{NS}metadata")
        assert meta is not None
        data = json.loads(meta.text or "")
        assert data["start"] == T0
        assert data["b"] == 60
        assert data["m"] == [
            {"n": "db1 <x>", "c": colours["db1 <x>"], "t": [-40, 20], "v": [3, 5.5]}
        ]
