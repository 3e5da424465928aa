"""The group status an agent serves: the verdict over its view, and each member's part in it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from grstats.agent.gossip import Counts, GossipState, Key
from grstats.agent.served import served_tables
from grstats.agent.sources import GroupView, MemberSnapshot
from grstats.agent.status import group_status
from grstats.core.gtid import GtidSet
from grstats.core.model import FlowControlSettings, ServerSettings
from grstats.core.rows import MemberStatsRow
from grstats.core.stable_set import Stall
from tests.agent.test_served import (
    GROUP,
    NOW,
    SECOND,
    SILENCE,
    VIEW_ID,
    A,
    B,
    C,
    group_view,
    learn,
    local_state,
    member,
    rows,
    snapshot,
)


def settings(mode: str = "QUOTA", applier: int = 25000, certifier: int = 25000) -> ServerSettings:
    """A member's variables with the given flow-control mode and thresholds."""
    flow = FlowControlSettings(mode=mode, applier_threshold=applier, certifier_threshold=certifier)
    return ServerSettings(read_only=True, super_read_only=True, flow_control=flow)


def peer(
    uuid: str,
    view: GroupView,
    *,
    applier_queue: int = 0,
    certifier_queue: int = 0,
    behind: int | None = None,
    server: ServerSettings | None = None,
    at: int = NOW,
) -> GossipState:
    """Another member's agent: its view, counts (queues, behind) and variables, sent at ``at``."""
    state = GossipState(uuid, incarnation=1)
    state.record_local(Key.VIEW, view, at)
    row = MemberStatsRow(
        member_id=uuid,
        count_transactions_in_queue=certifier_queue,
        count_transactions_remote_in_applier_queue=applier_queue,
    )
    state.record_local(Key.COUNTS, Counts(row, gtids_present=True, transactions_behind=behind), at)
    if server is not None:
        state.record_local(Key.SERVER, server, at)
    return state


def local(uuid: str, view: GroupView, server: ServerSettings | None = None) -> MemberSnapshot:
    """The local member's fresh read, with its variables."""
    read = snapshot(uuid, view)
    return MemberSnapshot(
        member_id=read.member_id,
        read_at_us=read.read_at_us,
        view=read.view,
        stats=read.stats,
        applier=read.applier,
        gtid_executed=read.gtid_executed,
        transactions_behind=0,
        server=server or ServerSettings(),
    )


