"""Functions as the member's MySQL answers them where sqlglot's executor has none of its own.

* ``TIMESTAMPDIFF(unit, a, b)``, common in lag queries: ``b - a`` in whole ``unit`` s, truncated
  toward zero, months by the calendar, NULL for a NULL or a value that is no date, as
  ``Item_func_timestamp_diff::val_int`` (sql/item_timefunc.cc) computes it
  (:func:`timestamp_diff`);
* Group Replication's functions that read: ``group_replication_get_write_concurrency()`` and
  ``group_replication_get_communication_protocol()``, from the member's
  ``replication_group_communication_information`` as the agent last read it; without one, the
  member is in no group, and the function is MySQL's 1123 ``Can't initialize function ...;
  Member must be ONLINE and in the majority partition.`` (udf_write_concurrency.cc,
  udf_communication_protocol.cc; the words are udf_utils.h's ``member_offline_or_minority_str``).
  Those that change the group are refused with 1290 (:data:`.denied.GROUP_ACTIONS`);
* the GTID functions a DBA compares sets with: ``GTID_SUBSET(a, b)`` (1 when every GTID of
  ``a`` is in ``b``, else 0) and ``GTID_SUBTRACT(a, b)`` (the GTIDs of ``a`` not in ``b``, in
  ``Gtid_set::to_string``'s text), NULL for a NULL argument, and MySQL's 1772 ``Malformed GTID
  set specification '...'.`` for a text that is no GTID set (``Item_func_gtid_subset::val_int``
  and ``Item_func_gtid_subtract::val_str_ascii``, sql/item_strfunc.cc and item_func.cc; the
  set read by ``Gtid_set::add_gtid_text``, as :mod:`grstats.core.gtid` reads it);
* any other function neither MySQL's parser nor sqlglot's executor knows is looked up as
  MySQL looks up a name that is no native function and no UDF: as a stored function of the
  database it names, else of the session's (``PTI_function_call_generic_ident_sys::itemize``,
  sql/parse_tree_items.cc, through ``Create_sp_func``, sql/item_create.cc), which does not
  exist: 1305 ``FUNCTION db.name does not exist`` (ER_SP_DOES_NOT_EXIST); with no database
  at all, 1046 ``No database selected`` (``Create_sp_func``'s ``copy_db_to``). A MySQL
  function sqlglot knows but its executor does not is 1235 ``This version of MySQL doesn't
  yet support 'NAME'``.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from mysql_mimic.errors import ErrorCode, MysqlError
from sqlglot import exp
from sqlglot.executor.env import ENV

from grstats.core.gtid import GtidError, GtidSet
from grstats.core.mysql_errors import (
    ER_CANT_INITIALIZE_UDF,
    ER_MALFORMED_GTID_SET_SPECIFICATION,
    ER_NO_DB_ERROR,
    ER_NOT_SUPPORTED_YET,
    ER_SP_DOES_NOT_EXIST,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Container, Iterable

    from grstats.core.model import CommunicationInfo


TIMESTAMPDIFF = "TIMESTAMPDIFF"
#: udf_utils.h, ``member_offline_or_minority_str``
MEMBER_NOT_ONLINE = "Member must be ONLINE and in the majority partition."
#: Seconds in each unit TIMESTAMPDIFF counts by the clock (``Item_func_timestamp_diff``).
_UNIT_SECONDS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400, "WEEK": 7 * 86400}
#: Months in each unit TIMESTAMPDIFF counts by the calendar.
_UNIT_MONTHS = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}
_NOT_DEFINED = re.compile(r"name '([^']+)' is not defined")


def _moment(value: object) -> datetime | None:
    """A DATE, DATETIME or TIMESTAMP value (text, as the executor holds them), else None."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.strip())
    except ValueError:
        return None


def _whole_months(begin: datetime, end: datetime) -> int:
    """Whole months from ``begin`` to ``end`` (``end`` later), as MySQL counts them."""
    months = (end.year - begin.year) * 12 + end.month - begin.month
    rest_begin = (begin.day, begin.time())
    rest_end = (end.day, end.time())
    return months - 1 if rest_end < rest_begin else months


