"""Issue 34, point 1: the members' events, unit by unit: found, kept, sent, stored and counted."""

from __future__ import annotations

import dataclasses
import sqlite3
from contextlib import closing
from typing import TYPE_CHECKING

import pytest

from grstats.agent.convert import MAX_WIRE_EVENTS, WireError, update_from_wire, update_to_wire
from grstats.agent.event_log import EventCounts, EventLog
from grstats.agent.gossip import Counts, Events, GossipState, Key, Stamp, Update
from grstats.agent.messages import for_build
from grstats.agent.registry import SqliteRegistry
from grstats.agent.registry_sync import remembered_values
from grstats.agent.served import group_events
from grstats.core.build import AgentBuild
from grstats.core.events import (
    MAX_AGE_S,
    MAX_EVENTS,
    changes,
    kept,
    liveness_event,
    source_event,
    throttle_event,
)
from grstats.core.gtid import GtidSet
from grstats.core.model import GroupView, MemberSnapshot, ServerSettings, SourceHealth
from grstats.core.rows import (
    ApplierStatusRow,
    EventRow,
    EventType,
    MemberRow,
    MemberStatsRow,
    RowValueError,
)
from grstats.proto import grstats_pb2 as pb
from tests.agent.registry.records import full

if TYPE_CHECKING:
    from pathlib import Path

A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
B = "4f22ab58-71ca-11e1-9e33-c80aa9429562"
C = "5a33bc69-71ca-11e1-9e33-c80aa9429562"
GROUP = "8a84f397-aaa4-18df-89ab-c70aa9823561"
SECOND = 1_000_000
NOW = 1_700_000_000 * SECOND


def row(member: str, state: str = "ONLINE", role: str = "SECONDARY") -> MemberRow:
    """A member's row as a view lists it."""
    return MemberRow(
        member_id=member, member_host="db", member_port=3306, member_state=state, member_role=role
    )


def read(at_s: float, view_id: str, *rows: MemberRow, me: str = A) -> MemberSnapshot:
    """A's read at ``at_s`` seconds, its view ``view_id`` listing ``rows``."""
    view = GroupView(members=tuple(sorted(rows, key=lambda r: r.member_id)), view_id=view_id)
    return MemberSnapshot(
        member_id=me,
        read_at_us=NOW + int(at_s * SECOND),
        view=view,
        stats=MemberStatsRow(member_id=me),
        applier=ApplierStatusRow(member_id=me),
        gtid_executed=GtidSet.parse(f"{GROUP}:1-5"),
    )


def kinds(events: list[EventRow]) -> list[tuple[str, str, str, str]]:
    """(type, member, old, new) of each event."""
    return [(e.event_type, e.member_id, e.old_value, e.new_value) for e in events]


