"""MySQL's Pipeline_stats_member_message: exact bytes, decoder quirks, malformed input.

It is encoded and decoded by ``encode_payload`` and ``decode_payload`` in MySQL's
``plugin/group_replication/src/pipeline_stats.cc``.
"""

from __future__ import annotations

import dataclasses
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.agent.pipeline_stats import (
    FLOW_CONTROL_DISABLED,
    FLOW_CONTROL_QUOTA,
    PipelineStats,
    PipelineStatsError,
    PipelineStatsValueError,
    decode,
    encode,
    encoded_size,
)

UINT64_MAX = 2**64 - 1
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
TIMESTAMP_US = 1_763_760_000_123_456  # 2025-11-21T21:20:00.123456Z

#: Typical values: the member that wrote every transaction (local = certified), between two
#: GTID broadcasts, so the message carries no GTID sets.
TYPICAL = PipelineStats(
    transactions_waiting_certification=0,
    transactions_waiting_apply=0,
    transactions_certified=10154,
    transactions_applied=5,
    transactions_local=10154,
    transactions_negative_certified=0,
    transactions_rows_validating=9247,
    transactions_local_rollback=0,
)


def header(cargo_type: int = 6, msg_len: int = 16, version: int = 1, hd_len: int = 16) -> bytes:
    """Build the fixed header field by field (``Plugin_gcs_message::encode_header``)."""
    return (
        struct.pack("<I", version)
        + struct.pack("<H", hd_len)
        + struct.pack("<Q", msg_len)
        + struct.pack("<H", cargo_type)
    )


def item(code: int, value: bytes, length: int | None = None) -> bytes:
    """Build one payload item; ``length`` overrides the length field (gcs_plugin_messages.cc)."""
    return (
        struct.pack("<H", code)
        + struct.pack("<Q", len(value) if length is None else length)
        + value
    )


def positional(
    w_cert: int = 0, w_apply: int = 0, cert: int = 0, applied: int = 0, local: int = 0
) -> bytes:
    """Build items 1-5, the ones ``decode_payload`` reads by position."""
    return (
        item(1, struct.pack("<I", w_cert))
        + item(2, struct.pack("<I", w_apply))
        + item(3, struct.pack("<Q", cert))
        + item(4, struct.pack("<Q", applied))
        + item(5, struct.pack("<Q", local))
    )


uint64s = st.one_of(st.sampled_from((0, 1, UINT64_MAX)), st.integers(0, UINT64_MAX))
int32s = st.one_of(
    st.sampled_from((0, INT32_MIN, INT32_MAX, -1)), st.integers(INT32_MIN, INT32_MAX)
)
uuids = st.uuids().map(str)
gtid_sets = st.lists(st.tuples(uuids, st.integers(1, 2**63 - 1)), max_size=3).map(
    lambda pairs: ",\n".join(f"{uuid}:1-{gno}" for uuid, gno in pairs)
)
single_gtids = st.tuples(uuids, st.integers(1, 2**63 - 1)).map(lambda p: f"{p[0]}:{p[1]}")
texts = st.one_of(
    st.just(""), gtid_sets, single_gtids, st.text(st.characters(codec="utf-8"), max_size=20)
)
stats = st.builds(
    PipelineStats,
    transactions_waiting_certification=int32s,
    transactions_waiting_apply=int32s,
    transactions_certified=uint64s,
    transactions_applied=uint64s,
    transactions_local=uint64s,
    transactions_negative_certified=uint64s,
    transactions_rows_validating=uint64s,
    transactions_committed_all_members=texts,
    transaction_last_conflict_free=texts,
    transactions_local_rollback=uint64s,
    flow_control_mode=st.sampled_from((FLOW_CONTROL_DISABLED, FLOW_CONTROL_QUOTA)),
    gtids_present=st.booleans(),
    sent_timestamp_us=st.one_of(st.none(), st.integers(1, UINT64_MAX)),
)


