"""MySQL's errors as the SQL endpoint sends them, sqlglot's failures among them, in MySQL's words.

:mod:`.session`, :mod:`.execution`, :mod:`.bounds` and :mod:`.value_bounds` build their
errors with :func:`sql_error`; nothing a client is told holds Python's words (1105 ``grstats
cannot run this statement`` where no rule applies, :func:`engine_error`). The numbers are
:mod:`grstats.core.mysql_errors`'.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

import structlog
from mysql_mimic.errors import ErrorCode, MysqlError
from sqlglot.errors import OptimizeError, ParseError, SqlglotError

from grstats.agent.sql import functions
from grstats.core.mysql_errors import ER_BAD_FIELD_ERROR, ER_PARSE_ERROR, ER_QUERY_TIMEOUT

if TYPE_CHECKING:
    from sqlglot import exp

#: What a client is told when sqlglot's executor fails in a way no rule names (no Python text);
#: what failed is logged at debug.
ENGINE_FAILURE = "grstats cannot run this statement"
_UNRESOLVED = re.compile(r"Column '([^']*)' could not be resolved")
_LOG = structlog.get_logger(__name__)


def sql_error(code: int, message: str) -> MysqlError:
    """MySQL's error ``code`` with ``message``, as mysql-mimic sends it to the client."""
    return MysqlError(message, code=cast("ErrorCode", code))


def syntax_error(sql: str, error: SqlglotError) -> MysqlError:
    """1064 in MySQL's words: near the text where the parser stopped, and its line."""
    near, line = sql, 1
    details = error.errors[0] if isinstance(error, ParseError) and error.errors else {}
    if details.get("line"):
        line = int(details["line"])
        column = int(details.get("col") or 0) - len(details.get("highlight") or "")
        lines = sql.splitlines(keepends=True)
        near = sql[sum(len(text) for text in lines[: line - 1]) + max(column, 0) :]
    return sql_error(
        ER_PARSE_ERROR,
        "You have an error in your SQL syntax; check the manual that corresponds to your "
        f"MySQL server version for the right syntax to use near '{near[:80]}' at line {line}",
    )


def timeout_error() -> MysqlError:
    """3024, as MySQL words a statement past ``max_execution_time``."""
    return sql_error(
        ER_QUERY_TIMEOUT,
        "Query execution was interrupted, maximum statement execution time exceeded",
    )


def optimizer_error(error: OptimizeError) -> MysqlError:
    """Sqlglot's optimizer's refusal: a column it cannot resolve is 1054, else 1105 its words."""
    unresolved = _UNRESOLVED.search(str(error))
    if unresolved is None:
        return sql_error(ErrorCode.UNKNOWN_ERROR, str(error))
    return sql_error(ER_BAD_FIELD_ERROR, f"Unknown column '{unresolved.group(1)}' in 'field list'")


def engine_error(error: Exception, statement: exp.Expression | None = None) -> MysqlError:
    """The MySQL error for ``error`` from sqlglot's executor, never with Python's words.

    A MySQL error raised inside it (a bound) is itself; a function it lacks is 1235
    (:func:`.functions.missing_function`); anything else 1105 ``grstats cannot run this
    statement``, as MySQL's ER_UNKNOWN_ERROR is a plain "Unknown error".
    """
    cause = _mysql_cause(error)
    if cause is not None:
        return cause
    missing = functions.missing_function(error, statement)
    if missing is not None:
        return missing
    _LOG.debug("sql_statement_failed", error=f"{type(error).__name__}: {error}"[:512])
    return sql_error(ErrorCode.UNKNOWN_ERROR, ENGINE_FAILURE)


def _mysql_cause(error: BaseException) -> MysqlError | None:
    """The MySQL error a bounded function raised in sqlglot's executor (which wraps it), if any."""
    cause = error.__cause__
    while cause is not None:
        if isinstance(cause, MysqlError):
            return cause
        cause = cause.__cause__
    return None
