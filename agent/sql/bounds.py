"""What one SQL statement may cost, told before it runs; what its values and result may take.

The endpoint runs sqlglot's pure-Python executor on one worker thread, which nothing can
interrupt: so every statement it accepts is bounded before it starts, and one that cannot be
is refused. The rule, applied by the sessions (:mod:`.session`) at each step:

1. the text, before it is parsed: its length, or its tokens, bound its parse
   (:func:`check_text`; sqlglot's parser is linear in them): more than
   ``limits.sql_max_cost`` is 1104 (a text past ``limits.sql_max_allowed_packet`` is 1153,
   in the endpoint). A parse out of Python's stack (nesting) is 1064 "memory exhausted", as
   when MySQL's parser runs out of its stack (``my_yyoverflow``, sql/sql_parse.cc);
2. the parsed statement, before it is planned (:func:`check_plan`): SELECTs nested deeper
   than :data:`MAX_SELECT_NESTING` are 1473 (``LEX::create_query_expr_and_block``,
   sql/sql_lex.cc), expressions nested deeper than :data:`MAX_DEPTH` 1436 (as MySQL's
   ``check_stack_overrun``, sql/check_stack.cc, refuses an expression too deep for its
   stack), a REGEXP function or WITH RECURSIVE 1235 (a user's pattern, the rows a recursion
   makes, cannot be bounded; sqlglot's executor runs neither anyway); more row
   combinations than MySQL's ``max_join_size`` (:func:`check_join_size`), or a planning
   cost past ``sql_max_cost``, 1104;
3. the optimized statement, before it runs: the planning cost plus the running cost
   (:func:`run_cost`: each SELECT's row combinations times the expression nodes evaluated
   for each, sorts, LIKE's matching, copies of long strings) more than ``sql_max_cost`` is
   1104;
4. while it runs, each value a function builds is bounded before it is built
   (:func:`engine_env`): a string longer than ``sql_max_allowed_packet`` is NULL, as MySQL's
   REPEAT, LPAD, RPAD, SPACE and CONCAT return NULL with warning 1301
   (``Item_func_concat::val_str``, ``Item_func_repeat::val_str`` and
   ``Item_str_func::push_packet_overflow_warning``, sql/item_strfunc.cc; mysql-mimic sends
   no warnings); a number past DECIMAL's 65 digits, or a DOUBLE past its range, is 1690
   (``Item_func::raise_decimal_overflow`` and ``check_float_overflow``, sql/item_func.h,
   which ``Item_func_pow::val_real`` calls); ``<<`` is on 64 bits, 0 past them
   (``Item_func_shift_left::val_int``, sql/item_func.cc); LIKE matches without
   backtracking (:func:`like`);
5. the result, after it ran: more than ``sql_max_rows`` rows or ``sql_max_result_bytes``
   bytes is 1104 (:func:`check_result`; mysql-mimic buffers a whole result).

Costs are in units of about a microsecond of CPU on the machine the constants were measured
on (sqlglot 30.30, CPython 3.11, a 2-core VM), with a margin: each constant's comment says
what it stands for, and a statement's measured CPU was 0.2 to 0.75 of its estimate. At the
default ``sql_max_cost`` (400,000) the worst statements accepted took 0.15-0.4 s of CPU there
with both cores busy (tests/agent/sql/test_bounds.py), and the slowest text accepted 0.2-0.3 s
to parse. What a client sees past the time (3024) is the session's.
"""

from __future__ import annotations

import functools
import math
import re
from typing import TYPE_CHECKING, Any, Protocol, cast

from mysql_mimic.errors import ErrorCode, MysqlError
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import TokenError
from sqlglot.executor.env import ENV

