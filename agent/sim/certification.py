"""The simulated group's certification database: the version of each key written, held compactly.

A dict of Python ints costs about 75 bytes a key (its slot, the key's int object, a share of the
version's), and the stable-set round empties it every ``gc_period_s``: the steady scenario (500
tps, 4 keys each, 100,000 keys) fills about 70,000 keys a minute, up to 8.5 MB during the round,
and what is freed stays in the process, since the freed int objects leave the allocator's
arenas fragmented (an agent's RSS grew by some 9 MB in its first minutes).
:class:`DenseCertification` holds one 8-byte slot per key of the key space instead, 0 for a key
not held: 800 KB for 100,000 keys, however full. Key spaces over :data:`DENSE_MAX_KEYS` keep a
dict (:class:`SparseCertification`), which is then the smaller.

Both hold the same keys and versions after the same writes and sweeps, so the group's state
(conflicts, COUNT_TRANSACTIONS_ROWS_VALIDATING) does not depend on which one holds them.
"""

from __future__ import annotations

from array import array
from itertools import islice
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterator

#: The largest key space held in slots (2 MiB of them); a larger one is held in a dict.
DENSE_MAX_KEYS = 1 << 18


class Certification(Protocol):
    """Each written key's version (a positive int below 2**63), as ``Certifier`` keeps it."""

    def get(self, key: int) -> int | None:
        """Return the version of ``key``, or None when it is not held."""

    def write(self, keys: list[int], version: int) -> None:
        """Set the version of each of ``keys`` to ``version``."""

    def sweep(self, below: int, equal: int, part: int) -> Iterator[None]:
        """Erase the versions under ``below`` but ``equal``, pausing after every ``part`` keys."""

    def items(self) -> Iterator[tuple[int, int]]:
        """Yield (key, version) of every key held, by key for slots."""

    def __len__(self) -> int:
        """How many keys are held (COUNT_TRANSACTIONS_ROWS_VALIDATING)."""


def certification(key_space: int, start_us: int) -> Certification:
    """Return an empty database for keys ``0..key_space-1`` of a group started at ``start_us``.

    Versions follow from commit times, which are after ``start_us``: positive from a start at
    or after the epoch, which slots need (0 is a key not held).
    """
    if key_space <= DENSE_MAX_KEYS and start_us >= 0:
        return DenseCertification(key_space)
    return SparseCertification()


class DenseCertification:
    """One signed 64-bit slot per key, 0 for a key not held (a version is never 0)."""

    def __init__(self, key_space: int) -> None:
        self._slots = array("q", [0]) * key_space
        self._held = 0

    def get(self, key: int) -> int | None:
        """Return the version of ``key``, or None when it is not held."""
        return self._slots[key] or None

    def write(self, keys: list[int], version: int) -> None:
        """Set the version of each of ``keys`` to ``version``."""
        slots = self._slots
        for key in keys:
            if not slots[key]:
                self._held += 1
            slots[key] = version

    def sweep(self, below: int, equal: int, part: int) -> Iterator[None]:
        """Erase the versions under ``below`` but ``equal``, pausing after every ``part`` slots."""
        slots = self._slots
        for start in range(0, len(slots), part):
            erased = 0
            for key in range(start, min(start + part, len(slots))):
                version = slots[key]
                if version and version < below and version != equal:
                    slots[key] = 0
                    erased += 1
            self._held -= erased
            yield

    def items(self) -> Iterator[tuple[int, int]]:
        """Yield (key, version) of every key held, by key."""
        return ((key, version) for key, version in enumerate(self._slots) if version)

    def __len__(self) -> int:
        """How many keys are held."""
        return self._held

    def __eq__(self, other: object) -> bool:
        """Whether ``other`` holds the same keys at the same versions."""
        return _same(self, other)

    __hash__ = None  # type: ignore[assignment]  # mutable


class SparseCertification:
    """A dict of the keys held, for key spaces too large for slots."""

    def __init__(self) -> None:
        self._versions: dict[int, int] = {}

    def get(self, key: int) -> int | None:
        """Return the version of ``key``, or None when it is not held."""
        return self._versions.get(key)

    def write(self, keys: list[int], version: int) -> None:
        """Set the version of each of ``keys`` to ``version``."""
        versions = self._versions
        for key in keys:
            versions[key] = version

    def sweep(self, below: int, equal: int, part: int) -> Iterator[None]:
        """Erase the versions under ``below`` but ``equal``, pausing after every ``part`` keys.

        The keys kept go to a new dict, which is as small as they need.
        """
        items = iter(self._versions.items())
        kept: dict[int, int] = {}
        while chunk := list(islice(items, part)):
            kept.update(
                (key, version) for key, version in chunk if version >= below or version == equal
            )
            yield
        self._versions = kept

    def items(self) -> Iterator[tuple[int, int]]:
        """Yield (key, version) of every key held, in the order they were first written."""
        return iter(self._versions.items())

    def __len__(self) -> int:
        """How many keys are held."""
        return len(self._versions)

    def __eq__(self, other: object) -> bool:
        """Whether ``other`` holds the same keys at the same versions."""
        return _same(self, other)

    __hash__ = None  # type: ignore[assignment]  # mutable


def _same(one: Certification, other: object) -> bool:
    return (
        isinstance(other, DenseCertification | SparseCertification)
        and len(one) == len(other)
        and dict(one.items()) == dict(other.items())
    )
