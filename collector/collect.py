"""The collector's loop: on every tick, one snapshot of each group from its poller into the spool.

One loop serves every group the collector polls (one :class:`Poller` per group, all on one
interval). At each tick it starts the poll of every group whose previous poll has ended, each
in a task of its own, and does not wait for them: a group whose agents are slow or down never
delays another group's snapshot. A group still polling at a tick skips that tick (counted, and
logged as ``polls_skipped`` with its label when its next poll starts), never made up in a
burst. Each record goes to the one spool as its poll completes (completion order), through a
:class:`~grstats.collector.committer.SpoolCommitter`: the writes and fsyncs run on a thread of
their own, the records that complete while one batch is written go together in the next, one
fsync for all (group commit). A group's poll ends when its record is in the spool, so with
``--fsync record`` each snapshot of a group is on disk before that group's next poll starts.

Limits of one collector: at most one poll in flight per group, so at most one record per group
in memory; one gRPC channel per agent a group's poller has asked (its current agent, plus the
ones it failed over from); every poll and decode runs on the one event loop thread, the spool's
writes and fsyncs on the committer's (see docs/benchmarks.md for 50 groups of 5 at 1 s).

It runs until ``stop`` is set (SIGTERM, Ctrl-C), or after ``count`` snapshots (all groups
together) or ``duration_s`` seconds; then it cancels the polls still waiting for an answer and
waits for the records already handed to the spool. Before each tick it seals the open segment
if it is due by age. It keeps going when no agent of a group answers
(``no_agent_answered`` with the group's label, logged when it starts and then once per summary
period) and logs ``collector_summary`` every ``summary_every_s``. It does not close the spool
writer: its owner does, which seals the open segment. Given metrics, it counts the snapshots,
failed polls and failovers of each group (its poller's ``settings.label``) as they happen.

A group is known by its poller's ``settings.label`` in the metrics, the logs and the progress:
the label the operator gave it, ``default`` for the one group of ``--node``. That group's
records are named by the label its agents answer
(:func:`~grstats.collector.records.record_from_response`), which may come only after the
first answers, or change; a metric's series keeps one label for the run, so the name the
records took last is in the group's progress (:attr:`GroupProgress.group_label`), not in the
metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from grstats.collector.committer import SpoolCommitter
from grstats.collector.errors import NoAgentAnswered
from grstats.collector.poller import Fleet, Schedule
from grstats.collector.records import RecordKey
from grstats.core.checks import check_int, check_number

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from structlog.typing import FilteringBoundLogger

    from grstats.collector.metrics import CollectorMetrics, GroupMetrics
    from grstats.collector.poller import Poller
    from grstats.collector.records import Record
    from grstats.collector.spool import SpoolWriter


@dataclass(frozen=True, slots=True)
class Limits:
    """When the loop stops on its own, and how often it reports.

    Attributes:
        count: stop after this many snapshots (None: never).
        duration_s: stop after this many seconds (None: never).
        summary_every_s: seconds between ``collector_summary`` log lines.
    """

    count: int | None = None
    duration_s: float | None = None
    summary_every_s: float = 60.0

    def __post_init__(self) -> None:
        if self.count is not None:
            check_int("count", self.count, 1, accepted="a whole number of snapshots >= 1")
        if self.duration_s is not None:
            _check_positive_seconds("duration_s", self.duration_s)
        _check_positive_seconds("summary_every_s", self.summary_every_s)


def _check_positive_seconds(name: str, value: object) -> None:
    """Any number of seconds over 0 (infinity too: never)."""
    check_number(name, value, 0, open_low=True, accepted="a number of seconds > 0")


@dataclass(slots=True)
class GroupProgress:
    """What the loop did so far for one group.

    Attributes:
        snapshots: records of the group appended to the spool.
        failed_polls: polls of the group that no agent answered.
        skipped_ticks: ticks the group skipped because its previous poll overran.
        failovers: times its poller moved on from an agent that stopped answering.
        agent: the agent its next poll asks first.
        group_name: GR's group name in its last record ("" before one, or while unknown).
        group_label: the ``group_label`` of its last record ("" before one): the label the
            operator gave, or for the group of ``--node`` the one its agents answer.
    """

    snapshots: int = 0
    failed_polls: int = 0
    skipped_ticks: int = 0
    failovers: int = 0
    agent: str = ""
    group_name: str = ""
    group_label: str = ""


@dataclass(slots=True)
class Progress:
    """What the loop did so far, all groups together, and each group's part.

    Attributes:
        snapshots: records appended to the spool.
        failed_polls: polls no agent answered.
        skipped_ticks: ticks skipped because a poll overran (a tick skipped by two groups
            counts twice).
        failovers: times the pollers moved on from an agent that stopped answering.
        segments_sealed: segments the writer sealed (recovered ones included).
        last_sequence: the highest segment sequence number used.
        bytes: frame bytes appended.
        agent: the agent the next poll of the first group asks first.
        elapsed_s: seconds since the loop started.
        groups: each group's progress, by its poller's ``settings.label``, in the order the
            groups were given.
    """

    snapshots: int = 0
    failed_polls: int = 0
    skipped_ticks: int = 0
    failovers: int = 0
    segments_sealed: int = 0
    last_sequence: int = 0
    bytes: int = 0
    agent: str = ""
    elapsed_s: float = 0.0
    groups: dict[str, GroupProgress] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The progress as a JSON-ready dict."""
        return asdict(self)

    def totals(self) -> dict[str, Any]:
        """The progress without the groups' parts (for log lines of many groups)."""
        return {name: value for name, value in self.as_dict().items() if name != "groups"}


