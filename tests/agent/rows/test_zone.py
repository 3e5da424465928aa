"""Time zones as MySQL's time_zone names them (sql/tztime.cc ``my_tz_find``, ``str_to_offset``)."""

from __future__ import annotations

import calendar
from datetime import UTC, datetime, timedelta

import pytest

from grstats.core.rows.domains import timestamp_iso, timestamp_text
from grstats.core.rows.zone import UTC_ZONE, TimeZoneError, parse_time_zone
from tests.inprocess import machine_zone

#: 2026-01-15 12:00:00.250000 UTC (winter in Paris: CET, +01:00).
WINTER_US = calendar.timegm((2026, 1, 15, 12, 0, 0)) * 1_000_000 + 250_000
#: 2026-07-15 12:00:00.000001 UTC (summer in Paris: CEST, +02:00).
SUMMER_US = calendar.timegm((2026, 7, 15, 12, 0, 0)) * 1_000_000 + 1


class TestParse:
    @pytest.mark.parametrize(
        ("text", "name", "offset_h"),
        [
            pytest.param("+02:00", "+02:00", 2, id="offset"),
            pytest.param("+2:00", "+02:00", 2, id="one-digit-hour-shown-with-two"),
            pytest.param("-05:30", "-05:30", -5.5, id="negative-half-hour"),
            pytest.param("-00:00", "+00:00", 0, id="minus-zero-is-plus-zero"),
            pytest.param("+14:00", "+14:00", 14, id="highest-since-8.0.19"),
            pytest.param("-13:59", "-13:59", -(13 + 59 / 60), id="lowest-since-8.0.19"),
        ],
    )
    def test_str_to_offset_accepts(self, text: str, name: str, offset_h: float) -> None:
        """An offset MySQL 8.0.19+ accepts is shown as ``Time_zone_offset`` names it."""
        zone = parse_time_zone(text)
        assert zone.name == name
        assert zone.offset_at(WINTER_US).utcoffset(None) == timedelta(hours=offset_h)
        assert zone.label(WINTER_US) == ("UTC" if name == "+00:00" else name)

    @pytest.mark.parametrize(
        "text",
        [
            "+14:01",
            "-14:00",
            "+02:60",
            "02:00",
            "+0200",
            "+02",
            "+02:",
            "+02:00 ",
            "",
            "Mars/Olympus",
            "../../etc/passwd",
            "local",
        ],
    )
    def test_refused_with_mysqls_1298_text(self, text: str) -> None:
        """What MySQL refuses is ER_UNKNOWN_TIME_ZONE, in its words, naming the value."""
        with pytest.raises(TimeZoneError) as raised:
            parse_time_zone(text)
        assert str(raised.value) == f"Unknown or incorrect time zone: {text!r}"

    def test_system_any_case(self) -> None:
        """SYSTEM, in any case, is the machine's zone, shown as SYSTEM."""
        for text in ("SYSTEM", "system", "System"):
            zone = parse_time_zone(text)
            assert (zone.name, zone.rules) == ("SYSTEM", None)

    def test_names_any_case_and_utc(self) -> None:
        """A tz database name is found in any case, as MySQL's are; UTC is always known."""
        assert parse_time_zone("europe/PARIS").name == "Europe/Paris"
        assert parse_time_zone("utc").label(WINTER_US) == "UTC"
        assert UTC_ZONE.name == "+00:00"

    def test_a_named_zone_follows_daylight_saving_time(self) -> None:
        """Europe/Paris is +01:00 CET in January and +02:00 CEST in July."""
        paris = parse_time_zone("Europe/Paris")
        assert (paris.label(WINTER_US), paris.label(SUMMER_US)) == ("CET", "CEST")
        assert timestamp_text(WINTER_US, paris) == "2026-01-15 13:00:00.250000"
        assert timestamp_text(SUMMER_US, paris) == "2026-07-15 14:00:00.000001"


class TestText:
    def test_offsets_and_the_zero_timestamp(self) -> None:
        """MySQL's text moves with the zone's offset; the zero TIMESTAMP stays all zeros."""
        assert timestamp_text(WINTER_US) == "2026-01-15 12:00:00.250000"
        assert timestamp_text(WINTER_US, parse_time_zone("+02:00")) == "2026-01-15 14:00:00.250000"
        assert timestamp_text(WINTER_US, parse_time_zone("-13:59")) == "2026-01-14 22:01:00.250000"
        assert timestamp_text(0, parse_time_zone("+02:00")) == "0000-00-00 00:00:00.000000"

    def test_json_is_iso_utc_with_z(self) -> None:
        """JSON's text is ISO 8601 UTC with Z and 6 decimals, parsed back to the same time."""
        text = timestamp_iso(WINTER_US)
        assert text == "2026-01-15T12:00:00.250000Z"
        parsed = datetime.fromisoformat(text)
        assert parsed.utcoffset() == timedelta(0)
        assert parsed == datetime(2026, 1, 15, 12, 0, 0, 250_000, tzinfo=UTC)
        assert timestamp_iso(SUMMER_US - 1) == "2026-07-15T12:00:00.000000Z"
        assert timestamp_iso(0) is None

    @pytest.mark.parametrize(
        ("tz", "text", "label"),
        [
            ("America/New_York", "2026-01-15 07:00:00.250000", "EST"),
            ("Asia/Kolkata", "2026-01-15 17:30:00.250000", "IST"),
        ],
    )
    def test_system_is_the_machines_zone(self, tz: str, text: str, label: str) -> None:
        """SYSTEM follows the TZ variable of the process, as MySQL's SYSTEM follows the host's."""
        with machine_zone(tz):
            zone = parse_time_zone("SYSTEM")
            assert (timestamp_text(WINTER_US, zone), zone.label(WINTER_US)) == (text, label)
