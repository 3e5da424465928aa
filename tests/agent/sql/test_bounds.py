"""A SQL statement's bounds (grstats.agent.sql.bounds): refused before it runs, bounded as it runs.

The refusals and the values are checked through a real endpoint (test_session's ``serving``,
the default limits); the worst statements accepted at the default limits are run on the
session's worker function itself over a 9-row table, their CPU time measured.
"""

# ruff: noqa: S608

from __future__ import annotations

import random
import re
import time
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import sqlglot
from mysql_mimic.errors import MysqlError
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import TokenError
from sqlglot.executor import env
from sqlglot.executor.python import PythonExecutor

from grstats.agent.limits import LimitsConfig
from grstats.agent.sql import bounds, catalog, execution, value_bounds
from grstats.core.mysql_errors import ER_TOO_BIG_SELECT
from grstats.core.rows import Kind
from grstats.core.rows.zone import parse_time_zone
from tests.agent.sql.test_session import Limits, serving

if TYPE_CHECKING:
    from grstats.core.rows import Value

T = "grstats.replication_group_members"
DEFAULTS = LimitsConfig()
#: The worst accepted statement's CPU time must stay well under this (0.3 s measured).
WORST_CPU_S = 1.0
PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"


def cross(count: int) -> str:
    """``count`` copies of the members table, joined."""
    return ", ".join(f"{T} AS t{index}" for index in range(count))


def nested(count: int) -> str:
    """``count`` derived tables, each in the next."""
    return "SELECT * FROM " + "(SELECT * FROM " * count + T + ") AS d" * count


# -- refused before it runs -----------------------------------------------------------------

REFUSED = [
    pytest.param(
        "SELECT " + "+".join(["1"] * 8000),
        1104,
        "The statement would cost more than limits.sql_max_cost = 400000 (parsing its 16006 "
        "characters: 848030)",
        id="parse-cost",
    ),
    pytest.param(
        "SELECT " + "(" * 200 + "1" + ")" * 200,
        1064,
        "memory exhausted near 'SELECT ((((",
        id="parser-stack-on-the-loop",
    ),
    pytest.param(
        "SELECT " + "(" * 600 + "1" + ")" * 600,
        1064,
        "memory exhausted near 'SELECT ((((",
        id="parser-stack-off-the-loop",
    ),
    pytest.param(nested(64), 1473, "Too high level of nesting for select", id="select-nesting"),
    pytest.param(
        "SELECT " + "+".join(["MEMBER_PORT"] * 150) + f" FROM {T}",
        1436,
        "Thread stack overrun: the statement's expressions nest 152 deep, more than the 100",
        id="expression-depth",
    ),
    pytest.param(
        f"SELECT MEMBER_ID FROM {T} WHERE MEMBER_ID REGEXP '^(a+)+$'",
        1235,
        "This version of MySQL doesn't yet support 'REGEXP_LIKE'",
        id="regexp",
    ),
    pytest.param(
        "WITH RECURSIVE c (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000000) "
        "SELECT COUNT(*) FROM c",
        1235,
        "This version of MySQL doesn't yet support 'WITH RECURSIVE'",
        id="recursive-cte",
    ),
    pytest.param(
        f"SELECT COUNT(*) FROM {cross(11)}",
        1104,
        "The SELECT would examine more than MAX_JOIN_SIZE rows",
        id="join-size",
    ),
    pytest.param(
        "SELECT " + ", ".join(f"MEMBER_PORT + {index}" for index in range(400)) + f" FROM {T}",
        1104,
        "The statement would cost more than limits.sql_max_cost = 400000 (planning its",
        id="plan-cost",
    ),
    pytest.param(
        f"SELECT COUNT(*) FROM {cross(10)}",
        1104,
        "The statement would cost more than limits.sql_max_cost = 400000 (",
        id="run-cost",
    ),
]


