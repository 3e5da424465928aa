"""report.html from hand-made PageData: self-contained, readable times, charts wired to members."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from typing import Any

import pytest

from grstats.spark.report import svg
from grstats.spark.report.fleet import render_fleet
from grstats.spark.report.page import PageData, human_time, human_times, render
from grstats.spark.rollup import STATES

T0 = dt.datetime(2026, 11, 28, 5, 49, 40, 123456, tzinfo=dt.UTC)
_NUMBERS = [
    "applied_per_s",
    "proposed_per_s",
    "checked_per_s",
    "conflict_rate",
    "rollback_ratio",
    "conflicts",
    "rollback",
    "cert_queue_p50",
    "cert_queue_p95",
    "cert_queue_max",
    "applier_queue_p50",
    "applier_queue_p95",
    "applier_queue_max",
    "rows_validating_mean",
    "rows_validating_max",
    "rows_validating_slope_per_h",
    "lag_seconds_p50",
    "lag_seconds_p95",
    "lag_seconds_p99",
    "lag_seconds_max",
    "gtids_ahead_p50",
    "gtids_ahead_max",
    "not_connected_s",
    "throttling_s",
    "unreachable_episodes",
    "not_connected_episodes",
]


def _figures(scope: str, member: str | None) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(_NUMBERS, 1.0)
    row |= {f"{state.lower()}_s": 1.0 for state in STATES}
    host = f"db{member[-1]}" if member else None
    return row | {"scope": scope, "member_id": member, "member_host": host, "member_port": 3306}


def _page(members: int = 3, points: int = 3, threshold: float | None = 25000.0) -> PageData:
    last = T0 + dt.timedelta(seconds=points - 1)
    ids = [f"0000000{k}-0000-0000-0000-00000000000{k}" for k in range(1, members + 1)]
    figures = [_figures("group", None), *(_figures("member", m) for m in ids)]
    for row in figures:
        row |= {"first_at": T0, "last_at": last}
    series = [
        {
            "member_id": m,
            "bucket_start": T0 + dt.timedelta(seconds=k),
            "applier_queue_max": k % 5 * j,
            "lag_seconds_max": 0.5 * j,
        }
        for j, m in enumerate(ids)
        for k in range(points)
    ]
    return PageData(
        title="Group Replication report",
        range_text=f"from 2026-11-28T05:49:40Z to the last snapshot: {points} snapshots from "
        "2026-11-28T05:49:40.123456Z to 2026-11-28T05:49:42.5+00:00",
        settings_text="flow-control threshold 25000",
        figures=figures,
        episodes=[],
        worst=[],
        series=series,
        bucket_s=1,
        files=["figures"],
        flow_control_threshold=threshold,
    )


def _charts(page: str) -> list[dict[str, Any]]:
    found = re.findall(r"<metadata>(.*?)</metadata>", page, flags=re.DOTALL)
    return [json.loads(html.unescape(text)) for text in found]


class TestSelfContained:
    def test_the_script_is_inlined_once_and_nothing_is_fetched(self) -> None:
        """One inline script; no script, style, image or font comes from a URL."""
        page = render(_page())
        assert page.count("<script>") == 1
        assert svg.SCRIPT in page
        assert "<script src" not in page
        assert "<link" not in page
        assert "url(http" not in page
        assert set(re.findall(r"https?://[^\s\"'<]+", page)) == {"http://www.w3.org/2000/svg"}

    def test_a_fleet_page_has_one_script_and_unique_ids(self) -> None:
        """Each group's charts get their own clip paths; the script comes once, at the end."""
        groups: list[dict[str, Any]] = [
            {
                "group_label": label,
                "group_name": "",
                "dir": f"groups/{label}",
                "group": {
                    "lag_seconds_max": 1.0,
                    "throttling_s": 0.0,
                    "unreachable_episodes": 0,
                    "snapshots": 3,
                },
                "members": [{}],
                "not_online_s": 0.0,
            }
            for label in ("east", "west")
        ]
        page = render_fleet(
            "Fleet", "from 2026-11-28T05:49:40Z", groups, {"east": _page(), "west": _page()}
        )
        ids = re.findall(r'id="([^"]+)"', page)
        assert len(ids) == 6
        assert len(set(ids)) == 6
        assert page.count("<svg") == 6
        assert page.count("<script>") == 1
        assert page.rstrip().endswith("</script></body></html>")
        assert "from 2026-11-28 05:49:40 UTC" in page


class TestTimes:
    def test_the_header_shows_times_as_people_read_them(self) -> None:
        """ISO 8601 in the range text becomes date, time and zone."""
        page = render(_page())
        header = page[page.index("<h1>") : page.index("<h2>")]
        assert "from 2026-11-28 05:49:40 UTC to the last snapshot" in header
        assert "from 2026-11-28 05:49:40 UTC to 2026-11-28 05:49:42 UTC" in header
        assert "T05:49" not in header

    @pytest.mark.parametrize(
        "moment",
        [
            T0,
            T0.replace(tzinfo=None),
            T0.astimezone(dt.timezone(dt.timedelta(hours=2))),
            "2026-11-28T05:49:40.123456Z",
            "2026-11-28T07:49:40+02:00",
        ],
    )
    def test_human_time_is_utc_with_its_zone(self, moment: dt.datetime | str) -> None:
        """Aware, naive (UTC) and ISO text all read the same, to the second."""
        assert human_time(moment) == "2026-11-28 05:49:40 UTC"

    def test_text_without_times_is_left_alone(self) -> None:
        """Only ISO 8601 times with a zone are rewritten."""
        text = "threshold 25000; 2026-11-28 and 05:49 stay"
        assert human_times(text) == text


class TestCharts:
    def test_a_member_has_one_colour_in_every_chart_and_legend(self) -> None:
        """Queue and lag charts give each member the same colour, nine members nine colours."""
        page = render(_page(members=9))
        queue, lag, _ = _charts(page)
        colours = {m["n"]: m["c"] for m in queue["m"]}
        assert colours == {m["n"]: m["c"] for m in lag["m"]}
        assert len(set(colours.values())) == 9
        for label, colour in colours.items():
            assert f'background:{colour}"></span>{html.escape(label)}' in page

    def test_the_threshold_comes_from_page_data(self) -> None:
        """The queue chart shows the flow-control threshold given, and none when not given."""
        near = _page(points=4, threshold=8.0)
        assert 'class="threshold"' in render(near)
        assert "flow-control threshold 8<" in render(near)
        assert "threshold-label" not in render(_page(threshold=None))

    def test_thousands_of_points_per_member_all_reach_the_page(self) -> None:
        """Nine members of 3,000 points each: every point is drawn and carried for hover."""
        page = render(_page(members=9, points=3000))
        queue, lag, states = _charts(page)
        assert [len(m["t"]) for m in queue["m"]] == [3000] * 9
        assert [len(m["v"]) for m in lag["m"]] == [3000] * 9
        assert states["kind"] == "lanes"
        assert page.count("<polyline") == 18
