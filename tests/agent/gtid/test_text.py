"""MySQL's lenient GTID text rules (sql/rpl_gtid_set.cc) and the errors for malformed text."""

from __future__ import annotations

import pickle

import pytest

from grstats.core.gtid import Gtid, GtidError, GtidParseError, GtidSet

A = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
B = "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"
U = "3E11FA47-71CA-11E1-9E33-C80AA9429562"


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        pytest.param("", "", id="empty"),
        pytest.param("  \n\t ", "", id="only-whitespace"),
        pytest.param(",,, ,", "", id="only-commas"),
        pytest.param(A, "", id="bare-uuid-adds-nothing"),
        pytest.param(f" {A} : 1 - 3 : 5 ,\n {B}:2 ", f"{A}:1-3:5,\n{B}:2", id="whitespace"),
        pytest.param(f"{B}:2,{A}:9,{A}:1", f"{A}:1:9,\n{B}:2", id="any-order"),
        pytest.param(f"{A}:1-5:3-9:1-2", f"{A}:1-9", id="overlaps-merge"),
        pytest.param(f"{A}:1-3:4-6", f"{A}:1-6", id="touching-merge"),
        pytest.param(f"{A}:5-3:7", f"{A}:7", id="reversed-ignored"),
        pytest.param(f"{A}:5-0", "", id="reversed-to-zero-ignored"),
        pytest.param(f"{A}:1,,{A}:2,", f"{A}:1-2", id="redundant-and-trailing-commas"),
        pytest.param(f"{U}:1", f"{U.lower()}:1", id="uppercase-uuid"),
        pytest.param(f"{A}:007", f"{A}:7", id="leading-zeros-octal-7-is-7"),
        pytest.param(f"{A}:TagB:3:tagA:1:2", f"{A}:taga:1-2:tagb:3", id="tags-lowercased-sorted"),
        pytest.param(f"{A}:t:1,{A}:5", f"{A}:5:t:1", id="untagged-before-tags"),
        pytest.param(f"{A}: _x9 : 4", f"{A}:_x9:4", id="tag-with-whitespace"),
        pytest.param(f"{A}:{'t' * 32}:1", f"{A}:{'t' * 32}:1", id="tag-of-32"),
        pytest.param(f"{A}:tag", "", id="tag-without-intervals"),
        pytest.param(f"{A}:1-9223372036854775806", f"{A}:1-9223372036854775806", id="max-gno"),
    ],
)
def test_lenient_parse_gives_canonical_text(text: str, canonical: str) -> None:
    """Text MySQL accepts parses, and prints in MySQL's canonical form."""
    assert str(GtidSet.parse(text)) == canonical


def test_one_line_separator() -> None:
    """to_text(',') gives one line; the default separator is comma-newline.

    As in ``Gtid_set::default_string_format`` (sql/rpl_gtid_set.cc).
    """
    gtids = GtidSet.parse(f"{B}:1,{A}:1")
    assert gtids.to_text(",") == f"{A}:1,{B}:1"
    assert str(gtids) == f"{A}:1,\n{B}:1"


@pytest.mark.parametrize(
    ("text", "offset", "token"),
    [
        pytest.param("nonsense", 0, "nonsense", id="not-a-uuid"),
        pytest.param(f"{A}:1,xyz", 39, "xyz", id="garbage-after-comma"),
        pytest.param(f"{A}:0", 37, "0", id="gno-zero"),
        pytest.param(f"{A}:3-9223372036854775807", 39, "9223372036854775807", id="gno-2^63-1"),
        pytest.param(f"{A}:99999999999999999999999", 37, "99999999999999999999999", id="huge-gno"),
        pytest.param(f"{A}:1 2", 39, "2", id="two-numbers"),
        pytest.param(f"{A}:-1", 37, "-1", id="negative"),
        pytest.param(f"{A}: 0x8000000000000000", 38, "0x8000000000000000", id="hex-overflow"),
        pytest.param(f"{A}:1- -5", 40, "-5", id="negative-end"),
        pytest.param(f"{A}:019", 39, "9", id="octal-then-decimal-digit"),
        pytest.param(f"{A}:t ag:1", 37, "t", id="space-inside-tag"),
        pytest.param(f"{A}:1_000", 38, "_000", id="underscore-digits"),
        pytest.param(f"{A}::1", 37, ":", id="empty-interval"),
        pytest.param(f"{A}:{'t' * 33}:1", 37, "t" * 33, id="tag-of-33"),
        pytest.param(f"{A}:9tag", 38, "tag", id="tag-starting-with-digit"),
        pytest.param(f"{A[:-1]}:1", 0, A[:-1], id="short-uuid"),
        pytest.param(f"{A}x:1", 36, "x", id="uuid-with-tail"),
    ],
)
def test_malformed_text_names_token_and_offset(text: str, offset: int, token: str) -> None:
    """A malformed set raises GtidParseError (a ValueError) naming the bad token and offset."""
    with pytest.raises(GtidParseError) as caught:
        GtidSet.parse(text)
    assert isinstance(caught.value, ValueError)
    assert caught.value.offset == offset
    assert caught.value.token == token[:40]
    assert f"offset {offset}" in str(caught.value)


