"""``grstats simulate``: run the built-in group model and print every member's ground truth.

The ``table`` and ``vertical`` formats show TIMESTAMP(6) columns in ``--time-zone`` (as
``grstats query`` does: flag, ``GRSTATS_TIME_ZONE``, client config file, else UTC); JSON holds
them as ISO 8601 in UTC with ``Z``, an unset one as null.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING

from grstats.agent.sim.group import TICKS_PER_SECOND, SimulatedGroup, check_group_name
from grstats.agent.sim.scenario import list_scenarios, load_scenario
from grstats.agent.sim.summary import SIMULATION_SUMMARY, summary_rows
from grstats.agent.sim.views import group_rows, snapshot
from grstats.cli.client_settings import add_time_zone_argument, time_zone_setting
from grstats.cli.errors import CliError
from grstats.core.errors import ConfigError
from grstats.core.rows import (
    REPLICATION_GROUP_MEMBER_GTID_EXECUTED,
    REPLICATION_GROUP_MEMBER_LAG,
    REPLICATION_GROUP_MEMBER_STATS,
    REPLICATION_GROUP_MEMBERS,
    GtidExecutedRow,
    render,
)
from grstats.core.rows.render import json_objects

if TYPE_CHECKING:
    from collections.abc import Sequence

    from grstats.cli.types import Subparsers
    from grstats.core.rows import Column, Value

#: The default group start: a fixed moment, so that two runs print the same ground truth.
DEFAULT_START_S = 1_700_000_000
MAX_SECONDS = 30 * 86_400

EPILOG = """\
tables printed (JSON: one object keyed by these names, each a list of rows keyed by column;
TIMESTAMP columns in JSON are ISO 8601 UTC with Z, an unset one null; table and vertical
show them in --time-zone, UTC by default):
  replication_group_members               each member as the group shows it; a member out of
                                          the view shows OFFLINE (or ERROR once expelled)
  replication_group_member_stats          each member's own row, as its server shows it (a
                                          member whose server is down: its last values)
  replication_group_member_lag            WL#7374 fields and APPLIER_LAG_SECONDS
  replication_group_member_gtid_executed  each member's gtid_executed
  simulation_summary                      seconds in each state, seconds throttled by flow control

examples:
  grstats simulate --list
  grstats simulate --scenario crash-rejoin --seconds 90
  grstats simulate --scenario steady --seconds 10 --format vertical --time-zone Europe/Paris
  grstats simulate --scenario slow-secondary --members 5 --seconds 300 --seed 7 --format json
  grstats simulate --scenario steady --group-name east --seconds 10 --format json
