"""MySQL's flow-control stats message, ``Pipeline_stats_member_message``, byte for byte.

The message is defined in MySQL's ``plugin/group_replication/src/pipeline_stats.cc`` and framed
as in ``gcs_plugin_messages.cc``. Every member of a Group Replication group broadcasts it once
per ``group_replication_flow_control_period`` (``Flow_control_module::flow_control_step`` calls
``Pipeline_stats_member_collector::send_stats_member_message``); it is how MySQL itself spreads
the counters of ``replication_group_member_stats``. grstats does not send it: this module exists
so that benchmarks can compare the size of grstats's gossip with MySQL's encoding of the same
values, and so that tests can check fidelity to MySQL's decoder.

Wire layout (``Plugin_gcs_message::encode_header``, then
``Pipeline_stats_member_message::encode_payload``), all integers little-endian::

    fixed header (16 bytes)  version u32 = 1 | header length u16 = 16 | message length u64 = 16
                             | cargo type u16 = 6
    items, in code order     type u16 | length u64 | value (length bytes)
      1  waiting certification  4 bytes (int32 cast to uint32)      read by position
      2  waiting apply          4 bytes (int32 cast to uint32)      read by position
      3  certified              8 bytes                             read by position
      4  applied                8 bytes                             read by position
      5  local                  8 bytes                             read by position
      6  negative certified     8 bytes
      7  rows validating        8 bytes
      8  committed all members  raw text, no terminator, may be empty
      9  last conflict free     raw text, no terminator, may be empty
      10 local rollback         8 bytes
      11 flow control mode      1 byte, raw 0 (DISABLED) or 1 (QUOTA)
      12 GTIDs present          1 byte, ASCII '1' or '0'
      13 sent timestamp         8 bytes, microseconds since the epoch (8.4/9.x only)

Text items carry bytes; this module maps them to ``str`` with UTF-8 and ``surrogateescape``, so
any bytes a peer sends decode, and re-encode to the same bytes. MySQL only ever puts ASCII GTID
text there.

Errors tree::

    ValueError
    ├── PipelineStatsError        malformed message bytes; names what is wrong and its byte offset
    └── PipelineStatsValueError   a field outside its wire range; the message starts "FIELD: "
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, replace
from typing import Any, Final

__all__ = [
    "FIXED_HEADER_SIZE",
    "FLOW_CONTROL_DISABLED",
    "FLOW_CONTROL_QUOTA",
    "ITEM_HEADER_SIZE",
    "PIPELINE_STATS_CARGO_TYPE",
    "PipelineStats",
    "PipelineStatsError",
    "PipelineStatsValueError",
    "decode",
    "encode",
    "encoded_size",
]

#: ``Plugin_gcs_message::WIRE_FIXED_HEADER_SIZE``: 4 + 2 + 8 + 2 bytes (gcs_plugin_messages.cc).
FIXED_HEADER_SIZE: Final = 16
#: ``WIRE_PAYLOAD_ITEM_HEADER_SIZE``: type u16 + length u64 (gcs_plugin_messages.cc).
ITEM_HEADER_SIZE: Final = 10
#: ``CT_PIPELINE_STATS_MEMBER_MESSAGE`` (``Plugin_gcs_message::enum_cargo_type``).
PIPELINE_STATS_CARGO_TYPE: Final = 6
#: ``Flow_control_mode`` values (pipeline_stats.h), sent raw in item 11 by ``encode_payload``.
FLOW_CONTROL_DISABLED: Final = 0
FLOW_CONTROL_QUOTA: Final = 1

_PLUGIN_GCS_MESSAGE_VERSION: Final = 1  # Plugin_gcs_message::PLUGIN_GCS_MESSAGE_VERSION
_CARGO_TYPE_OFFSET: Final = 14  # after version (4), header length (2), message length (8)
_HEADER = struct.Struct("<IHQH")
_ITEM_HEADER = struct.Struct("<HQ")
_INT4 = struct.Struct("<I")
_INT8 = struct.Struct("<Q")
_INT32_MIN: Final = -(1 << 31)
_INT32_MAX: Final = (1 << 31) - 1
_UINT64_MAX: Final = (1 << 64) - 1
_TEXT_CODEC: Final = "utf-8"
_TEXT_ERRORS: Final = "surrogateescape"

# Item codes (``Pipeline_stats_member_message::enum_payload_item_type``, pipeline_stats.h).
_WAITING_CERTIFICATION: Final = 1
_WAITING_APPLY: Final = 2
_CERTIFIED: Final = 3
_APPLIED: Final = 4
_LOCAL: Final = 5
_NEGATIVE_CERTIFIED: Final = 6
_ROWS_VALIDATING: Final = 7
_COMMITTED_ALL_MEMBERS: Final = 8
_LAST_CONFLICT_FREE: Final = 9
_LOCAL_ROLLBACK: Final = 10
_FLOW_CONTROL_MODE: Final = 11
_GTIDS_PRESENT: Final = 12
_SENT_TIMESTAMP: Final = 13

#: Items 1-5, which ``decode_payload`` reads by position: (code, field, width).
_POSITIONAL: Final = (
    (_WAITING_CERTIFICATION, "transactions_waiting_certification", 4),
    (_WAITING_APPLY, "transactions_waiting_apply", 4),
    (_CERTIFIED, "transactions_certified", 8),
    (_APPLIED, "transactions_applied", 8),
    (_LOCAL, "transactions_local", 8),
)
#: The 8-byte counters of the switch in ``Pipeline_stats_member_message::decode_payload``.
_SWITCH_INT8: Final = {
    _NEGATIVE_CERTIFIED: "transactions_negative_certified",
    _ROWS_VALIDATING: "transactions_rows_validating",
    _LOCAL_ROLLBACK: "transactions_local_rollback",
}
#: The text items of the switch in ``Pipeline_stats_member_message::decode_payload``.
_SWITCH_TEXT: Final = {
    _COMMITTED_ALL_MEMBERS: "transactions_committed_all_members",
    _LAST_CONFLICT_FREE: "transaction_last_conflict_free",
}
#: The 1-byte items of the switch in ``Pipeline_stats_member_message::decode_payload``.
_SWITCH_BYTE: Final = {
    _FLOW_CONTROL_MODE: "flow_control_mode",
    _GTIDS_PRESENT: "gtids_present",
}
_ITEM_NAMES: Final = {
    **{code: name for code, name, _ in _POSITIONAL},
    **_SWITCH_INT8,
    **_SWITCH_TEXT,
    **_SWITCH_BYTE,
}

_VERSION_RE = re.compile(r"([0-9]{1,3})\.([0-9]{1,3})(?:\.[0-9]{1,3})?")
_FIRST_SKIPPING_VERSION: Final = (8, 4)  # 8.4/9.x decode_payload skips unknown items


class PipelineStatsError(ValueError):
    """Malformed message bytes: what is wrong, and the byte offset where it was found.

    Attributes:
        offset: 0-based byte offset of the problem in the message.
        reason: what is wrong there.
    """

    def __init__(self, offset: int, reason: str) -> None:
        self.offset = offset
        self.reason = reason
        super().__init__(f"malformed Pipeline_stats_member_message: {reason} at offset {offset}")


class PipelineStatsValueError(ValueError):
    """A field outside its wire range; the message names the field and the value."""

    def __init__(self, field: str, value: object, expected: str) -> None:
        self.field = field
        self.value = value
        super().__init__(f"{field}: {value!r} is not {expected}")


@dataclass(frozen=True, slots=True, kw_only=True)
class PipelineStats:
    """The values one ``Pipeline_stats_member_message`` carries (``encode_payload``).

    Defaults are those of MySQL's decoding ``Pipeline_stats_member_message`` constructor
    (pipeline_stats.cc): counters 0, strings ``''``, ``gtids_present`` false, mode QUOTA, and no
    sent timestamp.

    Attributes:
        transactions_waiting_certification: item 1, the applier queue size; int32.
        transactions_waiting_apply: item 2; int32.
        transactions_certified: item 3; uint64, as are all 8-byte counters.
        transactions_applied: item 4.
        transactions_local: item 5.
        transactions_negative_certified: item 6.
        transactions_rows_validating: item 7.
        transactions_committed_all_members: item 8, GTID set text or ``''``.
        transaction_last_conflict_free: item 9, GTID text or ``''``.
        transactions_local_rollback: item 10.
        flow_control_mode: item 11, the raw byte: 0 DISABLED, 1 QUOTA; a decoder keeps any byte.
        gtids_present: item 12, whether items 8 and 9 carry fresh values.
        sent_timestamp_us: item 13, microseconds since the epoch (8.4/9.x), or None. MySQL
            never sends 0 and reads 0 as "no timestamp", so 0 is not accepted.
    """

    transactions_waiting_certification: int = 0
    transactions_waiting_apply: int = 0
    transactions_certified: int = 0
    transactions_applied: int = 0
    transactions_local: int = 0
    transactions_negative_certified: int = 0
    transactions_rows_validating: int = 0
    transactions_committed_all_members: str = ""
    transaction_last_conflict_free: str = ""
    transactions_local_rollback: int = 0
    flow_control_mode: int = FLOW_CONTROL_QUOTA
    gtids_present: bool = False
    sent_timestamp_us: int | None = None

    def __post_init__(self) -> None:
        for _, field, width in _POSITIONAL:
            if width == 4:
                _check_int(field, getattr(self, field), _INT32_MIN, _INT32_MAX, "an int32")
            else:
                _check_int(field, getattr(self, field), 0, _UINT64_MAX, "a uint64")
        for field in _SWITCH_INT8.values():
            _check_int(field, getattr(self, field), 0, _UINT64_MAX, "a uint64")
        for field in _SWITCH_TEXT.values():
            value = getattr(self, field)
            if not isinstance(value, str):
                raise PipelineStatsValueError(field, value, "a str")
            try:
                value.encode(_TEXT_CODEC, _TEXT_ERRORS)
            except UnicodeEncodeError:
                raise PipelineStatsValueError(field, value, "encodable as UTF-8") from None
        _check_int("flow_control_mode", self.flow_control_mode, 0, 255, "a byte")
        if not isinstance(self.gtids_present, bool):
            raise PipelineStatsValueError("gtids_present", self.gtids_present, "a bool")
        if self.sent_timestamp_us is not None:
            _check_int(
                "sent_timestamp_us",
                self.sent_timestamp_us,
                1,
                _UINT64_MAX,
                "None or microseconds since the epoch (0 is MySQL's 'no timestamp')",
            )


def _check_int(field: str, value: object, low: int, high: int, expected: str) -> None:
    """Raise PipelineStatsValueError unless ``value`` is an int (not a bool) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise PipelineStatsValueError(field, value, f"{expected} ({low} to {high})")


