"""The served tables: freshest view, departed members kept, MySQL's empty rows, lag, freshness."""

from __future__ import annotations

import dataclasses
from typing import Any

from grstats.agent.gossip import Counts, GossipState, Key
from grstats.agent.known import freshest_view
from grstats.agent.served import Served, served_tables
from grstats.agent.sources import GroupView, MemberSnapshot
from grstats.core.gtid import GtidSet
from grstats.core.rows import EXTENDED_COLUMNS, ApplierStatusRow, MemberRow, MemberStatsRow

A, B, C = (f"{c * 8}-{c * 4}-{c * 4}-{c * 4}-{c * 12}" for c in "abc")
GROUP = "8a84f397-aaa4-18df-89ab-c70aa9823561"
VIEW_ID = "16036502905383892:9"
SECOND = 1_000_000
NOW = 1_700_000_000 * SECOND
SILENCE = 10 * SECOND


def member(
    uuid: str, state: str = "ONLINE", role: str = "SECONDARY", port: int = 3306
) -> MemberRow:
    """A replication_group_members row."""
    return MemberRow(
        member_id=uuid,
        member_host=f"db-{uuid[0]}",
        member_port=port,
        member_state=state,
        member_role=role,
        member_version="8.0.36",
        member_communication_stack="XCom",
    )


def group_view(*rows: MemberRow, view_id: str = VIEW_ID) -> GroupView:
    """A membership view."""
    return GroupView(
        members=tuple(sorted(rows, key=lambda r: r.member_id)), view_id=view_id, group_name=GROUP
    )


def snapshot(uuid: str, view: GroupView, checked: int = 100) -> MemberSnapshot:
    """The local member's fresh read."""
    return MemberSnapshot(
        member_id=uuid,
        read_at_us=NOW,
        view=view,
        stats=MemberStatsRow(
            view_id=view.view_id, member_id=uuid, count_transactions_checked=checked
        ),
        applier=ApplierStatusRow(member_id=uuid),
        gtid_executed=GtidSet.parse(f"{GROUP}:1-{checked}"),
    )


def peer(uuid: str, view: GroupView, checked: int, at: int = NOW) -> GossipState:
    """Another member's agent with its view and counts recorded at ``at``."""
    state = GossipState(uuid, incarnation=1)
    state.record_local(Key.VIEW, view, at)
    row = MemberStatsRow(member_id=uuid, count_transactions_checked=checked)
    state.record_local(Key.COUNTS, Counts(row, gtids_present=True), at)
    return state


def local_state(uuid: str, view: GroupView) -> GossipState:
    """An agent whose own source showed ``view`` (so the members it lists are known)."""
    state = GossipState(uuid, incarnation=1)
    state.record_local(Key.VIEW, view, NOW - 60 * SECOND)
    return state


def learn(state: GossipState, other: GossipState, now: int, via: str = "db-x:7400") -> None:
    """``state`` takes everything ``other`` holds."""
    state.merge(other.updates_for(state.digest()), now, via=via)


def rows(tables: Served, name: str) -> list[dict[str, Any]]:
    """The rows of one served table as dicts keyed by column name."""
    columns, values = tables[name]
    return [{c.name: v for c, v in zip(columns, row, strict=True)} for row in values]


def test_local_view_wins_and_view_id_is_the_same_on_every_row() -> None:
    """In a group, the local member's own view is served; every stats row has its VIEW_ID."""
    view = group_view(member(A, role="PRIMARY"), member(B))
    state = local_state(A, view)
    learn(state, peer(B, group_view(member(A), member(B), view_id="16036502905383892:8"), 7), NOW)
    tables = served_tables(state, snapshot(A, view), NOW, SILENCE)
    members = rows(tables, "replication_group_members")
    assert [(m["MEMBER_ID"], m["MEMBER_ROLE"]) for m in members] == [
        (A, "PRIMARY"),
        (B, "SECONDARY"),
    ]
    stats = rows(tables, "replication_group_member_stats")
    assert [s["VIEW_ID"] for s in stats] == [VIEW_ID, VIEW_ID]
    assert [s["COUNT_TRANSACTIONS_CHECKED"] for s in stats] == [100, 7]


def test_freshest_remote_view_when_the_local_member_is_out() -> None:
    """When the local member is OFFLINE (no view id), the most recently read view is served."""
    offline = snapshot(A, GroupView(members=(member(A, state="OFFLINE", role=""),)))
    state = local_state(A, group_view(member(A), member(B), member(C)))
    older = group_view(member(B), member(C, state="UNREACHABLE"), view_id="1:4")
    newer = group_view(member(B), view_id="1:5")
    learn(state, peer(B, older, 1, at=NOW - 5 * SECOND), NOW)
    learn(state, peer(C, newer, 1, at=NOW - SECOND), NOW)
    assert freshest_view(state, offline) == newer


def test_departed_member_stays_listed_offline_with_its_last_rows() -> None:
    """A member that left the view is listed as OFFLINE (WL#2860), its last counts kept."""
    view = group_view(member(A, role="PRIMARY"), member(B))
    state = local_state(A, group_view(member(A), member(B), member(C)))
    learn(state, peer(C, group_view(member(A), member(B), member(C)), 55), NOW)
    state.record_local(Key.VIEW, view, NOW)  # then C left the group
    tables = served_tables(state, snapshot(A, view), NOW, SILENCE)
    departed = rows(tables, "replication_group_members")[2]
    assert (departed["MEMBER_ID"], departed["MEMBER_STATE"], departed["MEMBER_ROLE"]) == (
        C,
        "OFFLINE",
        "",
    )
    assert departed["MEMBER_HOST"] == "db-c"
    assert rows(tables, "replication_group_member_stats")[2]["COUNT_TRANSACTIONS_CHECKED"] == 55


