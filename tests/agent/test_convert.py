"""Model <-> wire: every key round-trips, bad input names its field, limits hold, sizes stay small."""

from __future__ import annotations

import pytest

from grstats.agent.convert import (
    MAX_SENDER_CHARS,
    WireError,
    answer_from_wire,
    answer_to_wire,
    digest_from_wire,
    digest_to_wire,
    gossip_from_wire,
    gossip_to_wire,
    update_from_wire,
    update_to_wire,
    updates_from_wire,
)
from grstats.agent.gossip import ClockOffset, Counts, Events, Key, LogLines, Stamp, Update
from grstats.agent.limits import DEFAULT_LIMITS
from grstats.agent.messages import Answer, Gossip
from grstats.agent.sources import GroupView, SourceHealth
from grstats.core.gtid import GtidSet
from grstats.core.model import FlowControlSettings, ServerSettings
from grstats.core.query_wire import table_from_wire, table_to_wire
from grstats.core.rows import (
    REPLICATION_GROUP_MEMBERS,
    ApplierStatusRow,
    EventRow,
    EventType,
    MemberRow,
    MemberStatsRow,
)
from grstats.core.rows.member_log import MemberLogRow
from grstats.proto import grstats_pb2 as pb
from tests.agent.pipeline_stats import PipelineStats, encoded_size

A = "d8a706aa-16ee-11eb-8b4c-0800270d5e61"
B = "e14043d7-16ee-11eb-9a3b-0800275c3a8f"
GROUP = "8a84f397-aaa4-18df-89ab-c70aa9823561"
STAMP = Stamp(1_763_000_000_000_000, 42)


def update(key: Key, value: object) -> Update:
    """An update of member A."""
    return Update(A, STAMP, key, value, 1_763_000_001_000_000)  # type: ignore[arg-type]


def stats_row(committed: str = f"{GROUP}:1-5") -> MemberStatsRow:
    """A stats row of member A (no VIEW_ID: it does not travel)."""
    return MemberStatsRow(
        member_id=A,
        count_transactions_checked=10154,
        count_transactions_rows_validating=9247,
        transactions_committed_all_members=committed,
        last_conflict_free_transaction=f"{GROUP}:5",
        count_transactions_remote_applied=5,
        count_transactions_local_proposed=10154,
        count_transactions_local_rollback=2**64 - 1,
    )


VALUES = {
    Key.COUNTS: Counts(stats_row(), gtids_present=True),
    Key.VIEW: GroupView(
        members=(
            MemberRow(
                member_id=A,
                member_host="db1",
                member_port=3306,
                member_state="ONLINE",
                member_role="PRIMARY",
                member_version="8.0.36",
                member_communication_stack="XCom",
            ),
            MemberRow(
                member_id=B, member_host="db2", member_state="UNREACHABLE", member_role="SECONDARY"
            ),
        ),
        view_id="16036502905383892:9",
        group_name=GROUP,
        single_primary_mode=True,
    ),
    Key.APPLIER: ApplierStatusRow(
        member_id=A,
        last_applied_transaction=f"{GROUP}:5",
        last_applied_transaction_original_commit_timestamp=1_700_000_000_000_000,
        last_applied_transaction_end_apply_timestamp=1_700_000_000_250_000,
        applying_transaction="ANONYMOUS",
    ),
    Key.GTID_EXECUTED: GtidSet.parse(f"{GROUP}:1-9,\naaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1"),
    Key.HEALTH: SourceHealth(ok=False, message="server is down"),
    Key.SERVER: ServerSettings(
        read_only=True,
        super_read_only=True,
        flow_control=FlowControlSettings(mode="DISABLED", certifier_threshold=100, period=5),
    ),
    Key.EVENTS: Events(
        (
            EventRow(
                1_700_000_000_000_000,
                A,
                EventType.MEMBER_ROLE,
                "SECONDARY",
                "PRIMARY",
                "17000000000000001:4",
                A,
            ),
            EventRow(
                1_700_000_001_000_000,
                B,
                EventType.AGENT_SILENT,
                "YES",
                "NO",
                "17000000000000001:4",
                A,
                "agent_silent: nothing live heard for 10.0 s",
            ),
        )
    ),
    Key.LOG: LogLines(
        (
            MemberLogRow(
                1_700_000_000_000_000,
                0,
                "System",
                "MY-011503",
                "Repl",
                "Plugin group_replication reported: 'Group membership changed to db1:3306 on "
                "view 17000000000000001:4.'",
                A,
            ),
            MemberLogRow(1_700_000_000_000_001, None, "Note", None, None, "no code", A),
        )
    ),
}


