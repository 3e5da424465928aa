"""The schemas the SQL endpoint serves, and each column's MySQL type on the wire.

Three schemas, built from :mod:`grstats.core.rows`: ``performance_schema`` holds MySQL's
two Group Replication tables exactly as MySQL defines them (the agent's plain tables, see
:mod:`grstats.core.rows.schema` for MySQL's sources), ``grstats`` holds every served
table (the members' tables with the extended columns: CONNECTED, IN_VIEW, LAST_SEEN, AGE_MS,
SOURCE), every member's Group Replication log lines among them
(``replication_group_member_log``), and ``sys``
the view ProxySQL reads, ``gr_member_routing_candidate_status`` (:mod:`.sys_schema`).

A column's type in a result set is what MySQL's ``Field::type()`` returns for its declared type
(``sql/field.h``): CHAR(n) and ENUM are ``MYSQL_TYPE_STRING`` (ENUM's real type is only
visible in the column's flags), TEXT and LONGTEXT ``MYSQL_TYPE_BLOB`` (the length tells them
apart), BIGINT ``MYSQL_TYPE_LONGLONG``, INTEGER ``MYSQL_TYPE_LONG``, TIMESTAMP(6)
``MYSQL_TYPE_TIMESTAMP`` and DECIMAL(20,6) ``MYSQL_TYPE_NEWDECIMAL``. Text columns are
utf8mb4, the others binary, as MySQL sends them. Values travel as the ``mysql`` client prints
them (:func:`grstats.core.rows.render.cell_text`), TIMESTAMP(6) in the session's
``time_zone`` (MySQL converts a TIMESTAMP from UTC to it when it sends it,
``Field_timestampf::get_date_internal``), UTC unless the session sets another.
"""

from __future__ import annotations

import functools
import struct
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mysql_mimic.charset import CharacterSet
from mysql_mimic.constants import INFO_SCHEMA
from mysql_mimic.results import ResultColumn
from mysql_mimic.schema import Column as InfoColumn
from mysql_mimic.schema import InfoSchema
from mysql_mimic.types import ColumnType, str_len

from grstats.agent.sql.sys_schema import SYS_SCHEMA, VIEWS
from grstats.core.rows import (
    EXTENDED_COLUMNS,
    REPLICATION_GROUP_MEMBER_STATS,
    REPLICATION_GROUP_MEMBERS,
    ROW_TABLES,
    TABLES,
    Column,
    Kind,
    Table,
    Value,
    timestamp_text,
)
from grstats.core.rows.member_log import REPLICATION_GROUP_MEMBER_LOG
from grstats.core.rows.render import cell_text
from grstats.core.rows.zone import UTC_ZONE

if TYPE_CHECKING:
    from collections.abc import Callable

    from grstats.core.rows.zone import TimeZone

PERFORMANCE_SCHEMA = "performance_schema"
GRSTATS_SCHEMA = "grstats"
INFORMATION_SCHEMA = "information_schema"


def _variables_table(name: str) -> Table:
    """performance_schema.global_variables or global_status: VARIABLE_NAME and VARIABLE_VALUE.

    As storage/perfschema/table_global_variables.cc defines them (``m_table_def``), with
    VARIABLE_NAME their primary key.
    """
    return Table(
        name,
        (
            Column("VARIABLE_NAME", "VARCHAR(64)", nullable=False, kind=Kind.TEXT),
            Column("VARIABLE_VALUE", "VARCHAR(1024)", nullable=True, kind=Kind.TEXT),
        ),
    )


#: performance_schema.replication_group_communication_information as MySQL 8.4 defines it
#: (plugin/group_replication/src/perfschema/table_communication_information.cc,
#: ``Pfs_table_communication_information::init``: BOOLEAN is TINYINT(1), the comments verbatim).
COMMUNICATION_INFORMATION = Table(
    "replication_group_communication_information",
    (
        Column("WRITE_CONCURRENCY", "BIGINT UNSIGNED", nullable=False, kind=Kind.INTEGER),
        Column("PROTOCOL_VERSION", "LONGTEXT", nullable=False, kind=Kind.TEXT),
        Column("WRITE_CONSENSUS_LEADERS_PREFERRED", "LONGTEXT", nullable=False, kind=Kind.TEXT),
        Column("WRITE_CONSENSUS_LEADERS_ACTUAL", "LONGTEXT", nullable=False, kind=Kind.TEXT),
        Column(
            "WRITE_CONSENSUS_SINGLE_LEADER_CAPABLE",
            "TINYINT(1)",
            nullable=False,
            kind=Kind.INTEGER,
            comment="What the option group_replication_paxos_single_leader was set to at the "
            "time this member joined the group. ",
        ),
        Column(
            "MEMBER_FAILURE_SUSPICIONS_COUNT",
            "LONGTEXT",
            nullable=False,
            kind=Kind.TEXT,
            comment="A list of pairs between a group member address and the number of times "
            "the local node has seen it as suspected",
        ),
    ),
)
#: The session's own tables, from the agent's last read of its own member (not gossiped):
#: the server's variables and status, and its communication information.
GLOBAL_VARIABLES = _variables_table("global_variables")
GLOBAL_STATUS = _variables_table("global_status")
SESSION_TABLES = {
    table.name: table for table in (GLOBAL_VARIABLES, GLOBAL_STATUS, COMMUNICATION_INFORMATION)
}
#: Each table's primary key, where it has one (MySQL's Group Replication tables have none).
PRIMARY_KEYS = dict.fromkeys((GLOBAL_VARIABLES.name, GLOBAL_STATUS.name), ("VARIABLE_NAME",))