def timestamp_diff(unit: str, first: object, second: object) -> int | None:
    """``TIMESTAMPDIFF(unit, first, second)``: ``second - first`` in whole ``unit`` s.

    As ``Item_func_timestamp_diff::val_int`` (sql/item_timefunc.cc): truncated toward zero;
    MONTH, QUARTER and YEAR count calendar months (a month is whole when the later value's
    day and time of day reach the earlier one's); NULL if either value is NULL or no date.
    """
    begin, end = _moment(first), _moment(second)
    if begin is None or end is None:
        return None
    if (begin.tzinfo is None) != (end.tzinfo is None):
        begin, end = begin.replace(tzinfo=None), end.replace(tzinfo=None)
    sign = 1
    if end < begin:
        begin, end, sign = end, begin, -1
    unit = unit.upper()
    if unit in _UNIT_MONTHS:
        return sign * (_whole_months(begin, end) // _UNIT_MONTHS[unit])
    delta = end - begin
    microseconds = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    if unit == "MICROSECOND":
        return sign * microseconds
    return sign * (microseconds // (_UNIT_SECONDS[unit] * 1_000_000))


def _gtid_set(value: object) -> GtidSet:
    """``value`` read as a GTID set, or MySQL's 1772 naming its first 200 characters."""
    text = value if isinstance(value, str) else str(value)
    try:
        return GtidSet.parse(text)
    except GtidError:
        # share/messages_to_clients.txt: ER_MALFORMED_GTID_SET_SPECIFICATION, '%.200s'
        raise MysqlError(
            f"Malformed GTID set specification '{text[:200]}'.",
            code=cast("ErrorCode", ER_MALFORMED_GTID_SET_SPECIFICATION),
        ) from None


def gtid_subset(first: object, second: object) -> int | None:
    """``GTID_SUBSET(first, second)``: 1 if every GTID of ``first`` is in ``second``, else 0."""
    if first is None or second is None:
        return None
    return 1 if _gtid_set(first).issubset(_gtid_set(second)) else 0


def gtid_subtract(first: object, second: object) -> str | None:
    """``GTID_SUBTRACT(first, second)``: the GTIDs of ``first`` not in ``second``, as text."""
    if first is None or second is None:
        return None
    return str(_gtid_set(first) - _gtid_set(second))


#: The executor's functions this module adds (given with :func:`.value_bounds.engine_env`'s).
ENGINE_FUNCTIONS: dict[str, Callable[..., Any]] = {
    TIMESTAMPDIFF: timestamp_diff,
    "GTID_SUBSET": gtid_subset,
    "GTID_SUBTRACT": gtid_subtract,
}


def for_executor(expression: exp.Expr) -> exp.Expr:
    """``expression`` as sqlglot's executor runs it with MySQL's meaning.

    TIMESTAMPDIFF becomes a call the executor makes, (unit, first, second): sqlglot keeps it
    as ``TimestampDiff(this=second, expression=first, unit=...)``, which its executor has no
    function for. TRUE and FALSE (a boolean ``@@variable`` too) are MySQL's 1 and 0
    (sql/item_cmpfunc.h: ``Item_func_true`` gives 1 as an integer and ``'1'`` as text), so
    that ``CONCAT(@@read_only, ...)`` is ``'0...'`` as on MySQL, not Python's ``'False...'``;
    ``x IS TRUE`` keeps its keyword.
    """

    def rewrite(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Boolean) and not isinstance(node.parent, exp.Is):
            return exp.Literal.number(1 if node.this else 0)
        if isinstance(node, exp.TimestampDiff):
            unit = node.text("unit").upper() or "DAY"
            return exp.Anonymous(
                this=TIMESTAMPDIFF,
                expressions=[exp.Literal.string(unit), node.expression, node.this],
            )
        return node

    return expression.transform(rewrite, copy=False)


def _udf_error(name: str) -> MysqlError:
    """1123, as MySQL answers a UDF whose ``init`` refused (sql/item_func.cc, udf_handler)."""
    return MysqlError(
        f"Can't initialize function '{name}'; {MEMBER_NOT_ONLINE}",
        code=cast("ErrorCode", ER_CANT_INITIALIZE_UDF),
    )


def member_functions(info: CommunicationInfo | None) -> dict[str, Callable[[], object]]:
    """Group Replication's reading functions, answered from the member's communication row.

    For mysql-mimic's function replacement (its ``mysql_function_mapping``): each is called,
    on the event loop, when a statement names it.
    """

    def write_concurrency() -> object:
        if info is None:
            raise _udf_error("group_replication_get_write_concurrency")
        return info.write_concurrency

    def communication_protocol() -> object:
        if info is None:
            raise _udf_error("group_replication_get_communication_protocol")
        return info.protocol_version

    return {
        "GROUP_REPLICATION_GET_WRITE_CONCURRENCY": write_concurrency,
        "GROUP_REPLICATION_GET_COMMUNICATION_PROTOCOL": communication_protocol,
    }


#: Group Replication's reading functions, which take no argument (their UDFs' ``init``).
_NO_ARGUMENTS = frozenset(
    {"GROUP_REPLICATION_GET_WRITE_CONCURRENCY", "GROUP_REPLICATION_GET_COMMUNICATION_PROTOCOL"}
)


def argument_error(expression: exp.Expression) -> MysqlError | None:
    """1123 for a Group Replication reading function given arguments, as its UDF's ``init``."""
    for call in expression.find_all(exp.Anonymous):
        if call.name.upper() in _NO_ARGUMENTS and call.expressions:
            return MysqlError(
                f"Can't initialize function '{call.name}'; UDF does not take arguments.",
                code=cast("ErrorCode", ER_CANT_INITIALIZE_UDF),
            )
    return None


def unknown_function(
    expression: exp.Expression, database: str | None, known: Container[str]
) -> MysqlError | None:
    """1305 (or 1046 without a database) for the first function call no one knows, else None.

    ``known`` are the executor's function names (upper case); a call that is neither one of
    them nor one of sqlglot's own (typed) functions is unknown.
    """
    for call in expression.find_all(exp.Anonymous):
        name = call.name
        if name.upper() in known:
            continue
        parent = call.parent
        qualifier = parent.this.name if isinstance(parent, exp.Dot) else ""
        schema = qualifier or database
        if not schema:
            return MysqlError("No database selected", code=cast("ErrorCode", ER_NO_DB_ERROR))
        return MysqlError(
            f"FUNCTION {schema}.{name} does not exist",
            code=cast("ErrorCode", ER_SP_DOES_NOT_EXIST),
        )
    return None


def executor_names(extra: Iterable[str] = ()) -> frozenset[str]:
    """The function names sqlglot's executor calls: its own, this module's and ``extra``."""
    return frozenset({*ENV, *ENGINE_FUNCTIONS, *extra})


def _mysql_name(name: str, statement: exp.Expression | None) -> str:
    """How MySQL spells the function sqlglot's executor calls ``name`` (its key, upper case).

    ``DATE_FORMAT`` for sqlglot's ``TIMETOSTR``: the first call in ``statement`` of that name,
    written in MySQL's dialect; ``name`` itself when none is found.
    """
    for node in statement.find_all(exp.Func) if statement is not None else ():
        if name in {node.sql_name(), node.key.upper()}:
            return node.sql(dialect="mysql").split("(", 1)[0] or name
    return name


def missing_function(error: BaseException, statement: exp.Expression | None) -> MysqlError | None:
    """1235 for a function sqlglot knows but its executor has not (a NameError inside it)."""
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, NameError):
            found = _NOT_DEFINED.search(str(cause))
            name = _mysql_name(found.group(1), statement) if found is not None else "function"
            return MysqlError(
                f"This version of MySQL doesn't yet support '{name}'",
                code=cast("ErrorCode", ER_NOT_SUPPORTED_YET),
            )
        cause = cause.__cause__
    return None
