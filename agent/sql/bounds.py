"""What one SQL statement may cost: its join size before it runs, its result's rows and bytes.

The endpoint's sessions (:mod:`.session`) call these on the worker thread, around sqlglot's
work, so that no statement can take more memory or time than ``[limits]`` allow:

* :func:`check_join_size`: MySQL's ``max_join_size``. A SELECT whose tables' sizes multiply
  to more row combinations than ``limits.sql_max_join_size`` is refused with MySQL's 1104
  before it runs (sqlglot's executor builds every combination in memory);
* :func:`check_result`: a result of more than ``limits.sql_max_rows`` rows, or whose values
  take more than ``limits.sql_max_result_bytes`` as text, is refused with 1104 (mysql-mimic
  buffers a whole result before it sends it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, cast

from mysql_mimic.errors import ErrorCode, MysqlError
from sqlglot import exp

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

#: MySQL's ER_TOO_BIG_SELECT (include/mysqld_error.h), SQLSTATE 42000.
ER_TOO_BIG_SELECT = 1104
#: A count longer than this many digits is shown as a power of ten.
_DIGITS_SHOWN = 15


class SqlLimits(Protocol):
    """The ``[limits]`` a session obeys (:class:`grstats.agent.limits.LimitsConfig` has them)."""

    @property
    def sql_query_timeout_s(self) -> float:
        """How long one statement may run, in seconds (then 3024)."""
        ...

    @property
    def sql_max_rows(self) -> int:
        """The most rows one result may have (then 1104)."""
        ...

    @property
    def sql_max_join_size(self) -> int:
        """The most row combinations one statement may examine (then 1104, before it runs)."""
        ...

    @property
    def sql_max_result_bytes(self) -> int:
        """The most bytes one result's values may take (then 1104)."""
        ...


def too_big(message: str) -> MysqlError:
    """MySQL's 1104 ER_TOO_BIG_SELECT with ``message``."""
    return MysqlError(message, code=cast("ErrorCode", ER_TOO_BIG_SELECT))


def check_rows(count: int, limits: SqlLimits) -> None:
    """1104 when a result has more rows than ``limits.sql_max_rows``."""
    limit = limits.sql_max_rows
    if count > limit:
        raise too_big(
            f"The SELECT would return {count} rows, more than limits.sql_max_rows = "
            f"{limit}; narrow it with WHERE or LIMIT"
        )


def _cell_bytes(value: object) -> int:
    """About what ``value`` takes in a text result row: its text and its length byte."""
    if value is None:
        return 1
    if isinstance(value, str | bytes):
        return len(value) + 1
    return len(str(value)) + 1


def check_result(rows: Sequence[Sequence[object]], limits: SqlLimits) -> None:
    """1104 when ``rows`` are too many or their text too long (``sql_max_result_bytes``).

    Each row counts its packet's 4-byte header, each value its text and its length byte.
    """
    check_rows(len(rows), limits)
    limit = limits.sql_max_result_bytes
    total = 0
    for row in rows:
        total += 4 + sum(_cell_bytes(value) for value in row)
        if total > limit:
            raise too_big(
                f"The SELECT's result would take more than limits.sql_max_result_bytes = "
                f"{limit} bytes; narrow it with WHERE or LIMIT, or select fewer columns"
            )


class _Estimate:
    """The row combinations of a statement's SELECTs (see :func:`examined_rows`)."""

    def __init__(self, expression: exp.Expression, size_of: Callable[[exp.Table], int]) -> None:
        self._size_of = size_of
        self._ctes = {cte.alias_or_name.lower(): cte.this for cte in expression.find_all(exp.CTE)}
        self._open: set[int] = set()  # the queries being estimated (a recursive CTE)

    def rows_of(self, query: exp.Expression) -> int:
        """The rows ``query`` (a SELECT, a set operation, a subquery) may give, at most."""
        if id(query) in self._open:  # a recursive CTE: counted where it is defined
            return 1
        self._open.add(id(query))
        try:
            if isinstance(query, exp.Select):
                return self.combinations(query)
            if isinstance(query, exp.SetOperation):
                return self.rows_of(query.this) + self.rows_of(query.expression)
            if isinstance(query, exp.Subquery):
                return self.rows_of(query.this)
            return 1
        finally:
            self._open.discard(id(query))

    def combinations(self, select: exp.Select) -> int:
        """The product of the sizes of ``select``'s FROM and JOIN sources."""
        source = select.args.get("from_")
        items = [source.this] if source is not None else []
        items += [join.this for join in select.args.get("joins") or ()]
        count = 1
        for item in items:
            if isinstance(item, exp.Table):
                cte = None if item.db else self._ctes.get(item.name.lower())
                count *= self.rows_of(cte) if cte is not None else max(self._size_of(item), 1)
            elif isinstance(item, exp.Subquery):
                count *= self.rows_of(item.this)
        return count

    def runs(self, select: exp.Select) -> int:
        """The combinations ``select`` examines in all: its own, times those it runs for.

        A subquery in a SELECT's expressions runs once per combination of that SELECT; a
        derived table or a CTE (under FROM, JOIN or WITH) runs once.
        """
        total, node, once = self.combinations(select), select.parent, False
        while node is not None:
            if isinstance(node, exp.From | exp.Join | exp.With):
                once = True
            elif isinstance(node, exp.Select):
                if not once:
                    total *= self.combinations(node)
                once = False
            node = node.parent
        return total


def examined_rows(expression: exp.Expression, size_of: Callable[[exp.Table], int]) -> int:
    """The row combinations ``expression`` may examine, told before it runs.

    MySQL refuses a statement whose estimate passes ``max_join_size`` (``JOIN::optimize``,
    sql/sql_optimizer.cc, error ER_TOO_BIG_SELECT). With no index to narrow it, a SELECT's
    estimate is the product of the sizes of its FROM and JOIN sources (``size_of`` a table,
    the estimate of a derived table or of a CTE), times the combinations of the SELECTs it
    is a subquery of; the statement's is the sum over its SELECTs.
    """
    estimate = _Estimate(expression, size_of)
    return sum(estimate.runs(select) for select in expression.find_all(exp.Select))


def check_join_size(
    expression: exp.Expression, size_of: Callable[[exp.Table], int], limits: SqlLimits
) -> None:
    """1104, in MySQL's words, when ``expression`` may examine more than ``sql_max_join_size``."""
    examined = examined_rows(expression, size_of)
    limit = limits.sql_max_join_size
    if examined > limit:
        text = str(examined)
        if len(text) > _DIGITS_SHOWN:
            text = f"about 10^{len(text) - 1}"
        raise too_big(
            "The SELECT would examine more than MAX_JOIN_SIZE rows; check your WHERE "
            f"(it may examine {text} row combinations, more than "
            f"limits.sql_max_join_size = {limit})"
        )
