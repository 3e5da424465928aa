"""The executor's functions that could build a huge value, each bounded before it builds it.

Step 4 of :mod:`.bounds`' rule, while a statement runs: :mod:`.execution` gives
:func:`engine_env` to sqlglot's ``PythonExecutor``. A string longer than
``sql_max_allowed_packet`` is NULL, as MySQL's REPEAT, LPAD, RPAD, SPACE and CONCAT return NULL
with warning 1301 (``Item_func_concat::val_str``, ``Item_func_repeat::val_str`` and
``Item_str_func::push_packet_overflow_warning``, sql/item_strfunc.cc; mysql-mimic sends no
warnings); a number past DECIMAL's 65 digits, or a DOUBLE past its range, is 1690
(``Item_func::raise_decimal_overflow`` and ``check_float_overflow``, sql/item_func.h, which
``Item_func_pow::val_real`` calls); ``<<`` is on 64 bits, 0 past them
(``Item_func_shift_left::val_int``, sql/item_func.cc); LIKE matches without backtracking
(:func:`like`).
"""

from __future__ import annotations

import functools
import math
import re
from typing import TYPE_CHECKING, Any

from sqlglot import exp
from sqlglot.executor.env import ENV

from grstats.agent.sql.errors import sql_error
from grstats.core.mysql_errors import ER_DATA_OUT_OF_RANGE, ER_NOT_SUPPORTED_YET

if TYPE_CHECKING:
    from collections.abc import Callable

    from mysql_mimic.errors import MysqlError

    from grstats.agent.sql.bounds import SqlLimits

#: DECIMAL's most digits (MySQL's DECIMAL_MAX_PRECISION): a larger number is out of range.
DECIMAL_DIGITS = 65
_DECIMAL_LIMIT = 10**DECIMAL_DIGITS
_DECIMAL_BITS = _DECIMAL_LIMIT.bit_length()
#: MySQL's BIGINT UNSIGNED, which its shifts work on.
_UINT64 = 2**64 - 1


def for_engine(expression: exp.Expr) -> exp.Expr:
    """``expression`` with LPAD and RPAD apart for :func:`engine_env` (sqlglot's PAD has one)."""

    def named(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Pad):
            name = "LPAD" if node.args.get("is_left") else "RPAD"
            arguments = [node.this, node.expression, node.args.get("fill_pattern")]
            return exp.Anonymous(this=name, expressions=[a for a in arguments if a is not None])
        return node

    return expression.transform(named)


# -- the values, while it runs -------------------------------------------------------------


def like(subject: str, pattern: str, flags: int = 0) -> bool:
    """``subject LIKE pattern`` as sqlglot's executor matches it, without backtracking.

    ``%`` is any text and ``_`` any one character (no escape). Split at ``%``, the first and
    the last segments match in place and each other one at its first place after the one
    before (the leftmost is the best a later one can have): one search per segment, where a
    regular expression of ``.*`` would backtrack into every earlier one.
    """
    segments = _segments(pattern, flags)
    if len(segments) == 1:
        return segments[0][0].fullmatch(subject) is not None
    (first, _), *middle, (last, last_length) = segments
    head = first.match(subject)
    end = len(subject) - last_length
    if head is None or end < head.end() or last.fullmatch(subject, end) is None:
        return False
    start = head.end()
    for regex, length in middle:
        if length:
            found = regex.search(subject, start, end)
            if found is None:
                return False
            start = found.end()
    return True


@functools.lru_cache(maxsize=256)
def _segments(pattern: str, flags: int) -> list[tuple[re.Pattern[str], int]]:
    """``pattern``'s segments between ``%`` as regular expressions, and their lengths."""
    compiled = []
    for segment in pattern.split("%"):
        parts = re.split(r"(_+)", segment)
        text = "".join(_any(len(p)) if p.startswith("_") else re.escape(p) for p in parts)
        compiled.append((re.compile(text, re.DOTALL | flags), len(segment)))
    return compiled