async def collect(  # noqa: PLR0913  (the loop's collaborators are explicit)
    pollers: Sequence[Poller],
    writer: SpoolWriter,
    stop: asyncio.Event,
    *,
    limits: Limits | None = None,
    clock: Callable[[], float] = time.monotonic,
    logger: FilteringBoundLogger,
    metrics: CollectorMetrics | None = None,
) -> Progress:
    """Poll every group each ``interval_s`` into ``writer`` until stopped; return progress.

    ``pollers`` has one poller per group, with distinct labels and one interval. ``metrics``
    (when given) counts under each poller's ``settings.label``.

    Raises:
        ConfigError: no poller, two with one label, or pollers of different intervals.
    """
    run = _Run(pollers, writer, limits or Limits(), clock, logger, metrics=metrics)
    interval_s = run.interval_s
    logger.info(
        "collector_started",
        groups={group.label: list(group.poller.settings.nodes) for group in run.groups},
        interval_s=interval_s,
        spool=str(writer.directory),
    )
    schedule = Schedule(interval_s)
    deadline = None if run.limits.duration_s is None else run.started + run.limits.duration_s
    linked = asyncio.ensure_future(_link(stop, run.wake))
    try:
        while not run.wake.is_set():
            delay, missed = schedule.next(clock())
            if missed:
                run.missed(missed)
            if deadline is not None and clock() + delay >= deadline:
                await _wait(run.wake, max(0.0, deadline - clock()))
                break
            if await _wait(run.wake, delay):
                break
            run.tick()
            run.report_if_due()
    finally:
        linked.cancel()
        try:
            await run.cancel_polls()
        finally:
            await run.committer.aclose()
    if run.failure is not None:
        raise run.failure
    logger.info("collector_stopped", **run.update().totals())
    return run.progress


class _Group:
    """One group's poller, its poll in flight, and its counts."""

    def __init__(self, poller: Poller, metrics: GroupMetrics | None) -> None:
        self.poller = poller
        self.label = poller.settings.label
        self.metrics = metrics
        self.task: asyncio.Task[None] | None = None
        self.committing = False  # its poll has answered and waits for the spool
        self.progress = GroupProgress(agent=poller.node)
        self.failure_reported = False
        self.failovers_counted = poller.failovers
        self.skipped = 0  # ticks skipped since its poll started

    @property
    def polling(self) -> bool:
        """Whether its last poll is still in flight."""
        return self.task is not None and not self.task.done()

    def count_failovers(self) -> None:
        """Pass the failovers of the poller's last poll on to the metrics."""
        moved = self.poller.failovers - self.failovers_counted
        if self.metrics is not None:
            self.metrics.failed_over(moved)
        self.failovers_counted = self.poller.failovers
        self.progress.failovers = self.poller.failovers
        self.progress.agent = self.poller.node


