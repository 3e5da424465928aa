"""The group's verdict in MySQL Shell's terms: status, sentence and how many failures it tolerates.

Pure: it takes the MEMBER_STATE of each member of the view and a few counts. The rules are
Shell's ``Status::check_group_status`` (modules/adminapi/cluster/status.cc), over the members
and the quorum that Shell's ``get_members`` reads (mysqlshdk/libs/mysql/group_replication.cc):

* the view is the one member's ``replication_group_members``, without the other members' ERROR
  rows (``WHERE m.member_id = @@server_uuid OR m.member_state <> 'ERROR'``): the caller drops
  those, and they count as outside the view;
* the view has quorum while its ONLINE and RECOVERING members are more than half of it, half
  rounded down (``online_members > members.size() / 2``);
* Shell tolerates ``(ONLINE + RECOVERING - 1) / 2`` failures;
* no ONLINE member: Shell's ERROR, with "There are no ONLINE members in the cluster." or, with
  no quorum, "... has no quorum as visible from 'X' and no ONLINE members that can be used to
  restore it."; else no quorum: NO_QUORUM, "... has no quorum as visible from 'X' and cannot
  process write transactions."; else tolerance 0: OK_NO_TOLERANCE, "... is NOT tolerant to any
  failures."; else OK, "... is ONLINE and can tolerate up to ONE failure." (the number in
  digits from 2 up);
* OK and OK_NO_TOLERANCE are *partial* (``..._PARTIAL``) when a known member is not in the
  view (Shell: in the metadata, ``missing_from_group``) or a member of the view is neither
  ONLINE nor RECOVERING (``total_in_group != quorum_size``);
* whatever the status, the sentence ends with " 1 member is not active." or " N members are
  not active." when the known members outnumber the ONLINE ones (Shell:
  ``cluster_instance_count > online_count``, its metadata's members): a RECOVERING member is
  not active, though it makes the quorum and alone does not make the status partial.

Shell's metadata is the members added to the cluster until ``removeInstance``. grstats's known
members are those of the view and those it remembers (:mod:`grstats.agent.status`): every
member once in the group's view, until ``grstats members forget`` (or ``retention_s`` without
news of it), whether its agent runs or not.

Where grstats departs from Shell, on purpose:

* **"Group" for "Cluster"** in every sentence: grstats knows no InnoDB Cluster.
* **tolerance while members are UNREACHABLE.** Shell counts an UNREACHABLE member as gone
  already. Until it is expelled it is still in the view, and GR keeps quorum only while a
  majority of the *whole view* is reachable: 5 members with 2 UNREACHABLE lose quorum at one
  more failure. grstats gives the smaller of Shell's figure and that margin, so such a group is
  OK_NO_TOLERANCE_PARTIAL (tolerance 0) until the 2 are expelled, then OK_PARTIAL (tolerance 1).
* **no ONLINE member.** Shell says ERROR; grstats says NO_QUORUM with Shell's sentence, so that
  the status stays one of the six values scripts know: no member can take writes either way.
* **FENCED_WRITES and INVALIDATED** are never given: they come from InnoDB Cluster's metadata
  (``fenceWrites()``, a ClusterSet), which grstats does not read.
* **no view at all** (no member of a group was read or heard): UNKNOWN. When the agent asked
  knows nothing because it cannot read its own member, the sentence says so and why
  (:func:`source_unknown`).
* **split-brain members.** Shell gives its "split-brain!" error in the member's
  ``instanceErrors``; grstats appends it to the sentence, after the member's address, and
  flags the member (SPLIT_BRAIN). The status itself is the majority view's, as Shell's.
* **members not connected.** The sentence also says how many members are not connected (their
  agent silent, or not reading their server: :func:`grstats.agent.known.connected`): their
  state is the view's, their rows are the last received.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

#: Numbers Shell spells out in "can tolerate up to ONE failure".
_WORDS = {1: "ONE"}
#: The states Shell counts in a quorum (``get_members``, ``check_group_status``).
_QUORUM_STATES = ("ONLINE", "RECOVERING")


@dataclass(frozen=True, slots=True)
class Verdict:
    """A status of :data:`~grstats.core.rows.status.STATUSES`, its sentence and tolerance."""

    status: str
    text: str
    tolerance: int


def has_quorum(states: Sequence[str]) -> bool:
    """Whether a view whose members are in ``states`` has quorum, as Shell's ``get_members``.

    Its ONLINE and RECOVERING members are more than half of it, half rounded down: in a view of
    ONLINE, RECOVERING and UNREACHABLE members, fewer than half are UNREACHABLE.
    """
    quorum_size = sum(1 for state in states if state in _QUORUM_STATES)
    return quorum_size > len(states) // 2


def tolerance(states: Sequence[str]) -> int:
    """How many more members of the view can fail with quorum kept (see the module docstring)."""
    if not has_quorum(states):
        return 0
    quorum_size = sum(1 for state in states if state in _QUORUM_STATES)
    shell = (quorum_size - 1) // 2 if quorum_size > 0 else 0
    unreachable = sum(1 for state in states if state == "UNREACHABLE")
    margin = (len(states) - 1) // 2 - unreachable
    return max(0, min(shell, margin))


def verdict(
    states: Sequence[str],
    *,
    not_in_view: int = 0,
    not_heard: int = 0,
    visible_from: str = "",
    split_brain: Sequence[tuple[str, str]] = (),
) -> Verdict:
    """Return the verdict of a view whose members are in ``states``.

    ``not_in_view`` counts known members outside the view (departed, expelled, stopped);
    ``not_heard`` the members not connected; ``visible_from`` names the member
    whose view this is, for the NO_QUORUM sentence; ``split_brain`` gives the address and own
    state of each member split from the view, which the sentence names (:func:`split_text`).
    """
    if not states:
        return Verdict(
            "UNKNOWN", "The group is not known: no member of a group was read or heard.", 0
        )
    online = sum(1 for state in states if state == "ONLINE")
    quorum_size = sum(1 for state in states if state in _QUORUM_STATES)
    tolerated = tolerance(states)
    partial = not_in_view > 0 or len(states) != quorum_size
    if not has_quorum(states):
        status = "NO_QUORUM"
        text = f"Group has no quorum as visible from '{visible_from}' and " + (
            "no ONLINE members that can be used to restore it."
            if online == 0
            else "cannot process write transactions."
        )
    elif online == 0:
        status, text, tolerated = "NO_QUORUM", "There are no ONLINE members in the group.", 0
    elif tolerated == 0:
        status = "OK_NO_TOLERANCE_PARTIAL" if partial else "OK_NO_TOLERANCE"
        text = "Group is NOT tolerant to any failures."
    else:
        status = "OK_PARTIAL" if partial else "OK"
        count = _WORDS.get(tolerated, str(tolerated))
        text = f"Group is ONLINE and can tolerate up to {count} failure{'s' * (tolerated > 1)}."
    inactive = len(states) + not_in_view - online
    if inactive:
        text += (
            " 1 member is not active." if inactive == 1 else f" {inactive} members are not active."
        )
    if not_heard == 1:
        text += " 1 member is not connected: its rows are the last received."
    elif not_heard:
        text += f" {not_heard} members are not connected: their rows are the last received."
    text += "".join(f" {address}: {split_text(state)}." for address, state in split_brain)
    return Verdict(status, text, tolerated)


def split_text(state: str) -> str:
    """Shell's error for a member split from the majority that shows itself in ``state``.

    ``instance_diagnostics`` (modules/adminapi/cluster/status.cc) gives it in the member's
    ``instanceErrors`` when the majority's view lists it UNREACHABLE or MISSING while it has
    state ONLINE or RECOVERING: its applications read stale data, and writes on it hang.
    """
    return f"ERROR: split-brain! Instance is not part of the majority group, but has state {state}"


def source_unknown(agent: str, reason: str) -> Verdict:
    """The UNKNOWN verdict of ``agent``, which knows no member because it cannot read its own."""
    return Verdict(
        "UNKNOWN", f"Group status unknown: agent {agent} cannot read its member: {reason}", 0
    )