#: The tables of the ``grstats`` schema by name: the served ones, every member's GR log lines
#: among them (:mod:`grstats.core.rows.member_log`).
GRSTATS_TABLES: dict[str, Table] = {
    **TABLES,
    REPLICATION_GROUP_MEMBER_LOG.name: REPLICATION_GROUP_MEMBER_LOG,
}

#: schema -> (extended, table names)
SCHEMAS: dict[str, tuple[bool, tuple[str, ...]]] = {
    PERFORMANCE_SCHEMA: (
        False,
        (REPLICATION_GROUP_MEMBERS.name, REPLICATION_GROUP_MEMBER_STATS.name, *SESSION_TABLES),
    ),
    GRSTATS_SCHEMA: (True, tuple(GRSTATS_TABLES)),
    # the view addition_to_sys.sql adds, which ProxySQL reads (:mod:`.sys_schema`)
    SYS_SCHEMA: (False, tuple(VIEWS)),
}

#: The first word of each declared type -> the type MySQL sends for it (``Field::type()``).
_WIRE_TYPES = {
    "CHAR": ColumnType.STRING,
    "ENUM": ColumnType.STRING,
    "VARCHAR": ColumnType.VAR_STRING,
    "TEXT": ColumnType.BLOB,
    "MEDIUMTEXT": ColumnType.BLOB,
    "LONGTEXT": ColumnType.BLOB,
    "TINYINT": ColumnType.TINY,
    "BIGINT": ColumnType.LONGLONG,
    "INT": ColumnType.LONG,
    "INTEGER": ColumnType.LONG,
    "TIMESTAMP": ColumnType.TIMESTAMP,
    "DATETIME": ColumnType.DATETIME,
    "DECIMAL": ColumnType.NEWDECIMAL,
}

#: DESCRIBE's and information_schema's name of a declared type where it is not the lowercase
#: declared one (INTEGER is ``int``, MySQL 8.0.19+ shows no display width).
_TYPE_NAMES = {"INTEGER": "int"}


def is_database(name: str) -> bool:
    """Whether ``name`` (any case) is a served schema or mysql-mimic's (information_schema)."""
    return name.lower() in SCHEMAS or name.lower() in INFO_SCHEMA


def table_columns(schema: str, table: str) -> tuple[Column, ...] | None:
    """The columns of ``schema.table`` (lowercase names), or None when it is not served."""
    served = SCHEMAS.get(schema)
    if served is None or table not in served[1]:
        return None
    if table in SESSION_TABLES:
        return SESSION_TABLES[table].columns
    if schema == SYS_SCHEMA:
        return VIEWS[table].columns
    extended = served[0] and table in ROW_TABLES
    return GRSTATS_TABLES[table].columns + (EXTENDED_COLUMNS if extended else ())


def extended(schema: str) -> bool:
    """Whether ``schema``'s tables are the agent's extended ones (``grstats``)."""
    return SCHEMAS[schema][0]


def base_type(column: Column) -> str:
    """The declared type's first word, upper case: CHAR, ENUM, BIGINT, ..."""
    return column.sql_type.split("(", 1)[0].split(" ", 1)[0].upper()


def wire_type(column: Column) -> ColumnType:
    """The type MySQL sends for ``column`` in a result set's column definition."""
    try:
        return _WIRE_TYPES[base_type(column)]
    except KeyError:
        raise ValueError(f"{column.name}: no MySQL wire type for {column.sql_type!r}") from None


def data_type(column: Column) -> str:
    """``column``'s information_schema.columns.data_type: the type's name alone."""
    base = base_type(column)
    return _TYPE_NAMES.get(base, base.lower())


def column_type(column: Column) -> str:
    """``column``'s type as DESCRIBE and information_schema.columns.column_type show it."""
    base = base_type(column)
    rest = column.sql_type[len(base) :]
    name = _TYPE_NAMES.get(base, base.lower())
    # ENUM's values keep their case; the rest of a type (UNSIGNED, sizes) is lowercase.
    return name + (rest if base == "ENUM" else rest.lower())


