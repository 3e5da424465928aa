"""The spool's record: one snapshot of every table an agent serves, as a msgpack map.

Schema version 1 (the ``schema`` key)::

    {
        "schema": 1,
        "collected_at_us": int,   # µs since the epoch, the collector's clock, when it asked
        "agent": "host:port",     # the agent asked (as given with --node)
        "agent_member": str,      # that agent's member (server_uuid), "" while it knows none
        "served_at_us": int,      # the agent's clock when it answered
        "tables": {name: {"columns": [str, ...], "rows": [[cell, ...], ...]}},
        "group_label": str,       # the group's name: the operator's label of it (--group
                                  # LABEL=..., [[groups]] label) when given; for the one group
                                  # of --node, its agent_group_label when that is a group
                                  # label (agent.model.is_group_label), else "default"
        "group_name": str,        # group_replication_group_name as the agent asked reports
                                  # it (QueryResponse.group_name), "" while it knows none
        "agent_group_label": str, # the group's label as the agent asked answers it
                                  # (QueryResponse.group_label: its InnoDB Cluster name or the
                                  # agents' configured group_label), "" when it knows none
        "events": {"columns": [str, ...], "rows": [[cell, ...], ...]},
                                  # replication_group_events rows this collector had not
                                  # spooled yet (grstats.collector.events); only on the polls
                                  # that fetched the events and found new ones
        "log": {"columns": [str, ...], "rows": [[cell, ...], ...]},
                                  # replication_group_member_log rows (each member's Group
                                  # Replication error-log lines) this collector had not
                                  # spooled yet; only on the polls that fetched the events and
                                  # found new lines
    }

``group_label`` and ``group_name`` were appended (schema still 1): records written before them
lack both keys, and readers take a missing key as :data:`DEFAULT_GROUP_LABEL` and ``""``. One
spool holds the records of every group the collector polls; ``group_label`` tells them apart.
``agent_group_label`` was appended after them (schema still 1): readers take a missing key as
``""``. Before it, ``group_label`` was always the collector's label (``default`` for
``--node``); it is still the group's name in the spool, the collector's label winning, but a
``--node`` record's may now be the agents' label, of the agents' rules (1 to 63 printable
characters: spaces and non-ASCII letters too), not only ``default``.

``events`` was appended after them (schema still 1): records without it hold no events (every
record of an older collector, and most polls of this one). Its rows have the columns of
``replication_group_events`` (:data:`EVENT_COLUMNS`, in the order the agent serves them; a
newer agent's other columns are kept and ignored by readers): EVENT_TIME an ``int`` µs since
the epoch on the reporting member's clock, the others ``str``. Each event is spooled once per
collector run, and again after a restart of the collector or when an agent the collector
fails over to serves it anew, so readers deduplicate (``grstats spark ingest`` does: an event
is its whole row, as every agent serves the same rows). :func:`record_events` reads them.

``log`` was appended after ``events`` (schema still 1): records without it hold no lines
(every record of an older collector, most polls of this one, and those of a collector asking
an agent that does not serve the table). Its rows have the columns of
``replication_group_member_log`` (:data:`LOG_COLUMNS`, in the order the agent serves them; a
newer agent's other columns are kept and ignored by readers): LOGGED an ``int`` µs since the
epoch on the writing member's clock, THREAD_ID an ``int`` or ``None``, ERROR_CODE and
SUBSYSTEM a ``str`` or ``None``, the others ``str``. As the events, each line is spooled once
per collector run and again after a restart or a failover, so readers deduplicate (a line is
its whole row). :func:`record_log` reads them.

``tables`` holds the four tables of :data:`TABLE_NAMES` with the extended columns (CONNECTED,
IN_VIEW, LAST_SEEN, AGE_MS, SOURCE) after MySQL's. Cells are msgpack natives: ``str``,
``int``, ``float`` (DECIMAL columns such as APPLIER_LAG_SECONDS), ``None`` for NULL;
TIMESTAMP columns are ``int`` µs since the epoch, 0 being MySQL's zero timestamp.

WARNING: ONLY APPEND. Keys and columns are only ever added; a change of meaning bumps
``schema``, and readers refuse versions they do not know (:func:`check_schema`).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Final

import msgpack  # type: ignore[import-untyped]

from grstats.collector.errors import RecordError, UnknownSchema
from grstats.core.rows import EXTENDED_COLUMNS, REPLICATION_GROUP_EVENTS, TABLES, Kind
from grstats.core.rows.member_log import REPLICATION_GROUP_MEMBER_LOG

if TYPE_CHECKING:
    from collections.abc import Mapping

    from grstats.proto import grstats_pb2 as pb


class RecordKey:
    """The keys of a record's map (above): its writers and readers name them from here."""

    SCHEMA: Final = "schema"
    COLLECTED_AT_US: Final = "collected_at_us"
    AGENT: Final = "agent"
    AGENT_MEMBER: Final = "agent_member"
    SERVED_AT_US: Final = "served_at_us"
    TABLES: Final = "tables"
    GROUP_LABEL: Final = "group_label"
    GROUP_NAME: Final = "group_name"
    AGENT_GROUP_LABEL: Final = "agent_group_label"
    EVENTS: Final = "events"
    LOG: Final = "log"
    #: The two keys of each table of ``tables``, and of ``events`` and ``log``.
    COLUMNS: Final = "columns"
    ROWS: Final = "rows"