@pytest.mark.parametrize("key", list(Key))
def test_every_key_round_trips(key: Key) -> None:
    """Each value survives encoding to bytes and back unchanged."""
    sent = update(key, VALUES[key])
    wire = pb.Update.FromString(update_to_wire(sent).SerializeToString())
    assert update_from_wire(wire) == sent


def test_a_57_applier_row_round_trips_unknown_and_an_empty_one_stays_empty() -> None:
    """A row of MySQL 5.7 (no WL#7374 columns) arrives all NULL; an 8.0 channel that saw nothing stays ''."""
    unknown = ApplierStatusRow.unknown(A)
    empty = ApplierStatusRow(member_id=A)
    for row in (unknown, empty):
        sent = update(Key.APPLIER, row)
        wire = pb.Update.FromString(update_to_wire(sent).SerializeToString())
        assert update_from_wire(wire) == sent
    assert unknown.timestamps_unknown
    assert not empty.timestamps_unknown


def test_counts_without_gtids_do_not_carry_them() -> None:
    """Counts without fresh GTIDs leave the GTID columns out, as GR's stats message does.

    ``Pipeline_stats_member_collector::send_stats_member_message``
    (plugin/group_replication/src/pipeline_stats.cc) fills them only when the flag is set.
    """
    wire = update_to_wire(update(Key.COUNTS, Counts(stats_row(), gtids_present=False)))
    assert wire.counts.transactions_committed_all_members == ""
    assert not wire.counts.gtids_present


def test_clock_offsets_ride_on_counts_only_when_present() -> None:
    """Offsets round-trip on counts that carry them; others (an older agent's too) carry none."""
    offsets = (ClockOffset(B, -5_000_000, 840), ClockOffset(GROUP, 12, 0))
    riding = Counts(stats_row(), gtids_present=True, offsets=offsets, offsets_present=True)
    empty = Counts(stats_row(), gtids_present=True, offsets=(), offsets_present=True)
    for value in (riding, empty):
        sent = update(Key.COUNTS, value)
        wire = pb.Update.FromString(update_to_wire(sent).SerializeToString())
        assert update_from_wire(wire) == sent
    kept = Counts(stats_row(), gtids_present=True, offsets=offsets)  # held, not riding
    held = update_to_wire(update(Key.COUNTS, kept))
    assert (len(held.counts.offsets), held.counts.offsets_present) == (0, False)
    assert update_from_wire(held).value == Counts(stats_row(), gtids_present=True)
    held.counts.offsets.add(member=b"\x01" * 15, offset_us=1)
    held.counts.offsets_present = True
    with pytest.raises(WireError, match=r"counts\.offsets\[0\]\.member"):
        update_from_wire(held)


def test_counts_message_is_under_a_third_of_mysqls() -> None:
    """One member's counts take at most a third of MySQL's own stats message (pipeline_stats.cc)."""
    counts = Counts(stats_row(committed=""), gtids_present=False)
    ours = len(update_to_wire(update(Key.COUNTS, counts)).SerializeToString())
    mysql = encoded_size(
        PipelineStats(
            transactions_certified=10154,
            transactions_applied=5,
            transactions_local=10154,
            transactions_rows_validating=9247,
        )
    )
    assert mysql == 194
    assert ours * 3 <= mysql, f"{ours} bytes against MySQL's {mysql}"


def bad(mutate: object) -> pb.Update:
    """A valid counts update changed by ``mutate``."""
    message = update_to_wire(update(Key.COUNTS, VALUES[Key.COUNTS]))
    mutate(message)  # type: ignore[operator]
    return message


@pytest.mark.parametrize(
    ("message", "field"),
    [
        pytest.param(bad(lambda m: setattr(m, "origin", b"xx")), "update.origin", id="short-uuid"),
        pytest.param(bad(lambda m: m.ClearField("counts")), "update.value", id="no-value"),
        pytest.param(
            bad(lambda m: setattr(m.counts, "transactions_committed_all_members", "garbage")),
            "TRANSACTIONS_COMMITTED_ALL_MEMBERS",
            id="garbage-gtid-text",
        ),
        pytest.param(
            bad(lambda m: setattr(m.counts, "last_conflict_free_transaction", f"{GROUP}:1-5")),
            "LAST_CONFLICT_FREE_TRANSACTION",
            id="interval-is-not-one-gtid",
        ),
        pytest.param(
            bad(
                lambda m: setattr(
                    m.counts,
                    "transactions_committed_all_members",
                    "x" * (DEFAULT_LIMITS.max_gtid_text + 1),
                )
            ),
            "counts.transactions_committed_all_members",
            id="oversized-gtid-text",
        ),
        pytest.param(
            pb.Update(
                origin=b"\x01" * 16, view=pb.View(members=[pb.Member(member_id=b"\x02" * 16)] * 10)
            ),
            "view.members",
            id="ten-members",
        ),
        pytest.param(
            pb.Update(
                origin=b"\x01" * 16,
                view=pb.View(members=[pb.Member(member_id=b"\x02" * 16, state="DOWN")]),
            ),
            "members[0]: MEMBER_STATE",
            id="unknown-state",
        ),
        pytest.param(
            pb.Update(origin=b"\x01" * 16, applier=pb.Applier(applying_transaction="nope")),
            "APPLYING_TRANSACTION",
            id="bad-applying-gtid",
        ),
        pytest.param(pb.Update(origin=b"\x01" * 16, gtid_executed="a:0"), "update", id="gno-zero"),
    ],
)
def test_bad_input_names_the_field(message: pb.Update, field: str) -> None:
    """A message that breaks the contract raises WireError naming the field and the value."""
    with pytest.raises(WireError, match=field.replace("[", r"\[").replace("]", r"\]")):
        update_from_wire(message)


