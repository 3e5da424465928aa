"""The wire contract: generated code is current, and unknown fields survive (mixed versions)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from google.protobuf import descriptor_pb2

from grstats.core.build import PROTOCOL_REVISION
from grstats.proto import grstats_pb2

ROOT = Path(__file__).parent.parent
GENERATED = ("grstats_pb2.py", "grstats_pb2.pyi", "grstats_pb2_grpc.py")


def test_generated_code_is_not_stale(tmp_path: Path) -> None:
    """Regenerating from proto/grstats.proto gives exactly the committed files (run make proto)."""
    subprocess.run(
        [sys.executable, "proto/generate.py", str(tmp_path)], cwd=ROOT, check=True, timeout=120
    )
    for name in GENERATED:
        fresh = (tmp_path / "proto" / name).read_bytes()
        committed = (ROOT / "proto" / name).read_bytes()
        assert fresh == committed, f"proto/{name} is stale: run make proto and commit it"


def test_package_and_services() -> None:
    """The services are grstats.v1.Gossip and grstats.v1.Query."""
    services = grstats_pb2.DESCRIPTOR.services_by_name
    assert grstats_pb2.DESCRIPTOR.package == "grstats.v1"
    assert services["Gossip"].full_name == "grstats.v1.Gossip"
    assert services["Query"].full_name == "grstats.v1.Query"


def test_unknown_fields_are_kept_and_ignored() -> None:
    """A message from a newer agent with a field this one lacks parses, and the field survives."""
    update = grstats_pb2.Update(origin=b"\x01" * 16, incarnation=7, version=9)
    update.counts.transactions_checked = 10154
    unknown_field = bytes([0x98, 0x06, 0x2A])  # field 99, varint 42: not in this contract
    parsed = grstats_pb2.Update.FromString(update.SerializeToString() + unknown_field)
    assert parsed.counts.transactions_checked == 10154
    assert parsed.version == 9
    assert parsed.SerializeToString().endswith(unknown_field)


def test_field_numbers_are_append_only() -> None:
    """Pinned field numbers of the messages that travel every period (append-only contract)."""
    counts = {f.name: f.number for f in grstats_pb2.Counts.DESCRIPTOR.fields}
    assert counts["transactions_in_queue"] == 1
    assert counts["transactions_local_rollback"] == 11
    assert counts["transactions_behind"] == 12
    update = {f.name: f.number for f in grstats_pb2.Update.DESCRIPTOR.fields}
    assert update == {
        "origin": 1,
        "incarnation": 2,
        "version": 3,
        "sent_at_us": 4,
        "counts": 10,
        "view": 11,
        "applier": 12,
        "gtid_executed": 13,
        "health": 14,
        "server": 15,
        "events": 16,  # protocol revision 3
        "log": 17,  # protocol revision 5
    }


def test_applier_says_when_the_origin_has_no_timestamps() -> None:
    """Applier.timestamps_unknown (19) marks a MySQL 5.7 origin, whose lag is unknown."""
    applier = {f.name: f.number for f in grstats_pb2.Applier.DESCRIPTOR.fields}
    assert applier["timestamps_unknown"] == 19
    assert max(applier.values()) == 19


def test_dropped_fields_stay_reserved() -> None:
    """View.server_version (5) was dropped: its number and name are reserved, never reused."""
    view = {f.name: f.number for f in grstats_pb2.View.DESCRIPTOR.fields}
    assert view == {
        "members": 1,
        "view_id": 2,
        "group_name": 3,
        "single_primary_mode": 4,
        "group_label": 6,  # issue 32: appended after the reserved 5
    }
    declared = descriptor_pb2.DescriptorProto()
    grstats_pb2.View.DESCRIPTOR.CopyToProto(declared)
    assert [(r.start, r.end) for r in declared.reserved_range] == [(5, 6)]
    assert list(declared.reserved_name) == ["server_version"]


def test_the_generated_service_code_imports_grstats_proto() -> None:
    """grstats_pb2_grpc.py imports its messages as grstats.proto, never as a top-level proto."""
    service = (ROOT / "proto" / "grstats_pb2_grpc.py").read_text(encoding="utf-8")
    imports = [line for line in service.splitlines() if "grstats_pb2 as" in line]
    assert imports == [
        "from grstats.proto import grstats_pb2 as grstats_dot_proto_dot_grstats__pb2"
    ]
    assert grstats_pb2.DESCRIPTOR.name == "grstats/proto/grstats.proto"


def test_query_response_fields_are_append_only() -> None:
    """QueryResponse's fields keep their numbers; the fault came fifth, the group name and label after."""
    response = {f.name: f.number for f in grstats_pb2.QueryResponse.DESCRIPTOR.fields}
    assert response == {
        "tables": 1,
        "agent": 2,
        "member": 3,
        "served_at_us": 4,
        "source_fault": 5,
        "group_name": 6,
        "group_label": 7,
        "agent_version": 8,  # protocol revision 2
        "protocol_revision": 9,
    }
    fault = {f.name: f.number for f in grstats_pb2.SourceFault.DESCRIPTOR.fields}
    assert fault == {"kind": 1, "message": 2, "fix": 3, "since_us": 4}


