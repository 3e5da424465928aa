"""Model <-> wire (``proto.grstats_pb2``): the only module that knows both.

Decoding checks everything a peer or client sends and raises :class:`WireError` naming the
field path and the value (``updates[2].view.members[0].member_id: ...``); the servers turn it
into INVALID_ARGUMENT, and nothing is stored. Limits keep what a peer sends bounded.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from grstats.agent.gossip import ClockOffset, Counts, Events, Key, LogLines, Stamp, Update
from grstats.agent.limits import DEFAULT_LIMITS
from grstats.agent.messages import Answer, Gossip
from grstats.core.build import OWN_BUILD, UNSAID_REVISION, AgentBuild
from grstats.core.errors import ConfigError
from grstats.core.events import MAX_EVENTS
from grstats.core.gtid import GtidError, GtidSet
from grstats.core.model import (
    LABEL_RULE,
    FlowControlSettings,
    GroupView,
    ServerSettings,
    SourceHealth,
    is_group_label,
)
from grstats.core.query_wire import (
    MAX_FAULT_KIND,
    MAX_TEXT,
    SourceReport,
    WireError,
    bounded,
    source_report_from_wire,
    source_report_to_wire,
)
from grstats.core.rows import (
    TRANSACTION_FIELDS,
    ApplierStatusRow,
    EventRow,
    MemberRow,
    MemberStatsRow,
    RowValueError,
)
from grstats.core.rows.member_log import KEPT_LINES, MAX_DATA, MemberLogRow
from grstats.proto import grstats_pb2 as pb

# The source report's wire form and the bounds it shares are core/query_wire.py's (``grstats
# query`` reads them without the agent's modules); named here for the agent's callers.
__all__ = [
    "AGENT_VERSION_RULE",
    "MAX_AGENT_VERSION",
    "MAX_FAULT_KIND",
    "MAX_MEMBERS",
    "MAX_SENDER_CHARS",
    "MAX_TEXT",
    "MAX_WIRE_EVENTS",
    "MAX_WIRE_LOG_LINES",
    "SourceReport",
    "WireError",
    "answer_from_wire",
    "answer_to_wire",
    "build_from_wire",
    "digest_from_wire",
    "digest_to_wire",
    "gossip_from_wire",
    "gossip_to_wire",
    "query_build_from_wire",
    "source_report_from_wire",
    "source_report_to_wire",
    "update_from_wire",
    "update_to_wire",
    "updates_from_wire",
    "uuid_from_bytes",
    "uuid_to_bytes",
]

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from grstats.agent.gossip import Digest
    from grstats.agent.gossip.updates import Value as GossipValue
    from grstats.agent.limits import LimitsConfig

#: Most members a view may list: Group Replication groups have at most 9.
MAX_MEMBERS = 9
#: Longest ``sender`` address accepted (a host name is at most 253 characters, plus the port).
MAX_SENDER_CHARS = 255
#: Most events one EVENTS value may hold: the count an agent keeps of its member's
#: (:data:`grstats.core.events.MAX_EVENTS`).
MAX_WIRE_EVENTS = MAX_EVENTS
#: Most lines one LOG value may hold: the count an agent keeps of its member's
#: (:data:`grstats.core.rows.member_log.KEPT_LINES`); each line's DATA at most
#: :data:`~grstats.core.rows.member_log.MAX_DATA` characters.
MAX_WIRE_LOG_LINES = KEPT_LINES
#: Longest ``agent_version`` accepted (a PEP 440 version, local part included, is far shorter).
MAX_AGENT_VERSION = 64
#: What an ``agent_version`` may be, in words (errors name it).
AGENT_VERSION_RULE = (
    f"at most {MAX_AGENT_VERSION} printable ASCII characters without spaces, or empty"
)

_KEYS = {
    Key.COUNTS: pb.KEY_COUNTS,
    Key.VIEW: pb.KEY_VIEW,
    Key.APPLIER: pb.KEY_APPLIER,
    Key.GTID_EXECUTED: pb.KEY_GTID_EXECUTED,
    Key.HEALTH: pb.KEY_HEALTH,
    Key.SERVER: pb.KEY_SERVER,
    Key.EVENTS: pb.KEY_EVENTS,
    Key.LOG: pb.KEY_LOG,
}
_KEYS_BACK = {number: key for key, number in _KEYS.items()}
# Applier message field -> ApplierStatusRow field: the transactions and their times of WL#7374
# (storage/perfschema/table_replication_applier_status_by_worker.cc).
_APPLIER = {
    "last_queued_transaction": "last_queued_transaction",
    "last_queued_original_commit_us": "last_queued_transaction_original_commit_timestamp",
    "last_queued_immediate_commit_us": "last_queued_transaction_immediate_commit_timestamp",
    "last_queued_start_queue_us": "last_queued_transaction_start_queue_timestamp",
    "last_queued_end_queue_us": "last_queued_transaction_end_queue_timestamp",
    "queueing_transaction": "queueing_transaction",
    "queueing_original_commit_us": "queueing_transaction_original_commit_timestamp",
    "queueing_immediate_commit_us": "queueing_transaction_immediate_commit_timestamp",
    "queueing_start_queue_us": "queueing_transaction_start_queue_timestamp",
    "last_applied_transaction": "last_applied_transaction",
    "last_applied_original_commit_us": "last_applied_transaction_original_commit_timestamp",
    "last_applied_immediate_commit_us": "last_applied_transaction_immediate_commit_timestamp",
    "last_applied_start_apply_us": "last_applied_transaction_start_apply_timestamp",
    "last_applied_end_apply_us": "last_applied_transaction_end_apply_timestamp",
    "applying_transaction": "applying_transaction",
    "applying_original_commit_us": "applying_transaction_original_commit_timestamp",
    "applying_immediate_commit_us": "applying_transaction_immediate_commit_timestamp",
    "applying_start_apply_us": "applying_transaction_start_apply_timestamp",
}


#: The ``group_replication_flow_control_*`` variables a Server message carries, by suffix.
_FLOW_CONTROL_FIELDS = (
    "mode",
    "certifier_threshold",
    "applier_threshold",
    "min_quota",
    "min_recovery_quota",
    "max_quota",
    "member_quota_percent",
    "period",
    "hold_percent",
    "release_percent",
)


# -- identities ---------------------------------------------------------------------------


def uuid_to_bytes(member_id: str) -> bytes:
    """Return a server_uuid as its 16 bytes."""
    return uuid.UUID(member_id).bytes


def uuid_from_bytes(raw: bytes, where: str) -> str:
    """Return the lowercase server_uuid of 16 bytes, or raise WireError for ``where``."""
    if len(raw) != 16:
        raise WireError(f"{where}: {raw[:32]!r} is not a 16-byte UUID")
    return str(uuid.UUID(bytes=raw))


# -- updates ------------------------------------------------------------------------------


def update_to_wire(update: Update) -> pb.Update:
    """Return ``update`` as a wire message."""
    message = pb.Update(
        origin=uuid_to_bytes(update.origin),
        incarnation=update.stamp.incarnation,
        version=update.stamp.version,
        sent_at_us=update.sent_at_us,
    )
    value = update.value
    if update.key is Key.COUNTS and isinstance(value, Counts):
        row = value.row
        message.counts.CopyFrom(
            pb.Counts(
                transactions_in_queue=row.count_transactions_in_queue,
                transactions_checked=row.count_transactions_checked,
                conflicts_detected=row.count_conflicts_detected,
                transactions_rows_validating=row.count_transactions_rows_validating,
                gtids_present=value.gtids_present,
                transactions_committed_all_members=(
                    row.transactions_committed_all_members if value.gtids_present else ""
                ),
                last_conflict_free_transaction=(
                    row.last_conflict_free_transaction if value.gtids_present else ""
                ),
                transactions_remote_in_applier_queue=row.count_transactions_remote_in_applier_queue,
                transactions_remote_applied=row.count_transactions_remote_applied,
                transactions_local_proposed=row.count_transactions_local_proposed,
                transactions_local_rollback=row.count_transactions_local_rollback,
                transactions_behind=value.transactions_behind,
                offsets=[
                    pb.ClockOffset(
                        member=uuid_to_bytes(o.member), offset_us=o.offset_us, delay_us=o.delay_us
                    )
                    for o in (value.offsets if value.offsets_present else ())
                ],
                offsets_present=value.offsets_present,
            )
        )
    elif update.key is Key.VIEW and isinstance(value, GroupView):
        message.view.CopyFrom(_view_to_wire(value))
    elif update.key is Key.APPLIER and isinstance(value, ApplierStatusRow):
        fields: dict[str, Any] = {
            name: getattr(value, f) or _empty(name) for name, f in _APPLIER.items()
        }
        fields["timestamps_unknown"] = value.timestamps_unknown
        message.applier.CopyFrom(pb.Applier(**fields))
    elif update.key is Key.GTID_EXECUTED and isinstance(value, GtidSet):
        message.gtid_executed = value.to_text(",")
    elif update.key is Key.HEALTH and isinstance(value, SourceHealth):
        message.health.CopyFrom(pb.Health(ok=value.ok, message=value.message))
    elif update.key is Key.SERVER and isinstance(value, ServerSettings):
        message.server.CopyFrom(_server_to_wire(value))
    elif update.key is Key.EVENTS and isinstance(value, Events):
        message.events.CopyFrom(pb.Events(events=[_event_to_wire(e) for e in value.events]))
    elif update.key is Key.LOG and isinstance(value, LogLines):
        message.log.CopyFrom(pb.LogLines(lines=[_line_to_wire(line) for line in value.lines]))
    else:
        raise TypeError(f"{update.key} cannot hold a {type(value).__name__}")
    return message


def _event_to_wire(event: EventRow) -> pb.Event:
    return pb.Event(
        event_time_us=event.event_time,
        member=uuid_to_bytes(event.member_id),
        event_type=event.event_type,
        old_value=event.old_value,
        new_value=event.new_value,
        view_id=event.view_id,
        detail=event.detail,
    )


def _line_to_wire(line: MemberLogRow) -> pb.LogLine:
    return pb.LogLine(
        logged_us=line.logged,
        thread_id=line.thread_id,
        prio=line.prio,
        error_code=line.error_code,
        subsystem=line.subsystem,
        data=line.data,
    )


def _log(message: pb.LogLines, origin: str, where: str) -> LogLines:
    """The origin's Group Replication log lines; raise WireError naming the bad line's field."""
    if len(message.lines) > MAX_WIRE_LOG_LINES:
        raise WireError(f"{where}: {len(message.lines)} lines is more than {MAX_WIRE_LOG_LINES}")
    lines = []
    for i, line in enumerate(message.lines):
        at = f"{where}[{i}]"
        bounded(line.data, MAX_DATA, f"{at}.data")
        bounded(line.prio, 16, f"{at}.prio")
        try:
            lines.append(
                MemberLogRow(
                    logged=line.logged_us,
                    thread_id=line.thread_id if line.HasField("thread_id") else None,
                    prio=line.prio,
                    error_code=line.error_code if line.HasField("error_code") else None,
                    subsystem=line.subsystem if line.HasField("subsystem") else None,
                    data=line.data,
                    member_id=origin,
                )
            )
        except RowValueError as exc:
            raise WireError(f"{at}: {exc}") from exc
    return LogLines(tuple(lines))


def _events(message: pb.Events, origin: str, where: str) -> Events:
    """The origin's events; raise WireError naming the bad event's field."""
    if len(message.events) > MAX_WIRE_EVENTS:
        raise WireError(f"{where}: {len(message.events)} events is more than {MAX_WIRE_EVENTS}")
    events = []
    for i, event in enumerate(message.events):
        at = f"{where}[{i}]"
        bounded(event.detail, MAX_TEXT, f"{at}.detail")
        try:
            events.append(
                EventRow(
                    event_time=event.event_time_us,
                    member_id=uuid_from_bytes(event.member, f"{at}.member"),
                    event_type=event.event_type,
                    old_value=event.old_value,
                    new_value=event.new_value,
                    view_id=event.view_id,
                    reported_by=origin,
                    detail=event.detail,
                )
            )
        except RowValueError as exc:
            raise WireError(f"{at}: {exc}") from exc
    return Events(tuple(events))


def _server_to_wire(server: ServerSettings) -> pb.Server:
    flow = server.flow_control
    fields = {f"flow_control_{name}": getattr(flow, name) for name in _FLOW_CONTROL_FIELDS}
    return pb.Server(
        read_only=server.read_only,
        super_read_only=server.super_read_only,
        member_weight=server.member_weight,
        **fields,
    )


def _server(message: pb.Server, where: str) -> ServerSettings:
    bounded(message.flow_control_mode, 16, f"{where}.flow_control_mode")
    fields = {name: getattr(message, f"flow_control_{name}") for name in _FLOW_CONTROL_FIELDS}
    try:
        flow = FlowControlSettings(**fields)
    except ConfigError as exc:
        raise WireError(f"{where}.{exc}") from exc
    weight = message.member_weight if message.HasField("member_weight") else None
    try:
        return ServerSettings(
            read_only=message.read_only,
            super_read_only=message.super_read_only,
            flow_control=flow,
            member_weight=weight,
        )
    except ConfigError as exc:
        raise WireError(f"{where}.member_weight: {exc}") from exc


def _empty(name: str) -> str | int:
    return 0 if name.endswith("_us") else ""


def _view_to_wire(view: GroupView) -> pb.View:
    return pb.View(
        members=[
            pb.Member(
                member_id=uuid_to_bytes(row.member_id),
                host=row.member_host,
                port=row.member_port or 0,
                state=row.member_state,
                role=row.member_role,
                version=row.member_version,
                communication_stack=row.member_communication_stack,
            )
            for row in view.members
            if row.member_id
        ],
        view_id=view.view_id,
        group_name=view.group_name,
        single_primary_mode=view.single_primary_mode,
        group_label=view.group_label,
    )


def updates_from_wire(
    messages: Sequence[pb.Update],
    where: str = "updates",
    *,
    max_updates: int = DEFAULT_LIMITS.max_updates,
    max_gtid_text: int = DEFAULT_LIMITS.max_gtid_text,
) -> list[Update]:
    """Return the model of ``messages``; raise WireError naming the first bad field.

    ``max_updates`` and ``max_gtid_text`` are the agent's ``[limits]`` (default: their defaults).
    """
    if len(messages) > max_updates:
        raise WireError(f"{where}: {len(messages)} updates is more than {max_updates}")
    return [
        update_from_wire(message, f"{where}[{i}]", max_gtid_text=max_gtid_text)
        for i, message in enumerate(messages)
    ]


def update_from_wire(
    message: pb.Update,
    where: str = "update",
    *,
    max_gtid_text: int = DEFAULT_LIMITS.max_gtid_text,
) -> Update:
    """Return the model of one update; raise WireError naming the bad field."""
    origin = uuid_from_bytes(message.origin, f"{where}.origin")
    stamp = Stamp(message.incarnation, message.version)
    kind = message.WhichOneof("value")
    try:
        found = _value_from_wire(message, kind, origin, where, max_gtid_text)
    except (RowValueError, GtidError) as exc:
        raise WireError(f"{where}: {exc}") from exc
    if found is None:
        raise WireError(
            f"{where}.value: no value set (one of counts, view, applier, gtid_executed, health, "
            "server, events, log)"
        )
    return Update(origin, stamp, found[0], found[1], message.sent_at_us)


def _value_from_wire(
    message: pb.Update, kind: str | None, origin: str, where: str, max_gtid_text: int
) -> tuple[Key, GossipValue] | None:
    """The key and value of ``message``'s ``kind``, None for no (or an unknown) kind."""
    decoders: dict[str, tuple[Key, Callable[[], GossipValue]]] = {
        "counts": (Key.COUNTS, lambda: _counts(message.counts, origin, where, max_gtid_text)),
        "view": (Key.VIEW, lambda: _view(message.view, f"{where}.view")),
        "applier": (Key.APPLIER, lambda: _applier(message.applier, origin)),
        "gtid_executed": (
            Key.GTID_EXECUTED,
            lambda: _gtid_set(message.gtid_executed, max_gtid_text, f"{where}.gtid_executed"),
        ),
        "health": (Key.HEALTH, lambda: _health(message.health, f"{where}.health")),
        "server": (Key.SERVER, lambda: _server(message.server, f"{where}.server")),
        "events": (Key.EVENTS, lambda: _events(message.events, origin, f"{where}.events")),
        "log": (Key.LOG, lambda: _log(message.log, origin, f"{where}.log")),
    }
    found = decoders.get(kind or "")
    return None if found is None else (found[0], found[1]())


