"""``grstats demo``: the main job, on a simulated 3-member group, from agents to the Spark report.

Modules: :mod:`~grstats.cli.demo.group` (the agents, a member crash, an agent kill),
:mod:`~grstats.cli.demo.pipeline` (collector, ingest, report),
:mod:`~grstats.cli.demo.children` (every process started,
stopped at the end, on errors and on Ctrl-C),
:mod:`~grstats.cli.demo.workdir` (where the output stays) and
:mod:`~grstats.cli.demo.progress` (the ``== [  t s]`` lines).
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grstats.agent.sim.scenario import load_scenario
from grstats.cli.demo.children import (
    Children,
    Interrupted,
    signals_ignored,
    signals_interrupt,
)
from grstats.cli.demo.group import Group
from grstats.cli.demo.headlines import headlines
from grstats.cli.demo.pipeline import Pipeline
from grstats.cli.demo.ports import free_ports
from grstats.cli.demo.progress import Progress
from grstats.cli.demo.workdir import prepare
from grstats.cli.errors import CliError
from grstats.core.errors import ConfigError

if TYPE_CHECKING:
    from grstats.agent.sim.scenario import Scenario
    from grstats.cli.demo.workdir import Workdir
    from grstats.cli.types import Subparsers

__all__ = ["DemoOptions", "free_ports", "register", "run"]

#: The scenario the demo runs unless told otherwise.
DEFAULT_SCENARIO = "demo"
#: Where the demo writes unless told otherwise (relative: in the current directory).
DEFAULT_OUT = Path("grstats-demo")
#: Seconds the collector runs unless told otherwise.
DEFAULT_COLLECT_S = 60.0
#: The accepted --collect-seconds.
COLLECT_RANGE_S = (1.0, 3600.0)
#: Exit status after Ctrl-C, as a shell reports a process that SIGINT ended.
EXIT_INTERRUPTED = 130

EPILOG = """\
steps, each announced on stderr with the seconds since the start:
  1. start one agent process per member of a simulated group (scenario 'demo': 3 members,
     member 2 crashes 10 s in) on 127.0.0.1, and wait until every agent hears every other;
  2. start 'grstats collect' (as a process, one snapshot a second) with a failover list of
     agents, the first being the one step 5 kills;
  3. print replication_group_member_stats as two different agents serve it (the same rows);
  4. show replication_group_members (with the freshness columns) while the crashed member
     is UNREACHABLE, then OFFLINE: expelled, and still listed;
  5. kill one agent with SIGKILL (the collector fails over) and show, from another agent, its
     member still listed with CONNECTED NO and its last row and age;
  5b. start that agent again with an empty state directory and show the events it lists
     though it saw none of them: the crash (as the others recorded it) and its own kill
     (the others found its agent silent);
  6. stop the collector with SIGTERM once it has run --collect-seconds (its segments seal);
  7. 'grstats spark ingest' and 'grstats spark report' (Spark in local mode; Java 17 needed);
     print where report.html and summary.json are and a few of their figures.

