"""``group_status``: the group's verdict and each member's part in it, as one agent sees them now.

Pure: the caller passes the gossip state, the local read (None when the local server is down),
the time and the clock offsets, as for the served tables. The verdict is MySQL Shell's
(:mod:`grstats.core.verdict`) over the view the agent serves (``served_view``: the group's
newest, so every agent that hears the group serves the same one): quorum comes from that
view, a member UNREACHABLE in it counts as in the view and not reachable, and a known member
outside it makes the status partial and is "not active" in the sentence.

The known members are Shell's metadata: the view's and every member the agent remembers, each
with a row here. A member is remembered once it was in the group's view: the gossip state
takes a member's values only while some member's view lists it (the member's own last view
of the group too), and keeps them after it leaves the view (departed, stopped, expelled, its
server down, its agent silent); the registry keeps them across the agent's restarts. Every
agent that heard the group while the member was in it remembers it, and every agent started
since learns it while its agent runs, until ``grstats members forget`` (or ``retention_s``
passes without news of it). A member not connected (its agent silent, or its server not read)
keeps the state the view gives it and its last rows; the sentence says so.

Flow control is judged as GR's own step does it (``Flow_control_module::handle_stats_data`` and
``flow_control_step`` in plugin/group_replication/src/flow_control.cc): a writer (an ONLINE
PRIMARY) whose ``group_replication_flow_control_mode`` is QUOTA is held back when a member whose
mode is QUOTA reports more than the *writer's* thresholds waiting for certification
(COUNT_TRANSACTIONS_IN_QUEUE > certifier_threshold) or for apply
(COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE > applier_threshold). Only members whose stats
messages still flow count: GR counts holds from the messages of the last period, so counts
older than two of the writer's periods (one period, plus one for the gossip) hold no one back.
A member whose variables were never heard is judged with MySQL's defaults.

A stalled stable set (:mod:`grstats.core.stable_set`: TRANSACTIONS_COMMITTED_ALL_MEMBERS
unchanged for two broadcast rounds while transactions were certified) is held back by the
view's UNREACHABLE members, whose sets never reach the certifier; with none, by the ONLINE
members at the bottom of the ONLINE members' last sampled ``gtid_executed`` (an applier that
stopped; several equally behind are all named). The certifier ignores the sets of members not
ONLINE, so a RECOVERING member neither holds it nor counts (:func:`stable_set_holders`).

SPLIT_BRAIN is MySQL Shell's split-brain (``instance_diagnostics`` in
modules/adminapi/cluster/status.cc): a connected member that the served view, with quorum,
lists UNREACHABLE or not at all while its own last view, without quorum, lists it ONLINE or
RECOVERING (:func:`~grstats.agent.known.split_state`). Its row keeps the served view's state
(OFFLINE once the majority removed it), as Shell's ``status`` is the quorum's view of the
member (``(MISSING)``) and only its ``memberState`` the member's own (``Status::feed_member_info``
in the same file); the sentence names it with Shell's error and the member's own state.

ERRANT_TRANSACTIONS is each member's last sampled ``gtid_executed`` judged against the other
members' samples of the same instant (:mod:`grstats.core.errant`), the samples' times moved
to this agent's clock by the members' offsets.

MEMBER_WEIGHT is the member's ``group_replication_member_weight`` as its agent read it and
gossiped it with its server variables (:func:`member_weights`), NULL where not heard: the input
of the next primary forecast, whom GR would elect if the primary failed now
(:func:`~grstats.core.election.next_primary` over the member rows, a NULL weight counted as
MySQL's default 50).

TRANSACTIONS_LEFT, APPLY_RATE and ETA_S are a RECOVERING member's or an applier backlog's
progress (:class:`Progress`: how many transactions are left, how many were applied per second
over the last minute, and in how many seconds nothing will be left), as the agent's history of
the members counts them (:mod:`grstats.agent.recovery`), given as ``progress``; NULL for a
member it has none of.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from grstats.agent.gossip import Counts, Key
from grstats.agent.gossip.clocks import RELIABLE_US, skews
from grstats.agent.known import (
    applier_held,
    connected,
    departed,
    executed_of,
    group_label,
    lag_time,
    member_ids,
    served_view,
    server_of,
    split_brain,
    transactions_behind,
)
from grstats.core.errant import ExecutedSample, errant_transactions
from grstats.core.gtid import GtidSet
from grstats.core.model import ServerSettings
from grstats.core.rows import (
    GroupStatusRow,
    MemberRow,
    MemberState,
    MemberStatsRow,
    MemberStatusRow,
    lag_seconds,
)
from grstats.core.verdict import source_unknown, verdict

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from grstats.agent.gossip import GossipState
    from grstats.core.model import MemberSnapshot
    from grstats.core.stable_set import Stall

#: How many of the writer's flow-control periods a member's counts stay fresh enough to hold
#: writers back: the period of GR's step, plus one for the gossip's own delay.
FRESH_PERIODS = 2
#: The states of members that send GR's stats message
#: (``Pipeline_stats_member_collector::send_stats_member_message``).
SENDING_STATES = ("ONLINE", "RECOVERING")
_DEFAULT_SERVER = ServerSettings()


@dataclass(frozen=True, slots=True)
class Progress:
    """A member's TRANSACTIONS_LEFT, APPLY_RATE (per second, None: unknown) and ETA_S (seconds).

    ETA_S is 0 when nothing is left and None while the transactions left do not fall.
    """

    left: int
    rate: float | None
    eta_s: float | None


def group_status(  # noqa: PLR0913  (every input of the verdict is explicit)
    state: GossipState,
    local: MemberSnapshot | None,
    now_us: int,
    silence_us: int,
    *,
    offsets_us: Mapping[str, int] | None = None,
    offset_errors_us: Mapping[str, int] | None = None,
    cannot_read: tuple[str, str] | None = None,
    stall: Stall | None = None,
    progress: Mapping[str, Progress] | None = None,
) -> tuple[GroupStatusRow, list[MemberStatusRow]]:
    """Return the group's verdict and one row per known member, in MEMBER_ID order.

    ``cannot_read`` is (the agent's address, why) while the agent cannot read its own member:
    an UNKNOWN verdict then says so (:func:`~grstats.core.verdict.source_unknown`). ``stall``
    is the stable set's stall as the agent's member shows it, None while it advances.
    ``progress`` is each member's recovery or backlog progress, where known (module docstring).
    """
    offsets = offsets_us or {}
    view, origin = served_view(state, local)
    in_view = {row.member_id: row for row in view.members if row.member_id} if view.view_id else {}
    members = member_ids(state, local, view)
    shown = {m: in_view.get(m) or departed(state, m) for m in members}
    counts = {m: _counts(state, local, m, now_us, offsets) for m in members}
    servers = {m: server_of(state, local, m) for m in members}
    weights = member_weights(state, local, members)
    live = {
        m: connected(state, local, m, now_us=now_us, silence_us=silence_us, offsets=offsets)
        for m in members
    }
    held, by = _flow_control(in_view, counts, servers)
    errant = _errant(state, members, view.group_name, offsets)
    split = split_brain(state, local, view, now_us=now_us, silence_us=silence_us, offsets=offsets)
    skew = skews(offsets, state.local_id, len(members))  # CLOCK_SKEW_MS (gossip.clocks)
    if offset_errors_us is not None:  # NULL where the offset is not known within RELIABLE_US
        skew = {
            m: off
            for m, off in skew.items()
            if m == state.local_id or offset_errors_us.get(m, RELIABLE_US + 1) <= RELIABLE_US
        }
    # Each row is made (and checked) once, with every column: a row replaced for its clock skew
    # and its progress was checked three times, its errant GTID set parsed three times.
    rows = [
        _member_row(
            shown[m],
            counts[m],
            servers[m],
            connected=live[m],
            lag=_lag(
                state,
                local,
                m,
                lag_time(state, local, m, now_us=now_us, offsets=offsets),
            ),
            behind=transactions_behind(state, local, m),
            throttling=m in held,
            errant=errant.get(m),
            split=m in split,
            weight=weights[m],
            skew_ms=_ms(skew.get(m)),
            progress=(progress or {}).get(m),
        )
        for m in members
    ]
    # Shell's get_members leaves out the other members' ERROR rows (a GR bug lists them): they
    # count as outside the view, as Shell counts them missing from the group.
    counted = {m: row for m, row in in_view.items() if row.member_state != "ERROR" or m == origin}
    found = verdict(
        [row.member_state for row in counted.values()],
        not_in_view=len(members) - len(counted),
        not_heard=sum(1 for m in counted if not live.get(m, False)),
        visible_from=_address(shown.get(origin) or MemberRow(member_id=origin)),
        split_brain=[(_address(shown[m]), own) for m, own in sorted(split.items())],
    )
    if found.status == "UNKNOWN" and cannot_read is not None:
        found = source_unknown(*cannot_read)
    mode = ("single-primary" if view.single_primary_mode else "multi-primary") if in_view else ""
    group = GroupStatusRow(
        group_name=view.group_name if in_view else "",
        view_id=view.view_id,
        status=found.status,
        status_text=found.text,
        tolerance=found.tolerance,
        mode=mode,
        primary_members=",".join(m for m, row in in_view.items() if row.member_role == "PRIMARY"),
        throttled="YES" if held else "NO",
        throttled_by=",".join(sorted(by)),
        as_of=now_us,
        group_label=group_label(state, local, view) if in_view else "",
    )
    if stall is not None and in_view:
        group = replace(
            group,
            stable_set_stalled_s=stall.for_us // 1_000_000,
            stable_set_held_by=",".join(_holding_back(state, in_view)),
            rows_validating_per_minute=stall.rows_per_minute,
        )
    return group, rows


def member_weights(
    state: GossipState, local: MemberSnapshot | None, members: Iterable[str]
) -> dict[str, int | None]:
    """Each member's ``group_replication_member_weight``, None where it was never heard.

    The local member's as its source read it; the others' from the server variables their
    agents gossip (an older agent sends none).
    """
    found: dict[str, int | None] = {}
    for member in members:
        if local is not None and member == local.member_id and local.member_weight is not None:
            found[member] = local.member_weight
            continue
        server = server_of(state, local, member)
        found[member] = server.member_weight if server is not None else None
    return found


def _holding_back(state: GossipState, in_view: Mapping[str, MemberRow]) -> list[str]:
    """The members of the view that hold the stable set back (see the module docstring).

    As the certifier computes it (``Certifier::handle_certifier_data`` and
    ``intersect_members_gtid_executed_and_garbage_collect`` in
    plugin/group_replication/src/certifier.cc): the stable set is the intersection of the
    sets of the members ONLINE in the view, every one of which must send its set; a message
    from a member not ONLINE (RECOVERING, say: its set is not yet the group's) is ignored. So
    a member UNREACHABLE in the view, ONLINE to the certifier but whose set never arrives,
    holds it; with none, :func:`stable_set_holders` over the ONLINE members' sampled sets.
    """
    unreachable = [m for m, row in in_view.items() if row.member_state == "UNREACHABLE"]
    if unreachable:
        return sorted(unreachable)
    online = [m for m, row in in_view.items() if row.member_state == MemberState.ONLINE]
    sampled = {}
    for member in online:
        found, sent_us = executed_of(state, member)
        if sent_us:
            sampled[member] = found
    return stable_set_holders(sampled)


def stable_set_holders(sets: Mapping[str, GtidSet]) -> list[str]:
    """Which of the ONLINE members' sets ``sets`` keep their intersection where it is.

    The members at the bottom: those that lack a GTID another member holds while every GTID
    they share with any other member is held by all (their set is the stable set, but for
    GTIDs only they hold, such as errant ones). Several members equally behind are all named.
    Where members are behind each other in different things (none at the bottom), each member
    that lacks a GTID every other member holds.
    """
    stable = GtidSet.intersection_of(sets.values()) if sets else GtidSet()
    bottom, behind = [], []
    for member, own in sets.items():
        others = [found for m, found in sets.items() if m != member]
        if not others:
            continue
        lacks = GtidSet.union_of(others) - own
        if lacks.is_empty():
            continue
        if (own & GtidSet.union_of(others)) <= stable:
            bottom.append(member)
        if not (GtidSet.intersection_of(others) - own).is_empty():
            behind.append(member)
    return sorted(bottom or behind)


def flow_control_thresholds(
    state: GossipState | None, local: MemberSnapshot | None
) -> tuple[int, int]:
    """The applier and certifier thresholds the verdict judges the queues with, in that order.

    Each writer (an ONLINE PRIMARY of the served view whose flow-control mode is QUOTA) is held
    back by its own thresholds (see the module docstring); with several writers, the lowest of
    each, the first at which some writer is held back. A writer whose variables were never
    heard has MySQL's defaults, as in the verdict; with no such writer (no view, no primary
    ONLINE, flow control DISABLED everywhere) or no gossip state yet, MySQL's defaults too.
    """
    judged = []
    if state is not None:
        view, _ = served_view(state, local)
        for row in view.members if view.view_id else ():
            if row.member_id and row.member_role == "PRIMARY" and row.member_state == "ONLINE":
                limits = (server_of(state, local, row.member_id) or _DEFAULT_SERVER).flow_control
                if limits.mode == "QUOTA":
                    judged.append(limits)
    if not judged:
        defaults = _DEFAULT_SERVER.flow_control
        return defaults.applier_threshold, defaults.certifier_threshold
    return (
        min(settings.applier_threshold for settings in judged),
        min(settings.certifier_threshold for settings in judged),
    )


def _lag(
    state: GossipState, local: MemberSnapshot | None, member: str, now_us: int
) -> float | None:
    """APPLIER_LAG_SECONDS of ``member`` at ``now_us`` on its clock (no row is built)."""
    row = applier_held(state, local, member)
    return lag_seconds(row, now_us) if row is not None else None


def _counts(
    state: GossipState,
    local: MemberSnapshot | None,
    member: str,
    now_us: int,
    offsets: Mapping[str, int],
) -> tuple[MemberStatsRow, int] | None:
    """The member's stats row and its age in µs, None when none was ever received."""
    if local is not None and member == local.member_id:
        return local.stats, max(0, now_us - local.read_at_us)
    heard = state.value(member, Key.COUNTS)
    if heard is None or not isinstance(heard.update.value, Counts):
        return None
    seen = heard.update.sent_at_us - offsets.get(member, 0)
    return heard.update.value.row, max(0, now_us - seen)


def _errant(
    state: GossipState, members: list[str], group_name: str, offsets: Mapping[str, int]
) -> dict[str, GtidSet | None]:
    """Each member's errant GTIDs from its last sampled gtid_executed, on this agent's clock.

    The group's UUIDs are its name only: agents do not read group_replication_view_change_uuid,
    whose GTIDs every member that was in the group holds (:mod:`grstats.core.errant`).
    """
    samples = {}
    for m in members:
        executed, sent_us = executed_of(state, m)
        if sent_us:
            samples[m] = ExecutedSample(executed, sent_us - offsets.get(m, 0))
    return errant_transactions(samples, (group_name,))


def throttled_by(
    state: GossipState,
    local: MemberSnapshot | None,
    now_us: int,
    offsets_us: Mapping[str, int] | None = None,
) -> tuple[str, ...]:
    """The members whose queues make flow control hold the local member's writers back.

    Empty while it does not (the group verdict's THROTTLING of the local member's row, by the
    same rule); for the events of flow control beginning and ceasing to throttle it.
    """
    if local is None:
        return ()
    offsets = offsets_us or {}
    view, _ = served_view(state, local)
    in_view = {row.member_id: row for row in view.members if row.member_id} if view.view_id else {}
    counts = {m: _counts(state, local, m, now_us, offsets) for m in in_view}
    servers = {m: server_of(state, local, m) for m in in_view}
    held, by = _flow_control(in_view, counts, servers)
    return tuple(sorted(by)) if local.member_id in held else ()


def _flow_control(
    in_view: Mapping[str, MemberRow],
    counts: Mapping[str, tuple[MemberStatsRow, int] | None],
    servers: Mapping[str, ServerSettings | None],
) -> tuple[set[str], set[str]]:
    """Return the writers flow control holds back and the members whose queues hold them."""
    held: set[str] = set()
    by: set[str] = set()
    for writer, row in in_view.items():
        if row.member_role != "PRIMARY" or row.member_state != "ONLINE":
            continue
        limits = (servers.get(writer) or _DEFAULT_SERVER).flow_control
        if limits.mode != "QUOTA":
            continue
        fresh_us = FRESH_PERIODS * limits.period * 1_000_000
        for member, other in in_view.items():
            known = counts.get(member)
            mode = (servers.get(member) or _DEFAULT_SERVER).flow_control.mode
            if other.member_state not in SENDING_STATES or known is None or mode != "QUOTA":
                continue
            stats, age_us = known
            if age_us <= fresh_us and (
                stats.count_transactions_in_queue > limits.certifier_threshold
                or stats.count_transactions_remote_in_applier_queue > limits.applier_threshold
            ):
                held.add(writer)
                by.add(member)
    return held, by


def _member_row(  # noqa: PLR0913  (one row from several sources)
    shown: MemberRow,
    counts: tuple[MemberStatsRow, int] | None,
    server: ServerSettings | None,
    *,
    connected: bool,
    lag: float | None,
    behind: int | None,
    throttling: bool,
    errant: GtidSet | None = None,
    split: bool = False,
    weight: int | None = None,
    skew_ms: int | None = None,
    progress: Progress | None = None,
) -> MemberStatusRow:
    stats, age_us = counts if counts is not None else (None, None)
    return MemberStatusRow(
        member_id=shown.member_id,
        member_host=shown.member_host,
        member_port=shown.member_port,
        member_state=shown.member_state,
        member_role=shown.member_role,
        member_version=shown.member_version,
        connected="YES" if connected else "NO",
        age_ms=age_us // 1000 if age_us is not None else None,
        applier_lag_seconds=lag,
        applier_queue=stats.count_transactions_remote_in_applier_queue if stats else None,
        certifier_queue=stats.count_transactions_in_queue if stats else None,
        transactions_behind=behind,
        read_only=_on_off(server.read_only) if server else None,
        super_read_only=_on_off(server.super_read_only) if server else None,
        throttling="YES" if throttling else "NO",
        errant_transactions=None if errant is None else str(errant),
        split_brain="YES" if split else "NO",
        member_weight=weight,
        clock_skew_ms=skew_ms,
        # TRANSACTIONS_LEFT, APPLY_RATE and ETA_S: NULL without a progress estimate
        transactions_left=progress.left if progress else None,
        apply_rate=progress.rate if progress else None,
        eta_s=progress.eta_s if progress else None,
    )


def _ms(us: int | None) -> int | None:
    """µs as ms, within an INTEGER column's range (24 days either way), None as None."""
    return None if us is None else max(-(2**31), min(2**31 - 1, round(us / 1000)))


def _on_off(flag: bool) -> str:
    return "ON" if flag else "OFF"


def _address(row: MemberRow) -> str:
    """``host:port`` of a member as its row shows it, else its MEMBER_ID."""
    if row.member_host:
        return f"{row.member_host}:{row.member_port}" if row.member_port else row.member_host
    return row.member_id