def _any(count: int) -> str:
    """``count`` characters: a run of dots, or one repeat when long (its step is slower)."""
    return "." * count if count < 16 else f".{{{count}}}"


def _out_of_range(kind: str, text: str) -> MysqlError:
    return sql_error(ER_DATA_OUT_OF_RANGE, f"{kind} value is out of range in '{text}'"[:512])


def engine_env(limits: SqlLimits) -> dict[str, Callable[..., Any]]:
    """The executor's functions that could build a huge value, each bounded before it does.

    Given to sqlglot's ``PythonExecutor`` (``env``), over its own (sqlglot/executor/env.py):
    the rule's step 4 (see the module). Within the bounds each gives what sqlglot's gives;
    REPEAT, SPACE, LPAD and RPAD, which sqlglot's has not, are MySQL's.
    """
    bounded = _Bounded(limits.sql_max_allowed_packet)
    return {
        "ADD": bounded.add,
        "MUL": bounded.mul,
        "POW": bounded.power,
        "BITWISELEFTSHIFT": bounded.shift_left,
        "ROUND": bounded.round,
        "MOD": bounded.mod,
        "CONCAT": bounded.concat,
        "SAFECONCAT": bounded.safe_concat,
        "CONCATWS": bounded.concat_ws,
        "ARRAYCONCAT": bounded.array_concat,
        "ARRAYTOSTRING": bounded.array_to_string,
        "REPEAT": bounded.repeat,
        "SPACE": bounded.space,
        "LPAD": functools.partial(bounded.pad, left=True),
        "RPAD": functools.partial(bounded.pad, left=False),
        "LIKE": bounded.like,
        "ILIKE": functools.partial(bounded.like, flags=re.IGNORECASE),
    }


_SEQUENCES = (str, bytes, list)
_ADD = ENV["ADD"]