@pytest.mark.parametrize(("sql", "code", "message"), REFUSED)
async def test_refused_before_it_runs(
    monkeypatch: pytest.MonkeyPatch, sql: str, code: int, message: str
) -> None:
    """Each statement grstats cannot bound gets MySQL's error at once: sqlglot never runs it."""
    ran: list[object] = []

    class Spied(PythonExecutor):
        def execute(self, plan: Any, outer_scope: Any = None) -> Any:
            ran.append(plan)
            return super().execute(plan, outer_scope)  # type: ignore[no-untyped-call]

    monkeypatch.setattr(execution, "PythonExecutor", Spied)
    async with serving(Limits()) as endpoint:
        client = await endpoint.connect()
        try:
            started = time.monotonic()
            got, text = await client.error(sql)
            assert time.monotonic() - started < 1.0  # the timeout is 5 s
            assert (got, text[: len(message)]) == (code, message)
            assert ran == []
            assert await client.rows(f"SELECT COUNT(*) FROM {T}") == [("3",)]
        finally:
            client.connection.close()


# -- bounded as it runs -------------------------------------------------------------------

VALUES = [
    pytest.param(
        "SELECT LENGTH(REPEAT('ab', 8192)), REPEAT('ab', 8193) IS NULL, REPEAT('ab', 0)",
        [("16384", "1", "")],
        id="repeat-at-the-packet",
    ),
    pytest.param(
        "SELECT LPAD('a', 4, 'xy'), RPAD('a', 4, 'xy'), CONCAT('[', SPACE(2), ']'), "
        "LPAD('a', 16385, 'x') IS NULL, SPACE(16385) IS NULL, LPAD('abc', 2, 'x')",
        [("xyxa", "axyx", "[  ]", "1", "1", "ab")],
        id="pad-and-space",
    ),
    pytest.param(
        "SELECT LENGTH(CONCAT(REPEAT('a', 16383), 'b')), CONCAT(REPEAT('a', 16384), 'b') IS NULL",
        [("16384", "1")],
        id="concat-at-the-packet",
    ),
    pytest.param(
        f"SELECT 1 << 63, 1 << 64, MEMBER_PORT << 1000000000 FROM {T} LIMIT 1",
        [("9223372036854775808", "0", "0")],
        id="shift-on-64-bits",
    ),
    pytest.param(
        f"SELECT POW(2, 10), ROUND(MEMBER_PORT, -1000000000) FROM {T} LIMIT 1",
        [("1024", "0")],
        id="pow-and-round",
    ),
    pytest.param(
        f"SELECT COUNT(*) FROM {T} WHERE MEMBER_ID LIKE '{'%a' * 2000}%z'",
        [("0",)],
        id="like-with-many-percents",
    ),
]


@pytest.mark.parametrize(("sql", "rows"), VALUES)
async def test_values_are_bounded_as_mysql_bounds_them(sql: str, rows: list[tuple[str]]) -> None:
    """A string past the packet is NULL as MySQL's; shifts are on 64 bits; LIKE does not backtrack."""
    async with serving(Limits()) as endpoint:
        client = await endpoint.connect()
        try:
            started = time.monotonic()
            assert await client.rows(sql) == rows
            assert time.monotonic() - started < 1.0
        finally:
            client.connection.close()


ERRORS = [
    pytest.param(
        f"SELECT MEMBER_PORT * {'9' * 64} FROM {T}",
        1690,
        "DECIMAL value is out of range in '(",
        id="decimal",
    ),
    pytest.param(
        f"SELECT POW(MEMBER_PORT, 1000) FROM {T}",
        1690,
        "DOUBLE value is out of range in 'pow(",
        id="double",
    ),
    pytest.param(
        f"SELECT MEMBER_ID % 2 FROM {T}",
        1235,
        "This version of MySQL doesn't yet support '% of a string'",
        id="string-format",
    ),
]


@pytest.mark.parametrize(("sql", "code", "message"), ERRORS)
async def test_numbers_past_their_range_get_1690(sql: str, code: int, message: str) -> None:
    """A number that would grow past DECIMAL's or DOUBLE's range is MySQL's 1690, found before it grows."""
    async with serving(Limits()) as endpoint:
        client = await endpoint.connect()
        try:
            got, text = await client.error(sql)
            assert (got, text[: len(message)]) == (code, message)
        finally:
            client.connection.close()


