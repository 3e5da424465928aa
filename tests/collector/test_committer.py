"""Group commit: records of many tasks reach the spool in batches, on the committer's thread."""

from __future__ import annotations

import asyncio
import errno
import threading
import time
from typing import TYPE_CHECKING

from grstats.collector import spool
from grstats.collector.committer import SpoolCommitter
from grstats.collector.spool import SpoolSettings, SpoolWriter, sealed_segments
from tests.collector.test_spool import FakeClock, all_records, record, segment_fsyncs

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


async def test_records_arriving_during_a_write_share_the_next_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twenty records handed over at once cost two fsyncs, none on the loop's thread."""
    synced = segment_fsyncs(monkeypatch, 0.2)
    with SpoolWriter(tmp_path) as writer:
        committer = SpoolCommitter(writer)
        first = asyncio.ensure_future(committer.append(record(0)))
        await asyncio.sleep(0.05)  # the first batch (record 0) is being fsynced
        rest = [asyncio.ensure_future(committer.append(record(i))) for i in range(1, 20)]
        positions = await asyncio.gather(first, *rest)
        await committer.aclose()
        assert committer.batches == len(synced) == 2
        assert threading.get_ident() not in synced  # (closing the writer syncs on this one)
    assert all_records(tmp_path) == [record(i) for i in range(20)]
    assert [p.offset for p in positions] == sorted(p.offset for p in positions)


async def test_the_loop_runs_while_a_batch_is_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow fsync never blocks the event loop: a ticking task keeps its pace meanwhile."""
    segment_fsyncs(monkeypatch, 0.5)
    gaps: list[float] = []

    async def ticker() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    with SpoolWriter(tmp_path) as writer:
        committer = SpoolCommitter(writer)
        ticking = asyncio.ensure_future(ticker())
        await asyncio.gather(*(committer.append(record(i)) for i in range(5)))
        ticking.cancel()
        await committer.aclose()
    assert len(gaps) >= 20  # two batches of 0.5 s, 10 ms ticks
    assert max(gaps) < 0.25


async def test_an_append_returns_once_its_record_is_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When append returns, the fsync that covers the record has ended."""
    synced = segment_fsyncs(monkeypatch, 0.1)
    with SpoolWriter(tmp_path) as writer:
        committer = SpoolCommitter(writer)
        position = await committer.append(record(0))
        assert len(synced) == 1
        assert writer.current is not None
        assert writer.current.stat().st_size > position.offset
        await committer.aclose()


async def test_a_failed_batch_fails_each_of_its_callers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every caller of a batch whose write failed gets the error; the next batch goes on."""
    real = spool._write_all

    def disk_full(fd: int, data: bytes) -> None:
        real(fd, data[:10])  # the batch's first frame torn
        raise OSError(errno.ENOSPC, "No space left on device")

    with SpoolWriter(tmp_path) as writer:
        committer = SpoolCommitter(writer)
        await committer.append(record(0))
        monkeypatch.setattr(spool, "_write_all", disk_full)
        results = await asyncio.gather(
            *(committer.append(record(i)) for i in (1, 2)), return_exceptions=True
        )
        assert [type(result) for result in results] == [OSError, OSError]
        monkeypatch.undo()
        position = await committer.append(record(3))
        assert position.sequence == 2  # the torn segment was abandoned, never sealed
        await committer.aclose()
    SpoolWriter(tmp_path).close()  # recovery cuts the torn tail of the abandoned one
    assert all_records(tmp_path) == [record(0), record(3)]


async def test_a_cancelled_caller_does_not_take_its_record_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record handed over is written even if its caller is cancelled; drain waits for it."""
    segment_fsyncs(monkeypatch, 0.1)
    with SpoolWriter(tmp_path) as writer:
        committer = SpoolCommitter(writer)
        caller = asyncio.ensure_future(committer.append(record(0)))
        await asyncio.sleep(0.02)
        caller.cancel()
        await committer.drain()
        assert writer.appended == 1
        await committer.aclose()
    assert caller.cancelled()
    assert all_records(tmp_path) == [record(0)]


async def test_roll_if_due_seals_on_the_committers_thread(tmp_path: Path) -> None:
    """An open segment due by age is sealed before the next batch, even with no record."""
    clock = FakeClock()
    with SpoolWriter(tmp_path, SpoolSettings(segment_age_s=60), clock=clock) as writer:
        committer = SpoolCommitter(writer)
        await committer.append(record(0))
        committer.roll_if_due()
        await committer.drain()
        assert sealed_segments(tmp_path) == []  # not due yet
        clock.now += 60
        committer.roll_if_due()
        await committer.drain()
        assert len(sealed_segments(tmp_path)) == 1
        assert writer.current is None
        await committer.aclose()