class TestGtid:
    def test_parse_and_format(self) -> None:
        """uuid:gno and uuid:tag:gno round-trip lowercased (LAST_CONFLICT_FREE_TRANSACTION)."""
        assert str(Gtid.parse(f" {U}:10160 ")) == f"{U.lower()}:10160"
        assert str(Gtid.parse(f"{U}:Tag:3")) == f"{U.lower()}:tag:3"
        assert Gtid.parse(f"{A}:5") == Gtid(A, 5)

    @pytest.mark.parametrize(
        "text",
        [
            pytest.param(f"{A}:1-2", id="interval"),
            pytest.param(f"{A}:1,{B}:2", id="two-gtids"),
            pytest.param(f"{A}:0", id="gno-zero"),
            pytest.param(A, id="no-gno"),
            pytest.param("", id="empty"),
            pytest.param(f"{A}:9223372036854775807", id="gno-too-big"),
        ],
    )
    def test_rejects_anything_but_one_gtid(self, text: str) -> None:
        """Only one GTID is a GTID: intervals, lists and bad GNOs raise GtidParseError."""
        with pytest.raises(GtidParseError):
            Gtid.parse(text)

    @pytest.mark.parametrize(
        ("uuid", "gno", "tag", "field"),
        [
            pytest.param("nope", 1, "", "uuid", id="bad-uuid"),
            pytest.param(A, 0, "", "gno", id="gno-zero"),
            pytest.param(A, 2**63 - 1, "", "gno", id="gno-too-big"),
            pytest.param(A, 1, "9x", "tag", id="bad-tag"),
        ],
    )
    def test_constructor_names_the_bad_field(
        self, uuid: str, gno: int, tag: str, field: str
    ) -> None:
        """Gtid(...) with a bad value raises GtidError whose message starts with the field."""
        with pytest.raises(GtidError, match=f"^{field}: "):
            Gtid(uuid, gno, tag)


class TestGtidSetValue:
    def test_immutable_hashable_value(self) -> None:
        """Equal sets hash alike and work as dict keys and set members, like frozenset."""
        one = GtidSet.parse(f"{A}:1-3,{B}:1")
        two = GtidSet.parse(f"{B}:1,{A}:3:2:1")
        assert one == two
        assert {one: "x"}[two] == "x"
        assert len({one, two}) == 1
        assert GtidSet() == GtidSet.parse("")
        assert not GtidSet()

    def test_operators_reject_other_types(self) -> None:
        """Mixing a GtidSet with a str in an operator is a TypeError, as for frozenset."""
        with pytest.raises(TypeError):
            _ = GtidSet() | f"{A}:1"
        assert GtidSet() != f"{A}:1"

    def test_iteration_yields_inclusive_intervals(self) -> None:
        """Iteration gives (uuid, tag, start, end) with end inclusive, in canonical order."""
        gtids = GtidSet.parse(f"{B}:7,{A}:t:1-2,{A}:5-6")
        assert [tuple(i) for i in gtids] == [(A, "", 5, 6), (A, "t", 1, 2), (B, "", 7, 7)]
        assert gtids.uuids() == [A, B]
        assert gtids.tsids() == [(A, ""), (A, "t"), (B, "")]
        assert gtids.last_gno(A) == 6
        assert gtids.last_gno(A, "T") == 2
        assert gtids.last_gno(U) == 0

    def test_repr_and_pickle_round_trip(self) -> None:
        """repr() is valid Python that rebuilds the set, and pickling keeps the value."""
        gtids = GtidSet.parse(f"{A}:1-3,{B}:tag:4")
        assert eval(repr(gtids), {"GtidSet": GtidSet}) == gtids  # noqa: S307
        assert pickle.loads(pickle.dumps(gtids)) == gtids  # noqa: S301

    @pytest.mark.parametrize(
        ("interval", "field"),
        [
            pytest.param(("x", "", 1, 2), "uuid", id="bad-uuid"),
            pytest.param((A, "1t", 1, 2), "tag", id="bad-tag"),
            pytest.param((A, "", 0, 2), "start", id="start-zero"),
            pytest.param((A, "", 1, 2**63 - 1), "end", id="end-too-big"),
            pytest.param((A, "", 5, 2), "end", id="reversed"),
        ],
    )
    def test_constructor_names_the_bad_field(
        self, interval: tuple[str, str, int, int], field: str
    ) -> None:
        """GtidSet(intervals) rejects a bad interval with an error naming the field."""
        with pytest.raises(GtidError, match=f"^{field}: "):
            GtidSet([interval])

    def test_intersection_of_nothing_is_empty(self) -> None:
        """The stable set of no members is empty rather than an error."""
        assert GtidSet.intersection_of([]) == GtidSet()
        assert GtidSet.union_of([]) == GtidSet()

    def test_method_forms_take_several_sets(self) -> None:
        """union/intersection/difference take several sets, like frozenset's methods."""
        a, b, c = (GtidSet.parse(f"{A}:{r}") for r in ("1-10", "5-20", "8-9"))
        assert str(a.union(b, c)) == f"{A}:1-20"
        assert str(a.intersection(b, c)) == f"{A}:8-9"
        assert str(a.difference(b, c)) == f"{A}:1-4"
        assert a.issuperset(c)
        assert c.issubset(a)
