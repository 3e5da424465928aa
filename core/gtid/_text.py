"""GTID set text: MySQL's lenient parser and its canonical formatter (sql/rpl_gtid_set.cc).

Parsing has two paths that must agree. The fast path checks the whole text against one regular
expression of the grammar and then splits it with ``str`` methods; it handles valid text whose
numbers are plain decimal without leading zeros, which is all MySQL ever prints. Anything else
goes to :func:`parse_exact`, a scanner that follows ``Gtid_set::add_gtid_text`` step by step
(with the readers of :mod:`._scan`) and, for malformed text, raises :class:`GtidParseError`
naming the bad token and its offset.

Both take ``tags``: True reads MySQL 8.3+'s grammar (``mysql::gtid::Tag``), False that of MySQL
5.7 and 8.0, where a tag is malformed. On text without tags the two agree.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, TypeAlias

from grstats.core.gtid._bounds import GNO_END, GNO_MAX, GNO_MIN, Bounds, from_flat, from_pairs
from grstats.core.gtid._errors import GtidParseError
from grstats.core.gtid._scan import TAG_MAX_LENGTH, WS_CHARS, parse_gno, read_tag, skip_ws

if TYPE_CHECKING:
    from collections.abc import Iterable

#: ``(uuid, tag)``: MySQL's Tsid. Both lowercase; ``tag`` is ``''`` for untagged GTIDs.
Tsid: TypeAlias = tuple[str, str]
#: A parsed set: canonical bounds per Tsid, keys sorted, no empty bounds.
Parsed: TypeAlias = dict[Tsid, Bounds]

#: Default separator between UUIDs in MySQL's output (``Gtid_set::default_string_format``).
UUID_SEPARATOR = ",\n"

_ONE = 1
_DELETE_NUMERIC = str.maketrans("", "", "0123456789:-")
_WS = "[ \t\n\r\f\v]*"
_HEX = "[0-9A-Fa-f]"
_UUID = f"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}"
_TAG = f"[A-Za-z_][A-Za-z0-9_]{{0,{TAG_MAX_LENGTH - 1}}}(?![A-Za-z0-9_])"
_GNO = "[0-9]{1,19}"
_ELEMENT = f"(?:{_TAG}|{_GNO}{_WS}(?:-{_WS}{_GNO})?)"
_UUID_SET = f"{_UUID}{_WS}(?::{_WS}{_ELEMENT}{_WS})*"
_SET_RE = re.compile(f"{_WS}(?:,{_WS})*(?:{_UUID_SET}(?:(?:,{_WS})+{_UUID_SET})*(?:,{_WS})*)?")

_UUID_RE = re.compile(_UUID)
_TAG_RE = re.compile(f"[A-Za-z_][A-Za-z0-9_]{{0,{TAG_MAX_LENGTH - 1}}}")


def parse(text: str, *, tags: bool = True) -> Parsed:
    """Return the canonical bounds per Tsid of GTID set ``text``, as leniently as MySQL.

    ``tags=False`` reads the grammar of MySQL before 8.3, which has no tags.
    """
    compact = text.replace(",\n", ",").strip(WS_CHARS)  # MySQL's own output has no other space
    if any(space in compact for space in WS_CHARS):
        if _SET_RE.fullmatch(text) is None:
            return parse_exact(text, tags=tags)
        compact = "".join(text.split())  # whitespace only ever separates tokens: drop it
    fast = _parse_compact(compact, tags)
    return fast if fast is not None else parse_exact(text, tags=tags)


def _parse_compact(compact: str, tags: bool) -> Parsed | None:
    """Parse whitespace-free ``compact`` with C-level string methods, or return None to decline.

    Declining is always safe: :func:`parse_exact` then parses the original text.
    """
    found: dict[Tsid, list[int]] = {}
    for segment in compact.split(","):
        if segment and not _add_segment(found, segment, tags):
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


def _add_segment(found: dict[Tsid, list[int]], segment: str, tags: bool) -> bool:
    """Add one ``uuid[:intervals]`` segment to ``found``; return False if anything is off."""
    if _UUID_RE.match(segment) is None or (len(segment) > 36 and segment[36] != ":"):
        return False
    if len(segment) <= 37:  # a UUID with no intervals adds nothing; "uuid:" is for the scanner
        return len(segment) == 36
    uuid = segment[:36].lower()
    body = segment[37:]
    if body.translate(_DELETE_NUMERIC):  # tags (or garbage): split the body at each tag
        return tags and _add_tagged(found, uuid, body)
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
    for leading zeros (octal to ``strtoll``), which JSON refuses: the exact scanner then reads
    the text.
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


def parse_exact(text: str, *, tags: bool = True) -> Parsed:  # noqa: C901  (add_gtid_text)
    """Parse ``text`` following ``Gtid_set::add_gtid_text``; raise GtidParseError if malformed.

    Step by step as MySQL 8.4 (``tags=True``) or 8.0 (``tags=False``) reads it: spaces around
    every token, empty entries between commas, a UUID after each comma; after each ``:`` a tag
    (8.4: ``Tag::from_cstring``, see :func:`._scan.read_tag`) or an interval ``a`` / ``a-b``
    whose numbers ``parse_gno`` reads with ``strtoll`` in base 0. ``a`` must be at least 1;
    ``b`` may be anything from 0, and an interval with ``b < a`` (``5-3``, and ``1-`` where
    nothing is converted and ``b`` is 0) adds nothing.
    """
    found: dict[Tsid, list[tuple[int, int]]] = {}
    size = len(text)
    at = skip_ws(text, 0)
    while True:
        while at < size and text[at] == ",":  # empty specifications are allowed
            at = skip_ws(text, at + 1)
        if at >= size:
            break
        if _UUID_RE.match(text, at) is None:
            raise GtidParseError(text, at, "expected a UUID")
        uuid = text[at : at + 36].lower()
        intervals = found.setdefault((uuid, ""), [])
        at = skip_ws(text, at + 36)
        while at < size and text[at] == ":":
            at += 1
            tag = read_tag(text, at) if tags else None
            if tag is not None:  # spaces alone are an empty tag: untagged again
                intervals = found.setdefault((uuid, tag[0]), [])
                at = tag[1]
                continue
            number = skip_ws(text, at)  # where strtoll starts converting, for the messages
            start, after = parse_gno(text, at)
            if start <= 0:
                raise GtidParseError(text, number, _bad_start(start, after == at, tags))
            at = skip_ws(text, after)
            end = start
            if at < size and text[at] == "-":
                number = skip_ws(text, at + 1)
                end, after = parse_gno(text, at + 1)
                if end < 0:
                    raise GtidParseError(
                        text, number, f"expected a number from 0 to {GNO_MAX} after '-'"
                    )
                at = skip_ws(text, after)
            intervals.append((start, end + 1))  # end < start adds nothing (add_gtid_text)
        if at < size and text[at] != ",":
            raise GtidParseError(text, at, "expected ',', ':' or the end of the text")
    return {tsid: bounds for tsid in sorted(found) if (bounds := from_pairs(found[tsid]))}


def _bad_start(start: int, unread: bool, tags: bool) -> str:
    """Return why ``parse_gno``'s ``start`` cannot begin an interval."""
    if start < 0:
        return f"expected a GNO from 1 to {GNO_MAX}"
    if unread:
        return "expected a tag or a GNO" if tags else "expected a GNO"
    return "expected a GNO of at least 1"


