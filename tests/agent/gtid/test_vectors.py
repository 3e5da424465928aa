"""Every example of the MySQL manual and mtr binlog_gtid_utils as a named test vector.

The manual page is "Functions Used with Global Transaction Identifiers (GTIDs)"; the mtr result is
``binlog_gtid/r/binlog_gtid_utils.result``, whose stored helpers (GTID_IS_EQUAL, GTID_UNION, ...)
come from ``include/gtid_utils.inc``.
"""

from __future__ import annotations

import pytest

from grstats.core.gtid import GtidParseError, GtidSet

U = "3E11FA47-71CA-11E1-9E33-C80AA9429562"
u = U.lower()
A = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
B = "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"
C = "cccccccc-cccc-cccc-cccc-cccccccccccc"
MAX = "9223372036854775806"


def gtid_subset(a: str, b: str) -> int:
    """MySQL's GTID_SUBSET(a, b) as 1 or 0."""
    return int(GtidSet.parse(a) <= GtidSet.parse(b))


def gtid_subtract(a: str, b: str) -> str:
    """MySQL's GTID_SUBTRACT(a, b) as canonical text."""
    return str(GtidSet.parse(a) - GtidSet.parse(b))


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param(f"{U}:23", f"{U}:21-57", 1, id="subset-single-gno"),
        pytest.param(f"{U}:23-25", f"{U}:21-57", 1, id="subset-interval"),
        pytest.param(f"{U}:20-25", f"{U}:21-57", 0, id="not-subset-overhang"),
        pytest.param(f"{A}:1-{MAX}", "", 0, id="full-range-not-subset-of-empty"),
        pytest.param("", f"{A}:1-{MAX}", 1, id="empty-subset-of-full-range"),
    ],
)
def test_gtid_subset(a: str, b: str, expected: int) -> None:
    """GTID_SUBSET returns MySQL's documented answer."""
    assert gtid_subset(a, b) == expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param(f"{U}:21-57", f"{U}:21", f"{u}:22-57", id="subtract-lowercases"),
        pytest.param(f"{U}:21-57", f"{U}:20-25", f"{u}:26-57", id="subtract-overlap"),
        pytest.param(f"{U}:21-57", f"{U}:23-24", f"{u}:21-22:25-57", id="subtract-splits"),
        pytest.param(f"{U}:21-57", f"{U}:21-57", "", id="subtract-all-is-empty-string"),
        pytest.param(f"{A}:1-{MAX}", "", f"{A}:1-{MAX}", id="subtract-empty"),
        pytest.param("", f"{A}:1-{MAX}", "", id="subtract-from-empty"),
    ],
)
def test_gtid_subtract(a: str, b: str, expected: str) -> None:
    """GTID_SUBTRACT returns MySQL's documented text."""
    assert gtid_subtract(a, b) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(f"{A}:1-9223372036854775807", id="gno-2^63-1"),
        pytest.param(f"{A}:0", id="gno-zero"),
        pytest.param(f"{A}:0-1", id="interval-from-zero"),
        pytest.param(f"{A}:1-6,3-20", id="uuid-required-after-comma"),
    ],
)
def test_malformed(text: str) -> None:
    """Text MySQL rejects with ER_MALFORMED_GTID_SET_SPECIFICATION raises GtidParseError."""
    with pytest.raises(GtidParseError):
        GtidSet.parse(text)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        pytest.param(f"{A}:1,{B}:3:2:1", f"{B}:1-3,{A}:1", True, id="is-equal-normalises"),
        pytest.param(f"{A}:1,{B}:3:2:1", f"{B}:1:3,{A}:1", False, id="is-equal-differs"),
    ],
)
def test_gtid_is_equal(a: str, b: str, equal: bool) -> None:
    """GTID_IS_EQUAL compares sets, not texts."""
    assert (GtidSet.parse(a) == GtidSet.parse(b)) is equal


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param(f"{A}:1-3:5-7", f"{A}:3-5", f"{A}:3:5", id="intersection"),
        pytest.param(f"{A}:1-3", f"{A}:1:2:3", f"{A}:1-3", id="intersection-merges"),
        pytest.param(f"{A}:1-3", f"{B}:1-3", "", id="intersection-disjoint-uuids"),
    ],
)
def test_gtid_intersection(a: str, b: str, expected: str) -> None:
    """GTID_INTERSECTION gives MySQL's text."""
    assert str(GtidSet.parse(a) & GtidSet.parse(b)) == expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param(f"{A}:1:3", f"{A}:2:4", f"{A}:1-4", id="union-merges-singletons"),
        pytest.param(f"{A}:1-3", f"{A}:1:3", f"{A}:1-3", id="union-subset"),
    ],
)
def test_gtid_union(a: str, b: str, expected: str) -> None:
    """GTID_UNION merges adjacent GNOs."""
    assert str(GtidSet.parse(a) | GtidSet.parse(b)) == expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param(f"{A}:1-3", f"{A}:3-5", f"{A}:1-2:4-5", id="symdiff-overlap"),
        pytest.param(f"{A}:1-3", f"{A}:4-5", f"{A}:1-5", id="symdiff-adjacent"),
        pytest.param(f"{A}:1-3", f"{B}:1-3", f"{A}:1-3,\n{B}:1-3", id="symdiff-newline"),
    ],
)
def test_gtid_symmetric_difference(a: str, b: str, expected: str) -> None:
    """GTID_SYMMETRIC_DIFFERENCE gives MySQL's text, with a comma-newline between UUIDs."""
    assert str(GtidSet.parse(a) ^ GtidSet.parse(b)) == expected


def test_gtid_subtract_uuid() -> None:
    """GTID_SUBTRACT_UUID (mtr gtid_utils.inc) drops every GTID of one UUID."""
    full = GtidSet.parse(f"{A}:1-3,{B}:1-3,{C}:1-3")
    only_b = GtidSet([(B, "", 1, 2**63 - 2)])
    assert str(full - only_b) == f"{A}:1-3,\n{C}:1-3"


@pytest.mark.parametrize(
    ("text", "count"),
    [
        pytest.param(f"{A}:1-3:4-5", 5, id="count-touching"),
        pytest.param(f"{A}:1-3:5-5", 4, id="count-single-as-interval"),
        pytest.param(f"{A}:1-3:5-4", 3, id="count-reversed-ignored"),
        pytest.param(f"{A}:1-3:5-4,{B}:1:3,", 5, id="count-trailing-comma"),
    ],
)
def test_gtid_count(text: str, count: int) -> None:
    """GTID_COUNT counts GNOs, ignoring reversed intervals."""
    assert GtidSet.parse(text).count() == count


def test_mtr_stable_set_sample() -> None:
    """The stable set of mtr gr_perfschema_group_member_stats and the set it must equal later."""
    group = "8a84f397-aaa4-18df-89ab-c70aa9823561"
    stable = GtidSet.parse(f"{group}:1-5")
    executed = GtidSet.parse(f"aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1,\n{group}:1-6")
    assert str(stable) == f"{group}:1-5"
    assert stable < executed
    # UUIDs print in byte order, so the group's 8a84... comes before aaaaaaaa-...
    assert str(executed) == f"{group}:1-6,\naaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1"


def test_block_allocation_sample() -> None:
    """A set with a later GTID assignment block (gtid_generator.cc) prints as MySQL shows it."""
    text = "cc5e2627-1111-2222-3333-444455556666:1-23:1000003"
    assert str(GtidSet.parse(text)) == text
    assert GtidSet.parse(text).count() == 24
