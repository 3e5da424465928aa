"""SHOW statements as MySQL 8.4 runs them: SELECTs over information_schema, named as MySQL names.

MySQL turns SHOW COLUMNS, SHOW TABLES, SHOW INDEX, SHOW DATABASES and SHOW TABLE STATUS into
a SELECT over information_schema (sql/dd/info_schema/show.cc: ``build_show_columns_query``,
``build_show_tables_query``, ``build_show_keys_query``, ``build_show_databases_query``,
``build_show_table_status_query``); so does the endpoint, with MySQL's output names and order,
and the session runs the SELECT as any other query (its bounds included). SHOW CREATE TABLE and
SHOW CREATE DATABASE are answered from :mod:`.metadata`. ``SHOW FIELDS`` and ``SHOW KEYS`` /
``SHOW INDEXES``, which sqlglot does not parse, are spelled as SHOW COLUMNS and SHOW INDEX first
(:func:`canonical_show`).
"""

from __future__ import annotations

import re

from sqlglot import exp

from grstats.agent.sql.catalog import INFORMATION_SCHEMA

#: SHOW COLUMNS: (information_schema.COLUMNS column, output name, only with FULL), in order.
_COLUMNS = (
    ("COLUMN_NAME", "Field", False),
    ("COLUMN_TYPE", "Type", False),
    ("COLLATION_NAME", "Collation", True),
    ("IS_NULLABLE", "Null", False),
    ("COLUMN_KEY", "Key", False),
    ("COLUMN_DEFAULT", "Default", False),
    ("EXTRA", "Extra", False),
    ("PRIVILEGES", "Privileges", True),
    ("COLUMN_COMMENT", "Comment", True),
)
#: SHOW INDEX: information_schema.STATISTICS column -> output name, in order.
_INDEX = (
    ("TABLE_NAME", "Table"),
    ("NON_UNIQUE", "Non_unique"),
    ("INDEX_NAME", "Key_name"),
    ("SEQ_IN_INDEX", "Seq_in_index"),
    ("COLUMN_NAME", "Column_name"),
    ("COLLATION", "Collation"),
    ("CARDINALITY", "Cardinality"),
    ("SUB_PART", "Sub_part"),
    ("PACKED", "Packed"),
    ("NULLABLE", "Null"),
    ("INDEX_TYPE", "Index_type"),
    ("COMMENT", "Comment"),
    ("INDEX_COMMENT", "Index_comment"),
    ("IS_VISIBLE", "Visible"),
    ("EXPRESSION", "Expression"),
)
#: SHOW TABLE STATUS: information_schema.TABLES column -> output name, in order.
_TABLE_STATUS = (
    ("TABLE_NAME", "Name"),
    ("ENGINE", "Engine"),
    ("VERSION", "Version"),
    ("ROW_FORMAT", "Row_format"),
    ("TABLE_ROWS", "Rows"),
    ("AVG_ROW_LENGTH", "Avg_row_length"),
    ("DATA_LENGTH", "Data_length"),
    ("MAX_DATA_LENGTH", "Max_data_length"),
    ("INDEX_LENGTH", "Index_length"),
    ("DATA_FREE", "Data_free"),
    ("AUTO_INCREMENT", "Auto_increment"),
    ("CREATE_TIME", "Create_time"),
    ("UPDATE_TIME", "Update_time"),
    ("CHECK_TIME", "Check_time"),
    ("TABLE_COLLATION", "Collation"),
    ("CHECKSUM", "Checksum"),
    ("CREATE_OPTIONS", "Create_options"),
    ("TABLE_COMMENT", "Comment"),
)

_SYNONYMS = (
    (re.compile(r"^(\s*SHOW\s+(?:FULL\s+)?)(?:FIELDS)\b", re.IGNORECASE), r"\1COLUMNS"),
    (re.compile(r"^(\s*SHOW\s+(?:EXTENDED\s+)?)(?:KEYS|INDEXES)\b", re.IGNORECASE), r"\1INDEX"),
)


def canonical_show(sql: str) -> str:
    """``sql`` with SHOW FIELDS as SHOW COLUMNS and SHOW KEYS/INDEXES as SHOW INDEX."""
    for pattern, replacement in _SYNONYMS:
        sql = pattern.sub(replacement, sql, count=1)
    return sql


def _select(
    outputs: list[tuple[str, str]], table: str, where: list[exp.Expression], order: str
) -> exp.Select:
    """SELECT column AS `name`, ... FROM information_schema.table WHERE ... ORDER BY order."""
    select = exp.select(
        *(
            exp.alias_(exp.column(column), exp.to_identifier(name, quoted=True))
            for column, name in outputs
        )
    ).from_(exp.table_(table, db=INFORMATION_SCHEMA))
    for condition in where:
        select = select.where(condition)
    return select.order_by(exp.column(order))


def _equals(column: str, value: str) -> exp.Expression:
    return exp.EQ(this=exp.column(column), expression=exp.Literal.string(value))


def _like(column: str, pattern: str) -> exp.Expression:
    return exp.Like(this=exp.column(column), expression=exp.Literal.string(pattern))


def columns_query(schema: str, table: str, *, full: bool, like: str | None) -> exp.Select:
    """SHOW [FULL] COLUMNS FROM schema.table [LIKE like] (DESCRIBE too)."""
    outputs = [(column, name) for column, name, only_full in _COLUMNS if full or not only_full]
    where = [_equals("TABLE_SCHEMA", schema), _equals("TABLE_NAME", table)]
    if like is not None:
        where.append(_like("COLUMN_NAME", like))
    return _select(outputs, "COLUMNS", where, "ORDINAL_POSITION")


def tables_query(schema: str, *, full: bool, like: str | None) -> exp.Select:
    """SHOW [FULL] TABLES FROM schema [LIKE like]: ``Tables_in_schema[ (like)]``."""
    name = f"Tables_in_{schema}" + (f" ({like})" if like is not None else "")
    outputs = [("TABLE_NAME", name)] + ([("TABLE_TYPE", "Table_type")] if full else [])
    where = [_equals("TABLE_SCHEMA", schema)]
    if like is not None:
        where.append(_like("TABLE_NAME", like))
    return _select(outputs, "TABLES", where, "TABLE_NAME")


def databases_query(like: str | None) -> exp.Select:
    """SHOW DATABASES [LIKE like]: ``Database[ (like)]``."""
    name = "Database" + (f" ({like})" if like is not None else "")
    where = [_like("SCHEMA_NAME", like)] if like is not None else []
    return _select([("SCHEMA_NAME", name)], "SCHEMATA", where, "SCHEMA_NAME")


def index_query(schema: str, table: str) -> exp.Select:
    """SHOW INDEX FROM schema.table."""
    where = [_equals("TABLE_SCHEMA", schema), _equals("TABLE_NAME", table)]
    return _select(list(_INDEX), "STATISTICS", where, "SEQ_IN_INDEX")


def table_status_query(schema: str, like: str | None) -> exp.Select:
    """SHOW TABLE STATUS FROM schema [LIKE like]."""
    where = [_equals("TABLE_SCHEMA", schema)]
    if like is not None:
        where.append(_like("TABLE_NAME", like))
    return _select(list(_TABLE_STATUS), "TABLES", where, "TABLE_NAME")
