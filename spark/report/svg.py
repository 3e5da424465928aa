"""Inline SVG charts, drawn by hand so that report.html needs nothing but a browser.

Two shapes: :func:`line_chart` (one line per member over time) and :func:`timeline` (one
lane per member, a coloured bar per episode). Times are unix seconds (UTC); callers
downsample long series first (:mod:`grstats.spark.report.series`).

Every chart is complete without a script. :data:`SCRIPT` only adds hover (the time and each
member's value under the pointer) and zoom (drag across a chart to show that time range on
every chart of its section; double-click or the button shows the whole range again). It is a
few KB of hand-written JavaScript rather than a charting library because the page must open
from a file with no network (no CDN, nothing to install), stay small enough to mail, and keep
these SVGs the one drawing of the data: the script moves what is drawn here (a transform on
each chart's plot) and reads the values each chart carries in its ``<metadata>``.
"""

from __future__ import annotations

import datetime as dt
import html
import itertools
import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

#: Line colours, one per member: Paul Tol's "muted" qualitative scheme, in his order
#: (https://personal.sron.nl/~pault/, "Colour schemes and templates", SRON/EPS/TN/09-002).
#: Its nine colours stay distinct for the common colour-vision deficiencies and on white.
PALETTE = (
    "#CC6677",  # rose
    "#332288",  # indigo
    "#DDCC77",  # sand
    "#117733",  # green
    "#88CCEE",  # cyan
    "#882255",  # wine
    "#44AA99",  # teal
    "#999933",  # olive
    "#AA4499",  # purple
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
#: Time-axis steps; the script's copy (STEPS) must match.
_TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
               43200, 86400, 172800, 604800, 1209600, 2592000, 7776000, 31536000)  # fmt: skip
#: Pixels between a value of 0 (or the top tick) and the plot's edge, so a line there shows.
_INSET = 6
#: Width of one character of the 11 px chart font, near enough to keep labels inside.
_CHAR_PX = 6.4
#: A series with at most this many points also gets a dot per point.
_DOTS_UP_TO = 90


@dataclass(frozen=True, slots=True)
class Frame:
    """The drawing area: ``width`` x ``height`` pixels with margins for the axes."""

    width: int = 960
    height: int = 240
    left: int = 72
    right: int = 16
    top: int = 14
    bottom: int = 40

    @property
    def inner_width(self) -> int:
        """Pixels across the plot area."""
        return self.width - self.left - self.right

    @property
    def inner_height(self) -> int:
        """Pixels down the plot area."""
        return self.height - self.top - self.bottom


@dataclass(frozen=True, slots=True)
class Threshold:
    """A horizontal line across a line chart: ``value`` in the chart's unit, named ``label``."""

    value: float
    label: str


@dataclass(frozen=True, slots=True)
class LineOptions:
    """How :func:`line_chart` draws.

    Attributes:
        unit: the y-axis title, e.g. ``transactions``.
        suffix: after each value on hover, e.g. `` s``.
        digits: decimals of a value on hover.
        whole: the values are counts: y ticks are whole numbers.
        colours: each series' colour, by label; :func:`member_colours` for stable colours.
        bucket_s: each point is a bucket starting at its time: drawn at the bucket's middle.
        threshold: a labelled horizontal line (off the scale: a note instead).
        chart_id: unique on the page (it names the chart's clip path).
        frame: the drawing area.
    """

    unit: str = ""
    suffix: str = ""
    digits: int = 3
    whole: bool = False
    colours: Mapping[str, str] | None = None
    bucket_s: float = 0.0
    threshold: Threshold | None = None
    chart_id: str = "chart"
    frame: Frame = field(default_factory=Frame)


def member_colours(labels: Sequence[str]) -> dict[str, str]:
    """Each label's colour from :data:`PALETTE`, by its place in sorted order (stable per member).

    More labels than colours start the palette again.
    """
    return {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(sorted(set(labels)))}


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


def _caption(start: float, end: float) -> str:
    first, last = (f"{dt.datetime.fromtimestamp(s, tz=dt.UTC):%Y-%m-%d}" for s in (start, end))
    return f"time, UTC: {first}" if first == last else f"time, UTC: {first} to {last}"


