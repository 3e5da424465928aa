"""``MemorySource``: a source that returns snapshots it is given, for unit tests of the agent."""

from __future__ import annotations

from typing import TYPE_CHECKING

from grstats.core.errors import SourceError, SourceUnavailable

if TYPE_CHECKING:
    from collections.abc import Callable

    from grstats.core.fault import SourceFault
    from grstats.core.model import MemberSnapshot


class MemorySource:
    """A :class:`~grstats.agent.sources.base.StatsSource` backed by a function or a fixed snapshot.

    ``MemorySource(snapshot)`` always returns ``snapshot``; ``MemorySource(fn)`` returns
    ``fn()``, which may raise :class:`~grstats.core.errors.SourceError` to play a failing server.
    :meth:`fail` makes the next reads raise SourceUnavailable (with a fault, if given) until
    :meth:`recover`.
    """

    def __init__(self, snapshot: MemberSnapshot | Callable[[], MemberSnapshot]) -> None:
        self._produce = snapshot if callable(snapshot) else (lambda: snapshot)
        self._failure: str | None = None
        self._fault: SourceFault | None = None
        self.reads = 0
        self.closed = False

    def fail(self, message: str = "server is down", *, fault: SourceFault | None = None) -> None:
        """Make reads raise SourceUnavailable(``message``, ``fault``) until :meth:`recover`."""
        self._failure = message
        self._fault = fault

    def recover(self) -> None:
        """Let reads succeed again."""
        self._failure = None

    async def read(self) -> MemberSnapshot:
        """Return the next snapshot, or raise SourceError as configured."""
        if self.closed:
            raise SourceError("read after aclose")
        self.reads += 1
        if self._failure is not None:
            raise SourceUnavailable(self._failure, fault=self._fault)
        return self._produce()

    async def aclose(self) -> None:
        """Mark the source closed."""
        self.closed = True
