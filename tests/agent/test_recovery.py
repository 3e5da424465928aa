"""Transactions left, the apply rate and ``eta_s``: the pure rules and where they show (issue 48)."""

from __future__ import annotations

import dataclasses
import functools
import io
import json
from typing import TYPE_CHECKING

import pytest
from rich.console import Console

from grstats.agent.gossip import Counts, GossipState, Key
from grstats.agent.metrics_series import member_families
from grstats.agent.recovery import (
    COUNTS_SPAN_US,
    WINDOW_US,
    Counted,
    RecoveryWatch,
    Sample,
    apply_rate,
    certified_at,
    committed_now,
    eta_s,
    progress,
    recovering_left,
    within_stated_error,
)
from grstats.agent.served import Served, served_tables
from grstats.agent.status import Progress, group_status
from grstats.cli.status_view import GroupStatus, catching_up, render_status
from grstats.cli.watch import WatchScreen
from grstats.core.gtid import GtidSet
from grstats.core.rows import REPLICATION_GROUP_MEMBER_STATUS, MemberStatsRow
from tests.agent.test_served import (
    GROUP,
    NOW,
    SECOND,
    SILENCE,
    A,
    B,
    C,
    group_view,
    learn,
    local_state,
    member,
    snapshot,
)

if TYPE_CHECKING:
    from grstats.agent.sources import GroupView, MemberSnapshot
    from grstats.core.rows import Value


def samples(*points: tuple[float, int, int]) -> list[Sample]:
    """Samples from (seconds, left, applied)."""
    return [Sample(round(at * SECOND), left, applied) for at, left, applied in points]


# -- the pure rules ---------------------------------------------------------------------------


def test_the_apply_rate_is_over_the_last_minute_and_needs_two_samples() -> None:
    """Applied per second from the oldest sample of the last minute to the newest."""
    assert apply_rate(samples((0, 100, 0))) is None
    assert apply_rate(samples((0, 100, 0), (2, 90, 8000))) == 4000.0
    old = samples((0, 100, 0), (100, 90, 1_000_000), (110, 80, 1_010_000))
    assert apply_rate(old) == 1000.0  # the sample 110 s back is out of the window
    assert WINDOW_US == 60 * SECOND
    assert apply_rate(samples((0, 100, 500), (1, 90, 10))) is None  # its counters started again


def test_the_eta_is_the_left_over_their_fall_since_the_peak() -> None:
    """0 when nothing is left; None while the left grow; the fall counts from the last peak."""
    assert eta_s(samples((0, 0, 0))) == 0.0
    assert eta_s(samples((0, 500, 0))) is None
    assert eta_s(samples((0, 100, 0), (1, 200, 0), (2, 300, 0))) is None  # a growing backlog
    assert eta_s(samples((0, 10_000, 0), (1, 7_000, 0), (2, 4_000, 0))) == pytest.approx(4 / 3)
    grew_then_fell = samples((0, 0, 0), (10, 5_000, 0), (20, 10_000, 0), (22, 8_000, 0))
    assert eta_s(grew_then_fell) == pytest.approx(8.0)  # 1000 a second since the peak at 20 s
    assert eta_s(samples((0, 500, 0), (1, 500, 0))) is None  # flat: not falling


