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
    }

``group_label`` and ``group_name`` were appended (schema still 1): records written before them
lack both keys, and readers take a missing key as :data:`DEFAULT_GROUP_LABEL` and ``""``. One
spool holds the records of every group the collector polls; ``group_label`` tells them apart.
``agent_group_label`` was appended after them (schema still 1): readers take a missing key as
``""``. Before it, ``group_label`` was always the collector's label (``default`` for
``--node``); it is still the group's name in the spool, the collector's label winning, but a
``--node`` record's may now be the agents' label, of the agents' rules (1 to 63 printable
characters: spaces and non-ASCII letters too), not only ``default``.

``tables`` holds the four tables of :data:`TABLE_NAMES` with the extended columns (CONNECTED,
IN_VIEW, LAST_SEEN, AGE_MS, SOURCE) after MySQL's. Cells are msgpack natives: ``str``,
``int``, ``float`` (DECIMAL columns such as APPLIER_LAG_SECONDS), ``None`` for NULL;
TIMESTAMP columns are ``int`` µs since the epoch, 0 being MySQL's zero timestamp.

WARNING: ONLY APPEND. Keys and columns are only ever added; a change of meaning bumps
``schema``, and readers refuse versions they do not know (:func:`check_schema`).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import msgpack  # type: ignore[import-untyped]

from grstats.agent.rows import EXTENDED_COLUMNS, TABLES, Kind
from grstats.collector.errors import RecordError, UnknownSchema

if TYPE_CHECKING:
    from collections.abc import Mapping

    from grstats.proto import grstats_pb2 as pb

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
    from grstats.agent.convert import table_from_wire  # noqa: PLC0415
    from grstats.agent.model import is_group_label  # noqa: PLC0415

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
        tables[name] = {"columns": columns, "rows": cells}
    answered = response.group_label
    if group_label is None:
        # An answer that is not a label (not printable, too long) names nothing: the default.
        group_label = answered if is_group_label(answered) else DEFAULT_GROUP_LABEL
    return {
        "schema": SCHEMA_VERSION,
        "collected_at_us": collected_at_us,
        "agent": agent,
        "agent_member": str(uuid.UUID(bytes=response.member)) if len(response.member) == 16 else "",
        "served_at_us": response.served_at_us,
        "tables": tables,
        "group_label": group_label,
        "group_name": response.group_name,
        "agent_group_label": answered,
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


def check_schema(payload: Mapping[str, Any], where: str = "record") -> int:
    """Return the schema version of ``payload``; raise UnknownSchema if this code cannot read it.

    ``where`` names the record in the message, e.g. ``"segment-...sealed at offset 8"``.
    """
    version = payload.get("schema")
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
    table = record["tables"][name]
    columns = table["columns"]
    return [dict(zip(columns, row, strict=True)) for row in table["rows"]]
