"""``RelayRule``: with member certificates, only a member's own agent speaks for it.

With mutual TLS a message a peer *sends* this agent (``Gossip.Push``, an Exchange request) is
bound to its sender's certificate: :mod:`grstats.agent.identity` refuses one that carries a
value of another member, so each value in it is heard *directly*, from its origin's own agent.
An Exchange *answer* is not bound: the dialing agent cannot see which member the answerer's
certificate names, and a third member's values in it are relays anyone holding some member's
certificate could forge. Per-origin signatures would prove each relayed value, at the cost of a
signature per value and a wire change; grstats takes the rule that needs neither (the choice and
what a stolen certificate can still do are in the README's security section):

* while member X's own agent was heard directly within ``direct_window_us`` (2 periods: its
  agent pushes every period), values of X are taken from that agent only, and relays of X are
  refused (counted as ``unproven``), so a forger cannot outbid X by raising its stamp;
* otherwise (X's agent cannot reach this agent, or is down) a relayed value of X is taken only
  under a stamp X itself could have made by now: an incarnation (its agent's start time, µs) at
  most ``ahead_us`` after this agent's clock, and a version at most ``versions_per_s`` a second
  above the version it was last heard at directly (of the same incarnation), or above 0 since
  its incarnation began, or since it was last heard directly when that is later (never of
  a run earlier than the one heard directly);
* a value heard directly replaces a relayed one whatever their stamps (:mod:`.state`).

Pure: the gossip state calls it with the time.
"""

from __future__ import annotations

from dataclasses import dataclass

from grstats.agent.gossip.updates import Key, Stamp

#: Versions an agent's values can advance by in a second, at most: each period (1 s or longer,
#: ``period_s``) its read records each kind of value at most once and its event log once
#: (``LocalMember.read``, ``EventLog.add``): ``len(Key)`` a period. Doubled, for a period
#: that runs late and the next that catches up.
VERSIONS_PER_S = 2 * len(Key)
#: How far a member's clock may be ahead of this agent's when its incarnation is judged: a
#: minute, far more than the half second that warns of clock skew (``clock_skewed``).
INCARNATION_AHEAD_US = 60_000_000


@dataclass(frozen=True, slots=True)
class Direct:
    """The highest stamp heard directly from a member's own agent, and when it was last heard."""

    stamp: Stamp
    at_us: int


@dataclass(frozen=True, slots=True)
class RelayRule:
    """When a value of a member that its own agent did not hand over is taken (module doc).

    Attributes:
        direct_window_us: how recently a member's agent was heard directly for relays of the
            member to be refused (the agent's ``2 * period_us``).
        versions_per_s: how fast a member's versions may grow while it is heard only by relays.
        ahead_us: how far a member's incarnation may be past this agent's clock.
    """

    direct_window_us: int
    versions_per_s: int = VERSIONS_PER_S
    ahead_us: int = INCARNATION_AHEAD_US

    @classmethod
    def for_period(cls, period_us: int) -> RelayRule:
        """The rule of an agent whose period is ``period_us``: its peers push every period."""
        return cls(direct_window_us=2 * period_us)

    def heard_directly(self, direct: Direct | None, now_us: int) -> bool:
        """Whether the member's own agent was heard directly within the window."""
        return direct is not None and now_us - direct.at_us <= self.direct_window_us

    def admits(self, direct: Direct | None, stamp: Stamp, now_us: int) -> bool:
        """Whether a relayed value of a member, stamped ``stamp``, may be taken now.

        ``direct`` is what was heard directly from the member's own agent (None: never).
        """
        if self.heard_directly(direct, now_us):
            return False  # its own agent speaks for it
        if stamp.incarnation > now_us + self.ahead_us:
            return False  # a run that has not begun yet
        base, since_us = 0, stamp.incarnation - self.ahead_us
        if direct is not None:
            if stamp.incarnation < direct.stamp.incarnation:
                return False  # an earlier run than the one its own agent spoke for: old news
            since_us = max(since_us, direct.at_us)
            if stamp.incarnation == direct.stamp.incarnation:
                base = direct.stamp.version
        seconds = 1 + max(0, now_us - since_us) // 1_000_000
        return stamp.version <= base + self.versions_per_s * seconds