def _gtid_set(text: str, limit: int, where: str) -> GtidSet:
    bounded(text, limit, where)
    return GtidSet.parse(text)


def _health(message: pb.Health, where: str) -> SourceHealth:
    bounded(message.message, MAX_TEXT, f"{where}.message")
    return SourceHealth(ok=message.ok, message=message.message)


def _counts(message: pb.Counts, origin: str, where: str, max_gtid_text: int) -> Counts:
    bounded(
        message.transactions_committed_all_members,
        max_gtid_text,
        f"{where}.counts.transactions_committed_all_members",
    )
    bounded(
        message.last_conflict_free_transaction,
        MAX_TEXT,
        f"{where}.counts.last_conflict_free_transaction",
    )
    row = MemberStatsRow(
        member_id=origin,
        count_transactions_in_queue=message.transactions_in_queue,
        count_transactions_checked=message.transactions_checked,
        count_conflicts_detected=message.conflicts_detected,
        count_transactions_rows_validating=message.transactions_rows_validating,
        transactions_committed_all_members=message.transactions_committed_all_members,
        last_conflict_free_transaction=message.last_conflict_free_transaction,
        count_transactions_remote_in_applier_queue=message.transactions_remote_in_applier_queue,
        count_transactions_remote_applied=message.transactions_remote_applied,
        count_transactions_local_proposed=message.transactions_local_proposed,
        count_transactions_local_rollback=message.transactions_local_rollback,
    )
    behind = message.transactions_behind if message.HasField("transactions_behind") else None
    return Counts(
        row,
        gtids_present=message.gtids_present,
        transactions_behind=behind,
        offsets=_offsets(message, f"{where}.counts.offsets"),
        offsets_present=message.offsets_present,
    )