@functools.cache
def info_schema() -> InfoSchema:
    """mysql-mimic's information_schema of the served tables (SHOW, DESCRIBE); built once.

    Nullability is each column's; ``data_type`` is the type's name alone and ``column_type``
    the full type, as MySQL fills them.
    """
    columns = [
        InfoColumn(
            name=column.name,
            type=column_type(column),
            table=table,
            is_nullable=column.nullable,
            schema=schema,
        )
        for schema, (_, tables) in SCHEMAS.items()
        for table in tables
        for column in table_columns(schema, table) or ()
    ]
    built = InfoSchema.from_columns(columns)
    names = {
        (schema, table, column.name): data_type(column)
        for schema, (_, tables) in SCHEMAS.items()
        for table in tables
        for column in table_columns(schema, table) or ()
    }
    info_columns = built.tables[INFORMATION_SCHEMA]["columns"]
    data_type_at = info_columns.columns.index("data_type")
    for index, row in enumerate(info_columns.rows):
        name = names.get((row[1], row[2], row[3]))
        if name is not None:
            info_columns.rows[index] = (*row[:data_type_at], name, *row[data_type_at + 1 :])
    return built


# -- values on the wire ---------------------------------------------------------------------


def engine_value(column: Column, value: Value, zone: TimeZone = UTC_ZONE) -> Value:
    """The value the query engine compares: TIMESTAMP(6) as MySQL's text in ``zone``.

    Other values are as they are. The text sorts as the time does (but for the hour a
    daylight saving time change repeats) and compares with ``'2024-01-01 00:00:00'``
    literals, which MySQL reads in the session's ``time_zone`` too.
    """
    if column.kind is Kind.TIMESTAMP and value is not None and not isinstance(value, str):
        return timestamp_text(int(value), zone)
    return value


def _text_encoder(column: Column, zone: TimeZone) -> Callable[[ResultColumn, Any], bytes]:
    """Encode a value as the ``mysql`` client prints it; TIMESTAMP text passes unchanged."""

    def encode(_: ResultColumn, value: Any) -> bytes:
        if isinstance(value, str):
            return value.encode()
        return cell_text(column, value, zone).encode()

    return encode


def _timestamp_binary(zone: TimeZone) -> Callable[[ResultColumn, Any], bytes]:
    """A TIMESTAMP(6) in the binary protocol (prepared statements), in ``zone``.

    The zero one is 0 bytes; text (the engine's) is already in ``zone``.
    """

    def binary(_: ResultColumn, value: Any) -> bytes:
        if isinstance(value, str):
            if value.startswith("0000-00-00"):
                return b"\x00"
            return _packed(datetime.fromisoformat(value))
        if not value:
            return b"\x00"
        return _packed(zone.moment(int(value)))

    return binary


def _packed(moment: datetime) -> bytes:
    """The binary protocol's 11-byte TIMESTAMP: length, year, month, day, h, m, s, µs."""
    return struct.pack(
        "<BHBBBBBI",
        11,
        moment.year,
        moment.month,
        moment.day,
        moment.hour,
        moment.minute,
        moment.second,
        moment.microsecond,
    )


def _text_binary(column: Column) -> Callable[[ResultColumn, Any], bytes]:
    """A DECIMAL in the binary protocol: its text, length-encoded."""
    encode = _text_encoder(column, UTC_ZONE)

    def binary(result_column: ResultColumn, value: Any) -> bytes:
        return bytes(str_len(encode(result_column, value)))

    return binary


def result_column(
    column: Column, name: str | None = None, zone: TimeZone = UTC_ZONE
) -> ResultColumn:
    """The result set column of ``column`` (named ``name``, by default the column's).

    A TIMESTAMP(6) value is sent in ``zone``, the session's ``time_zone``.
    """
    kind = column.kind
    if kind is Kind.TEXT:
        return ResultColumn(name or column.name, wire_type(column))
    binary: Callable[[ResultColumn, Any], bytes] | None = None
    if kind is Kind.TIMESTAMP:
        binary = _timestamp_binary(zone)
    elif kind is Kind.DECIMAL:
        binary = _text_binary(column)
    result = ResultColumn(
        name or column.name,
        wire_type(column),
        character_set=CharacterSet.binary,
        text_encoder=_text_encoder(column, zone),
        binary_encoder=binary,
    )
    if result.type is ColumnType.TINY:
        # mysql-mimic 3.0.5 writes a TINY value's digits with the column's codec, which for
        # the binary character set MySQL sends is "binary", no Python codec: digits are ASCII
        # (the report to file upstream: docs/upstream/mysql-mimic-tiny-binary.md).
        result.codec = "ascii"
    return result
