"""SHOW statements as MySQL 8.4 runs them: SELECTs over information_schema, named as MySQL names.

MySQL turns SHOW COLUMNS, SHOW TABLES, SHOW INDEX, SHOW DATABASES and SHOW TABLE STATUS into
a SELECT over information_schema (sql/dd/info_schema/show.cc: ``build_show_columns_query``,
``build_show_tables_query``, ``build_show_keys_query``, ``build_show_databases_query``,
``build_show_table_status_query``); so does the endpoint, with MySQL's output names and order
(:class:`ShowQuery`), and answers it directly: a filter and a sort of the table's rows.
SHOW CREATE TABLE and SHOW CREATE DATABASE are answered from :mod:`.metadata`. ``SHOW FIELDS``
and ``SHOW KEYS`` / ``SHOW INDEXES``, which sqlglot does not parse, are spelled as SHOW COLUMNS
and SHOW INDEX first (:func:`canonical_show`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlglot import exp

from grstats.agent.sql.catalog import INFORMATION_SCHEMA

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from grstats.core.rows import Column, Value

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
    # the client's own grants (sql_yacc.yy: FOR CURRENT_USER, with or without parentheses)
    (
        re.compile(r"^(\s*SHOW\s+GRANTS)\s+FOR\s+CURRENT_USER\s*(?:\(\s*\))?", re.IGNORECASE),
        r"\1",
    ),
)


def canonical_show(sql: str) -> str:
    """``sql`` with SHOW FIELDS as SHOW COLUMNS, SHOW KEYS/INDEXES as SHOW INDEX.

    SHOW GRANTS FOR CURRENT_USER[()] is SHOW GRANTS (which sqlglot parses).
    """
    for pattern, replacement in _SYNONYMS:
        sql = pattern.sub(replacement, sql, count=1)
    return sql


_NAME_PART = r"'[^']*'|\"[^\"]*\"|`[^`]*`|[\w$.%-]+"
_GRANTS_FOR = re.compile(
    rf"^\s*SHOW\s+GRANTS\s+FOR\s+(?P<user>{_NAME_PART})(?:\s*@\s*(?:{_NAME_PART}))?\s*;?\s*$",
    re.IGNORECASE,
)


def grants_for(sql: str) -> str | None:
    """The user ``SHOW GRANTS FOR user[@host]`` names (unquoted), None for another statement.

    sqlglot does not parse it; MySQL shows another user's grants only to an account that may
    read the ``mysql`` schema (sql/sql_parse.cc, SQLCOM_SHOW_GRANTS).
    """
    found = _GRANTS_FOR.match(sql)
    if found is None:
        return None
    user = found.group("user")
    return user[1:-1] if user[:1] in {"'", '"', "`"} else user


def like_matcher(pattern: str) -> Callable[[str], bool]:
    """Whether a name matches MySQL's LIKE ``pattern`` (``%``, ``_``, ``\\`` escapes), any case.

    As SHOW ... LIKE compares names: case-insensitively (information_schema's name columns and
    the variables' names have case-insensitive collations).
    """
    parts, index = [], 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):  # \% and \_ are themselves
            parts.append(re.escape(pattern[index + 1]))
            index += 2
            continue
        parts.append(".*" if char == "%" else "." if char == "_" else re.escape(char))
        index += 1
    matcher = re.compile("".join(parts), re.IGNORECASE | re.DOTALL)
    return lambda name: matcher.fullmatch(name) is not None


@dataclass(frozen=True)
class ShowQuery:
    """What a SHOW statement selects from information_schema's ``table``, as show.cc builds it.

    ``outputs`` are (column, output name) in order; rows are those whose columns equal
    ``equals`` and whose ``like`` column matches its pattern, by ``order``. :meth:`select` is
    the statement as SQL; :meth:`answer` runs it directly over the table's rows (no planner:
    a SHOW costs a filter and a sort).
    """

    table: str
    outputs: tuple[tuple[str, str], ...]
    equals: tuple[tuple[str, str], ...]
    like: tuple[str, str] | None
    order: str

    def select(self) -> exp.Select:
        """SELECT column AS `name`, ... FROM information_schema.table WHERE ... ORDER BY order."""
        select = exp.select(
            *(
                exp.alias_(exp.column(column), exp.to_identifier(name, quoted=True))
                for column, name in self.outputs
            )
        ).from_(exp.table_(self.table, db=INFORMATION_SCHEMA))
        for column, value in self.equals:
            select = select.where(
                exp.EQ(this=exp.column(column), expression=exp.Literal.string(value))
            )
        if self.like is not None:
            column, pattern = self.like
            select = select.where(
                exp.Like(this=exp.column(column), expression=exp.Literal.string(pattern))
            )
        return select.order_by(exp.column(self.order))

    def answer(
        self, columns: Sequence[Column], rows: Iterable[Sequence[Value]]
    ) -> list[tuple[Value, ...]]:
        """The table's ``rows`` (of ``columns``) that the statement selects, in its order, whole."""
        at = {column.name: index for index, column in enumerate(columns)}
        equals = [(at[column], value) for column, value in self.equals]
        like = (at[self.like[0]], like_matcher(self.like[1])) if self.like is not None else None
        picked = [
            tuple(row)
            for row in rows
            if all(row[index] == value for index, value in equals)
            and (like is None or like[1](str(row[like[0]])))
        ]
        order = at[self.order]
        return sorted(picked, key=lambda row: (row[order] is not None, row[order]))


def columns_query(schema: str, table: str, *, full: bool, like: str | None) -> ShowQuery:
    """SHOW [FULL] COLUMNS FROM schema.table [LIKE like] (DESCRIBE too)."""
    outputs = tuple((column, name) for column, name, only_full in _COLUMNS if full or not only_full)
    equals = (("TABLE_SCHEMA", schema), ("TABLE_NAME", table))
    like_on = ("COLUMN_NAME", like) if like is not None else None
    return ShowQuery("COLUMNS", outputs, equals, like_on, "ORDINAL_POSITION")


def tables_query(schema: str, *, full: bool, like: str | None) -> ShowQuery:
    """SHOW [FULL] TABLES FROM schema [LIKE like]: ``Tables_in_schema[ (like)]``."""
    name = f"Tables_in_{schema}" + (f" ({like})" if like is not None else "")
    outputs = (("TABLE_NAME", name),) + ((("TABLE_TYPE", "Table_type"),) if full else ())
    like_on = ("TABLE_NAME", like) if like is not None else None
    return ShowQuery("TABLES", outputs, (("TABLE_SCHEMA", schema),), like_on, "TABLE_NAME")


def databases_query(like: str | None) -> ShowQuery:
    """SHOW DATABASES [LIKE like]: ``Database[ (like)]``."""
    name = "Database" + (f" ({like})" if like is not None else "")
    like_on = ("SCHEMA_NAME", like) if like is not None else None
    return ShowQuery("SCHEMATA", (("SCHEMA_NAME", name),), (), like_on, "SCHEMA_NAME")


def index_query(schema: str, table: str) -> ShowQuery:
    """SHOW INDEX FROM schema.table."""
    equals = (("TABLE_SCHEMA", schema), ("TABLE_NAME", table))
    return ShowQuery("STATISTICS", _INDEX, equals, None, "SEQ_IN_INDEX")


def table_status_query(schema: str, like: str | None) -> ShowQuery:
    """SHOW TABLE STATUS FROM schema [LIKE like]."""
    like_on = ("TABLE_NAME", like) if like is not None else None
    return ShowQuery("TABLES", _TABLE_STATUS, (("TABLE_SCHEMA", schema),), like_on, "TABLE_NAME")