class TestChanges:
    def test_the_first_read_gives_none(self) -> None:
        """An agent (re)started beside an ONLINE member does not report it joining."""
        assert changes(None, read(0, "1:3", row(A, role="PRIMARY"), row(B))) == []

    def test_joining_a_group(self) -> None:
        """OFFLINE, then RECOVERING in a view: JOINED, the state, and the view with its members."""
        before = read(0, "", row(A, "OFFLINE", ""))
        after = read(1, "1:4", row(A, "RECOVERING"), row(B), row(C, role="PRIMARY"))
        found = changes(before, after)
        assert kinds(found) == [
            ("JOINED", A, "", "1:4"),
            ("MEMBER_STATE", A, "OFFLINE", "RECOVERING"),
            ("MEMBER_ROLE", A, "", "SECONDARY"),
            ("VIEW_CHANGE", A, "", "1:4"),
        ]
        assert found[-1].detail == f"members: {A},{B},{C}"
        assert {(e.event_time, e.view_id, e.reported_by) for e in found} == {
            (NOW + SECOND, "1:4", A)
        }

    def test_a_primary_elected_and_a_member_left(self) -> None:
        """The old primary leaves the view: A's role, and the view's 'left'."""
        before = read(0, "1:4", row(A), row(B, role="PRIMARY"), row(C))
        after = read(1, "1:5", row(A, role="PRIMARY"), row(C))
        found = changes(before, after)
        assert kinds(found) == [
            ("MEMBER_ROLE", A, "SECONDARY", "PRIMARY"),
            ("VIEW_CHANGE", A, "1:4", "1:5"),
        ]
        assert found[1].detail == f"left: {B}"

    def test_another_member_unreachable_and_back(self) -> None:
        """Only others see a member UNREACHABLE: A reports B's turn and its return."""
        online = read(0, "1:4", row(A), row(B))
        unreachable = read(1, "1:4", row(A), row(B, "UNREACHABLE"))
        assert kinds(changes(online, unreachable)) == [("MEMBER_STATE", B, "ONLINE", "UNREACHABLE")]
        assert kinds(changes(unreachable, read(2, "1:4", row(A), row(B)))) == [
            ("MEMBER_STATE", B, "UNREACHABLE", "ONLINE")
        ]
        recovering = read(3, "1:4", row(A), row(B, "RECOVERING"))
        assert changes(online, recovering) == []  # B's own agent reports its other states

    def test_leaving_the_group_and_an_error(self) -> None:
        """A member expelled into ERROR: its state, then LEFT with the view it left."""
        before = read(0, "1:4", row(A), row(B))
        after = read(1, "1:4", row(A, "ERROR", ""))
        assert kinds(changes(before, after)) == [
            ("MEMBER_STATE", A, "ONLINE", "ERROR"),
            ("MEMBER_ROLE", A, "SECONDARY", ""),
            ("LEFT", A, "1:4", ""),
        ]

    def test_super_read_only_turning_off_then_on(self) -> None:
        """A new primary's super_read_only turning OFF after its election, then ON: one event each.

        GR turns it OFF once the new primary has applied its backlog
        (``Primary_election_primary_process::primary_election_process_handler``,
        plugin_handlers/primary_election_primary_process.cc, ``disable_server_read_mode``) and
        ON when Group Replication stops (``plugin_group_replication_stop``, plugin.cc); the
        values are ON and OFF, as ``SHOW GLOBAL VARIABLES`` shows a boolean. The first read
        gives none.
        """
        locked = ServerSettings(read_only=True, super_read_only=True)
        secondary = dataclasses.replace(read(0, "1:4", row(A), row(B)), server=locked)
        assert changes(None, secondary) == []
        elected = dataclasses.replace(read(1, "1:4", row(A, role="PRIMARY"), row(B)), server=locked)
        assert kinds(changes(secondary, elected)) == [("MEMBER_ROLE", A, "SECONDARY", "PRIMARY")]
        writable = read(2, "1:4", row(A, role="PRIMARY"), row(B))
        (off,) = changes(elected, writable)
        assert kinds([off]) == [("SUPER_READ_ONLY", A, "ON", "OFF")]
        assert (off.event_time, off.view_id, off.reported_by) == (NOW + 2 * SECOND, "1:4", A)
        stopped = dataclasses.replace(read(3, "", row(A, "OFFLINE", "")), server=locked)
        assert kinds(changes(writable, stopped)) == [
            ("MEMBER_STATE", A, "ONLINE", "OFFLINE"),
            ("MEMBER_ROLE", A, "PRIMARY", ""),
            ("SUPER_READ_ONLY", A, "OFF", "ON"),
            ("LEFT", A, "1:4", ""),
        ]

    def test_the_same_read_twice_gives_nothing(self) -> None:
        """No change, no event."""
        same = read(0, "1:4", row(A), row(B))
        assert changes(same, dataclasses.replace(same, read_at_us=NOW + SECOND)) == []


