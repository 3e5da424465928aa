"""The collector's loop: every interval one snapshot from the poller into the spool.

It runs until ``stop`` is set (SIGTERM, Ctrl-C), or after ``count`` snapshots or
``duration_s`` seconds. Before each poll it seals the open segment if it is due by age. It
keeps going when no agent answers (``no_agent_answered``, logged when it starts and then once
per summary period) and logs ``collector_summary`` every ``summary_every_s``. It does not close
the spool writer: its owner does, which seals the open segment. Given metrics, it counts the
snapshots, failed polls and failovers of its group (the poller's ``group_label``) as they happen.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from grstats.agent.checks import check_int, check_number
from grstats.collector.errors import NoAgentAnswered
from grstats.collector.poller import Schedule

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

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
class Progress:
    """What the loop did so far.

    Attributes:
        snapshots: records appended to the spool.
        failed_polls: polls no agent answered.
        skipped_ticks: ticks skipped because a poll overran.
        failovers: times the poller moved on from an agent that stopped answering.
        segments_sealed: segments the writer sealed (recovered ones included).
        last_sequence: the highest segment sequence number used.
        bytes: frame bytes appended.
        agent: the agent the next poll asks first.
        elapsed_s: seconds since the loop started.
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

    def as_dict(self) -> dict[str, Any]:
        """The progress as a JSON-ready dict."""
        return asdict(self)


async def collect(  # noqa: PLR0913  (the loop's collaborators are explicit)
    poller: Poller,
    writer: SpoolWriter,
    stop: asyncio.Event,
    *,
    limits: Limits | None = None,
    clock: Callable[[], float] = time.monotonic,
    logger: FilteringBoundLogger,
    metrics: CollectorMetrics | None = None,
) -> Progress:
    """Poll every ``poller.settings.interval_s`` into ``writer`` until stopped; return progress.

    ``metrics`` (when given) counts under the label ``poller.settings.group_label``.
    """
    group = None if metrics is None else metrics.group(poller.settings.group_label)
    run = _Run(poller, writer, limits or Limits(), clock, logger, metrics=group)
    logger.info(
        "collector_started",
        nodes=list(poller.settings.nodes),
        interval_s=poller.settings.interval_s,
        spool=str(writer.directory),
    )
    schedule = Schedule(poller.settings.interval_s)
    deadline = None if run.limits.duration_s is None else run.started + run.limits.duration_s
    while not stop.is_set():
        delay, missed = schedule.next(clock())
        if missed:
            run.progress.skipped_ticks += missed
            logger.warning("polls_skipped", missed=missed, interval_s=schedule.interval_s)
        if deadline is not None and clock() + delay >= deadline:
            await _wait(stop, max(0.0, deadline - clock()))
            break
        if await _wait(stop, delay) or not await run.tick(stop):
            break
        run.report_if_due()
    logger.info("collector_stopped", **run.update().as_dict())
    return run.progress


class _Run:
    """The state of one :func:`collect` loop."""

    def __init__(  # noqa: PLR0913  (the loop's collaborators are explicit)
        self,
        poller: Poller,
        writer: SpoolWriter,
        limits: Limits,
        clock: Callable[[], float],
        logger: FilteringBoundLogger,
        *,
        metrics: GroupMetrics | None,
    ) -> None:
        self.poller, self.writer, self.limits = poller, writer, limits
        self.clock, self.log, self.metrics = clock, logger, metrics
        self.progress = Progress()
        self.started = self.last_summary = clock()
        self.failure_reported = False
        self.failovers_counted = poller.failovers

    async def tick(self, stop: asyncio.Event) -> bool:
        """Take one snapshot into the spool; return False when the loop should end."""
        self.writer.roll_if_due()
        try:
            record = await _unless_stopped(self.poller.poll(), stop)
        except NoAgentAnswered as exc:
            self.progress.failed_polls += 1
            if self.metrics is not None:
                self.metrics.poll_failed()
            if not self.failure_reported:
                self.log.warning("no_agent_answered", error=str(exc))
                self.failure_reported = True
            return True
        finally:
            self.count_failovers()
        if record is None:
            return False
        self.writer.append(record)
        self.progress.snapshots += 1
        if self.metrics is not None:
            self.metrics.snapshot_written(record["collected_at_us"] / 1e6)
        self.failure_reported = False
        return self.limits.count is None or self.progress.snapshots < self.limits.count

    def count_failovers(self) -> None:
        """Pass the failovers of the poller's last poll on to the metrics."""
        if self.metrics is not None:
            self.metrics.failed_over(self.poller.failovers - self.failovers_counted)
        self.failovers_counted = self.poller.failovers

    def report_if_due(self) -> None:
        """Log ``collector_summary`` once every ``summary_every_s``."""
        if self.clock() - self.last_summary >= self.limits.summary_every_s:
            self.last_summary = self.clock()
            self.log.info("collector_summary", **self.update().as_dict())
            self.failure_reported = False

    def update(self) -> Progress:
        """Refresh the progress figures that the poller and the writer keep."""
        progress = self.progress
        progress.failovers = self.poller.failovers
        progress.segments_sealed = self.writer.sealed
        progress.last_sequence = self.writer.last_sequence
        progress.bytes = self.writer.appended_bytes
        progress.agent = self.poller.node
        progress.elapsed_s = round(self.clock() - self.started, 3)
        return progress


async def _wait(stop: asyncio.Event, seconds: float) -> bool:
    """Wait ``seconds``; return True at once if ``stop`` is set meanwhile."""
    if seconds <= 0:
        return stop.is_set()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
    return stop.is_set()


async def _unless_stopped(work: Coroutine[Any, Any, Record], stop: asyncio.Event) -> Record | None:
    """Await ``work``; if ``stop`` is set first, cancel it and return None."""
    task = asyncio.ensure_future(work)
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait((task, stopper), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return None