class TestEncode:
    def test_header_is_16_bytes_little_endian_encode_header(self) -> None:
        """The header is version 1, header length 16, message length 16 and cargo type 6, little-endian."""
        data = encode(TYPICAL)
        assert data[:16] == bytes.fromhex("01000000 1000 1000000000000000 0600")

    @pytest.mark.parametrize("version", ["8.0", "8.4"])
    def test_message_length_field_stays_16_encode_header(self, version: str) -> None:
        """m_msg_len is written as 16 whatever the real length, as MySQL's encoders leave it."""
        data = encode(
            dataclasses.replace(TYPICAL, transactions_committed_all_members=f"{UUID}:1-9"),
            version=version,
        )
        assert len(data) > 200
        assert struct.unpack_from("<Q", data, 6) == (16,)

    def test_exact_bytes_8_0_encode_header_and_payload(self) -> None:
        """A small 8.0 message is header then items 1-12 in code order, each type, length, value."""
        values = PipelineStats(
            transactions_waiting_certification=-2,
            transactions_waiting_apply=3,
            transactions_certified=4,
            transactions_applied=5,
            transactions_local=6,
            transactions_negative_certified=7,
            transactions_rows_validating=8,
            transactions_committed_all_members=f"{UUID}:1-10",
            transaction_last_conflict_free=f"{UUID}:10",
            transactions_local_rollback=11,
            flow_control_mode=FLOW_CONTROL_DISABLED,
            gtids_present=True,
            sent_timestamp_us=TIMESTAMP_US,  # 8.0 has no item 13: dropped
        )
        expected = (
            struct.pack("<I", 1)
            + struct.pack("<H", 16)
            + struct.pack("<Q", 16)
            + struct.pack("<H", 6)
            + struct.pack("<H", 1) + struct.pack("<Q", 4) + struct.pack("<I", 2**32 - 2)
            + struct.pack("<H", 2) + struct.pack("<Q", 4) + struct.pack("<I", 3)
            + struct.pack("<H", 3) + struct.pack("<Q", 8) + struct.pack("<Q", 4)
            + struct.pack("<H", 4) + struct.pack("<Q", 8) + struct.pack("<Q", 5)
            + struct.pack("<H", 5) + struct.pack("<Q", 8) + struct.pack("<Q", 6)
            + struct.pack("<H", 6) + struct.pack("<Q", 8) + struct.pack("<Q", 7)
            + struct.pack("<H", 7) + struct.pack("<Q", 8) + struct.pack("<Q", 8)
            + struct.pack("<H", 8) + struct.pack("<Q", 41) + f"{UUID}:1-10".encode("ascii")
            + struct.pack("<H", 9) + struct.pack("<Q", 39) + f"{UUID}:10".encode("ascii")
            + struct.pack("<H", 10) + struct.pack("<Q", 8) + struct.pack("<Q", 11)
            + struct.pack("<H", 11) + struct.pack("<Q", 1) + b"\x00"
            + struct.pack("<H", 12) + struct.pack("<Q", 1) + b"1"
        )  # fmt: skip
        assert encode(values, version="8.0") == expected
        assert encode(values) == expected  # 8.0 is the default layout
        assert encoded_size(values) == len(expected) == 16 + 12 * 10 + 58 + 41 + 39

    def test_exact_bytes_8_4_appends_item_13_encode_payload(self) -> None:
        """An 8.4 message is the 8.0 message plus item 13, 8 bytes of microseconds, at the end."""
        values = dataclasses.replace(TYPICAL, sent_timestamp_us=TIMESTAMP_US)
        expected_tail = (
            struct.pack("<H", 13) + struct.pack("<Q", 8) + struct.pack("<Q", TIMESTAMP_US)
        )
        data = encode(values, version="8.4")
        assert data == encode(values, version="8.0") + expected_tail
        assert encode(values, version="9.7") == data  # later versions keep the 8.4 layout

    def test_8_4_without_timestamp_has_no_item_13_encode_payload(self) -> None:
        """Item 13 is written only when a timestamp is given."""
        assert encode(TYPICAL, version="8.4") == encode(TYPICAL, version="8.0")

    def test_typical_message_size_encode_header_and_payload(self) -> None:
        """A typical message with empty GTID strings is 194 bytes in 8.0 and 212 in 8.4."""
        values_8_0 = 4 + 4 + 8 + 8 + 8 + 8 + 8 + 0 + 0 + 8 + 1 + 1  # items 1-12
        size_8_0 = 16 + 12 * 10 + values_8_0
        size_8_4 = size_8_0 + 10 + 8  # item 13
        stamped = dataclasses.replace(TYPICAL, sent_timestamp_us=TIMESTAMP_US)
        assert (size_8_0, size_8_4) == (194, 212)
        assert len(encode(TYPICAL, version="8.0")) == encoded_size(TYPICAL) == size_8_0
        assert (
            len(encode(stamped, version="8.4")) == encoded_size(stamped, version="8.4") == size_8_4
        )

    def test_empty_strings_keep_items_8_and_9_encode_payload(self) -> None:
        """Items 8 and 9 are always present, with length 0 when the strings are empty."""
        data = encode(PipelineStats())
        at = 16 + 14 + 14 + 18 * 5  # after items 1-7
        assert data[at : at + 20] == item(8, b"") + item(9, b"")

    def test_gtids_present_is_ascii_and_mode_is_raw_encode_payload(self) -> None:
        """gtids_present is byte 0x31/0x30 ('1'/'0') while the flow-control mode is raw 0x00/0x01."""
        quota_true = encode(PipelineStats(flow_control_mode=FLOW_CONTROL_QUOTA, gtids_present=True))
        disabled_false = encode(PipelineStats(flow_control_mode=FLOW_CONTROL_DISABLED))
        assert quota_true[-22:] == item(11, b"\x01") + item(12, b"\x31")
        assert disabled_false[-22:] == item(11, b"\x00") + item(12, b"\x30")

    def test_waiting_counts_are_int32_cast_to_uint32_encode_payload(self) -> None:
        """A negative int32 queue size travels as its uint32 cast and decodes back to itself."""
        values = PipelineStats(
            transactions_waiting_certification=-1, transactions_waiting_apply=INT32_MIN
        )
        data = encode(values)
        assert data[26:30] == b"\xff\xff\xff\xff"
        assert data[40:44] == b"\x00\x00\x00\x80"
        assert decode(data) == values