from grstats.agent.mysql_errors import (
    ER_DATA_OUT_OF_RANGE,
    ER_NOT_SUPPORTED_YET,
    ER_PARSE_ERROR,
    ER_STACK_OVERRUN_NEED_MORE,
    ER_TOO_BIG_SELECT,
    ER_TOO_HIGH_LEVEL_OF_NESTING_FOR_SELECT,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

#: A count longer than this many digits is shown as a power of ten.
_DIGITS_SHOWN = 15

#: Parsing, per character of the text, at worst (sqlglot's tokenizer and parser: 27 us a
#: character for ``((((1))))+...``, 36 with both cores busy; 14 for an IN list of digits) ...
PARSE_COST = 48
#: ... or, past that, the text tokenized first: per character (up to 4.2 us, ``'a',``) and
#: per token (37 us at most, tokenizing included: ``1 BETWEEN 1 AND 1 OR``).
TOKENIZE_COST = 5
TOKEN_COST = 48
#: Planning (sqlglot's optimizer, planner and the executor's compiling), per node of the parsed
#: statement (40-160 us measured, up to 300 with both cores busy: 500 columns) ...
PLAN_NODE_COST = 350
#: ... and per node and SELECT (the optimizer walks each scope: 1,489 scalar subqueries of
#: 16 KiB took 13.8 s, 2 us per node and SELECT; 60 nested derived tables 6 us) ...
PLAN_SCOPE_COST = 8
#: ... and per node and level of the tree's depth (pushing predicates down walks a chain of
#: OR again for each: 90 ``x = 1 OR`` took 0.43 s, 10 us per node and level).
PLAN_DEPTH_COST = 10
#: Running, per row combination a SELECT examines (7-10 us: the join's tuples, the contexts).
ROW_COST = 12
#: ... and per expression node evaluated for each (0.4-1 us: a column, a function call).
NODE_COST = 1
#: ... and per run of a subquery in an expression (its plan's steps and contexts).
SUBQUERY_COST = 100
#: A sort, per row, key and halving of the rows (DESC keys compare in Python).
SORT_COST = 1
#: A string a function builds, per this many bytes it may copy (up to sql_max_allowed_packet).
STRING_BYTES_PER_UNIT = 4096
#: LIKE's matching (:func:`like`), per this many steps of the regular expressions' engine:
#: a segment with ``_`` is searched in time the subject's length times its own (1.4 ns a
#: step at worst, ``x_x_...`` in ``xxx...``).
LIKE_STEPS_PER_UNIT = 400
#: The deepest expression tree planned: sqlglot's optimizer and code generator recurse on it
#: (a chain of 200 ``+`` ran out of Python's stack, 150 did not).
MAX_DEPTH = 100
#: MySQL's MAX_SELECT_NESTING (sql/sql_const.h: ``sizeof(nesting_map) * 8 - 1``).
MAX_SELECT_NESTING = 63
#: DECIMAL's most digits (MySQL's DECIMAL_MAX_PRECISION): a larger number is out of range.
DECIMAL_DIGITS = 65
_DECIMAL_LIMIT = 10**DECIMAL_DIGITS
_DECIMAL_BITS = _DECIMAL_LIMIT.bit_length()
#: MySQL's BIGINT UNSIGNED, which its shifts work on.
_UINT64 = 2**64 - 1
#: Functions whose result is a string as long as the statement makes it, up to the packet:
#: each costs its copying (STRING_BYTES_PER_UNIT). ``+`` and ``*`` build strings from strings
#: too (Python's), a LIKE's subject may then be that long.
_STRING_BUILDERS: tuple[type[exp.Expression], ...] = tuple(
    getattr(exp, name)
    for name in ("Concat", "ConcatWs", "DPipe", "Repeat", "Pad", "Space", "ArrayToString")
    if hasattr(exp, name)
)
_MAY_BUILD = (*_STRING_BUILDERS, exp.ArrayConcat, exp.Add, exp.Mul)
#: sqlglot's REGEXP functions (those this sqlglot has): refused, their patterns unbounded.
_REGEXPS: tuple[type[exp.Expression], ...] = tuple(
    getattr(exp, name)
    for name in (
        "RegexpLike",
        "RegexpILike",
        "RegexpExtract",
        "RegexpExtractAll",
        "RegexpReplace",
        "RegexpSplit",
        "RegexpSubstr",
        "RegexpInstr",
        "RegexpCount",
    )
    if hasattr(exp, name)
)
_QUERIES = (exp.Query, exp.Subquery)


class SqlLimits(Protocol):
    """The ``[limits]`` a session obeys (:class:`grstats.agent.limits.LimitsConfig` has them)."""

    @property
    def sql_query_timeout_s(self) -> float:
        """How long a client waits for one statement, in seconds (then 3024)."""
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

    @property
    def sql_max_allowed_packet(self) -> int:
        """The longest statement text (1153), and the longest string a function builds (NULL)."""
        ...

    @property
    def sql_max_cost(self) -> int:
        """The most one statement may cost, in the units of :mod:`.bounds` (then 1104)."""
        ...

    @property
    def sql_connect_timeout_s(self) -> float:
        """``@@connect_timeout``: the endpoint's wait for each packet of a login, in seconds."""
        ...

    @property
    def sql_wait_timeout_s(self) -> float:
        """``@@wait_timeout``'s default: how long a session may stay idle, in seconds."""
        ...

    @property
    def sql_interactive_timeout_s(self) -> float:
        """``@@interactive_timeout``'s default: an interactive client's wait_timeout."""
        ...


def too_big(message: str) -> MysqlError:
    """MySQL's 1104 ER_TOO_BIG_SELECT with ``message``."""
    return _error(ER_TOO_BIG_SELECT, message)


def _error(code: int, message: str) -> MysqlError:
    return MysqlError(message, code=cast("ErrorCode", code))


def _shown(count: int) -> str:
    """``count`` in a message: its digits, or a power of ten when it has too many."""
    text = str(count)
    return f"about 10^{len(text) - 1}" if len(text) > _DIGITS_SHOWN else text


# -- the text ------------------------------------------------------------------------------


def check_text(sql: str, limits: SqlLimits) -> None:
    """1104, before it is parsed, when parsing ``sql`` would cost more than ``sql_max_cost``.

    Its characters bound the cost (:data:`PARSE_COST`); past the limit, its tokens do, when
    tokenizing it is within it (a long string literal or comment is one token).
    """
    limit = limits.sql_max_cost
    if len(sql) * PARSE_COST <= limit:
        return
    cost = len(sql) * TOKENIZE_COST
    if cost <= limit:
        try:
            tokens = len(Dialect.get_or_raise("mysql").tokenize(sql))
        except TokenError:
            return  # the parser words it (1064)
        cost += tokens * TOKEN_COST
    if cost > limit:
        raise _too_costly(f"parsing its {len(sql)} characters: {_shown(cost)}", limits)


def parser_exhausted(sql: str) -> MysqlError:
    """1064 as MySQL's parser words running out of its stack, for a parse out of Python's."""
    return _error(ER_PARSE_ERROR, f"memory exhausted near '{sql[:80]}' at line 1")


def _too_costly(what: str, limits: SqlLimits) -> MysqlError:
    return too_big(
        f"The statement would cost more than limits.sql_max_cost = {limits.sql_max_cost} "
        f"({what}); simplify it, or narrow it with WHERE"
    )


# -- the statement, before it is planned ---------------------------------------------------


def _shape(expression: exp.Expr) -> tuple[int, int, int, int]:
    """The nodes, the depth, the SELECTs and their deepest nesting of ``expression``."""
    nodes = depth = selects = nesting = 0
    stack: list[tuple[exp.Expr, int, int]] = [(expression, 1, 0)]
    while stack:
        node, level, within = stack.pop()
        nodes += 1
        depth = max(depth, level)
        if isinstance(node, exp.Select):
            selects += 1
            within += 1
            nesting = max(nesting, within)
        stack.extend((child, level + 1, within) for child in node.iter_expressions())
    return nodes, depth, selects, nesting


def _check_depth(depth: int) -> None:
    if depth > MAX_DEPTH:
        raise _error(
            ER_STACK_OVERRUN_NEED_MORE,
            f"Thread stack overrun: the statement's expressions nest {depth} deep, more than "
            f"the {MAX_DEPTH} grstats evaluates; simplify it",
        )


def check_shape(expression: exp.Expr) -> tuple[int, int, int]:
    """Refuse ``expression`` too deep, as MySQL's parser would; else its nodes, depth, SELECTs.

    1473 past :data:`MAX_SELECT_NESTING`, 1436 past :data:`MAX_DEPTH`. The session checks it
    where the text was parsed (the worker thread for a long one), so a statement too deep to
    evaluate never reaches the event loop's middlewares.
    """
    nodes, depth, selects, nesting = _shape(expression)
    if nesting > MAX_SELECT_NESTING:
        message = "Too high level of nesting for select"
        raise _error(ER_TOO_HIGH_LEVEL_OF_NESTING_FOR_SELECT, message)
    _check_depth(depth)
    return nodes, depth, selects


def check_plan(expression: exp.Expr, limits: SqlLimits) -> int:
    """Refuse ``expression`` before it is planned when it cannot be bounded; its planning cost.

    1473 when its SELECTs nest deeper than :data:`MAX_SELECT_NESTING`, 1436 when its
    expressions nest deeper than :data:`MAX_DEPTH`, 1235 for a REGEXP function or a recursive
    CTE, 1104 when planning it costs more than ``sql_max_cost``.
    """
    nodes, depth, selects = check_shape(expression)
    regexp = next(expression.find_all(*_REGEXPS), None) if _REGEXPS else None
    if regexp is not None:
        raise _error(
            ER_NOT_SUPPORTED_YET,
            f"This version of MySQL doesn't yet support '{cast('exp.Func', regexp).sql_name()}' "
            "(grstats cannot bound a regular expression's time)",
        )
    if any(with_.args.get("recursive") for with_ in expression.find_all(exp.With)):
        raise _error(
            ER_NOT_SUPPORTED_YET,
            "This version of MySQL doesn't yet support 'WITH RECURSIVE' "
            "(grstats cannot bound its rows before it runs)",
        )
    cost = nodes * (PLAN_NODE_COST + selects * PLAN_SCOPE_COST + depth * PLAN_DEPTH_COST)
    if cost > limits.sql_max_cost:
        raise _too_costly(
            f"planning its {nodes} nodes in {selects} SELECTs: {_shown(cost)}", limits
        )
    return cost


# -- the statement, before it runs ---------------------------------------------------------


class _Estimate:
    """The row combinations of a statement's SELECTs (see :func:`examined_rows`)."""

    def __init__(self, expression: exp.Expr, size_of: Callable[[exp.Table], int]) -> None:
        self._size_of = size_of
        self._ctes = {cte.alias_or_name.lower(): cte.this for cte in expression.find_all(exp.CTE)}
        self._open: set[int] = set()  # the queries being estimated (a recursive CTE)

    def rows_of(self, query: exp.Expr) -> int:
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
            if isinstance(query, exp.Values):
                return max(len(query.expressions), 1)
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
            elif isinstance(item, exp.Subquery | exp.Values):
                count *= self.rows_of(item)
        return count

    def runs(self, select: exp.Select) -> int:
        """The combinations ``select`` examines in all: its own, times those it runs for.

        A subquery in a SELECT's expressions runs once per combination of that SELECT; a
        derived table or a CTE (under FROM, JOIN or WITH) runs once.
        """
        return self.combinations(select) * self.invocations(select)

    def invocations(self, select: exp.Select) -> int:
        """How many times ``select`` runs: the combinations of the SELECTs it is a subquery of."""
        total, node, once = 1, select.parent, False
        while node is not None:
            if isinstance(node, exp.From | exp.Join | exp.With):
                once = True
            elif isinstance(node, exp.Select):
                if not once:
                    total *= self.combinations(node)
                once = False
            node = node.parent
        return total


def examined_rows(expression: exp.Expr, size_of: Callable[[exp.Table], int]) -> int:
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
    expression: exp.Expr, size_of: Callable[[exp.Table], int], limits: SqlLimits
) -> None:
    """1104, in MySQL's words, when ``expression`` may examine more than ``sql_max_join_size``."""
    examined = examined_rows(expression, size_of)
    limit = limits.sql_max_join_size
    if examined > limit:
        raise too_big(
            "The SELECT would examine more than MAX_JOIN_SIZE rows; check your WHERE "
            f"(it may examine {_shown(examined)} row combinations, more than "
            f"limits.sql_max_join_size = {limit})"
        )