def test_progress_counts_the_eta_from_now_and_rounds() -> None:
    """The newest sample's left, the rate and the ETA less the sample's age, never below 0."""
    kept = samples((0, 9_000, 0), (1, 6_000, 4_000))
    assert progress([]) is None
    assert progress(kept) == Progress(left=6_000, rate=4000.0, eta_s=2.0)
    assert progress(kept, age_us=SECOND // 2) == Progress(6_000, 4000.0, 1.5)
    assert progress(kept, age_us=5 * SECOND) == Progress(6_000, 4000.0, 0.0)


def test_the_stated_error_is_two_seconds_or_a_quarter() -> None:
    """Recovery may end 2 s or 25 % of the ETA either side of it, whichever is larger."""
    assert within_stated_error(4.0, 6.0)
    assert not within_stated_error(4.0, 6.1)
    assert within_stated_error(40.0, 30.0)
    assert not within_stated_error(40.0, 29.0)


def test_the_groups_count_is_its_sample_plus_what_it_certified_since() -> None:
    """An ONLINE member's sample, its applier queue then, and the positives certified since."""
    history = [
        Counted(10 * SECOND, certified=1_000, queued=5, applied=0),
        Counted(20 * SECOND, certified=6_000, queued=7, applied=0),
        Counted(30 * SECOND, certified=11_000, queued=9, applied=0),
    ]
    assert certified_at(history, 15 * SECOND) == (3_500.0, 5)
    assert certified_at(history, 30 * SECOND) == (11_000.0, 9)
    assert certified_at(history, 0) == (-4_000.0, 5)  # before the history: at its rate
    assert certified_at([], 0) is None
    executed = GtidSet.parse(f"{GROUP}:1-20000")
    assert committed_now(executed, 15 * SECOND, history) == 20_000 + 5 + 7_500
    assert committed_now(executed, 15 * SECOND, []) is None


def test_a_recovering_members_left_is_the_group_less_its_own_never_below_its_queue() -> None:
    """The largest of the ONLINE members' estimates less its executed; its queues and gaps floor it."""
    own = GtidSet.parse(f"{GROUP}:1-15000")
    stats = MemberStatsRow(member_id=C, count_transactions_in_queue=300)
    history = {A: [Counted(0, 0, 0, 0), Counted(10 * SECOND, 5_000, 0, 0)]}
    sampled = {A: (GtidSet.parse(f"{GROUP}:1-20000"), 0)}
    assert recovering_left(own, 200, stats, sampled, history) == 20_000 + 5_000 - 15_000
    assert recovering_left(own, 200, stats, sampled, {}) == 5_000  # the sample's gap alone
    assert recovering_left(own, 20_000, stats, {}, {}) == 20_000  # its applier channel's
    assert recovering_left(own, None, stats, {}, {}) == 300


# -- the watch over the gossip state ----------------------------------------------------------


def counts(uuid: str, *, checked: int = 0, applied: int = 0, applier_queue: int = 0) -> Counts:
    """A member's counts: certified, applied and waiting in its applier queue."""
    row = MemberStatsRow(
        member_id=uuid,
        count_transactions_checked=checked,
        count_transactions_remote_applied=applied,
        count_transactions_remote_in_applier_queue=applier_queue,
    )
    return Counts(row, gtids_present=True)


def recovering_read(view: GroupView, executed: int, at: int, queue: int = 0) -> MemberSnapshot:
    """C's read while it recovers: its gtid_executed holds the group's first ``executed``."""
    read = snapshot(C, view)
    return dataclasses.replace(
        read,
        read_at_us=at,
        gtid_executed=GtidSet.parse(f"{GROUP}:1-{executed}"),
        stats=MemberStatsRow(member_id=C, count_transactions_in_queue=queue),
        transactions_behind=queue,
    )


def test_the_watch_gives_its_own_recovering_members_eta_and_every_online_members() -> None:
    """C recovers at 4000/s while A commits 500/s: C's left, rate and ETA; B's backlog drains."""
    view = group_view(member(A, role="PRIMARY"), member(B), member(C, state="RECOVERING"))
    state = local_state(C, view)
    primary, secondary = GossipState(A, incarnation=1), GossipState(B, incarnation=1)
    primary.record_local(Key.VIEW, view, NOW)
    primary.record_local(Key.GTID_EXECUTED, GtidSet.parse(f"{GROUP}:1-20000"), NOW)
    watch = RecoveryWatch()
    for second in range(4):
        at = NOW + second * SECOND
        primary.record_local(Key.COUNTS, counts(A, checked=30_000 + 500 * second), at)
        secondary.record_local(Key.COUNTS, counts(B, applier_queue=3_000 - 1_000 * second), at)
        learn(state, primary, at)
        learn(state, secondary, at)
        watch.observe(state, recovering_read(view, 5_000 + 4_000 * second, at), at, {})
    found = watch.progress()
    # The group: 20000 sampled + 1500 certified since; C holds 17000.
    assert found[C] == Progress(left=4_500, rate=4000.0, eta_s=round(4_500 / 3_500, 3))
    assert found[B] == Progress(left=0, rate=0.0, eta_s=0.0)
    assert found[A] == Progress(left=0, rate=0.0, eta_s=0.0)


def test_a_remote_recovering_member_and_a_down_one_have_no_progress() -> None:
    """Only its own agent reads a RECOVERING member's gtid_executed each period; none for OFFLINE."""
    view = group_view(member(A, role="PRIMARY"), member(B, state="RECOVERING"))
    state = local_state(A, view)
    other = GossipState(B, incarnation=1)
    watch = RecoveryWatch()
    for second in range(3):
        at = NOW + second * SECOND
        other.record_local(Key.COUNTS, counts(B, applier_queue=100), at)
        learn(state, other, at)
        read = dataclasses.replace(snapshot(A, view), read_at_us=at)
        watch.observe(state, read, at, {})
    assert set(watch.progress()) == {A}


def test_the_history_restarts_when_the_state_changes_and_counts_are_bounded() -> None:
    """A member turning ONLINE starts a new history; counts older than the span are dropped."""
    watch = RecoveryWatch()
    view = group_view(member(A, role="PRIMARY"), member(C, state="RECOVERING"))
    state = local_state(C, view)
    primary = GossipState(A, incarnation=1)
    primary.record_local(Key.VIEW, view, NOW)
    for second in range(0, 200, 10):
        at = NOW + second * SECOND
        primary.record_local(Key.COUNTS, counts(A, checked=second), at)
        learn(state, primary, at)
        watch.observe(state, recovering_read(view, 100 + second, at), at, {})
    kept = watch._counts[A]
    assert kept[-1].at_us - kept[0].at_us <= COUNTS_SPAN_US
    assert watch.progress()[C].rate == pytest.approx(1.0)
    online = group_view(member(A, role="PRIMARY"), member(C))
    at = NOW + 200 * SECOND
    watch.observe(local_state(C, online), snapshot_at(C, online, at), at, {})
    assert watch.progress()[C] == Progress(left=0, rate=None, eta_s=0.0)


def snapshot_at(uuid: str, view: GroupView, at: int) -> MemberSnapshot:
    """A fresh read of ``uuid`` at ``at``."""
    return dataclasses.replace(snapshot(uuid, view), read_at_us=at)


# -- where it shows ---------------------------------------------------------------------------


def recovering_tables() -> dict[str, tuple[list[str], list[tuple[Value, ...]]]]:
    """The status tables of A, B and C with C RECOVERING, its progress given, as on the wire."""
    view = group_view(member(A, role="PRIMARY"), member(B), member(C, state="RECOVERING"))
    state = local_state(C, view)
    progress_of = {C: Progress(8_000, 4000.0, 2.3), B: Progress(0, 500.0, 0.0)}
    group, rows = group_status(state, snapshot(C, view), NOW, SILENCE, progress=progress_of)
    return {
        "replication_group_status": (list(group.as_dict()), [group.values()]),
        "replication_group_member_status": (list(rows[0].as_dict()), [r.values() for r in rows]),
    }


def test_the_status_rows_end_with_the_progress_columns() -> None:
    """TRANSACTIONS_LEFT, APPLY_RATE and ETA_S are the member status table's last columns."""
    names, rows = recovering_tables()["replication_group_member_status"]
    assert names[-3:] == ["TRANSACTIONS_LEFT", "APPLY_RATE", "ETA_S"]
    assert names[-4] == "MEMBER_WEIGHT"  # appended after the columns older clients read
    by_id = {row[0]: dict(zip(names, row, strict=True)) for row in rows}
    assert [by_id[m]["TRANSACTIONS_LEFT"] for m in (A, B, C)] == [None, 0, 8_000]
    assert (by_id[C]["APPLY_RATE"], by_id[C]["ETA_S"]) == (4000.0, 2.3)


def test_query_status_gives_eta_s_in_json_and_a_catching_up_line() -> None:
    """The JSON's members have transactions_left, apply_rate and eta_s; the text says who catches up."""
    status = GroupStatus.from_tables("db3:7400", recovering_tables())
    members = {m["member_id"]: m for m in json.loads(render_status(status, "json"))["members"]}
    assert (members[C]["transactions_left"], members[C]["apply_rate"]) == (8_000, 4000.0)
    assert members[C]["eta_s"] == 2.3
    assert members[A]["eta_s"] is None
    line = "db-c:3306 RECOVERING: 8000 transactions left at 4000/s, ETA 2.3 s"
    assert catching_up(status) == line
    text = render_status(status, "table")
    assert f"catching up: {line}\n" in text
    assert "ETA_S" in text  # the members' table, every column


def test_the_watch_screen_shows_the_catching_up_line() -> None:
    """The screen has a catching-up line naming the member by its short id while it recovers."""
    status = GroupStatus.from_tables("db3:7400", recovering_tables())
    screen = WatchScreen(status.agent, 1.0)
    screen.answered(status)
    console = Console(file=io.StringIO(), width=80, height=24, color_system=None)
    console.print(screen.render(1e9))
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert f"catching up {C[:8]} RECOVERING 8000 transactions left at 4000/s, ETA 2.3 s" in shown


def test_the_metrics_have_each_members_left_and_eta_only_while_some_are_left() -> None:
    """grstats_member_recovery_transactions_left and ..._eta_seconds, by member; none for 0 or NULL."""
    view = group_view(member(A, role="PRIMARY"), member(B), member(C, state="RECOVERING"))
    state = local_state(C, view)
    plain = served_tables(state, snapshot(C, view), NOW, SILENCE, extended=True)
    names, rows = recovering_tables()["replication_group_member_status"]
    status = (REPLICATION_GROUP_MEMBER_STATUS.columns, rows)
    builders = {name: functools.partial(plain.__getitem__, name) for name in plain}
    served = Served({**builders, "replication_group_member_status": lambda: status})
    families = {family.name: family for family in member_families(served, GROUP)}
    left = families["grstats_member_recovery_transactions_left"]
    eta = families["grstats_member_recovery_eta_seconds"]
    assert {s.labels["member_id"]: s.value for s in left.samples} == {C: 8000.0}  # B: 0 left
    assert {s.labels["member_id"]: s.value for s in eta.samples} == {C: 2.3}
    assert names[-1] == "ETA_S"
