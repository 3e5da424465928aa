"""Errant transactions: the GTIDs a member executed that the group does not have. Pure, no I/O.

A member whose ``gtid_executed`` holds transactions the group lacks is refused when it
(re)joins: Group Replication compares the joiner's executed and received sets with the
union of the group members' (``Plugin_gcs_events_handler::compare_member_transaction_sets``,
called by ``check_group_compatibility`` in plugin/group_replication/src/gcs_event_handlers.cc),
logs "This member has more executed transactions than those present in the group" and the
joiner leaves in ERROR. Such transactions come from writes on a member while it is out of the
group (group replication stopped, ``super_read_only`` turned off), or before it first joined.

:func:`errant_transactions` finds them ahead of the join, from the members' sampled sets
(every agent samples its member's ``gtid_executed`` on the same wall-clock marks, see
:mod:`grstats.agent.local`). Three rules keep a healthy group from looking errant:

* **The group's own GTIDs are never errant**: those of the group name and of
  ``group_replication_view_change_uuid``. The group certified them; a primary's newest
  commits, not yet in the others' samples, would otherwise show.
* **Only sets of the same instant are compared**: a member's set against the other members'
  sets sampled at most :data:`SAME_INSTANT_US` before it (the same broadcast mark: the
  members' reads of one mark are at most a period apart) or after it. An older set (a
  crashed member's last one) lacks what the group did since, and says nothing. With no such
  set the answer is None: not known.
* **Only GTIDs of a UUID none of those sets has are errant**: a write on a member out of
  the group takes the member's own ``server_uuid``, which no other member has. A GTID of a
  UUID the group also has (an inbound asynchronous channel's source, an InnoDB ClusterSet's
  primary cluster) may just not be applied yet where another member sampled, and is never
  called errant. So an errant transaction written under a shared UUID (an explicit
  ``gtid_next``) is missed: the price of no false alarm in a replica cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from grstats.agent.gtid import GtidSet

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
        if not others:
            found[member] = None
            continue
        known = own.union(*(executed.uuids() for executed in others))
        found[member] = GtidSet(
            interval for interval in sample.executed if interval.uuid not in known
        )
    return found