def _offsets(message: pb.Counts, where: str) -> tuple[ClockOffset, ...]:
    """The clock offsets a Counts message carries (none unless ``offsets_present``)."""
    if not message.offsets_present:
        return ()
    if len(message.offsets) > 4 * MAX_MEMBERS:
        raise WireError(f"{where}: {len(message.offsets)} offsets is more than {4 * MAX_MEMBERS}")
    return tuple(
        ClockOffset(uuid_from_bytes(o.member, f"{where}[{i}].member"), o.offset_us, o.delay_us)
        for i, o in enumerate(message.offsets)
    )


def _view(message: pb.View, where: str) -> GroupView:
    if len(message.members) > MAX_MEMBERS:
        raise WireError(
            f"{where}.members: {len(message.members)} members is more than {MAX_MEMBERS}"
        )
    rows = []
    for i, member in enumerate(message.members):
        at = f"{where}.members[{i}]"
        for name in ("host", "state", "role", "version", "communication_stack"):
            bounded(getattr(member, name), MAX_TEXT, f"{at}.{name}")
        try:
            rows.append(
                MemberRow(
                    member_id=uuid_from_bytes(member.member_id, f"{at}.member_id"),
                    member_host=member.host,
                    member_port=member.port or None,
                    member_state=member.state,
                    member_role=member.role,
                    member_version=member.version,
                    member_communication_stack=member.communication_stack,
                )
            )
        except RowValueError as exc:
            raise WireError(f"{at}: {exc}") from exc
    bounded(message.view_id, 60, f"{where}.view_id")
    bounded(message.group_name, 36, f"{where}.group_name")
    label = message.group_label
    if label and not is_group_label(label):
        raise WireError(f"{where}.group_label: {label[:80]!r} is not a group label ({LABEL_RULE})")
    return GroupView(
        members=tuple(sorted(rows, key=lambda row: row.member_id)),
        view_id=message.view_id,
        group_name=message.group_name,
        single_primary_mode=message.single_primary_mode,
        group_label=label,
    )


