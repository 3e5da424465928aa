"""Single-primary election order, as Group Replication picks a new primary: the simulator's.

One definition, :mod:`grstats.core.election` (``pick_primary_member`` of
primary_election_invocation_handler.cc: the lowest version, then the highest member weight,
then the lowest server_uuid, among the ONLINE members), which the next-primary forecast of
``grstats query status`` follows too; this module names it for the simulator.
"""

from __future__ import annotations

from grstats.core.election import (
    MEMBER_WEIGHT_SINCE,
    PATCH_CONSIDERATION,
    Candidate,
    election_order,
    lowest_version_members,
    pick_primary,
)

__all__ = [
    "MEMBER_WEIGHT_SINCE",
    "PATCH_CONSIDERATION",
    "Candidate",
    "election_order",
    "lowest_version_members",
    "pick_primary",
]
