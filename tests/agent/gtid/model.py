"""A brute-force model of GTID sets for the property tests: a Python set of (uuid, tag, gno)."""

from __future__ import annotations

from itertools import groupby

from hypothesis import strategies as st

from grstats.core.gtid import GNO_MAX

UUIDS = (
    "3E11FA47-71CA-11E1-9E33-C80AA9429562",
    "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
    "8a84f397-aaa4-18df-89ab-c70aa9823561",
)
TAGS = ("", "aa", "b_1", "Zz")
#: GNOs are drawn near both ends of the GNO space so that the edges (1 and 2^63-2) are hit.
LOW = range(1, 25)
HIGH = range(GNO_MAX - 12, GNO_MAX + 1)

Model = frozenset[tuple[str, str, int]]
#: The structure a set is drawn as: UUIDs, each with runs of (start, end) ranges under a tag.
Spec = list[tuple[str, list[tuple[str, list[tuple[int, int]]]]]]


#: Every strategy is built once, here: one built during a draw (in a ``flatmap`` lambda, or a
#: ``st.lists`` call in the composite) is built and validated again at each draw, which took
#: about two thirds of the properties' time.
_GNO_RANGES = st.one_of(
    st.tuples(st.sampled_from(LOW), st.sampled_from(LOW)),
    st.tuples(st.sampled_from(HIGH), st.sampled_from(HIGH)),
)
_SPACES = st.sampled_from(("", "", " ", "\n", "\t ", "  "))
_COMMAS = st.sampled_from((",", ",", ", ", ",\n", ",,"))
_SHAPES = st.sampled_from(("{}", "0x{:x}", "0X{:X}", "0{:o}", "00{:o}", "+{}", "+0x{:x}"))
_COINS = st.booleans()


def gno_ranges() -> st.SearchStrategy[tuple[int, int]]:
    """Draw a (start, end) pair, sometimes reversed, from one end of the GNO space."""
    return _GNO_RANGES


def _specs(tags: bool) -> st.SearchStrategy[Spec]:
    """Draw the structure of a set, with tags or without."""
    runs = st.tuples(st.sampled_from(TAGS if tags else ("",)), st.lists(_GNO_RANGES, max_size=4))
    return st.lists(st.tuples(st.sampled_from(UUIDS), st.lists(runs, max_size=3)), max_size=4)


_SPECS = {True: _specs(tags=True), False: _specs(tags=False)}


def _number(draw: st.DrawFn, gno: int, forms: bool) -> str:
    """Write ``gno`` in decimal or, with ``forms``, in any form strtoll reads in base 0."""
    if not forms:
        return str(gno)
    return draw(_SHAPES).format(gno)


@st.composite
def gtid_texts(
    draw: st.DrawFn, tags: bool = True, number_forms: bool = False, decorated: bool = True
) -> tuple[str, Model]:
    """Draw lenient GTID set text (as MySQL accepts it) and the model of what it holds.

    With ``number_forms`` the GNOs are written in hex, octal or with a '+' too (``parse_gno``).
    ``decorated=False`` writes the same sets without the spaces, letter case and extra commas
    MySQL tolerates: the text draws half as many choices, for properties about the sets.
    """
    specs = draw(_SPECS[tags])
    if not decorated:
        return _plain(specs)
    ws = _SPACES
    model: set[tuple[str, str, int]] = set()
    parts = []
    for uuid, runs in specs:
        shown = uuid.upper() if draw(_COINS) else uuid.lower()
        text = shown + draw(ws)
        current = ""  # a tag applies until the next tag: text cannot switch back to untagged
        for tag, ranges in runs:
            if tag:
                text += ":" + draw(ws) + (tag.upper() if draw(_COINS) else tag) + draw(ws)
                current = tag
            for start, end in ranges:
                single = start == end and draw(_COINS)
                text += (
                    ":"
                    + draw(ws)
                    + (
                        _number(draw, start, number_forms)
                        if single
                        else f"{_number(draw, start, number_forms)}{draw(ws)}-{draw(ws)}"
                        + _number(draw, end, number_forms)
                    )
                )
                text += draw(ws)
                model.update((uuid.lower(), current.lower(), g) for g in range(start, end + 1))
        parts.append(text)
    text = draw(ws) + "".join(p + draw(_COMMAS) for p in parts)
    if not draw(_COINS):
        text = text.rstrip(",\n ")
    return text, frozenset(model)


def _plain(specs: Spec) -> tuple[str, Model]:
    """Write ``specs`` as plain GTID set text (``uuid:tag:a-b``, reversed ranges kept)."""
    model: set[tuple[str, str, int]] = set()
    parts = []
    for uuid, runs in specs:
        text = uuid
        current = ""
        for tag, ranges in runs:
            if tag:
                text += ":" + tag
                current = tag
            for start, end in ranges:
                text += f":{start}-{end}"
                model.update((uuid.lower(), current.lower(), g) for g in range(start, end + 1))
        parts.append(text)
    return ",".join(parts), frozenset(model)


def canonical_text(model: Model, separator: str = ",\n") -> str:
    """Format ``model`` the way MySQL does, by brute force."""
    groups = []
    for uuid, in_uuid in groupby(sorted(model), key=lambda x: x[0]):
        pieces = [uuid]
        for tag, in_tag in groupby(in_uuid, key=lambda x: x[1]):
            if tag:
                pieces.append(tag)
            gnos = [g for _, _, g in in_tag]
            runs = []
            start = prev = gnos[0]
            for g in gnos[1:]:
                if g != prev + 1:
                    runs.append((start, prev))
                    start = g
                prev = g
            runs.append((start, prev))
            pieces.append(":".join(str(a) if a == b else f"{a}-{b}" for a, b in runs))
        groups.append(":".join(pieces))
    return separator.join(groups)
