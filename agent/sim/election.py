"""Single-primary election order, as Group Replication picks a new primary.

``Primary_election_handler::pick_primary_member`` (plugin/group_replication/src/
plugin_handlers/primary_election_invocation_handler.cc) sorts the view's members (any state)
by version (``sort_and_get_lowest_version_member_position``); only the lowest-version ones
are candidates: from 8.0.17 (``PRIMARY_ELECTION_PATCH_CONSIDERATION``, plugin_constants.h)
those of exactly the lowest version, before it those of the lowest major version. The
candidates are sorted by ``group_replication_member_weight``, highest first, then by the lowest
server_uuid (``sort_members_for_election``, ``Group_member_info::has_greater_weight`` in
member_info.cc), or by server_uuid alone when the lowest version is below 5.7.20
(``PRIMARY_ELECTION_MEMBER_WEIGHT_VERSION``). The new primary is the first ONLINE candidate;
none when no candidate is ONLINE, even if a member of a higher version is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

#: PRIMARY_ELECTION_PATCH_CONSIDERATION: from 8.0.17 the patch version counts.
PATCH_CONSIDERATION = 0x080017
#: PRIMARY_ELECTION_MEMBER_WEIGHT_VERSION: from 5.7.20 the member weight counts.
MEMBER_WEIGHT_SINCE = 0x050720


@dataclass(frozen=True, slots=True)
class Candidate:
    """A member of the view as the election sees it: its version as GR encodes it (0x080036)."""

    index: int
    uuid: str
    version: int
    weight: int
    online: bool


def lowest_version_members(members: Sequence[Candidate]) -> list[Candidate]:
    """Return the members the primary may be picked from: those of the lowest version.

    ``sort_and_get_lowest_version_member_position``: exactly the lowest version from 8.0.17,
    the lowest major version before.
    """
    if not members:
        return []
    lowest = min(member.version for member in members)
    return [member for member in members if _counts_as_lowest(member.version, lowest)]


def _counts_as_lowest(version: int, lowest: int) -> bool:
    """Whether a member of ``version`` is a candidate when the group's lowest is ``lowest``."""
    if lowest >= PATCH_CONSIDERATION:
        return version == lowest
    return version >> 16 == lowest >> 16


def election_order(members: Sequence[Candidate]) -> list[Candidate]:
    """Return the candidates in the order the election tries them.

    ``sort_members_for_election``: by weight, then server_uuid, or by server_uuid alone.
    """
    candidates = lowest_version_members(members)
    if candidates and candidates[0].version >= MEMBER_WEIGHT_SINCE:
        return sorted(candidates, key=lambda member: (-member.weight, member.uuid))
    return sorted(candidates, key=lambda member: member.uuid)


def pick_primary(members: Sequence[Candidate]) -> int | None:
    """Return the index of the new primary among the view's ``members``, or None."""
    return next((member.index for member in election_order(members) if member.online), None)
