"""What an agent shares about its member: keyed values, each stamped with the origin's version.

Versioning follows scuttlebutt: every agent numbers the values it produces about its own member
with one counter, ``(incarnation, version)``. ``incarnation`` is the agent's start time, so a
restarted agent's fresh counter still orders after everything it sent before; and where the
wall clock went back since that earlier run, a peer's digest shows a stamp above the agent's
own, and the agent takes an incarnation above it (SWIM's refutation, see
:meth:`~grstats.agent.gossip.state.GossipState.refute`): no ordering depends on the clock being
monotonic across restarts. A receiver keeps,
per origin and key, the value with the highest stamp, and its digest (origin -> highest stamp)
tells a peer exactly which values it lacks, whoever produced them: that is how the row of a
member whose link to us is broken still arrives through the others (relay).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from grstats.core.gtid import GtidSet
    from grstats.core.model import GroupView, ServerSettings, SourceHealth
    from grstats.core.rows import ApplierStatusRow, EventRow, MemberStatsRow
    from grstats.core.rows.member_log import MemberLogRow


class Key(enum.StrEnum):
    """The values an origin shares, each versioned on its own.

    GR shares COUNTS in ``Pipeline_stats_member_message`` (pipeline_stats.cc) and GTID_EXECUTED
    in ``Certifier_broadcast_thread::broadcast_gtid_executed`` (certifier.cc).
    """

    COUNTS = "counts"  #: its replication_group_member_stats row, every period
    VIEW = "view"  #: its view of the membership, when it changes
    APPLIER = "applier"  #: its WL#7374 applier fields, every period they change
    #: its gtid_executed, sampled on each ``executed_interval_s`` mark of the wall clock (the
    #: same instants on every member), ``sent_at_us`` the sample's time
    GTID_EXECUTED = "gtid_executed"
    HEALTH = "health"  #: its source's health, when it changes
    SERVER = (
        "server"  #: its read_only, super_read_only and flow-control variables, when they change
    )
    #: its events (agent.events), the whole kept list, when one is added; sent only to agents
    #: of protocol revision 3 or later (older ones refuse a value kind they do not know)
    EVENTS = "events"
    #: its Group Replication error-log lines (agent.member_log), the whole kept list, when one
    #: is added; sent only to agents of protocol revision 5 or later
    LOG = "log"


@dataclass(frozen=True, slots=True, order=True)
class Stamp:
    """An origin's version of a value: ordered by incarnation, then version."""

    incarnation: int
    version: int


@dataclass(frozen=True, slots=True)
class ClockOffset:
    """How far one member's clock is from the estimating agent's, as one exchange measured it.

    ``offset_us`` is the member's clock minus the estimating agent's (NTP's offset from the
    four times of an exchange, RFC 5905 section 8), ``delay_us`` the exchange's round trip
    without the answerer's own time: the estimate is right within half of it.
    """

    member: str
    offset_us: int
    delay_us: int


@dataclass(frozen=True, slots=True)
class Counts:
    """The COUNTS value: the member's stats row and whether its GTID columns are fresh.

    Like GR's ``PIT_TRANSACTION_GTIDS_PRESENT`` (set in
    ``Pipeline_stats_member_collector::send_stats_member_message``, read in
    ``Pipeline_member_stats::update_member_stats``), the two GTID columns ride only on some
    messages; a receiver keeps the previous GTID columns when ``gtids_present`` is false.
    ``transactions_behind`` rides with them every period (None when the origin does not know
    it): see :class:`~grstats.core.model.MemberSnapshot`.

    ``offsets`` are the clock offsets the origin's agent estimated of the members it exchanges
    with directly, so that every agent knows the clock of a member it hears only through
    relays (:mod:`grstats.agent.gossip.clocks`). Like the GTID columns they ride only on some
    messages, those with ``offsets_present`` (with the GTID columns, and when they moved); a
    receiver keeps the previous ones when it is false.
    """

    row: MemberStatsRow
    gtids_present: bool
    transactions_behind: int | None = None
    offsets: tuple[ClockOffset, ...] = ()
    offsets_present: bool = False


@dataclass(frozen=True, slots=True)
class Events:
    """The EVENTS value: the origin's events as its agent keeps them, oldest first.

    Each is an :class:`~grstats.core.rows.EventRow` whose REPORTED_BY is the origin. The
    whole list travels each time one is added: a receiver holds the newest list, so an agent
    that was down, or restarted, has every member's kept events from one message each.
    """

    events: tuple[EventRow, ...] = ()


@dataclass(frozen=True, slots=True)
class LogLines:
    """The LOG value: the origin's Group Replication log lines as its agent keeps them.

    Each is a :class:`~grstats.core.rows.member_log.MemberLogRow` whose MEMBER_ID is the
    origin, oldest first. Like :class:`Events`, the whole kept list travels each time lines
    are added, so the lines of a member whose host died stay at every agent.
    """

    lines: tuple[MemberLogRow, ...] = ()


Value: TypeAlias = (
    "Counts | GroupView | ApplierStatusRow | GtidSet | SourceHealth | ServerSettings | Events"
    " | LogLines"
)


@dataclass(frozen=True, slots=True)
class Update:
    """One value of one origin at one stamp, as it travels between agents.

    ``sent_at_us`` is the origin's clock when it produced the value (freshness and the clock
    offset estimate); ``origin`` is the member's server_uuid.
    """

    origin: str
    stamp: Stamp
    key: Key
    value: Value
    sent_at_us: int