def parse_gtid(text: str, *, tags: bool = True) -> tuple[str, str, int]:
    """Return ``(uuid, tag, gno)`` of one GTID ``uuid:gno`` or ``uuid:tag:gno``.

    As ``Gtid::parse_gtid_from_cstring`` (sql/rpl_gtid_misc.cc) reads it: spaces around each
    token, and the GNO read by ``parse_gno`` (``0x10`` is 16, ``010`` is 8) and at least 1.
    ``tags=False`` is MySQL 8.0's ``Gtid::parse``, which knows no tags.
    """
    size = len(text)
    at = skip_ws(text, 0)
    if _UUID_RE.match(text, at) is None:
        raise GtidParseError(text, at, "expected a UUID")
    uuid = text[at : at + 36].lower()
    at = _separator(text, skip_ws(text, at + 36))
    tag = ""
    read = read_tag(text, at) if tags else None
    if read is not None and read[0]:  # parse_tag_str: only a defined tag needs its ':'
        tag = read[0]
        at = _separator(text, read[1])
    gno, after = parse_gno(text, at)
    if gno <= 0:
        raise GtidParseError(text, at, f"expected a GNO from 1 to {GNO_MAX}")
    at = skip_ws(text, after)
    if at < size:
        raise GtidParseError(text, at, "expected the end of the GTID")
    return uuid, tag, gno


def _separator(text: str, at: int) -> int:
    """Return the offset after ``:`` and its spaces at ``at`` (``parse_gtid_separator``)."""
    if at >= len(text) or text[at] != ":":
        raise GtidParseError(text, at, "expected ':'")
    return skip_ws(text, at + 1)


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
