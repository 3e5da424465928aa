"""Single-primary election order, as Group Replication picks a new primary, and its forecast.

``Primary_election_handler::pick_primary_member`` (plugin/group_replication/src/
plugin_handlers/primary_election_invocation_handler.cc) sorts the view's members (any state)
by version (``sort_and_get_lowest_version_member_position``); only the lowest-version ones
are candidates: from 8.0.17 (``PRIMARY_ELECTION_PATCH_CONSIDERATION``, plugin_constants.h)
those of exactly the lowest version, before it those of the lowest major version. The
candidates are sorted by ``group_replication_member_weight``, highest first, then by the lowest
server_uuid (``sort_members_for_election``, ``Group_member_info::has_greater_weight`` in
member_info.cc), or by server_uuid alone when the lowest version is below 5.7.20
(``PRIMARY_ELECTION_MEMBER_WEIGHT_VERSION``). The new primary is the first ONLINE candidate
(``get_recovery_status() == MEMBER_ONLINE``: not RECOVERING, not UNREACHABLE); none when no
candidate is ONLINE, even if a member of a higher version is.

The simulator elects with :func:`pick_primary`; :func:`next_primary` forecasts, from the rows
of ``replication_group_member_status``, whom the same rule elects if the primary failed now:
the election among the view's members but the primary. MySQL 9.x's optional "most up to date"
rule (the component ``group_replication_elect_prefers_most_updated``,
primary_election_most_uptodate.cc) is not followed: agents do not read whether it is on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from grstats.core.model import DEFAULT_MEMBER_WEIGHT
from grstats.core.rows import RowValueError, encode_version

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from grstats.core.rows import Value

#: PRIMARY_ELECTION_PATCH_CONSIDERATION: from 8.0.17 the patch version counts.
PATCH_CONSIDERATION = 0x080017
#: PRIMARY_ELECTION_MEMBER_WEIGHT_VERSION: from 5.7.20 the member weight counts.
MEMBER_WEIGHT_SINCE = 0x050720
#: The states of members in the group's view (an ERROR or OFFLINE member left it).
IN_VIEW_STATES = ("ONLINE", "RECOVERING", "UNREACHABLE")
#: More transactions to apply than this make the next primary unsafe: it would hold writes
#: (group_replication_consistency BEFORE_ON_PRIMARY_FAILOVER) or serve stale data until it
#: applied them. A fixed figure every reader applies alike, far below flow control's 25000.
BACKLOG_WARNING = 1000


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


@dataclass(frozen=True, slots=True)
class NextPrimary:
    """The member GR would elect if the primary failed now, and how ready it is.

    ``weight`` is its ``group_replication_member_weight``, MySQL's default 50 where it was not
    heard (``weight_known`` False). ``errant_transactions`` is ERRANT_TRANSACTIONS (``''``
    for none, None when unknown); ``warning`` says why failing over to it now is unsafe, ``''``
    when it is not.
    """

    member_id: str
    version: str
    weight: int
    weight_known: bool
    applier_lag_seconds: float | None
    transactions_behind: int | None
    errant_transactions: str | None
    warning: str


def next_primary(
    members: Sequence[Mapping[str, Value]],
    *,
    single_primary: bool,
) -> NextPrimary | None:
    """The forecast from rows of ``replication_group_member_status`` keyed by column name.

    None in a multi-primary group (every ONLINE member writes already) or when no member
    but the primary is electable. The election is over the members in the view
    (:data:`IN_VIEW_STATES`) other than the PRIMARY, each of a known MEMBER_VERSION. A weight
    is the row's MEMBER_WEIGHT (as gossiped; an older agent sends no such column), else
    unknown.
    """
    if not single_primary:
        return None
    rows: list[Mapping[str, Value]] = []
    known: list[bool] = []
    voters = []
    for row in members:
        if row.get("MEMBER_STATE") not in IN_VIEW_STATES or row.get("MEMBER_ROLE") == "PRIMARY":
            continue
        version = _version(row.get("MEMBER_VERSION"))
        if version is None:
            continue
        member = str(row.get("MEMBER_ID") or "")
        weight = _weight(row.get("MEMBER_WEIGHT"))
        index = len(rows)
        rows.append(row)
        known.append(weight is not None)
        voters.append(
            Candidate(
                index=index,
                uuid=member,
                version=version,
                weight=DEFAULT_MEMBER_WEIGHT if weight is None else weight,
                online=row.get("MEMBER_STATE") == "ONLINE",
            )
        )
    picked = pick_primary(voters)
    if picked is None:
        return None
    row, voter = rows[picked], voters[picked]
    behind = _int(row.get("TRANSACTIONS_BEHIND"))
    errant = row.get("ERRANT_TRANSACTIONS")
    lag = row.get("APPLIER_LAG_SECONDS")
    return NextPrimary(
        member_id=voter.uuid,
        version=str(row.get("MEMBER_VERSION") or ""),
        weight=voter.weight,
        weight_known=known[picked],
        applier_lag_seconds=None if lag is None else float(str(lag)),
        transactions_behind=behind,
        errant_transactions=None if errant is None else str(errant),
        warning=unsafe(None if errant is None else str(errant), behind),
    )


def unsafe(errant: str | None, behind: int | None) -> str:
    """Why failing over to a member of these errant GTIDs and backlog is unsafe ('' if not)."""
    reasons = []
    if errant:
        gtids = ",".join(part.strip() for part in errant.split(","))
        reasons.append(f"it holds errant transactions ({gtids}): a failover makes them the group's")
    if behind is not None and behind > BACKLOG_WARNING:
        reasons.append(
            f"it has {behind} transactions to apply (more than {BACKLOG_WARNING}): a failover"
            " waits for them or serves stale reads"
        )
    return "; ".join(reasons)


def _version(value: Value) -> int | None:
    """MEMBER_VERSION as GR encodes it, None when empty or not a version."""
    if not value:
        return None
    try:
        return encode_version(str(value))
    except RowValueError:
        return None


def _weight(value: Value) -> int | None:
    """MEMBER_WEIGHT as a weight in 0..100, None when NULL or not one."""
    weight = _int(value)
    return weight if weight is not None and 0 <= weight <= 100 else None


def _int(value: Value) -> int | None:
    """A whole number column (an older agent's TEXT too), None when NULL or not one."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value)
    return int(text) if text.isdigit() else None
