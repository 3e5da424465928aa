"""Turn what the server returned into the row model: pure functions, no I/O.

A *record* is one result row keyed by its column names in upper case, holding exactly the
columns the server returned, so a missing column (5.7's 9 stats columns, 8.0 before 8.0.27
without MEMBER_COMMUNICATION_STACK) shows up as a missing key, not as a guess from the version.
Every value outside its column's domain raises :class:`~grstats.core.errors.SourceDataError` whose
message starts ``table.COLUMN:`` and shows the value; a variable's starts
``global_variables.<variable_name>:``.

Besides the rows, a read yields the member's :class:`~grstats.core.model.ServerSettings`
(:func:`server_settings`: ``read_only``, ``super_read_only`` and the
``group_replication_flow_control_*`` variables, MySQL's default for each one the server lacks)
and ProxySQL's ``transactions_behind`` (:func:`transactions_behind`: the applier channel's
RECEIVED_TRANSACTION_SET minus ``gtid_executed``).
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from grstats.core.errors import ConfigError, SourceDataError
from grstats.core.gtid import GtidError, GtidSet
from grstats.core.model import (
    FLOW_CONTROL_MODES,
    CommunicationInfo,
    FlowControlSettings,
    ServerSettings,
    is_group_label,
)
from grstats.core.rows import (
    REPLICATION_GROUP_MEMBER_LAG,
    REPLICATION_GROUP_MEMBER_STATS,
    REPLICATION_GROUP_MEMBERS,
    ApplierStatusRow,
    MemberRow,
    MemberState,
    MemberStatsRow,
    Role,
    RowValueError,
    member_role,
)
from grstats.core.rows.member_log import MAX_DATA, MemberLogRow

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

_RowT = TypeVar("_RowT", MemberRow, MemberStatsRow)

#: One result row: column name (upper case) to value.
Record = dict[str, object]

GLOBAL_VARIABLES = "global_variables"
GLOBAL_STATUS = "global_status"
CONNECTION_STATUS = "replication_connection_status"
WORKER_STATUS = "replication_applier_status_by_worker"

#: The applier channel's GTIDs received from the group (relay log), on every version since 5.7:
#: ``Gtid_set::to_string`` text, UUIDs separated by ",\n" as in gtid_executed
#: (storage/perfschema/table_replication_connection_status.cc).
RECEIVED_TRANSACTION_SET = "RECEIVED_TRANSACTION_SET"

#: Longest VARIABLE_VALUE performance_schema keeps: longer values are cut to this length.
VARIABLE_VALUE_MAX = 1024

#: The prefix of the Group Replication plugin's flow-control variables
#: (plugin/group_replication/src/plugin.cc).
FLOW_CONTROL_PREFIX = "group_replication_flow_control_"
#: FlowControlSettings field -> its variable: the ten ``group_replication_flow_control_*``.
FLOW_CONTROL_VARIABLES = {
    field.name: FLOW_CONTROL_PREFIX + field.name
    for field in dataclasses.fields(FlowControlSettings)
}

#: The global variables a read needs (names as performance_schema lists them).
VARIABLE_NAMES = (
    "server_uuid",
    "version",
    "gtid_executed",
    "group_replication_group_name",
    "group_replication_single_primary_mode",
    "group_replication_member_weight",
    "read_only",
    "super_read_only",
    *FLOW_CONTROL_VARIABLES.values(),
)
#: 5.7's only record of which member is the primary (the primary's server_uuid, or '').
PRIMARY_MEMBER_STATUS = "group_replication_primary_member"

_VERSION_RE = re.compile(r"([0-9]+)\.([0-9]+)\.([0-9]+)")
_TIMESTAMP_RE = re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ON_OFF = {"ON": True, "1": True, "OFF": False, "0": False}
_INTEGER_RE = re.compile(r"-?[0-9]+")
_QUEUE_PREFIXES = ("LAST_QUEUED_", "QUEUEING_")
#: The lag table's WL#7374 columns, MySQL's own: each a transaction or one of its times. The
#: others (CHANNEL_NAME, MEMBER_ID, the lag, TRANSACTIONS_BEHIND, the lag by stage) are
#: grstats's, filled by the agent.
_LAG_COLUMNS = tuple(
    column.name
    for column in REPLICATION_GROUP_MEMBER_LAG.columns
    if column.name.endswith(("_TRANSACTION", "_TIMESTAMP"))
)
#: The WL#7374 columns (8.0+) the applier row is built from, per table.
QUEUE_COLUMNS = tuple(name for name in _LAG_COLUMNS if name.startswith(_QUEUE_PREFIXES))
APPLY_COLUMNS = tuple(name for name in _LAG_COLUMNS if name not in QUEUE_COLUMNS)


@dataclass(frozen=True, slots=True)
class ServerVariables:
    """What a read takes from ``global_variables``, checked."""

    server_uuid: str
    version: str
    version_tuple: tuple[int, int, int]
    gtid_executed: GtidSet
    group_name: str
    single_primary_mode: bool
    server: ServerSettings
    member_weight: int | None = None

    @property
    def has_transaction_timestamps(self) -> bool:
        """Whether the server has WL#7374's columns (MySQL 8.0 and later)."""
        return self.version_tuple >= (8, 0, 0)