def test_like_matches_as_sqlglots_regular_expression() -> None:
    """LIKE without backtracking gives what sqlglot's ``.*`` expression gives, case folded too."""
    draw = random.Random(20261128)  # noqa: S311
    for _ in range(3000):
        pattern = "".join(draw.choice("ab_%A") for _ in range(draw.randrange(8)))
        subject = "".join(draw.choice("abB\n") for _ in range(draw.randrange(10)))
        for flags in (0, re.IGNORECASE):
            expected = env._like(subject, pattern, flags)  # type: ignore[no-untyped-call]
            assert value_bounds.like(subject, pattern, flags) == expected, (
                subject,
                pattern,
                flags,
            )


# -- the worst accepted at the default limits ----------------------------------------------


def snapshot(text: str | None = None) -> Any:
    """The members table with 9 rows (a full group); ``text`` in every text column if given."""
    columns = catalog.table_columns("grstats", "replication_group_members")
    assert columns is not None
    rows: list[tuple[Value, ...]] = []
    for index in range(9):
        row: list[Value] = []
        for column in columns:
            if column.kind is Kind.INTEGER:
                row.append(3306 + index)
            elif column.kind is Kind.TIMESTAMP:
                row.append(1_700_000_000_000_000 + index)
            else:
                row.append(text if text is not None else f"{column.name.lower()}-{index}")
        rows.append(tuple(row))
    return {("grstats", "replication_group_members"): (columns, rows)}


def cost_and_cpu(
    monkeypatch: pytest.MonkeyPatch, sql: str, text: str | None = None
) -> tuple[int | None, float]:
    """The cost ``sql`` was accepted at (None if refused, 1104) and the CPU its run took."""
    costs: list[int] = []
    check_run = bounds.check_run

    def spied(expression: Any, size_of: Any, longest: int, planned: int, limits: Any) -> None:
        costs.append(planned + bounds.run_cost(expression, size_of, longest, limits))
        check_run(expression, size_of, longest, planned, limits)

    monkeypatch.setattr(execution, "check_run", spied)
    expression = sqlglot.parse_one(sql, read="mysql")
    assert isinstance(expression, exp.Select)
    started = time.thread_time()
    refused = None
    try:
        execution.run_query(expression, snapshot(text), parse_time_zone("+00:00"), DEFAULTS)
    except MysqlError as error:
        refused = error.code
    cpu = time.thread_time() - started
    assert refused in {None, ER_TOO_BIG_SELECT}
    return (costs[-1] if refused is None else None), cpu


WORST = [
    pytest.param(
        lambda k: "SELECT " + "+".join(["t0.MEMBER_PORT"] * k) + f" FROM {cross(4)}",
        19,
        None,
        id="join-of-6561-at-the-most-nodes",
    ),
    pytest.param(
        lambda k: (
            "SELECT "
            + "+".join(["LENGTH(REPEAT(t0.MEMBER_ID, 16384 DIV LENGTH(t0.MEMBER_ID)))"] * k)
            + f" FROM {cross(4)}"
        ),
        3,
        None,
        id="repeat-at-the-packet-over-6561",
    ),
    pytest.param(
        lambda k: (
            "SELECT "
            + ", ".join(
                f"(SELECT MAX(b.MEMBER_PORT) FROM {T} AS b WHERE b.MEMBER_PORT > a.MEMBER_PORT + {i})"
                for i in range(k)
            )
            + f" FROM {T} AS a"
        ),
        24,
        None,
        id="correlated-subqueries",
    ),
    pytest.param(
        lambda k: (
            f"SELECT COUNT(*) FROM {T} WHERE " + " OR ".join(f"MEMBER_PORT = {i}" for i in range(k))
        ),
        70,
        None,
        id="chain-of-or",
    ),
    pytest.param(
        lambda k: "SELECT " + ", ".join(["MEMBER_PORT"] * k) + f" FROM {T}",
        488,
        None,
        id="columns-of-one-name",
    ),
    pytest.param(
        lambda k: f"SELECT COUNT(*) FROM {T} WHERE MEMBER_ID LIKE '%" + "x_" * k + "y%'",
        547,
        "x" * 16_000,
        id="like-segment-of-underscores-in-16000-characters",
    ),
    pytest.param(
        lambda k: f"SELECT COUNT(*) FROM {T} WHERE MEMBER_ID LIKE '" + "%x" * k + "%y'",
        1096,
        "x" * 16_000,
        id="like-of-many-percents-in-16000-characters",
    ),
]


