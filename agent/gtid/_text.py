"""GTID set text: MySQL's lenient parser and its canonical formatter (sql/rpl_gtid_set.cc).

Parsing has two paths that must agree. The fast path checks the whole text against one regular
expression of the grammar and then splits it with ``str`` methods; it handles every valid text
whose numbers have at most 19 digits. Anything else goes to :func:`parse_exact`, a scanner that
follows ``Gtid_set::add_gtid_text`` step by step and, for malformed text, raises
:class:`GtidParseError` naming the bad token and its offset.

Deliberate deviation: MySQL 8.0 reads GNOs with ``strtoll(..., base 0)``, so it also takes a
``+`` sign, ``0x`` hex and octal for a leading ``0``. grstats reads GNOs as decimal only (``010``
is ten) and rejects signs and hex; MySQL never prints them.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, TypeAlias

from grstats.agent.gtid._bounds import GNO_END, GNO_MAX, GNO_MIN, Bounds, from_flat, from_pairs
from grstats.agent.gtid._errors import GtidParseError

if TYPE_CHECKING:
    from collections.abc import Iterable

#: ``(uuid, tag)``: MySQL's Tsid. Both lowercase; ``tag`` is ``''`` for untagged GTIDs.
Tsid: TypeAlias = tuple[str, str]
#: A parsed set: canonical bounds per Tsid, keys sorted, no empty bounds.
Parsed: TypeAlias = dict[Tsid, Bounds]

#: Default separator between UUIDs in MySQL's output (``Gtid_set::default_string_format``).
UUID_SEPARATOR = ",\n"
#: Longest tag (``tag_max_length``, MySQL 8.3+).
TAG_MAX_LENGTH = 32

_ONE = 1
_DELETE_NUMERIC = str.maketrans("", "", "0123456789:-")
_WS_CHARS = " \t\n\r\f\v"  # MySQL's SKIP_WHITESPACE (isspace in latin1)
_WS = "[ \t\n\r\f\v]*"
_HEX = "[0-9A-Fa-f]"
_UUID = f"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}"
_TAG = f"[A-Za-z_][A-Za-z0-9_]{{0,{TAG_MAX_LENGTH - 1}}}(?![A-Za-z0-9_])"
_GNO = "[0-9]{1,19}"
_ELEMENT = f"(?:{_TAG}|{_GNO}{_WS}(?:-{_WS}{_GNO})?)"
_UUID_SET = f"{_UUID}{_WS}(?::{_WS}{_ELEMENT}{_WS})*"
_SET_RE = re.compile(f"{_WS}(?:,{_WS})*(?:{_UUID_SET}(?:(?:,{_WS})+{_UUID_SET})*(?:,{_WS})*)?")

_UUID_RE = re.compile(_UUID)
_TAG_WORD_RE = re.compile("[A-Za-z_][A-Za-z0-9_]*")
_DIGITS_RE = re.compile("[0-9]+")
_TAG_RE = re.compile(f"[A-Za-z_][A-Za-z0-9_]{{0,{TAG_MAX_LENGTH - 1}}}")
_GTID_RE = re.compile(
    f"{_WS}({_UUID}){_WS}:{_WS}(?:({_TAG}){_WS}:{_WS})?([0-9]+){_WS}",
)


def parse(text: str) -> Parsed:
    """Return the canonical bounds per Tsid of GTID set ``text``, as leniently as MySQL."""
    compact = text.replace(",\n", ",").strip(_WS_CHARS)  # MySQL's own output has no other space
    if any(space in compact for space in _WS_CHARS):
        if _SET_RE.fullmatch(text) is None:
            return parse_exact(text)
        compact = "".join(text.split())  # whitespace only ever separates tokens: drop it
    fast = _parse_compact(compact)
    return fast if fast is not None else parse_exact(text)


def _parse_compact(compact: str) -> Parsed | None:
    """Parse whitespace-free ``compact`` with C-level string methods, or return None to decline.

    Declining is always safe: :func:`parse_exact` then parses the original text.
    """
    found: dict[Tsid, list[int]] = {}
    for segment in compact.split(","):
        if segment and not _add_segment(found, segment):
            return None
    parsed: Parsed = {}
    for tsid in sorted(found):
        bounds = from_flat(found[tsid])
        # Canonical bounds are sorted: the range check needs only the outer edges.
        if bounds and (bounds[0] < GNO_MIN or bounds[-2] > GNO_MAX or bounds[-1] > GNO_END):
            return None
        if bounds:
            parsed[tsid] = bounds
    return parsed


def _add_segment(found: dict[Tsid, list[int]], segment: str) -> bool:
    """Add one ``uuid[:intervals]`` segment to ``found``; return False if anything is off."""
    if _UUID_RE.match(segment) is None or (len(segment) > 36 and segment[36] != ":"):
        return False
    if len(segment) <= 37:  # a UUID with no intervals adds nothing; "uuid:" is malformed
        return len(segment) == 36
    uuid = segment[:36].lower()
    body = segment[37:]
    if body.translate(_DELETE_NUMERIC):  # tags (or garbage): split the body at each tag
        return _add_tagged(found, uuid, body)
    flat = _flat(body)
    if flat is None:
        return False
    found.setdefault((uuid, ""), []).extend(flat)
    return True


def _add_tagged(found: dict[Tsid, list[int]], uuid: str, body: str) -> bool:
    """Add the ``tag:intervals`` runs of ``body`` to ``found``; return False if anything is off."""
    runs: list[tuple[str, list[str]]] = [("", [])]
    for element in body.split(":"):
        if not element:
            return False
        if element[0] <= "9":  # digits, or a '-' that _flat rejects
            runs[-1][1].append(element)
        elif _TAG_RE.fullmatch(element) is not None:
            runs.append((element.lower(), []))
        else:
            return False
    for tag, numeric in runs:
        run = ":".join(numeric)
        if run.translate(_DELETE_NUMERIC):
            return False
        flat = _flat(run) if run else []
        if flat is None:
            return False
        found.setdefault((uuid, tag), []).extend(flat)
    return True


def _flat(body: str) -> list[int] | None:
    """Return ``[s0, e0, ...]`` (half-open) of ``a`` / ``a-b`` intervals joined by ``:``.

    The caller has checked that ``body`` holds only digits, ``:`` and ``-``. Single GNOs are
    written as ``a-a`` and the numbers are read by the C-level JSON decoder. Returns None for
    anything that is not one or two runs of digits per interval (an empty number, ``a-b-c``) and
    for leading zeros, which JSON refuses: the exact scanner then reads the text.
    """
    elements = [e if "-" in e else f"{e}-{e}" for e in body.split(":")]
    try:
        flat: list[int] = json.loads("[" + ",".join(elements).replace("-", ",") + "]")
    except ValueError:
        return None
    if len(flat) != 2 * len(elements):  # an interval with two dashes
        return None
    flat[1::2] = map(_ONE.__add__, flat[1::2])
    return flat


def parse_exact(text: str) -> Parsed:  # noqa: C901  (mirrors add_gtid_text step by step)
    """Parse ``text`` following ``Gtid_set::add_gtid_text``; raise GtidParseError if malformed."""
    found: dict[Tsid, list[tuple[int, int]]] = {}
    size = len(text)
    at = _skip_ws(text, 0)
    while True:
        while at < size and text[at] == ",":  # empty specifications are allowed
            at = _skip_ws(text, at + 1)
        if at >= size:
            break
        if _UUID_RE.match(text, at) is None:
            raise GtidParseError(text, at, "expected a UUID")
        uuid = text[at : at + 36].lower()
        intervals = found.setdefault((uuid, ""), [])
        at = _skip_ws(text, at + 36)
        while at < size and text[at] == ":":
            at = _skip_ws(text, at + 1)
            word = _TAG_WORD_RE.match(text, at)
            if word is not None:
                if len(word.group()) > TAG_MAX_LENGTH:
                    raise GtidParseError(
                        text, at, f"expected a tag of 1 to {TAG_MAX_LENGTH} characters"
                    )
                intervals = found.setdefault((uuid, word.group().lower()), [])
                at = _skip_ws(text, word.end())
                continue
            start, after = _read_gno(text, at, "expected a tag or a GNO")
            if start < GNO_MIN:
                raise GtidParseError(text, at, "expected a GNO of at least 1")
            at = _skip_ws(text, after)
            end = start
            if at < size and text[at] == "-":
                end, at = _read_gno(text, _skip_ws(text, at + 1), "expected a GNO after '-'")
                at = _skip_ws(text, at)
            intervals.append((start, end + 1))  # end < start adds nothing (add_gtid_text)
        if at < size and text[at] != ",":
            raise GtidParseError(text, at, "expected ',', ':' or the end of the text")
    return {tsid: bounds for tsid in sorted(found) if (bounds := from_pairs(found[tsid]))}


def _skip_ws(text: str, at: int) -> int:
    """Return the offset of the first non-whitespace character at or after ``at``."""
    while at < len(text) and text[at] in _WS_CHARS:
        at += 1
    return at


def _read_gno(text: str, at: int, expected: str) -> tuple[int, int]:
    """Read decimal digits at ``at``; return the GNO (0 allowed) and the offset after it."""
    digits = _DIGITS_RE.match(text, at)
    if digits is None:
        raise GtidParseError(text, at, expected)
    if len(digits.group().lstrip("0")) > 19 or int(digits.group()) > GNO_MAX:
        raise GtidParseError(text, at, f"expected a GNO of at most {GNO_MAX}")
    return int(digits.group()), digits.end()


def parse_gtid(text: str) -> tuple[str, str, int]:
    """Return ``(uuid, tag, gno)`` of one GTID ``uuid:gno`` or ``uuid:tag:gno``."""
    match = _GTID_RE.fullmatch(text)
    if match is None:
        parse_exact(text)  # raises with the offset if the text is not even a GTID set
        raise GtidParseError(text, 0, "expected one GTID 'uuid:gno' or 'uuid:tag:gno'")
    uuid, tag, digits = match.groups()
    if len(digits.lstrip("0")) > 19 or not GNO_MIN <= int(digits) <= GNO_MAX:
        raise GtidParseError(text, match.start(3), f"expected a GNO from 1 to {GNO_MAX}")
    return uuid.lower(), (tag or "").lower(), int(digits)


def is_uuid(text: str) -> bool:
    """Return whether ``text`` is a 36-character dashed UUID (either case)."""
    return len(text) == 36 and _UUID_RE.fullmatch(text) is not None


def is_tag(text: str) -> bool:
    """Return whether ``text`` is a valid tag (1-32 of ``[A-Za-z_][A-Za-z0-9_]*``)."""
    return _TAG_RE.fullmatch(text) is not None


def format_bounds(bounds: Bounds) -> str:
    """Return ``bounds`` as MySQL prints intervals: ``1-5:7``, a single GNO without a dash."""
    return ":".join(
        [
            str(start) if end - start == 1 else f"{start}-{end - 1}"
            for start, end in zip(bounds[0::2], bounds[1::2], strict=True)
        ]
    )


def format_set(items: Iterable[tuple[Tsid, Bounds]], separator: str = UUID_SEPARATOR) -> str:
    """Return canonical GTID set text of ``items`` sorted by Tsid (empty set: ``''``).

    One UUID is printed once, untagged intervals first, then ``:tag:intervals`` per tag in tag
    order; ``separator`` (default comma and newline) goes between UUIDs only, as in
    ``Gtid_set::to_string``.
    """
    groups: list[str] = []
    current = ""
    pieces: list[str] = []
    for (uuid, tag), bounds in items:
        if uuid != current:
            if pieces:
                groups.append(":".join(pieces))
            pieces = [uuid]
            current = uuid
        if tag:
            pieces.append(tag)
        pieces.append(format_bounds(bounds))
    if pieces:
        groups.append(":".join(pieces))
    return separator.join(groups)
