"""The group's transactions in total order, kept compact: one byte each plus one entry a tick.

Every delivered transaction has a sequence number ``seq`` (1, 2, ...) in the total order that
all members certify in. Its byte holds its origin member (0-8) and, in :data:`NEGATIVE`,
whether certification rejected it. Commit times are not stored per transaction: each tick
records where its transactions start, and they are spread evenly over the tick. That time is
when the origin broadcast the transaction; a transaction that waited in flow control's
``do_wait`` before it was broadcast also keeps its original commit time, stamped before the
wait (:meth:`TxLog.original_commit_us`).
"""

from __future__ import annotations

from bisect import bisect_right

#: Flag of a negatively certified (rolled back) transaction.
NEGATIVE = 0x10
#: Mask of the origin member index.
ORIGIN = 0x0F


class TxLog:
    """Origins and certification outcomes by ``seq``, and commit times by tick.

    Entries up to ``base`` have been dropped with :meth:`trim`; asking for them is an error.
    """

    def __init__(self, tick_us: int) -> None:
        self.tick_us = tick_us
        self.base = 0  #: seq of the last dropped entry
        self.last = 0  #: seq of the last entry
        self._bytes = bytearray()
        self._tick_first: list[int] = []  # seq of the first transaction of each kept tick
        self._tick_start_us: list[int] = []
        self._stamped_us: dict[int, int] = {}  # seq -> original commit µs, when before its tick

    def start_tick(self, start_us: int) -> None:
        """Open a tick starting at ``start_us``: the next transactions committed during it."""
        self._tick_first.append(self.last + 1)
        self._tick_start_us.append(start_us)

    def append(self, entry: int) -> int:
        """Append one transaction's byte and return its seq."""
        self._bytes.append(entry)
        self.last += 1
        return self.last

    def stamp(self, seq: int, original_us: int) -> None:
        """Record that ``seq``'s original commit time is ``original_us``, before its broadcast.

        ``group_replication_trans_before_commit`` (plugin/group_replication/src/
        observer_trans.cc) sets ``original_commit_timestamp`` to ``my_micro_time()`` before it
        calls ``Flow_control_module::do_wait`` and broadcasts the transaction: a commit held
        by flow control carries the time it entered the wait.
        """
        self._stamped_us[seq] = original_us

    def original_commit_us(self, seq: int) -> int:
        """Return ``seq``'s ORIGINAL_COMMIT_TIMESTAMP: its stamp, or its commit time if none."""
        return self._stamped_us.get(seq) or self.commit_us(seq)

    def entry(self, seq: int) -> int:
        """Return the byte of ``seq``."""
        return self._bytes[seq - self.base - 1]

    def count(self, first: int, last: int, value: int) -> int:
        """Return how many entries in ``first..last`` equal ``value``."""
        return self._bytes[first - self.base - 1 : last - self.base].count(value)

    def commit_us(self, seq: int) -> int:
        """Return when ``seq``'s origin broadcast it (certified it): spread evenly over its tick."""
        at = bisect_right(self._tick_first, seq) - 1
        first = self._tick_first[at]
        after = self._tick_first[at + 1] if at + 1 < len(self._tick_first) else self.last + 1
        count = after - first
        return self._tick_start_us[at] + (seq - first + 1) * self.tick_us // (count + 1)

    def tick_of(self, seq: int) -> tuple[int, int, int, int]:
        """Return (index, first seq, transactions, start µs) of the kept tick holding ``seq``.

        With :meth:`tick_at`, lets a loop over consecutive seqs compute commit times without
        a search per transaction.
        """
        return self.tick_at(bisect_right(self._tick_first, seq) - 1)

    def tick_at(self, index: int) -> tuple[int, int, int, int]:
        """Return (index, first seq, transactions, start µs) of the ``index``-th kept tick."""
        first = self._tick_first[index]
        after = self._tick_first[index + 1] if index + 1 < len(self._tick_first) else self.last + 1
        return index, first, after - first, self._tick_start_us[index]

    def trim(self, upto: int) -> None:
        """Drop entries up to seq ``upto`` (no member will look at them again)."""
        drop = upto - self.base
        if drop < 65536:  # trimming is a copy: do it in large steps
            return
        del self._bytes[:drop]
        self.base = upto
        keep = max(0, bisect_right(self._tick_first, upto) - 1)
        del self._tick_first[:keep]
        del self._tick_start_us[:keep]
        self._stamped_us = {seq: us for seq, us in self._stamped_us.items() if seq > upto}