def _skips_unknown_items(version: str) -> bool:
    """Return True for 8.4 and later, whose ``decode_payload`` seeks past every item."""
    match = _VERSION_RE.fullmatch(version)
    if match is None:
        raise PipelineStatsValueError("version", version, "a MySQL version such as '8.0' or '8.4'")
    major_minor = (int(match[1]), int(match[2]))
    if major_minor < (8, 0):
        raise PipelineStatsValueError("version", version, "8.0 or later")
    return major_minor >= _FIRST_SKIPPING_VERSION


def _item(code: int, value: bytes) -> bytes:
    """Return one payload item: type u16, length u64, value (gcs_plugin_messages.cc)."""
    return _ITEM_HEADER.pack(code, len(value)) + value


def _text(value: str) -> bytes:
    return value.encode(_TEXT_CODEC, _TEXT_ERRORS)


def encode(stats: PipelineStats, *, version: str = "8.0") -> bytes:
    """Return MySQL's encoding of ``stats``: header, then items 1 to 12, then item 13 on 8.4+.

    The header's message-length field is 16, not the length of the message. MySQL sets
    ``m_msg_len`` to the fixed-header size in the ``Plugin_gcs_message`` constructor and none of
    the encoders update it; receivers do not read it (gcs_plugin_messages.cc). This
    function writes it the same way, so the bytes match what a MySQL member puts on the wire.

    Items 8 and 9 are always present, with length 0 when the strings are empty (``encode_payload``).
    Item 13 (the sent timestamp) is written only when ``version`` is 8.4 or later and
    ``stats.sent_timestamp_us`` is set; 8.0 has no item 13, so an 8.0 encoding drops it.

    MySQL fills item 11 from the sender's ``group_replication_flow_control_mode`` variable at
    encode time; here it is ``stats.flow_control_mode``.

    Args:
        stats: the values to send.
        version: the sender's MySQL version, ``"8.0"``, ``"8.4"`` or later (``"9.0"``).

    Raises:
        PipelineStatsValueError: ``version`` is not a MySQL version from 8.0 on.
    """
    timestamp = stats.sent_timestamp_us if _skips_unknown_items(version) else None
    parts = [
        _HEADER.pack(
            _PLUGIN_GCS_MESSAGE_VERSION,
            FIXED_HEADER_SIZE,
            FIXED_HEADER_SIZE,  # m_msg_len, never updated by the encoders (encode_header)
            PIPELINE_STATS_CARGO_TYPE,
        ),
        _item(
            _WAITING_CERTIFICATION,
            _INT4.pack(stats.transactions_waiting_certification & 0xFFFFFFFF),
        ),
        _item(_WAITING_APPLY, _INT4.pack(stats.transactions_waiting_apply & 0xFFFFFFFF)),
        _item(_CERTIFIED, _INT8.pack(stats.transactions_certified)),
        _item(_APPLIED, _INT8.pack(stats.transactions_applied)),
        _item(_LOCAL, _INT8.pack(stats.transactions_local)),
        _item(_NEGATIVE_CERTIFIED, _INT8.pack(stats.transactions_negative_certified)),
        _item(_ROWS_VALIDATING, _INT8.pack(stats.transactions_rows_validating)),
        _item(_COMMITTED_ALL_MEMBERS, _text(stats.transactions_committed_all_members)),
        _item(_LAST_CONFLICT_FREE, _text(stats.transaction_last_conflict_free)),
        _item(_LOCAL_ROLLBACK, _INT8.pack(stats.transactions_local_rollback)),
        _item(_FLOW_CONTROL_MODE, bytes((stats.flow_control_mode,))),
        _item(_GTIDS_PRESENT, b"1" if stats.gtids_present else b"0"),
    ]
    if timestamp is not None:
        parts.append(_item(_SENT_TIMESTAMP, _INT8.pack(timestamp)))
    return b"".join(parts)


