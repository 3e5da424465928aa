"""The group part of the demo: agents as processes, stats from two of them, a crash, a kill."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, TypeVar

from grstats.agent.config import AgentConfig
from grstats.cli.demo.children import grstats_command
from grstats.cli.demo.ports import free_ports
from grstats.cli.demo.tables import AgentDown, Table, read, read_many
from grstats.cli.errors import CliError

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from grstats.agent.sim.scenario import Scenario
    from grstats.cli.demo.children import Children
    from grstats.cli.demo.progress import Progress
    from grstats.cli.demo.workdir import Workdir

T = TypeVar("T")

#: The members table's columns the demo shows (the others: ``grstats query members``).
MEMBER_COLUMNS = (
    "MEMBER_ID",
    "MEMBER_PORT",
    "MEMBER_STATE",
    "MEMBER_ROLE",
    "CONNECTED",
    "IN_VIEW",
    "AGE_MS",
    "SOURCE",
)
#: Seconds to wait for something the scenario makes happen, past when it should.
MARGIN_S = 30.0
#: Seconds to wait for the agents to start and hear each other.
CONNECT_TIMEOUT_S = 60.0
#: Seconds after the group's start at which the stats are shown.
STATS_AFTER_S = 5.0
#: Seconds between two looks at an agent while waiting.
POLL_S = 0.5
#: Seconds after a member's last read at which it turns CONNECTED NO (the agents' defaults).
_DEFAULTS = {f.name: f.default for f in fields(AgentConfig)}
SILENCE_S = float(_DEFAULTS["silence_periods"] * _DEFAULTS["period_s"])  # type: ignore[operator]


@dataclass(frozen=True, slots=True)
class Roles:
    """Which member plays which part in the demo (0-based indexes)."""

    first: int  #: the stats are shown from this agent and ``second``
    second: int
    crashed: int | None  #: the member the scenario crashes (None: it crashes none)
    crash_at_s: float  #: when, in seconds after the group starts
    killed: int  #: the member whose agent the demo kills
    observer: int  #: the agent that shows the crash and the kill

    @classmethod
    def of(cls, scenario: Scenario) -> Roles:
        """Cast the members of ``scenario``: the crashed one, the killed agent, the observer."""
        if scenario.members < 3:
            raise CliError(
                f"--scenario: {scenario.name!r} has {scenario.members} members; "
                "the demo needs 3 or more",
                code=2,
            )
        crash = next((event for event in scenario.events if event.action == "crash"), None)
        crashed = None if crash is None else crash.member
        others = [index for index in range(scenario.members) if index != crashed]
        return cls(
            first=0,
            second=1,
            crashed=crashed,
            crash_at_s=0.0 if crash is None else crash.at,
            killed=others[0],
            observer=others[1],
        )


class Group:
    """The simulated group's agents, one process each on 127.0.0.1."""

    def __init__(
        self,
        scenario: tuple[str, Scenario],
        workdir: Workdir,
        children: Children,
        progress: Progress,
    ) -> None:
        self.scenario_arg, self.scenario = scenario
        self.roles = Roles.of(self.scenario)
        self._workdir = workdir
        self._children = children
        self._progress = progress
        self.ports = free_ports(self.scenario.members)
        self.nodes = [f"127.0.0.1:{port}" for port in self.ports]
        self.member_ids: list[str] = []
        self.start_s = 0.0
        self.killed = False

    def agent(self, index: int) -> str:
        """The name of agent ``index``'s process."""
        return f"agent {index}"

    @property
    def alive(self) -> list[str]:
        """The addresses of the agents that should be running."""
        return [
            node
            for i, node in enumerate(self.nodes)
            if not (self.killed and i == self.roles.killed)
        ]

    @property
    def collector_nodes(self) -> list[str]:
        """The agents the collector asks: the one the demo kills first, to show the failover."""
        order = [self.roles.killed, self.roles.observer]
        order += [i for i in range(self.scenario.members) if i not in order]
        return [self.nodes[i] for i in order]

    def start(self) -> None:
        """Start one agent process per member and wait until every one lists all, connected."""
        self.start_s = math.ceil(time.time())
        peers = ",".join(self.nodes)
        say = self._progress.say
        say(
            f"starting {self.scenario.members} agents of a simulated group, "
            f"scenario {self.scenario.name!r}"
        )
        self._progress.detail(self.scenario.description)
        for index, node in enumerate(self.nodes):
            child = self._children.start(
                self.agent(index),
                self._agent_command(index, peers, self._workdir.agent_state(index)),
                self._workdir.agent_log(index),
            )
            say(f"started agent {index} (pid {child.pid}) on {node}, log {child.log}")
        self.member_ids = self._wait(
            "every agent to list every member, connected", self._all_connected, CONNECT_TIMEOUT_S
        )
        say(f"every agent lists all {self.scenario.members} members, every agent heard")

    def _agent_command(self, index: int, peers: str, state: Path) -> list[str]:
        """The command of agent ``index``, its registry in ``state``."""
        return grstats_command(
            "agent",
            "--source",
            "simulated",
            "--scenario",
            self.scenario_arg,
            "--members",
            str(self.scenario.members),
            "--member-index",
            str(index),
            "--group-start",
            str(int(self.start_s)),
            "--listen",
            self.nodes[index],
            "--peers",
            peers,
            "--state-dir",
            str(state),
            "--log-format",
            "json",
        )

    def _all_connected(self) -> list[str] | None:
        own: list[str] = []
        for table in read_many(self.nodes, "members"):
            rows = table.records()
            if len(rows) != self.scenario.members or any(r["CONNECTED"] != "YES" for r in rows):
                return None
            own += [str(r["MEMBER_ID"]) for r in rows if r["SOURCE"] == "local"]
        return own if len(own) == self.scenario.members else None

    def show_stats(self) -> None:
        """Print replication_group_member_stats from two agents, read in the same period."""
        first, second = self.nodes[self.roles.first], self.nodes[self.roles.second]
        wait_s = self.start_s + STATS_AFTER_S - time.time()
        if wait_s > 0:
            self._progress.say(f"letting the group run {STATS_AFTER_S:g} s, so its counters move")
            time.sleep(wait_s)
        # Mid-period: both agents hold every member's values of this period.
        time.sleep((0.5 - time.time()) % 1.0)
        tables = read_many([first, second], "stats", extended=False)
        for table in tables:
            self._progress.say(f"replication_group_member_stats as agent {table.node} serves it")
            _detail_command(
                self._progress, f"grstats query stats --node {table.node} --format vertical"
            )
            print(table.render("vertical"), end="", flush=True)
        ours, theirs = tables
        self._progress.say(
            f"agents {first} and {second} serve {len(ours.rows)} rows each: "
            + compare(ours, theirs)
        )

    def show_crash(self) -> None:
        """Wait for the scenario's crash and show the member UNREACHABLE, then OFFLINE, listed."""
        crashed = self.roles.crashed
        if crashed is None:
            self._progress.say(
                f"scenario {self.scenario.name!r} crashes no member: no crash to show"
            )
            return
        member = self.member_ids[crashed]
        observer = self.nodes[self.roles.observer]
        timing = self.scenario.timing
        self._progress.say(
            f"member {crashed} ({member}) crashes {self.roles.crash_at_s:g} s after the group "
            f"started; the group suspects it {timing.suspicion_s:g} s later (UNREACHABLE) and "
            f"expels it {timing.expel_timeout_s:g} s after that"
        )
        unreachable_at = self.start_s + self.roles.crash_at_s + timing.suspicion_s
        self._show_member_state(observer, member, "UNREACHABLE", unreachable_at)
        # Expelled, and unread for the silence (10 periods) since its last read: its agent runs
        # but nothing live is known of the member (CONNECTED NO, grstats.agent.known.connected).
        unread_at = self.start_s + self.roles.crash_at_s + SILENCE_S
        self._show_member_state(
            observer,
            member,
            "OFFLINE",
            max(unreachable_at + timing.expel_timeout_s, unread_at),
            connected="NO",
        )
        self._progress.say(
            f"member {crashed} left the group's view (IN_VIEW NO) and its server has not been "
            f"read for {SILENCE_S:g} s (CONNECTED NO, though its agent runs); it is still listed "
            "as OFFLINE with its last rows; MySQL would no longer list it"
        )

    def _show_member_state(
        self, node: str, member: str, state: str, due_s: float, connected: str | None = None
    ) -> None:
        def seen() -> Table | None:
            table = read(node, "members")
            row = table.member(member)
            if row is None or row["MEMBER_STATE"] != state:
                return None
            return table if connected is None or row["CONNECTED"] == connected else None

        table = self._wait(
            f"{member} to be {state} at {node}", seen, max(0.0, due_s - time.time()) + MARGIN_S
        )
        self._progress.say(f"replication_group_members as agent {node} serves it: {state}")
        _detail_command(self._progress, f"grstats query members --node {node} --extended")
        print(table.only(MEMBER_COLUMNS).render(), end="", flush=True)

    def kill_agent(self) -> None:
        """SIGKILL one agent; show its member still listed, not connected, with its last row."""
        index = self.roles.killed
        node = self.nodes[self.roles.observer]
        member = self.member_ids[index]
        child = self._children.kill(self.agent(index))
        self.killed = True
        self._progress.say(
            f"killed agent {index} (pid {child.pid}) with SIGKILL, as a crash of the agent; "
            f"its member {member} keeps running; the collector, which was asking it, fails over"
        )
        self._progress.say("waiting until the other agents have not heard it for 10 periods (10 s)")

        def not_connected() -> Table | None:
            table = read(node, "members")
            row = table.member(member)
            return table if row is not None and row["CONNECTED"] == "NO" else None

        members = self._wait(f"{member} to be not connected at {node}", not_connected, MARGIN_S)
        stats = read(node, "stats").where_member(member)
        self._progress.say(f"replication_group_members as agent {node} serves it: CONNECTED NO")
        _detail_command(self._progress, f"grstats query members --node {node} --extended")
        print(members.only(MEMBER_COLUMNS).render(), end="", flush=True)
        row = members.member(member) or {}
        self._progress.say(
            f"member {index}'s last replication_group_member_stats row, as agent {node} serves "
            f"it ({row.get('AGE_MS')} ms old: LAST_SEEN is when its agent last sent it)"
        )
        _detail_command(
            self._progress, f"grstats query stats --node {node} --extended --format vertical"
        )
        print(stats.render("vertical"), end="", flush=True)

    def show_events(self) -> None:
        """Start the killed agent again, with nothing remembered: it lists what it never saw.

        Its state directory is a new, empty one: it saw neither the crash nor its own kill,
        and learns both from the other agents (the members' events travel with their values).
        """
        index = self.roles.killed
        node, killed = self.nodes[index], self.member_ids[index]
        crashed = None if self.roles.crashed is None else self.member_ids[self.roles.crashed]
        child = self._children.start(
            f"{self.agent(index)} again",
            self._agent_command(
                index, ",".join(self.nodes), self._workdir.agent_state_again(index)
            ),
            self._workdir.agent_log_again(index),
        )
        self.killed = False
        self._progress.say(
            f"started agent {index} again (pid {child.pid}) on {node}, with an empty state "
            "directory: it saw neither the crash nor its own kill"
        )

        def told() -> Table | None:
            table = read(node, "events", extended=False)
            rows = table.records()
            crash = crashed is None or any(
                r["MEMBER_ID"] == crashed and r["NEW_VALUE"] == "UNREACHABLE" for r in rows
            )
            silence = any(
                r["MEMBER_ID"] == killed and r["EVENT_TYPE"] == "AGENT_SILENT" for r in rows
            )
            return table if crash and silence else None

        events = self._wait(f"{node} to list the crash and the kill", told, MARGIN_S)
        self._progress.say(
            f"replication_group_events as the new agent {node} serves it: the crash and the "
            "kill, as the agents that saw them recorded them (REPORTED_BY)"
        )
        _detail_command(self._progress, f"grstats query events --node {node}")
        print(events.only(EVENT_COLUMNS).render(), end="", flush=True)

    def _wait(self, what: str, check: Callable[[], T | None], timeout_s: float) -> T:
        deadline = time.monotonic() + timeout_s
        last_error = ""
        while time.monotonic() < deadline:
            self._children.check()
            try:
                found = check()
            except AgentDown as exc:
                found, last_error = None, f" (last error: {exc})"
            if found is not None:
                return found
            time.sleep(POLL_S)
        raise CliError(f"waited {timeout_s:.0f} s for {what}, in vain{last_error}")