def test_too_many_updates() -> None:
    """A message with more updates than a whole group could produce is refused."""
    one = update_to_wire(update(Key.HEALTH, VALUES[Key.HEALTH]))
    with pytest.raises(WireError, match=f"more than {DEFAULT_LIMITS.max_updates}"):
        updates_from_wire([one] * (DEFAULT_LIMITS.max_updates + 1))


def test_digest_round_trip_and_unknown_keys() -> None:
    """Digests round-trip; a stamp of a key from a newer contract is ignored, not an error."""
    digest = {A: {Key.COUNTS: Stamp(1, 5), Key.VIEW: Stamp(1, 2)}, B: {}}
    entries = digest_to_wire(digest)
    entries[0].stamps.append(pb.Stamp(key=99, incarnation=1, version=1))  # type: ignore[arg-type]
    assert digest_from_wire(entries) == digest
    with pytest.raises(WireError, match=r"digest\[0\].origin"):
        digest_from_wire([pb.DigestEntry(origin=b"short")])


def test_gossip_round_trips_with_and_without_its_digest() -> None:
    """An exchange's request comes back whole; a pushed one comes back without a digest."""
    sent = Gossip(
        sender="db1:7400",
        sender_member=A,
        updates=(update(Key.HEALTH, VALUES[Key.HEALTH]), update(Key.COUNTS, VALUES[Key.COUNTS])),
        sent_at_us=1_763_000_002_000_000,
        digest={A: {Key.COUNTS: Stamp(1, 5)}},
    )
    wire = pb.ExchangeRequest.FromString(gossip_to_wire(sent).SerializeToString())
    assert gossip_from_wire(wire) == sent
    assert gossip_from_wire(wire, pushed=True).digest == {}


def test_gossip_names_a_bad_sender() -> None:
    """A sender address too long, or a sender member that is no UUID, is refused by name."""
    long = pb.ExchangeRequest(sender="x" * (MAX_SENDER_CHARS + 1), sender_member=b"\x01" * 16)
    with pytest.raises(WireError, match=r"^sender: "):
        gossip_from_wire(long)
    with pytest.raises(WireError, match=r"^sender_member: "):
        gossip_from_wire(pb.ExchangeRequest(sender="db1:7400", sender_member=b"x"))


def test_answer_round_trips_and_carries_the_request_size() -> None:
    """An answer comes back whole, with the size of its request; no member stays no member."""
    sent = Answer(
        updates=(update(Key.VIEW, VALUES[Key.VIEW]),),
        digest={B: {Key.HEALTH: Stamp(2, 1)}},
        member=B,
        received_at_us=10,
        sent_at_us=11,
    )
    wire = pb.ExchangeResponse.FromString(answer_to_wire(sent).SerializeToString())
    back = answer_from_wire(wire, DEFAULT_LIMITS, request_bytes=123)
    assert back == Answer(sent.updates, sent.digest, B, 10, 11, request_bytes=123)
    assert answer_from_wire(answer_to_wire(Answer())).member == ""


def test_table_cells_keep_their_types() -> None:
    """Query tables carry names and typed cells: text, numbers and NULL come back as they were."""
    rows = [
        MemberRow(member_id=A, member_host="db1", member_port=3306).values(),
        MemberRow().values(),
    ]
    wire = pb.Table.FromString(
        table_to_wire("m", REPLICATION_GROUP_MEMBERS.columns, rows).SerializeToString()
    )
    columns, back = table_from_wire(wire)
    assert columns == list(REPLICATION_GROUP_MEMBERS.column_names)
    assert back == rows
