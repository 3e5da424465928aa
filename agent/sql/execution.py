"""One statement run with sqlglot's executor under :mod:`.bounds`, on the endpoint's worker thread.

:class:`~.session.GrstatsSession` hands its work to :func:`off_loop` (the time limit, 3024,
sqlglot's errors as MySQL's) and runs there a query over the served tables
(:func:`run_query`), one of mysql-mimic's information_schema (:func:`run_info_schema`) or a
static one (:func:`run_static`): each is bounded before it is planned and before it runs, and
its result after.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from mysql_mimic.constants import INFO_SCHEMA
from mysql_mimic.errors import MysqlError
from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.executor.python import PythonExecutor
from sqlglot.executor.table import Table as EngineTable
from sqlglot.executor.table import ensure_tables
from sqlglot.optimizer import optimize
from sqlglot.optimizer.merge_subqueries import merge_subqueries
from sqlglot.optimizer.optimizer import RULES
from sqlglot.planner import Plan
from sqlglot.schema import ensure_schema

from grstats.agent.sql import catalog, errors, functions
from grstats.agent.sql.bounds import (
    check_join_size,
    check_plan,
    check_result,
    check_run,
    longest_text,
)
from grstats.agent.sql.value_bounds import engine_env, for_engine
from grstats.core.rows import Kind

if TYPE_CHECKING:
    import concurrent.futures
    from collections.abc import Callable, Mapping

    from mysql_mimic.results import AllowedResult
    from mysql_mimic.schema import InfoSchema

    from grstats.agent.sql.bounds import SqlLimits
    from grstats.core.rows import Column, Value
    from grstats.core.rows.zone import TimeZone

T = TypeVar("T")

#: sqlglot's MySQL with MySQL's case-insensitive column names (the tables are lowercased).
_DIALECT = "mysql, normalization_strategy=case_insensitive"
#: How the executor's schema types each kind of value (TIMESTAMP(6) is held as its text).
_ENGINE_TYPES = {
    Kind.TEXT: "TEXT",
    Kind.INTEGER: "BIGINT",
    Kind.TIMESTAMP: "TEXT",
    Kind.DECIMAL: "DOUBLE",
}


async def off_loop(
    executor: concurrent.futures.Executor,
    work: Callable[[], T],
    seconds: float,
    statement: exp.Expression | None = None,
) -> T:
    """Run ``work`` (``statement``'s) on ``executor`` within ``seconds`` (3024 then).

    ``work`` is bounded before it starts (:mod:`.bounds`): past the time, or cancelled
    (KILL QUERY, the connection closing), a job that has not started never does, and one
    that has runs to its end and its result is dropped. sqlglot's errors become MySQL's;
    a MySQL error ``work`` raises reaches the client, from inside the executor too.
    """
    job = _Job(work)
    loop = asyncio.get_running_loop()
    try:
        return await asyncio.wait_for(loop.run_in_executor(executor, job), seconds)
    except asyncio.CancelledError:  # KILL QUERY, or the connection closing
        job.stop()
        raise
    except TimeoutError:
        job.stop()
        raise errors.timeout_error() from None
    except MysqlError:
        raise
    except OptimizeError as error:
        raise errors.optimizer_error(error) from None
    except Exception as error:  # noqa: BLE001  (sqlglot's executor fails in its own ways)
        raise errors.engine_error(error, statement) from None


class _Interrupted(Exception):
    """Raised by a job stopped before it started: its work never runs."""


class _Job(Generic[T]):
    """``work`` for the worker thread, which :meth:`stop` keeps from starting.

    Nothing interrupts sqlglot's executor once it runs: every statement is bounded before it
    starts instead (:mod:`.bounds`), so a stopped job that has started holds the thread a
    bounded time, and its result is dropped by the session that stopped it.
    """

    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work
        self._stopped = False

    def __call__(self) -> T:
        if self._stopped:
            raise _Interrupted
        return self._work()

    def stop(self) -> None:
        """Stop the work: it will not start (one that has started runs to its end)."""
        self._stopped = True


# -- the worker thread's work ------------------------------------------------------------


#: sqlglot's optimizer rules but merge_subqueries, which copies a derived table's expressions
#: into each reference to them: planning (bounded on the statement as written) would then grow
#: with the copies. The executor runs a derived table as a step of its own instead.
_RULES = tuple(rule for rule in RULES if rule is not merge_subqueries)


def run_static(expression: exp.Expression, limits: SqlLimits) -> AllowedResult:
    """mysql-mimic's static query (``SELECT 1``, ``SELECT DATABASE()``): rows and names."""

    def size_of(_: exp.Table) -> int:
        return 1

    check_join_size(expression, size_of, limits)
    planned = check_plan(expression, limits)
    result = _bounded_execute(expression, _Source({}, {}, None, size_of, 0), planned, limits)
    check_result(result.rows, limits)
    return result.rows, result.columns


def run_info_schema(
    expression: exp.Expression,
    info: InfoSchema,
    size_of: Callable[[exp.Table], int],
    limits: SqlLimits,
) -> AllowedResult:
    """mysql-mimic's ``InfoSchema.query``, bounded: the rows and the names."""
    check_join_size(expression, size_of, limits)
    planned = check_plan(expression, limits)
    longest = max(
        (longest_text(table.rows) for tables in info.tables.values() for table in tables.values()),
        default=0,
    )
    # InfoSchema.query: COLLATE removed (sqlglot's executor has none), then execute().
    source = _Source(INFO_SCHEMA, info.tables, None, size_of, longest)
    result = _bounded_execute(expression.transform(_remove_collate), source, planned, limits)
    check_result(result.rows, limits)
    return result.rows, result.columns


def _remove_collate(node: exp.Expression) -> exp.Expression:
    """``x COLLATE c`` as ``x``: sqlglot's executor has no collations (mysql-mimic's rule)."""
    if isinstance(node, exp.Collate):
        left: exp.Expression = node.this
        return left
    return node


@dataclass(frozen=True, slots=True)
class _Source:
    """What a statement runs over: sqlglot's schema and tables, their sizes, longest text."""

    schema: dict[str, Any]
    tables: dict[str, Any]
    dialect: str | None
    size_of: Callable[[exp.Table], int]
    longest: int


def _bounded_execute(
    expression: exp.Expression, source: _Source, planned: int, limits: SqlLimits
) -> EngineTable:
    """The ``execute()`` of sqlglot, bounded: checked before it runs (:func:`check_run`).

    ``planned`` is what planning costs (:func:`check_plan`). The functions that could build
    a huge value are bounded (:func:`engine_env`).
    """
    engine_tables = ensure_tables(source.tables, dialect=source.dialect)
    optimized = optimize(
        expression,
        ensure_schema(source.schema, dialect=source.dialect),
        leave_tables_isolated=True,
        dialect=source.dialect,
        rules=_RULES,
    )
    check_run(optimized, source.size_of, source.longest, planned, limits)
    plan = Plan(functions.for_executor(for_engine(optimized)))
    env = {**engine_env(limits), **functions.ENGINE_FUNCTIONS}
    executor = PythonExecutor(env=env, tables=engine_tables)  # type: ignore[no-untyped-call]
    result: EngineTable = executor.execute(plan)  # type: ignore[no-untyped-call]
    return result


def run_query(
    expression: exp.Expression,
    snapshot: Mapping[tuple[str, str], tuple[tuple[Column, ...], list[tuple[Value, ...]]]],
    zone: TimeZone,
    limits: SqlLimits,
) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """Run ``expression`` over ``snapshot`` with sqlglot's executor: the names and the rows.

    TIMESTAMP(6) values are MySQL's text in ``zone``, as the session compares them. The
    statement is bounded by ``limits`` before it runs (its join size, its cost: :mod:`.bounds`)
    and after (its rows and bytes).
    """

    def size_of(table: exp.Table) -> int:
        return len(snapshot.get((table.db, table.name), ((), []))[1])

    check_join_size(expression, size_of, limits)
    planned = check_plan(expression, limits)
    schema: dict[str, Any] = {}  # {db: {table: {column: type}}}
    tables: dict[str, dict[str, EngineTable]] = {}
    longest = 0
    for (db, name), (columns, values) in snapshot.items():
        names = tuple(column.name.lower() for column in columns)
        schema.setdefault(db, {})[name] = {
            column.name.lower(): _ENGINE_TYPES[column.kind] for column in columns
        }
        rows = values
        if any(column.kind is Kind.TIMESTAMP for column in columns):
            rows = [
                tuple(catalog.engine_value(c, v, zone) for c, v in zip(columns, row, strict=True))
                for row in values
            ]
        tables.setdefault(db, {})[name] = EngineTable(names, rows)
        longest = max(longest, longest_text(rows))
    # COLLATE as in information_schema queries (the executor has no collations).
    source = _Source(schema, tables, _DIALECT, size_of, longest)
    result = _bounded_execute(expression.transform(_remove_collate), source, planned, limits)
    rows = list(result.rows)
    check_result(rows, limits)
    return tuple(result.columns), rows