"""


def register(subparsers: Subparsers) -> None:
    """Add the ``simulate`` subcommand."""
    parser = subparsers.add_parser(
        "simulate",
        help="run the built-in simulated group and print its ground truth",
        description="Run a deterministic model of a Group Replication group of 1-9 members for "
        "SECONDS simulated seconds, as fast as it can, and print every member's rows: the ground "
        "truth the agents, the collector and the reports are checked against. The same scenario, "
        "members, seed, group name and start always give the same output.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--list", action="store_true", help="list the built-in scenarios and exit")
    parser.add_argument(
        "--scenario", metavar="NAME|PATH", help="a built-in scenario or a TOML file"
    )
    parser.add_argument(
        "--members", type=int, metavar="N", help="group size, 1-9 (default: the scenario's)"
    )
    parser.add_argument("--seconds", type=float, metavar="S", help="simulated seconds to run")
    parser.add_argument("--seed", type=int, default=1, metavar="K", help="random seed (default 1)")
    parser.add_argument(
        "--group-name",
        metavar="NAME",
        help="the group's name, as an agent's --group-name: the group's and members' UUIDs "
        "follow from it, the scenario and the seed (default: none)",
    )
    parser.add_argument(
        "--start",
        type=float,
        default=DEFAULT_START_S,
        metavar="UNIX_SECONDS",
        help=f"when the group starts (default {DEFAULT_START_S}, a fixed moment)",
    )
    parser.add_argument(
        "--format",
        choices=("table", "vertical", "json"),
        default="table",
        help="table or vertical (\\G) for people, json for scripts (default table)",
    )
    add_time_zone_argument(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the simulation described by ``args`` and print the result."""
    if args.list:
        scenarios = list_scenarios()
        width = max(len(s.name) for s in scenarios)
        for scenario in scenarios:
            print(f"{scenario.name:<{width}}  {scenario.description}")
        return 0
    if not args.scenario or args.seconds is None:
        raise CliError("simulate needs --scenario and --seconds (or --list)", code=2)
    if not 0 < args.seconds <= MAX_SECONDS:
        raise CliError(f"--seconds: {args.seconds:g} is not in (0, {MAX_SECONDS}]", code=2)
    zone = time_zone_setting(args)
    try:
        scenario = load_scenario(args.scenario)
        if args.members is not None:
            scenario = scenario.with_members(args.members)
        name = "" if args.group_name is None else check_group_name("--group-name", args.group_name)
    except ConfigError as exc:
        raise CliError(str(exc), code=2) from exc
    group = SimulatedGroup(scenario, args.seed, int(args.start * 1_000_000), name)
    _run(group, int(args.seconds * TICKS_PER_SECOND))
    tables = ground_truth(group)
    if args.format == "json":
        print(
            json.dumps(
                {name: json_objects(cols, rows) for name, (cols, rows) in tables.items()}, indent=2
            )
        )
        return 0
    for name, (columns, rows) in tables.items():
        print(f"-- {name}")
        print(render(columns, rows, args.format, zone=zone), end="")
        print()
    return 0


def _run(group: SimulatedGroup, ticks: int) -> None:
    """Step ``group`` ``ticks`` ticks, with progress on stderr when it is a terminal."""
    show = sys.stderr.isatty() and ticks >= 600 * TICKS_PER_SECOND
    started = time.monotonic()
    step = max(1, ticks // 100)
    while group.tick < ticks:
        group.advance_to(min(ticks, group.tick + step))
        if show:
            done = group.tick / ticks
            print(
                f"\rsimulated {group.tick // TICKS_PER_SECOND} of {ticks // TICKS_PER_SECOND} s "
                f"({done:.0%}, {time.monotonic() - started:.0f} s)",
                end="",
                file=sys.stderr,
            )
    if show:
        print(file=sys.stderr)


def ground_truth(
    group: SimulatedGroup,
) -> dict[str, tuple[Sequence[Column], list[tuple[Value, ...]]]]:
    """Return every table of the simulated group now, by table name."""
    snapshots = [snapshot(group, m.index, last_known=True) for m in group.members]
    snapshots.sort(key=lambda s: s.member_id)
    return {
        REPLICATION_GROUP_MEMBERS.name: (
            REPLICATION_GROUP_MEMBERS.columns,
            [row.values() for row in group_rows(group)],
        ),
        REPLICATION_GROUP_MEMBER_STATS.name: (
            REPLICATION_GROUP_MEMBER_STATS.columns,
            [s.stats.values() for s in snapshots],
        ),
        REPLICATION_GROUP_MEMBER_LAG.name: (
            REPLICATION_GROUP_MEMBER_LAG.columns,
            [s.applier.with_lag(s.read_at_us).values() for s in snapshots],
        ),
        REPLICATION_GROUP_MEMBER_GTID_EXECUTED.name: (
            REPLICATION_GROUP_MEMBER_GTID_EXECUTED.columns,
            [
                GtidExecutedRow.of(s.member_id, s.gtid_executed, s.read_at_us).values()
                for s in snapshots
            ],
        ),
        SIMULATION_SUMMARY.name: (SIMULATION_SUMMARY.columns, summary_rows(group)),
    }
