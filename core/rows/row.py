"""``Row``: the base of the typed rows; checks every value against its column's declared type."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, TypeAlias

from grstats.core.rows.domains import BIGINT_UNSIGNED_MAX, RowValueError
from grstats.core.rows.schema import Kind

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from grstats.core.rows.schema import Column, Table

#: What a cell holds: text, an integer (timestamps as µs), a decimal, or NULL.
Value: TypeAlias = str | int | float | None

_CHAR_RE = re.compile(r"CHAR\((\d+)\)")
_INT_RANGES = {
    "BIGINT UNSIGNED": (0, BIGINT_UNSIGNED_MAX),
    "BIGINT": (-(1 << 63), (1 << 63) - 1),
    "INTEGER": (-(1 << 31), (1 << 31) - 1),
    "TIMESTAMP(6)": (0, 253_402_300_799_999_999),  # up to 9999-12-31 23:59:59.999999
}


def by_name(columns: Sequence[Column], rows: Iterable[Sequence[Value]]) -> list[dict[str, Value]]:
    """A served table's rows, each as its columns' names to values."""
    return [{c.name: value for c, value in zip(columns, row, strict=True)} for row in rows]


@dataclass(frozen=True, slots=True)
class Row:
    """A row of one of the tables in :mod:`grstats.core.rows.schema`; subclasses set ``TABLE``.

    Fields are the lowercase column names in column order. Construction checks each value
    against its column (type, NULL rule, CHAR length, integer range) and raises
    :class:`RowValueError` naming the column; subclasses add their domain rules.
    """

    TABLE: ClassVar[Table]

    def __post_init__(self) -> None:
        for column in self.TABLE.columns:
            _check(column, getattr(self, column.field))

    def values(self) -> tuple[Value, ...]:
        """Return the cells in column order."""
        return tuple(getattr(self, column.field) for column in self.TABLE.columns)

    def as_dict(self) -> dict[str, Value]:
        """Return the cells keyed by their exact column names, in column order."""
        return {column.name: getattr(self, column.field) for column in self.TABLE.columns}


def _check(column: Column, value: object) -> None:
    """Raise RowValueError unless ``value`` fits ``column``."""
    if value is None:
        if not column.nullable:
            raise RowValueError(column.name, value, "allowed: the column is NOT NULL")
        return
    if column.kind is Kind.TEXT:
        if not isinstance(value, str):
            raise RowValueError(column.name, value, "text")
        width = _CHAR_RE.fullmatch(column.sql_type)
        if width is not None and len(value) > int(width.group(1)):
            raise RowValueError(column.name, value, f"at most {width.group(1)} characters")
    elif column.kind is Kind.DECIMAL:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RowValueError(column.name, value, "a number")
    else:
        low, high = _INT_RANGES[column.sql_type]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise RowValueError(column.name, value, f"an integer in {low}..{high}")