def _applier(message: pb.Applier, origin: str) -> ApplierStatusRow:
    values: dict[str, Any] = {field: getattr(message, name) for name, field in _APPLIER.items()}
    if message.timestamps_unknown:
        values |= dict.fromkeys(TRANSACTION_FIELDS)
    return ApplierStatusRow(member_id=origin, **values)


# -- digests ------------------------------------------------------------------------------


def digest_to_wire(digest: Digest) -> list[pb.DigestEntry]:
    """Return ``digest`` as wire entries."""
    return [
        pb.DigestEntry(
            origin=uuid_to_bytes(member_id),
            stamps=[
                pb.Stamp(key=_KEYS[key], incarnation=s.incarnation, version=s.version)
                for key, s in stamps.items()
            ],
        )
        for member_id, stamps in digest.items()
    ]


def digest_from_wire(
    entries: Sequence[pb.DigestEntry], where: str = "digest"
) -> dict[str, dict[Key, Stamp]]:
    """Return the digest of ``entries``; raise WireError naming the bad field."""
    if len(entries) > 4 * MAX_MEMBERS:
        raise WireError(f"{where}: {len(entries)} entries is more than {4 * MAX_MEMBERS}")
    digest: dict[str, dict[Key, Stamp]] = {}
    for i, entry in enumerate(entries):
        origin = uuid_from_bytes(entry.origin, f"{where}[{i}].origin")
        stamps: dict[Key, Stamp] = {}
        for j, stamp in enumerate(entry.stamps):
            key = _KEYS_BACK.get(stamp.key)
            if key is None:
                continue  # a key from a newer contract: this agent holds no such value
            if j >= 2 * len(Key):
                raise WireError(f"{where}[{i}].stamps: more than {2 * len(Key)} stamps")
            stamps[key] = Stamp(stamp.incarnation, stamp.version)
        digest[origin] = stamps
    return digest


