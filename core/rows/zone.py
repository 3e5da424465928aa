"""The time zone TIMESTAMP(6) columns are shown in, named as MySQL's ``time_zone`` names it.

MySQL stores a TIMESTAMP in UTC and shows it in the session's ``time_zone``; grstats does the
same where it prints MySQL's text (the ``table`` and ``vertical`` formats, the SQL endpoint),
and its JSON always holds UTC (:func:`grstats.core.rows.domains.timestamp_iso`). A zone is
written as MySQL accepts it (``my_tz_find`` and ``str_to_offset``, sql/tztime.cc):

* ``SYSTEM``, any case: the machine's local zone (the ``TZ`` variable, else /etc/localtime);
* an offset ``+HH:MM`` or ``-HH:MM``, from ``-13:59`` to ``+14:00`` as MySQL 8.0.19 and later
  accept it, shown as ``+02:00`` whatever the digits given (``Time_zone_offset``'s name);
* a name of the tz database (``Europe/Paris``, ``UTC``), any case. MySQL knows names only once
  its time zone tables are loaded (``mysql_tzinfo_to_sql``); grstats reads them with Python's
  :mod:`zoneinfo`, from the system's tz database or the ``tzdata`` package. ``UTC`` is known
  without either.

Anything else is :class:`TimeZoneError`, with MySQL's message (error 1298).
"""

from __future__ import annotations

import functools
import re
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo

#: MySQL's ``time_zone`` name of the machine's local zone.
SYSTEM = "SYSTEM"
#: The offsets MySQL 8.0.19+ accepts, in seconds (``str_to_offset``, sql/tztime.cc).
MIN_OFFSET_S = -(13 * 3600 + 59 * 60)
MAX_OFFSET_S = 14 * 3600

#: ``str_to_offset``: a sign, hours, a colon, minutes (at least 4 characters in all).
_OFFSET_RE = re.compile(r"([+-])([0-9]*):([0-9]+)")


class TimeZoneError(ValueError):
    """A time zone MySQL would refuse; the message is MySQL's error 1298 (ER_UNKNOWN_TIME_ZONE)."""

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(f"Unknown or incorrect time zone: {text[:64]!r}")


@dataclass(frozen=True, slots=True)
class TimeZone:
    """A session time zone: its name as ``@@time_zone`` shows it, and its rules.

    Attributes:
        name: ``SYSTEM``, an offset as ``+02:00``, or a tz database name (``Europe/Paris``).
        rules: the zone's rules; None for ``SYSTEM``, which follows the machine's zone.
    """

    name: str
    rules: tzinfo | None

    def moment(self, micros: int) -> datetime:
        """The aware time of ``micros`` (µs since the epoch) in this zone."""
        at = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=micros)
        return at.astimezone(self.rules)

    def label(self, micros: int) -> str:
        """How a time of this zone is marked for people: ``UTC``, ``+02:00``, ``CEST``.

        An offset is its name (``+00:00`` is UTC); ``SYSTEM`` and names give the zone's
        abbreviation at ``micros`` (it changes with daylight saving time).
        """
        if self.name in ("+00:00", "UTC"):
            return "UTC"
        if isinstance(self.rules, timezone):
            return self.name
        return self.moment(micros).strftime("%Z") or self.name

    def offset_at(self, micros: int) -> timezone:
        """The fixed offset of this zone at ``micros``, as a :class:`datetime.timezone`."""
        offset = self.moment(micros).utcoffset()
        return timezone(offset or timedelta())


#: grstats' default: UTC, as ``+00:00`` (MySQL's own default is SYSTEM).
UTC_ZONE = TimeZone("+00:00", UTC)


def offset_name(seconds: int) -> str:
    """An offset as MySQL names it: ``+02:00``, ``-05:30`` (``Time_zone_offset``)."""
    sign = "-" if seconds < 0 else "+"
    hours, rest = divmod(abs(seconds), 3600)
    return f"{sign}{hours:02d}:{rest // 60:02d}"


@functools.lru_cache(maxsize=64)
def parse_time_zone(text: str) -> TimeZone:
    """The zone ``text`` names: ``SYSTEM``, ``+HH:MM``/``-HH:MM`` or a tz database name.

    Raises:
        TimeZoneError: MySQL would refuse ``text`` (and a name the tz database lacks).
    """
    if text.upper() == SYSTEM:
        return TimeZone(SYSTEM, None)
    if text.startswith(("+", "-")):
        return _offset(text)
    if text.upper() == "UTC":
        return TimeZone("UTC", UTC)
    return _named(text)


def _offset(text: str) -> TimeZone:
    """The fixed zone ``text`` (``+02:00``) as ``str_to_offset`` reads it (sql/tztime.cc)."""
    found = _OFFSET_RE.fullmatch(text)
    if len(text) < 4 or found is None:
        raise TimeZoneError(text)
    sign, hours, minutes = found.groups()
    if int(minutes) > 59:
        raise TimeZoneError(text)
    seconds = (int(hours or "0") * 60 + int(minutes)) * 60 * (-1 if sign == "-" else 1)
    if not MIN_OFFSET_S <= seconds <= MAX_OFFSET_S:
        raise TimeZoneError(text)
    return TimeZone(offset_name(seconds), timezone(timedelta(seconds=seconds)))


def _named(text: str) -> TimeZone:
    """The tz database's zone ``text``, any case (MySQL's names are case-insensitive)."""
    try:
        return TimeZone(text, zoneinfo.ZoneInfo(text))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        pass
    folded = {name.lower(): name for name in _available()}
    name = folded.get(text.lower())
    if name is None:
        raise TimeZoneError(text)
    try:
        return TimeZone(name, zoneinfo.ZoneInfo(name))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise TimeZoneError(text) from exc


@functools.cache
def _available() -> frozenset[str]:
    """The tz database's zone names (read once: it walks the database)."""
    return frozenset(zoneinfo.available_timezones())
