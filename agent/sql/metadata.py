"""What MySQL's metadata says of the served tables: information_schema, SHOW CREATE TABLE.

All of it is derived from the served columns (:mod:`grstats.core.rows.schema`, through
:mod:`.catalog`), as MySQL 8.4 derives it from a performance_schema table's DDL, so that a
client that asks about the tables gets MySQL's answer:

* ``information_schema`` is MySQL 8's: its tables and columns have upper-case names
  (``TABLE_NAME``), and ``COLUMNS``, ``TABLES``, ``SCHEMATA`` and ``STATISTICS`` are filled as
  MySQL fills them for a performance_schema table (``mysql-test/suite/perfschema/r/
  table_schema.result`` and ``r/information_schema.result``): ORDINAL_POSITION from 1, the
  lengths, precisions, character sets and collations of each type, ENGINE
  ``PERFORMANCE_SCHEMA``, ROW_FORMAT ``Fixed`` or ``Dynamic``, TABLE_COLLATION
  ``utf8mb4_0900_ai_ci``. The served tables have no index, as MySQL's have none: STATISTICS is
  empty and COLUMN_KEY ``''`` but for ``global_variables`` and ``global_status``, whose
  VARIABLE_NAME is their primary key (HASH). The other information_schema tables that
  mysql-mimic knows are there, empty, with their names in upper case.
* PRIVILEGES is ``select``: what MySQL shows to an account granted SELECT on the schema, the
  only privilege the endpoint gives (a deliberate difference from root's
  ``select,insert,update,references`` in the result file).
* :func:`create_table` is ``SHOW CREATE TABLE``'s text, rendered as MySQL's
  ``store_create_info`` renders a performance_schema table's ``Plugin_table`` DDL
  (storage/perfschema/table_replication_group_members.cc, ``m_table_def``): lower-case types,
  ``CHARACTER SET x COLLATE y`` where a column's collation is not the table's, ``DEFAULT NULL``
  on nullable columns but TEXT ones, no keys, ``ENGINE=PERFORMANCE_SCHEMA DEFAULT
  CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci``.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from mysql_mimic.constants import INFO_SCHEMA

from grstats.agent.sql import catalog
from grstats.core.rows import Column, Kind, Table

if TYPE_CHECKING:
    from collections.abc import Mapping

    from grstats.core.rows import Value

#: performance_schema's character set and collation: ``create_pfs_schema``
#: (sql/dd/performance_schema/init.cc) creates it ``CHARACTER SET utf8mb4``, whose default
#: collation is utf8mb4_0900_ai_ci; its tables take it.
TABLE_CHARSET = "utf8mb4"
TABLE_COLLATION = "utf8mb4_0900_ai_ci"
#: information_schema's, as MySQL 8 gives it.
INFO_CHARSET = "utf8mb3"
INFO_COLLATION = "utf8mb3_general_ci"
ENGINE = "PERFORMANCE_SCHEMA"
#: information_schema.TABLES.VERSION of every table (the .frm version MySQL 8 still reports).
TABLE_VERSION = 10
#: The privileges of an account granted SELECT: all the endpoint allows.
PRIVILEGES = "select"
#: Bytes a character takes at most, by character set.
_MAX_BYTES = {"utf8mb4": 4, "utf8mb3": 3, "ascii": 1}
#: CHARACTER_MAXIMUM_LENGTH (= CHARACTER_OCTET_LENGTH) of the text types without a length.
_TEXT_LENGTHS = {"TEXT": 65535, "MEDIUMTEXT": 16777215, "LONGTEXT": 4294967295}
#: NUMERIC_PRECISION of the integer types (signed, unsigned).
_PRECISION = {"TINYINT": (3, 3), "INT": (10, 10), "INTEGER": (10, 10), "BIGINT": (19, 20)}


def _varchar(name: str, length: int = 64, *, nullable: bool = False) -> Column:
    return Column(name, f"VARCHAR({length})", nullable, Kind.TEXT, INFO_COLLATION)


def _number(name: str, sql_type: str = "BIGINT UNSIGNED", *, nullable: bool = True) -> Column:
    return Column(name, sql_type, nullable, Kind.INTEGER)


def _long_text(name: str, sql_type: str = "LONGTEXT", *, nullable: bool = True) -> Column:
    return Column(name, sql_type, nullable, Kind.TEXT, INFO_COLLATION)


def _enum(name: str, values: str, *, nullable: bool = False) -> Column:
    return Column(name, f"ENUM({values})", nullable, Kind.TEXT, INFO_COLLATION)


_FILES_NUMBERS = frozenset(
    [
        "FILE_ID",
        "LOGFILE_GROUP_NUMBER",
        "DELETED_ROWS",
        "UPDATE_COUNT",
        "FREE_EXTENTS",
        "TOTAL_EXTENTS",
        "EXTENT_SIZE",
        "INITIAL_SIZE",
        "MAXIMUM_SIZE",
        "AUTOEXTEND_SIZE",
        "TRANSACTION_COUNTER",
        "VERSION",
        "TABLE_ROWS",
        "AVG_ROW_LENGTH",
        "DATA_LENGTH",
        "MAX_DATA_LENGTH",
        "INDEX_LENGTH",
        "DATA_FREE",
        "CHECKSUM",
    ]
)

#: information_schema.COLUMNS (sql/dd/impl/system_views/columns.cc), 22 columns.
COLUMNS = Table(
    "COLUMNS",
    (
        _varchar("TABLE_CATALOG"),
        _varchar("TABLE_SCHEMA"),
        _varchar("TABLE_NAME"),
        _varchar("COLUMN_NAME", nullable=True),
        _number("ORDINAL_POSITION", "INT UNSIGNED", nullable=False),
        _long_text("COLUMN_DEFAULT", "TEXT"),
        _varchar("IS_NULLABLE", 3),
        _long_text("DATA_TYPE"),
        _number("CHARACTER_MAXIMUM_LENGTH", "BIGINT"),
        _number("CHARACTER_OCTET_LENGTH", "BIGINT"),
        _number("NUMERIC_PRECISION"),
        _number("NUMERIC_SCALE"),
        _number("DATETIME_PRECISION", "INT UNSIGNED"),
        _varchar("CHARACTER_SET_NAME", nullable=True),
        _varchar("COLLATION_NAME", nullable=True),
        _long_text("COLUMN_TYPE", "MEDIUMTEXT", nullable=False),
        _enum("COLUMN_KEY", "'','PRI','UNI','MUL'"),
        _varchar("EXTRA", 256, nullable=True),
        _varchar("PRIVILEGES", 154, nullable=True),
        _long_text("COLUMN_COMMENT", "TEXT", nullable=False),
        _long_text("GENERATION_EXPRESSION", nullable=False),
        _number("SRS_ID", "INT UNSIGNED"),
    ),
)

#: information_schema.TABLES (sql/dd/impl/system_views/tables.cc), 21 columns.
TABLES = Table(
    "TABLES",
    (
        _varchar("TABLE_CATALOG"),
        _varchar("TABLE_SCHEMA"),
        _varchar("TABLE_NAME"),
        _enum("TABLE_TYPE", "'BASE TABLE','VIEW','SYSTEM VIEW'"),
        _varchar("ENGINE", nullable=True),
        _number("VERSION", "INT"),
        _enum(
            "ROW_FORMAT",
            "'Fixed','Dynamic','Compressed','Redundant','Compact','Paged'",
            nullable=True,
        ),
        _number("TABLE_ROWS"),
        _number("AVG_ROW_LENGTH"),
        _number("DATA_LENGTH"),
        _number("MAX_DATA_LENGTH"),
        _number("INDEX_LENGTH"),
        _number("DATA_FREE"),
        _number("AUTO_INCREMENT"),
        Column("CREATE_TIME", "TIMESTAMP", nullable=True, kind=Kind.TEXT),
        Column("UPDATE_TIME", "DATETIME", nullable=True, kind=Kind.TEXT),
        Column("CHECK_TIME", "DATETIME", nullable=True, kind=Kind.TEXT),
        _varchar("TABLE_COLLATION", nullable=True),
        _number("CHECKSUM", "BIGINT"),
        _varchar("CREATE_OPTIONS", 256, nullable=True),
        _long_text("TABLE_COMMENT", "TEXT"),
    ),
)

#: information_schema.SCHEMATA (sql/dd/impl/system_views/schemata.cc), 6 columns.
SCHEMATA = Table(
    "SCHEMATA",
    (
        _varchar("CATALOG_NAME"),
        _varchar("SCHEMA_NAME"),
        _varchar("DEFAULT_CHARACTER_SET_NAME"),
        _varchar("DEFAULT_COLLATION_NAME"),
        _varchar("SQL_PATH", 0, nullable=True),
        _enum("DEFAULT_ENCRYPTION", "'NO','YES'"),
    ),
)

#: information_schema.STATISTICS (sql/dd/impl/system_views/statistics.cc), 18 columns.
STATISTICS = Table(
    "STATISTICS",
    (
        _varchar("TABLE_CATALOG"),
        _varchar("TABLE_SCHEMA"),
        _varchar("TABLE_NAME"),
        _number("NON_UNIQUE", "INT", nullable=False),
        _varchar("INDEX_SCHEMA"),
        _varchar("INDEX_NAME", nullable=True),
        _number("SEQ_IN_INDEX", "INT UNSIGNED", nullable=False),
        _varchar("COLUMN_NAME", nullable=True),
        _varchar("COLLATION", 1, nullable=True),
        _number("CARDINALITY", "BIGINT"),
        _number("SUB_PART", "BIGINT"),
        _varchar("PACKED", 0, nullable=True),
        _varchar("NULLABLE", 3),
        _varchar("INDEX_TYPE", 11),
        _varchar("COMMENT", 8),
        _varchar("INDEX_COMMENT", 2048),
        _varchar("IS_VISIBLE", 3),
        _long_text("EXPRESSION"),
    ),
)

#: information_schema.FILES (sql/dd/impl/system_views/files.cc), empty: mysqldump asks it for
#: tablespaces; the served tables have none.
FILES = Table(
    "FILES",
    tuple(
        _number(name, "BIGINT") if name in _FILES_NUMBERS else _long_text(name)
        for name in [
            "FILE_ID",
            "FILE_NAME",
            "FILE_TYPE",
            "TABLESPACE_NAME",
            "TABLE_CATALOG",
            "TABLE_SCHEMA",
            "TABLE_NAME",
            "LOGFILE_GROUP_NAME",
            "LOGFILE_GROUP_NUMBER",
            "ENGINE",
            "FULLTEXT_KEYS",
            "DELETED_ROWS",
            "UPDATE_COUNT",
            "FREE_EXTENTS",
            "TOTAL_EXTENTS",
            "EXTENT_SIZE",
            "INITIAL_SIZE",
            "MAXIMUM_SIZE",
            "AUTOEXTEND_SIZE",
            "CREATION_TIME",
            "LAST_UPDATE_TIME",
            "LAST_ACCESS_TIME",
            "RECOVER_TIME",
            "TRANSACTION_COUNTER",
            "VERSION",
            "ROW_FORMAT",
            "TABLE_ROWS",
            "AVG_ROW_LENGTH",
            "DATA_LENGTH",
            "MAX_DATA_LENGTH",
            "INDEX_LENGTH",
            "DATA_FREE",
            "CREATE_TIME",
            "UPDATE_TIME",
            "CHECK_TIME",
            "CHECKSUM",
            "STATUS",
            "EXTRA",
        ]
    ),
)

_FILLED = {table.name: table for table in (COLUMNS, TABLES, SCHEMATA, STATISTICS, FILES)}


@functools.cache
def info_tables() -> dict[str, Table]:
    """information_schema's tables by lower-case name: the four filled, and mysql-mimic's others.

    The others (ROUTINES, VIEWS, TRIGGERS, ...) are empty; their columns are mysql-mimic's,
    named in upper case, as MySQL 8 names them.
    """
    tables = dict(_FILLED)
    for name, columns in INFO_SCHEMA[catalog.INFORMATION_SCHEMA].items():
        upper = name.upper()
        if upper not in tables:
            tables[upper] = Table(
                upper,
                tuple(
                    _number(column.upper(), "BIGINT")
                    if kind == "INT"
                    else _long_text(column.upper())
                    for column, kind in columns.items()
                ),
            )
    return {name.lower(): table for name, table in tables.items()}


@functools.cache
def info_columns() -> frozenset[Column]:
    """Every information_schema column: a query names them as defined, not as written."""
    return frozenset(column for table in info_tables().values() for column in table.columns)


# -- each column's facts ----------------------------------------------------------------------


def collation(column: Column, default: str = TABLE_COLLATION) -> str | None:
    """A text column's collation (its own, or its table's ``default``); None for others."""
    if catalog.base_type(column) not in _TEXT_TYPES:
        return None
    return column.collation or default


def charset(column: Column, default: str = TABLE_COLLATION) -> str | None:
    """A text column's character set (its collation's first word); None for others."""
    name = collation(column, default)
    return None if name is None else name.split("_", 1)[0]


_TEXT_TYPES = frozenset({"CHAR", "VARCHAR", "ENUM", *_TEXT_LENGTHS})


def _lengths(column: Column, default: str) -> tuple[int | None, int | None]:
    """CHARACTER_MAXIMUM_LENGTH and CHARACTER_OCTET_LENGTH."""
    base = catalog.base_type(column)
    if base in _TEXT_LENGTHS:
        return _TEXT_LENGTHS[base], _TEXT_LENGTHS[base]
    per_char = _MAX_BYTES.get(charset(column, default) or "", 1)
    if base in {"CHAR", "VARCHAR"}:
        length = int(column.sql_type.split("(", 1)[1].split(")", 1)[0])
        return length, length * per_char
    if base == "ENUM":
        longest = max(len(value) for value in re.findall(r"'((?:[^']|'')*)'", column.sql_type))
        return longest, longest * per_char
    return None, None


def _numeric(column: Column) -> tuple[int | None, int | None]:
    """NUMERIC_PRECISION and NUMERIC_SCALE."""
    base = catalog.base_type(column)
    if base == "DECIMAL":
        precision, scale = column.sql_type.split("(", 1)[1].rstrip(")").split(",")
        return int(precision), int(scale)
    if base in _PRECISION:
        signed, unsigned = _PRECISION[base]
        return (unsigned if "UNSIGNED" in column.sql_type.upper() else signed), 0
    return None, None


def _datetime_precision(column: Column) -> int | None:
    """DATETIME_PRECISION: the fractional digits of a TIMESTAMP or DATETIME."""
    if catalog.base_type(column) not in {"TIMESTAMP", "DATETIME"}:
        return None
    inside = column.sql_type.partition("(")[2].rstrip(")")
    return int(inside) if inside else 0


def columns_row(
    schema: str, table: str, position: int, column: Column, default: str = TABLE_COLLATION
) -> tuple[Value, ...]:
    """The information_schema.COLUMNS row of ``column``, the ``position``-th (from 1)."""
    key = "PRI" if column.name in catalog.PRIMARY_KEYS.get(table, ()) else ""
    most, octets = _lengths(column, default)
    precision, scale = _numeric(column)
    return (
        "def",
        schema,
        table,
        column.name,
        position,
        None,  # COLUMN_DEFAULT: performance_schema's columns have none
        "YES" if column.nullable else "NO",
        catalog.data_type(column),
        most,
        octets,
        precision,
        scale,
        _datetime_precision(column),
        charset(column, default),
        collation(column, default),
        catalog.column_type(column),
        key,  # COLUMN_KEY: MySQL's Group Replication tables have no index
        "",  # EXTRA
        PRIVILEGES,
        column.comment,  # COLUMN_COMMENT
        "",  # GENERATION_EXPRESSION
        None,  # SRS_ID
    )


# -- the tables' rows ---------------------------------------------------------------------


def _served() -> list[tuple[str, str, tuple[Column, ...]]]:
    """Every served table: (schema, name, columns)."""
    return [
        (schema, table, catalog.table_columns(schema, table) or ())
        for schema, (_, tables) in catalog.SCHEMAS.items()
        for table in tables
    ]


@functools.cache
def columns_rows() -> list[tuple[Value, ...]]:
    """information_schema.COLUMNS: every served table's columns, then information_schema's."""
    rows = [
        columns_row(schema, table, position, column)
        for schema, table, columns in _served()
        for position, column in enumerate(columns, start=1)
    ]
    rows += [
        columns_row(catalog.INFORMATION_SCHEMA, table.name, position, column, INFO_COLLATION)
        for table in info_tables().values()
        for position, column in enumerate(table.columns, start=1)
    ]
    return rows


def row_format(columns: tuple[Column, ...]) -> str:
    """``Fixed`` when every column has a fixed length, else ``Dynamic`` (MySQL's choice)."""
    variable = {"VARCHAR", *_TEXT_LENGTHS}
    return "Dynamic" if any(catalog.base_type(c) in variable for c in columns) else "Fixed"


def tables_rows(row_counts: Mapping[tuple[str, str], int]) -> list[tuple[Value, ...]]:
    """information_schema.TABLES; TABLE_ROWS of a served table is its ``row_counts`` entry."""
    rows: list[tuple[Value, ...]] = [
        (
            "def",
            schema,
            table,
            "BASE TABLE",
            ENGINE,
            TABLE_VERSION,
            row_format(columns),
            row_counts.get((schema, table), 0),
            0,  # AVG_ROW_LENGTH
            0,  # DATA_LENGTH
            0,  # MAX_DATA_LENGTH
            0,  # INDEX_LENGTH
            0,  # DATA_FREE
            None,  # AUTO_INCREMENT
            None,  # CREATE_TIME
            None,  # UPDATE_TIME
            None,  # CHECK_TIME
            TABLE_COLLATION,
            None,  # CHECKSUM
            "",  # CREATE_OPTIONS
            "",  # TABLE_COMMENT
        )
        for schema, table, columns in _served()
    ]
    rows += [
        ("def", catalog.INFORMATION_SCHEMA, table.name, "SYSTEM VIEW", None, TABLE_VERSION)
        + (None,) * 11
        + (None, None, None, "VIEW")
        for table in info_tables().values()
    ]
    return rows


def schemata_rows() -> list[tuple[Value, ...]]:
    """information_schema.SCHEMATA, by name."""
    rows: list[tuple[Value, ...]] = [
        ("def", schema, TABLE_CHARSET, TABLE_COLLATION, None, "NO") for schema in catalog.SCHEMAS
    ]
    rows.append(("def", catalog.INFORMATION_SCHEMA, INFO_CHARSET, INFO_COLLATION, None, "NO"))
    return sorted(rows, key=lambda row: str(row[1]))


def statistics_rows() -> list[tuple[Value, ...]]:
    """information_schema.STATISTICS: the primary keys ``USING HASH`` of the variables tables."""
    return [
        (
            *("def", schema, table, 0, schema, "PRIMARY", position, column),
            *(None, None, None, None, "", "HASH", "", "", "YES", None),
        )
        for schema, (_, tables) in catalog.SCHEMAS.items()
        for table in tables
        for position, column in enumerate(catalog.PRIMARY_KEYS.get(table, ()), start=1)
    ]


def info_rows(table: str, row_counts: Mapping[tuple[str, str], int]) -> list[tuple[Value, ...]]:
    """The rows of information_schema's ``table`` (lower case); empty for the unfilled ones."""
    if table == "columns":
        return columns_rows()
    if table == "tables":
        return tables_rows(row_counts)
    if table == "schemata":
        return schemata_rows()
    if table == "statistics":
        return statistics_rows()
    return []


# -- SHOW CREATE ---------------------------------------------------------------------------


def _definition(column: Column) -> str:
    """One column's line in SHOW CREATE TABLE (without the indent and the comma)."""
    parts = [f"`{column.name}`", catalog.column_type(column)]
    own = column.collation
    if own is not None and collation(column) is not None and own != TABLE_COLLATION:
        parts.append(f"CHARACTER SET {own.split('_', 1)[0]} COLLATE {own}")
    if not column.nullable:
        parts.append("NOT NULL")
    elif catalog.base_type(column) not in _TEXT_LENGTHS:
        parts.append("DEFAULT NULL")
    if column.comment:  # quoted as sql/sql_show.cc's append_unescaped quotes it
        text = column.comment.replace("\\", "\\\\").replace("'", "\\'")
        parts.append(f"COMMENT '{text}'")
    return " ".join(parts)


def create_table(schema: str, table: str) -> str | None:
    """``SHOW CREATE TABLE schema.table``'s text; None when it is not a served table."""
    columns = catalog.table_columns(schema, table)
    if columns is None:
        return None
    definitions = [_definition(column) for column in columns]
    key = catalog.PRIMARY_KEYS.get(table)
    if key:  # declared USING HASH; SHOW CREATE TABLE leaves that out (r/schema.result)
        definitions.append("PRIMARY KEY (" + ",".join(f"`{name}`" for name in key) + ")")
    lines = ",\n".join(f"  {definition}" for definition in definitions)
    return (
        f"CREATE TABLE `{table}` (\n{lines}\n) ENGINE={ENGINE}"
        f" DEFAULT CHARSET={TABLE_CHARSET} COLLATE={TABLE_COLLATION}"
    )


def create_database(schema: str) -> str:
    """``SHOW CREATE DATABASE``'s text (mysql-test/suite/perfschema/r/schema.result)."""
    charset_name, collation_name = (
        (INFO_CHARSET, INFO_COLLATION)
        if schema == catalog.INFORMATION_SCHEMA
        else (TABLE_CHARSET, TABLE_COLLATION)
    )
    return (
        f"CREATE DATABASE `{schema}` /*!40100 DEFAULT CHARACTER SET {charset_name}"
        f" COLLATE {collation_name} */ /*!80016 DEFAULT ENCRYPTION='N' */"
    )
