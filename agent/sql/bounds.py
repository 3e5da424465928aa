"""What one SQL statement may cost, told before it runs; what its values and result may take.

The endpoint runs sqlglot's pure-Python executor on one worker thread, which nothing can
interrupt: so every statement it accepts is bounded before it starts, and one that cannot be
is refused. The rule, applied by the sessions (:mod:`.session`, :mod:`.execution`) at each step:

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
   (:mod:`.value_bounds`, as MySQL bounds them): a string longer than
   ``sql_max_allowed_packet`` is NULL, a number past DECIMAL's 65 digits or DOUBLE's range
   1690, ``<<`` is on 64 bits; LIKE matches without backtracking;
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

import re
from typing import TYPE_CHECKING, Any, Protocol, cast

from sqlglot import exp

from grstats.agent.sql.errors import sql_error
from grstats.core.mysql_errors import (
    ER_NOT_SUPPORTED_YET,
    ER_PARSE_ERROR,
    ER_STACK_OVERRUN_NEED_MORE,
    ER_TOO_BIG_SELECT,
    ER_TOO_HIGH_LEVEL_OF_NESTING_FOR_SELECT,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from mysql_mimic.errors import MysqlError

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
#: LIKE's matching (:func:`.value_bounds.like`), per this many steps of the regular
#: expressions' engine: a segment with ``_`` is searched in time the subject's length times its
#: own (1.4 ns a step at worst, ``x_x_...`` in ``xxx...``).
LIKE_STEPS_PER_UNIT = 400
#: The deepest expression tree planned: sqlglot's optimizer and code generator recurse on it
#: (a chain of 200 ``+`` ran out of Python's stack, 150 did not).
MAX_DEPTH = 100
#: MySQL's MAX_SELECT_NESTING (sql/sql_const.h: ``sizeof(nesting_map) * 8 - 1``).
MAX_SELECT_NESTING = 63
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
    return sql_error(ER_TOO_BIG_SELECT, message)


def _shown(count: int) -> str:
    """``count`` in a message: its digits, or a power of ten when it has too many."""
    text = str(count)
    return f"about 10^{len(text) - 1}" if len(text) > _DIGITS_SHOWN else text


# -- the text ------------------------------------------------------------------------------


def check_text(sql: str, limits: SqlLimits) -> None:
    """1104, before it is parsed, when parsing ``sql`` would cost more than ``sql_max_cost``.

    Its characters bound the cost (:data:`PARSE_COST`); past the limit, its tokens do, when
    tokenizing it is within it (a long string literal or comment is one token). The tokens
    are counted by :func:`token_count`, by a regular expression: 7 ms for 40,000 tokens where
    sqlglot's tokenizer took 164 ms, holding the interpreter's lock from the event loop.
    """
    limit = limits.sql_max_cost
    if len(sql) * PARSE_COST <= limit:
        return
    cost = len(sql) * TOKENIZE_COST
    if cost <= limit:
        cost += token_count(sql) * TOKEN_COST
    if cost > limit:
        raise _too_costly(f"parsing its {len(sql)} characters: {_shown(cost)}", limits)


#: MySQL's lexical tokens (sql/sql_lex.cc, ``lex_one_token``), as sqlglot's tokenizer splits
#: them: a quoted string or name (an unterminated one runs to the end: the parser words it,
#: 1064), a comment, a number, a word, a variable, a two- or three-character operator, or any
#: other character.
_TOKEN = re.compile(
    r"""'(?:[^'\\]|\\.|'')*'?|"(?:[^"\\]|\\.|"")*"?|`(?:[^`]|``)*`?"""
    r"|/\*.*?(?:\*/|\Z)|(?:--(?=\s|\Z)|\#)[^\n]*"
    r"|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
    r"|[^\W\d][\w$]*|@@?[\w.$]*"
    r"|<=>|->>|<=|>=|<>|!=|\|\||&&|<<|>>|:=|->|\S",
    re.DOTALL,
)


def token_count(sql: str) -> int:
    """How many tokens sqlglot's MySQL tokenizer makes of ``sql``, about (tests hold how near)."""
    return len(_TOKEN.findall(sql))


def parser_exhausted(sql: str) -> MysqlError:
    """1064 as MySQL's parser words running out of its stack, for a parse out of Python's."""
    return sql_error(ER_PARSE_ERROR, f"memory exhausted near '{sql[:80]}' at line 1")


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
        raise sql_error(
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
        raise sql_error(ER_TOO_HIGH_LEVEL_OF_NESTING_FOR_SELECT, message)
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
        raise sql_error(
            ER_NOT_SUPPORTED_YET,
            f"This version of MySQL doesn't yet support '{cast('exp.Func', regexp).sql_name()}' "
            "(grstats cannot bound a regular expression's time)",
        )
    if any(with_.args.get("recursive") for with_ in expression.find_all(exp.With)):
        raise sql_error(
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

    A string built by a function is at most ``packet`` long (:func:`.value_bounds.engine_env`).
    """
    literals = (len(node.name) for node in expression.find_all(exp.Literal) if node.is_string)
    bound = max(longest, max(literals, default=0))
    return max(bound, packet) if next(expression.find_all(*_MAY_BUILD), None) else bound


def _like_cost(like: exp.Like | exp.ILike, text: int) -> int:
    """What one evaluation of ``like`` costs (:func:`.value_bounds.like`): its segments' searches.

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
