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

The grstats schema's tables answer the same (DROP INDEX too, as the results' ``DROP INDEX
`PRIMARY` ON ...``).

Every other statement that would change the server gets one answer, MySQL's
ER_OPTION_PREVENTS_STATEMENT 1290 with ``--read-only``'s words (:func:`read_only_error`), as
``err_readonly`` (sql/sql_parse.cc) words it for an account without SUPER or CONNECTION_ADMIN,
which no account of the endpoint has. :data:`SERVER_CHANGES` is the table of those sqlglot
parses as something else (START GROUP_REPLICATION as a transaction, SET GLOBAL as a session's
SET, KILL, Group Replication's administrative functions); writes and DDL elsewhere, and
statements sqlglot cannot parse whose first word writes, get the same 1290 from the session.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from mysql_mimic.errors import ErrorCode, MysqlError
from sqlglot import exp

from grstats.core.mysql_errors import (
    ER_DBACCESS_DENIED_ERROR,
    ER_OPTION_PREVENTS_STATEMENT,
    ER_TABLEACCESS_DENIED_ERROR,
    ER_WRONG_PERFSCHEMA_USAGE,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Container

    #: A served table's canonical (schema, name), or None when the table is not one.
    Resolver = Callable[[exp.Table], tuple[str, str] | None]


_LOCK = re.compile(r"^\s*LOCK\s+TABLES?\s+(?P<tables>.*)$", re.IGNORECASE | re.DOTALL)
_NAME = re.compile(r"\s*((?:`[^`]*`|[\w$]+)(?:\s*\.\s*(?:`[^`]*`|[\w$]+))?)")
_COMMANDS = {exp.Insert: "INSERT", exp.Update: "UPDATE", exp.Delete: "DELETE"}


def _error(code: int, message: str) -> MysqlError:
    return MysqlError(message, code=cast("ErrorCode", code))


def read_only_error() -> MysqlError:
    """1290 as a ``read_only`` server words it to an account without SUPER (``err_readonly``)."""
    return _error(
        ER_OPTION_PREVENTS_STATEMENT,
        "The MySQL server is running with the --read-only option so it cannot execute this "
        "statement",
    )


#: ``START TRANSACTION``'s own modes (sql/sql_yacc.yy, ``opt_start_transaction_option_list``):
#: a START with any other word (GROUP_REPLICATION, REPLICA, SLAVE) starts a server's thread.
_TRANSACTION_MODES = frozenset({"READ ONLY", "READ WRITE", "WITH CONSISTENT SNAPSHOT"})
#: SET scopes that change the server, not the session (``SET GLOBAL``, ``SET PERSIST``, ...).
_SERVER_SCOPES = frozenset({"GLOBAL", "PERSIST", "PERSIST_ONLY"})
#: Group Replication's functions that change the group (plugin/group_replication/src/udf/:
#: udf_registration.cc registers them); its read-only ones are answered (:mod:`.functions`).
GROUP_ACTIONS = frozenset(
    {
        "GROUP_REPLICATION_SET_AS_PRIMARY",
        "GROUP_REPLICATION_SWITCH_TO_SINGLE_PRIMARY_MODE",
        "GROUP_REPLICATION_SWITCH_TO_MULTI_PRIMARY_MODE",
        "GROUP_REPLICATION_SET_WRITE_CONCURRENCY",
        "GROUP_REPLICATION_SET_COMMUNICATION_PROTOCOL",
        "GROUP_REPLICATION_ENABLE_MEMBER_ACTION",
        "GROUP_REPLICATION_DISABLE_MEMBER_ACTION",
        "GROUP_REPLICATION_RESET_MEMBER_ACTIONS",
    }
)


def _starts_thread(expression: exp.Expression) -> bool:
    """START GROUP_REPLICATION, START REPLICA, START SLAVE (sqlglot: a transaction's modes)."""
    return isinstance(expression, exp.Transaction) and any(
        str(mode).upper() not in _TRANSACTION_MODES for mode in expression.args.get("modes") or ()
    )


def _sets_server(expression: exp.Expression) -> bool:
    """SET GLOBAL, SET PERSIST, SET PERSIST_ONLY, SET @@global.x, SET PASSWORD (any item)."""
    if not isinstance(expression, exp.Set):
        return False
    for item in expression.expressions:
        target = item.this.this if isinstance(item.this, exp.Binary) else None
        scope = item.text("kind") or (
            target.text("kind") if isinstance(target, exp.SessionParameter) else ""
        )
        if scope.upper() in _SERVER_SCOPES:
            return True
        if isinstance(target, exp.Column) and target.name.upper() == "PASSWORD":
            return True  # SET PASSWORD: the account's, in the server's grant tables
    return False


def _calls_group_action(expression: exp.Expression) -> bool:
    """A call of one of Group Replication's functions that change the group."""
    return any(call.name.upper() in GROUP_ACTIONS for call in expression.find_all(exp.Anonymous))


#: The statements sqlglot parses as something else that would change the server: each 1290.
#: (KILL is the session's: one of the endpoint's own connections may be killed, as a client's
#: Ctrl-C does; any other id would be the member's, and is refused with 1290 too.)
SERVER_CHANGES: tuple[Callable[[exp.Expression], bool], ...] = (
    _starts_thread,
    _sets_server,
    _calls_group_action,
)


def server_change(expression: exp.Expression) -> MysqlError | None:
    """1290 if ``expression`` would change the server (:data:`SERVER_CHANGES`), else None."""
    if any(rule(expression) for rule in SERVER_CHANGES):
        return read_only_error()
    return None


def kill_denial(expression: exp.Expression, own: Container[int]) -> MysqlError | None:
    """1290 for KILL of a connection that is not one of the endpoint's own ``own``."""
    if not isinstance(expression, exp.Kill):
        return None
    try:
        target = int(expression.this.name)
    except ValueError:
        return None  # mysql-mimic's 1064
    return None if target in own else read_only_error()


def _table_of(node: exp.Expression | None) -> exp.Table | None:
    """The table a statement's ``this`` names (through a column list or an index)."""
    while node is not None and not isinstance(node, exp.Table):
        node = node.args.get("table") if isinstance(node, exp.Index) else node.args.get("this")
        if not isinstance(node, exp.Expression):
            return None
    return node


def _target_of(expression: exp.Expression) -> exp.Expression | None:
    """The table a DDL statement changes: ``DROP INDEX i ON t`` names it in its ON clause."""
    if isinstance(expression, exp.Drop) and str(expression.args.get("kind")).upper() == "INDEX":
        on = expression.args.get("cluster")
        if isinstance(on, exp.OnProperty):
            table: exp.Expression | None = on.this
            return table
    target: exp.Expression | None = expression.this
    return target


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
        table = _table_of(_target_of(expression))
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


#: First words of MySQL statements that write or administer: refused with 1290 even when
#: sqlglot cannot parse them (LOAD DATA, HANDLER, ...), as MySQL would.
_WRITES = frozenset(
    {
        "ALTER",
        "ANALYZE",
        "CALL",
        "CHANGE",
        "CHECKSUM",
        "CLONE",
        "CREATE",
        "DELETE",
        "DROP",
        "FLUSH",
        "GRANT",
        "HANDLER",
        "IMPORT",
        "INSERT",
        "INSTALL",
        "LOAD",
        "LOCK",
        "OPTIMIZE",
        "PURGE",
        "RENAME",
        "REPAIR",
        "REPLACE",
        "RESET",
        "RESTART",
        "REVOKE",
        "SHUTDOWN",
        "START",
        "STOP",
        "TRUNCATE",
        "UNINSTALL",
        "UNLOCK",
        "UPDATE",
        "XA",
    }
)
_FIRST_WORD = re.compile(r"\s*\(*\s*([A-Za-z]+)")


def writes(sql: str) -> bool:
    """Whether ``sql``'s first word writes or administers (the session refuses it unparsed)."""
    word = _FIRST_WORD.match(sql)
    return word is not None and word.group(1).upper() in _WRITES


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