@pytest.mark.parametrize(("make", "most", "text"), WORST)
def test_the_worst_accepted_statements_take_well_under_a_second(
    monkeypatch: pytest.MonkeyPatch, make: Any, most: int, text: str | None
) -> None:
    """At the default limits the largest statement of each kind accepted runs in under a second of CPU."""
    cost, cpu = cost_and_cpu(monkeypatch, make(most), text)
    assert cost is not None
    assert 0.8 * DEFAULTS.sql_max_cost < cost <= DEFAULTS.sql_max_cost
    assert cpu < WORST_CPU_S, f"{cpu:.3f} s of CPU for a cost of {cost}"
    bigger, _ = cost_and_cpu(monkeypatch, make(most + 1), text)
    assert bigger is None


def test_the_installed_sqlglot_is_in_the_range_the_costs_are_measured_for() -> None:
    """The sqlglot the tests above ran on is within pyproject.toml's range, which has an upper bound."""
    dependencies = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"]
    (allowed,) = [
        Requirement(line).specifier
        for line in dependencies
        if canonicalize_name(Requirement(line).name) == "sqlglot"
    ]
    assert [spec.operator for spec in allowed if spec.operator in {"<", "<="}], allowed
    assert allowed.contains(version("sqlglot")), f"sqlglot {version('sqlglot')} is not {allowed}"


def test_the_longest_text_accepted_parses_well_under_a_second() -> None:
    """The text sqlglot parses slowest, as long as sql_max_cost lets it be, parses in well under a second."""
    longest = "SELECT " + " OR ".join(["1 BETWEEN 1 AND 1"] * 780)  # the most time per token
    assert len(longest) == DEFAULTS.sql_max_allowed_packet - 1
    bounds.check_text(longest, DEFAULTS)
    started = time.thread_time()
    sqlglot.parse(longest, read="mysql")
    assert time.thread_time() - started < WORST_CPU_S

    def text(terms: int) -> str:
        return "SELECT " + "+".join(["((((1))))"] * terms)

    terms = (DEFAULTS.sql_max_cost // bounds.PARSE_COST - 6) // 10
    assert len(text(terms)) <= DEFAULTS.sql_max_cost // bounds.PARSE_COST < len(text(terms + 1))
    bounds.check_text(text(terms), DEFAULTS)
    with pytest.raises(MysqlError) as raised:
        bounds.check_text(text(terms + 100), DEFAULTS)
    assert raised.value.code == ER_TOO_BIG_SELECT
    started = time.thread_time()
    sqlglot.parse(text(terms), read="mysql")
    assert time.thread_time() - started < WORST_CPU_S


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT " + "+".join(["1"] * 2_000),
        "SELECT " + " OR ".join(["1 BETWEEN 1 AND 1"] * 200),
        "SELECT 'it''s', \"a\\\"b\" FROM `t``x` WHERE a <=> b AND c->>'$.x' OR d != 1.5e3 LIMIT 3",
        "select * from performance_schema.replication_group_members where MEMBER_STATE = 'ONLINE'",
        "SELECT @@global.version, @x := 1, -a, NOT b, c IS NULL, d IN (1, 2, 3)",
        "SELECT 'unterminated",
        "SELECT a /* a comment */ FROM t -- another\n WHERE b = 1 # and one more",
    ],
)
def test_the_token_count_is_near_sqlglots(sql: str) -> None:
    """check_text's token count is within a token per comment and two in ten of sqlglot's tokenizer's."""
    try:
        theirs = len(Dialect.get_or_raise("mysql").tokenize(sql))
    except TokenError:
        assert bounds.token_count(sql) <= len(sql.split())  # the rest is one token
        return
    comments = sql.count("/*") + sql.count("--") + sql.count("#")
    assert 0.8 * theirs <= bounds.token_count(sql) <= 1.2 * theirs + comments