Everything stays in --out (agents' logs and state, spool, table, report). Every process the
demo starts is stopped at the end, on an error, on Ctrl-C and on SIGTERM. It takes about
2 minutes with the defaults.
exit status: 0 when every step worked, 1 when one failed, 2 for invalid arguments,
130 after Ctrl-C.
"""


@dataclass(frozen=True, slots=True)
class DemoOptions:
    """What one demo run does."""

    scenario: str = DEFAULT_SCENARIO
    collect_s: float = DEFAULT_COLLECT_S
    out: Path = DEFAULT_OUT
    keep_running: bool = False

    def __post_init__(self) -> None:
        low, high = COLLECT_RANGE_S
        if not low <= self.collect_s <= high:
            raise ConfigError(
                f"collect_s: {self.collect_s:g} is not a number of seconds in {low:g}..{high:g}"
            )


def register(subparsers: Subparsers) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo",
        help="the main job on a simulated 3-member group: agents, a crash, collector, report",
        description="Start a simulated Group Replication group of 3 members with one agent "
        "process each on 127.0.0.1, show what the agents serve through a member crash and "
        "an agent crash, collect the group's history and turn it into the Spark report.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--scenario",
        default=DEFAULT_SCENARIO,
        metavar="NAME|PATH",
        help=f"the simulated group's scenario (default {DEFAULT_SCENARIO})",
    )
    parser.add_argument(
        "--collect-seconds",
        type=float,
        default=DEFAULT_COLLECT_S,
        metavar="S",
        help="how long the collector runs, 1-3600, at least until the agent kill is shown "
        f"(default {DEFAULT_COLLECT_S:g})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        metavar="DIR",
        help="where everything is written (default ./grstats-demo; emptied if an earlier "
        "demo wrote it)",
    )
    parser.add_argument(
        "--keep-running",
        action="store_true",
        help="after the report, leave the surviving agents up until Ctrl-C",
    )
    parser.set_defaults(handler=run)


def options_from(args: argparse.Namespace) -> DemoOptions:
    """The options of ``args``; CliError (exit 2) names the flag and its value."""
    try:
        return DemoOptions(
            scenario=args.scenario,
            collect_s=args.collect_seconds,
            out=args.out,
            keep_running=args.keep_running,
        )
    except ConfigError as exc:
        raise CliError(str(exc).replace("collect_s:", "--collect-seconds:"), code=2) from exc


def run(args: argparse.Namespace) -> int:
    """Run the demo; stop every process it started whatever happens."""
    options = options_from(args)
    try:
        scenario = load_scenario(options.scenario)
    except ConfigError as exc:
        raise CliError(f"--scenario: {exc}", code=2) from exc
    _check_java()
    progress = Progress()
    workdir = prepare(options.out)
    children = Children()
    code = 0
    try:
        with signals_interrupt():
            _run(options, scenario, workdir, children, progress)
    except KeyboardInterrupt:
        progress.say("interrupted (Ctrl-C)")
        code = EXIT_INTERRUPTED
    except Interrupted as exc:
        progress.say(f"interrupted ({exc})")
        code = 128 + exc.signum
    finally:
        with signals_ignored():
            stopped = children.stop_all()
            if stopped:
                progress.say(
                    "stopped " + ", ".join(f"{child.name} (pid {child.pid})" for child in stopped)
                )
            progress.say(
                f"every process the demo started has ended; its output is in {workdir.root}/"
            )
    return code


def _run(
    options: DemoOptions,
    scenario: Scenario,
    workdir: Workdir,
    children: Children,
    progress: Progress,
) -> None:
    group = Group((options.scenario, scenario), workdir, children, progress)
    group.start()
    pipeline = Pipeline(workdir, children, progress)
    pipeline.start_collector(group.collector_nodes)
    group.show_stats()
    group.show_crash()
    group.kill_agent()
    group.show_events()
    pipeline.stop_collector(options.collect_s)
    pipeline.ingest()
    summary = pipeline.report()
    _headlines(summary, workdir, progress)
    if options.keep_running:
        progress.say(
            f"the agents on {' '.join(group.alive)} keep running until Ctrl-C; try: "
            f"grstats query members --node {group.alive[0]} --extended"
        )
        try:
            while True:
                children.check()
                time.sleep(1.0)
        except KeyboardInterrupt:
            progress.say("Ctrl-C: stopping")


def _headlines(summary: dict[str, Any], workdir: Workdir, progress: Progress) -> None:
    report = workdir.report
    progress.say(f"the report: {report / 'report.html'} (open it in a browser)")
    progress.say(f"for scripts: {report / 'summary.json'}; every table under {report / 'tables'}/")
    for line in headlines(summary):
        progress.detail(line)


def _check_java() -> None:
    java_home = os.environ.get("JAVA_HOME")
    found = (
        Path(java_home, "bin", "java").exists() if java_home else shutil.which("java") is not None
    )
    if not found:
        raise CliError(
            "Java is needed for the Spark report and was not found (JAVA_HOME or java on the "
            "PATH): install Java 17, e.g. sudo apt-get install openjdk-17-jre-headless"
        )
