"""How the certifier hands out GNOs of the group's UUID (plugin/group_replication/src/certifier.cc).

:class:`GnoAssigner` is the part of ``Certifier`` that picks a transaction's GNO, kept the same
on every member because they all certify the same transactions in the same order:

* ``group_gtid_executed`` (:attr:`GnoAssigner.used`): every GNO of the group's UUID given out;
* ``group_available_gtid_intervals``: the free intervals, recomputed by
  ``compute_group_available_gtid_intervals`` as the gaps of ``group_gtid_executed``;
* ``member_gtids``: each writer's block of ``group_replication_gtid_assignment_block_size``
  GNOs, reserved from the first free interval (``reserve_gtid_block``) when the writer has
  none or has used its block up;
* ``gtids_assigned_in_blocks_counter``: after ``block_size`` GNOs assigned in blocks the free
  intervals are recomputed and every block dropped, so that the gaps get filled.

``get_next_available_gtid`` with no member (a view change, ``generate_view_change_group_gtid``)
or a block size of 1 takes the first free GNO from 1; a view change then recomputes the free
intervals and drops every block, so that all members start again from the same blocks.
"""

from __future__ import annotations

from bisect import bisect_right

#: GNO_END: the first GNO that cannot be used, 2^63 - 1 (sql/rpl_gtid.h).
GNO_END = 2**63 - 1


class GnoAssigner:
    """The GNOs of the group's UUID that the certifier gave out, and the writers' blocks."""

    def __init__(self, block_size: int) -> None:
        self.block_size = block_size
        #: group_gtid_executed of the group's UUID: sorted, disjoint, inclusive intervals
        self.used: list[list[int]] = []
        self._available: list[list[int]] = []
        self._blocks: dict[int, list[int]] = {}  # member_gtids: writer -> [next, end]
        self._counter = 1  # gtids_assigned_in_blocks_counter
        self.compute_available()  # Certifier::initialize_server_gtid_set, on an empty set

    def compute_available(self) -> None:
        """``compute_group_available_gtid_intervals``: the gaps of ``used``; every block dropped."""
        self._counter = 1
        self._blocks.clear()
        free: list[list[int]] = []
        if self.used and self.used[0][0] > 1:
            free.append([1, self.used[0][0] - 1])
        for position, (_, end) in enumerate(self.used):
            after = self.used[position + 1][0] - 1 if position + 1 < len(self.used) else GNO_END
            free.append([end + 1, after])
        self._available = free or [[1, GNO_END]]

    def next_for(self, writer: int) -> int:
        """Return the GNO of ``writer``'s next positive transaction and count it as used.

        ``Certifier::get_next_available_gtid`` with the member's uuid.
        """
        if self.block_size <= 1:
            gno = self._candidate(1, GNO_END)
        else:
            if self._counter % (self.block_size + 1) == 0:
                self.compute_available()
            block = self._blocks.get(writer)
            if block is None:
                block = self._blocks[writer] = self._reserve()
            gno = self._candidate(block[0], block[1])
            while gno < 0:  # the block is used up: reserve another
                block = self._blocks[writer] = self._reserve()
                gno = self._candidate(block[0], block[1])
            block[0] = gno
            self._counter += 1
        self._add(gno)
        return gno

    def view_change(self, on_group_uuid: bool) -> int:
        """Return the GNO of a view change's GTID, or 0 when it takes another UUID's.

        ``Certifier::generate_view_change_group_gtid``: the first free GNO from 1 of the
        views' UUID (the group's, unless ``group_replication_view_change_uuid`` is set),
        then, with blocks, the free intervals are recomputed and every block dropped.
        """
        gno = 0
        if on_group_uuid:
            gno = self._candidate(1, GNO_END)
            self._add(gno)
        if self.block_size > 1:
            self.compute_available()
        return gno

    def _reserve(self) -> list[int]:
        """``Certifier::reserve_gtid_block``: ``block_size`` GNOs from the first free interval."""
        if not self._available:
            self.compute_available()
        first = self._available[0]
        if self.block_size > first[1] - first[0]:
            return self._available.pop(0)
        block = [first[0], first[0] + self.block_size - 1]
        first[0] = block[1] + 1
        return block

    def _candidate(self, start: int, end: int) -> int:
        """``get_next_available_gtid_candidate``: the first unused GNO from ``start``, or -2."""
        candidate = start
        at = bisect_right(self.used, candidate, key=lambda interval: interval[0]) - 1
        if at >= 0 and self.used[at][1] >= candidate:
            candidate = self.used[at][1] + 1  # intervals are merged: the next one starts later
        return candidate if candidate <= end else -2

    def _add(self, gno: int) -> None:
        """Add ``gno`` to ``used``, merging it with the intervals it touches."""
        used = self.used
        at = bisect_right(used, gno, key=lambda interval: interval[0]) - 1
        if at >= 0 and used[at][1] >= gno:
            return
        joins_next = at + 1 < len(used) and used[at + 1][0] == gno + 1
        if at >= 0 and used[at][1] == gno - 1:
            if joins_next:
                used[at][1] = used.pop(at + 1)[1]
            else:
                used[at][1] = gno
        elif joins_next:
            used[at + 1][0] = gno
        else:
            used.insert(at + 1, [gno, gno])
