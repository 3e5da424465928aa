"""``GtidSet`` and ``Gtid``: immutable values with MySQL's text and ``frozenset``'s algebra."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, NamedTuple

from grstats.core.gtid import _bounds, _text
from grstats.core.gtid._errors import GtidError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from grstats.core.gtid._bounds import Bounds
    from grstats.core.gtid._text import Parsed, Tsid


class GtidInterval(NamedTuple):
    """One interval of a GTID set: GNOs ``start`` to ``end`` inclusive, as MySQL prints them."""

    uuid: str
    tag: str
    start: int
    end: int


@dataclass(frozen=True, slots=True, order=True)
class Gtid:
    """One GTID, ``uuid:gno`` or ``uuid:tag:gno`` (LAST_CONFLICT_FREE_TRANSACTION).

    Its text is that of ``Gtid::to_string`` (sql/rpl_gtid_misc.cc). ``uuid`` and ``tag`` are
    normalised to lowercase; ``tag`` is ``''`` when untagged.
    """

    uuid: str
    gno: int
    tag: str = ""

    def __post_init__(self) -> None:
        if not _text.is_uuid(self.uuid):
            raise GtidError(f"uuid: {self.uuid!r} is not a 36-character UUID")
        if self.tag and not _text.is_tag(self.tag):
            raise GtidError(f"tag: {self.tag!r} is not 1-32 of [A-Za-z_][A-Za-z0-9_]*")
        if not isinstance(self.gno, int) or not _bounds.GNO_MIN <= self.gno <= _bounds.GNO_MAX:
            raise GtidError(f"gno: {self.gno!r} is not in 1..{_bounds.GNO_MAX}")
        object.__setattr__(self, "uuid", self.uuid.lower())
        object.__setattr__(self, "tag", self.tag.lower())

    @classmethod
    def parse(cls, text: str, *, tags: bool = True) -> Gtid:
        """Return the GTID of ``text`` as ``Gtid::parse`` reads it (spaces around tokens allowed).

        ``tags=False`` reads as MySQL before 8.3, where a tag is malformed.

        Raises:
            GtidParseError: the text is not one GTID; the message names the token and offset.
        """
        uuid, tag, gno = _text.parse_gtid(text, tags=tags)
        return cls(uuid, gno, tag)

    def __str__(self) -> str:
        return f"{self.uuid}:{self.tag}:{self.gno}" if self.tag else f"{self.uuid}:{self.gno}"


class GtidSet:
    """An immutable set of GTIDs with MySQL's text format and set algebra (sql/rpl_gtid_set.cc).

    Build one with ``GtidSet.parse(text)``, ``GtidSet()`` (empty) or ``GtidSet(intervals)`` from
    ``(uuid, tag, start, end)`` tuples with ``end`` inclusive. ``str(s)`` is MySQL's canonical
    text; ``|``, ``&``, ``-``, ``^``, ``<=``, ``<``, ``>=``, ``>`` and ``==`` work as for
    ``frozenset``; ``gtid in s`` takes a :class:`Gtid` or its text; ``s.count()`` is GTID_COUNT.
    Instances are hashable and never change.
    """

    __slots__ = ("_hash", "_map")

    _map: Parsed
    _hash: int | None

    def __init__(self, intervals: Iterable[tuple[str, str, int, int]] = ()) -> None:
        collected: dict[Tsid, list[tuple[int, int]]] = {}
        for uuid, tag, start, end in intervals:
            tsid = _checked_tsid(uuid, tag)
            for name, gno in (("start", start), ("end", end)):
                if not isinstance(gno, int) or not _bounds.GNO_MIN <= gno <= _bounds.GNO_MAX:
                    raise GtidError(f"{name}: {gno!r} is not a GNO in 1..{_bounds.GNO_MAX}")
            if end < start:
                raise GtidError(f"end: {end} is before start {start}")
            collected.setdefault(tsid, []).append((start, end + 1))
        self._map = {tsid: _bounds.from_pairs(collected[tsid]) for tsid in sorted(collected)}
        self._hash = None

    @classmethod
    def _of(cls, mapping: Parsed) -> GtidSet:
        """Wrap an already canonical mapping (keys sorted, no empty bounds) without checks."""
        made = cls.__new__(cls)
        made._map = mapping
        made._hash = None
        return made

    @classmethod
    def parse(cls, text: str, *, tags: bool = True) -> GtidSet:
        """Return the set that MySQL reads from ``text`` (lenient: ``Gtid_set::add_gtid_text``).

        ``tags=True`` reads MySQL 8.3+'s grammar, a superset of older servers' that gives their
        text the same meaning; ``tags=False`` reads as MySQL before 8.3, where a tag is malformed.

        Raises:
            GtidParseError: the text is malformed; the message names the token and its offset.
        """
        return cls._of(_text.parse(text, tags=tags))

    @classmethod
    def intersection_of(cls, sets: Iterable[GtidSet]) -> GtidSet:
        """Return the GTIDs in every one of ``sets``: the stable set of a group.

        That is the intersection ``Certifier::stable_set_handle`` computes (certifier.cc). The
        intersection of no sets is the empty set.
        """
        members = list(sets)
        if not members:
            return cls()
        common = set(members[0]._map).intersection(*(member._map for member in members[1:]))
        result = {}
        for tsid in sorted(common):
            bounds = _bounds.intersect_many([member._map[tsid] for member in members])
            if bounds:
                result[tsid] = bounds
        return cls._of(result)

    @classmethod
    def union_of(cls, sets: Iterable[GtidSet]) -> GtidSet:
        """Return the GTIDs in any of ``sets``."""
        collected: dict[Tsid, list[Bounds]] = {}
        for member in sets:
            for tsid, bounds in member._map.items():
                collected.setdefault(tsid, []).append(bounds)
        return cls._of(
            {tsid: _bounds.union_many(collected[tsid]) for tsid in sorted(collected)},
        )

    # -- text ---------------------------------------------------------------------------

    def to_text(self, separator: str = _text.UUID_SEPARATOR) -> str:
        """Return MySQL's canonical text; ``separator=","`` gives one line."""
        return _text.format_set(self._map.items(), separator)

    def __str__(self) -> str:
        return _text.format_set(self._map.items())

    def __repr__(self) -> str:
        return f"GtidSet.parse({self.to_text(',')!r})"

    # -- inspection -------------------------------------------------------------------

    def count(self) -> int:
        """Return the number of GTIDs (MySQL's GTID_COUNT)."""
        return sum(map(_bounds.count_gnos, self._map.values()))

    def __bool__(self) -> bool:
        return bool(self._map)

    def is_empty(self) -> bool:
        """Return whether the set holds no GTID."""
        return not self._map

    def __iter__(self) -> Iterator[GtidInterval]:
        """Yield the intervals in canonical order: by uuid, then tag (untagged first), then GNO."""
        for (uuid, tag), bounds in self._map.items():
            for start, end in _bounds.pairs(bounds):
                yield GtidInterval(uuid, tag, start, end - 1)

    def tsids(self) -> list[tuple[str, str]]:
        """Return the ``(uuid, tag)`` pairs that have GTIDs in the set, sorted."""
        return list(self._map)

    def uuids(self) -> list[str]:
        """Return the UUIDs that have GTIDs in the set, sorted."""
        return list(dict.fromkeys(uuid for uuid, _ in self._map))

    def last_gno(self, uuid: str, tag: str = "") -> int:
        """Return the highest GNO of ``uuid`` (and ``tag``), or 0 if it has none."""
        bounds = self._map.get((uuid.lower(), tag.lower()))
        return bounds[-1] - 1 if bounds else 0

    def __contains__(self, item: object) -> bool:
        gtid = Gtid.parse(item) if isinstance(item, str) else item
        if not isinstance(gtid, Gtid):
            return False
        bounds = self._map.get((gtid.uuid, gtid.tag))
        return bounds is not None and _bounds.contains(bounds, gtid.gno)

    # -- algebra ----------------------------------------------------------------------

    def _combine(
        self,
        other: GtidSet,
        operation: Callable[[Bounds, Bounds], Bounds],
        keys: Iterable[Tsid],
    ) -> GtidSet:
        empty = _bounds.EMPTY
        result = {}
        for tsid in sorted(keys):
            bounds = operation(self._map.get(tsid, empty), other._map.get(tsid, empty))
            if bounds:
                result[tsid] = bounds
        return GtidSet._of(result)

    def union(self, *others: GtidSet) -> GtidSet:
        """Return the GTIDs in this set or any of ``others``."""
        present = [other for other in others if other._map and other is not self]
        if not present:  # values are immutable: the set itself is the answer
            return self
        return GtidSet.union_of((self, *present))

    def intersection(self, *others: GtidSet) -> GtidSet:
        """Return the GTIDs in this set and all of ``others``."""
        return GtidSet.intersection_of((self, *others))

    def difference(self, *others: GtidSet) -> GtidSet:
        """Return the GTIDs in this set and in none of ``others`` (GTID_SUBTRACT)."""
        result = self
        for other in others:
            if other._map and result._map:
                result = result._combine(other, _bounds.difference, result._map)
        return result

    def symmetric_difference(self, other: GtidSet) -> GtidSet:
        """Return the GTIDs in exactly one of this set and ``other``."""
        return self._combine(other, _bounds.symmetric_difference, self._map.keys() | other._map)

    def issubset(self, other: GtidSet) -> bool:
        """Return whether every GTID of this set is in ``other`` (GTID_SUBSET)."""
        empty = _bounds.EMPTY
        return all(
            _bounds.is_subset(bounds, other._map.get(tsid, empty))
            for tsid, bounds in self._map.items()
        )

    def issuperset(self, other: GtidSet) -> bool:
        """Return whether every GTID of ``other`` is in this set."""
        return other.issubset(self)

    def isdisjoint(self, other: GtidSet) -> bool:
        """Return whether the two sets have no GTID in common."""
        return not self._combine(other, _bounds.intersection, self._map.keys() & other._map)

    def __or__(self, other: object) -> GtidSet:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return self.union(other)

    def __and__(self, other: object) -> GtidSet:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return self.intersection(other)

    def __sub__(self, other: object) -> GtidSet:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return self.difference(other)

    def __xor__(self, other: object) -> GtidSet:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return self.symmetric_difference(other)

    def __le__(self, other: object) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return self.issubset(other)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return self != other and self.issubset(other)

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return other.issubset(self)

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return self != other and other.issubset(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return self._map == other._map

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(chain.from_iterable(self._map.items())))
        return self._hash

    def __reduce__(self) -> tuple[Callable[[str], GtidSet], tuple[str]]:
        return (GtidSet.parse, (self.to_text(","),))


def _checked_tsid(uuid: str, tag: str) -> Tsid:
    """Return the lowercase ``(uuid, tag)`` or raise GtidError naming the bad one."""
    if not isinstance(uuid, str) or not _text.is_uuid(uuid):
        raise GtidError(f"uuid: {uuid!r} is not a 36-character UUID")
    if not isinstance(tag, str) or (tag and not _text.is_tag(tag)):
        raise GtidError(f"tag: {tag!r} is not 1-32 of [A-Za-z_][A-Za-z0-9_]*")
    return uuid.lower(), tag.lower()
