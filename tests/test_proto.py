"""The wire contract: generated code is current, and unknown fields survive (mixed versions)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from google.protobuf import descriptor_pb2

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
    }
    fault = {f.name: f.number for f in grstats_pb2.SourceFault.DESCRIPTOR.fields}
    assert fault == {"kind": 1, "message": 2, "fix": 3, "since_us": 4}