#: The parts of a SELECT evaluated for each row combination (its FROM is not).
_EVALUATED = ("expressions", "where", "group", "having", "qualify", "order")


def _own_nodes(select: exp.Select) -> Iterable[exp.Expr]:
    """The nodes ``select`` evaluates for a row combination: a nested query is one (its run)."""
    roots: list[Any] = [select.args.get(name) for name in _EVALUATED]
    for join in select.args.get("joins") or ():
        roots += [join.args.get("on"), join.args.get("using")]
    for root in roots:
        for tree in root if isinstance(root, list) else [root]:
            if isinstance(tree, exp.Expression):  # exp.Expr is a typing base in sqlglot 30
                for node in tree.walk(prune=lambda node: isinstance(node, _QUERIES)):
                    if not isinstance(node, exp.Identifier):
                        yield node


def _text_bound(expression: exp.Expr, longest: int, packet: int) -> int:
    """The longest text a value of ``expression`` may be: a table's, a literal's, or a built one.

    A string built by a function is at most ``packet`` long (:func:`engine_env`).
    """
    literals = (len(node.name) for node in expression.find_all(exp.Literal) if node.is_string)
    bound = max(longest, max(literals, default=0))
    return max(bound, packet) if next(expression.find_all(*_MAY_BUILD), None) else bound