def parse_version(text: str) -> tuple[int, int, int]:
    """Return (major, minor, patch) of a server version such as ``8.0.36-log``."""
    match = _VERSION_RE.match(text)
    if match is None:
        raise SourceDataError(
            f"{GLOBAL_VARIABLES}.version: {text!r} is not a MySQL version like 8.0.36"
        )
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def variable_map(table: str, pairs: Iterable[Sequence[object]]) -> dict[str, str]:
    """Return VARIABLE_NAME (lower case) to VARIABLE_VALUE; NULL values are data errors."""
    found: dict[str, str] = {}
    for name, value in pairs:
        if not isinstance(name, str):
            raise SourceDataError(f"{table}.VARIABLE_NAME: {name!r} is not a variable name")
        if not isinstance(value, str):
            raise SourceDataError(f"{table}.{name.lower()}: VARIABLE_VALUE {value!r} is not text")
        found[name.lower()] = value
    return found


def is_truncated(value: str) -> bool:
    """Whether a VARIABLE_VALUE may have been cut by performance_schema's VARCHAR(1024)."""
    return len(value) >= VARIABLE_VALUE_MAX


def server_variables(variables: Mapping[str, str]) -> ServerVariables:
    """Return the checked variables a read needs from ``variables`` (see VARIABLE_NAMES)."""
    uuid = _required(variables, "server_uuid")
    try:
        MemberRow(member_id=uuid)
    except RowValueError as exc:
        raise SourceDataError(f"{GLOBAL_VARIABLES}.server_uuid: {uuid!r} is not a UUID") from exc
    version = _required(variables, "version")
    single_primary = _on_off(variables, "group_replication_single_primary_mode", default=True)
    return ServerVariables(
        server_uuid=uuid.lower(),
        version=version,
        version_tuple=parse_version(version),
        gtid_executed=gtid_set(
            GLOBAL_VARIABLES, "gtid_executed", _required(variables, "gtid_executed")
        ),
        group_name=variables.get("group_replication_group_name", ""),
        single_primary_mode=single_primary,
        server=server_settings(variables),
        member_weight=_member_weight(variables),
    )


def _member_weight(variables: Mapping[str, str]) -> int | None:
    """``group_replication_member_weight`` (0..100), None where the server lacks it (5.7.19-)."""
    text = variables.get("group_replication_member_weight")
    if text is None:
        return None
    if not _INTEGER_RE.fullmatch(text) or not 0 <= int(text) <= 100:
        raise SourceDataError(
            f"{GLOBAL_VARIABLES}.group_replication_member_weight: {text!r} is not in 0..100"
        )
    return int(text)


def server_settings(variables: Mapping[str, str]) -> ServerSettings:
    """Return ``read_only``, ``super_read_only`` and flow control from ``variables``, checked.

    A variable the server lacks keeps MySQL's default: ``super_read_only`` is OFF before 5.7.8
    (sql/sys_vars.cc); 5.7 before 5.7.20 has only the flow-control mode and the two
    thresholds, a server without the Group Replication plugin none of them.
    """
    return ServerSettings(
        read_only=_on_off(variables, "read_only", default=False),
        super_read_only=_on_off(variables, "super_read_only", default=False),
        flow_control=_flow_control(variables),
    )


