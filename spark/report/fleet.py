"""A report of several groups (a fleet): summary.json's ``groups`` list and the page's overview.

Each group's figures are those of a report of that group alone, written into its own directory
(``groups/<dir>/``: report.html, summary.json, tables/). This module only combines them:

* summary.json gets a ``groups`` list, one entry per group: ``group_label``, ``group_name``,
  ``dir`` and the content of the group's own summary.json (``range``, ``group``, ``members``,
  episodes, ``throttling``, ``worst_minutes``, ``tables`` relative to the top directory), plus
  ``not_online_s``;
* report.html starts with the fleet overview, the groups ranked by worst lag, time not ONLINE,
  throttled time and UNREACHABLE episodes (each linking to its section and its own page),
  then one section per group with the content of its own page.

Nothing here imports pyspark.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING, Any

from grstats.spark.report.page import PageData, body, foot, head, human_times

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


def ranked(groups: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The groups, worst first: by worst lag, then time not ONLINE, throttled time, episodes."""

    def key(entry: Mapping[str, Any]) -> tuple[float, float, float, float, str]:
        figures = entry["group"]
        return (
            -(figures["lag_seconds_max"] or 0.0),
            -entry["not_online_s"],
            -(figures["throttling_s"] or 0.0),
            -(figures["unreachable_episodes"] or 0),
            entry["group_label"],
        )

    return sorted(groups, key=key)


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


def _anchor(entry: Mapping[str, Any]) -> str:
    return "group-" + str(entry["dir"]).rsplit("/", 1)[-1]


def render_fleet(
    title: str,
    range_text: str,
    groups: Sequence[Mapping[str, Any]],
    pages: Mapping[str, PageData],
) -> str:
    """Return the fleet's page: the ranked overview, then each group's section.

    ``pages`` holds each group's page data, by label.
    """
    rows = []
    for rank, entry in enumerate(ranked(groups), start=1):
        figures = entry["group"]
        link = (
            f"<a href='#{_anchor(entry)}'>{html.escape(entry['group_label'])}</a> "
            f"<a class='muted' href='{html.escape(entry['dir'])}/report.html'>(page)</a>"
        )
        rows.append(
            f"<tr><td>{rank}</td><td class='text'>{link}</td>"
            f"<td class='text'>{_cell(entry['group_name'] or None)}</td>"
            f"<td>{_cell(figures['lag_seconds_max'], 3)}</td>"
            f"<td>{_cell(entry['not_online_s'])}</td>"
            f"<td>{_cell(figures['throttling_s'])}</td>"
            f"<td>{_cell(figures['unreachable_episodes'])}</td>"
            f"<td>{len(entry['members'])}</td><td>{_cell(figures['snapshots'])}</td></tr>"
        )
    parts = [
        head(title),
        f"<h1>{html.escape(title)}</h1>",
        f"<p>{html.escape(human_times(range_text))}</p>",
        "<h2 id='fleet'>Fleet overview</h2>",
        (
            "<p>The groups, worst first: by their worst APPLIER_LAG_SECONDS, then time not "
            "ONLINE (member-seconds in any other state), time writers were throttled by flow "
            "control, and UNREACHABLE episodes. Each group's own report, with its summary.json "
            "and tables, is in its directory (page).</p>"
        ),
        (
            "<table class='fleet'><tr><th>rank</th><th class='text'>group</th>"
            "<th class='text'>group name</th><th>lag max s</th>"
            "<th>not ONLINE s</th><th>throttled s</th><th>UNREACHABLE episodes</th>"
            "<th>members</th><th>snapshots</th></tr>"
        ),
        *rows,
        "</table>",
    ]
    for entry in groups:
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