def _like_cost(like: exp.Like | exp.ILike, text: int) -> int:
    """What one evaluation of ``like`` costs (:func:`like`): its segments' searches.

    ``text`` is the longest its subject may be; a pattern that is no literal, that long too.
    """
    pattern = like.expression
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        return 1 + text * text // LIKE_STEPS_PER_UNIT
    segments = pattern.name.split("%")[1:-1]  # the first and last are matched in place
    steps = len(pattern.name) + sum(
        text * (len(segment) if "_" in segment else 1) for segment in segments if segment
    )
    return 1 + steps // LIKE_STEPS_PER_UNIT


def _node_cost(node: exp.Expr, text: int, packet: int) -> int:
    if isinstance(node, exp.Like | exp.ILike):
        return _like_cost(node, text)
    if isinstance(node, _STRING_BUILDERS):
        return NODE_COST + packet // STRING_BYTES_PER_UNIT
    return NODE_COST


def _sort_cost(rows: int, keys: int) -> int:
    return rows * keys * max(rows.bit_length(), 1) * SORT_COST


def run_cost(
    expression: exp.Expr,
    size_of: Callable[[exp.Table], int],
    longest: int,
    limits: SqlLimits,
) -> int:
    """What running ``expression`` (optimized) costs, told before it runs.

    Each SELECT costs its runs (:meth:`_Estimate.runs`) times :data:`ROW_COST` plus its own
    nodes' (:data:`NODE_COST`; a LIKE its matching, a string builder its copying), plus a
    sort of its runs by its ORDER BY, GROUP BY or DISTINCT keys, plus :data:`SUBQUERY_COST`
    for each time it runs as a subquery; a set operation costs its rows. ``longest`` is the
    longest text of the tables it reads.
    """
    estimate = _Estimate(expression, size_of)
    packet = limits.sql_max_allowed_packet
    text = _text_bound(expression, longest, packet)
    total = 0
    for query in expression.find_all(exp.Select, exp.SetOperation):
        order = query.args.get("order")
        keys = len(order.expressions) if order is not None else 0
        if not isinstance(query, exp.Select):  # a set operation: its rows
            rows = estimate.rows_of(query)
            total += rows * ROW_COST + _sort_cost(rows, keys)
            continue
        runs = estimate.runs(query)
        per_row = ROW_COST + sum(_node_cost(node, text, packet) for node in _own_nodes(query))
        group = query.args.get("group")
        keys += len(group.expressions) if group is not None else 0
        keys += len(query.expressions) if query.args.get("distinct") else 0
        invocations = estimate.invocations(query)
        total += runs * per_row + _sort_cost(runs, keys)
        total += SUBQUERY_COST * invocations if invocations > 1 else 0
    return total


def check_run(
    expression: exp.Expr,
    size_of: Callable[[exp.Table], int],
    longest: int,
    planned: int,
    limits: SqlLimits,
) -> None:
    """1104 when ``planned`` and running ``expression`` (optimized) cost more than the limit.

    1436 when the optimizer nested its expressions deeper than :data:`MAX_DEPTH`.
    """
    _check_depth(_shape(expression)[1])
    running = run_cost(expression, size_of, longest, limits)
    cost = planned + running
    if cost > limits.sql_max_cost:
        raise _too_costly(
            f"{_shown(planned)} to plan, {_shown(running)} to run over "
            f"{_shown(examined_rows(expression, size_of))} row combinations",
            limits,
        )


def longest_text(rows: Iterable[Sequence[object]]) -> int:
    """The longest string among the values of ``rows`` (the texts a LIKE may search)."""
    return max((len(value) for row in rows for value in row if isinstance(value, str)), default=0)


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
    return _error(ER_DATA_OUT_OF_RANGE, f"{kind} value is out of range in '{text}'"[:512])


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
            raise _error(
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


# -- the result, after it ran --------------------------------------------------------------


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
