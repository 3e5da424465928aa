"""report.html: one self-contained page (inline CSS, SVG and script) that a person reads.

The page loads nothing: its charts' hover and zoom come from :data:`svg.SCRIPT`, inlined once
at the end of the page by :func:`foot`. Times show as people read them, with their zone.
"""

from __future__ import annotations

import datetime as dt
import html
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from grstats.spark.member_log import WINDOW_S
from grstats.spark.report import svg
from grstats.spark.report.tables import RANKINGS
from grstats.spark.rollup import STATES

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Sequence

#: Episode tables show at most this many rows; the CSV files have them all.
MAX_EPISODE_ROWS = 200

_STYLE = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;padding:12px 20px 40px;max-width:1240px;
color:#222}
h1{font-size:22px;margin-bottom:2px}h2{font-size:17px;margin-top:30px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:18px 0 4px}h4{font-size:14px;margin:16px 0 4px}
.scroll{margin:8px 0;max-width:100%;overflow-x:auto}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;font-size:13px}
td,th{padding:3px 6px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}
th{background:#f4f4f4;white-space:normal;vertical-align:bottom;font-weight:600;min-width:4em}
td:first-child,th:first-child{text-align:left}
td:first-child{white-space:normal;overflow-wrap:anywhere;min-width:7em}
td.text,th.text{white-space:normal;overflow-wrap:anywhere;text-align:left;min-width:7em}
td.name,th.name{text-align:left}
.fleet td:first-child{min-width:0}.bad{color:#b00020;font-weight:600}
.muted{color:#777}.chart{display:block;width:100%;height:auto;font:11px system-ui,sans-serif;
fill:#444;cursor:crosshair;user-select:none;-webkit-user-select:none}
.chart.focus polyline,.chart.focus .dots{opacity:.15}
.chart.focus .on{opacity:1;stroke-width:3px}
.legend{margin:2px 0 12px;display:flex;flex-wrap:wrap;gap:2px 16px}.key{white-space:nowrap}
.legend.lines .key{cursor:default}
.swatch{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
.line{display:inline-block;width:18px;height:4px;margin-right:5px;vertical-align:middle;
border-radius:2px}
.charts button.reset{float:right;font:inherit;padding:2px 10px;cursor:pointer}
.tip{position:fixed;z-index:9;background:#fff;border:1px solid #aaa;border-radius:3px;
box-shadow:0 2px 8px #0003;padding:5px 9px;font:12px/1.5 system-ui,sans-serif;
pointer-events:none;max-width:420px;font-variant-numeric:tabular-nums}
.tip i{display:inline-block;width:14px;height:4px;margin-right:6px;vertical-align:middle}
"""


@dataclass(frozen=True, slots=True)
class PageData:
    """What the page shows, collected from the result tables.

    Attributes:
        title: the page heading.
        range_text: the range as asked and as found.
        settings_text: threshold, gap and percentile method.
        figures: FIGURES rows, group first.
        lag_stages: LAG_STAGES rows: each member's transport, waiting and apply.
        episodes: EPISODES rows (all kinds).
        switchovers: SWITCHOVERS rows.
        events: EVENTS rows, in time order.
        event_log: EVENT_LOG rows: the GR log lines around each event (``event`` its number
            in ``events``, from 1).
        worst: WORST rows.
        series: SERIES rows.
        bucket_s: the chart bucket width.
        files: result table names, in the order written.
        tables_dir: where the tables are, relative to the page.
        flow_control_threshold: drawn on the applier queue chart; None: not drawn.
    """

    title: str
    range_text: str
    settings_text: str
    figures: Sequence[dict[str, Any]]
    episodes: Sequence[dict[str, Any]]
    worst: Sequence[dict[str, Any]]
    series: Sequence[dict[str, Any]]
    bucket_s: int
    files: Sequence[str]
    tables_dir: str = "tables"
    flow_control_threshold: float | None = None
    switchovers: Sequence[dict[str, Any]] = ()
    events: Sequence[dict[str, Any]] = ()
    lag_stages: Sequence[dict[str, Any]] = ()
    event_log: Sequence[dict[str, Any]] = ()


#: ISO 8601 times in text (``2026-11-28T05:49:40.123456Z``), for :func:`human_times`.
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)")


def human_time(moment: dt.datetime | str) -> str:
    """``moment`` as people read it, in UTC with the zone: ``2026-11-28 05:49:40 UTC``.

    Takes an aware datetime (a naive one is UTC) or ISO 8601 text; fractions of a second go.
    """
    if isinstance(moment, str):
        moment = dt.datetime.fromisoformat(moment)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def human_times(text: str) -> str:
    """``text`` with each ISO 8601 time in it (with Z or an offset) as :func:`human_time`."""
    return _ISO.sub(lambda found: human_time(found.group()), text)


def member_label(row: dict[str, Any]) -> str:
    """A member as people name it: ``host:port (uuid prefix)``."""
    member = str(row.get("member_id") or "")
    host = row.get("member_host")
    port = row.get("member_port")
    where = f"{host}:{port}" if host and port else host or ""
    return f"{where} ({member[:8]})" if where else member


def _fmt(value: object, digits: int = 1) -> str:
    if value is None:
        return '<span class="muted">-</span>'
    if isinstance(value, dt.datetime):
        return html.escape(value.strftime("%Y-%m-%d %H:%M:%S"))
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return html.escape(str(value))


def _percent(value: object) -> str:
    return _fmt(None) if value is None else f"{float(str(value)) * 100:.3f}%"


def scrolling(table: str) -> str:
    """``table`` in a box as wide as the page's column that scrolls sideways if the table is wider.

    The tables' words wrap (cells of class ``text``), so that they fit at 1,000 px; the box keeps
    one that cannot from widening the page.
    """
    return f"<div class='scroll'>{table}</div>"


def _table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    note: str = "",
    text: Collection[int] = (),
    names: Collection[int] = (),
) -> str:
    """A table of ``rows`` under ``header``; the columns at the indexes ``text`` hold words.

    Numbers align right and do not wrap; words align left and wrap, anywhere if they must;
    the columns at the indexes ``names`` hold one name each (an event type), left, unwrapped.
    """

    def cell(tag: str, index: int, content: str) -> str:
        kind = " class='text'" if index in text else " class='name'" if index in names else ""
        return f"<{tag}{kind}>{content}</{tag}>"

    head = "".join(cell("th", i, html.escape(h)) for i, h in enumerate(header))
    body = "".join(
        "<tr>" + "".join(cell("td", i, c) for i, c in enumerate(row)) + "</tr>" for row in rows
    )
    extra = f'<p class="muted">{html.escape(note)}</p>' if note else ""
    return scrolling(f"<table><tr>{head}</tr>{body}</table>") + extra


def _member_table(
    figures: Sequence[dict[str, Any]],
    columns: Sequence[tuple[str, str, Callable[[object], str]]],
) -> str:
    rows = [
        [
            "group" if row["scope"] == "group" else html.escape(member_label(row)),
            *(show(row[key]) for _, key, show in columns),
        ]
        for row in figures
    ]
    return _table(["member", *(label for label, _, _ in columns)], rows)


def _rate(value: object) -> str:
    return _fmt(value, 1)


def _seconds(value: object) -> str:
    return _fmt(value, 1)


def _lag(value: object) -> str:
    return _fmt(value, 3)


def _whole(value: object) -> str:
    return _fmt(value, 0)


def render(data: PageData) -> str:
    """Return the whole page."""
    return "\n".join(
        [
            head(data.title),
            f"<h1>{html.escape(data.title)}</h1>",
            body(data),
            foot(),
        ]
    )


def head(title: str) -> str:
    """The page's head and the opening of its body."""
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>\n"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
    )


def foot() -> str:
    """The end of the page: its one script (hover and zoom on the charts), then the closing tags."""
    return f"<script>{svg.SCRIPT}</script></body></html>"


def body(data: PageData, anchor: str = "") -> str:
    """The page's content under its heading: the range, the figures, charts and tables.

    ``anchor`` prefixes the ids of the charts' parts: unique per body on one page.
    """
    members = [row for row in data.figures if row["scope"] == "member"]
    labels = {row["member_id"]: member_label(row) for row in members}
    group = next(row for row in data.figures if row["scope"] == "group")
    start = group["first_at"].timestamp()
    end = max(group["last_at"].timestamp(), start + 1)
    parts = [
        (
            f"<p>{html.escape(human_times(data.range_text))}<br><span class='muted'>"
            f"{html.escape(human_times(data.settings_text))}</span></p>"
        ),
        "<h2>Throughput and conflicts</h2>",
        (
            "<p>Transactions per second from the counters' increases; a counter that went down "
            "(a restart) counts again from zero. The group's applied and proposed rates add up "
            "over members; its checked rate is the highest of any member.</p>"
        ),
        _member_table(
            data.figures,
            [
                ("applied/s", "applied_per_s", _rate),
                ("proposed/s", "proposed_per_s", _rate),
                ("checked/s", "checked_per_s", _rate),
                ("conflict rate", "conflict_rate", _percent),
                ("rollback ratio", "rollback_ratio", _percent),
                ("conflicts", "conflicts", _whole),
                ("rolled back", "rollback", _whole),
            ],
        ),
        "<h2>Queues</h2>",
        (
            "<p>Certifier queue (COUNT_TRANSACTIONS_IN_QUEUE), applier queue "
            "(COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE) and COUNT_TRANSACTIONS_ROWS_VALIDATING "
            "(its slope in rows per hour), over snapshots where the member was heard and ONLINE "
            "or RECOVERING. For the group: over each snapshot's largest value of any member.</p>"
        ),
        _member_table(
            data.figures,
            [
                ("cert p50", "cert_queue_p50", _whole),
                ("cert p95", "cert_queue_p95", _whole),
                ("cert max", "cert_queue_max", _whole),
                ("applier p50", "applier_queue_p50", _whole),
                ("applier p95", "applier_queue_p95", _whole),
                ("applier max", "applier_queue_max", _whole),
                ("validating mean", "rows_validating_mean", _whole),
                ("validating max", "rows_validating_max", _whole),
                ("validating /h", "rows_validating_slope_per_h", _rate),
            ],
        ),
        "<h2>Lag and GTIDs ahead</h2>",
        (
            "<p>APPLIER_LAG_SECONDS, and how many GTIDs of gtid_executed were not yet in "
            "TRANSACTIONS_COMMITTED_ALL_MEMBERS.</p>"
        ),
        _member_table(
            data.figures,
            [
                ("lag p50 s", "lag_seconds_p50", _lag),
                ("lag p95 s", "lag_seconds_p95", _lag),
                ("lag p99 s", "lag_seconds_p99", _lag),
                ("lag max s", "lag_seconds_max", _lag),
                ("GTIDs ahead p50", "gtids_ahead_p50", _whole),
                ("GTIDs ahead max", "gtids_ahead_max", _whole),
            ],
        ),
        _stages_section(data.lag_stages, labels),
        *_charts(data, labels, (start, end), anchor),
        "<h2>Time in each state</h2>",
        (
            "<p>Seconds in each MEMBER_STATE as the group showed it; not connected: no live "
            "values of the member (its agent not heard, or its server not read; its rows were "
            "the last received). Throttling: seconds this member's "
            "queue was over the flow-control threshold while it was ONLINE; for the group, "
            "seconds any member was.</p>"
        ),
        _member_table(
            data.figures,
            [
                *((state.lower(), f"{state.lower()}_s", _seconds) for state in STATES),
                ("not connected", "not_connected_s", _seconds),
                ("throttling", "throttling_s", _seconds),
                ("UNREACHABLE episodes", "unreachable_episodes", _whole),
                ("not-connected episodes", "not_connected_episodes", _whole),
            ],
        ),
        _episode_section(
            "UNREACHABLE episodes",
            [e for e in data.episodes if e["kind"] == "state" and e["value"] == "UNREACHABLE"],
            labels,
            "unreachable_episodes",
        ),
        _episode_section(
            "Not-connected episodes",
            [e for e in data.episodes if e["kind"] == "connected" and e["value"] == "NO"],
            labels,
            "not_connected_episodes",
        ),
        _episode_section(
            "Flow-control throttling episodes",
            [e for e in data.episodes if e["kind"] == "throttling" and e["value"] == "YES"],
            labels,
            "throttling_episodes",
        ),
        _switchover_section(data.switchovers, labels),
        _events_section(data.events, labels, data.event_log),
        _worst_section(data.worst, labels),
        "<h2>Files</h2><p>Every table as CSV and Parquet, beside this page: "
        + ", ".join(
            f"<code>{html.escape(data.tables_dir)}/{html.escape(n)}.csv</code>" for n in data.files
        )
        + "; the figures for scripts in <code>summary.json</code>.</p>",
    ]
    return "\n".join(parts)


def _charts(
    data: PageData, labels: dict[str, str], span: tuple[float, float], anchor: str
) -> list[str]:
    start, end = span
    queue: dict[str, list[tuple[float, float]]] = {}
    lag: dict[str, list[tuple[float, float]]] = {}
    for point in sorted(data.series, key=lambda p: p["bucket_start"]):
        label = labels.get(point["member_id"], point["member_id"])
        moment = point["bucket_start"].timestamp()
        if point["applier_queue_max"] is not None:
            queue.setdefault(label, []).append((moment, float(point["applier_queue_max"])))
        if point["lag_seconds_max"] is not None:
            lag.setdefault(label, []).append((moment, float(point["lag_seconds_max"])))
    ordered = sorted({*labels.values(), *queue, *lag})
    colours = svg.member_colours(ordered)
    lanes = []
    marks: dict[str, list[tuple[float, float]]] = {}
    for member_id, label in sorted(labels.items(), key=lambda item: item[1]):
        lanes.append(
            (
                label,
                [
                    (e["start"].timestamp(), e["end"].timestamp(), e["value"])
                    for e in data.episodes
                    if e["member_id"] == member_id and e["kind"] == "state"
                ],
            )
        )
        marks[label] = [
            (e["start"].timestamp(), e["end"].timestamp())
            for e in data.episodes
            if e["member_id"] == member_id and e["kind"] == "connected" and e["value"] == "NO"
        ]
    states = "".join(
        f'<span class="key"><span class="swatch" style="background:{colour}"></span>{state}</span>'
        for state, colour in svg.STATE_COLOURS.items()
    )
    every = (
        "each point is the largest value in a snapshot"
        if data.bucket_s <= 1
        else f"each point is the largest value in {data.bucket_s:,} s"
    )
    threshold = (
        None
        if data.flow_control_threshold is None
        else svg.Threshold(data.flow_control_threshold, "flow-control threshold")
    )
    shown_queue = [k for k in ordered if k in queue]
    shown_lag = [k for k in ordered if k in lag]
    return [
        "<h2>Over time</h2>",
        "<div class='charts'><button class='reset' type='button' hidden>whole range</button>",
        (
            "<p class='muted'>Point at a chart for the values at that time; drag across it to "
            "zoom all three charts in on a time range, double-click to zoom out.</p>"
        ),
        f"<h3>Applier queue per member</h3><p class='muted'>{every}</p>",
        svg.line_chart(
            "applier queue",
            {k: queue[k] for k in shown_queue},
            start,
            end,
            svg.LineOptions(
                unit="transactions",
                digits=0,
                whole=True,
                colours=colours,
                bucket_s=data.bucket_s,
                threshold=threshold,
                chart_id=f"{anchor}queue",
            ),
        ),
        svg.legend(shown_queue, colours),
        f"<h3>Lag per member</h3><p class='muted'>APPLIER_LAG_SECONDS; {every}</p>",
        svg.line_chart(
            "lag seconds",
            {k: lag[k] for k in shown_lag},
            start,
            end,
            svg.LineOptions(
                unit="seconds",
                suffix=" s",
                colours=colours,
                bucket_s=data.bucket_s,
                chart_id=f"{anchor}lag",
            ),
        ),
        svg.legend(shown_lag, colours),
        (
            "<h3>MEMBER_STATE per member</h3>"
            "<p class='muted'>black band: not connected (no live values of the member)</p>"
        ),
        svg.timeline(lanes, start, end, marks, chart_id=f"{anchor}states"),
        (
            f'<div class="legend">{states}<span class="key"><span class="swatch" '
            'style="background:#000"></span>not connected</span></div></div>'
        ),
    ]


def _stages_section(stages: Sequence[dict[str, Any]], labels: dict[str, str]) -> str:
    """The lag by stage: a row per member and stage; an unknown stage says why, never 0."""
    rows = []
    for s in stages:
        member = html.escape(labels.get(s["member_id"], s["member_id"]))
        if s["unknown"] is not None:
            why = f'<td class="text" colspan="5">{html.escape(s["unknown"])}</td>'
            rows.append(f"<tr><td>{member}</td><td>{html.escape(s['stage'])}</td>{why}</tr>")
            continue
        cells = [member, html.escape(s["stage"]), _whole(s["samples"])]
        cells += [_lag(s[name]) for name in ("p50", "p95", "p99", "max")]
        rows.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    names = ("member", "stage", "samples", "p50 s", "p95 s", "p99 s", "max s")
    head = "".join(f"<th>{name}</th>" for name in names)
    return (
        "<h3>Lag by stage</h3><p>The last transaction through each member's applier channel, "
        "as each sampled snapshot showed it (WL#7374's times): transport, from its original "
        "commit to the end of its queueing; waiting, from there to the start of its apply; "
        "apply, from start to end. Transport and waiting compare two members' clocks, so "
        "clock skew moves them (below 0 too). MySQL 5.7 has none of these times.</p>"
        + (scrolling(f"<table><tr>{head}</tr>{''.join(rows)}</table>") if rows else "<p>None.</p>")
    )


def _episode_section(
    title: str, episodes: list[dict[str, Any]], labels: dict[str, str], csv_name: str
) -> str:
    if not episodes:
        return f"<h2>{html.escape(title)}</h2><p>None.</p>"
    shown = sorted(episodes, key=lambda e: (e["start"], e["member_id"]))[:MAX_EPISODE_ROWS]
    rows = [
        [
            html.escape(labels.get(e["member_id"], e["member_id"])),
            _fmt(e["start"]) + (" (or before)" if e["open_start"] else ""),
            _fmt(e["end"]) + (" (still going)" if e["open_end"] else ""),
            _seconds(e["duration_s"]),
        ]
        for e in shown
    ]
    note = (
        f"first {MAX_EPISODE_ROWS} of {len(episodes)}; all are in tables/{csv_name}.csv"
        if len(episodes) > MAX_EPISODE_ROWS
        else ""
    )
    total = sum(float(e["duration_s"] or 0) for e in episodes)
    return (
        f"<h2>{html.escape(title)}</h2><p>{len(episodes)} episodes, {total:,.1f} s in all.</p>"
        + _table(["member", "start (UTC)", "end (UTC)", "seconds"], rows, note)
    )


def _switchover_section(switchovers: Sequence[dict[str, Any]], labels: dict[str, str]) -> str:
    title = "<h2>Primary switchovers</h2>"
    if not switchovers:
        return f"{title}<p>No switchovers in this range.</p>"

    def who(member: str | None) -> str:
        return "unknown" if member is None else html.escape(labels.get(member, member))

    rows = [
        [
            _fmt(s["time"]),
            who(s["old_primary"]),
            who(s["new_primary"]),
            f"<code>{html.escape(s['view_id'])}</code>",
            "unknown"
            if s["no_primary_s"] is None
            else f"{_seconds(s['no_primary_s'])} (from {html.escape(str(s['primary_lost_by']))})",
            _write_outage(s),
        ]
        for s in switchovers[:MAX_EPISODE_ROWS]
    ]
    note = (
        f"first {MAX_EPISODE_ROWS} of {len(switchovers)}; all are in tables/switchovers.csv"
        if len(switchovers) > MAX_EPISODE_ROWS
        else ""
    )
    return (
        f"{title}<p>{len(switchovers)} in this range: a secondary elected primary. Without a "
        "primary: from the first sign of the old primary's loss in the events (its server "
        "lost, its state leaving ONLINE, it leaving the group or the role) to the election, "
        "on the reporting members' clocks. Write outage: from the same sign until the new "
        "primary's super_read_only turned OFF, which Group Replication does only once the new "
        "primary has applied the backlog it was elected with: after a failover to a lagging "
        "member it ends well after the election. Where the new primary's events do not say "
        "(an agent older than the SUPER_READ_ONLY event), it runs to the election: at "
        "least that long.</p>"
        + _table(
            [
                "time (UTC)",
                "old primary",
                "new primary",
                "view",
                "seconds without a primary",
                "write outage (s)",
            ],
            rows,
            note,
            text=(1, 2, 4, 5),
        )
    )


def _write_outage(switchover: dict[str, Any]) -> str:
    """The write outage's cell: its seconds and its end, or a lower bound without the event."""
    outage = switchover["write_outage_s"]
    if outage is None:
        return "unknown"
    writable = switchover["writable_at"]
    if writable is None:
        return f"at least {_seconds(outage)} (to the election)"
    return f"{_seconds(outage)} (to SUPER_READ_ONLY OFF at {_fmt(writable)})"


#: How the events table shows an empty OLD_VALUE or NEW_VALUE, as ``grstats query events``.
_NOTHING = "''"


def _events_section(
    events: Sequence[dict[str, Any]],
    labels: dict[str, str],
    event_log: Sequence[dict[str, Any]] = (),
) -> str:
    title = "<h2>Events</h2>"
    if not events:
        return f"{title}<p>No events in this range.</p>"
    around: dict[int, list[dict[str, Any]]] = {}
    for line in event_log:
        around.setdefault(line["event"], []).append(line)
    rows = []
    for number, e in enumerate(events[:MAX_EPISODE_ROWS], start=1):
        old, new = e["old_value"], e["new_value"]
        # The arrow stays with the old value: a line breaks after it.
        change = f"{old or _NOTHING}\N{NO-BREAK SPACE}-> {new or _NOTHING}" if old or new else ""
        reporter = e["reported_by"]
        rows.append(
            [
                _fmt(e["event_time"]),
                html.escape(labels.get(e["member_id"], e["member_id"])),
                html.escape(e["event_type"]),
                html.escape(change),
                "" if reporter == e["member_id"] else html.escape(labels.get(reporter, reporter)),
                html.escape(e["detail"]),
                _log_link(number, around.get(number, ())),
            ]
        )
    note = (
        f"first {MAX_EPISODE_ROWS} of {len(events)}; all are in tables/events.csv"
        if len(events) > MAX_EPISODE_ROWS
        else ""
    )
    return (
        f"{title}<p>{len(events)} events, as the agents recorded them (replication_group_events"
        "; each at its reporter's clock).</p>"
        + _table(
            ["time (UTC)", "member", "event", "change", "seen by", "detail", "GR log"],
            rows,
            note,
            text=(1, 3, 4, 5, 6),
            names=(2,),
        )
        + _event_log_section(events[:MAX_EPISODE_ROWS], around, labels)
    )


#: How far around an event its GR log lines reach, as the page says it.
_WINDOW_TEXT = f"{WINDOW_S[0]:g} s before to {WINDOW_S[1]:g} s after"


def _log_link(number: int, lines: Sequence[dict[str, Any]]) -> str:
    """The events table's cell that links an event to its GR log lines (none: a dash)."""
    if not lines:
        return '<span class="muted">-</span>'
    count = f"{len(lines)} line" + ("s" if len(lines) > 1 else "")
    return f'<a href="#gr-log-{number}">{count}</a>'


def _event_log_section(
    events: Sequence[dict[str, Any]],
    around: dict[int, list[dict[str, Any]]],
    labels: dict[str, str],
) -> str:
    """Each event's GR log lines, one folded block per event the events table links to."""
    if not around:
        return ""
    blocks = []
    for number, e in enumerate(events, start=1):
        lines = around.get(number)
        if not lines:
            continue
        member = labels.get(e["member_id"], e["member_id"])
        rows = [
            [
                _fmt(line["logged"]),
                html.escape(labels.get(line["line_member_id"], line["line_member_id"])),
                html.escape(line["prio"]),
                html.escape(line["error_code"] or ""),
                html.escape(line["data"]),
            ]
            for line in lines
        ]
        blocks.append(
            f'<details id="gr-log-{number}"><summary>{human_time(e["event_time"])}: '
            f"{html.escape(member)} {html.escape(e['event_type'])}</summary>"
            + _table(["logged (UTC)", "written by", "prio", "code", "message"], rows, text=(1, 4))
            + "</details>"
        )
    return (
        "<h3>GR log around the events</h3><p>Group Replication's own error-log lines "
        f"(replication_group_member_log), {_WINDOW_TEXT} each event: its member's and "
        "reporter's, and the other members' that name it; each at its writer's clock.</p>"
        + "".join(blocks)
    )


def _worst_section(worst: Sequence[dict[str, Any]], labels: dict[str, str]) -> str:
    titles = {
        "lag_seconds": ("Worst minutes by lag", "largest lag s", _lag),
        "applier_queue": ("Worst minutes by applier queue", "largest queue", _whole),
        "conflict_rate": ("Worst minutes by conflict rate", "conflict rate", _percent),
    }
    parts = ["<h2>Worst minutes</h2>"]
    for ranking in RANKINGS:
        title, column, show = titles[ranking]
        rows = [
            [
                str(w["rank"]),
                _fmt(w["minute"]),
                html.escape(labels.get(w["member_id"], "group") if w["member_id"] else "group"),
                show(w["value"]),
            ]
            for w in worst
            if w["ranking"] == ranking
        ]
        parts.append(f"<h3>{title}</h3>")
        parts.append(
            _table(["#", "minute (UTC)", "member", column], rows, text=(2,))
            if rows
            else "<p>None.</p>"
        )
    return "".join(parts)


def render_empty(title: str, range_text: str) -> str:
    """Return the page for a range without snapshots."""
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(human_times(range_text))}</p>"
        "<p><strong>The range holds no snapshots: there is nothing to report.</strong></p>"
        f"<p class='muted'>written {human_time(dt.datetime.now(tz=dt.UTC))}</p>"
        "</body></html>"
    )