class TestRoundTrip:
    @given(stats)
    def test_round_trip_8_4_encode_and_decode_payload(self, values: PipelineStats) -> None:
        """decode(encode(x)) == x in the 8.4 layout, timestamp included."""
        assert decode(encode(values, version="8.4"), version="8.4") == values

    @given(stats)
    def test_round_trip_8_0_drops_only_the_timestamp_encode_and_decode_payload(
        self, values: PipelineStats
    ) -> None:
        """The 8.0 layout carries everything but item 13, which 8.0 does not have."""
        assert decode(encode(values, version="8.0"), version="8.0") == dataclasses.replace(
            values, sent_timestamp_us=None
        )

    @given(stats)
    def test_8_0_receiver_reads_8_4_sender_decode_payload(self, values: PipelineStats) -> None:
        """An 8.0 receiver decodes an 8.4 message to the same values, as item 13 comes last."""
        assert decode(encode(values, version="8.4"), version="8.0") == dataclasses.replace(
            values, sent_timestamp_us=None
        )

    @given(stats, st.sampled_from(["8.0", "8.4"]))
    def test_encoded_size_is_len_of_encode_header_and_payload(
        self, values: PipelineStats, version: str
    ) -> None:
        """encoded_size gives the length of the encoding without building it."""
        assert encoded_size(values, version=version) == len(encode(values, version=version))

    @given(st.binary(max_size=40))
    def test_any_text_bytes_survive_a_round_trip_encode_and_decode_payload(
        self, raw: bytes
    ) -> None:
        """Text items carry raw bytes: any bytes decode, and re-encode to the same bytes."""
        texts = item(8, raw) + item(9, b"\xff" + raw)
        data = header() + positional() + item(6, bytes(8)) + item(7, bytes(8)) + texts
        after_item_7 = 16 + 14 + 14 + 18 * 5
        assert encode(decode(data))[after_item_7:][: len(texts)] == texts