#: The record schema version this code writes.
SCHEMA_VERSION = 1
#: Every record schema version this code reads.
KNOWN_SCHEMAS = frozenset({1})
#: The ``group_label`` of the one group of ``--node`` while its agents answer no label (and of
#: records older than the key).
DEFAULT_GROUP_LABEL = "default"
#: The tables every record holds, in the order the collector asks for them.
TABLE_NAMES: tuple[str, ...] = (
    "replication_group_members",
    "replication_group_member_stats",
    "replication_group_member_lag",
    "replication_group_member_gtid_executed",
)

#: The events table a record may hold, under its ``events`` key.
EVENTS_TABLE = REPLICATION_GROUP_EVENTS.name
#: The events' columns, in the order :func:`record_events` gives each event's cells.
EVENT_COLUMNS: tuple[str, ...] = tuple(column.name for column in REPLICATION_GROUP_EVENTS.columns)
#: Each event column's kind: EVENT_TIME a TIMESTAMP (µs since the epoch), the others TEXT.
EVENT_KINDS: dict[str, Kind] = {
    column.name: column.kind for column in REPLICATION_GROUP_EVENTS.columns
}
#: One event's cells, in EVENT_COLUMNS order.
Event = tuple[Any, ...]

#: The Group Replication log table a record may hold, under its ``log`` key.
LOG_TABLE = REPLICATION_GROUP_MEMBER_LOG.name
#: The log's columns, in the order :func:`record_log` gives each line's cells.
LOG_COLUMNS: tuple[str, ...] = tuple(column.name for column in REPLICATION_GROUP_MEMBER_LOG.columns)
#: Each log column's kind: LOGGED a TIMESTAMP (µs since the epoch), THREAD_ID an INTEGER.
LOG_KINDS: dict[str, Kind] = {
    column.name: column.kind for column in REPLICATION_GROUP_MEMBER_LOG.columns
}
#: The log's columns that may be NULL (``None``): THREAD_ID, ERROR_CODE, SUBSYSTEM.
LOG_NULLABLE = frozenset(
    column.name for column in REPLICATION_GROUP_MEMBER_LOG.columns if column.nullable
)
#: One log line's cells, in LOG_COLUMNS order.
LogLine = tuple[Any, ...]

#: A record cell: what msgpack stores for one column of one row.
Cell = str | int | float | None
#: A record: the msgpack map described in the module docstring.
Record = dict[str, Any]

#: Table -> column -> the kind of its cells in a record (MySQL's columns and grstats' extended).
COLUMN_KINDS: dict[str, dict[str, Kind]] = {
    name: {column.name: column.kind for column in (*TABLES[name].columns, *EXTENDED_COLUMNS)}
    for name in TABLE_NAMES
}


