"""Inline SVG charts, drawn by hand so that report.html needs nothing but a browser.

Two shapes: :func:`line_chart` (one line per member over time) and :func:`timeline` (one
lane per member, a coloured bar per episode). Times are unix seconds (UTC); callers
downsample long series first (:mod:`grstats.spark.report.series`).
"""

from __future__ import annotations

import datetime as dt
import html
import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

#: Line colours, one per member (colour-blind safe, Okabe-Ito plus two).
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#D55E00",
    "#56B4E9",
    "#000000",
    "#F0E442",
    "#999999",
)
#: MEMBER_STATE colours on the timeline.
STATE_COLOURS = {
    "ONLINE": "#3a9d5d",
    "RECOVERING": "#e0b000",
    "UNREACHABLE": "#d7301f",
    "ERROR": "#7a0177",
    "OFFLINE": "#9e9e9e",
}
_OTHER = "#444444"
_TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
               43200, 86400, 172800, 604800)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Frame:
    """The drawing area: ``width`` x ``height`` pixels with margins for the axes."""

    width: int = 960
    height: int = 220
    left: int = 64
    right: int = 12
    top: int = 12
    bottom: int = 26

    @property
    def inner_width(self) -> int:
        """Pixels across the plot area."""
        return self.width - self.left - self.right

    @property
    def inner_height(self) -> int:
        """Pixels down the plot area."""
        return self.height - self.top - self.bottom