def encoded_size(stats: PipelineStats, *, version: str = "8.0") -> int:
    """Return ``len(encode(stats, version=version))`` without building the bytes.

    That is 16 + 12 item headers of 10 bytes + 58 bytes of fixed-width values + both texts, plus
    18 for item 13 on 8.4+ when a timestamp is set (``encode_header``, ``encode_payload``).
    """
    size = FIXED_HEADER_SIZE + 12 * ITEM_HEADER_SIZE
    size += 4 + 4 + 8 * 6 + 1 + 1  # items 1-7, 10, 11, 12
    size += len(_text(stats.transactions_committed_all_members))
    size += len(_text(stats.transaction_last_conflict_free))
    if _skips_unknown_items(version) and stats.sent_timestamp_us is not None:
        size += ITEM_HEADER_SIZE + 8
    return size


def decode(data: bytes | bytearray | memoryview, *, version: str = "8.4") -> PipelineStats:
    """Decode a message as the receiving member's ``decode_payload`` does (pipeline_stats.cc).

    The fixed header is read but only its cargo type is checked; MySQL dispatches on it and
    ignores the version, header length and message length that ``decode_header`` reads
    (``Plugin_gcs_events_handler::on_message_received``). Payload reading starts at byte 16
    whatever the header-length field says, as ``decode_header`` does.

    Items 1 to 5 are read by position with no check of their type or length fields: each is a
    10-byte header then 4, 4, 8, 8, 8 value bytes. Then, while at least 10 bytes remain, an item
    header is read and codes 6 to 12 are applied, each only if ``offset + length <= end``. A
    known item whose length runs past the end is silently not applied, as in MySQL; it is not an
    error. Fixed-width values are read at their full width (8 bytes, or 1) from the item's start
    whatever its length field says, as ``uint8korr``/``*slider`` do.

    How the two receiver generations move past an item:

    * ``version`` 8.4 and later: the decoder always seeks ``length`` bytes past the item header,
      so unknown items (13, or a future code) are skipped cleanly. A known item that does not fit
      moves the reader past the end, which ends the loop. The sent timestamp is then read by a
      separate scan from byte 16, as ``get_sent_timestamp`` does: it walks every item by its
      length field, gives up (no timestamp) at an item that runs past the end, and takes item 13
      only if its length is 8. A timestamp of 0 reads as None, as MySQL's 0 means "none".
      Only the seek is known to be new in 8.4's ``decode_payload``; the case bodies are taken to
      be those of 8.0-late (apply only if the value fits, fixed-width values read at full width).
    * ``version`` 8.0: the decoder moves past an item only inside a known case whose value fits.
      This function emulates that faithfully, not as "stop at the first unknown item": after an
      unknown item, or a known one that does not fit, the next loop turn reads the item's
      *value bytes* as the next item header, so anything after it is misread (an unknown item
      whose value looks like an item header would even be applied). An 8.4 sender's item 13
      comes last, and its 8 value bytes are too few for another header, so an 8.0 receiver
      decodes 8.4 messages correctly (``decode_payload``). ``sent_timestamp_us`` is always None:
      8.0 has no ``get_sent_timestamp``.

    MySQL's C++ checks ``slider + length <= end`` with pointer arithmetic that can wrap for
    lengths near 2**64; here such a length simply does not fit.

    Args:
        data: the whole message, fixed header included.
        version: the receiver's MySQL version, ``"8.0"``, ``"8.4"`` or later (``"9.0"``).

    Raises:
        PipelineStatsError: the message is shorter than the fixed header or the five
            positional items, its cargo type is not 6, or a fixed-width value would be read past
            the end (MySQL would read outside the buffer). The message names the offset.
        PipelineStatsValueError: ``version`` is not a MySQL version from 8.0 on.
    """
    skips_unknown = _skips_unknown_items(version)
    data = bytes(data)  # a copy only if it is not bytes already
    end = len(data)
    if end < FIXED_HEADER_SIZE:
        raise PipelineStatsError(
            end, f"message of {end} bytes ends inside the 16-byte fixed header"
        )
    _, _, _, cargo_type = _HEADER.unpack_from(data)
    if cargo_type != PIPELINE_STATS_CARGO_TYPE:
        raise PipelineStatsError(
            _CARGO_TYPE_OFFSET,
            f"cargo type {cargo_type} is not {PIPELINE_STATS_CARGO_TYPE} (pipeline stats)",
        )
    changes: dict[str, Any] = {}
    at = FIXED_HEADER_SIZE
    for code, field, width in _POSITIONAL:
        value_at = at + ITEM_HEADER_SIZE
        if value_at + width > end:
            raise PipelineStatsError(
                end,
                f"message ends inside item {code} ({field}), read by position as bytes "
                f"{at} to {value_at + width - 1}",
            )
        changes[field] = _read_uint(data, value_at, width)
        at = value_at + width
    changes["transactions_waiting_certification"] = _int32(
        changes["transactions_waiting_certification"]
    )
    changes["transactions_waiting_apply"] = _int32(changes["transactions_waiting_apply"])
    while at + ITEM_HEADER_SIZE <= end:
        code, length = _ITEM_HEADER.unpack_from(data, at)
        at += ITEM_HEADER_SIZE
        applied = length <= end - at and _apply(changes, data, code, at, length)
        if skips_unknown or applied:
            at += length
    if skips_unknown:
        changes["sent_timestamp_us"] = _sent_timestamp(data)
    return replace(PipelineStats(), **changes)