#: The columns of the events the demo prints (VIEW_ID left out, for width).
EVENT_COLUMNS = (
    "EVENT_TIME",
    "MEMBER_ID",
    "EVENT_TYPE",
    "OLD_VALUE",
    "NEW_VALUE",
    "REPORTED_BY",
    "DETAIL",
)

#: Columns that travel every 30 s (GTIDs), not every period like the counts.
GTID_COLUMNS = frozenset({"TRANSACTIONS_COMMITTED_ALL_MEMBERS", "LAST_CONFLICT_FREE_TRANSACTION"})


def compare(ours: Table, theirs: Table) -> str:
    """Say how two agents' copies of one table, read at the same moment, differ."""
    if ours.rows == theirs.rows:
        return "the same rows, value for value"
    if [r["MEMBER_ID"] for r in ours.records()] != [r["MEMBER_ID"] for r in theirs.records()]:
        return "different members (one agent has not heard of every member yet)"
    differing = sorted(
        {
            column
            for row, other in zip(ours.records(), theirs.records(), strict=True)
            for column, value in row.items()
            if other[column] != value
        }
    )
    text = f"the same members; they differ only in {', '.join(differing)}"
    if GTID_COLUMNS.issuperset(differing):
        text += (
            " (GTID columns travel every 30 s, the counts every period: another agent's copy "
            "of a member's GTIDs can be up to 30 s older than the member's own)"
        )
    return text


def _detail_command(progress: Progress, command: str) -> None:
    progress.detail(f"(the same as: {command})")