class TestDecoderCompatibility:
    def test_unknown_item_99_after_item_12_is_skipped_in_8_4_decode_payload(self) -> None:
        """An 8.4 receiver seeks past unknown item 99 and still finds item 13 after it."""
        stamped = dataclasses.replace(TYPICAL, gtids_present=True, sent_timestamp_us=TIMESTAMP_US)
        data = encode(dataclasses.replace(stamped, sent_timestamp_us=None))
        data += item(99, b"future value") + item(13, struct.pack("<Q", TIMESTAMP_US))
        assert decode(data, version="8.4") == stamped

    def test_8_4_message_decodes_in_8_0_to_same_counters_decode_payload(self) -> None:
        """The 8.0 decoder leaves item 13 unread yet gets every other value, because 13 comes last."""
        stamped = dataclasses.replace(TYPICAL, sent_timestamp_us=TIMESTAMP_US)
        decoded = decode(encode(stamped, version="8.4"), version="8.0")
        assert decoded == TYPICAL
        assert decoded.sent_timestamp_us is None

    def test_8_0_misreads_what_follows_an_unknown_item_decode_payload(self) -> None:
        """8.0 does not seek past an unknown item, so an item hidden in its value is applied."""
        hidden = item(12, b"1")  # gtids_present = '1', hidden inside item 99's value
        data = encode(TYPICAL) + item(99, hidden)
        assert decode(data, version="8.4").gtids_present is False
        assert decode(data, version="8.0").gtids_present is True

    def test_8_0_misreads_items_after_a_mid_message_item_13_decode_payload(self) -> None:
        """Were item 13 not last, 8.0 would misread the items after it while 8.4 reads them."""
        values = dataclasses.replace(
            TYPICAL, transactions_negative_certified=3, transactions_local_rollback=4
        )
        tail = encode(values)[16 + 14 + 14 + 18 * 3 :]  # items 6-12
        data = (
            header()
            + positional(0, 0, 10154, 5, 10154)
            + item(13, struct.pack("<Q", TIMESTAMP_US))
            + tail
        )
        assert decode(data, version="8.4") == dataclasses.replace(
            values, sent_timestamp_us=TIMESTAMP_US
        )
        misread = decode(data, version="8.0")
        assert misread != values
        assert misread.transactions_negative_certified == 0

    def test_first_five_items_are_positional_decode_payload(self) -> None:
        """Swapping the type codes of items 1 and 2 changes nothing: the values land by position."""
        values = dataclasses.replace(
            TYPICAL, transactions_waiting_certification=7, transactions_waiting_apply=9
        )
        data = bytearray(encode(values))
        struct.pack_into("<H", data, 16, 2)  # item 1 now says it is item 2
        struct.pack_into("<H", data, 30, 1)  # item 2 now says it is item 1
        assert decode(bytes(data)) == values

    def test_positional_items_ignore_their_length_fields_decode_payload(self) -> None:
        """Items 1-5 are read as 4, 4, 8, 8, 8 value bytes whatever their length fields say."""
        data = bytearray(encode(TYPICAL))
        struct.pack_into("<Q", data, 16 + 2, 999)  # item 1's length field
        struct.pack_into("<Q", data, 16 + 28 + 2, 0)  # item 3's length field
        assert decode(bytes(data)) == TYPICAL

    def test_defaults_when_items_6_to_12_are_absent_decode_payload(self) -> None:
        """A message of only the five positional items decodes with MySQL's defaults elsewhere."""
        decoded = decode(header() + positional(1, 2, 3, 4, 5))
        assert decoded == PipelineStats(
            transactions_waiting_certification=1,
            transactions_waiting_apply=2,
            transactions_certified=3,
            transactions_applied=4,
            transactions_local=5,
        )
        assert decoded.flow_control_mode == FLOW_CONTROL_QUOTA
        assert decoded.gtids_present is False

    @pytest.mark.parametrize("version", ["8.0", "8.4"])
    def test_only_ascii_one_means_gtids_present_decode_payload(self, version: str) -> None:
        """Item 12 is true only for byte '1'; a raw 0x01 reads as false."""
        base = header() + positional()
        assert decode(base + item(12, b"1"), version=version).gtids_present is True
        assert decode(base + item(12, b"\x01"), version=version).gtids_present is False

    @pytest.mark.parametrize("version", ["8.0", "8.4"])
    def test_mode_is_the_raw_byte_decode_payload(self, version: str) -> None:
        """Item 11 is cast from its raw byte: 0 is DISABLED, and other bytes are kept as sent."""
        base = header() + positional()
        assert (
            decode(base + item(11, b"\x00"), version=version).flow_control_mode
            == FLOW_CONTROL_DISABLED
        )
        assert decode(base + item(11, b"\x07"), version=version).flow_control_mode == 7
        assert decode(base + item(11, b"1"), version=version).flow_control_mode == 0x31

    @pytest.mark.parametrize("version", ["8.0", "8.4"])
    @pytest.mark.parametrize(
        ("late_item", "field"),
        [
            pytest.param(
                item(6, struct.pack("<Q", 42), length=1000),
                "transactions_negative_certified",
                id="int8",
            ),
            pytest.param(
                item(8, f"{UUID}:1".encode(), length=1000),
                "transactions_committed_all_members",
                id="text",
            ),
            pytest.param(item(11, b"\x00", length=2), "flow_control_mode", id="byte"),
        ],
    )
    def test_item_running_past_end_is_silently_not_applied_decode_payload(
        self, version: str, late_item: bytes, field: str
    ) -> None:
        """A known item whose length runs past the end keeps its default and raises nothing, as in MySQL."""
        decoded = decode(header() + positional(cert=5) + late_item, version=version)
        assert decoded == PipelineStats(transactions_certified=5)
        assert getattr(decoded, field) == getattr(PipelineStats(), field)

    def test_8_4_stops_at_an_item_running_past_end_decode_payload(self) -> None:
        """8.4 seeks past a too-long item, which ends the loop: nothing after it is read."""
        data = (
            header()
            + positional()
            + item(7, struct.pack("<Q", 1), length=30)
            + item(10, struct.pack("<Q", 2))
        )
        assert decode(data, version="8.4").transactions_rows_validating == 0
        assert decode(data, version="8.4").transactions_local_rollback == 0

    def test_later_copy_of_an_item_wins_decode_payload(self) -> None:
        """Each item found overwrites the field, so a repeated item's last copy wins."""
        data = (
            header() + positional() + item(7, struct.pack("<Q", 1)) + item(7, struct.pack("<Q", 2))
        )
        assert decode(data).transactions_rows_validating == 2

    @pytest.mark.parametrize(
        "fields",
        [
            pytest.param({"msg_len": 9999}, id="message-length"),
            pytest.param({"version": 7}, id="version"),
            pytest.param({"hd_len": 40}, id="header-length"),
        ],
    )
    def test_header_fields_other_than_cargo_are_ignored_decode_header(
        self, fields: dict[str, int]
    ) -> None:
        """Receivers do not rely on the header's version, header length or message length."""
        stamped = dataclasses.replace(TYPICAL, sent_timestamp_us=TIMESTAMP_US)
        data = header(**fields) + encode(stamped, version="8.4")[16:]
        assert decode(data) == stamped

    @pytest.mark.parametrize(
        ("timestamp_item", "expected"),
        [
            pytest.param(item(13, struct.pack("<Q", TIMESTAMP_US)), TIMESTAMP_US, id="length-8"),
            pytest.param(item(13, struct.pack("<I", 5)), None, id="length-4-ignored"),
            pytest.param(item(13, struct.pack("<Q", 0)), None, id="zero-means-none"),
            pytest.param(item(13, struct.pack("<Q", 5), length=9), None, id="past-end"),
        ],
    )
    def test_sent_timestamp_requires_length_8_get_sent_timestamp(
        self, timestamp_item: bytes, expected: int | None
    ) -> None:
        """The timestamp scan takes item 13 only with length 8, and 0 or a broken item means none."""
        data = encode(TYPICAL) + timestamp_item
        assert decode(data, version="8.4").sent_timestamp_us == expected
        assert decode(data, version="8.0").sent_timestamp_us is None

    def test_timestamp_scan_gives_up_at_a_broken_earlier_item_get_sent_timestamp(self) -> None:
        """get_sent_timestamp walks items by length, so a too-long item before 13 hides it."""
        data = (
            header()
            + positional()
            + item(99, b"", length=10**6)
            + item(13, struct.pack("<Q", TIMESTAMP_US))
        )
        assert decode(data).sent_timestamp_us is None