# -- which grstats an agent runs ----------------------------------------------------------


def build_from_wire(version: str, revision: int) -> AgentBuild:
    """Return what an agent said it runs; raise WireError naming the bad field.

    ``version`` must follow :data:`AGENT_VERSION_RULE` (it becomes a metric's label and a log
    field); ``''`` is an agent that did not say. ``revision`` 0 is an agent older than the
    field: :data:`~grstats.agent.messages.UNSAID_REVISION`. Any other revision is taken, newer
    ones too (their agent speaks a contract this one reads in part, as proto3 allows).
    """
    if version == OWN_BUILD.version and revision == OWN_BUILD.revision:
        return OWN_BUILD  # the usual case: a peer of this very release
    if len(version) > MAX_AGENT_VERSION or not all("!" <= char <= "~" for char in version):
        raise WireError(f"agent_version: {version[:80]!r} is not {AGENT_VERSION_RULE}")
    return AgentBuild(version, revision or UNSAID_REVISION)


def query_build_from_wire(response: pb.QueryResponse) -> AgentBuild:
    """Return which grstats the agent that gave ``response`` runs; raise WireError if bad.

    An answer of an agent older than the fields reads as an unknown version of revision 1.
    """
    return build_from_wire(response.agent_version, response.protocol_revision)