def record_from_response(
    response: pb.QueryResponse,
    *,
    agent: str,
    collected_at_us: int,
    group_label: str | None = None,
) -> Record:
    """Return the record of one Query.Read answer asked of ``agent`` at ``collected_at_us``.

    ``group_label`` is the operator's label of the group ``agent`` belongs to; it names the
    group in the record whatever the agent answers. None (the one group of ``--node``, which
    the operator did not name): the record's ``group_label`` is the label the agent answers
    (``response.group_label``) when it is a group label, else :data:`DEFAULT_GROUP_LABEL`.
    ``agent_group_label`` is the agent's answer either way.

    Raises:
        RecordError: a table of :data:`TABLE_NAMES` is missing, a row does not have one cell
            per column, or a cell is not of its column's kind (the message names the agent,
            the table and the column).
    """
    # Imported here: the agent's wire conversions bring protobuf and the gossip core, which
    # ingest's executors, reading records, never need (docs/benchmarks.md, "Spark ingest").
    from grstats.core.model import is_group_label  # noqa: PLC0415
    from grstats.core.query_wire import table_from_wire  # noqa: PLC0415

    wire = {table.name: table for table in response.tables}
    tables: dict[str, dict[str, Any]] = {}
    for name in TABLE_NAMES:
        if name not in wire:
            raise RecordError(f"{agent}: the answer has no table {name}")
        columns, rows = table_from_wire(wire[name])
        kinds = [COLUMN_KINDS[name].get(column, Kind.TEXT) for column in columns]
        cells = []
        for index, row in enumerate(rows):
            if len(row) != len(columns):
                raise RecordError(
                    f"{agent}: {name} row {index} has {len(row)} cells for {len(columns)} columns"
                )
            cells.append(
                [
                    _cell(value, kind, f"{agent}: {name}.{column}")
                    for value, kind, column in zip(row, kinds, columns, strict=True)
                ]
            )
        tables[name] = {RecordKey.COLUMNS: columns, RecordKey.ROWS: cells}
    answered = response.group_label
    if group_label is None:
        # An answer that is not a label (not printable, too long) names nothing: the default.
        group_label = answered if is_group_label(answered) else DEFAULT_GROUP_LABEL
    return {
        RecordKey.SCHEMA: SCHEMA_VERSION,
        RecordKey.COLLECTED_AT_US: collected_at_us,
        RecordKey.AGENT: agent,
        RecordKey.AGENT_MEMBER: (
            str(uuid.UUID(bytes=response.member)) if len(response.member) == 16 else ""
        ),
        RecordKey.SERVED_AT_US: response.served_at_us,
        RecordKey.TABLES: tables,
        RecordKey.GROUP_LABEL: group_label,
        RecordKey.GROUP_NAME: response.group_name,
        RecordKey.AGENT_GROUP_LABEL: answered,
    }


def _cell(value: object, kind: Kind, where: str) -> Cell:
    if value is None:
        return None
    if kind is Kind.DECIMAL and isinstance(value, int | float):
        return float(value)
    if kind in (Kind.INTEGER, Kind.TIMESTAMP) and isinstance(value, int):
        return value
    if kind is Kind.TEXT and isinstance(value, str):
        return value
    raise RecordError(f"{where}: {value!r} is not a {kind.value} value")


def events_from_response(
    response: pb.QueryResponse, *, agent: str
) -> tuple[list[str], list[list[Cell]]]:
    """Return the columns and rows of the events table of a Query.Read answer from ``agent``.

    Raises:
        RecordError: the answer has no events table, or a row does not have one cell per
            column, or a cell is not of its column's kind (the message names the agent and
            the column).
    """
    return _answer_table(response, agent, EVENTS_TABLE, EVENT_KINDS)


def log_from_response(
    response: pb.QueryResponse, *, agent: str
) -> tuple[list[str], list[list[Cell]]]:
    """Return the columns and rows of the log table of a Query.Read answer from ``agent``.

    Raises:
        RecordError: as :func:`events_from_response`, for ``replication_group_member_log``.
    """
    return _answer_table(response, agent, LOG_TABLE, LOG_KINDS)


def _answer_table(
    response: pb.QueryResponse, agent: str, name: str, kinds_of: Mapping[str, Kind]
) -> tuple[list[str], list[list[Cell]]]:
    """The columns and checked rows of table ``name`` of ``response`` (events or log)."""
    from grstats.core.query_wire import table_from_wire  # noqa: PLC0415 (see record_from_response)

    wire = {table.name: table for table in response.tables}
    if name not in wire:
        raise RecordError(f"{agent}: the answer has no table {name}")
    columns, rows = table_from_wire(wire[name])
    kinds = [kinds_of.get(column, Kind.TEXT) for column in columns]
    cells = []
    for index, row in enumerate(rows):
        if len(row) != len(columns):
            raise RecordError(
                f"{agent}: {name} row {index} has {len(row)} cells for {len(columns)} columns"
            )
        cells.append(
            [
                _cell(value, kind, f"{agent}: {name}.{column}")
                for value, kind, column in zip(row, kinds, columns, strict=True)
            ]
        )
    return columns, cells