def test_exchange_fields_are_append_only() -> None:
    """ExchangeRequest and ExchangeResponse keep their numbers; the version and revision came sixth and seventh."""
    request = {f.name: f.number for f in grstats_pb2.ExchangeRequest.DESCRIPTOR.fields}
    assert request == {
        "sender": 1,
        "sender_member": 2,
        "digest": 3,
        "updates": 4,
        "sent_at_us": 5,
        "agent_version": 6,  # protocol revision 2
        "protocol_revision": 7,
    }
    response = {f.name: f.number for f in grstats_pb2.ExchangeResponse.DESCRIPTOR.fields}
    assert response == {
        "updates": 1,
        "digest": 2,
        "received_at_us": 3,
        "sent_at_us": 4,
        "member": 5,
        "agent_version": 6,  # protocol revision 2
        "protocol_revision": 7,
    }


#: The fields each protocol revision appended (message, field); revision 1 is every agent
#: before the revision existed (main at d38a8b3 and older).
ADDED_AT: dict[int, frozenset[tuple[str, str]]] = {
    2: frozenset(
        {
            ("ExchangeRequest", "agent_version"),
            ("ExchangeRequest", "protocol_revision"),
            ("ExchangeResponse", "agent_version"),
            ("ExchangeResponse", "protocol_revision"),
            ("QueryResponse", "agent_version"),
            ("QueryResponse", "protocol_revision"),
        }
    ),
    # the members' events: two messages (a whole message is (name, "*")), a value of the
    # Update oneof and a Key
    # and the events a query asks for (QueryRequest.events_since_us)
    3: frozenset(
        {
            ("Event", "*"),
            ("Events", "*"),
            ("Update", "events"),
            ("Key", "KEY_EVENTS"),
            ("QueryRequest", "events_since_us"),
        }
    ),
    # each member's group_replication_member_weight with its server variables (issue 47)
    4: frozenset({("Server", "member_weight")}),
    # each member's Group Replication error-log lines (issue 48): two messages, a value of the
    # Update oneof and a Key; and the client's revision a query carries
    5: frozenset(
        {
            ("LogLine", "*"),
            ("LogLines", "*"),
            ("Update", "log"),
            ("Key", "KEY_LOG"),
            ("QueryRequest", "protocol_revision"),
        }
    ),
}
#: The wire contract's fingerprint at each revision (:func:`contract_fingerprint`).
CONTRACT_AT = {
    1: "317ec6ef931a0e19",  # as main at d38a8b3 declares it
    2: "5062183cd34b1412",
    3: "53830bb6bf9507a8",  # with QueryRequest.events_since_us (revision 3 never released without it)
    4: "68819e65c898cf26",
    5: "6e99fc5143e84267",
}


def contract_fingerprint(revision: int) -> str:
    """A digest of what the wire carries at ``revision``: messages' fields, enums, services.

    Names, numbers, types, labels and oneofs count; comments, options and JSON names do not.
    Fields, messages and enum values appended after ``revision`` (:data:`ADDED_AT`) are
    left out.
    """
    later = set().union(*(added for r, added in ADDED_AT.items() if r > revision))
    declared = descriptor_pb2.FileDescriptorProto()
    grstats_pb2.DESCRIPTOR.CopyToProto(declared)
    lines = [declared.package]
    for message in declared.message_type:
        assert not message.nested_type, "nested messages: extend this fingerprint"
        if (message.name, "*") in later:
            continue
        lines.append(f"message {message.name}")
        lines += [
            f"  {f.name} {f.number} {f.label} {f.type} {f.type_name} "
            f"{f.oneof_index if f.HasField('oneof_index') else '-'} {f.proto3_optional}"
            for f in message.field
            if (message.name, f.name) not in later
        ]
        kept = {  # an optional field's oneof (_name) comes with the field
            f.oneof_index
            for f in message.field
            if f.HasField("oneof_index") and (message.name, f.name) not in later
        }
        lines += [f"  oneof {o.name}" for i, o in enumerate(message.oneof_decl) if i in kept]
        lines += [f"  reserved {r.start}-{r.end}" for r in message.reserved_range]
        lines += [f"  reserved {name}" for name in message.reserved_name]
    for enum in declared.enum_type:
        lines.append(f"enum {enum.name}")
        lines += [
            f"  {value.name} {value.number}"
            for value in enum.value
            if (enum.name, value.name) not in later
        ]
    for service in declared.service:
        lines.append(f"service {service.name}")
        lines += [
            f"  {m.name} {m.input_type} {m.output_type} {m.client_streaming} {m.server_streaming}"
            for m in service.method
        ]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def test_every_contract_change_comes_with_a_protocol_revision() -> None:
    """The contract is the one pinned at PROTOCOL_REVISION: a change needs the next revision (docs/upgrades.md)."""
    assert max(CONTRACT_AT) == PROTOCOL_REVISION
    assert contract_fingerprint(PROTOCOL_REVISION) == CONTRACT_AT[PROTOCOL_REVISION], (
        "proto/grstats.proto changed: bump PROTOCOL_REVISION in core/build.py, list the "
        "appended fields in ADDED_AT, pin the new fingerprint in CONTRACT_AT and say so in "
        "docs/upgrades.md"
    )


def test_each_revision_is_the_contract_without_later_fields() -> None:
    """Each earlier revision is today's contract without the fields appended since: append-only."""
    for revision, pinned in CONTRACT_AT.items():
        assert contract_fingerprint(revision) == pinned, revision
