"""Issue 48, point 3: a member's Group Replication log lines as values, kept and on the wire.

The row's rules (error_log's columns, storage/perfschema/table_error_log.cc), the bound of what
every agent keeps of a member, ``MemberLog`` recording the agent's own member's lines in the
gossip state, the LOG value on the wire and the agents it is not sent to (revision 4 and older
refuse a value kind they do not know).
"""

from __future__ import annotations

import pytest

from grstats.agent.convert import WireError, update_from_wire, update_to_wire
from grstats.agent.gossip import LOCAL, GossipState, Key, LogLines, Stamp, Update
from grstats.agent.member_log import FIRST_RECORD_WAIT, MemberLog
from grstats.agent.messages import for_build
from grstats.core.build import AgentBuild
from grstats.core.model import SourceHealth
from grstats.core.rows import RowValueError
from grstats.core.rows.member_log import (
    KEPT_CHARS,
    KEPT_LINES,
    MAX_DATA,
    MemberLogRow,
    is_group_replication,
    kept_lines,
)
from grstats.proto import grstats_pb2 as pb

A = "e14043d7-16ee-11eb-9a3b-0800275c3a8f"
B = "d8a706aa-16ee-11eb-8b4c-0800270d5e61"
T0 = 1_700_000_000_000_000


def line(at: int, data: str = "x", member: str = A) -> MemberLogRow:
    """A Warning line of ``member`` logged ``at`` µs after T0."""
    return MemberLogRow(T0 + at, 0, "Warning", "MY-011493", "Repl", data, member)


def test_a_row_checks_error_logs_domains() -> None:
    """PRIO is one of error_log's four, ERROR_CODE MY- and six digits, SUBSYSTEM 7 at most."""
    assert line(0).values() == (T0, 0, "Warning", "MY-011493", "Repl", "x", A)
    assert MemberLogRow(T0, None, "Note", None, None, "", A).error_code is None
    for bad in (
        {"prio": "Info"},
        {"error_code": "011493"},
        {"subsystem": "Replication"},
        {"member_id": "db1"},
        {"data": "x" * (MAX_DATA + 1)},
        {"thread_id": -1},
    ):
        with pytest.raises(RowValueError):
            MemberLogRow(**({"logged": T0, "member_id": A} | bad))  # type: ignore[arg-type]


def test_group_replications_lines_are_repl_with_the_plugins_prefix() -> None:
    """An asynchronous channel's Repl line and a server line are not Group Replication's."""
    assert is_group_replication("Repl", "Plugin group_replication reported: 'x'")
    assert not is_group_replication("Repl", "'CHANGE REPLICATION SOURCE TO ...' executed")
    assert not is_group_replication("Server", "Plugin group_replication reported: 'x'")
    assert not is_group_replication(None, "Plugin group_replication reported: 'x'")


def test_kept_lines_are_the_newest_within_the_count_and_the_characters() -> None:
    """Each line once, in LOGGED order, the newest KEPT_LINES, within KEPT_CHARS of DATA."""
    many = [line(i) for i in range(KEPT_LINES + 50)]
    kept = kept_lines([*reversed(many), many[-1]])
    assert kept == tuple(many[-KEPT_LINES:])
    big = [line(i, "y" * 1000) for i in range(KEPT_LINES)]
    assert kept_lines(big) == tuple(big[-(KEPT_CHARS // 1000) :])


def test_member_log_records_the_own_members_new_lines_once() -> None:
    """Lines extend the member's LOG value; lines held or of another member change nothing.

    The first record waits FIRST_RECORD_WAIT periods for a peer's copy of earlier lines.
    """
    state = GossipState(A, incarnation=T0)
    log = MemberLog(state, clock=lambda: T0)
    log.add([line(1)])
    for _ in range(FIRST_RECORD_WAIT - 1):
        log.add([])
    assert state.value(A, Key.LOG) is None
    log.add([line(2)])
    first = state.value(A, Key.LOG)
    assert first is not None
    assert first.via == LOCAL
    assert first.update.value == LogLines((line(1), line(2)))
    log.add([line(2), line(3, member=B)])
    assert state.value(A, Key.LOG) is first  # nothing new: nothing recorded
    log.add([line(3)])
    assert log.held() == (line(1), line(2), line(3))


def test_a_peers_copy_of_an_earlier_runs_lines_is_merged() -> None:
    """Before the first record a peer's copy is taken; after it, it is set aside and merged."""
    earlier = Update(A, Stamp(T0 - 10, 4), Key.LOG, LogLines((line(-5),)), T0 - 5)
    state = GossipState(A, incarnation=T0)
    state.merge([earlier], T0, via="db2:7400")
    log = MemberLog(state, clock=lambda: T0)
    log.add([line(1)])  # a held copy: no wait
    assert log.held() == (line(-5), line(1))
    older = Update(A, Stamp(T0 - 10, 3), Key.LOG, LogLines((line(-9), line(-5))), T0 - 5)
    state.merge([older], T0, via="db3:7400")  # heard after this run recorded its own
    assert state.earlier_log == older
    log.add([])
    assert log.held() == (line(-9), line(-5), line(1))
    assert state.earlier_log is None


def test_the_log_value_round_trips_and_its_bounds_are_checked() -> None:
    """A LOG value survives the wire; too many lines, or DATA too long, is a WireError."""
    value = LogLines((line(1, "Plugin group_replication reported: 'a'"), line(2)))
    sent = Update(A, Stamp(1, 2), Key.LOG, value, T0)
    assert update_from_wire(pb.Update.FromString(update_to_wire(sent).SerializeToString())) == sent
    too_many = update_to_wire(
        Update(A, Stamp(1, 2), Key.LOG, LogLines(tuple(line(i) for i in range(3))), T0)
    )
    too_many.log.lines.extend([too_many.log.lines[0]] * KEPT_LINES)
    with pytest.raises(WireError, match=rf"update.log: {KEPT_LINES + 3} lines is more than"):
        update_from_wire(too_many)
    long = update_to_wire(sent)
    long.log.lines[0].data = "x" * (MAX_DATA + 1)
    with pytest.raises(WireError, match=r"update.log\[0\].data"):
        update_from_wire(long)
    unknown = update_to_wire(sent)
    unknown.log.lines[1].prio = "Info"
    with pytest.raises(WireError, match=r"update.log\[1\]: PRIO"):
        update_from_wire(unknown)


def test_log_values_go_only_to_agents_of_revision_5_or_later() -> None:
    """Revision 4 takes the events, not the log; 2 neither; an unknown build neither."""
    health = Update(A, Stamp(1, 1), Key.HEALTH, SourceHealth(), T0)
    log = Update(A, Stamp(1, 2), Key.LOG, LogLines((line(1),)), T0)
    both = (health, log)
    assert for_build(both, AgentBuild("0.2.0", 5)) == both
    assert for_build(both, AgentBuild("0.1.9", 4)) == (health,)
    assert for_build(both, AgentBuild("0.0.9", 2)) == (health,)
    assert for_build(both, None) == (health,)
