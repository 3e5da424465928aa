"""The character-level readers MySQL's GTID parsers are built from, one function each.

* :func:`skip_ws` is ``SKIP_WHITESPACE`` (sql/rpl_gtid.h) and ``Gtid::skip_whitespace``
  (sql/rpl_gtid_misc.cc): ``my_isspace`` on utf8mb3, the six ASCII spaces.
* :func:`strtoll` is C's ``strtoll(s, &end, 0)``, which ``my_strtoll`` (include/m_string.h) is on
  every platform but Windows.
* :func:`parse_gno` is ``parse_gno`` (sql/rpl_gtid_set.cc): ``strtoll`` in base 0, refused below 0
  and from ``GNO_END`` (2^63 - 1) on.
* :func:`read_tag` is ``mysql::gtid::Tag::from_cstring`` (libs/mysql/gtid/tag.cpp, MySQL 8.3+).

They work on ``str`` offsets where MySQL works on ``const char *``: an offset at ``len(text)`` is
MySQL's terminating NUL.
"""

from __future__ import annotations

import re

from grstats.core.gtid._bounds import GNO_END

#: Longest tag (``tag_max_length``, libs/mysql/gtid/gtid_constants.h, MySQL 8.3+).
TAG_MAX_LENGTH = 32
#: The spaces of ``my_isspace`` and C's ``isspace``: space, \t, \n, \v, \f and \r.
WS_CHARS = " \t\n\r\f\v"

_LLONG_MAX = (1 << 63) - 1
_LLONG_MIN = -(1 << 63)
#: More significant digits than this overflow a long long in every base strtoll reads.
_MAX_DIGITS = 22
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_HEX_RUN = re.compile("[0-9A-Fa-f]+")
_OCTAL_RUN = re.compile("[0-7]+")
_DECIMAL_RUN = re.compile("[0-9]+")
# Tag::is_character_valid: an ASCII letter or '_', then also digits; at most 32 are read.
_TAG_RUN = re.compile(f"[A-Za-z_][A-Za-z0-9_]{{0,{TAG_MAX_LENGTH - 1}}}")


def skip_ws(text: str, at: int) -> int:
    """Return the offset of the first non-space character at or after ``at``."""
    size = len(text)
    while at < size and text[at] in WS_CHARS:
        at += 1
    return at


def strtoll(text: str, at: int) -> tuple[int, int]:
    """Return ``(value, end)`` as ``strtoll(text + at, &end, 0)`` gives them.

    Spaces, an optional sign, then ``0x``/``0X`` and hex digits, or ``0`` and octal digits, or
    decimal digits: ``0x10`` is 16, ``010`` is 8, ``+5`` is 5, ``-0`` is 0, and ``08`` reads
    ``0`` and stops at ``8``. Out-of-range values clamp to LLONG_MIN/LLONG_MAX. When no digit
    is read nothing is converted and the result is ``(0, at)``, as C sets ``end`` to the start.
    ``0b`` is not a prefix (C libraries before C23; see the package docstring).
    """
    size = len(text)
    pos = skip_ws(text, at)
    negative = False
    if pos < size and text[pos] in "+-":
        negative = text[pos] == "-"
        pos += 1
    if text.startswith(("0x", "0X"), pos) and pos + 2 < size and text[pos + 2] in _HEX_DIGITS:
        base, digits = 16, _HEX_RUN.match(text, pos + 2)
    elif text.startswith("0", pos):
        base, digits = 8, _OCTAL_RUN.match(text, pos)
    else:
        base, digits = 10, _DECIMAL_RUN.match(text, pos)
    if digits is None:
        return 0, at
    significant = digits.group().lstrip("0")
    # Python refuses int() of very long decimal strings; such a run overflows anyway.
    value = _LLONG_MAX + 1 if len(significant) > _MAX_DIGITS else int(significant or "0", base)
    if negative:
        value = -value
    return max(_LLONG_MIN, min(_LLONG_MAX, value)), digits.end()


def parse_gno(text: str, at: int) -> tuple[int, int]:
    """Return ``(gno, end)`` as ``parse_gno`` reads them: ``(-1, at)`` below 0 or from 2^63 - 1.

    A 0 (also ``-0``, ``0x0`` or nothing converted) is returned as is: the callers decide.
    """
    value, end = strtoll(text, at)
    if value < 0 or value >= GNO_END:
        return -1, at
    return value, end


def read_tag(text: str, at: int) -> tuple[str, int] | None:
    """Return ``(tag, end)`` as ``Tag::from_cstring`` reads them at ``at``, or None for its 0.

    Spaces, up to 32 tag characters, spaces, and then there must be ``:``, ``,`` or the end of
    the text (Tag::is_valid_end_char), which is not consumed. The tag is lowercased. Spaces
    alone before such an end are a read of an **empty** tag: ``(' ', ':1')`` gives ``('', 1)``,
    which makes the GTIDs that follow untagged again (``Gtid_set::add_gtid_text``). None when
    nothing at all was read, or when anything else follows (``t ag``, a 33rd character).
    """
    start = skip_ws(text, at)
    run = _TAG_RUN.match(text, start)
    stop = run.end() if run is not None else start
    end = skip_ws(text, stop)
    if end == at or (end < len(text) and text[end] not in ":,"):
        return None
    return text[start:stop].lower(), end