def transactions_behind(connection: Record | None, gtid_executed: GtidSet) -> int | None:
    """Return how many transactions the member received from the group and has not applied.

    ProxySQL's ``transactions_behind``: the GTID count of the ``group_replication_applier``
    channel's RECEIVED_TRANSACTION_SET (its ``replication_connection_status`` row,
    ``connection``) minus ``gtid_executed``. None without that row: Group Replication never
    started on the member, so it has no applier channel.
    """
    if connection is None:
        return None
    where = f"{CONNECTION_STATUS}.{RECEIVED_TRANSACTION_SET}"
    if RECEIVED_TRANSACTION_SET not in connection:
        raise SourceDataError(f"{where}: the column is missing")
    text = connection[RECEIVED_TRANSACTION_SET]
    if text is None:
        raise SourceDataError(f"{where}: None is not allowed: the column is NOT NULL")
    if not isinstance(text, str):
        raise SourceDataError(f"{where}: {text!r} is not text")
    received = gtid_set(CONNECTION_STATUS, RECEIVED_TRANSACTION_SET, text)
    return received.difference(gtid_executed).count()


def gtid_set(table: str, column: str, text: str) -> GtidSet:
    """Return GTID set ``text`` of ``table.column``; SourceDataError if it is malformed."""
    try:
        return GtidSet.parse(text)
    except GtidError as exc:
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise SourceDataError(f"{table}.{column}: {shown!r} is not a GTID set ({exc})") from exc


def member_rows(
    records: Iterable[Record], single_primary_mode: bool, primary_member: str | None
) -> tuple[MemberRow, ...]:
    """Return ``replication_group_members`` as rows sorted by MEMBER_ID.

    Columns the server lacks keep the row's defaults (``''``). Without MEMBER_ROLE (5.7) the
    role is derived as 8.0 displays it, from ``primary_member``, the primary's uuid in
    single-primary mode (``''`` or None when no primary is known).
    """
    rows = []
    for record in records:
        fields = _fields(REPLICATION_GROUP_MEMBERS.column_names, record)
        if "member_role" not in fields:
            fields["member_role"] = _derived_role(record, single_primary_mode, primary_member)
        rows.append(_row(MemberRow, REPLICATION_GROUP_MEMBERS.name, fields))
    return tuple(sorted(rows, key=lambda row: row.member_id))


def stats_row(record: Record | None) -> MemberStatsRow:
    """Return the member's ``replication_group_member_stats`` row (MySQL's default if absent)."""
    if record is None:
        return MemberStatsRow()
    fields = _fields(REPLICATION_GROUP_MEMBER_STATS.column_names, record)
    return _row(MemberStatsRow, REPLICATION_GROUP_MEMBER_STATS.name, fields)


def timestamp_us(table: str, column: str, value: object) -> int:
    """Return a TIMESTAMP(6) read in UTC as µs since the epoch; the zero timestamp is 0."""
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return (moment - _EPOCH) // timedelta(microseconds=1)
    match = _TIMESTAMP_RE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise SourceDataError(f"{table}.{column}: {value!r} is not a TIMESTAMP(6)")
    *parts, fraction = match.groups()
    year, month, day, hour, minute, second = (int(part) for part in parts)
    micros = int((fraction or "0").ljust(6, "0"))
    if year == month == day == hour == minute == second == micros == 0:
        return 0
    try:
        moment = datetime(year, month, day, hour, minute, second, micros, tzinfo=UTC)
    except ValueError:
        raise SourceDataError(f"{table}.{column}: {value!r} is not a TIMESTAMP(6)") from None
    return (moment - _EPOCH) // timedelta(microseconds=1)


def applier_row(
    member_id: str, connection: Record | None, workers: Sequence[Record]
) -> ApplierStatusRow:
    """Return the WL#7374 fields of ``group_replication_applier`` for ``member_id``.

    Queue fields come from the channel's ``replication_connection_status`` row. With several
    applier workers (``replica_parallel_workers`` > 1) apply fields are chosen so that the
    row answers "how far behind is this member":

    * LAST_APPLIED_* are the worker's whose LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP is
      greatest (then the greatest original commit time, then the lowest WORKER_ID): the
      transaction the member finished most recently.
    * APPLYING_* are the worker's whose APPLYING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP is the
      oldest non-zero one: the transaction the member is most behind on. Without such a time,
      the first worker applying a transaction at all, else nothing (``''`` and 0).
    """
    fields: dict[str, Any] = {"member_id": member_id}
    if connection is not None:
        fields.update(_channel_fields(CONNECTION_STATUS, connection, QUEUE_COLUMNS))
    converted = [_channel_fields(WORKER_STATUS, worker, APPLY_COLUMNS) for worker in workers]
    if converted:
        done = max(
            converted,
            key=lambda worker: (
                worker["last_applied_transaction_end_apply_timestamp"],
                worker["last_applied_transaction_original_commit_timestamp"],
            ),
        )
        fields.update({name: value for name, value in done.items() if name.startswith("last_")})
        busy = _most_behind(converted)
        if busy is not None:
            fields.update(
                {name: value for name, value in busy.items() if name.startswith("applying_")}
            )
    try:
        return ApplierStatusRow(**fields)
    except RowValueError as exc:
        table = CONNECTION_STATUS if exc.column.startswith(_QUEUE_PREFIXES) else WORKER_STATUS
        raise SourceDataError(f"{table}.{exc}") from exc