def test_source_throttle_and_liveness_events() -> None:
    """The agent's own source, flow control and another member's agent, each as one event."""
    failed = source_event(A, NOW, "1:4", failed=True, why="the server refused the connection")
    assert kinds([failed]) == [("SOURCE_FAILED", A, "", "")]
    assert failed.detail == "the server refused the connection"
    started = throttle_event(A, NOW, "1:4", (B, C))
    assert kinds([started]) == [("THROTTLE_STARTED", A, "NO", "YES")]
    assert started.detail == f"queues over the threshold: {B},{C}"
    assert kinds([throttle_event(A, NOW, "1:4", ())]) == [("THROTTLE_STOPPED", A, "YES", "NO")]
    silent = liveness_event(B, read(0, "1:4", row(A), row(B)), NOW, silent=True, detail="x")
    assert silent is not None
    assert kinds([silent]) == [("AGENT_SILENT", B, "YES", "NO")]
    assert (silent.reported_by, silent.view_id) == (A, "1:4")
    assert liveness_event(B, None, NOW, silent=False, detail="") is None


def test_an_event_row_checks_its_cells() -> None:
    """A bad member, reporter or type is refused, naming the column."""
    with pytest.raises(RowValueError, match="MEMBER_ID"):
        EventRow(NOW, "db1", EventType.JOINED, "", "", "", A)
    with pytest.raises(RowValueError, match="REPORTED_BY"):
        EventRow(NOW, A, EventType.JOINED, "", "", "", "")
    with pytest.raises(RowValueError, match="EVENT_TYPE"):
        EventRow(NOW, A, "joined", "", "", "", A)
    with pytest.raises(RowValueError, match="OLD_VALUE"):
        EventRow(NOW, A, EventType.JOINED, "x" * 65, "", "", A)


def event(at_s: float, kind: EventType = EventType.MEMBER_STATE, member: str = A) -> EventRow:
    """An event of ``member`` reported by A at ``at_s``."""
    return EventRow(NOW + int(at_s * SECOND), member, kind, "ONLINE", "ERROR", "1:4", A)


class TestKept:
    def test_older_than_the_age_go(self) -> None:
        """Events older than MAX_AGE_S are dropped; the rest stay in time order."""
        old, recent = event(-MAX_AGE_S - 1), event(-10)
        assert kept([recent, old, event(-5)], NOW) == (recent, event(-5))

    def test_at_most_the_newest_count(self) -> None:
        """Past MAX_EVENTS, the oldest go."""
        many = [event(-i) for i in range(MAX_EVENTS + 5)]
        held = kept(many, NOW)
        assert len(held) == MAX_EVENTS
        assert held[-1] == event(0)
        assert held[0] == event(-(MAX_EVENTS - 1))


class TestEventLog:
    def test_added_events_are_the_members_events_value(self) -> None:
        """Each add records one EVENTS value under the agent's stamp, the list growing."""
        state = GossipState(A, incarnation=NOW)
        log = EventLog(state, clock=lambda: NOW)
        log.add([event(1)])
        log.add([event(2), event(3)])
        assert log.held() == (event(1), event(2), event(3))
        heard = state.value(A, Key.EVENTS)
        assert heard is not None
        assert heard.update.stamp == Stamp(NOW, 2)

    def test_a_condition_said_twice_is_added_once(self) -> None:
        """A silence already reported (by this run or an earlier one) is not added again."""
        state = GossipState(A, incarnation=NOW)
        log = EventLog(state, clock=lambda: NOW)
        silent = liveness_event(B, read(0, "1:4", row(A), row(B)), NOW, silent=True, detail="")
        heard = liveness_event(B, read(0, "1:4", row(A), row(B)), NOW + 5, silent=False, detail="")
        assert silent is not None
        assert heard is not None
        log.add([silent])
        log.add([dataclasses.replace(silent, event_time=NOW + 1)])
        log.add([heard])
        assert [e.event_type for e in log.held()] == ["AGENT_SILENT", "AGENT_HEARD"]

    def test_nothing_before_the_member_is_known(self) -> None:
        """An agent that does not know its member yet records nothing."""
        state = GossipState("", incarnation=NOW)
        EventLog(state, clock=lambda: NOW).add([event(1)])
        assert state.origins == {}