class _Bounded:
    """The functions of :func:`engine_env`: a string or list past ``packet`` is NULL."""

    def __init__(self, packet: int) -> None:
        self._packet = packet

    def _fits(self, *parts: object) -> bool:
        return sum(len(p) for p in parts if isinstance(p, _SEQUENCES)) <= self._packet

    def add(self, left: Any, right: Any) -> Any:
        """``+``: strings and lists are joined (sqlglot's), NULL past the packet."""
        if isinstance(left, _SEQUENCES) and isinstance(right, _SEQUENCES):
            return _ADD(left, right) if len(left) + len(right) <= self._packet else None
        return _ADD(left, right)

    def mul(self, left: Any, right: Any) -> Any:
        """``*``: 1690 past DECIMAL's digits, told before it multiplies; a string repeated NULL."""
        if isinstance(left, int) and isinstance(right, int):
            if left.bit_length() + right.bit_length() > _DECIMAL_BITS + 1:
                raise _out_of_range("DECIMAL", f"({left} * {right})")
            product = left * right
            if abs(product) >= _DECIMAL_LIMIT:
                raise _out_of_range("DECIMAL", f"({left} * {right})")
            return product
        for sequence, count in ((left, right), (right, left)):
            if isinstance(sequence, _SEQUENCES) and isinstance(count, int):
                return ENV["MUL"](left, right) if len(sequence) * count <= self._packet else None
        return ENV["MUL"](left, right)

    def power(self, base: Any, exponent: Any) -> Any:
        """POW: exact while it fits DECIMAL's digits, else MySQL's DOUBLE (1690 past its range)."""
        if base is None or exponent is None:
            return None
        exact = isinstance(base, int) and isinstance(exponent, int) and exponent >= 0
        if exact and base.bit_length() * exponent <= _DECIMAL_BITS:
            return pow(base, exponent)
        try:
            value = math.pow(float(base), float(exponent))
        except (OverflowError, ValueError):
            value = math.nan
        if not math.isfinite(value):
            raise _out_of_range("DOUBLE", f"pow({base},{exponent})")
        return value

    def shift_left(self, value: Any, count: Any) -> Any:
        """``<<`` on 64 bits, as MySQL's: 0 from a shift of 64."""
        if isinstance(value, int) and isinstance(count, int):
            return ((value & _UINT64) << count) & _UINT64 if 0 <= count < 64 else 0
        return ENV["BITWISELEFTSHIFT"](value, count)

    def round(self, *args: Any) -> Any:
        """ROUND: an integer to more digits than it has is 0, told without a power of ten."""
        value, digits = (*args, None, None)[:2]
        small = isinstance(value, int) and isinstance(digits, int)
        if small and digits < -(value.bit_length() // 3 + 2):  # 10**-digits > 2 * |value|
            return 0
        return ENV["ROUND"](*args)

    def mod(self, left: Any, right: Any) -> Any:
        """``%``: 1235 on a string, which Python's ``%`` would format (to any width)."""
        if isinstance(left, str | bytes):
            raise sql_error(
                ER_NOT_SUPPORTED_YET, "This version of MySQL doesn't yet support '% of a string'"
            )
        return ENV["MOD"](left, right)

    def concat(self, *args: Any) -> Any:
        """CONCAT: NULL past the packet, as MySQL's."""
        return ENV["CONCAT"](*args) if self._fits(*args) else None

    def safe_concat(self, *args: Any) -> Any:
        """SAFECONCAT, sqlglot's (values as text): NULL past the packet."""
        if any(arg is None for arg in args):
            return None
        texts = [str(arg) for arg in args]
        return "".join(texts) if self._fits(*texts) else None

    def concat_ws(self, separator: Any, *args: Any) -> Any:
        """CONCAT_WS: NULL past the packet."""
        if separator is None or any(arg is None for arg in args):
            return None
        fits = self._fits(*args, *[separator] * len(args))
        return ENV["CONCATWS"](separator, *args) if fits else None

    def array_concat(self, *args: Any) -> Any:
        """ARRAY_CONCAT: NULL past the packet's count of values."""
        return ENV["ARRAYCONCAT"](*args) if self._fits(*args) else None

    def array_to_string(self, values: Any, separator: Any, *null: Any) -> Any:
        """ARRAY_TO_STRING: NULL past the packet."""
        if values is None or separator is None:
            return None
        parts = [str(v) for v in values if v is not None] + [separator] * len(values)
        return ENV["ARRAYTOSTRING"](values, separator, *null) if self._fits(*parts) else None

    def repeat(self, text: Any, count: Any) -> Any:
        """MySQL's REPEAT (``Item_func_repeat::val_str``): NULL past the packet."""
        if text is None or count is None:
            return None
        text, count = str(text), int(count)
        if count <= 0:
            return ""
        return text * count if len(text) * count <= self._packet else None

    def space(self, count: Any) -> Any:
        """MySQL's SPACE: NULL past the packet."""
        return self.repeat(" ", count)

    def pad(self, text: Any, length: Any, fill: Any = " ", *, left: bool) -> Any:
        """MySQL's LPAD and RPAD (``Item_func_lpad::val_str``): NULL past the packet."""
        if text is None or length is None or fill is None:
            return None
        text, length, fill = str(text), int(length), str(fill)
        if length < 0:
            return None
        if length <= len(text):
            return text[:length]
        if not fill or length > self._packet:
            return None
        filling = (fill * ((length - len(text)) // len(fill) + 1))[: length - len(text)]
        return filling + text if left else text + filling

    def like(self, subject: Any, pattern: Any, flags: int = 0) -> Any:
        """LIKE (ILIKE with ``re.IGNORECASE``) by :func:`like`, which does not backtrack."""
        if subject is None or pattern is None:
            return None
        if isinstance(subject, str) and isinstance(pattern, str):
            return like(subject, pattern, flags)
        return ENV["ILIKE" if flags else "LIKE"](subject, pattern)
