"""MySQL's errors for a statement that would change a served table, whoever asks.

performance_schema's tables refuse it through their ACL, even for root, before any column is
looked at (``pfs_readonly_acl``); MySQL's own test results give the words:

* INSERT, UPDATE, DELETE: 1142 ``INSERT command denied to user 'root'@'localhost' for table
  'replication_group_members'``, and ``SELECT, LOCK TABLES`` for LOCK TABLES ... READ or
  WRITE (mysql-test/suite/perfschema/r/dml_replication_group_members.result and
  dml_replication_group_member_stats.result);
* TRUNCATE TABLE: 1683 ``Invalid performance_schema usage.``; ALTER TABLE, CREATE INDEX (and
  CREATE or DROP of a table there): 1044 ``Access denied for user 'root'@'localhost' to database
  'performance_schema'`` (r/ddl_replication_group_members.result).

The grstats schema's tables answer the same. A write to anything else keeps the endpoint's
general answer, a ``super_read_only`` server's 1290 (:func:`.session.read_only_error`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from mysql_mimic.errors import SQLSTATES, ErrorCode, MysqlError
from sqlglot import exp

if TYPE_CHECKING:
    from collections.abc import Callable

    #: A served table's canonical (schema, name), or None when the table is not one.
    Resolver = Callable[[exp.Table], tuple[str, str] | None]

#: include/mysqld_error.h
ER_DBACCESS_DENIED_ERROR = 1044
ER_TABLEACCESS_DENIED_ERROR = 1142
ER_WRONG_PERFSCHEMA_USAGE = 1683
for _code, _state in (
    (ER_DBACCESS_DENIED_ERROR, b"42000"),
    (ER_TABLEACCESS_DENIED_ERROR, b"42000"),
):
    SQLSTATES.setdefault(cast("ErrorCode", _code), _state)

_LOCK = re.compile(r"^\s*LOCK\s+TABLES?\s+(?P<tables>.*)$", re.IGNORECASE | re.DOTALL)
_NAME = re.compile(r"\s*((?:`[^`]*`|[\w$]+)(?:\s*\.\s*(?:`[^`]*`|[\w$]+))?)")
_COMMANDS = {exp.Insert: "INSERT", exp.Update: "UPDATE", exp.Delete: "DELETE"}


def _error(code: int, message: str) -> MysqlError:
    return MysqlError(message, code=cast("ErrorCode", code))


def _table_of(node: exp.Expression | None) -> exp.Table | None:
    """The table a statement's ``this`` names (through a column list or an index)."""
    while node is not None and not isinstance(node, exp.Table):
        node = node.args.get("table") if isinstance(node, exp.Index) else node.args.get("this")
        if not isinstance(node, exp.Expression):
            return None
    return node


def _locked_tables(sql: str) -> list[exp.Table]:
    """The tables of ``LOCK TABLES t [AS a] READ, ...`` (sqlglot keeps it as a Command)."""
    match = _LOCK.match(sql)
    if match is None:
        return []
    tables = []
    for item in match.group("tables").split(","):
        name = _NAME.match(item)
        if name is not None:
            tables.append(_named_table(name.group(1)))
    return tables


def _named_table(name: str) -> exp.Table:
    """The table ``name`` (``t``, ``db.t``, each part maybe in backquotes) names."""
    parts = [part.strip().strip("`") for part in name.split(".")]
    return exp.table_(parts[-1], db=parts[0] if len(parts) == 2 else None)


def denial(expression: exp.Expression, served: Resolver, user: str, host: str) -> MysqlError | None:
    """MySQL's error for ``expression`` if it would change a served table, else None.

    ``user`` and ``host`` are the client's, as MySQL names them in the message.
    """
    account = f"'{user}'@'{host}'"
    if isinstance(expression, exp.Insert | exp.Update | exp.Delete):
        return _dml(expression, served, account)
    if isinstance(expression, exp.TruncateTable):
        tables = [table for table in expression.expressions if isinstance(table, exp.Table)]
        if any(served(table) for table in tables):
            return _error(ER_WRONG_PERFSCHEMA_USAGE, "Invalid performance_schema usage.")
    elif isinstance(expression, exp.Alter | exp.Create | exp.Drop):
        table = _table_of(expression.this)
        target = served(table) if table is not None else None
        if target is not None:
            return _error(
                ER_DBACCESS_DENIED_ERROR,
                f"Access denied for user {account} to database '{target[0]}'",
            )
    elif isinstance(expression, exp.Command):
        return _lock(expression, served, account)
    return None


def _dml(expression: exp.Expression, served: Resolver, account: str) -> MysqlError | None:
    """1142 for INSERT, UPDATE or DELETE of a served table."""
    command = next(name for kind, name in _COMMANDS.items() if isinstance(expression, kind))
    table = _table_of(expression.this)
    target = served(table) if table is not None else None
    if target is None:
        return None
    return _error(
        ER_TABLEACCESS_DENIED_ERROR,
        f"{command} command denied to user {account} for table '{target[1]}'",
    )


def _lock(expression: exp.Command, served: Resolver, account: str) -> MysqlError | None:
    """1142 for LOCK TABLES of a served table."""
    rest = expression.expression
    text = f"{expression.this} {rest.this if isinstance(rest, exp.Expression) else ''}"
    for table in _locked_tables(text):
        target = served(table)
        if target is not None:
            return _error(
                ER_TABLEACCESS_DENIED_ERROR,
                f"SELECT, LOCK TABLES command denied to user {account} for table '{target[1]}'",
            )
    return None


def is_unlock_tables(expression: exp.Expression) -> bool:
    """Whether ``expression`` is UNLOCK TABLES: nothing is locked, so it succeeds at once."""
    return isinstance(expression, exp.Command) and bool(
        re.fullmatch(r"UNLOCK\s+TABLES?", str(expression.this).strip(), re.IGNORECASE)
    )


#: A write sqlglot could not parse (an older sqlglot and MySQL's ``INSERT ... SET``): its command
#: and the table it names.
_UNPARSED = re.compile(
    r"^\s*(?:(?P<insert>INSERT)\s+(?:(?:LOW_PRIORITY|DELAYED|HIGH_PRIORITY|IGNORE)\s+)*(?:INTO\s+)?"
    r"|(?P<update>UPDATE)\s+(?:(?:LOW_PRIORITY|IGNORE)\s+)*"
    r"|(?P<delete>DELETE)\s+(?:(?:LOW_PRIORITY|QUICK|IGNORE)\s+)*FROM\s+)"
    r"(?P<table>(?:`[^`]*`|[\w$]+)(?:\s*\.\s*(?:`[^`]*`|[\w$]+))?)",
    re.IGNORECASE,
)


def unparsed_denial(sql: str, served: Resolver, user: str, host: str) -> MysqlError | None:
    """:func:`denial` for a write whose text did not parse: 1142 when it names a served table."""
    match = _UNPARSED.match(sql)
    if match is None:
        return None
    command = next(name.upper() for name in ("insert", "update", "delete") if match.group(name))
    table = served(_named_table(match.group("table")))
    if table is None:
        return None
    return _error(
        ER_TABLEACCESS_DENIED_ERROR,
        f"{command} command denied to user '{user}'@'{host}' for table '{table[1]}'",
    )
