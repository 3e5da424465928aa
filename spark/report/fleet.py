"""A report of several groups (a fleet): summary.json's ``groups`` list and the page's overview.

Each group's figures are those of a report of that group alone, written into its own directory
(``groups/<dir>/``: report.html, summary.json, tables/). This module only combines them:

* summary.json gets a ``groups`` list, one entry per group: ``group_label``, ``group_name``,
  ``dir`` and the content of the group's own summary.json (``range``, ``group``, ``members``,
  episodes, ``switchovers``, ``throttling``, ``worst_minutes``, ``tables`` relative to the top
  directory), plus ``not_online_s``;
* report.html starts with the fleet overview, the groups in trouble first (each linking to its
  section and its own page), then one section per group, in the same order, with the content
  of its own page.

The overview's order (:func:`ranked`, from :class:`Trouble`, the group's own figures) is the
order an on-call engineer looks at them in:

1. time in ERROR: a member that left the group on an error stays out until someone acts;
2. time not connected plus time UNREACHABLE: a member nobody could read, or that the group could
   not reach (an agent down for minutes counts here, although its member's last rows said
   ONLINE);
3. primary switchovers: each one a write outage;
4. the worst APPLIER_LAG_SECONDS;

then, to break ties, time not ONLINE, time throttled by flow control, and the label. The times
are member-seconds: each member's FIGURES seconds (``error_s``, ``not_connected_s``,
``unreachable_s``), added up over the group's members.

Nothing here imports pyspark.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from grstats.spark.report.page import PageData, body, foot, head, human_times, scrolling

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

#: Where each group's own report goes, under the report directory.
GROUPS_DIR = "groups"
#: Keys of a group's own summary.json that its entry in ``groups`` does not repeat.
_TOP_ONLY = ("format", "empty", "table", "settings")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def group_heading(label: str, name: str) -> str:
    """A group as people name it: its label, then GR's group name when known, ``orders (8a84...)``.

    ``label`` is the rows' ``group_label``: the collector's label of the group, or the label its
    agents answered (the InnoDB Cluster name, the agents' ``group_label``), else ``default``.
    """
    return f"{label} ({name})" if name else label


def group_dirs(labels: Iterable[str]) -> dict[str, str]:
    """Return a directory name for each label: the label made file-safe, unique among them."""
    dirs: dict[str, str] = {}
    taken: set[str] = set()
    for label in labels:
        base = _UNSAFE.sub("_", label).strip(".") or "group"
        name, number = base, 2
        while name in taken:
            name, number = f"{base}-{number}", number + 1
        taken.add(name)
        dirs[label] = name
    return dirs


def not_online_s(members: Sequence[Mapping[str, Any]]) -> float:
    """Member-seconds in a state other than ONLINE: each member's observed time not ONLINE."""
    return sum(
        max(0.0, float(m["observed_s"] or 0.0) - float(m["online_s"] or 0.0)) for m in members
    )


def group_entry(
    label: str, name: str, directory: str, summary: Mapping[str, Any]
) -> dict[str, Any]:
    """Return one entry of summary.json's ``groups``, from the group's own summary."""
    prefix = f"{GROUPS_DIR}/{directory}"
    entry: dict[str, Any] = {
        "group_label": label,
        "group_name": name,
        "dir": prefix,
        **{key: value for key, value in summary.items() if key not in _TOP_ONLY},
        "not_online_s": not_online_s(summary["members"]),
    }
    entry["tables"] = {
        table: {
            **where,
            "csv": f"{prefix}/{where['csv']}",
            "parquet": f"{prefix}/{where['parquet']}",
        }
        for table, where in summary["tables"].items()
    }
    return entry


@dataclass(frozen=True, slots=True)
class Trouble:
    """A group's trouble in range, read from its own summary: what the overview ranks it by.

    Attributes:
        error_s, not_connected_s, unreachable_s: member-seconds in ERROR, not connected and
            UNREACHABLE (the members' FIGURES ``error_s``, ``not_connected_s``, ``unreachable_s``).
        switchovers: primary switchovers in range (the summary's SWITCHOVERS rows).
        lag_seconds_max: the group's worst APPLIER_LAG_SECONDS (None: no member gave one).
        not_online_s: member-seconds in any state but ONLINE (:func:`not_online_s`).
        throttling_s: seconds any member was throttled by flow control (None: unknown).
    """

    error_s: float
    not_connected_s: float
    unreachable_s: float
    switchovers: int
    lag_seconds_max: float | None
    not_online_s: float
    throttling_s: float | None

    def key(self) -> tuple[float, ...]:
        """The sort key, worst first: ERROR, not connected plus UNREACHABLE, switchovers, lag."""
        return (
            -self.error_s,
            -(self.not_connected_s + self.unreachable_s),
            -self.switchovers,
            -(self.lag_seconds_max or 0.0),
            -self.not_online_s,
            -(self.throttling_s or 0.0),
        )


def trouble(entry: Mapping[str, Any]) -> Trouble:
    """The trouble of one entry of ``groups`` (:func:`group_entry`), from its own figures."""
    members = entry["members"]

    def total(name: str) -> float:
        return sum(float(member.get(name) or 0.0) for member in members)

    figures = entry["group"]
    return Trouble(
        error_s=total("error_s"),
        not_connected_s=total("not_connected_s"),
        unreachable_s=total("unreachable_s"),
        switchovers=len(entry.get("switchovers") or ()),
        lag_seconds_max=figures["lag_seconds_max"],
        not_online_s=float(entry["not_online_s"]),
        throttling_s=figures["throttling_s"],
    )


def ranked(groups: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The groups, in trouble first: in :meth:`Trouble.key`'s order, then by label."""
    return sorted(groups, key=lambda entry: (*trouble(entry).key(), entry["group_label"]))


def fleet_summary(top: Mapping[str, Any], groups: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return summary.json of several groups: ``top`` (format, table, settings) and ``groups``."""
    firsts = [g["range"]["first_snapshot"] for g in groups]
    lasts = [g["range"]["last_snapshot"] for g in groups]
    return {
        **top,
        "range": {
            **top["range"],
            "first_snapshot": min(firsts),  # ISO 8601 UTC with Z: text order is time order
            "last_snapshot": max(lasts),
            "snapshots": sum(int(g["range"]["snapshots"]) for g in groups),
        },
        "groups": list(groups),
    }


def _cell(value: object, digits: int = 1) -> str:
    if value is None:
        return '<span class="muted">-</span>'
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return html.escape(str(value))


def _trouble_cell(value: float) -> str:
    """A trouble figure's cell, marked when there was any."""
    marked = ' class="bad"' if value else ""
    return f"<td{marked}>{_cell(value)}</td>"


def _anchor(entry: Mapping[str, Any]) -> str:
    return "group-" + str(entry["dir"]).rsplit("/", 1)[-1]


#: The overview's columns, in the order of its rows' sort: (heading, whether it holds words).
#: A unit stays on its heading's last line.
_OVERVIEW = (
    ("rank", False),
    ("group", True),
    ("ERROR\N{NO-BREAK SPACE}s", False),
    ("not connected\N{NO-BREAK SPACE}s", False),
    ("UNREACHABLE\N{NO-BREAK SPACE}s", False),
    ("switchovers", False),
    ("lag max\N{NO-BREAK SPACE}s", False),
    ("not ONLINE\N{NO-BREAK SPACE}s", False),
    ("throttled\N{NO-BREAK SPACE}s", False),
)
#: What the overview's order is, above its table.
OVERVIEW_ORDER = (
    "The groups, in trouble first: by time in ERROR (a member out of the group on an error), "
    "then time not connected plus time UNREACHABLE (a member nobody could read, such as one "
    "whose agent was down, or that the group could not reach), then primary switchovers, "
    "then the worst APPLIER_LAG_SECONDS; ties by time not ONLINE (in any other state) and "
    "time writers were throttled by flow control. Times are member-seconds, added up over "
    "the group's members. Under each group: GR's group name, its members and snapshots. Each "
    "group's own report, with its summary.json and tables, is in its directory (page)."
)


def _overview_row(rank: int, entry: Mapping[str, Any]) -> str:
    found = trouble(entry)
    link = (
        f"<a href='#{_anchor(entry)}'>{html.escape(entry['group_label'])}</a> "
        f"<a class='muted' href='{html.escape(entry['dir'])}/report.html'>(page)</a>"
    )
    name = f"{html.escape(entry['group_name'])}; " if entry["group_name"] else ""
    about = f"{name}{len(entry['members'])} members, {_cell(entry['group']['snapshots'])} snapshots"
    cells = [
        f"<td>{rank}</td><td class='text'>{link}<br><span class='muted'>{about}</span></td>",
        _trouble_cell(found.error_s),
        _trouble_cell(found.not_connected_s),
        _trouble_cell(found.unreachable_s),
        _trouble_cell(found.switchovers),
        f"<td>{_cell(found.lag_seconds_max, 3)}</td>",
        f"<td>{_cell(found.not_online_s)}</td>",
        f"<td>{_cell(found.throttling_s)}</td>",
    ]
    return "<tr>" + "".join(cells) + "</tr>"


def render_fleet(
    title: str,
    range_text: str,
    groups: Sequence[Mapping[str, Any]],
    pages: Mapping[str, PageData],
) -> str:
    """Return the fleet's page: the overview, then each group's section, in trouble first.

    ``pages`` holds each group's page data, by label.
    """
    header = "".join(
        f"<th class='text'>{html.escape(name)}</th>" if words else f"<th>{html.escape(name)}</th>"
        for name, words in _OVERVIEW
    )
    rows = [_overview_row(rank, entry) for rank, entry in enumerate(ranked(groups), start=1)]
    parts = [
        head(title),
        f"<h1>{html.escape(title)}</h1>",
        f"<p>{html.escape(human_times(range_text))}</p>",
        "<h2 id='fleet'>Fleet overview</h2>",
        f"<p>{html.escape(OVERVIEW_ORDER)}</p>",
        scrolling(f"<table class='fleet'><tr>{header}</tr>{''.join(rows)}</table>"),
    ]
    for entry in ranked(groups):
        heading = group_heading(entry["group_label"], entry["group_name"])
        parts += [
            f"<section id='{_anchor(entry)}'>",
            f"<h2>Group {html.escape(heading)}</h2>",
            body(pages[entry["group_label"]], anchor=f"{_anchor(entry)}-")
            .replace("<h3>", "<h4>")
            .replace("</h3>", "</h4>")
            .replace("<h2>", "<h3>")
            .replace("</h2>", "</h3>"),
            "<p><a href='#fleet'>back to the overview</a></p></section>",
        ]
    parts.append(foot())
    return "\n".join(parts)
