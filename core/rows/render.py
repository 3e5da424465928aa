"""Render rows the way the ``mysql`` client prints them (boxed table, ``\\G``) or as JSON.

Rules of the ``mysql`` client followed here: numeric columns are right-aligned and text is
left-aligned (headers always left); NULL prints as ``NULL``; values are printed as they are, so
TRANSACTIONS_COMMITTED_ALL_MEMBERS's ``",\\n"`` breaks the line in both layouts, as it does in
``mysql``; the vertical layout right-aligns the column names; the footer is ``N rows in set``,
``1 row in set`` or ``Empty set``, with the elapsed time when it is known.

JSON is a list of objects keyed by the exact column names, in column order: integers are
numbers, NULL is ``null``, TIMESTAMP(6) columns are ISO 8601 in UTC with ``Z`` and 6 decimals
(``2026-11-24T10:15:02.123456Z``), and the zero TIMESTAMP (unset) is ``null``.

The ``mysql`` client's layouts show TIMESTAMP(6) columns as MySQL does in a session's
``time_zone``: in the ``zone`` given (:mod:`grstats.core.rows.zone`), UTC by default.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from grstats.core.rows.domains import timestamp_iso, timestamp_text
from grstats.core.rows.schema import Kind
from grstats.core.rows.zone import UTC_ZONE

if TYPE_CHECKING:
    from collections.abc import Sequence

    from grstats.core.rows.row import Value
    from grstats.core.rows.schema import Column
    from grstats.core.rows.zone import TimeZone

#: The output formats, as the CLI names them.
FORMATS = ("table", "vertical", "json")


def cell_text(column: Column, value: Value, zone: TimeZone = UTC_ZONE) -> str:
    """Return one cell as the ``mysql`` client prints it, a TIMESTAMP(6) in ``zone``."""
    if value is None:
        return "NULL"
    if column.kind is Kind.TIMESTAMP:
        return timestamp_text(int(value), zone)
    if column.kind is Kind.DECIMAL:
        return f"{float(value):.6f}"
    return str(value)


def footer(count: int, elapsed_s: float | None = None) -> str:
    """Return ``N rows in set (0.00 sec)`` as the ``mysql`` client words it."""
    words = "Empty set" if count == 0 else "1 row in set" if count == 1 else f"{count} rows in set"
    return words if elapsed_s is None else f"{words} ({elapsed_s:.2f} sec)"


def render_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[Value]],
    elapsed_s: float | None = None,
    zone: TimeZone = UTC_ZONE,
) -> str:
    """Return ``rows`` as the ``mysql`` client's boxed table, followed by the footer."""
    if not rows:
        return footer(0, elapsed_s) + "\n"
    cells = [
        [cell_text(column, value, zone) for column, value in zip(columns, row, strict=True)]
        for row in rows
    ]
    widths = [
        max(len(column.name), *(len(row[i]) for row in cells)) for i, column in enumerate(columns)
    ]
    rule = "+" + "+".join("-" * (width + 2) for width in widths) + "+"
    numeric = [column.kind in (Kind.INTEGER, Kind.DECIMAL) for column in columns]
    lines = [
        rule,
        "| " + " | ".join(c.name.ljust(w) for c, w in zip(columns, widths, strict=True)) + " |",
        rule,
    ]
    for row in cells:
        padded = (
            text.rjust(width) if right else text.ljust(width)
            for text, width, right in zip(row, widths, numeric, strict=True)
        )
        lines.append("| " + " | ".join(padded) + " |")
    lines += [rule, footer(len(rows), elapsed_s)]
    return "\n".join(lines) + "\n"


def render_vertical(
    columns: Sequence[Column],
    rows: Sequence[Sequence[Value]],
    elapsed_s: float | None = None,
    zone: TimeZone = UTC_ZONE,
) -> str:
    """Return ``rows`` as the ``mysql`` client prints them with ``\\G``."""
    width = max((len(column.name) for column in columns), default=0)
    lines = []
    for number, row in enumerate(rows, start=1):
        lines.append(f"{'*' * 27} {number}. row {'*' * 27}")
        lines.extend(
            f"{column.name.rjust(width)}: {cell_text(column, value, zone)}"
            for column, value in zip(columns, row, strict=True)
        )
    lines.append(footer(len(rows), elapsed_s))
    return "\n".join(lines) + "\n"


def json_value(column: Column, value: Value) -> Value:
    """Return one cell for JSON: numbers stay numbers, TIMESTAMP(6) is ISO 8601 UTC or null."""
    if value is not None and column.kind is Kind.TIMESTAMP:
        return timestamp_iso(int(value))
    return value


def json_objects(
    columns: Sequence[Column], rows: Sequence[Sequence[Value]]
) -> list[dict[str, Value]]:
    """Return ``rows`` as objects keyed by the exact column names, values as for JSON."""
    return [
        {column.name: json_value(column, value) for column, value in zip(columns, row, strict=True)}
        for row in rows
    ]


def render_json(columns: Sequence[Column], rows: Sequence[Sequence[Value]]) -> str:
    """Return ``rows`` as a JSON list of objects keyed by the exact column names."""
    return json.dumps(json_objects(columns, rows), indent=2) + "\n"


def render(
    columns: Sequence[Column],
    rows: Sequence[Sequence[Value]],
    output_format: str,
    elapsed_s: float | None = None,
    zone: TimeZone = UTC_ZONE,
) -> str:
    """Return ``rows`` in ``output_format``: ``table``, ``vertical`` or ``json``.

    ``zone`` is the time zone of TIMESTAMP(6) columns in ``table`` and ``vertical``; JSON is UTC.
    """
    if output_format == "table":
        return render_table(columns, rows, elapsed_s, zone)
    if output_format == "vertical":
        return render_vertical(columns, rows, elapsed_s, zone)
    if output_format == "json":
        return render_json(columns, rows)
    raise ValueError(f"format: {output_format!r} is not one of {', '.join(FORMATS)}")