def test_member_never_heard_shows_mysqls_empty_remote_row() -> None:
    """A member in the view whose stats never arrived shows zeros and '' with its ids.

    As MySQL's ``get_group_member_stats`` (plugin/group_replication/src/ps_information.cc)
    shows a member with no stats message received yet.
    """
    view = group_view(member(A), member(B))
    tables = served_tables(GossipState(A, incarnation=1), snapshot(A, view), NOW, SILENCE)
    unheard = rows(tables, "replication_group_member_stats")[1]
    assert (unheard["MEMBER_ID"], unheard["VIEW_ID"], unheard["COUNT_TRANSACTIONS_CHECKED"]) == (
        B,
        VIEW_ID,
        0,
    )
    assert unheard["TRANSACTIONS_COMMITTED_ALL_MEMBERS"] == ""


def test_applying_lag_uses_the_members_clock() -> None:
    """While applying, lag is the member's last report's time on its own clock minus the original commit."""
    view = group_view(member(A), member(B))
    other = GossipState(B, incarnation=1)  # B's clock runs 1 s ahead of ours
    other.record_local(Key.VIEW, view, NOW + SECOND)
    row = MemberStatsRow(member_id=B)
    other.record_local(Key.COUNTS, Counts(row, gtids_present=True), NOW + SECOND)
    other.record_local(
        Key.APPLIER,
        ApplierStatusRow(
            member_id=B,
            applying_transaction=f"{GROUP}:7",
            applying_transaction_original_commit_timestamp=NOW - 3 * SECOND,
        ),
        NOW + SECOND,
    )
    state = local_state(A, view)
    learn(state, other, NOW)
    for served_at in (NOW, NOW + 500_000):  # the same figure until B's next report
        lag = rows(
            served_tables(state, snapshot(A, view), served_at, SILENCE, offsets_us={B: SECOND}),
            "replication_group_member_lag",
        )
        assert lag[1]["APPLIER_LAG_SECONDS"] == 4.0, served_at


def test_extended_columns() -> None:
    """CONNECTED, IN_VIEW, LAST_SEEN, AGE_MS and SOURCE say how fresh each row is and whence."""
    view = group_view(member(A), member(B))
    state = local_state(A, view)
    learn(state, peer(B, view, 9, at=NOW - 2 * SECOND), NOW - 2 * SECOND, via="db-b:7400")
    later = NOW + 20 * SECOND
    local = dataclasses.replace(snapshot(A, view), read_at_us=later)
    tables = served_tables(state, local, later, SILENCE, extended=True)
    columns = [c.name for c in tables["replication_group_member_stats"][0]]
    assert columns[-5:] == [c.name for c in EXTENDED_COLUMNS]
    own, remote = rows(tables, "replication_group_member_stats")
    assert (own["CONNECTED"], own["IN_VIEW"], own["SOURCE"], own["AGE_MS"]) == (
        "YES",
        "YES",
        "local",
        0,
    )
    assert (remote["CONNECTED"], remote["IN_VIEW"], remote["SOURCE"]) == ("NO", "YES", "db-b:7400")
    assert remote["AGE_MS"] == 22_000
    assert remote["LAST_SEEN"] == NOW - 2 * SECOND


def test_a_clock_ahead_and_not_yet_known_never_puts_last_seen_in_the_future() -> None:
    """A member 5 s ahead whose offset is unknown is reported when received, never in the future."""
    view = group_view(member(A), member(B))
    state = local_state(A, view)
    learn(state, peer(B, view, 9, at=NOW + 5 * SECOND), NOW, via="db-b:7400")
    later = NOW + 2 * SECOND
    tables = served_tables(state, snapshot(A, view), later, SILENCE, extended=True)
    for name in ("replication_group_members", "replication_group_member_stats"):
        remote = next(row for row in rows(tables, name) if row["MEMBER_ID"] == B)
        assert (remote["LAST_SEEN"], remote["AGE_MS"]) == (NOW, 2_000), name


def test_remembered_members_are_listed_at_once_not_connected() -> None:
    """After a restart, members from the registry are listed before anyone is heard."""
    state = GossipState(A, incarnation=2)
    row = MemberStatsRow(member_id=B, count_transactions_checked=77)
    state.seed(
        B, {Key.COUNTS: Counts(row, gtids_present=True)}, seen_us=NOW - 60 * SECOND, via="registry"
    )
    local = snapshot(A, group_view(member(A), member(B)))
    stats = rows(
        served_tables(state, local, NOW, SILENCE, extended=True), "replication_group_member_stats"
    )
    assert (
        stats[1]["MEMBER_ID"],
        stats[1]["COUNT_TRANSACTIONS_CHECKED"],
        stats[1]["CONNECTED"],
    ) == (B, 77, "NO")
    fresh = peer(B, group_view(member(A), member(B)), 78)
    learn(state, fresh, NOW)
    stats = rows(
        served_tables(state, local, NOW, SILENCE, extended=True), "replication_group_member_stats"
    )
    assert (stats[1]["COUNT_TRANSACTIONS_CHECKED"], stats[1]["CONNECTED"]) == (78, "YES")
