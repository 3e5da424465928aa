"""A fleet made from hand-made member rows by the report's model, in-process and without Spark.

Each group's result tables come from :func:`tests.spark.report.model_rows.report` (the model the
report runs), its switchovers and events from an events table as the report cuts them
(:mod:`grstats.spark.report.event_tables`), its summary from ``build_summary`` and its entry in
the fleet's ``groups`` from ``group_entry``: what ``run_report`` writes, less Spark and files.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grstats.spark.events import ARROW_EVENTS
from grstats.spark.report import event_tables
from grstats.spark.report.config import ReportConfig
from grstats.spark.report.fleet import group_entry
from grstats.spark.report.job import EPISODE_KINDS, TABLE_NAMES
from grstats.spark.report.page import PageData
from grstats.spark.report.summary import build_summary, named
from tests.spark.report.model_rows import report
from tests.spark.report.rows import row

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import pyarrow as pa

#: A group's snapshots: one every EVERY_S seconds for RANGE_S seconds (10 minutes).
EVERY_S, RANGE_S = 5, 600


@dataclass(frozen=True)
class Group:
    """One group of a fleet: its entry in summary.json's ``groups`` and its page's data."""

    entry: dict[str, Any]
    page: PageData


def group_rows(
    label: str, members: Sequence[str], cells: Callable[[int, int], dict[str, Any]]
) -> list[dict[str, Any]]:
    """Member rows of the group ``label``: ``cells(member index, second)`` overrides DEFAULTS."""
    return [
        row(
            member,
            second,
            group_label=label,
            member_host=f"db{index + 1}.{label}.example",
            member_role="PRIMARY" if index == 0 else "SECONDARY",
            **cells(index, second),
        )
        for second in range(0, RANGE_S, EVERY_S)
        for index, member in enumerate(members)
    ]


def make_group(
    label: str, rows: list[dict[str, Any]], events: pa.Table | None = None, name: str = ""
) -> Group:
    """The group ``label`` of ``rows`` (and ``events``, ARROW_EVENTS), as the fleet report has it."""
    tables: dict[str, Any] = report(rows)
    bucket_s = tables.pop("bucket_s")[0]["bucket_s"]
    for table, (kind, value) in EPISODE_KINDS.items():
        tables[table] = [e for e in tables["episodes"] if (e["kind"], e["value"]) == (kind, value)]
    found = ARROW_EVENTS.empty_table() if events is None else events
    tables["switchovers"] = event_tables.switchovers(found, None, None).to_pylist()
    tables["events"] = event_tables.events(found, None, None).to_pylist()
    config = ReportConfig(Path("table"), Path("report"))
    summary = named(build_summary(config, tables, bucket_s), label, name)
    page = PageData(
        title=f"Group {label}",
        range_text=(
            f"{summary['range']['snapshots']:,} snapshots from "
            f"{summary['range']['first_snapshot']} to {summary['range']['last_snapshot']}"
        ),
        settings_text="flow-control threshold 25000",
        figures=tables["figures"],
        lag_stages=tables["lag_stages"],
        episodes=tables["episodes"],
        switchovers=tables["switchovers"],
        events=tables["events"],
        worst=tables["worst_minutes"],
        series=tables["chart_series"],
        bucket_s=bucket_s,
        files=TABLE_NAMES,
        tables_dir=f"groups/{label}/tables",
        flow_control_threshold=25000,
    )
    return Group(group_entry(label, name, label, summary), page)


#: The groups of :func:`five_groups`, in the order the fleet overview must rank them.
ORDER = ("errant", "blind", "orders", "laggy", "clean")
#: The seconds after the first snapshot that blind's third agent is down: 7 min 40 s.
BLIND = range(60, 520)
#: The seconds errant's third member is in ERROR.
ERRANT = range(100, 110)


def member_ids(label: str, count: int = 3) -> list[str]:
    """Stable server_uuids for the members of the group ``label``."""
    return [str(uuid.uuid5(uuid.NAMESPACE_URL, f"{label}/{index}")) for index in range(count)]


def five_groups(failover: pa.Table) -> dict[str, Group]:
    """Five groups, each with one kind of trouble but clean: by label.

    errant: a member in ERROR for 10 s; blind: a member's agent down for 7 min 40 s (its last
    rows say ONLINE); orders: a primary failover (``failover``: events of the group ``orders``,
    as agents served them); laggy: 3 s of lag; clean: nothing but 0.5 s of lag, more than the
    others but laggy's.
    """

    def lag(seconds: float, member: int = 1) -> Callable[[int, int], dict[str, Any]]:
        return lambda index, _: {"applier_lag_seconds": seconds if index == member else 0.0}

    def blind(index: int, second: int) -> dict[str, Any]:
        return {"connected": not (index == 2 and second in BLIND), "applier_lag_seconds": 0.1}

    def errant(index: int, second: int) -> dict[str, Any]:
        return {"member_state": "ERROR" if index == 2 and second in ERRANT else "ONLINE"}

    failed = sorted(set(failover.column("member_id").to_pylist()))
    cells: dict[str, tuple[list[str], Callable[[int, int], dict[str, Any]]]] = {
        "errant": (member_ids("errant"), errant),
        "blind": (member_ids("blind"), blind),
        "orders": (failed, lag(0.2)),
        "laggy": (member_ids("laggy"), lag(3.0)),
        "clean": (member_ids("clean"), lag(0.5)),
    }
    return {
        label: make_group(
            label,
            group_rows(label, members, of),
            failover if label == "orders" else None,
            name=str(uuid.uuid5(uuid.NAMESPACE_URL, label)),
        )
        for label, (members, of) in cells.items()
    }
