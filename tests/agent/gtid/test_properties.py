"""Hypothesis properties: GtidSet against a brute-force model of (uuid, tag, gno) triples."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from grstats.core.gtid import Gtid, GtidSet
from grstats.core.gtid import _text as text_module
from tests.agent.gtid.model import UUIDS, Model, canonical_text, gtid_texts

sets = gtid_texts()
#: The algebra's operands: the same sets, written plainly. How MySQL's lenient text is read is
#: TestParseAndFormat's to prove (text with spaces, letter case and extra commas parses to the
#: set its plain text does); the algebra works on the parsed sets, which the decorations do not
#: change, and drawing them took half of each example's choices.
plain_sets = gtid_texts(decorated=False)
untagged = gtid_texts(tags=False, decorated=False)


def model_of(gtids: GtidSet) -> Model:
    """Expand a GtidSet back into the model (the test sets are small)."""
    return frozenset(
        (uuid, tag, gno) for uuid, tag, start, end in gtids for gno in range(start, end + 1)
    )


class TestParseAndFormat:
    @given(sets)
    def test_parse_holds_exactly_the_model(self, drawn: tuple[str, Model]) -> None:
        """Lenient text parses to exactly the GTIDs it names."""
        text, model = drawn
        assert model_of(GtidSet.parse(text)) == model

    @given(sets)
    def test_format_is_canonical(self, drawn: tuple[str, Model]) -> None:
        """str() is MySQL's canonical text: sorted, merged, tags after untagged, comma-newline."""
        text, model = drawn
        assert str(GtidSet.parse(text)) == canonical_text(model)
        assert GtidSet.parse(text).to_text(",") == canonical_text(model, ",")

    @given(sets)
    def test_round_trip(self, drawn: tuple[str, Model]) -> None:
        """parse(format(x)) == x, in both separators."""
        parsed = GtidSet.parse(drawn[0])
        assert GtidSet.parse(str(parsed)) == parsed
        assert GtidSet.parse(parsed.to_text(",")) == parsed

    @given(sets)
    def test_fast_and_exact_parsers_agree(self, drawn: tuple[str, Model]) -> None:
        """The C-level fast path and the step-by-step scanner read valid text alike."""
        assert text_module.parse(drawn[0]) == text_module.parse_exact(drawn[0])

    @given(st.text(alphabet="0123456789abcdefABCDEF-:, \nxg_+", max_size=60))
    def test_parsers_agree_on_noise(self, noise: str) -> None:
        """On arbitrary text both parsers accept the same and reject the same."""
        for prefix in ("", UUIDS[0], UUIDS[0] + ":"):
            candidate = prefix + noise
            try:
                exact = text_module.parse_exact(candidate)
            except ValueError:
                exact = None
            try:
                fast = text_module.parse(candidate)
            except ValueError:
                fast = None
            assert fast == exact


class TestAlgebra:
    @given(plain_sets, plain_sets)
    def test_binary_operations(self, left: tuple[str, Model], right: tuple[str, Model]) -> None:
        """|, &, -, ^ match the model's set operations."""
        a, b = GtidSet.parse(left[0]), GtidSet.parse(right[0])
        ma, mb = left[1], right[1]
        assert model_of(a | b) == ma | mb
        assert model_of(a & b) == ma & mb
        assert model_of(a - b) == ma - mb
        assert model_of(a ^ b) == ma ^ mb

    @given(plain_sets, plain_sets)
    def test_comparisons(self, left: tuple[str, Model], right: tuple[str, Model]) -> None:
        """<=, <, >=, >, == and isdisjoint match the model."""
        a, b = GtidSet.parse(left[0]), GtidSet.parse(right[0])
        ma, mb = left[1], right[1]
        assert (a <= b) == (ma <= mb)
        assert (a < b) == (ma < mb)
        assert (a >= b) == (ma >= mb)
        assert (a > b) == (ma > mb)
        assert (a == b) == (ma == mb)
        assert a.isdisjoint(b) == ma.isdisjoint(mb)
        if a == b:
            assert hash(a) == hash(b)

    @given(st.lists(plain_sets, min_size=1, max_size=9))
    def test_intersection_and_union_of_many(self, drawn: list[tuple[str, Model]]) -> None:
        """intersection_of and union_of over up to 9 sets (a group's members) match the model."""
        parsed = [GtidSet.parse(text) for text, _ in drawn]
        models = [model for _, model in drawn]
        assert model_of(GtidSet.intersection_of(parsed)) == frozenset.intersection(*models)
        assert model_of(GtidSet.union_of(parsed)) == frozenset.union(*models)

    @given(plain_sets)
    def test_count_empty_and_membership(self, drawn: tuple[str, Model]) -> None:
        """count() is GTID_COUNT; bool and membership of single GTIDs match the model."""
        text, model = drawn
        parsed = GtidSet.parse(text)
        assert parsed.count() == len(model)
        assert bool(parsed) == bool(model)
        assert parsed.is_empty() == (not model)
        for uuid, tag, gno in list(model)[:5]:
            assert Gtid(uuid, gno, tag) in parsed
            assert str(Gtid(uuid, gno, tag)) in parsed
        for gno in (1, 7, 2**63 - 2):
            gtid = Gtid(UUIDS[1], gno)
            assert (gtid in parsed) == ((UUIDS[1], "", gno) in model)

    @given(plain_sets)
    def test_constructor_from_intervals(self, drawn: tuple[str, Model]) -> None:
        """GtidSet(iter(s)) rebuilds s from its (uuid, tag, start, end) intervals."""
        parsed = GtidSet.parse(drawn[0])
        assert GtidSet(iter(parsed)) == parsed

    @given(untagged, untagged)
    def test_untagged_sets(self, left: tuple[str, Model], right: tuple[str, Model]) -> None:
        """Sets without tags (MySQL before 8.3) behave the same."""
        a, b = GtidSet.parse(left[0]), GtidSet.parse(right[0])
        assert model_of(a - b) == left[1] - right[1]
        assert model_of(GtidSet.intersection_of([a, b, a])) == left[1] & right[1]
