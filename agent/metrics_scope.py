"""Which members' series, and whether the group's, one agent's ``/metrics`` exports. Pure.

Every agent holds every member's rows (the gossip), so every agent could export them all;
scraped together, a group's agents would then give each member's series once per agent, and
a ``sum()`` over them would count each member that many times. With ``metrics.scope =
"own"`` (the default) each series comes from one agent, chosen the same way by every agent
from what the gossip tells all of them alike, so that scraping every agent of a group gives
each member's series once:

* an agent exports its own member's series always, while it runs;
* a member whose own agent is not heard (no news of it, direct or relayed, within the silence:
  :meth:`~grstats.agent.gossip.GossipState.connected`, the rule ``CONNECTED`` and the
  ``member_not_connected`` warning start from) is exported by the **lowest member id whose
  agent is heard**, the agent's own member counting as heard: the one agent every agent
  picks, since they hear the same agents through the gossip;
* the group's series (the verdict, quorum, tolerance, primary, thresholds, stable set) come
  from that same agent, the lowest member id heard.

So a member's series move when its agent goes silent (to the lowest heard, once the silence
``silence_periods * period_s`` has passed at that agent), come back when it is heard again
(at once from the member's own agent; the other stops at its first news of it, within a
period), and move on when the chosen agent goes silent in turn (after the silence too). While
the agents disagree on who is heard (the silence ends a period apart at two of them; a
partition), a member's series may come from two agents, each with its own ``instance``, or,
for the silence, from none, as the member's own agent stopped with it. So too when an agent
starts while another member's agent is down: that member's last row reaches it relayed, as
news, so it hears that agent for the silence after its start; if it is the lowest heard, the
member's series come from none for that long, as the stand-in stops once it hears that lower
agent (measured in tests/deploy/test_metrics_handover.py).

``metrics.scope = "all"`` exports every member's series and the group's from every agent: for a
Prometheus that scrapes one agent per group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from grstats.core.checks import check_choice
from grstats.core.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from grstats.agent.gossip import GossipState
    from grstats.agent.gossip.state import Heard

__all__ = [
    "ALL",
    "DEFAULT_METRICS",
    "EVERYTHING",
    "OWN",
    "SCOPES",
    "MetricsConfig",
    "Scope",
    "agents_heard",
    "exported",
]

OWN = "own"  #: each series from one agent of the group (the default)
ALL = "all"  #: every series from every agent (today's, for single-agent scrapes)
#: The values of ``metrics.scope``.
SCOPES = (OWN, ALL)


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricsConfig:
    """The ``[metrics]`` section: what ``/metrics`` exports; errors name ``metrics.<key>``.

    Attributes:
        scope: ``own`` (the default): each member's series and the group's from one agent,
            see the module; ``all``: every agent exports every member's and the group's.
    """

    scope: str = OWN

    def __post_init__(self) -> None:
        check_choice("metrics.scope", self.scope, SCOPES)

    @classmethod
    def from_table(cls, table: object) -> MetricsConfig:
        """Build the section from a TOML table; errors name ``metrics.<key>``."""
        if isinstance(table, MetricsConfig):
            return table
        if not isinstance(table, dict):
            raise ConfigError(f"metrics: {table!r} is not a table ([metrics])")
        try:
            return cls(**table)
        except TypeError as exc:
            raise ConfigError(f"metrics: {exc}") from exc


#: The ``[metrics]`` section's defaults (the section absent).
DEFAULT_METRICS = MetricsConfig()


@dataclass(frozen=True, slots=True)
class Scope:
    """What one build of ``/metrics`` exports.

    Attributes:
        members: the members whose series it exports; None: every member.
        group: whether it exports the group's series.
    """

    members: frozenset[str] | None
    group: bool

    def exports(self, member_id: str) -> bool:
        """Whether ``member_id``'s series are exported."""
        return self.members is None or member_id in self.members


#: Every member's series and the group's (``metrics.scope = "all"``).
EVERYTHING = Scope(None, group=True)


def exported(scope: str, own: str, members: Iterable[str], heard: Iterable[str]) -> Scope:
    """Which of ``members``' series, and whether the group's, the agent of ``own`` exports.

    ``heard`` holds the members whose agents this agent hears (its own included); ``own`` is
    ``''`` before the agent's first read, when it exports no member's series and not the
    group's. The rule is the module's: one definition, used by every agent alike.
    """
    if scope == ALL:
        return EVERYTHING
    live = {m for m in (*heard, own) if m}
    stands_in = bool(own) and min(live) == own
    mine = {m for m in members if m == own or (stands_in and m not in live)}
    return Scope(frozenset(mine), group=stands_in)


def agents_heard(
    state: GossipState, now_us: int, silence_us: int, offsets: Mapping[str, int] | None = None
) -> frozenset[str]:
    """The members whose agents this agent hears now, and its own.

    Heard: news of the agent within ``silence_us`` (the gossip's "connected") that the agent
    itself sent within it, on this agent's clock by its ``offsets`` and never later than it
    arrived (as :func:`grstats.agent.known.reported` moves a report). A dead agent's last
    values, relayed by a peer to an agent that has just started, are news to it but were sent
    long ago: without the second test that agent heard the dead one for the silence after
    its own start, and, the lowest heard, exported none of the dead one's member's series for
    that long (tests/deploy/test_metrics_handover.py measured 10 scrapes at 1 s).
    """
    moved = offsets or {}
    found = {
        m
        for m, origin in state.origins.items()
        if state.connected(m, now_us, silence_us)
        and now_us - _newest_sent(origin.values.values(), moved.get(m, 0)) <= silence_us
    }
    return frozenset(m for m in (*found, state.local_id) if m)


def _newest_sent(values: Iterable[Heard], offset_us: int) -> int:
    """When the newest of an origin's values was sent, on this agent's clock (0: none)."""
    return max(
        (
            max(0, min(heard.update.sent_at_us - offset_us, heard.received_at_us))
            for heard in values
        ),
        default=0,
    )
