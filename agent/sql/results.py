"""The result sets a session gives mysql-mimic: the columns' names and MySQL types, and the rows.

:class:`~.session.GrstatsSession` builds with it the fast path's result (``SELECT *`` or
columns of one table, no executor: :func:`plain_projection`, :func:`plain_result`) and the
executor's (:func:`projections`, :func:`executed_result`). A result column that is a table
column (or MIN/MAX of one) has that column's MySQL type (:mod:`.catalog`); other columns are
typed from their values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mysql_mimic.results import ResultColumn, infer_type
from mysql_mimic.types import ColumnType
from sqlglot import exp

from grstats.agent.sql import catalog, metadata, show
from grstats.agent.sql.bounds import check_result, check_rows

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from grstats.agent.sql.bounds import SqlLimits
    from grstats.core.rows import Column, Value
    from grstats.core.rows.zone import TimeZone


def like_rows(
    rows: Sequence[tuple[str, str | None]], statement: exp.Show
) -> list[tuple[str, str | None]]:
    """The rows whose name matches SHOW's LIKE pattern (all without one), case-insensitively."""
    if not statement.args.get("like"):
        return list(rows)
    matches = show.like_matcher(statement.text("like"))
    return [row for row in rows if matches(row[0])]


def plain_result(
    plain: Sequence[tuple[str | None, str | None]],
    columns: tuple[Column, ...],
    rows: list[tuple[Value, ...]],
    zone: TimeZone,
    limits: SqlLimits,
) -> Any:
    """The fast path's result: the table's rows, or some of their columns, as they are.

    TIMESTAMP(6) values are sent in ``zone``; ``limits`` bound the rows and their bytes.
    """
    check_rows(len(rows), limits)
    by_name = {column.name.lower(): index for index, column in enumerate(columns)}
    picked: list[int] = []
    result: list[ResultColumn] = []
    for column_name, output in plain:
        indexes = range(len(columns)) if column_name is None else [by_name[column_name]]
        for index in indexes:
            picked.append(index)
            result.append(catalog.result_column(columns[index], output, zone))
    if picked != list(range(len(columns))):
        rows = [tuple(row[index] for index in picked) for row in rows]
    check_result(rows, limits)
    return rows, result


def executed_result(
    projections: list[tuple[str, Column | None]] | None,
    names: Sequence[str],
    rows: list[tuple[Any, ...]],
    zone: TimeZone,
) -> Any:
    """The executor's result: its rows, the columns named and typed by ``projections``.

    The executor's ``names`` (typed by value) when the projections cannot be told.
    """
    if projections is None or len(projections) != len(names):
        projections = [(name, None) for name in names]
    return rows, [
        _inferred(name, index, rows)
        if column is None
        else catalog.result_column(column, name, zone)
        for index, (name, column) in enumerate(projections)
    ]


def _inferred(name: str, index: int, rows: Sequence[Sequence[Any]]) -> ResultColumn:
    """A result column that is no table column, typed by its first value that is not NULL.

    (mysql-mimic's own inference keys columns by name, and fails on two of the same name.)
    """
    for row in rows:
        if row[index] is not None:
            return ResultColumn(name, infer_type(row[index]))
    return ResultColumn(name, ColumnType.NULL)


# -- the fast path and the result's columns ------------------------------------------------


def plain_projection(
    expression: exp.Expression, sources: Mapping[tuple[str, str], tuple[Column, ...]]
) -> list[tuple[str | None, str | None]] | None:
    """For ``SELECT *`` or columns of one table and no other clause: (column, output name)s.

    The column is None for ``*`` (every column); None when the query needs the executor.
    """
    if not isinstance(expression, exp.Select) or len(sources) != 1:
        return None
    if any(value for key, value in expression.args.items() if key not in {"expressions", "from_"}):
        return None
    source = expression.args.get("from_")
    if source is None or not isinstance(source.this, exp.Table):
        return None
    alias = source.this.alias_or_name.lower()
    (columns,) = sources.values()
    names = {column.name.lower() for column in columns}
    plain: list[tuple[str | None, str | None]] = []
    for projection in expression.expressions:
        inner = projection.this if isinstance(projection, exp.Alias) else projection
        if isinstance(projection, exp.Star):
            plain.append((None, None))
        elif isinstance(inner, exp.Column) and not isinstance(inner.this, exp.Star):
            if inner.name.lower() not in names or inner.table.lower() not in {"", alias}:
                return None  # the executor words the error
            defined = not isinstance(projection, exp.Alias) and next(iter(sources))[0] == (
                catalog.INFORMATION_SCHEMA
            )  # information_schema's columns are named as defined (upper case)
            plain.append((inner.name.lower(), None if defined else projection.alias_or_name))
        else:
            return None
    return plain


def _sources_of(
    select: exp.Select, sources: Mapping[tuple[str, str], tuple[Column, ...]]
) -> list[tuple[str, tuple[Column, ...] | None]]:
    """The FROM and JOIN sources of ``select`` in order: (alias, columns or None if derived)."""
    found: list[tuple[str, tuple[Column, ...] | None]] = []
    source = select.args.get("from_")
    items = [source.this] if source is not None else []
    items += [join.this for join in select.args.get("joins") or ()]
    for item in items:
        if isinstance(item, exp.Table) and (item.db, item.name) in sources:
            found.append((item.alias_or_name.lower(), sources[item.db, item.name]))
        else:
            found.append((item.alias_or_name.lower(), None))
    return found


def _column_of(
    column: exp.Column, found: Sequence[tuple[str, tuple[Column, ...] | None]]
) -> Column | None:
    """The table column ``column`` names, when it is one of a served table's."""
    qualifier, name = column.table.lower(), column.name.lower()
    for alias, columns in found:
        if qualifier and alias != qualifier:
            continue
        if columns is None:
            return None
        for candidate in columns:
            if candidate.name.lower() == name:
                return candidate
    return None


def projections(
    expression: exp.Expression, sources: Mapping[tuple[str, str], tuple[Column, ...]]
) -> list[tuple[str, Column | None]] | None:
    """Each result column's name (as MySQL gives it) and table column (None: typed by value).

    None when the names cannot be told (``*`` over a derived table); a set operation's names
    are its first SELECT's, its types come from the values.
    """
    select = expression
    while not isinstance(select, exp.Select):
        if not isinstance(select, exp.SetOperation | exp.Subquery):
            return None
        select = select.this
    typed = select is expression
    found = _sources_of(select, sources)
    result: list[tuple[str, Column | None]] = []
    for projection in select.expressions:
        inner = projection.this if isinstance(projection, exp.Alias) else projection
        star = isinstance(inner, exp.Star) or (
            isinstance(inner, exp.Column) and isinstance(inner.this, exp.Star)
        )
        if star:
            qualifier = inner.table.lower() if isinstance(inner, exp.Column) else ""
            for alias, columns in found:
                if qualifier and alias != qualifier:
                    continue
                if columns is None:
                    return None
                result += [(c.name, c if typed else None) for c in columns]
            continue
        target = inner.this if isinstance(inner, exp.Min | exp.Max) else inner
        column = _column_of(target, found) if isinstance(target, exp.Column) else None
        if isinstance(projection, exp.Alias):
            name = projection.alias
        elif isinstance(projection, exp.Column):
            # information_schema's columns are named as defined (MySQL 8's upper case)
            defined = column is not None and column in metadata.info_columns()
            name = column.name if column is not None and defined else projection.name
        else:
            name = projection.sql(dialect="mysql")
        result.append((name, column if typed else None))
    return result