class TestMalformed:
    @pytest.mark.parametrize(
        ("data", "offset", "words"),
        [
            pytest.param(b"", 0, "fixed header", id="empty"),
            pytest.param(header()[:10], 10, "fixed header", id="truncated-header"),
            pytest.param(header(), 16, "item 1", id="header-only"),
            pytest.param(header() + positional()[:13], 29, "item 1", id="inside-item-1"),
            pytest.param(header() + positional()[:14], 30, "item 2", id="item-2-missing"),
            pytest.param(header() + positional()[:-1], 97, "item 5", id="inside-item-5"),
            pytest.param(
                header(cargo_type=5) + positional(), 14, "cargo type 5", id="wrong-cargo-type"
            ),
            pytest.param(
                header(cargo_type=0x0600) + positional(),
                14,
                "cargo type 1536",
                id="big-endian-cargo-type",
            ),
            pytest.param(
                header() + positional() + item(6, b"\x01\x02"),
                110,
                "item 6",
                id="int8-value-past-end",
            ),
            pytest.param(
                header() + positional() + item(12, b""), 108, "item 12", id="byte-value-past-end"
            ),
        ],
    )
    @pytest.mark.parametrize("version", ["8.0", "8.4"])
    def test_malformed_input_names_the_offset_decode_header_and_payload(
        self, data: bytes, offset: int, words: str, version: str
    ) -> None:
        """Bytes MySQL could not decode raise PipelineStatsError naming what is wrong and where."""
        with pytest.raises(PipelineStatsError, match=f"{words}.* at offset {offset}$") as caught:
            decode(data, version=version)
        assert caught.value.offset == offset
        assert isinstance(caught.value, ValueError)

    @given(stats, st.data())
    def test_truncated_or_corrupted_messages_never_raise_anything_else_decode_payload(
        self, values: PipelineStats, data: st.DataObject
    ) -> None:
        """Any cut or byte flip of a valid message decodes or raises PipelineStatsError, nothing else."""
        message = bytearray(encode(values, version="8.4"))
        cut = data.draw(st.integers(0, len(message)))
        flips = data.draw(
            st.lists(st.tuples(st.integers(0, len(message) - 1), st.integers(0, 255)), max_size=4)
        )
        for at, byte in flips:
            message[at] = byte
        for version in ("8.0", "8.4"):
            try:
                decoded = decode(bytes(message[:cut]), version=version)
            except PipelineStatsError:
                continue
            assert isinstance(decoded, PipelineStats)


