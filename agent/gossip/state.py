"""``GossipState``: what one agent knows of every member, and the rules for merging news.

Pure: no I/O, no clock, no asyncio. The agent's loops call it with the time and with what the
transport delivered; tests drive it directly. Rules:

* per origin and key, the value with the highest :class:`Stamp` wins; an older or equal one is
  counted as stale and dropped, so replays and relays are harmless;
* a COUNTS value without fresh GTID columns keeps the previous ones, as GR's
  ``Pipeline_member_stats::update_member_stats`` does, and one without clock offsets the
  previous offsets;
* only members that some member's Group Replication membership lists (or that the agent
  already knows) get values: a message about an unknown member never creates one, unless it
  carries that member's own view listing it in a group a held view names (a member that left
  the group, whose agent runs), and it was not forgotten. VIEW values of known members are
  merged first, so a batch may introduce a member and carry its values;
* values about the local member come from its own source only: a peer cannot overwrite them
  (but an agent takes back its member's events and log lines of an earlier run from a peer
  until it records its own, so that a registry lost loses no history; log lines of an earlier
  run heard after that are set aside, :attr:`GossipState.earlier_log`, to be merged);
  but a peer holding one stamped above the agent's own (an earlier run of the agent, on a
  clock since stepped back) makes the agent refute it: it takes an incarnation above that
  stamp and records its values again, which then order after everything peers hold
  (SWIM's refutation; :meth:`GossipState.refute`);
* an origin is *fresh* when its stamp advanced recently, whichever peer relayed it: an agent
  silent for ``silence_us`` is not connected (WL#2860's CONNECTED), and its values stay;
* with member certificates (:attr:`GossipState.relays` set), a value of a member is taken from
  its own agent (the merge's ``speaker``), or as a relay only while that agent is not heard
  directly and under a stamp it could have made; a value heard directly replaces a relayed
  one whatever their stamps (:mod:`grstats.agent.gossip.relays`).
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

from grstats.agent.gossip.relays import Direct, RelayRule
from grstats.agent.gossip.updates import Counts, Key, Stamp, Update
from grstats.agent.limits import DEFAULT_LIMITS
from grstats.core.model import GroupView

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from grstats.agent.gossip.updates import Value

#: What ``via`` says for values the agent read from its own source.
LOCAL = "local"
#: What ``via`` says for values remembered by the registry (:meth:`GossipState.seed`), held
#: until news of their member comes in this run.
REGISTRY = "registry"

#: Above any incarnation an agent's clock gives (µs since the epoch, year 2262): a stamp at or
#: past it is not refuted, so a hostile peer cannot push the incarnation past the wire's uint64.
MAX_INCARNATION = 2**63

#: The values that are history an agent takes back from its peers after a restart.
_HISTORY = frozenset((Key.EVENTS, Key.LOG))

#: Per origin, per key, the stamp of the value held.
Digest: TypeAlias = "Mapping[str, Mapping[Key, Stamp]]"


@dataclass(slots=True)
class Heard:
    """A value as this agent holds it: the update, when it arrived and who handed it over.

    ``direct``: handed over by its origin's own agent (proven only with member certificates).
    """

    update: Update
    received_at_us: int
    via: str
    direct: bool = False


@dataclass(slots=True)
class Origin:
    """Everything known of one member: its highest stamp and its latest value per key.

    ``direct`` is the highest stamp heard from the member's own agent and when it last spoke
    (None: never, in this run): what :class:`~grstats.agent.gossip.relays.RelayRule` judges
    relays of it by.
    """

    member_id: str
    stamp: Stamp
    first_seen_us: int
    fresh_at_us: int
    values: dict[Key, Heard] = field(default_factory=dict)
    direct: Direct | None = None


@dataclass(frozen=True, slots=True)
class MergeResult:
    """What a merge did: values taken, stale ones dropped, origins refused as unknown.

    ``refuted`` is the stamp of a value about the local member that outranked the agent's own
    (see :meth:`GossipState.refute`), None when there was none. ``unproven`` counts relayed
    values the :class:`~grstats.agent.gossip.relays.RelayRule` refused.
    """

    accepted: int = 0
    stale: int = 0
    unknown: tuple[str, ...] = ()
    refuted: Stamp | None = None
    unproven: int = 0


class GossipState:
    """The agent's knowledge of all members, versioned per origin (scuttlebutt).

    ``local_id`` is the local member's server_uuid and ``incarnation`` the agent's start time
    in µs, which orders its values after those of its previous runs (raised by
    :meth:`refute` when a clock stepped back makes it lower than theirs). At most ``max_origins``
    members get values from peers: past that, news of a member not yet held is refused as
    unknown, so no stream of views listing new members makes the state grow without bound.
    ``relays`` is set when peers' messages are bound to member certificates (mutual TLS): then
    only a member's own agent speaks for it (:mod:`grstats.agent.gossip.relays`); None takes
    every relay by its stamp.
    """

    def __init__(
        self, local_id: str, incarnation: int, max_origins: int = DEFAULT_LIMITS.max_members
    ) -> None:
        self.local_id = local_id
        self.incarnation = incarnation
        self.max_origins = max_origins
        self.relays: RelayRule | None = None
        self._version = 0
        self.origins: dict[str, Origin] = {}
        self.changes = 0  #: grows whenever a value is stored or dropped (for caches)
        #: members dropped by :meth:`forget` (lower case): their own views no longer make them known
        self.forgotten: set[str] = set()
        #: a peer's LOG value of the local member from an earlier run of this agent, heard once
        #: this run holds its own: lines its server may no longer have (a restarted server's
        #: error_log starts empty), which :class:`~grstats.agent.member_log.MemberLog` merges
        #: into the member's lines (and then clears)
        self.earlier_log: Update | None = None

    # -- local values --------------------------------------------------------------------

    def record_local(self, key: Key, value: Value, now_us: int) -> Update:
        """Record a value read from the local source under the next stamp, and return it.

        The stamp is above every one held of the local member: values peers gave of it (an
        earlier run of the agent, whose clock may have been ahead) rank below it.
        """
        origin = self.origins.get(self.local_id)
        if origin is not None:
            self._outrank(origin.stamp)
        self._version += 1
        update = Update(self.local_id, Stamp(self.incarnation, self._version), key, value, now_us)
        self._store(self._origin(self.local_id, update.stamp, now_us), update, now_us, LOCAL)
        return update

    def refute(self, digest: Digest, now_us: int) -> Stamp | None:
        """Outrank a peer's stamp for the local member that is above the agent's own.

        A peer's ``digest`` holding a value of the local member stamped above the agent's
        latest stamp can only come from an earlier run of this agent whose clock was ahead of
        today's (its incarnation is its start time): peers would keep that value and drop
        every new one as stale. As SWIM refutes a suspicion with a higher incarnation, the
        agent takes the incarnation just above that stamp's and records the values its source
        gave again (same values, same ``sent_at_us``, new stamps). Returns the outranked stamp,
        else None.
        """
        held = digest.get(self.local_id)
        return self._refute(max(held.values()), now_us) if held else None

    def _outrank(self, stamp: Stamp) -> bool:
        """Take an incarnation above ``stamp`` if it is above the agent's own stamp."""
        if stamp <= Stamp(self.incarnation, self._version) or stamp.incarnation >= MAX_INCARNATION:
            return False  # nothing to outrank, or a stamp no agent's clock makes (a hostile peer)
        self.incarnation = stamp.incarnation + 1
        self._version = 0
        return True

    def _refute(self, stamp: Stamp, now_us: int) -> Stamp | None:
        if not self._outrank(stamp):
            return None
        origin = self.origins.get(self.local_id)
        if origin is not None:
            for heard in [h for h in origin.values.values() if h.via == LOCAL]:
                self._version += 1
                again = dataclasses.replace(
                    heard.update, stamp=Stamp(self.incarnation, self._version)
                )
                self._store(origin, again, now_us, LOCAL)
        return stamp

    # -- exchange ----------------------------------------------------------------------

    def digest(self) -> Digest:
        """Return the stamp held per origin and key: what a peer compares against.

        Per key rather than one stamp per origin, so that a peer that missed one value (a
        VIEW, say) while getting later ones is still sent the value it missed.
        """
        return {
            member_id: {key: heard.update.stamp for key, heard in origin.values.items()}
            for member_id, origin in self.origins.items()
        }

    def updates_for(self, digest: Digest) -> list[Update]:
        """Return every held value newer than what ``digest`` says the peer has, VIEWs first."""
        missing = []
        for member_id, origin in self.origins.items():
            held_by_peer = digest.get(member_id, {})
            for key, heard in origin.values.items():
                peer = held_by_peer.get(key)
                if peer is None or heard.update.stamp > peer:
                    missing.append(heard.update)
        return sorted(missing, key=lambda update: update.key is not Key.VIEW)

    def merge(
        self, updates: Iterable[Update], now_us: int, via: str, speaker: str = ""
    ) -> MergeResult:
        """Merge updates a peer (``via``) delivered; see the module's rules.

        ``speaker`` is the member whose own agent is proven to have sent them (its certificate
        names it), '' when none is: its updates are heard directly, any other's are relays.
        """
        pending = list(updates)
        taken: dict[_Taken, int] = dict.fromkeys(_Taken, 0)
        # VIEW values of known members first: they may make other origins known.
        progress = True
        while progress:
            progress = False
            for update in [u for u in pending if u.key is Key.VIEW and self._admits_view(u)]:
                pending.remove(update)
                taken[self._take(update, now_us, via, speaker)] += 1
                progress = True
        unknown: list[str] = []
        own = [u.stamp for u in pending if u.origin == self.local_id]
        refuted = self._refute(max(own), now_us) if own else None
        for update in pending:
            if not self._is_known(update.origin):
                if update.origin not in unknown:
                    unknown.append(update.origin)
                continue
            taken[self._take(update, now_us, via, speaker)] += 1
        return MergeResult(
            taken[_Taken.TAKEN],
            taken[_Taken.STALE],
            tuple(unknown),
            refuted,
            taken[_Taken.UNPROVEN],
        )

    # -- questions ---------------------------------------------------------------------

    def known_members(self) -> set[str]:
        """Return the members this agent may hold values of: listed in a view, or held."""
        known = set(self.origins) | {self.local_id}
        for origin in self.origins.values():
            heard = origin.values.get(Key.VIEW)
            if heard is not None and isinstance(heard.update.value, GroupView):
                known.update(row.member_id for row in heard.update.value.members if row.member_id)
        return known

    def value(self, member_id: str, key: Key) -> Heard | None:
        """Return the held value of ``member_id`` for ``key``, if any."""
        origin = self.origins.get(member_id)
        return origin.values.get(key) if origin is not None else None

    def connected(self, member_id: str, now_us: int, silence_us: int) -> bool:
        """Return whether the member's agent produced news within ``silence_us`` (WL#2860)."""
        if member_id == self.local_id:
            return True
        origin = self.origins.get(member_id)
        return origin is not None and now_us - origin.fresh_at_us <= silence_us

    def seed(self, member_id: str, values: Mapping[Key, Value], seen_us: int, via: str) -> None:
        """Hold remembered values of ``member_id`` (a registry after a restart).

        They carry the lowest stamp, so any news from the member replaces them, and the member
        is not connected until it is heard from.
        """
        if member_id == self.local_id or member_id in self.origins:
            return
        oldest = Stamp(0, 0)
        origin = Origin(member_id, oldest, first_seen_us=seen_us, fresh_at_us=-(2**62))
        for key, value in values.items():
            origin.values[key] = Heard(Update(member_id, oldest, key, value, seen_us), seen_us, via)
        self.origins[member_id] = origin

    def forget(self, member_id: str) -> bool:
        """Drop everything known of ``member_id`` (``grstats members forget``).

        Its own view no longer makes it known (:meth:`_admits_view`); another member's view
        that lists it still does.
        """
        self.changes += 1
        self.forgotten.add(member_id.lower())
        return self.origins.pop(member_id, None) is not None

    # -- internals ---------------------------------------------------------------------

    def _admits_view(self, update: Update) -> bool:
        """Whether a VIEW value may be merged: of a known member, or one that claims the group.

        A member's own view listing itself in a group whose name a view held here gives (an
        expelled member whose agent runs, its last view) makes it known, within
        ``max_origins``: so an agent that starts after a member left the group still counts it
        as not active, as the agents that saw it in the view do. Not once it was forgotten.
        """
        if self._is_known(update.origin):
            return True
        view = self_listing_view(update)
        if (
            view is None
            or update.origin.lower() in self.forgotten
            or len(self.origins) >= self.max_origins
            or not view.group_name
        ):
            return False
        return view.group_name in self._group_names()

    def _group_names(self) -> set[str]:
        """The group names of the views held."""
        names = set()
        for origin in self.origins.values():
            heard = origin.values.get(Key.VIEW)
            if heard is not None and isinstance(heard.update.value, GroupView):
                names.add(heard.update.value.group_name)
        names.discard("")
        return names

    def _is_known(self, member_id: str) -> bool:
        if member_id in self.origins:
            return True
        return len(self.origins) < self.max_origins and member_id in self.known_members()

    def _origin(self, member_id: str, stamp: Stamp, now_us: int) -> Origin:
        origin = self.origins.get(member_id)
        if origin is None:
            origin = Origin(member_id, stamp, first_seen_us=now_us, fresh_at_us=now_us)
            self.origins[member_id] = origin
        return origin

    def _take(self, update: Update, now_us: int, via: str, speaker: str) -> _Taken:
        """Store ``update`` if it is newer than what is held (and proven enough); say which."""
        if update.origin == self.local_id:
            if not self._adopts(update):
                self._keep_earlier_log(update)
                return _Taken.STALE  # the local member's values come from its own source only
        elif not self._proven(update, now_us, speaker):
            return _Taken.UNPROVEN
        direct = bool(speaker) and update.origin == speaker
        origin = self._origin(update.origin, update.stamp, now_us)
        if direct:  # its own agent spoke, with news or not: the relay rule's reference
            highest = max(origin.direct.stamp, update.stamp) if origin.direct else update.stamp
            origin.direct = Direct(highest, now_us)
        held = origin.values.get(update.key)
        replaces_relay = direct and self.relays is not None and held is not None and not held.direct
        if held is not None and update.stamp <= held.update.stamp and not replaces_relay:
            return _Taken.STALE
        self._store(origin, update, now_us, via, direct=direct)
        return _Taken.TAKEN

    def _proven(self, update: Update, now_us: int, speaker: str) -> bool:
        """Whether a value of another member may be taken: its own agent's, or an admitted relay.

        Every value is, when there is no :attr:`relays` rule.
        """
        if self.relays is None or (speaker and update.origin == speaker):
            return True
        origin = self.origins.get(update.origin)
        return self.relays.admits(origin.direct if origin else None, update.stamp, now_us)

    def _adopts(self, update: Update) -> bool:
        """Whether a peer's value of the local member is taken: its history of an earlier run.

        The events and Group Replication log lines an earlier run of this agent recorded are
        history no source gives again (a restarted server's error_log starts empty): an agent
        that lost its registry, or restarted, takes them back from a peer, until it records its
        own (which then extend them).
        """
        if update.key not in _HISTORY:
            return False
        origin = self.origins.get(self.local_id)
        held = origin.values.get(update.key) if origin is not None else None
        return held is None or (held.via != LOCAL and update.stamp > held.update.stamp)

    def _keep_earlier_log(self, update: Update) -> None:
        """Set a peer's LOG value of the local member from an earlier run aside (see merge)."""
        if update.key is not Key.LOG or update.stamp.incarnation >= self.incarnation:
            return
        if self.earlier_log is None or update.stamp > self.earlier_log.stamp:
            self.earlier_log = update

    def _store(
        self, origin: Origin, update: Update, now_us: int, via: str, *, direct: bool = False
    ) -> None:
        held = origin.values.get(update.key)
        value, kept = update.value, held.update.value if held is not None else None
        if isinstance(value, Counts) and isinstance(kept, Counts):
            update = dataclasses.replace(update, value=_keep_absent(value, kept))
        origin.values[update.key] = Heard(update, now_us, via, direct)
        self.changes += 1
        if held is not None and held.update.stamp > update.stamp:
            # A relayed value above its own agent's: the origin's stamp is the held ones' again.
            origin.stamp = max(heard.update.stamp for heard in origin.values.values())
        if update.stamp > origin.stamp or len(origin.values) == 1 or direct:
            origin.stamp = max(origin.stamp, update.stamp)
            origin.fresh_at_us = now_us


class _Taken(enum.Enum):
    """What a merge did with one update."""

    TAKEN = enum.auto()
    STALE = enum.auto()  #: not newer than the value held (or of the local member)
    UNPROVEN = enum.auto()  #: a relay the :class:`~grstats.agent.gossip.relays.RelayRule` refused


def _keep_absent(counts: Counts, held: Counts) -> Counts:
    """``counts`` with the GTID columns and clock offsets it does not carry kept from ``held``."""
    if not counts.gtids_present:
        counts = dataclasses.replace(counts, row=counts.row.with_gtid_columns_of(held.row))
    if not counts.offsets_present:
        counts = dataclasses.replace(counts, offsets=held.offsets)
    return counts


def self_listing_view(update: Update) -> GroupView | None:
    """The view ``update`` carries if it is its origin's own VIEW listing that origin, else None.

    What a member that no held view lists may be known by: the view its own agent reports
    (:meth:`GossipState._admits_view`, and ``Rounds._admit`` for an agent without a view).
    """
    view = update.value
    if (
        update.key is Key.VIEW
        and isinstance(view, GroupView)
        and any(row.member_id == update.origin for row in view.members)
    ):
        return view
    return None