class _Run:
    """The state of one :func:`collect` loop."""

    def __init__(  # noqa: PLR0913  (the loop's collaborators are explicit)
        self,
        pollers: Sequence[Poller],
        writer: SpoolWriter,
        limits: Limits,
        clock: Callable[[], float],
        logger: FilteringBoundLogger,
        *,
        metrics: CollectorMetrics | None,
    ) -> None:
        self.interval_s = Fleet(tuple(poller.settings for poller in pollers)).interval_s
        self.groups = [
            _Group(poller, None if metrics is None else metrics.group(poller.settings.label))
            for poller in pollers
        ]
        self.writer, self.limits = writer, limits
        self.committer = SpoolCommitter(writer)
        self.submitted = 0  # records handed to the committer
        self.clock, self.log = clock, logger
        self.progress = Progress(groups={group.label: group.progress for group in self.groups})
        self.started = self.last_summary = clock()
        self.wake = asyncio.Event()  #: set by stop, by the count reached, or by a failure
        self.failure: BaseException | None = None

    def tick(self) -> None:
        """Start the poll of every group whose last poll has ended; the others skip this tick."""
        self.committer.roll_if_due()
        for group in self.groups:
            if group.polling:
                group.skipped += 1
                group.progress.skipped_ticks += 1
                self.progress.skipped_ticks += 1
                continue
            if group.skipped:
                self.log.warning(
                    "polls_skipped",
                    group_label=group.label,
                    missed=group.skipped,
                    interval_s=self.interval_s,
                )
                group.skipped = 0
            group.task = asyncio.ensure_future(self._poll(group))

    def missed(self, ticks: int) -> None:
        """Count ``ticks`` that the loop itself passed (it was late) for every group."""
        for group in self.groups:
            group.progress.skipped_ticks += ticks
        self.progress.skipped_ticks += ticks * len(self.groups)
        self.log.warning("polls_skipped", missed=ticks, interval_s=self.interval_s)

    async def _poll(self, group: _Group) -> None:
        """Take one snapshot of ``group`` into the spool; a failure but no answer ends the loop."""
        try:
            record = await group.poller.poll()
        except NoAgentAnswered as exc:
            group.count_failovers()
            self._unanswered(group, exc)
            return
        except Exception as exc:  # noqa: BLE001  (handed to collect(), which raises it)
            self._fail(exc)
            return
        group.count_failovers()
        if self.wake.is_set():
            return  # stopped, or the count reached by another group meanwhile
        if self.limits.count is not None and self.submitted >= self.limits.count:
            return  # the count is reached once the records handed over are in the spool
        self.submitted += 1
        group.committing = True
        try:
            await self.committer.append(record)
        except Exception as exc:  # noqa: BLE001  (handed to collect(), which raises it)
            self._fail(exc)
            return
        finally:
            group.committing = False
        self._appended(group, record)

    def _appended(self, group: _Group, record: Record) -> None:
        self.progress.snapshots += 1
        group.progress.snapshots += 1
        group.progress.group_name = record[RecordKey.GROUP_NAME]
        group.progress.group_label = record[RecordKey.GROUP_LABEL]
        if group.metrics is not None:
            group.metrics.snapshot_written(record[RecordKey.COLLECTED_AT_US] / 1e6)
        group.failure_reported = False
        if self.limits.count is not None and self.progress.snapshots >= self.limits.count:
            self.wake.set()

    def _unanswered(self, group: _Group, exc: NoAgentAnswered) -> None:
        self.progress.failed_polls += 1
        group.progress.failed_polls += 1
        if group.metrics is not None:
            group.metrics.poll_failed()
        if not group.failure_reported:
            self.log.warning("no_agent_answered", group_label=group.label, error=str(exc))
            group.failure_reported = True

    def _fail(self, exc: BaseException) -> None:
        if self.failure is None:
            self.failure = exc
        self.wake.set()

    async def cancel_polls(self) -> None:
        """Cancel the polls waiting for an answer; wait until every poll has ended.

        A poll whose record was handed to the spool is not cancelled: it ends (and counts)
        once its record is written.
        """
        tasks = [group.task for group in self.groups if group.task is not None]
        for group in self.groups:
            if group.task is not None and not group.committing:
                group.task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def report_if_due(self) -> None:
        """Log ``collector_summary`` once every ``summary_every_s``."""
        if self.clock() - self.last_summary >= self.limits.summary_every_s:
            self.last_summary = self.clock()
            unanswered = [group.label for group in self.groups if group.failure_reported]
            self.log.info(
                "collector_summary",
                **self.update().totals(),
                groups=len(self.groups),
                groups_unanswered=unanswered,
            )
            for group in self.groups:
                group.failure_reported = False

    def update(self) -> Progress:
        """Refresh the progress figures that the pollers and the writer keep."""
        progress = self.progress
        progress.failovers = sum(group.poller.failovers for group in self.groups)
        progress.segments_sealed = self.writer.sealed
        progress.last_sequence = self.writer.last_sequence
        progress.bytes = self.writer.appended_bytes
        progress.agent = self.groups[0].poller.node
        progress.elapsed_s = round(self.clock() - self.started, 3)
        return progress


async def _link(stop: asyncio.Event, wake: asyncio.Event) -> None:
    """Set ``wake`` once ``stop`` is set."""
    await stop.wait()
    wake.set()


async def _wait(event: asyncio.Event, seconds: float) -> bool:
    """Wait ``seconds``; return True at once if ``event`` is set meanwhile."""
    if seconds <= 0:
        return event.is_set()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), seconds)
    return event.is_set()
