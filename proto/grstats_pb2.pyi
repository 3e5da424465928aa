from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Key(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    KEY_UNSPECIFIED: _ClassVar[Key]
    KEY_COUNTS: _ClassVar[Key]
    KEY_VIEW: _ClassVar[Key]
    KEY_APPLIER: _ClassVar[Key]
    KEY_GTID_EXECUTED: _ClassVar[Key]
    KEY_HEALTH: _ClassVar[Key]
    KEY_SERVER: _ClassVar[Key]
    KEY_EVENTS: _ClassVar[Key]
    KEY_LOG: _ClassVar[Key]
KEY_UNSPECIFIED: Key
KEY_COUNTS: Key
KEY_VIEW: Key
KEY_APPLIER: Key
KEY_GTID_EXECUTED: Key
KEY_HEALTH: Key
KEY_SERVER: Key
KEY_EVENTS: Key
KEY_LOG: Key

class Counts(_message.Message):
    __slots__ = ("transactions_in_queue", "transactions_checked", "conflicts_detected", "transactions_rows_validating", "gtids_present", "transactions_committed_all_members", "last_conflict_free_transaction", "transactions_remote_in_applier_queue", "transactions_remote_applied", "transactions_local_proposed", "transactions_local_rollback", "transactions_behind", "offsets", "offsets_present")
    TRANSACTIONS_IN_QUEUE_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONS_CHECKED_FIELD_NUMBER: _ClassVar[int]
    CONFLICTS_DETECTED_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONS_ROWS_VALIDATING_FIELD_NUMBER: _ClassVar[int]
    GTIDS_PRESENT_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONS_COMMITTED_ALL_MEMBERS_FIELD_NUMBER: _ClassVar[int]
    LAST_CONFLICT_FREE_TRANSACTION_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONS_REMOTE_APPLIED_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONS_LOCAL_PROPOSED_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONS_LOCAL_ROLLBACK_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONS_BEHIND_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_PRESENT_FIELD_NUMBER: _ClassVar[int]
    transactions_in_queue: int
    transactions_checked: int
    conflicts_detected: int
    transactions_rows_validating: int
    gtids_present: bool
    transactions_committed_all_members: str
    last_conflict_free_transaction: str
    transactions_remote_in_applier_queue: int
    transactions_remote_applied: int
    transactions_local_proposed: int
    transactions_local_rollback: int
    transactions_behind: int
    offsets: _containers.RepeatedCompositeFieldContainer[ClockOffset]
    offsets_present: bool
    def __init__(self, transactions_in_queue: _Optional[int] = ..., transactions_checked: _Optional[int] = ..., conflicts_detected: _Optional[int] = ..., transactions_rows_validating: _Optional[int] = ..., gtids_present: _Optional[bool] = ..., transactions_committed_all_members: _Optional[str] = ..., last_conflict_free_transaction: _Optional[str] = ..., transactions_remote_in_applier_queue: _Optional[int] = ..., transactions_remote_applied: _Optional[int] = ..., transactions_local_proposed: _Optional[int] = ..., transactions_local_rollback: _Optional[int] = ..., transactions_behind: _Optional[int] = ..., offsets: _Optional[_Iterable[_Union[ClockOffset, _Mapping]]] = ..., offsets_present: _Optional[bool] = ...) -> None: ...

class ClockOffset(_message.Message):
    __slots__ = ("member", "offset_us", "delay_us")
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    OFFSET_US_FIELD_NUMBER: _ClassVar[int]
    DELAY_US_FIELD_NUMBER: _ClassVar[int]
    member: bytes
    offset_us: int
    delay_us: int
    def __init__(self, member: _Optional[bytes] = ..., offset_us: _Optional[int] = ..., delay_us: _Optional[int] = ...) -> None: ...

class Member(_message.Message):
    __slots__ = ("member_id", "host", "port", "state", "role", "version", "communication_stack")
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    COMMUNICATION_STACK_FIELD_NUMBER: _ClassVar[int]
    member_id: bytes
    host: str
    port: int
    state: str
    role: str
    version: str
    communication_stack: str
    def __init__(self, member_id: _Optional[bytes] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., state: _Optional[str] = ..., role: _Optional[str] = ..., version: _Optional[str] = ..., communication_stack: _Optional[str] = ...) -> None: ...

class View(_message.Message):
    __slots__ = ("members", "view_id", "group_name", "single_primary_mode", "group_label")
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    VIEW_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    SINGLE_PRIMARY_MODE_FIELD_NUMBER: _ClassVar[int]
    GROUP_LABEL_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[Member]
    view_id: str
    group_name: str
    single_primary_mode: bool
    group_label: str
    def __init__(self, members: _Optional[_Iterable[_Union[Member, _Mapping]]] = ..., view_id: _Optional[str] = ..., group_name: _Optional[str] = ..., single_primary_mode: _Optional[bool] = ..., group_label: _Optional[str] = ...) -> None: ...

class Applier(_message.Message):
    __slots__ = ("last_queued_transaction", "last_queued_original_commit_us", "last_queued_immediate_commit_us", "last_queued_start_queue_us", "last_queued_end_queue_us", "queueing_transaction", "queueing_original_commit_us", "queueing_immediate_commit_us", "queueing_start_queue_us", "last_applied_transaction", "last_applied_original_commit_us", "last_applied_immediate_commit_us", "last_applied_start_apply_us", "last_applied_end_apply_us", "applying_transaction", "applying_original_commit_us", "applying_immediate_commit_us", "applying_start_apply_us", "timestamps_unknown")
    LAST_QUEUED_TRANSACTION_FIELD_NUMBER: _ClassVar[int]
    LAST_QUEUED_ORIGINAL_COMMIT_US_FIELD_NUMBER: _ClassVar[int]
    LAST_QUEUED_IMMEDIATE_COMMIT_US_FIELD_NUMBER: _ClassVar[int]
    LAST_QUEUED_START_QUEUE_US_FIELD_NUMBER: _ClassVar[int]
    LAST_QUEUED_END_QUEUE_US_FIELD_NUMBER: _ClassVar[int]
    QUEUEING_TRANSACTION_FIELD_NUMBER: _ClassVar[int]
    QUEUEING_ORIGINAL_COMMIT_US_FIELD_NUMBER: _ClassVar[int]
    QUEUEING_IMMEDIATE_COMMIT_US_FIELD_NUMBER: _ClassVar[int]
    QUEUEING_START_QUEUE_US_FIELD_NUMBER: _ClassVar[int]
    LAST_APPLIED_TRANSACTION_FIELD_NUMBER: _ClassVar[int]
    LAST_APPLIED_ORIGINAL_COMMIT_US_FIELD_NUMBER: _ClassVar[int]
    LAST_APPLIED_IMMEDIATE_COMMIT_US_FIELD_NUMBER: _ClassVar[int]
    LAST_APPLIED_START_APPLY_US_FIELD_NUMBER: _ClassVar[int]
    LAST_APPLIED_END_APPLY_US_FIELD_NUMBER: _ClassVar[int]
    APPLYING_TRANSACTION_FIELD_NUMBER: _ClassVar[int]
    APPLYING_ORIGINAL_COMMIT_US_FIELD_NUMBER: _ClassVar[int]
    APPLYING_IMMEDIATE_COMMIT_US_FIELD_NUMBER: _ClassVar[int]
    APPLYING_START_APPLY_US_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMPS_UNKNOWN_FIELD_NUMBER: _ClassVar[int]
    last_queued_transaction: str
    last_queued_original_commit_us: int
    last_queued_immediate_commit_us: int
    last_queued_start_queue_us: int
    last_queued_end_queue_us: int
    queueing_transaction: str
    queueing_original_commit_us: int
    queueing_immediate_commit_us: int
    queueing_start_queue_us: int
    last_applied_transaction: str
    last_applied_original_commit_us: int
    last_applied_immediate_commit_us: int
    last_applied_start_apply_us: int
    last_applied_end_apply_us: int
    applying_transaction: str
    applying_original_commit_us: int
    applying_immediate_commit_us: int
    applying_start_apply_us: int
    timestamps_unknown: bool
    def __init__(self, last_queued_transaction: _Optional[str] = ..., last_queued_original_commit_us: _Optional[int] = ..., last_queued_immediate_commit_us: _Optional[int] = ..., last_queued_start_queue_us: _Optional[int] = ..., last_queued_end_queue_us: _Optional[int] = ..., queueing_transaction: _Optional[str] = ..., queueing_original_commit_us: _Optional[int] = ..., queueing_immediate_commit_us: _Optional[int] = ..., queueing_start_queue_us: _Optional[int] = ..., last_applied_transaction: _Optional[str] = ..., last_applied_original_commit_us: _Optional[int] = ..., last_applied_immediate_commit_us: _Optional[int] = ..., last_applied_start_apply_us: _Optional[int] = ..., last_applied_end_apply_us: _Optional[int] = ..., applying_transaction: _Optional[str] = ..., applying_original_commit_us: _Optional[int] = ..., applying_immediate_commit_us: _Optional[int] = ..., applying_start_apply_us: _Optional[int] = ..., timestamps_unknown: _Optional[bool] = ...) -> None: ...

class Server(_message.Message):
    __slots__ = ("read_only", "super_read_only", "flow_control_mode", "flow_control_certifier_threshold", "flow_control_applier_threshold", "flow_control_min_quota", "flow_control_min_recovery_quota", "flow_control_max_quota", "flow_control_member_quota_percent", "flow_control_period", "flow_control_hold_percent", "flow_control_release_percent", "member_weight")
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    SUPER_READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    FLOW_CONTROL_MODE_FIELD_NUMBER: _ClassVar[int]
    FLOW_CONTROL_CERTIFIER_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    FLOW_CONTROL_APPLIER_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    FLOW_CONTROL_MIN_QUOTA_FIELD_NUMBER: _ClassVar[int]
    FLOW_CONTROL_MIN_RECOVERY_QUOTA_FIELD_NUMBER: _ClassVar[int]
    FLOW_CONTROL_MAX_QUOTA_FIELD_NUMBER: _ClassVar[int]
    FLOW_CONTROL_MEMBER_QUOTA_PERCENT_FIELD_NUMBER: _ClassVar[int]
    FLOW_CONTROL_PERIOD_FIELD_NUMBER: _ClassVar[int]
    FLOW_CONTROL_HOLD_PERCENT_FIELD_NUMBER: _ClassVar[int]
    FLOW_CONTROL_RELEASE_PERCENT_FIELD_NUMBER: _ClassVar[int]
    MEMBER_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    read_only: bool
    super_read_only: bool
    flow_control_mode: str
    flow_control_certifier_threshold: int
    flow_control_applier_threshold: int
    flow_control_min_quota: int
    flow_control_min_recovery_quota: int
    flow_control_max_quota: int
    flow_control_member_quota_percent: int
    flow_control_period: int
    flow_control_hold_percent: int
    flow_control_release_percent: int
    member_weight: int
    def __init__(self, read_only: _Optional[bool] = ..., super_read_only: _Optional[bool] = ..., flow_control_mode: _Optional[str] = ..., flow_control_certifier_threshold: _Optional[int] = ..., flow_control_applier_threshold: _Optional[int] = ..., flow_control_min_quota: _Optional[int] = ..., flow_control_min_recovery_quota: _Optional[int] = ..., flow_control_max_quota: _Optional[int] = ..., flow_control_member_quota_percent: _Optional[int] = ..., flow_control_period: _Optional[int] = ..., flow_control_hold_percent: _Optional[int] = ..., flow_control_release_percent: _Optional[int] = ..., member_weight: _Optional[int] = ...) -> None: ...

class Health(_message.Message):
    __slots__ = ("ok", "message")
    OK_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    message: str
    def __init__(self, ok: _Optional[bool] = ..., message: _Optional[str] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("event_time_us", "member", "event_type", "old_value", "new_value", "view_id", "detail")
    EVENT_TIME_US_FIELD_NUMBER: _ClassVar[int]
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    EVENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    OLD_VALUE_FIELD_NUMBER: _ClassVar[int]
    NEW_VALUE_FIELD_NUMBER: _ClassVar[int]
    VIEW_ID_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    event_time_us: int
    member: bytes
    event_type: str
    old_value: str
    new_value: str
    view_id: str
    detail: str
    def __init__(self, event_time_us: _Optional[int] = ..., member: _Optional[bytes] = ..., event_type: _Optional[str] = ..., old_value: _Optional[str] = ..., new_value: _Optional[str] = ..., view_id: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class Events(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[Event]
    def __init__(self, events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ...) -> None: ...

class LogLine(_message.Message):
    __slots__ = ("logged_us", "thread_id", "prio", "error_code", "subsystem", "data")
    LOGGED_US_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    PRIO_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    SUBSYSTEM_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    logged_us: int
    thread_id: int
    prio: str
    error_code: str
    subsystem: str
    data: str
    def __init__(self, logged_us: _Optional[int] = ..., thread_id: _Optional[int] = ..., prio: _Optional[str] = ..., error_code: _Optional[str] = ..., subsystem: _Optional[str] = ..., data: _Optional[str] = ...) -> None: ...

class LogLines(_message.Message):
    __slots__ = ("lines",)
    LINES_FIELD_NUMBER: _ClassVar[int]
    lines: _containers.RepeatedCompositeFieldContainer[LogLine]
    def __init__(self, lines: _Optional[_Iterable[_Union[LogLine, _Mapping]]] = ...) -> None: ...

class Update(_message.Message):
    __slots__ = ("origin", "incarnation", "version", "sent_at_us", "counts", "view", "applier", "gtid_executed", "health", "server", "events", "log")
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SENT_AT_US_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    APPLIER_FIELD_NUMBER: _ClassVar[int]
    GTID_EXECUTED_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    LOG_FIELD_NUMBER: _ClassVar[int]
    origin: bytes
    incarnation: int
    version: int
    sent_at_us: int
    counts: Counts
    view: View
    applier: Applier
    gtid_executed: str
    health: Health
    server: Server
    events: Events
    log: LogLines
    def __init__(self, origin: _Optional[bytes] = ..., incarnation: _Optional[int] = ..., version: _Optional[int] = ..., sent_at_us: _Optional[int] = ..., counts: _Optional[_Union[Counts, _Mapping]] = ..., view: _Optional[_Union[View, _Mapping]] = ..., applier: _Optional[_Union[Applier, _Mapping]] = ..., gtid_executed: _Optional[str] = ..., health: _Optional[_Union[Health, _Mapping]] = ..., server: _Optional[_Union[Server, _Mapping]] = ..., events: _Optional[_Union[Events, _Mapping]] = ..., log: _Optional[_Union[LogLines, _Mapping]] = ...) -> None: ...

class Stamp(_message.Message):
    __slots__ = ("key", "incarnation", "version")
    KEY_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    key: Key
    incarnation: int
    version: int
    def __init__(self, key: _Optional[_Union[Key, str]] = ..., incarnation: _Optional[int] = ..., version: _Optional[int] = ...) -> None: ...

class DigestEntry(_message.Message):
    __slots__ = ("origin", "stamps")
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    STAMPS_FIELD_NUMBER: _ClassVar[int]
    origin: bytes
    stamps: _containers.RepeatedCompositeFieldContainer[Stamp]
    def __init__(self, origin: _Optional[bytes] = ..., stamps: _Optional[_Iterable[_Union[Stamp, _Mapping]]] = ...) -> None: ...

class ExchangeRequest(_message.Message):
    __slots__ = ("sender", "sender_member", "digest", "updates", "sent_at_us", "agent_version", "protocol_revision")
    SENDER_FIELD_NUMBER: _ClassVar[int]
    SENDER_MEMBER_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    UPDATES_FIELD_NUMBER: _ClassVar[int]
    SENT_AT_US_FIELD_NUMBER: _ClassVar[int]
    AGENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_REVISION_FIELD_NUMBER: _ClassVar[int]
    sender: str
    sender_member: bytes
    digest: _containers.RepeatedCompositeFieldContainer[DigestEntry]
    updates: _containers.RepeatedCompositeFieldContainer[Update]
    sent_at_us: int
    agent_version: str
    protocol_revision: int
    def __init__(self, sender: _Optional[str] = ..., sender_member: _Optional[bytes] = ..., digest: _Optional[_Iterable[_Union[DigestEntry, _Mapping]]] = ..., updates: _Optional[_Iterable[_Union[Update, _Mapping]]] = ..., sent_at_us: _Optional[int] = ..., agent_version: _Optional[str] = ..., protocol_revision: _Optional[int] = ...) -> None: ...

class ExchangeResponse(_message.Message):
    __slots__ = ("updates", "digest", "received_at_us", "sent_at_us", "member", "agent_version", "protocol_revision")
    UPDATES_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    RECEIVED_AT_US_FIELD_NUMBER: _ClassVar[int]
    SENT_AT_US_FIELD_NUMBER: _ClassVar[int]
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    AGENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_REVISION_FIELD_NUMBER: _ClassVar[int]
    updates: _containers.RepeatedCompositeFieldContainer[Update]
    digest: _containers.RepeatedCompositeFieldContainer[DigestEntry]
    received_at_us: int
    sent_at_us: int
    member: bytes
    agent_version: str
    protocol_revision: int
    def __init__(self, updates: _Optional[_Iterable[_Union[Update, _Mapping]]] = ..., digest: _Optional[_Iterable[_Union[DigestEntry, _Mapping]]] = ..., received_at_us: _Optional[int] = ..., sent_at_us: _Optional[int] = ..., member: _Optional[bytes] = ..., agent_version: _Optional[str] = ..., protocol_revision: _Optional[int] = ...) -> None: ...

class PushReply(_message.Message):
    __slots__ = ("accepted",)
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    accepted: int
    def __init__(self, accepted: _Optional[int] = ...) -> None: ...

class Cell(_message.Message):
    __slots__ = ("text", "unsigned", "signed", "decimal", "null")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    UNSIGNED_FIELD_NUMBER: _ClassVar[int]
    SIGNED_FIELD_NUMBER: _ClassVar[int]
    DECIMAL_FIELD_NUMBER: _ClassVar[int]
    NULL_FIELD_NUMBER: _ClassVar[int]
    text: str
    unsigned: int
    signed: int
    decimal: float
    null: bool
    def __init__(self, text: _Optional[str] = ..., unsigned: _Optional[int] = ..., signed: _Optional[int] = ..., decimal: _Optional[float] = ..., null: _Optional[bool] = ...) -> None: ...

class Row(_message.Message):
    __slots__ = ("cells",)
    CELLS_FIELD_NUMBER: _ClassVar[int]
    cells: _containers.RepeatedCompositeFieldContainer[Cell]
    def __init__(self, cells: _Optional[_Iterable[_Union[Cell, _Mapping]]] = ...) -> None: ...

class Table(_message.Message):
    __slots__ = ("name", "columns", "rows")
    NAME_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    name: str
    columns: _containers.RepeatedScalarFieldContainer[str]
    rows: _containers.RepeatedCompositeFieldContainer[Row]
    def __init__(self, name: _Optional[str] = ..., columns: _Optional[_Iterable[str]] = ..., rows: _Optional[_Iterable[_Union[Row, _Mapping]]] = ...) -> None: ...

class QueryRequest(_message.Message):
    __slots__ = ("tables", "extended", "events_since_us", "protocol_revision")
    TABLES_FIELD_NUMBER: _ClassVar[int]
    EXTENDED_FIELD_NUMBER: _ClassVar[int]
    EVENTS_SINCE_US_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_REVISION_FIELD_NUMBER: _ClassVar[int]
    tables: _containers.RepeatedScalarFieldContainer[str]
    extended: bool
    events_since_us: int
    protocol_revision: int
    def __init__(self, tables: _Optional[_Iterable[str]] = ..., extended: _Optional[bool] = ..., events_since_us: _Optional[int] = ..., protocol_revision: _Optional[int] = ...) -> None: ...

class SourceFault(_message.Message):
    __slots__ = ("kind", "message", "fix", "since_us")
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FIX_FIELD_NUMBER: _ClassVar[int]
    SINCE_US_FIELD_NUMBER: _ClassVar[int]
    kind: str
    message: str
    fix: str
    since_us: int
    def __init__(self, kind: _Optional[str] = ..., message: _Optional[str] = ..., fix: _Optional[str] = ..., since_us: _Optional[int] = ...) -> None: ...

class QueryResponse(_message.Message):
    __slots__ = ("tables", "agent", "member", "served_at_us", "source_fault", "group_name", "group_label", "agent_version", "protocol_revision")
    TABLES_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    SERVED_AT_US_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FAULT_FIELD_NUMBER: _ClassVar[int]
    GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    GROUP_LABEL_FIELD_NUMBER: _ClassVar[int]
    AGENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_REVISION_FIELD_NUMBER: _ClassVar[int]
    tables: _containers.RepeatedCompositeFieldContainer[Table]
    agent: str
    member: bytes
    served_at_us: int
    source_fault: SourceFault
    group_name: str
    group_label: str
    agent_version: str
    protocol_revision: int
    def __init__(self, tables: _Optional[_Iterable[_Union[Table, _Mapping]]] = ..., agent: _Optional[str] = ..., member: _Optional[bytes] = ..., served_at_us: _Optional[int] = ..., source_fault: _Optional[_Union[SourceFault, _Mapping]] = ..., group_name: _Optional[str] = ..., group_label: _Optional[str] = ..., agent_version: _Optional[str] = ..., protocol_revision: _Optional[int] = ...) -> None: ...