def status_of(
    state: GossipState, read: MemberSnapshot | None, now: int = NOW
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The status row and member rows (by MEMBER_ID) as dicts keyed by column name."""
    group, members = group_status(state, read, now, SILENCE)
    return group.as_dict(), {m.member_id: m.as_dict() for m in members}


def three() -> GroupView:
    """A healthy single-primary group of A (primary), B and C."""
    return group_view(member(A, role="PRIMARY"), member(B), member(C))


def test_three_healthy_members_in_the_served_tables() -> None:
    """Three ONLINE members: OK, tolerance 1, single-primary, A the primary; both tables served."""
    view = three()
    state = local_state(A, view)
    for other in (B, C):
        learn(state, peer(other, view, behind=3, server=settings()), NOW)
    tables = served_tables(state, local(A, view), NOW, SILENCE)
    (group,) = rows(tables, "replication_group_status")
    assert group == {
        "GROUP_NAME": "8a84f397-aaa4-18df-89ab-c70aa9823561",
        "VIEW_ID": "16036502905383892:9",
        "STATUS": "OK",
        "STATUS_TEXT": "Group is ONLINE and can tolerate up to ONE failure.",
        "TOLERANCE": 1,
        "MODE": "single-primary",
        "PRIMARY_MEMBERS": A,
        "THROTTLED": "NO",
        "THROTTLED_BY": "",
        "AS_OF": NOW,
        "GROUP_LABEL": "",
        "STABLE_SET_STALLED_S": None,
        "STABLE_SET_HELD_BY": "",
        "ROWS_VALIDATING_PER_MINUTE": None,
    }
    members = {row["MEMBER_ID"]: row for row in rows(tables, "replication_group_member_status")}
    assert list(members) == [A, B, C]
    assert members[B]["TRANSACTIONS_BEHIND"] == 3
    assert (members[B]["READ_ONLY"], members[B]["SUPER_READ_ONLY"]) == ("ON", "ON")
    assert (members[A]["READ_ONLY"], members[A]["TRANSACTIONS_BEHIND"]) == ("OFF", 0)
    assert members[C]["CONNECTED"] == "YES"
    lag = {row["MEMBER_ID"]: row for row in rows(tables, "replication_group_member_lag")}
    assert [lag[m]["TRANSACTIONS_BEHIND"] for m in (A, B, C)] == [0, 3, 3]


def test_member_rows_say_freshness_and_unknown_values_are_null() -> None:
    """AGE_MS is the counts' age; a member never heard has NULL queues, behind and flags."""
    view = three()
    state = local_state(A, view)
    learn(state, peer(B, view, applier_queue=7, certifier_queue=2, at=NOW - 3 * SECOND), NOW)
    _, members = status_of(state, local(A, view))
    assert (members[B]["AGE_MS"], members[B]["APPLIER_QUEUE"], members[B]["CERTIFIER_QUEUE"]) == (
        3000,
        7,
        2,
    )
    assert members[B]["READ_ONLY"] is None  # its variables were never heard
    assert {k: members[C][k] for k in ("AGE_MS", "APPLIER_QUEUE", "TRANSACTIONS_BEHIND")} == {
        "AGE_MS": None,
        "APPLIER_QUEUE": None,
        "TRANSACTIONS_BEHIND": None,
    }
    assert members[C]["CONNECTED"] == "NO"


def test_an_agent_not_heard_keeps_its_state_and_the_sentence_says_so() -> None:
    """B's agent fell silent: B stays ONLINE from the view, CONNECTED NO, and the text says it."""
    view = three()
    state = local_state(A, view)
    learn(state, peer(B, view, at=NOW - 60 * SECOND), NOW - 60 * SECOND)
    learn(state, peer(C, view), NOW)
    group, members = status_of(state, local(A, view))
    assert (members[B]["MEMBER_STATE"], members[B]["CONNECTED"]) == ("ONLINE", "NO")
    assert group["STATUS"] == "OK"
    assert group["STATUS_TEXT"].endswith(
        " 1 member is not connected: its rows are the last received."
    )


def test_a_departed_member_is_listed_offline_and_makes_the_status_partial() -> None:
    """C left the view: listed OFFLINE with its last host, not counted in quorum, status partial."""
    old = three()
    view = group_view(member(A, role="PRIMARY"), member(B), view_id="16036502905383892:10")
    state = local_state(A, old)
    learn(state, peer(C, old), NOW)
    learn(state, peer(B, view), NOW)
    group, members = status_of(state, local(A, view))
    assert (group["STATUS"], group["TOLERANCE"]) == ("OK_NO_TOLERANCE_PARTIAL", 0)
    assert group["STATUS_TEXT"].endswith(" 1 member is not active.")
    assert (members[C]["MEMBER_STATE"], members[C]["MEMBER_HOST"]) == ("OFFLINE", "db-c")


def test_no_quorum_is_said_from_the_member_whose_view_it_is() -> None:
    """A's view with B UNREACHABLE of two: NO_QUORUM visible from A's host and port."""
    view = group_view(member(A, role="PRIMARY", port=3306), member(B, state="UNREACHABLE"))
    state = local_state(A, view)
    group, _ = status_of(state, local(A, view))
    assert group["STATUS"] == "NO_QUORUM"
    assert "as visible from 'db-a:3306'" in group["STATUS_TEXT"]


def test_local_member_down_uses_the_freshest_view_heard() -> None:
    """The local server is down: the verdict is the freshest view heard, visible from its member."""
    view = three()
    state = local_state(A, view)
    learn(state, peer(B, view), NOW)
    group, members = status_of(state, None)
    assert (group["STATUS"], group["VIEW_ID"]) == ("OK", "16036502905383892:9")
    assert members[A]["MEMBER_STATE"] == "ONLINE"


def test_no_view_known_is_unknown() -> None:
    """An agent whose member never joined and heard no view: UNKNOWN, no mode, no group name."""
    alone = GroupView(members=(member(A, state="OFFLINE", role=""),))
    state = GossipState(A, incarnation=1)
    group, members = status_of(state, local(A, alone))
    assert (group["STATUS"], group["MODE"], group["GROUP_NAME"]) == ("UNKNOWN", "", "")
    assert list(members) == [A]


def test_multi_primary_lists_every_online_member_as_primary() -> None:
    """Multi-primary: MODE multi-primary and every ONLINE member in PRIMARY_MEMBERS."""
    rows_ = (member(A, role="PRIMARY"), member(B, role="PRIMARY"), member(C, role="PRIMARY"))
    view = GroupView(members=rows_, view_id="1:3", group_name="g", single_primary_mode=False)
    state = local_state(A, view)
    group, _ = status_of(state, local(A, view))
    assert group["MODE"] == "multi-primary"
    assert group["PRIMARY_MEMBERS"] == f"{A},{B},{C}"


class TestFlowControl:
    """Throttling judged as GR's flow-control step does: the writer's thresholds, QUOTA mode."""

    def judge(
        self, *, primary: ServerSettings, others: dict[str, dict[str, Any]]
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """The status when A (the primary, with ``primary``'s variables) hears B and C."""
        view = three()
        state = local_state(A, view)
        for uuid, news in others.items():
            learn(state, peer(uuid, view, **news), NOW)
        return status_of(state, local(A, view, server=primary))

    def test_a_queue_over_the_writers_threshold_throttles_it(self) -> None:
        """B's applier queue above the primary's applier threshold: THROTTLED, by B, A throttling."""
        group, members = self.judge(
            primary=settings(applier=100),
            others={B: {"applier_queue": 101, "server": settings(applier=10**6)}, C: {}},
        )
        assert (group["THROTTLED"], group["THROTTLED_BY"]) == ("YES", B)
        assert [members[m]["THROTTLING"] for m in (A, B, C)] == ["YES", "NO", "NO"]

    def test_at_the_threshold_is_not_over_it(self) -> None:
        """A queue equal to the threshold does not hold (GR tests waiting > threshold)."""
        group, _ = self.judge(primary=settings(certifier=50), others={B: {"certifier_queue": 50}})
        assert group["THROTTLED"] == "NO"

    def test_the_certifier_queue_counts_too(self) -> None:
        """A certifier queue above the writer's certifier threshold throttles as well."""
        group, _ = self.judge(primary=settings(certifier=50), others={C: {"certifier_queue": 51}})
        assert group["THROTTLED_BY"] == C

    def test_a_writer_in_disabled_mode_is_never_throttled(self) -> None:
        """The primary's mode DISABLED: no throttling whatever the queues."""
        group, _ = self.judge(
            primary=settings(mode="DISABLED", applier=1), others={B: {"applier_queue": 10**6}}
        )
        assert group["THROTTLED"] == "NO"

    def test_a_member_in_disabled_mode_holds_no_one(self) -> None:
        """A member whose own mode is DISABLED does not count (its stats message says so)."""
        group, _ = self.judge(
            primary=settings(applier=1),
            others={B: {"applier_queue": 500, "server": settings(mode="DISABLED")}},
        )
        assert group["THROTTLED"] == "NO"

    def test_stale_counts_hold_no_one(self) -> None:
        """Counts older than two flow-control periods no longer hold writers back."""
        group, _ = self.judge(
            primary=settings(applier=1),
            others={B: {"applier_queue": 500, "at": NOW - 3 * SECOND}},
        )
        assert group["THROTTLED"] == "NO"
        group, _ = self.judge(
            primary=settings(applier=1),
            others={B: {"applier_queue": 500, "at": NOW - 2 * SECOND}},
        )
        assert group["THROTTLED"] == "YES"

    def test_unknown_variables_are_mysqls_defaults(self) -> None:
        """A writer whose variables are unknown is judged with MySQL's default 25000."""
        view = three()
        state = local_state(B, view)
        learn(state, peer(A, view), NOW)  # the primary: no Server value heard
        learn(state, peer(C, view, applier_queue=25001), NOW)
        group, members = status_of(state, local(B, view))
        assert (group["THROTTLED"], members[A]["THROTTLING"]) == ("YES", "YES")


# -- the view served and the members counted: Shell's get_members and check_group_status ------

D = "dddddddd-dddd-dddd-dddd-dddddddddddd"


def test_an_expelled_member_keeping_its_view_id_serves_the_groups_newer_view() -> None:
    """A is ERROR with the VIEW_ID it was expelled from: its agent serves B's newer view (OK_NO_TOLERANCE_PARTIAL).

    Shell asks the group's primary, whose view is the newer one; VIEW_IDs order by their
    monotonic part (Gcs_xcom_view_identifier::init).
    """
    old = three()
    expelled = group_view(member(A, state="ERROR", role=""))  # the old VIEW_ID, :9
    newer = group_view(member(B, role="PRIMARY"), member(C), view_id="16036502905383892:10")
    state = local_state(A, old)
    learn(state, peer(B, newer), NOW)
    learn(state, peer(C, newer), NOW)
    group, members = status_of(state, local(A, expelled))
    assert (group["STATUS"], group["VIEW_ID"]) == ("OK_NO_TOLERANCE_PARTIAL", newer.view_id)
    assert group["STATUS_TEXT"] == "Group is NOT tolerant to any failures. 1 member is not active."
    assert members[A]["MEMBER_STATE"] == "OFFLINE"  # as the group sees it: not in its view


def test_a_minoritys_view_gives_way_to_the_view_the_majority_installed_after_it() -> None:
    """A shows B and C UNREACHABLE: its own view while C's has the same VIEW_ID, C's newer one after."""
    stale = group_view(
        member(A, role="PRIMARY"), member(B, state="UNREACHABLE"), member(C, state="UNREACHABLE")
    )
    same = group_view(member(A, state="UNREACHABLE"), member(B, role="PRIMARY"), member(C))
    newer = group_view(member(B, role="PRIMARY"), member(C), view_id="16036502905383892:10")
    state = local_state(A, three())
    other = peer(C, same, at=NOW + SECOND)  # read after A's: the freshest, yet not newer
    learn(state, other, NOW + SECOND)
    group, _ = status_of(state, local(A, stale))
    assert (group["STATUS"], group["VIEW_ID"]) == ("NO_QUORUM", VIEW_ID)
    other.record_local(Key.VIEW, newer, NOW + 2 * SECOND)
    learn(state, other, NOW + 2 * SECOND)
    group, _ = status_of(state, local(A, stale))
    assert (group["STATUS"], group["VIEW_ID"]) == ("OK_NO_TOLERANCE_PARTIAL", newer.view_id)


def test_other_members_error_rows_leave_the_view_as_in_shells_get_members() -> None:
    """B and C listed ERROR in A's view (a GR bug): out of the view, so A and D UNREACHABLE have no quorum.

    Shell's get_members reads ``WHERE m.member_id = @@server_uuid OR m.member_state <>
    'ERROR'`` (mysqlshdk/libs/mysql/group_replication.cc): 1 ONLINE of 2 is no quorum.
    """
    view = group_view(
        member(A, role="PRIMARY"),
        member(B, state="ERROR", role=""),
        member(C, state="ERROR", role=""),
        member(D, state="UNREACHABLE"),
    )
    state = local_state(A, view)
    learn(state, peer(D, view), NOW)
    group, members = status_of(state, local(A, view))
    assert group["STATUS"] == "NO_QUORUM"
    assert group["STATUS_TEXT"] == (
        "Group has no quorum as visible from 'db-a:3306' and cannot process write transactions."
        " 3 members are not active."
    )
    assert members[B]["MEMBER_STATE"] == "ERROR"  # the row still shows what the view says


def test_a_clock_not_known_within_a_tenth_of_a_second_has_no_skew() -> None:
    """CLOCK_SKEW_MS is NULL, the flag that its times are unreliable, where the offset's error exceeds 0.1 s."""
    view = three()
    state = local_state(A, view)
    for other in (B, C):
        learn(state, peer(other, view), NOW)
    offsets = {B: 5 * SECOND, C: 0}
    for error_us, shown in ((50_000, 5_000), (200_000, None)):
        _, members = group_status(
            state,
            local(A, view),
            NOW,
            SILENCE,
            offsets_us=offsets,
            offset_errors_us={B: error_us, C: 1_000},
        )
        skew = {m.member_id: m.clock_skew_ms for m in members}
        assert skew == {A: 0, B: shown, C: 0}, error_us


def test_the_group_label_is_the_served_views_else_the_most_common() -> None:
    """The served view's label names the group; without one, most views' label, ties by name."""
    view = three()
    state = local_state(A, view)
    learn(state, peer(B, replace(view, group_label="orders"), server=settings()), NOW)
    learn(state, peer(C, replace(view, group_label="sales"), server=settings()), NOW)
    tables = served_tables(state, local(A, view), NOW, SILENCE)
    assert rows(tables, "replication_group_status")[0]["GROUP_LABEL"] == "orders"  # a tie
    assert tables.group_label == "orders"
    labelled = served_tables(state, local(A, replace(view, group_label="sales")), NOW, SILENCE)
    assert rows(labelled, "replication_group_status")[0]["GROUP_LABEL"] == "sales"
    other = replace(view, group_name="00000000-0000-0000-0000-000000000001", group_label="x")
    learn(state, peer(C, other, server=settings()), NOW)
    alone = served_tables(state, local(A, view), NOW, SILENCE)
    assert rows(alone, "replication_group_status")[0]["GROUP_LABEL"] == "orders"


class TestStableSetHolders:
    """Who holds a stalled stable set back (agent/status.py's rule; the stall itself is given)."""

    STALL = Stall(for_us=150 * SECOND, certified=4000, rows_per_minute=1200)

    def test_an_applier_behind_holds_it_when_no_member_is_unreachable(self) -> None:
        """C's sampled gtid_executed lacks what A and B both have: C is named."""
        view = three()
        state = local_state(A, view)
        for other, text in ((B, "1-900"), (C, "1-400")):
            heard = peer(other, view)
            heard.record_local(Key.GTID_EXECUTED, GtidSet.parse(f"{GROUP}:{text}"), NOW)
            learn(state, heard, NOW)
        state.record_local(Key.GTID_EXECUTED, GtidSet.parse(f"{GROUP}:1-950"), NOW)
        group, _ = group_status(state, local(A, view), NOW, SILENCE, stall=self.STALL)
        assert (group.stable_set_stalled_s, group.stable_set_held_by) == (150, C)
        assert group.rows_validating_per_minute == 1200

    def holders(self, view: GroupView, sets: dict[str, str]) -> str:
        """STABLE_SET_HELD_BY of A's status when each member sampled ``sets[member]`` of GROUP."""
        state = local_state(A, view)
        for other, text in sets.items():
            if other != A:
                heard = peer(other, view)
                heard.record_local(Key.GTID_EXECUTED, GtidSet.parse(f"{GROUP}:{text}"), NOW)
                learn(state, heard, NOW)
        state.record_local(Key.GTID_EXECUTED, GtidSet.parse(f"{GROUP}:{sets[A]}"), NOW)
        group, _ = group_status(state, local(A, view), NOW, SILENCE, stall=self.STALL)
        return group.stable_set_held_by

    def test_members_equally_behind_are_all_named(self) -> None:
        """C and D both at 1-400 hold the stable set: both named (certifier.cc intersects every ONLINE member's set)."""
        view = group_view(member(A, role="PRIMARY"), member(B), member(C), member(D))
        found = self.holders(view, {A: "1-950", B: "1-900", C: "1-400", D: "1-400"})
        assert found == f"{C},{D}"

    def test_a_recovering_member_is_neither_blamed_nor_counted(self) -> None:
        """The certifier ignores a RECOVERING sender (Certifier::handle_certifier_data): C, the ONLINE laggard, is named."""
        view = group_view(member(A, role="PRIMARY"), member(B, state="RECOVERING"), member(C))
        assert self.holders(view, {A: "1-950", B: "1-100", C: "1-400"}) == C

    def test_an_unreachable_member_is_named_before_any_applier(self) -> None:
        """C UNREACHABLE in the view: C alone, whatever the sets."""
        view = group_view(member(A, role="PRIMARY"), member(B), member(C, state="UNREACHABLE"))
        state = local_state(A, view)
        learn(state, peer(B, view), NOW)
        group, _ = group_status(state, local(A, view), NOW, SILENCE, stall=self.STALL)
        assert group.stable_set_held_by == C

    def test_no_stall_no_columns(self) -> None:
        """While the stable set advances the columns are NULL and ''."""
        view = three()
        group, _ = group_status(local_state(A, view), local(A, view), NOW, SILENCE)
        assert (group.stable_set_stalled_s, group.stable_set_held_by) == (None, "")
