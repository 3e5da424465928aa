"""``grstats query events``: what happened to the group's members, from any agent.

Every agent serves every member's events (``replication_group_events``, see
:mod:`grstats.core.events`), so one agent answers for the whole group, including events
from while it was down itself. The filters are the client's: ``--since`` (a duration back
from now, such as ``15m``, or a time, such as ``2026-11-28 03:12`` in ``--time-zone``) and
``--member`` (a MEMBER_ID: the events of that member). ``--follow`` asks again every second
and prints each new event once, as a line for people or a JSON object per line (JSON
Lines) for scripts, until Ctrl-C.
"""

from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from grstats.cli.errors import CliError
from grstats.core.rows import REPLICATION_GROUP_EVENTS, timestamp_text
from grstats.core.rows.domains import is_uuid
from grstats.core.rows.render import json_objects

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from grstats.core.rows import Column, Value
    from grstats.core.rows.zone import TimeZone

#: The table ``grstats query events`` reads.
EVENTS_TABLE = REPLICATION_GROUP_EVENTS.name
#: How often ``--follow`` asks again, in seconds (the agents' default period).
FOLLOW_PERIOD_S = 1.0
#: ``--since`` durations: a number and a unit.
_DURATION = re.compile(r"(?P<number>\d+(?:\.\d+)?)(?P<unit>s|m|h|d)")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: ``--since`` times: a date, and a time of day to the second or minute (in --time-zone).
_TIME_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d")

Row = tuple["Value", ...]
#: How a line shows an empty OLD_VALUE or NEW_VALUE (JOINED: nothing -> its view).
_NOTHING = "''"


def since_us(text: str | None, now_us: int, zone: TimeZone) -> int | None:
    """The earliest EVENT_TIME ``--since`` keeps, µs; None without it. CliError names it."""
    if text is None:
        return None
    cleaned = text.strip()
    found = _DURATION.fullmatch(cleaned)
    if found is not None:
        seconds = float(found["number"]) * _UNIT_S[found["unit"]]
        return now_us - int(seconds * 1_000_000)
    utc = cleaned.endswith("Z")
    for layout in _TIME_FORMATS:
        try:
            moment = datetime.strptime(cleaned.removesuffix("Z"), layout)  # noqa: DTZ007
        except ValueError:
            continue
        # The zone's offset at about that time (the naive time read as UTC is within a day).
        guess = int(moment.replace(tzinfo=UTC).timestamp() * 1_000_000)
        zoned = moment.replace(tzinfo=UTC if utc else zone.offset_at(guess))
        return int(zoned.timestamp() * 1_000_000)
    raise CliError(
        f"--since: {text!r} is neither a duration (30s, 15m, 2h, 7d) nor a time "
        "(2026-11-28 03:12:00, in --time-zone; 2026-11-28T03:12:00Z in UTC)",
        code=2,
    )


def check_member(text: str | None) -> str | None:
    """``--member``'s MEMBER_ID, lower case; CliError (exit 2) unless it is a UUID."""
    if text is None:
        return None
    if not is_uuid(text.strip()):
        raise CliError(f"--member: {text!r} is not a MEMBER_ID (a 36-character UUID)", code=2)
    return text.strip().lower()


@dataclass(frozen=True, slots=True)
class EventFilter:
    """Which events to show: from ``earliest_us`` on (None: all), of ``member`` (None: all)."""

    earliest_us: int | None = None
    member: str | None = None

    def rows(self, names: Sequence[str], rows: Sequence[Row]) -> list[Row]:
        """The rows of the events table this filter keeps, in their order."""
        at, who = names.index("EVENT_TIME"), names.index("MEMBER_ID")
        return [
            row
            for row in rows
            if (self.earliest_us is None or int(row[at] or 0) >= self.earliest_us)
            and (self.member is None or str(row[who]).lower() == self.member)
        ]


def event_line(names: Sequence[str], row: Row, zone: TimeZone) -> str:
    """One event for people: time, member, type, old -> new, who reported it, detail."""
    cell = dict(zip(names, row, strict=True))
    old, new = cell["OLD_VALUE"], cell["NEW_VALUE"]
    change = f"{old or _NOTHING} -> {new or _NOTHING}" if old or new else ""
    reporter = cell["REPORTED_BY"]
    by = "" if reporter == cell["MEMBER_ID"] else f" (seen by {reporter})"
    detail = str(cell["DETAIL"] or "")
    detail = f": {detail}" if detail and (change or by) else detail
    moment = timestamp_text(int(cell["EVENT_TIME"] or 0), zone)
    return f"{moment}  {cell['MEMBER_ID']}  {cell['EVENT_TYPE']:<16} {change}{by}{detail}"


def follow(
    fetch: Callable[[], tuple[list[Column], list[Row]]],
    keep: EventFilter,
    *,
    output_format: str,
    zone: TimeZone,
    period_s: float = FOLLOW_PERIOD_S,
) -> int:
    """Print the events, then each new one as it comes, until Ctrl-C (exit 0).

    ``fetch`` asks the agent once: the table's columns (a newer agent's unknown ones as text,
    :func:`grstats.cli.query.columns_named`) and rows.

    An agent that stops answering is said on stderr once; following goes on and prints what
    it missed when it answers again.
    """
    shown: set[Row] = set()
    failing = False
    try:
        while True:
            try:
                columns, rows = fetch()
            except CliError as exc:
                if not failing:
                    print(f"grstats: warning: {exc}; still asking", flush=True, file=sys.stderr)
                failing = True
                time.sleep(period_s)
                continue
            if failing:
                print("grstats: the agent answers again", flush=True, file=sys.stderr)
                failing = False
            names = [column.name for column in columns]
            for row in keep.rows(names, rows):
                if row in shown:
                    continue
                shown.add(row)
                if output_format == "json":
                    print(json.dumps(json_objects(columns, [row])[0]), flush=True)
                else:
                    print(event_line(names, row, zone), flush=True)
            time.sleep(period_s)
    except KeyboardInterrupt:
        return 0
