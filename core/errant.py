"""Errant transactions: the GTIDs a member executed that the group does not have. Pure, no I/O.

A member whose ``gtid_executed`` holds transactions the group lacks is refused when it
(re)joins: Group Replication compares the joiner's executed and received sets with the
union of the group members' (``Plugin_gcs_events_handler::compare_member_transaction_sets``,
called by ``check_group_compatibility`` in plugin/group_replication/src/gcs_event_handlers.cc),
logs "This member has more executed transactions than those present in the group" and the
joiner leaves in ERROR. MySQL Shell calls the same GTIDs errant:
``GTID_SUBTRACT(replica, source)`` in ``check_replica_gtid_state``
(mysqlshdk/libs/mysql/replication.cc), whatever their UUID. Such transactions come from
writes on a member while it is out of the group (group replication stopped,
``super_read_only`` turned off), or before it first joined; the standard repair is an empty
transaction of each errant GTID on the other members, after which none is errant.

:func:`errant_transactions` finds them ahead of the join, from the members' sampled sets
(every agent samples its member's ``gtid_executed`` on the same wall-clock marks, see
:mod:`grstats.agent.local`): a member's errant GTIDs are those of its set that no other
member's set of the same instant holds, **whatever their UUID** (a write under a UUID the group
already has, as after an earlier errant write was repaired, is errant too). Three rules keep a
healthy group from looking errant, where GR compares received sets and Shell reads the source
after the replica, and grstats has one sample of each member's executed set:

* **The group's own GTIDs are never errant**: those of the group name and of
  ``group_replication_view_change_uuid``. The group certified them; a primary's newest
  commits, not yet in the others' samples, would otherwise show (GR finds them in the others'
  received sets).
* **Only sets of the same instant are compared**: a member's set against the other members'
  sets sampled at most :data:`SAME_INSTANT_US` before it (the same broadcast mark: the
  members' reads of one mark are at most a period apart) or after it. An older set (a
  crashed member's last one) lacks what the group did since, and says nothing. With no such
  set the answer is None: not known.
* **The most advanced member's newest GTIDs of a shared UUID may be in flight**: a member whose
  set holds every GTID the compared sets hold (the primary applying an inbound asynchronous
  channel, or an InnoDB ClusterSet replica cluster's primary) may just have applied
  transactions of that channel's source the others have not applied yet. Its GTIDs of a UUID
  the others also have are not called errant; those of a UUID none of them has still are. A
  member that lacks some GTID another holds is behind that member, and applies the group's
  transactions in the group's order, so a GTID of the group it holds and no other member
  holds cannot be in flight: it is errant. The price: an errant GTID under a shared UUID on
  the most advanced member (in a multi-primary group, where every writer lacks the others'
  newest commits, this member is rarely found) is shown only once another member is ahead of
  it in something.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from grstats.core.gtid import GtidSet

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

#: How far before a member's sample another member's may be taken and still describe the same
#: instant: the shortest ``executed_interval_s``, 30 s (one mark to the next).
SAME_INSTANT_US = 30_000_000


@dataclass(frozen=True, slots=True)
class ExecutedSample:
    """A member's ``gtid_executed`` and when it was sampled (µs, on one clock for all members)."""

    executed: GtidSet
    sampled_at_us: int


def errant_transactions(
    samples: Mapping[str, ExecutedSample], group_uuids: Collection[str]
) -> dict[str, GtidSet | None]:
    """Return each member's errant GTIDs (see the module docstring); None when not known.

    ``samples`` holds each member's last sample (members never sampled are left out);
    ``group_uuids`` the group name and the view-change UUID, in any case (``''`` is ignored).
    """
    own = {uuid.lower() for uuid in group_uuids if uuid}
    found: dict[str, GtidSet | None] = {}
    for member, sample in samples.items():
        others = [
            other.executed
            for name, other in samples.items()
            if name != member and other.sampled_at_us >= sample.sampled_at_us - SAME_INSTANT_US
        ]
        found[member] = None if not others else errant_against(sample.executed, others, own)
    return found


def errant_against(executed: GtidSet, others: list[GtidSet], group_uuids: set[str]) -> GtidSet:
    """The GTIDs of ``executed`` that ``others`` (sets of the same instant) make errant.

    ``group_uuids`` are lower case. See the module docstring for the rules.
    """
    held = GtidSet.union_of(others)
    lacked = GtidSet(i for i in executed - held if i.uuid not in group_uuids)
    if lacked.is_empty() or not (held - executed).is_empty():
        return lacked  # nothing lacked, or the member is behind another: all of it is errant
    shared = set(held.uuids())
    return GtidSet(interval for interval in lacked if interval.uuid not in shared)