def record_events(record: Mapping[str, Any], where: str = "record") -> list[Event]:
    """Return the events ``record`` holds, each as its cells in :data:`EVENT_COLUMNS` order.

    A record without ``events`` holds none. ``where`` names the record in the message.

    Raises:
        RecordError: ``events`` is not a table of the events' columns, or a cell is not of
            its column's kind; the message names the row, the column and the value.
    """
    return _record_table(record, RecordKey.EVENTS, EVENT_COLUMNS, (EVENT_KINDS, frozenset()), where)


def record_log(record: Mapping[str, Any], where: str = "record") -> list[LogLine]:
    """Return the log lines ``record`` holds, each as its cells in :data:`LOG_COLUMNS` order.

    A record without ``log`` holds none. ``where`` names the record in the message.

    Raises:
        RecordError: ``log`` is not a table of the log's columns, or a cell is not of its
            column's kind (None only where :data:`LOG_NULLABLE`); the message names the row,
            the column and the value.
    """
    return _record_table(record, RecordKey.LOG, LOG_COLUMNS, (LOG_KINDS, LOG_NULLABLE), where)


def _record_table(
    record: Mapping[str, Any],
    key: str,
    names: tuple[str, ...],
    kinds: tuple[Mapping[str, Kind], frozenset[str]],
    where: str,
) -> list[tuple[Any, ...]]:
    """The rows of the table under ``key`` of ``record``, each its cells in ``names`` order.

    ``kinds``: each column's kind, and the columns that may be None.
    """
    table = record.get(key)
    if table is None:
        return []
    try:
        columns, rows = table[RecordKey.COLUMNS], table[RecordKey.ROWS]
        positions = {column: index for index, column in enumerate(columns)}
        missing = [name for name in names if name not in positions]
        indices = [positions[name] for name in names if name in positions]
    except (KeyError, TypeError) as exc:
        raise RecordError(f"{where}: {key}: {table!r:.200} is not a table ({exc!r})") from exc
    if missing:
        raise RecordError(f"{where}: {key} has no column {missing[0]} (columns {columns!r})")
    of, nullable = kinds
    found = []
    for number, row in enumerate(rows):
        if not isinstance(row, list | tuple) or len(row) != len(columns):
            raise RecordError(
                f"{where}: {key} row {number}: {row!r:.200} is not one cell per column"
            )
        cells = tuple(row[index] for index in indices)
        for name, value in zip(names, cells, strict=True):
            if not (value is None and name in nullable) and not _is_of(value, of[name]):
                raise RecordError(
                    f"{where}: {key} row {number}: {name} {value!r:.200} is not "
                    f"{_EVENT_KIND_TEXT[of[name]]}"
                )
        found.append(cells)
    return found


def _is_of(value: object, kind: Kind) -> bool:
    """Whether a record's cell ``value`` is of ``kind`` (None is of none)."""
    if kind is Kind.TIMESTAMP:
        return value.__class__ is int and 0 < value < 2**63
    if kind is Kind.INTEGER:
        return value.__class__ is int
    return value.__class__ is str


_EVENT_KIND_TEXT = {
    Kind.TIMESTAMP: "a time (an integer of µs since the epoch, over 0)",
    Kind.TEXT: "a text",
    Kind.INTEGER: "an integer",
    Kind.DECIMAL: "a number",
}


def check_schema(payload: Mapping[str, Any], where: str = "record") -> int:
    """Return the schema version of ``payload``; raise UnknownSchema if this code cannot read it.

    ``where`` names the record in the message, e.g. ``"segment-...sealed at offset 8"``.
    """
    version = payload.get(RecordKey.SCHEMA)
    if type(version) is not int or version not in KNOWN_SCHEMAS:
        raise UnknownSchema(version, where)
    return version


def encode(record: Mapping[str, Any]) -> bytes:
    """Return ``record`` as msgpack bytes (the payload of one spool frame)."""
    payload: bytes = msgpack.packb(record, use_bin_type=True)
    return payload


def decode(payload: bytes) -> Record:
    """Return the map of msgpack ``payload``.

    Raises:
        RecordError: the bytes are not one msgpack value, or the value is not a map.
    """
    try:
        value = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise RecordError(f"payload is not msgpack ({exc or type(exc).__name__})") from exc
    if not isinstance(value, dict):
        raise RecordError(f"payload is a msgpack {type(value).__name__}, not a map")
    return value


def table_rows(record: Mapping[str, Any], name: str) -> list[dict[str, Cell]]:
    """Return the rows of table ``name`` of ``record`` as column-name -> cell dicts."""
    table = record[RecordKey.TABLES][name]
    columns = table[RecordKey.COLUMNS]
    return [dict(zip(columns, row, strict=True)) for row in table[RecordKey.ROWS]]