def _apply(changes: dict[str, Any], data: bytes, code: int, at: int, length: int) -> bool:
    """Apply the value of item ``code`` at ``at`` to ``changes``; False if the code is unknown."""
    if code in _SWITCH_INT8:
        changes[_SWITCH_INT8[code]] = _read_fixed(data, code, at, 8)
    elif code in _SWITCH_TEXT:
        changes[_SWITCH_TEXT[code]] = data[at : at + length].decode(_TEXT_CODEC, _TEXT_ERRORS)
    elif code == _FLOW_CONTROL_MODE:
        changes["flow_control_mode"] = _read_fixed(data, code, at, 1)
    elif code == _GTIDS_PRESENT:
        changes["gtids_present"] = _read_fixed(data, code, at, 1) == ord("1")
    else:
        return False
    return True


def _read_fixed(data: bytes, code: int, at: int, width: int) -> int:
    """Read a ``width``-byte value of item ``code`` as MySQL does, whatever its length field."""
    if at + width > len(data):
        raise PipelineStatsError(
            len(data),
            f"item {code} ({_ITEM_NAMES[code]}) at offset {at - ITEM_HEADER_SIZE} needs "
            f"{width} value bytes from offset {at}, but the message ends",
        )
    return _read_uint(data, at, width)


def _read_uint(data: bytes, at: int, width: int) -> int:
    return int.from_bytes(data[at : at + width], "little")


def _int32(value: int) -> int:
    """Return the int32 that MySQL's cast of uint32 ``value`` gives."""
    return value - (1 << 32) if value > _INT32_MAX else value


def _sent_timestamp(data: bytes) -> int | None:
    """Find item 13 as ``Plugin_gcs_message::get_sent_timestamp`` does."""
    end = len(data)
    at = FIXED_HEADER_SIZE
    while end - at >= ITEM_HEADER_SIZE:
        code, length = _ITEM_HEADER.unpack_from(data, at)
        at += ITEM_HEADER_SIZE
        if end - at < length:
            return None
        if code == _SENT_TIMESTAMP:
            if length != 8:
                return None
            return _read_uint(data, at, 8) or None
        at += length
    return None