def test_every_agent_serves_the_same_list() -> None:
    """The served list is every origin's events, by time and reporter, whatever the order held."""
    state = GossipState(C, incarnation=NOW)
    by_b = EventRow(NOW + 1, A, EventType.MEMBER_STATE, "ONLINE", "UNREACHABLE", "1:4", B)
    by_a = event(2, EventType.SOURCE_FAILED)
    for origin, events in ((B, (by_b,)), (A, (by_a,))):
        state.seed(origin, {Key.EVENTS: Events(events)}, NOW, "registry")
    assert group_events(state) == [by_b, by_a]


def test_primary_and_state_changes_are_counted_once_and_only_after_the_start() -> None:
    """The history learned at start is not counted; a new election and a state change are, once."""
    state = GossipState(C, incarnation=NOW)
    history = EventRow(NOW - SECOND, A, EventType.MEMBER_ROLE, "SECONDARY", "PRIMARY", "1:3", A)
    state.seed(A, {Key.EVENTS: Events((history,))}, NOW, "registry")
    counts = EventCounts(state, started_us=NOW)
    assert counts.update() == (0, [])
    elected = EventRow(NOW + SECOND, B, EventType.MEMBER_ROLE, "SECONDARY", "PRIMARY", "1:4", B)
    error = EventRow(NOW + SECOND, B, EventType.MEMBER_STATE, "ONLINE", "ERROR", "1:4", B)
    seen_by_a = EventRow(NOW + SECOND, C, EventType.MEMBER_STATE, "ONLINE", "UNREACHABLE", "", A)
    seen_by_c = EventRow(NOW + SECOND, A, EventType.MEMBER_STATE, "ONLINE", "UNREACHABLE", "", C)
    stamp = Stamp(NOW, 1)
    state.seed(B, {}, NOW, "registry")  # a member the agent knows
    state.merge([Update(B, stamp, Key.EVENTS, Events((elected, error)), NOW)], NOW, via="b")
    state.merge([Update(A, stamp, Key.EVENTS, Events((history, seen_by_a)), NOW)], NOW, "a")
    state.record_local(Key.EVENTS, Events((seen_by_c,)), NOW)
    assert counts.update() == (1, [(B, "ERROR"), (A, "UNREACHABLE")])
    assert counts.update() == (0, [])  # nothing new


class TestWire:
    def test_events_round_trip_with_their_reporter_the_origin(self) -> None:
        """Encoded and decoded, each event is the same; REPORTED_BY is the update's origin."""
        events = Events((event(1), event(2, EventType.AGENT_SILENT, member=B)))
        sent = Update(A, Stamp(NOW, 3), Key.EVENTS, events, NOW)
        wire = pb.Update.FromString(update_to_wire(sent).SerializeToString())
        assert update_from_wire(wire) == sent

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            pytest.param(
                lambda e: setattr(e, "member", b"\x01"), "updates.events[0].member", id="member"
            ),
            pytest.param(
                lambda e: setattr(e, "event_type", "lower case"),
                "updates.events[0]: EVENT_TYPE: 'lower case'",
                id="type",
            ),
            pytest.param(
                lambda e: setattr(e, "detail", "x" * 2000),
                "updates.events[0].detail",
                id="detail",
            ),
            pytest.param(
                lambda e: setattr(e, "view_id", "v" * 61),
                "updates.events[0]: VIEW_ID",
                id="view-id",
            ),
        ],
    )
    def test_a_bad_event_is_refused_naming_its_field(self, change: object, message: str) -> None:
        """A malformed event makes the update a WireError that names the event and field."""
        wire = update_to_wire(Update(A, Stamp(NOW, 3), Key.EVENTS, Events((event(1),)), NOW))
        change(wire.events.events[0])  # type: ignore[operator]
        with pytest.raises(WireError, match=message.replace("[", r"\[").replace("]", r"\]")):
            update_from_wire(wire, "updates")

    def test_more_events_than_any_agent_keeps_are_refused(self) -> None:
        """An EVENTS value longer than MAX_WIRE_EVENTS is refused before its events are read."""
        many = Events(tuple(event(i) for i in range(MAX_WIRE_EVENTS + 1)))
        wire = update_to_wire(Update(A, Stamp(NOW, 3), Key.EVENTS, many, NOW))
        with pytest.raises(WireError, match=f"{MAX_WIRE_EVENTS + 1} events is more than"):
            update_from_wire(wire)


