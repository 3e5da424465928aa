"""Group commit: the collector's records reach the spool in batches, off the event loop.

:class:`SpoolCommitter` owns the :class:`~grstats.collector.spool.SpoolWriter` for the time of
one :func:`~grstats.collector.collect.collect` loop. Every call into the writer runs on the
committer's one thread, one at a time, so the loop thread never blocks on a write or an fsync.

Calling contract: :meth:`SpoolCommitter.append` is called from the event loop by any number of
tasks at once, once per record; it returns (with the record's position) when the record is
in the spool as the writer's policy says, so with ``--fsync record`` when it is fsynced. The
records that arrive while a batch is being written wait and go together in the next batch:
one write and one fsync for all of them (group commit). With 50 groups polled on one tick,
a tick costs a few fsyncs instead of 50, and none of them the loop's time.

:meth:`SpoolCommitter.roll_if_due` asks for the age check of the open segment on the same
thread, before the next batch. :meth:`SpoolCommitter.drain` waits until every record handed
over has been written (or failed); :meth:`SpoolCommitter.aclose` drains and stops the thread,
and the owner calls it before it closes the writer.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from grstats.collector.spool import Position, SpoolWriter


class SpoolCommitter:
    """Appends records from many tasks to one writer in batches, on a thread of its own.

    Args:
        writer: the spool writer; nothing else may call it until :meth:`drain` has returned.
    """

    def __init__(self, writer: SpoolWriter) -> None:
        self.writer = writer
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spool")
        self._pending: list[tuple[Mapping[str, Any], asyncio.Future[Position]]] = []
        self._roll_check = False
        self._flusher: asyncio.Task[None] | None = None
        self.batches = 0  #: batches written (each one write and, with RECORD, one fsync)

    async def append(self, record: Mapping[str, Any]) -> Position:
        """Append ``record`` with the next batch; return its position once it is in the spool.

        Cancelling the caller does not take the record back: once handed over it is written.

        Raises:
            OSError, SpoolError: the batch's write failed (every record of it gets the error).
        """
        future: asyncio.Future[Position] = asyncio.get_running_loop().create_future()
        self._pending.append((record, future))
        self._start()
        return await asyncio.shield(future)

    def roll_if_due(self) -> None:
        """Have the open segment sealed before the next batch if it is due by age."""
        self._roll_check = True
        self._start()

    async def drain(self) -> None:
        """Wait until every record handed over so far has been written or has failed."""
        while self._flusher is not None and not self._flusher.done():
            await asyncio.shield(self._flusher)

    async def aclose(self) -> None:
        """Drain, then stop the thread; the writer stays open (its owner closes it).

        Cancelled while it drains, it still waits (blocking) for the batch being written, so
        that the owner never closes the writer under the thread; the records still pending
        are not written then.
        """
        try:
            await self.drain()
        finally:
            self._executor.shutdown(wait=True)

    def _start(self) -> None:
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        """Write batches until nothing is pending; each batch is what arrived meanwhile."""
        loop = asyncio.get_running_loop()
        while self._pending or self._roll_check:
            batch, self._pending = self._pending, []
            roll_check, self._roll_check = self._roll_check, False
            records = [record for record, _ in batch]
            try:
                positions = await loop.run_in_executor(
                    self._executor, self._write, records, roll_check
                )
            except Exception as exc:  # noqa: BLE001  (handed to every caller of the batch)
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            self.batches += 1 if records else 0
            for (_, future), position in zip(batch, positions, strict=True):
                if not future.done():
                    future.set_result(position)

    def _write(self, records: list[Mapping[str, Any]], roll_check: bool) -> list[Position]:
        """On the committer's thread: the age check, then the batch."""
        if roll_check:
            self.writer.roll_if_due()
        if not records:
            return []
        return self.writer.append_all(records)