def _time_ticks(start: float, end: float, wanted: int = 8) -> list[float]:
    span = max(end - start, 1.0)
    step = next((s for s in _TIME_STEPS if span / s <= wanted), _TIME_STEPS[-1])
    first = math.ceil(start / step) * step
    return [first + k * step for k in range(int((end - first) // step) + 1)]


def _time_label(seconds: float, span: float) -> str:
    moment = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
    if span <= 600:
        return moment.strftime("%H:%M:%S")
    if span <= 2 * 86400:
        return moment.strftime("%H:%M")
    return moment.strftime("%m-%d %H:%M")


def _nice_ticks(top: float, wanted: int = 4) -> list[float]:
    if top <= 0:
        return [0.0]
    raw = top / wanted
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [k * step for k in range(int(top // step) + 2) if k * step <= top * 1.0001 + step]


def _number(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _x(frame: Frame, start: float, end: float, seconds: float) -> float:
    return frame.left + (seconds - start) / max(end - start, 1e-9) * frame.inner_width


def _axes(frame: Frame, start: float, end: float) -> list[str]:
    parts = [
        (
            f'<rect x="{frame.left}" y="{frame.top}" width="{frame.inner_width}" '
            f'height="{frame.inner_height}" fill="#fafafa" stroke="#ccc"/>'
        )
    ]
    bottom = frame.top + frame.inner_height
    for tick in _time_ticks(start, end):
        x = _x(frame, start, end, tick)
        parts.append(
            f'<line x1="{x:.1f}" y1="{frame.top}" x2="{x:.1f}" y2="{bottom}" stroke="#e4e4e4"/>'
            f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">'
            f"{_time_label(tick, end - start)}</text>"
        )
    return parts


def line_chart(
    title: str,
    series: Mapping[str, Sequence[tuple[float, float]]],
    start: float,
    end: float,
    frame: Frame | None = None,
) -> str:
    """Return an ``<svg>`` with one line per series (label -> (unix seconds, value) points).

    Points more than two median steps apart are not joined, so gaps in the data show.
    """
    frame = frame or Frame()
    top = max((value for points in series.values() for _, value in points), default=0.0)
    ticks = _nice_ticks(top)
    y_top = max(ticks[-1], top, 1e-9)
    bottom = frame.top + frame.inner_height
    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {frame.width} {frame.height}" '
            f'role="img" aria-label="{html.escape(title)}" class="chart">'
        ),
        *_axes(frame, start, end),
    ]
    for tick in ticks:
        y = bottom - tick / y_top * frame.inner_height
        parts.append(
            f'<line x1="{frame.left}" y1="{y:.1f}" x2="{frame.left + frame.inner_width}" '
            f'y2="{y:.1f}" stroke="#e4e4e4"/><text x="{frame.left - 6}" y="{y + 4:.1f}" '
            f'text-anchor="end">{_number(tick)}</text>'
        )
    for position, (label, points) in enumerate(series.items()):
        colour = PALETTE[position % len(PALETTE)]
        for run in _runs(points):
            coords = " ".join(
                f"{_x(frame, start, end, t):.1f},{bottom - v / y_top * frame.inner_height:.1f}"
                for t, v in run
            )
            if len(run) == 1:
                cx, cy = coords.split(",")
                parts.append(f'<circle cx="{cx}" cy="{cy}" r="1.5" fill="{colour}"/>')
            else:
                parts.append(
                    f'<polyline fill="none" stroke="{colour}" stroke-width="1.2" '
                    f'points="{coords}"><title>{html.escape(label)}</title></polyline>'
                )
    parts.append("</svg>")
    return "".join(parts)


def _runs(points: Sequence[tuple[float, float]]) -> list[list[tuple[float, float]]]:
    """Split ``points`` (sorted by time) where the step is more than twice the median step."""
    if len(points) < 3:
        return [list(points)] if points else []
    steps = sorted(b[0] - a[0] for a, b in itertools.pairwise(points))
    limit = 2 * steps[len(steps) // 2]
    runs: list[list[tuple[float, float]]] = [[points[0]]]
    for before, point in itertools.pairwise(points):
        if point[0] - before[0] > limit:
            runs.append([])
        runs[-1].append(point)
    return runs


def legend(labels: Sequence[str]) -> str:
    """Return an HTML legend matching :func:`line_chart`'s colours, in the same order."""
    items = "".join(
        f'<span class="key"><span class="swatch" style="background:'
        f'{PALETTE[i % len(PALETTE)]}"></span>{html.escape(label)}</span>'
        for i, label in enumerate(labels)
    )
    return f'<div class="legend">{items}</div>'


def timeline(
    lanes: Sequence[tuple[str, Sequence[tuple[float, float, str]]]],
    start: float,
    end: float,
    marks: Mapping[str, Sequence[tuple[float, float]]] | None = None,
) -> str:
    """Return an ``<svg>`` with one lane per member: a bar per (start, end, state) episode.

    ``marks`` (label -> (start, end) spans) are drawn as a black band under the lane: the
    times the member's agent was not heard.
    """
    lane_height, gap, label_width = 18, 8, 170
    frame = Frame(
        height=12 + len(lanes) * (lane_height + gap) + 26, left=label_width, top=12, bottom=26
    )
    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {frame.width} {frame.height}" '
            'role="img" aria-label="member states over time" class="chart">'
        ),
        *_axes(frame, start, end),
    ]
    for row, (label, episodes) in enumerate(lanes):
        y = frame.top + 4 + row * (lane_height + gap)
        parts.append(
            f'<text x="{label_width - 6}" y="{y + 13}" text-anchor="end">'
            f"{html.escape(label)}</text>"
        )
        for begin, finish, state in episodes:
            x0 = _x(frame, start, end, max(begin, start))
            x1 = _x(frame, start, end, min(max(finish, begin), end))
            colour = STATE_COLOURS.get(state, _OTHER)
            parts.append(
                f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 0.8):.1f}" '
                f'height="{lane_height - 5}" fill="{colour}"><title>{html.escape(state)} '
                f"{_stamp(begin)} to {_stamp(finish)}</title></rect>"
            )
        for begin, finish in (marks or {}).get(label, ()):
            x0 = _x(frame, start, end, max(begin, start))
            x1 = _x(frame, start, end, min(max(finish, begin), end))
            parts.append(
                f'<rect x="{x0:.1f}" y="{y + lane_height - 4}" width="{max(x1 - x0, 0.8):.1f}" '
                f'height="3" fill="#000"><title>not connected {_stamp(begin)} to '
                f"{_stamp(finish)}</title></rect>"
            )
    parts.append("</svg>")
    return "".join(parts)


def _stamp(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
