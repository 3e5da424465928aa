"""Asking the agents: one snapshot per poll from the first agent that answers, and the schedule.

:class:`Poller` keeps asking the agent that answered last. When it stops answering
(UNAVAILABLE: refused or stopped; DEADLINE_EXCEEDED: hung or too slow; any other failed call or
an answer that is not a whole snapshot), the same poll asks the next ``--node``, round robin,
and logs ``agent_failover``; the poller then stays with the agent that answered. Any agent
serves every member's rows, so which one answers changes nothing but the record's ``agent``.

Every :attr:`PollerSettings.events_every_s` (and on the first poll) the poll also asks the
agent that answered for the group's events, in a call of its own: the recent ones, and the
whole list hourly, at the first ask and after a failover. An agent older than the events
table refuses it (logged once, ``events_unavailable``) and the snapshot is spooled all the
same. The record holds only the events not taken before (:mod:`grstats.collector.events`).
The same polls ask, in one more call, for every member's Group Replication log lines
(``replication_group_member_log``, its whole list: the agent keeps each member's last 200),
and the record holds those not taken before under ``log``; an agent older than the table
refuses it (``log_unavailable``, logged once) and the record holds no lines.

:class:`Schedule` spaces polls ``interval_s`` apart on a fixed grid; when a poll overruns, the
ticks it covered are skipped (and counted), never made up in a burst.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import grpc
import structlog

from grstats.collector import records
from grstats.collector.errors import NoAgentAnswered, RecordError
from grstats.collector.events import NewEvents
from grstats.collector.groups import check_label
from grstats.collector.records import (
    EVENTS_TABLE,
    LOG_TABLE,
    TABLE_NAMES,
    RecordKey,
    events_from_response,
    log_from_response,
    record_from_response,
)
from grstats.core.address import split_address
from grstats.core.checks import check_number
from grstats.core.errors import ConfigError
from grstats.core.query_wire import query_request
from grstats.core.security import Security
from grstats.proto import grstats_pb2 as pb
from grstats.proto import grstats_pb2_grpc as pb_grpc

if TYPE_CHECKING:
    from collections.abc import Callable

    from structlog.typing import FilteringBoundLogger

    from grstats.collector.records import Cell, Record

#: Shortest and longest interval between polls, seconds.
INTERVAL_RANGE_S = (1.0, 3600.0)
#: Longest time to wait for one agent's answer, seconds.
MAX_TIMEOUT_S = 60.0
#: How often a poll also asks for the group's events, seconds: an event is spooled at most
#: this long after the agent asked holds it (its EVENT_TIME is its own, whenever spooled).
EVENTS_EVERY_S = 10.0
#: How far back, by the answering agent's clock, the asks between whole lists reach, seconds:
#: an event that reaches the agent later than this after its EVENT_TIME (its reporter cut off,
#: or its clock behind by more) waits for the next whole list.
EVENTS_LATE_S = 600.0
#: How often a poll asks for the agent's whole list of events, seconds (besides the first ask
#: and the first after a failover).
EVENTS_WHOLE_EVERY_S = 3600.0
#: The label of the one group of ``--node``: its metrics', logs' and progress' ``group_label``
#: always, its records' while its agents answer no label of their own.
DEFAULT_GROUP_LABEL = records.DEFAULT_GROUP_LABEL
# Reconnect soon to an agent that comes back (gRPC's default backoff grows to 120 s).
_CHANNEL_OPTIONS = [
    ("grpc.initial_reconnect_backoff_ms", 500),
    ("grpc.max_reconnect_backoff_ms", 5000),
]


@dataclass(slots=True)
class _RecentRows:
    """A table a poller asks for every EVENTS_EVERY_S and spools the new rows of (events, log).

    Attributes:
        table: the table's name; ``key`` the record's key its new rows go under, ``name``
            what the logs call it (``<name>_unavailable``), ``read`` the answer's reader.
        rows: what was spooled of it already (a row is its whole row).
        whole_us: when a poll last had its whole list (None: never).
        source: the agent whose answer was taken last; ``served_us`` its clock then.
        failing: whether the last ask failed (logged once until one succeeds).
    """

    table: str
    key: str
    name: str
    read: Callable[..., tuple[list[str], list[list[Cell]]]]
    rows: NewEvents = field(default_factory=NewEvents)
    whole_us: int | None = None
    source: str = ""
    served_us: int = 0
    failing: bool = False


@dataclass(frozen=True, slots=True)
class PollerSettings:
    """Which agents to ask, how often and how long to wait.

    Attributes:
        nodes: the agents' ``host:port``, in the order they are tried; at least one.
        interval_s: seconds between snapshots, 1 to 3600.
        timeout_s: seconds to wait for one agent before trying the next, over 0 up to 60.
        group_label: the operator's name of the group these agents serve (``--group``,
            ``[[groups]]``), a group label (:func:`grstats.collector.groups.check_label`); it
            names the group in its records (``group_label``), whatever label the agents
            answer. None (default: the one group of ``--node``, not named by the operator):
            each record takes the label
            its agent answers (``QueryResponse.group_label``), :data:`DEFAULT_GROUP_LABEL`
            while it answers none. The collector's own metrics, logs and progress name the
            group by :attr:`label` either way.
        events_every_s: a poll also asks for the group's events when this long has passed
            since the last poll that did (the first poll always does); 0: every poll.
    """

    nodes: tuple[str, ...]
    interval_s: float = 1.0
    timeout_s: float = 2.0
    group_label: str | None = None
    events_every_s: float = EVENTS_EVERY_S

    def __post_init__(self) -> None:
        if not self.nodes:
            raise ConfigError("nodes: () is empty; give at least one agent's host:port")
        for index, node in enumerate(self.nodes):
            split_address(node, f"nodes[{index}]")
        low, high = INTERVAL_RANGE_S
        check_number(
            "interval_s",
            self.interval_s,
            low,
            high,
            accepted=f"a number of seconds from {low:g} to {high:g}",
        )
        check_number(
            "timeout_s",
            self.timeout_s,
            0,
            MAX_TIMEOUT_S,
            open_low=True,
            accepted=f"a number of seconds over 0 up to {MAX_TIMEOUT_S:g}",
        )
        if self.group_label is not None:
            check_label("group_label", self.group_label)
        check_number(
            "events_every_s",
            self.events_every_s,
            0,
            86400,
            accepted="a number of seconds from 0 to 86400",
        )

    @property
    def label(self) -> str:
        """The group's label in the collector's ``/metrics``, logs and progress: fixed for a run.

        ``group_label``, or :data:`DEFAULT_GROUP_LABEL` when none was given. The label the
        agents answer is not taken here: it may come only after the first answers, and may
        change, while a series' labels must not.
        """
        return DEFAULT_GROUP_LABEL if self.group_label is None else self.group_label


@dataclass(frozen=True, slots=True)
class Fleet:
    """The groups one collector polls, each with its agents, all on one interval.

    Attributes:
        groups: one :class:`PollerSettings` per group, in the order given; at least one,
            labels (:attr:`PollerSettings.label`) unique, one ``interval_s``.
    """

    groups: tuple[PollerSettings, ...]

    def __post_init__(self) -> None:
        if not self.groups:
            raise ConfigError("groups: () is empty; give at least one group to poll")
        labels: set[str] = set()
        for group in self.groups:
            if group.label in labels:
                raise ConfigError(
                    f"group_label: {group.label!r} names two groups; labels are unique"
                )
            labels.add(group.label)
            if group.interval_s != self.interval_s:
                raise ConfigError(
                    f"interval_s: {group.interval_s!r} of group {group.label!r} is not "
                    f"the {self.interval_s!r} of the first; one collector has one interval"
                )

    @property
    def interval_s(self) -> float:
        """Seconds between ticks, the same for every group."""
        return self.groups[0].interval_s


class Poller:
    """Takes one snapshot per :meth:`poll`, failing over between agents; see the module docstring.

    Args:
        settings: the agents, interval and timeout.
        clock_us: the collector's wall clock, µs since the epoch (stamps ``collected_at_us``).
        logger: where ``agent_failover`` and ``agent_answering`` go.
        security: TLS and token of the calls (default: plain gRPC, no token).
    """

    def __init__(
        self,
        settings: PollerSettings,
        *,
        clock_us: Callable[[], int] = lambda: time.time_ns() // 1000,
        logger: FilteringBoundLogger | None = None,
        security: Security | None = None,
    ) -> None:
        self.settings = settings
        self._security = security or Security()
        self._clock_us = clock_us
        self._log: FilteringBoundLogger = logger or structlog.get_logger()
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._index = 0
        self._answering = True  # until a poll fails; failovers are logged on the way down
        self.failovers = 0  #: times the poller moved on from an agent that stopped answering
        # Says this collector's protocol revision: an agent sends only the columns it types.
        self._request = query_request(TABLE_NAMES, extended=True)
        self._events = _RecentRows(EVENTS_TABLE, RecordKey.EVENTS, "events", events_from_response)
        # a line, as an event, is its whole row, asked for the same way
        self._member_log = _RecentRows(LOG_TABLE, RecordKey.LOG, "log", log_from_response)
        self._events_asked_us: int | None = None  # when a poll last had the events

    @property
    def node(self) -> str:
        """The agent the next poll asks first."""
        return self.settings.nodes[self._index]

    async def poll(self) -> Record:
        """Return one snapshot of all four tables, from the first agent that answers.

        Raises:
            NoAgentAnswered: every agent failed this poll; the message names each one and why.
        """
        nodes = self.settings.nodes
        failures = []
        for _ in nodes:
            node = nodes[self._index]
            collected_at_us = self._clock_us()
            try:
                response = await self._read(node)
                record = record_from_response(
                    response,
                    agent=node,
                    collected_at_us=collected_at_us,
                    group_label=self.settings.group_label,
                )
            except grpc.aio.AioRpcError as exc:
                reason = self._describe(exc)
            except RecordError as exc:
                reason = str(exc)
            else:
                if not self._answering:
                    self._log.info("agent_answering", node=node)
                    self._answering = True
                if self._events_due(collected_at_us):
                    for asked in (self._events, self._member_log):
                        await self._add_recent(asked, node, record, collected_at_us)
                return record
            failures.append(f"{node}: {reason}")
            self._index = (self._index + 1) % len(nodes)
            if self._answering and len(nodes) > 1:
                self.failovers += 1
                self._log.warning("agent_failover", node=node, next=self.node, reason=reason)
        self._answering = False
        raise NoAgentAnswered("no agent answered: " + "; ".join(failures))

    def _events_due(self, collected_at_us: int) -> bool:
        """Whether this poll asks for the events and the log (then it is their last ask)."""
        asked = self._events_asked_us
        due = self.settings.events_every_s * 1_000_000
        if asked is not None and collected_at_us - asked < due:
            return False
        self._events_asked_us = collected_at_us
        return True

    async def _add_recent(
        self, asked: _RecentRows, node: str, record: Record, collected_at_us: int
    ) -> None:
        """Ask ``node`` for ``asked``'s table and add the rows not spooled yet to ``record``.

        The whole table at the first ask, after a failover and every EVENTS_WHOLE_EVERY_S; in
        between only the rows of the last EVENTS_LATE_S by the agent's clock
        (``QueryRequest.events_since_us``, which the agent applies to the events' EVENT_TIME
        and the log lines' LOGGED). A failed call leaves the record as it is (the snapshot is
        spooled; the table is asked again when due again), logged once until a call succeeds.
        An agent older than a table refuses its name (INVALID_ARGUMENT): the same.
        """
        whole = (
            node != asked.source
            or asked.whole_us is None
            or collected_at_us - asked.whole_us >= EVENTS_WHOLE_EVERY_S * 1_000_000
        )
        since = 0 if whole else max(1, asked.served_us - int(EVENTS_LATE_S * 1_000_000))
        request = query_request([asked.table], events_since_us=since)
        try:
            response = await self._call(node, request)
            columns, rows = asked.read(response, agent=node)
        except grpc.aio.AioRpcError as exc:
            reason = self._describe(exc)
        except RecordError as exc:
            reason = str(exc)
        else:
            if asked.failing:
                self._log.info(f"{asked.name}_available", node=node)
                asked.failing = False
            new = asked.rows.take(columns, rows, whole=whole)
            asked.source, asked.served_us = node, response.served_at_us
            if whole:
                asked.whole_us = collected_at_us
            if new:
                record[asked.key] = {RecordKey.COLUMNS: columns, RecordKey.ROWS: new}
            return
        if not asked.failing:
            self._log.warning(f"{asked.name}_unavailable", node=node, reason=reason)
            asked.failing = True

    async def _read(self, node: str) -> pb.QueryResponse:
        return await self._call(node, self._request)

    async def _call(self, node: str, request: pb.QueryRequest) -> pb.QueryResponse:
        channel = self._channels.get(node)
        if channel is None:
            channel = self._security.channel(node, _CHANNEL_OPTIONS)
            self._channels[node] = channel
        stub = pb_grpc.QueryStub(channel)
        response: pb.QueryResponse = await stub.Read(
            request,
            timeout=self.settings.timeout_s,
            metadata=self._security.metadata,
        )
        return response

    def _describe(self, exc: grpc.aio.AioRpcError) -> str:
        code = exc.code()
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return f"no answer within {self.settings.timeout_s:g} s"
        if code == grpc.StatusCode.UNAVAILABLE:
            return f"unavailable ({exc.details()})"
        return f"{code.name}: {exc.details()}"

    async def aclose(self) -> None:
        """Close the channels."""
        channels, self._channels = self._channels, {}
        for channel in channels.values():
            await channel.close()


class Schedule:
    """Ticks ``interval_s`` apart on a fixed grid from the first; overdue ticks are skipped.

    A poll that overruns its interval makes the ticks it covered miss: the next poll waits for
    the next tick on the grid, so polls never bunch up and stay evenly spaced.

    Args:
        interval_s: seconds between ticks.
    """

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._next: float | None = None

    def next(self, now: float) -> tuple[float, int]:
        """Return (seconds to wait for the next tick, ticks skipped since the last) at ``now``.

        The first call returns ``(0, 0)``: poll at once; it anchors the grid.
        """
        if self._next is None:
            self._next = now
            return 0.0, 0
        self._next += self.interval_s
        missed = 0
        if now > self._next:
            missed = math.ceil((now - self._next) / self.interval_s)
            self._next += missed * self.interval_s
        return max(0.0, self._next - now), missed