def _nice_ticks(top: float, wanted: int = 4, whole: bool = False) -> list[float]:
    """Ticks from 0 to at least ``top``, at a 1, 2, 2.5 or 5 step (whole numbers if ``whole``)."""
    top = top if top > 0 else 1.0
    raw = top / wanted
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    if whole:
        step = max(1.0, round(step))
    count = math.ceil(top / step - 1e-9)
    return [k * step for k in range(count + 1)]


def _number(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _clamp(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


def _x(frame: Frame, start: float, end: float, seconds: float) -> float:
    """The x of ``seconds``; times outside [start, end] are drawn at the edge."""
    seconds = _clamp(seconds, start, end)
    return frame.left + (seconds - start) / max(end - start, 1e-9) * frame.inner_width


def _svg_open(frame: Frame, label: str, meta: dict[str, object], chart_id: str) -> list[str]:
    """The ``<svg>`` tag, its data for the script, and the clip path of its plot area."""
    data = json.dumps(meta, separators=(",", ":"), allow_nan=False)
    return [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {frame.width} {frame.height}" '
            f'role="img" aria-label="{html.escape(label)}" class="chart">'
        ),
        f"<metadata>{html.escape(data, quote=False)}</metadata>",
        (
            f'<defs><clipPath id="{html.escape(chart_id)}-clip"><rect x="{frame.left}" '
            f'y="{frame.top}" width="{frame.inner_width}" height="{frame.inner_height}"/>'
            "</clipPath></defs>"
        ),
        (
            f'<rect x="{frame.left}" y="{frame.top}" width="{frame.inner_width}" '
            f'height="{frame.inner_height}" fill="#fff" stroke="#bbb"/>'
        ),
    ]


def _geometry(frame: Frame, start: float, end: float) -> dict[str, object]:
    return {
        "W": frame.width,
        "H": frame.height,
        "l": frame.left,
        "t": frame.top,
        "w": frame.inner_width,
        "h": frame.inner_height,
        "start": start,
        "end": end,
    }


def _axes(frame: Frame, start: float, end: float) -> list[str]:
    """The time axis: grid lines and labels (the script redraws them on zoom), and its title."""
    parts = ['<g class="xaxis">']
    bottom = frame.top + frame.inner_height
    span = end - start
    for tick in _time_ticks(start, end):
        x = _x(frame, start, end, tick)
        text = _time_label(tick, span)
        half = len(text) * _CHAR_PX / 2
        anchor = "middle"
        if x + half > frame.width - 2:
            anchor = "end"
        elif x - half < 2:
            anchor = "start"
        parts.append(
            f'<line x1="{x:.1f}" y1="{frame.top}" x2="{x:.1f}" y2="{bottom}" stroke="#e8e8e8"/>'
            f'<text x="{x:.1f}" y="{bottom + 15}" text-anchor="{anchor}">{text}</text>'
        )
    parts.append("</g>")
    parts.append(
        f'<text class="xcap" x="{frame.left + frame.inner_width / 2:.1f}" '
        f'y="{frame.height - 5}" text-anchor="middle" fill="#666">{_caption(start, end)}</text>'
    )
    return parts


def _compact(value: float) -> float | int:
    rounded = round(value, 6)
    return int(rounded) if rounded == int(rounded) else rounded


def line_chart(
    title: str,
    series: Mapping[str, Sequence[tuple[float, float]]],
    start: float,
    end: float,
    options: LineOptions | None = None,
) -> str:
    """Return an ``<svg>`` with one line per series (label -> (unix seconds, value) points).

    Every point is drawn inside the plot area, a value of 0 a little above its bottom edge.
    Points more than two median steps apart are not joined, so gaps in the data show; sparse
    series also get a dot per point.
    """
    opts = options or LineOptions()
    frame = opts.frame
    end = max(end, start + 1)
    colours = opts.colours or member_colours(list(series))
    data_top = max((value for points in series.values() for _, value in points), default=0.0)
    limit = opts.threshold
    drawn_limit = limit is not None and limit.value <= 4 * max(data_top, 0.0) and limit.value > 0
    ticks = _nice_ticks(
        max(data_top, limit.value if limit and drawn_limit else 0.0), whole=opts.whole
    )
    y_top = ticks[-1]
    bottom = frame.top + frame.inner_height
    span_px = frame.inner_height - 2 * _INSET

    def y_of(value: float) -> float:
        return _clamp(bottom - _INSET - value / y_top * span_px, frame.top, bottom)

    def x_of(seconds: float) -> float:
        return _x(frame, start, end, seconds + opts.bucket_s / 2)

    meta: dict[str, object] = {
        **_geometry(frame, start, end),
        "kind": "line",
        "b": opts.bucket_s,
        "y0": bottom - _INSET,
        "ky": span_px / y_top,
        "u": opts.suffix,
        "dg": opts.digits,
        "m": [
            {
                "n": label,
                "c": colours.get(label, _OTHER),
                "t": [_compact(t - start) for t, _ in points],
                "v": [_compact(v) for _, v in points],
            }
            for label, points in series.items()
        ],
    }
    parts = [*_svg_open(frame, title, meta, opts.chart_id)]
    for tick in ticks:
        y = y_of(tick)
        parts.append(
            f'<line x1="{frame.left}" y1="{y:.1f}" x2="{frame.left + frame.inner_width}" '
            f'y2="{y:.1f}" stroke="#e8e8e8"/><text x="{frame.left - 6}" y="{y + 4:.1f}" '
            f'text-anchor="end">{_number(tick)}</text>'
        )
    middle = frame.top + frame.inner_height / 2
    parts.append(
        f'<text class="ytitle" transform="rotate(-90)" x="{-middle:.1f}" y="14" '
        f'text-anchor="middle" fill="#666">{html.escape(opts.unit)}</text>'
    )
    parts += _axes(frame, start, end)
    parts.append(f'<g clip-path="url(#{html.escape(opts.chart_id)}-clip)"><g class="plot">')
    if limit is not None and drawn_limit:
        y = y_of(limit.value)
        parts.append(
            f'<line class="threshold" x1="{frame.left}" y1="{y:.1f}" '
            f'x2="{frame.left + frame.inner_width}" y2="{y:.1f}" stroke="#000" '
            'stroke-width="1.2" stroke-dasharray="6 4" vector-effect="non-scaling-stroke"/>'
        )
    for index, (label, points) in enumerate(series.items()):
        runs = [[(x_of(t), y_of(v)) for t, v in run] for run in _runs(points)]
        colour = colours.get(label, _OTHER)
        parts += _line(index, label, colour, runs, dotted=len(points) <= _DOTS_UP_TO)
    parts.append("</g></g>")
    if limit is not None:
        parts.append(_threshold_label(frame, limit, y_of(limit.value) if drawn_limit else None))
    parts.append("</svg>")
    return "".join(parts)


def _line(
    index: int, label: str, colour: str, runs: list[list[tuple[float, float]]], dotted: bool
) -> list[str]:
    """One series: a polyline per run of (x, y) and, if ``dotted`` or alone, a dot per point."""
    name = html.escape(label)
    parts, dots = [], []
    for run in runs:
        if len(run) > 1:
            joined = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
            parts.append(
                f'<polyline data-m="{index}" fill="none" stroke="{colour}" '
                'stroke-width="1.6" stroke-linejoin="round" '
                f'vector-effect="non-scaling-stroke" points="{joined}">'
                f"<title>{name}</title></polyline>"
            )
        if len(run) == 1 or dotted:
            dots += run
    if dots:
        # Zero-length segments with round caps: dots that stay round when zoomed.
        path = "".join(f"M{x:.1f} {y:.1f}h0" for x, y in dots)
        parts.append(
            f'<path class="dots" data-m="{index}" d="{path}" stroke="{colour}" '
            'stroke-width="5" stroke-linecap="round" fill="none" '
            f'vector-effect="non-scaling-stroke"><title>{name}</title></path>'
        )
    return parts


def _threshold_label(frame: Frame, limit: Threshold, y: float | None) -> str:
    """The threshold's label above its line, or a note that it is above the scale."""
    right = frame.left + frame.inner_width - 6
    text = f"{limit.label} {_number(limit.value)}"
    if y is None:
        text += ": above this scale"
        y = frame.top + 8
    return (
        f'<text class="threshold-label" x="{right}" y="{max(y - 5, frame.top + 11):.1f}" '
        f'text-anchor="end" fill="#000" stroke="#fff" stroke-width="3" '
        f'paint-order="stroke">{html.escape(text)}</text>'
    )


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


def legend(labels: Sequence[str], colours: Mapping[str, str] | None = None) -> str:
    """Return an HTML legend matching :func:`line_chart`'s colours, in the same order.

    Each key's ``data-m`` is its line's index in the chart, for the script's highlighting.
    """
    colours = colours or member_colours(labels)
    items = "".join(
        f'<span class="key" data-m="{i}"><span class="line" style="background:'
        f'{colours.get(label, _OTHER)}"></span>{html.escape(label)}</span>'
        for i, label in enumerate(labels)
    )
    return f'<div class="legend lines">{items}</div>'


def _short(label: str, chars: int) -> str:
    """``label`` in at most ``chars`` characters: its middle gives way, its end (the uuid) stays."""
    if len(label) <= chars:
        return label
    tail = min(16, chars // 2)
    return label[: chars - 1 - tail] + "\u2026" + label[-tail:]


def timeline(
    lanes: Sequence[tuple[str, Sequence[tuple[float, float, str]]]],
    start: float,
    end: float,
    marks: Mapping[str, Sequence[tuple[float, float]]] | None = None,
    chart_id: str = "timeline",
) -> str:
    """Return an ``<svg>`` with one lane per member: a bar per (start, end, state) episode.

    ``marks`` (label -> (start, end) spans) are drawn as a black band under the lane: the
    times the member was not connected (no live values of it).
    """
    end = max(end, start + 1)
    lane_height, gap = 18, 8
    chars = min(max((len(label) for label, _ in lanes), default=8), 36)
    label_width = max(90, round(chars * _CHAR_PX) + 14)
    frame = Frame(
        height=14 + len(lanes) * (lane_height + gap) + 40, left=label_width, top=14, bottom=40
    )
    parts = [
        *_svg_open(
            frame,
            "member states over time",
            {**_geometry(frame, start, end), "kind": "lanes"},
            chart_id,
        ),
        *_axes(frame, start, end),
    ]
    for row, (label, _) in enumerate(lanes):
        y = frame.top + 4 + row * (lane_height + gap)
        parts.append(
            f'<text x="{label_width - 6}" y="{y + 11}" text-anchor="end">'
            f"<title>{html.escape(label)}</title>{html.escape(_short(label, chars))}</text>"
        )
    parts.append(f'<g clip-path="url(#{html.escape(chart_id)}-clip)"><g class="plot">')
    for row, (label, episodes) in enumerate(lanes):
        y = frame.top + 4 + row * (lane_height + gap)
        for begin, finish, state in episodes:
            x0 = _x(frame, start, end, begin)
            x1 = _x(frame, start, end, max(finish, begin))
            colour = STATE_COLOURS.get(state, _OTHER)
            parts.append(
                f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 0.8):.1f}" '
                f'height="{lane_height - 5}" fill="{colour}"><title>{html.escape(label)}: '
                f"{html.escape(state)} {_stamp(begin)} to {_stamp(finish)}</title></rect>"
            )
        for begin, finish in (marks or {}).get(label, ()):
            x0 = _x(frame, start, end, begin)
            x1 = _x(frame, start, end, max(finish, begin))
            parts.append(
                f'<rect x="{x0:.1f}" y="{y + lane_height - 4}" width="{max(x1 - x0, 0.8):.1f}" '
                f'height="3" fill="#000"><title>{html.escape(label)}: not connected '
                f"{_stamp(begin)} to {_stamp(finish)}</title></rect>"
            )
    parts.append("</g></g></svg>")
    return "".join(parts)