def has_columns(columns: Iterable[str], needed: Iterable[str]) -> bool:
    """Whether every column in ``needed`` is among ``columns``."""
    return set(needed) <= set(columns)


def _most_behind(workers: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    timed = [w for w in workers if w["applying_transaction_original_commit_timestamp"]]
    if timed:
        return min(timed, key=lambda w: w["applying_transaction_original_commit_timestamp"])
    return next((w for w in workers if w["applying_transaction"]), None)


def _channel_fields(table: str, record: Record, columns: Sequence[str]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    where = f" (WORKER_ID={record.get('WORKER_ID')!r})" if table == WORKER_STATUS else ""
    for name in columns:
        value = record.get(name)
        if name.endswith("_TIMESTAMP"):
            if value is None:
                raise SourceDataError(
                    f"{table}.{name}: None is not allowed: the column is NOT NULL{where}"
                )
            fields[name.lower()] = timestamp_us(table, name, value)
        else:
            fields[name.lower()] = value
    return fields


def _derived_role(record: Record, single_primary_mode: bool, primary_member: str | None) -> str:
    state = record.get("MEMBER_STATE")
    member_id = record.get("MEMBER_ID")
    if not isinstance(state, str) or not isinstance(member_id, str):
        return ""  # the row check reports the bad value
    status = MemberState.from_status(state)
    if status is MemberState.UNREACHABLE:  # keeps the role of its underlying state (ONLINE)
        status = MemberState.ONLINE
    if not primary_member:
        role = Role.NONE
    elif member_id.lower() == primary_member.lower():
        role = Role.PRIMARY
    else:
        role = Role.SECONDARY
    return member_role(status, role, single_primary_mode)


def _fields(columns: Iterable[str], record: Record) -> dict[str, Any]:
    return {name.lower(): record[name] for name in columns if name in record}


def _row(kind: type[_RowT], table: str, fields: dict[str, Any]) -> _RowT:
    try:
        return kind(**fields)
    except RowValueError as exc:
        raise SourceDataError(f"{table}.{exc}") from exc


def _on_off(variables: Mapping[str, str], name: str, *, default: bool) -> bool:
    text = variables.get(name)
    if text is None:
        return default
    value = _ON_OFF.get(text.upper())
    if value is None:
        raise SourceDataError(f"{GLOBAL_VARIABLES}.{name}: {text!r} is not ON, OFF, 1 or 0")
    return value


def _flow_control(variables: Mapping[str, str]) -> FlowControlSettings:
    settings: dict[str, Any] = {}
    for field, name in FLOW_CONTROL_VARIABLES.items():
        text = variables.get(name)
        if text is None:
            continue
        if field == "mode":
            if text.upper() not in FLOW_CONTROL_MODES:
                raise SourceDataError(
                    f"{GLOBAL_VARIABLES}.{name}: {text!r} is not {' or '.join(FLOW_CONTROL_MODES)}"
                )
            settings[field] = text.upper()
        elif _INTEGER_RE.fullmatch(text):
            settings[field] = int(text)
        else:
            raise SourceDataError(f"{GLOBAL_VARIABLES}.{name}: {text!r} is not an integer")
    try:
        return FlowControlSettings(**settings)
    except ConfigError as exc:  # a range: the message is "<variable>: <value> is not in ..."
        raise SourceDataError(f"{GLOBAL_VARIABLES}.{exc}") from exc


def _required(variables: Mapping[str, str], name: str) -> str:
    value = variables.get(name)
    if value is None:
        raise SourceDataError(f"{GLOBAL_VARIABLES}.{name}: the variable is missing")
    return value


#: performance_schema.replication_group_communication_information (MySQL 8.0.27+).
COMMUNICATION_INFORMATION = "replication_group_communication_information"


def communication_info(record: Record | None) -> CommunicationInfo | None:
    """The member's communication information row, checked; None when the table gave none.

    MySQL fills it in ``read_column_value`` (table_communication_information.cc): the leaders
    are comma-separated UUIDs; MEMBER_FAILURE_SUSPICIONS_COUNT came with 8.4 (None before).
    """
    if record is None:
        return None

    def text(column: str) -> str:
        value = record.get(column)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if not isinstance(value, str):
            raise SourceDataError(f"{COMMUNICATION_INFORMATION}.{column}: {value!r} is not text")
        return value

    concurrency = record.get("WRITE_CONCURRENCY")
    if not isinstance(concurrency, int) or concurrency < 0:
        raise SourceDataError(
            f"{COMMUNICATION_INFORMATION}.WRITE_CONCURRENCY: {concurrency!r} is not a count"
        )
    capable = record.get("WRITE_CONSENSUS_SINGLE_LEADER_CAPABLE")
    if capable not in {0, 1}:
        raise SourceDataError(
            f"{COMMUNICATION_INFORMATION}.WRITE_CONSENSUS_SINGLE_LEADER_CAPABLE: {capable!r} "
            "is not 0 or 1"
        )
    suspicions = "MEMBER_FAILURE_SUSPICIONS_COUNT"
    return CommunicationInfo(
        write_concurrency=concurrency,
        protocol_version=text("PROTOCOL_VERSION"),
        leaders_preferred=tuple(filter(None, text("WRITE_CONSENSUS_LEADERS_PREFERRED").split(","))),
        leaders_actual=tuple(filter(None, text("WRITE_CONSENSUS_LEADERS_ACTUAL").split(","))),
        single_leader_capable=bool(capable),
        failure_suspicions=text(suspicions) if suspicions in record else None,
    )


def cluster_name(records: Sequence[Record], group_name: str) -> str:
    """The InnoDB Cluster name of group ``group_name`` in MySQL Shell's metadata, else ''.

    ``records`` are rows of ``mysql_innodb_cluster_metadata.clusters`` (metadata 2.x,
    modules/adminapi/common/metadata/metadata-model-2.*.sql in mysql-shell) of type ``gr``:
    ``cluster_name`` and ``attributes``, a JSON document whose
    ``group_replication_group_name`` ties a cluster to its group (a ClusterSet's metadata holds
    every cluster of the set). A lone cluster whose attributes name no group is taken as the
    member's. A name that is not a group label (``is_group_label``) is not used.
    """
    names: list[str] = []
    unnamed: list[str] = []
    for record in records:
        name = record.get("CLUSTER_NAME")
        if isinstance(name, bytes):
            name = name.decode("utf-8", "replace")
        if not isinstance(name, str) or not is_group_label(name):
            continue
        attributes = record.get("ATTRIBUTES")
        if isinstance(attributes, bytes):
            attributes = attributes.decode("utf-8", "replace")
        try:
            parsed = json.loads(attributes) if isinstance(attributes, str) else None
        except ValueError:
            parsed = None
        group = parsed.get("group_replication_group_name") if isinstance(parsed, dict) else None
        if isinstance(group, str) and group.lower() == group_name.lower():
            names.append(name)
        elif group is None:
            unnamed.append(name)
    if names:
        return names[0]
    return unnamed[0] if len(unnamed) == 1 and len(records) == 1 else ""


#: performance_schema.error_log (MySQL 8.0.22+): its Group Replication lines are the member's
#: log (:mod:`grstats.core.rows.member_log`).
ERROR_LOG = "error_log"


def log_row(record: Record, member_id: str) -> MemberLogRow:
    """One error_log row as the member's log line; SourceDataError names a bad column.

    DATA longer than :data:`~grstats.core.rows.member_log.MAX_DATA` is cut there.
    """
    thread = record.get("THREAD_ID")
    try:
        thread_id = None if thread is None else int(str(thread))
    except ValueError:
        raise SourceDataError(f"{ERROR_LOG}.THREAD_ID: {thread!r} is not an integer") from None
    data = record.get("DATA")
    try:
        return MemberLogRow(
            logged=timestamp_us(ERROR_LOG, "LOGGED", record.get("LOGGED")),
            thread_id=thread_id,
            prio=str(record.get("PRIO")),
            error_code=_text_or_null(record.get("ERROR_CODE")),
            subsystem=_text_or_null(record.get("SUBSYSTEM")),
            data=(data if isinstance(data, str) else "")[:MAX_DATA],
            member_id=member_id,
        )
    except RowValueError as exc:
        raise SourceDataError(f"{ERROR_LOG}.{exc}") from exc


def _text_or_null(value: object) -> str | None:
    return None if value is None else str(value)