def test_events_go_only_to_agents_that_take_them() -> None:
    """Agents of revision 2 (and unknown ones) get no EVENTS value: they would refuse it all."""
    events = Update(A, Stamp(NOW, 2), Key.EVENTS, Events((event(1),)), NOW)
    health = Update(A, Stamp(NOW, 1), Key.HEALTH, SourceHealth(), NOW)
    both = (health, events)
    assert for_build(both, AgentBuild("0.1.0", 3)) == both
    assert for_build(both, AgentBuild("0.0.9", 2)) == (health,)
    assert for_build(both, None) == (health,)


class TestRegistry:
    def test_events_survive_a_restart(self, tmp_path: Path) -> None:
        """Saved with the member's record, its events load back as its EVENTS value."""
        record = dataclasses.replace(full(A), events=(event(1), event(2, member=B)))
        with SqliteRegistry(tmp_path / "members.sqlite3") as registry:
            registry.save([record])
        with SqliteRegistry(tmp_path / "members.sqlite3") as registry:
            (loaded,) = registry.load()
        assert loaded.events == record.events
        assert remembered_values(loaded)[Key.EVENTS] == Events(record.events)

    def test_a_file_of_an_earlier_grstats_gains_the_column(self, tmp_path: Path) -> None:
        """A registry written before events existed is read, and then stores events too."""
        path = tmp_path / "members.sqlite3"
        with SqliteRegistry(path) as registry:
            registry.save([full(A)])
        with closing(sqlite3.connect(path)) as db, db:
            db.execute("ALTER TABLE members DROP COLUMN events")
        with SqliteRegistry(path) as registry:
            (loaded,) = registry.load()
            assert loaded.events == ()
            registry.save([dataclasses.replace(loaded, events=(event(1),))])
            assert registry.load()[0].events == (event(1),)

    def test_an_event_of_another_reporter_is_refused(self) -> None:
        """A record holds only its own member's reports."""
        by_b = EventRow(NOW, A, EventType.JOINED, "", "1:4", "1:4", B)
        with pytest.raises(RowValueError, match="events"):
            dataclasses.replace(full(A), events=(by_b,))


def test_an_agent_without_its_registry_takes_back_its_members_events() -> None:
    """A's earlier run's events come back from a peer, until A records its own (which extend them)."""
    state = GossipState(A, incarnation=NOW + 10 * SECOND)
    earlier = Update(A, Stamp(NOW, 5), Key.EVENTS, Events((event(1),)), NOW)
    state.merge([earlier], NOW + 10 * SECOND, via="agent-b:7400")
    log = EventLog(state, clock=lambda: NOW + 20 * SECOND)
    assert log.held() == (event(1),)
    log.add([event(20)])
    assert log.held() == (event(1), event(20))
    again = Update(A, Stamp(NOW, 6), Key.EVENTS, Events((event(2),)), NOW)
    state.merge([again], NOW + 21 * SECOND, via="agent-b:7400")
    assert log.held() == (event(1), event(20))  # its own list now: a peer's copy is not taken
    row = MemberStatsRow(member_id=A)
    other = Update(A, Stamp(NOW, 7), Key.COUNTS, Counts(row, gtids_present=False), NOW)
    state.merge([other], NOW + 21 * SECOND, via="agent-b:7400")
    held = state.value(A, Key.COUNTS)
    assert held is None  # only events: the member's other values come from its source