def _stamp(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


#: The page's one script: hover and zoom for every chart above (see the module docstring).
SCRIPT = """(function () {
"use strict";
var NS = "http://www.w3.org/2000/svg", charts = [], drag = null;
var STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
  43200, 86400, 172800, 604800, 1209600, 2592000, 7776000, 31536000];
var tip = document.createElement("div");
tip.className = "tip"; tip.hidden = true; document.body.appendChild(tip);
function el(name, attrs, parent) {
  var e = document.createElementNS(NS, name);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function html(name, text, parent) {
  var e = document.createElement(name);
  if (text) e.textContent = text;
  parent.appendChild(e);
  return e;
}
function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); }
function clamp(v, a, b) { return Math.min(Math.max(v, a), b); }
function iso(s) { return new Date(Math.round(s * 1000)).toISOString(); }
function when(s) { return iso(s).slice(0, 19).replace("T", " ") + " UTC"; }
function label(s, span) {
  var t = iso(s);
  if (span <= 600) return t.slice(11, 19);
  return span <= 172800 ? t.slice(11, 16) : t.slice(5, 10) + " " + t.slice(11, 16);
}
function axis(c) {
  var d = c.d, span = c.hi - c.lo, step = STEPS[STEPS.length - 1], i, t;
  for (i = STEPS.length - 1; i >= 0; i--) if (Math.max(span, 1) / STEPS[i] <= 8) step = STEPS[i];
  clear(c.axis);
  for (t = Math.ceil(c.lo / step) * step; t <= c.hi; t += step) {
    var x = c.x(t), s = label(t, span), half = s.length * 3.2, a = "middle";
    if (x + half > d.W - 2) a = "end"; else if (x - half < 2) a = "start";
    el("line", {x1: x, x2: x, y1: d.t, y2: d.t + d.h, stroke: "#e8e8e8"}, c.axis);
    el("text", {x: x, y: d.t + d.h + 15, "text-anchor": a}, c.axis).textContent = s;
  }
  var one = iso(c.lo).slice(0, 10), two = iso(c.hi).slice(0, 10);
  c.cap.textContent = "time, UTC: " + one + (one === two ? "" : " to " + two);
}
function zoom(c, lo, hi) {
  var d = c.d, full = d.end - d.start, k = full / (hi - lo);
  c.lo = lo; c.hi = hi;
  var shift = d.l - (d.l + (lo - d.start) / full * d.w) * k;
  if (lo <= d.start && hi >= d.end) c.plot.removeAttribute("transform");
  else c.plot.setAttribute("transform", "translate(" + shift + " 0) scale(" + k + " 1)");
  axis(c);
}
function zoomBox(box, lo, hi) {
  charts.forEach(function (c) {
    if (c.box === box) zoom(c, Math.max(lo, c.d.start), Math.min(hi, c.d.end));
  });
  var button = box.querySelector("button.reset");
  if (button) button.hidden = false;
}
function reset(box) {
  charts.forEach(function (c) { if (c.box === box) zoom(c, c.d.start, c.d.end); });
  var button = box.querySelector("button.reset");
  if (button) button.hidden = true;
}
function point(c, ev) {
  var r = c.svg.getBoundingClientRect();
  return [(ev.clientX - r.left) * c.d.W / r.width, (ev.clientY - r.top) * c.d.H / r.height];
}
function hide(c) { clear(c.over); tip.hidden = true; }
function near(ts, at, t) {
  var lo = 0, hi = ts.length - 1;
  if (hi < 0) return -1;
  while (hi - lo > 1) { var mid = (lo + hi) >> 1; if (at(ts[mid]) < t) lo = mid; else hi = mid; }
  return Math.abs(at(ts[lo]) - t) <= Math.abs(at(ts[hi]) - t) ? lo : hi;
}
function hover(c, ev) {
  var d = c.d, p = point(c, ev);
  if (d.kind !== "line" || p[0] < d.l || p[0] > d.l + d.w) return hide(c);
  var t = c.t(p[0]), best = null;
  var at = function (o) { return clamp(d.start + o + d.b / 2, d.start, d.end); };
  d.m.forEach(function (m) {
    var i = near(m.t, at, t);
    if (i < 0) return;
    if (best === null || Math.abs(at(m.t[i]) - t) < Math.abs(at(best) - t)) best = m.t[i];
  });
  if (best === null) return hide(c);
  var rows = [], x = c.x(at(best)), tol = Math.max(d.b / 2, 0.001);
  clear(c.over);
  el("line", {x1: x, x2: x, y1: d.t, y2: d.t + d.h, stroke: "#555", "stroke-dasharray": "3 3"},
    c.over);
  d.m.forEach(function (m) {
    var i = near(m.t, function (o) { return o; }, best);
    if (i < 0 || Math.abs(m.t[i] - best) > tol) return;
    var y = clamp(d.y0 - m.v[i] * d.ky, d.t, d.t + d.h);
    el("circle", {cx: x, cy: y, r: 3.5, fill: m.c, stroke: "#fff", "stroke-width": 1.5}, c.over);
    rows.push([m.v[i], m]);
  });
  rows.sort(function (a, b) { return b[0] - a[0]; });
  clear(tip);
  html("b", when(d.start + best), tip);
  if (d.b > 1) html("div", "largest value in the " + d.b + " s from then", tip).className = "muted";
  rows.forEach(function (r) {
    var line = html("div", "", tip), key = html("i", "", line);
    key.style.background = r[1].c;
    html("span", r[1].n + " ", line);
    var digits = {minimumFractionDigits: d.dg, maximumFractionDigits: d.dg};
    html("b", r[0].toLocaleString("en-US", digits) + d.u, line);
  });
  tip.hidden = false;
  var left = ev.clientX + 16, top = ev.clientY + 16;
  if (left + tip.offsetWidth > window.innerWidth - 4) left = ev.clientX - 16 - tip.offsetWidth;
  if (top + tip.offsetHeight > window.innerHeight - 4) top = ev.clientY - 16 - tip.offsetHeight;
  tip.style.left = Math.max(left, 4) + "px"; tip.style.top = Math.max(top, 4) + "px";
}
function setup(svg) {
  var d = JSON.parse(svg.querySelector("metadata").textContent);
  var c = {svg: svg, d: d, lo: d.start, hi: d.end, plot: svg.querySelector(".plot"),
    axis: svg.querySelector(".xaxis"), cap: svg.querySelector(".xcap"),
    box: svg.closest(".charts") || document.body};
  c.over = el("g", {"class": "over"}, svg);
  c.x = function (t) { return d.l + (t - c.lo) / (c.hi - c.lo) * d.w; };
  c.t = function (x) { return c.lo + (clamp(x, d.l, d.l + d.w) - d.l) / d.w * (c.hi - c.lo); };
  charts.push(c);
  svg.addEventListener("mousedown", function (ev) {
    var p = point(c, ev);
    if (ev.button !== 0 || p[0] < d.l || p[0] > d.l + d.w) return;
    drag = {c: c, x: p[0]};
    ev.preventDefault();
  });
  svg.addEventListener("mousemove", function (ev) { if (!drag) hover(c, ev); });
  svg.addEventListener("mouseleave", function () { if (!drag) hide(c); });
  svg.addEventListener("dblclick", function () { reset(c.box); });
}
document.addEventListener("mousemove", function (ev) {
  if (!drag) return;
  var c = drag.c, d = c.d, x = clamp(point(c, ev)[0], d.l, d.l + d.w);
  hide(c);
  el("rect", {x: Math.min(x, drag.x), y: d.t, width: Math.abs(x - drag.x), height: d.h,
    fill: "#3366cc", "fill-opacity": 0.15}, c.over);
});
document.addEventListener("mouseup", function (ev) {
  if (!drag) return;
  var c = drag.c, x = clamp(point(c, ev)[0], c.d.l, c.d.l + c.d.w), a = c.t(drag.x), b = c.t(x);
  drag = null;
  hide(c);
  if (Math.abs(b - a) * c.d.w / (c.hi - c.lo) < 5) return;
  var lo = Math.min(a, b), hi = Math.max(a, b), least = Math.max(2 * c.d.b || 0, 2);
  if (hi - lo < least) { lo = (lo + hi - least) / 2; hi = lo + least; }
  zoomBox(c.box, lo, hi);
});
document.querySelectorAll("svg.chart").forEach(setup);
document.querySelectorAll(".charts button.reset").forEach(function (b) {
  b.addEventListener("click", function () { reset(b.closest(".charts")); });
});
document.querySelectorAll(".legend.lines").forEach(function (legend) {
  var svg = legend.previousElementSibling;
  if (!svg || !svg.matches("svg.chart")) return;
  legend.querySelectorAll(".key").forEach(function (key) {
    var lines = svg.querySelectorAll('[data-m="' + key.dataset.m + '"]');
    key.addEventListener("mouseenter", function () {
      svg.classList.add("focus"); lines.forEach(function (l) { l.classList.add("on"); });
    });
    key.addEventListener("mouseleave", function () {
      svg.classList.remove("focus"); lines.forEach(function (l) { l.classList.remove("on"); });
    });
  });
});
})();
"""
