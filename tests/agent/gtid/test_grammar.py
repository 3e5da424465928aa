"""GTID text in, case by case as MySQL reads it: 8.4 (tags) and 8.0 (no tags).

Each case cites the MySQL function that decides it. Sources: ``Gtid_set::add_gtid_text`` and
``parse_gno`` (sql/rpl_gtid_set.cc, 8.0 and 8.4), ``mysql::gtid::Tsid::from_cstring``
(libs/mysql/gtid/tsid.cpp), ``Tag::from_cstring`` (libs/mysql/gtid/tag.cpp),
``Uuid::parse`` (libs/mysql/gtid/uuid.cpp), ``Gtid::parse_gtid_from_cstring``
(sql/rpl_gtid_misc.cc). Where a mysql-test result shows the behaviour, the id names it:
``errors`` is binlog_gtid/r/binlog_gtid_errors.result, ``utils`` binlog_gtid/r/
binlog_gtid_utils.result, ``tag-t`` unittest/gunit/binlogevents/gtid_tag-t.cc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grstats.core.gtid import Gtid, GtidParseError, GtidSet, _scan
from grstats.core.gtid import _text as text_module
from tests.agent.gtid.model import Model, gtid_texts

if TYPE_CHECKING:
    from collections.abc import Callable

A = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
B = "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"
U = "3E11FA47-71CA-11E1-9E33-C80AA9429562"
#: The text MySQL refuses with ER_MALFORMED_GTID_SET_SPECIFICATION.
BAD = None


def _case(text: str, mysql84: str | None, mysql80: str | None, id: str) -> object:  # noqa: A002
    return pytest.param(text, mysql84, mysql80, id=id)


CASES = [
    # -- GNOs: parse_gno is strtoll(s, &end, 0), refused below 0 and from 2^63-1 on ----------
    _case(f"{A}:0x10", f"{A}:16", f"{A}:16", "parse_gno-hex-0x10-is-16-errors"),
    _case(f"{A}:0X1f-0x20", f"{A}:31-32", f"{A}:31-32", "parse_gno-hex-either-case"),
    _case(f"{A}:010", f"{A}:8", f"{A}:8", "parse_gno-leading-zero-is-octal-010-is-8-errors"),
    _case(f"{A}:007", f"{A}:7", f"{A}:7", "parse_gno-octal-007-is-7"),
    _case(f"{A}:0010-011", f"{A}:8-9", f"{A}:8-9", "parse_gno-octal-interval"),
    _case(f"{A}:{'0' * 30}1", f"{A}:1", f"{A}:1", "parse_gno-many-leading-zeros"),
    _case(f"{A}:08", BAD, BAD, "parse_gno-08-reads-0-then-stops"),
    _case(f"{A}:019", BAD, BAD, "parse_gno-019-reads-01-then-garbage-9"),
    _case(f"{A}:+5", f"{A}:5", f"{A}:5", "parse_gno-plus-sign"),
    _case(f"{A}:1-+5", f"{A}:1-5", f"{A}:1-5", "parse_gno-plus-sign-on-end"),
    _case(f"{A}:+ 5", BAD, BAD, "parse_gno-space-after-sign"),
    _case(f"{A}:0x", BAD, BAD, "parse_gno-0x-without-digits-is-0"),
    _case(f"{A}:1-0x", BAD, BAD, "parse_gno-end-0x-leaves-x"),
    _case(f"{A}:0b101", BAD, BAD, "parse_gno-no-0b-prefix-before-c23"),
    _case(f"{A}:-1", BAD, BAD, "parse_gno-negative"),
    _case(f"{A}:-0", BAD, BAD, "add_gtid_text-start-minus-zero-is-0"),
    _case(f"{A}:3--0", "", "", "add_gtid_text-end-minus-zero-adds-nothing"),
    _case(f"{A}:3--1", BAD, BAD, "parse_gno-negative-end"),
    _case(
        f"{A}:0x7ffffffffffffffe", f"{A}:{2**63 - 2}", f"{A}:{2**63 - 2}", "parse_gno-max-in-hex"
    ),
    _case(f"{A}:0x7fffffffffffffff", BAD, BAD, "parse_gno-2^63-1-in-hex"),
    _case(f"{A}:0x8000000000000000", BAD, BAD, "parse_gno-overflow-errors"),
    _case(f"{A}:1-9223372036854775807", BAD, BAD, "parse_gno-2^63-1-utils"),
    _case(f"{A}:99999999999999999999", BAD, BAD, "parse_gno-overflow-clamps-to-llong-max"),
    _case(f"{A}:0", BAD, BAD, "add_gtid_text-gno-0-utils"),
    _case(f"{A}:0-1", BAD, BAD, "add_gtid_text-start-0-utils"),
    # -- intervals: end < start adds nothing, and "1-" converts nothing, so its end is 0 ---
    _case(f"{A}:1-", "", "", "add_gtid_text-open-end-adds-nothing"),
    _case(f"{A}:5-,{B}:2", f"{B}:2", f"{B}:2", "add_gtid_text-open-end-then-comma"),
    _case(f"{A}:5-:7", f"{A}:7", f"{A}:7", "add_gtid_text-open-end-then-interval"),
    _case(f"{A}:1- x", BAD, BAD, "add_gtid_text-open-end-then-garbage"),
    _case(f"{A}:5-3", "", "", "add_gtid_text-reversed-adds-nothing"),
    _case(f"{A}:5-0", "", "", "add_gtid_text-end-0-adds-nothing"),
    _case(f"{A}:1-3:5-4", f"{A}:1-3", f"{A}:1-3", "add_gtid_text-reversed-utils"),
    _case(f"{A}:1-5:3-9:1-2:7", f"{A}:1-9", f"{A}:1-9", "add_gno_interval-overlaps-merge"),
    _case(f"{A}:1,{A}:1", f"{A}:1", f"{A}:1", "add_gno_interval-duplicates"),
    # -- spaces: SKIP_WHITESPACE between tokens, strtoll's own before a number -------------
    _case(f" {A} : 5 - 7 ,\n\t{B}:1 ", f"{A}:5-7,\n{B}:1", f"{A}:5-7,\n{B}:1", "skip_whitespace"),
    _case(f"{A}:5 7", BAD, BAD, "add_gtid_text-two-numbers"),
    _case(f"{A}:1\x00", BAD, BAD, "nul-is-refused-deliberately"),
    # -- commas, empty text and UUIDs (Uuid::parse with TEXT_LENGTH: dashed form only) -----
    _case("", "", "", "add_gtid_text-empty"),
    _case(" ,, , ", "", "", "add_gtid_text-only-commas"),
    _case(f"{A}:1,,{B}:2,", f"{A}:1,\n{B}:2", f"{A}:1,\n{B}:2", "add_gtid_text-redundant-commas"),
    _case(f"{A}:1-6,3-20", BAD, BAD, "add_gtid_text-uuid-after-comma"),
    _case(A, "", "", "add_gtid_text-bare-uuid"),
    _case(f"{A}:", BAD, BAD, "add_gtid_text-colon-at-end"),
    _case(f"{A}::1", BAD, BAD, "add_gtid_text-empty-element"),
    _case(f"{U}:1", f"{U.lower()}:1", f"{U.lower()}:1", "uuid_parse-uppercase"),
    _case(f"{A.replace('-', '')}:1", BAD, BAD, "uuid_parse-no-dashes"),
    _case(f"{{{A}}}:1", BAD, BAD, "uuid_parse-braces"),
    _case(f"+{A}:1", BAD, BAD, "add_gtid_text-plus-only-for-gtid_purged"),
    _case("ANONYMOUS", BAD, BAD, "add_gtid_text-anonymous-only-for-gtid_next"),
    # -- tags: 8.4 reads Tag::from_cstring after each ':'; 8.0 has only numbers there ------
    _case(f"{A}:TaG:1", f"{A}:tag:1", BAD, "tag_from_cstring-lowercased"),
    _case(f"{A}: _t9 :1", f"{A}:_t9:1", BAD, "tag_from_cstring-spaces-around-tag-t"),
    _case(f"{A}:t ag:1", BAD, BAD, "tag_from_cstring-space-inside-tag-t"),
    _case(f"{A}:admin1-23:1", BAD, BAD, "tag_from_cstring-dash-inside-tag-t"),
    _case(f"{A}:{'t' * 32}:1", f"{A}:{'t' * 32}:1", BAD, "tag_from_cstring-32-characters"),
    _case(f"{A}:{'t' * 33}:1", BAD, BAD, "tag_from_cstring-33-characters-tag-t"),
    _case(f"{A}:t", "", BAD, "tsid_from_cstring-tag-without-intervals"),
    _case(f"{A}:t:u:1", f"{A}:u:1", BAD, "add_gtid_text-last-tag-wins"),
    _case(f"{A}:t:1,{A}:2", f"{A}:2:t:1", BAD, "add_gtid_text-untagged-before-tags"),
    _case(f"{A}: :1", f"{A}:1", BAD, "tag_from_cstring-spaces-alone-are-an-empty-tag"),
    _case(f"{A}:t:1: :2", f"{A}:2:t:1", BAD, "tag_from_cstring-empty-tag-untags-again"),
    _case(f"{A}: ", "", BAD, "tag_from_cstring-spaces-alone-at-end"),
    _case(f"{A}:t:0x10", f"{A}:t:16", BAD, "parse_gno-after-a-tag"),
]


@pytest.mark.parametrize(("text", "mysql84", "mysql80"), CASES)
def test_gtid_set_text_as_mysql_reads_it(
    text: str, mysql84: str | None, mysql80: str | None
) -> None:
    """GtidSet.parse accepts what MySQL 8.4 / 8.0 accept, meaning the same, and refuses the rest."""
    for tags, expected in ((True, mysql84), (False, mysql80)):
        if expected is BAD:
            with pytest.raises(GtidParseError):
                GtidSet.parse(text, tags=tags)
            with pytest.raises(GtidParseError):
                text_module.parse_exact(text, tags=tags)
        else:
            assert str(GtidSet.parse(text, tags=tags)) == expected
            assert text_module.parse_exact(text, tags=tags) == text_module.parse(text, tags=tags)


GTID_CASES = [
    _case(f"\n    {A} \t : \t 10\n    ", f"{A}:10", f"{A}:10", "parse_gtid-spaces-errors"),
    _case(f"{A}:0x10", f"{A}:16", f"{A}:16", "parse_gtid-hex-errors"),
    _case(f"{A}:010", f"{A}:8", f"{A}:8", "parse_gtid-octal-errors"),
    _case(f"{A}:10#", BAD, BAD, "parse_gtid-garbage-errors"),
    _case(f"{A}:1-10", BAD, BAD, "parse_gtid-interval-errors"),
    _case(f"{A}:1:3", BAD, BAD, "parse_gtid-two-gnos-errors"),
    _case(f"{A}:1,{A}:3", BAD, BAD, "parse_gtid-two-gtids-errors"),
    _case("10", BAD, BAD, "parse_gtid-no-uuid-errors"),
    _case(f"{A}:", BAD, BAD, "parse_gtid-no-gno-errors"),
    _case(f"{A}:0", BAD, BAD, "parse_gtid-gno-0-errors"),
    _case(f"{A}:0x8000000000000000", BAD, BAD, "parse_gtid-overflow-errors"),
    _case(f"{A}:-33", BAD, BAD, "parse_gtid-negative-errors"),
    _case(f"{A}:66-33", BAD, BAD, "parse_gtid-reversed-interval-errors"),
    _case(f"{A}:33 33", BAD, BAD, "parse_gtid-two-numbers-errors"),
    _case(f"{A}-33", BAD, BAD, "parse_gtid-dash-for-colon-errors"),
    _case(f"{A}: TaG : 5", f"{A}:tag:5", BAD, "parse_tag_str-tag"),
    _case(f"{A}:tag", BAD, BAD, "parse_gtid-tag-without-gno"),
    _case(f"{A}:tag,5", BAD, BAD, "parse_gtid_separator-after-tag"),
]


@pytest.mark.parametrize(("text", "mysql84", "mysql80"), GTID_CASES)
def test_one_gtid_as_mysql_reads_it(text: str, mysql84: str | None, mysql80: str | None) -> None:
    """Gtid.parse accepts what Gtid::parse of MySQL 8.4 / 8.0 accepts, and refuses the rest."""
    for tags, expected in ((True, mysql84), (False, mysql80)):
        if expected is BAD:
            with pytest.raises(GtidParseError):
                Gtid.parse(text, tags=tags)
        else:
            assert str(Gtid.parse(text, tags=tags)) == expected


class TestStrtoll:
    def test_matches_the_c_library(self) -> None:
        """_scan.strtoll gives C's value and end on a fixed set of awkward inputs."""
        for text in ("0x10", " -0", "+", "0x", "0xg", "08", "019", "1e5", "  +0X1f:", "9" * 30):
            assert _scan.strtoll(text, 0) == _c_strtoll(text), text

    @given(st.text(alphabet=" \t\n\v\f\r+-0123456789abcdefxXABCDEFg:", max_size=30))
    def test_matches_the_c_library_on_noise(self, text: str) -> None:
        """On any ASCII text, _scan.strtoll agrees with the C library's strtoll in base 0."""
        assert _scan.strtoll(text, 0) == _c_strtoll(text)


@functools.cache
def _libc_strtoll() -> Callable[..., int]:
    """Return the C library's strtoll, the function MySQL's parse_gno calls (``my_strtoll``)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    function = libc.strtoll
    function.restype = ctypes.c_longlong
    function.argtypes = (ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int)
    return function


def _c_strtoll(text: str) -> tuple[int, int]:
    """Return ``strtoll(text, &end, 0)`` and ``end``'s offset, from the C library."""
    buffer = ctypes.create_string_buffer(text.encode("ascii"))
    end = ctypes.c_char_p()
    value = _libc_strtoll()(buffer, ctypes.byref(end), 0)
    address = ctypes.cast(end, ctypes.c_void_p).value
    assert address is not None
    return value, address - ctypes.addressof(buffer)


@given(gtid_texts(number_forms=True))
def test_every_strtoll_form_names_the_same_gnos(drawn: tuple[str, Model]) -> None:
    """GNOs written in hex, octal or with a '+' read as the numbers they are, on both paths."""
    text, model = drawn
    parsed = text_module.parse(text)
    assert parsed == text_module.parse_exact(text)
    held = {(i.uuid, i.tag, gno) for i in GtidSet.parse(text) for gno in range(i.start, i.end + 1)}
    assert held == model