# -- messages between agents --------------------------------------------------------------


def gossip_to_wire(message: Gossip) -> pb.ExchangeRequest:
    """Return a push or an exchange's request as an ``ExchangeRequest``."""
    return pb.ExchangeRequest(
        sender=message.sender,
        sender_member=uuid_to_bytes(message.sender_member) if message.sender_member else b"",
        digest=digest_to_wire(message.digest),
        updates=[update_to_wire(update) for update in message.updates],
        sent_at_us=message.sent_at_us,
        agent_version=message.build.version,
        protocol_revision=message.build.revision,
    )


def gossip_from_wire(
    request: pb.ExchangeRequest, limits: LimitsConfig = DEFAULT_LIMITS, *, pushed: bool = False
) -> Gossip:
    """Return the message of ``request``; raise WireError naming the first bad field.

    The sender, its member and the updates are checked first, then the digest, which is not
    read at all when the message was ``pushed`` (a push carries none).
    """
    if len(request.sender) > MAX_SENDER_CHARS:
        raise WireError(f"sender: {len(request.sender)} characters is more than {MAX_SENDER_CHARS}")
    sender_member = (  # empty: the sender does not know its member yet (never read it)
        uuid_from_bytes(request.sender_member, "sender_member") if request.sender_member else ""
    )
    build = build_from_wire(request.agent_version, request.protocol_revision)
    updates = updates_from_wire(
        request.updates, max_updates=limits.max_updates, max_gtid_text=limits.max_gtid_text
    )
    return Gossip(
        sender=request.sender,
        sender_member=sender_member,
        updates=tuple(updates),
        sent_at_us=request.sent_at_us,
        digest={} if pushed else digest_from_wire(request.digest),
        build=build,
    )


def answer_to_wire(answer: Answer) -> pb.ExchangeResponse:
    """Return an exchange's answer as an ``ExchangeResponse``."""
    return pb.ExchangeResponse(
        updates=[update_to_wire(update) for update in answer.updates],
        digest=digest_to_wire(answer.digest),
        received_at_us=answer.received_at_us,
        sent_at_us=answer.sent_at_us,
        member=uuid_to_bytes(answer.member) if answer.member else b"",
        agent_version=answer.build.version,
        protocol_revision=answer.build.revision,
    )


def answer_from_wire(
    response: pb.ExchangeResponse, limits: LimitsConfig = DEFAULT_LIMITS, request_bytes: int = 0
) -> Answer:
    """Return the answer of ``response``; raise WireError naming the first bad field."""
    build = build_from_wire(response.agent_version, response.protocol_revision)
    updates = updates_from_wire(
        response.updates, max_updates=limits.max_updates, max_gtid_text=limits.max_gtid_text
    )
    return Answer(
        updates=tuple(updates),
        digest=digest_from_wire(response.digest),
        member=uuid_from_bytes(response.member, "member") if response.member else "",
        received_at_us=response.received_at_us,
        sent_at_us=response.sent_at_us,
        request_bytes=request_bytes,
        build=build,
    )