class TestValidation:
    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("transactions_waiting_certification", INT32_MAX + 1),
            ("transactions_waiting_certification", INT32_MIN - 1),
            ("transactions_waiting_apply", 2**32 - 1),
            ("transactions_certified", -1),
            ("transactions_applied", UINT64_MAX + 1),
            ("transactions_local", 1.0),
            ("transactions_negative_certified", True),
            ("transactions_rows_validating", -5),
            ("transactions_local_rollback", UINT64_MAX + 1),
            ("transactions_committed_all_members", b"bytes"),
            ("transaction_last_conflict_free", "\ud800"),
            ("flow_control_mode", 256),
            ("flow_control_mode", -1),
            ("gtids_present", 1),
            ("sent_timestamp_us", 0),
            ("sent_timestamp_us", UINT64_MAX + 1),
        ],
    )
    def test_out_of_range_field_names_field_and_value(self, field: str, value: object) -> None:
        """A value the wire cannot carry raises PipelineStatsValueError naming the field and the value."""
        with pytest.raises(PipelineStatsValueError, match=f"^{field}: ") as caught:
            PipelineStats(**{field: value})  # type: ignore[arg-type]
        assert caught.value.field == field
        assert repr(value) in str(caught.value)

    def test_extremes_are_accepted_encode_payload(self) -> None:
        """The ends of each wire range are valid values."""
        top = PipelineStats(
            transactions_waiting_certification=INT32_MIN,
            transactions_waiting_apply=INT32_MAX,
            transactions_certified=UINT64_MAX,
            transactions_applied=UINT64_MAX,
            transactions_local=UINT64_MAX,
            transactions_negative_certified=UINT64_MAX,
            transactions_rows_validating=UINT64_MAX,
            transactions_local_rollback=UINT64_MAX,
            flow_control_mode=255,
            sent_timestamp_us=UINT64_MAX,
        )
        assert decode(encode(top, version="8.4")) == top

    @pytest.mark.parametrize("version", ["8", "5.7", "eight", "8.0.x", ""])
    def test_unknown_version_is_rejected(self, version: str) -> None:
        """Encoding or decoding for something that is not MySQL 8.0 or later raises PipelineStatsValueError."""
        with pytest.raises(PipelineStatsValueError, match=r"^version: "):
            encode(TYPICAL, version=version)
        with pytest.raises(PipelineStatsValueError, match=r"^version: "):
            decode(encode(TYPICAL), version=version)

    def test_is_frozen(self) -> None:
        """PipelineStats is an immutable value."""
        with pytest.raises(dataclasses.FrozenInstanceError):
            TYPICAL.transactions_local = 1  # type: ignore[misc]
