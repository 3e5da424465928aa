"""The seam between the agent and its own member: ``StatsSource``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from grstats.core.model import MemberSnapshot
    from grstats.core.rows.member_log import MemberLogRow

#: The most of its member's Group Replication log lines a source reads at once (one read): a
#: server's older lines come at the next reads, so a long history never makes a read long.
LOG_LINES_PER_READ = 100


class StatsSource(Protocol):
    """Where the agent learns about its own member.

    Calling contract:

    * Who calls: the agent's exchange loop, once per period (1 to 60 s, default 1 s, like
      ``group_replication_flow_control_period``), and ``grstats`` tools that read one member.
    * Never concurrently: the next :meth:`read` starts only after the previous one returned.
    * It may block on I/O (it is awaited) and must finish within the source's own timeout.
    * Expected failures (server down, refused, too slow, a value outside its column's domain)
      raise :class:`grstats.core.errors.SourceError`, with a message saying what failed;
      nothing else is raised for them. The same source recovers on a later call once the
      cause is gone.
    * :meth:`aclose` releases connections; it is called once, and no read follows it.
    """

    async def read(self) -> MemberSnapshot:
        """Return a fresh snapshot of the local member."""
        ...

    async def aclose(self) -> None:
        """Release whatever the source holds."""
        ...


@runtime_checkable
class LogSource(Protocol):
    """A source that also reads its member's Group Replication error-log lines.

    Calling contract: the agent calls :meth:`take_log` right after each :meth:`StatsSource.read`
    (on the same task, never concurrently with a read). It returns the lines that read found
    that no earlier call returned, oldest first, at most :data:`LOG_LINES_PER_READ`; () when
    there are none, the server cannot say (before MySQL 8.0.22) or the read failed.
    :attr:`log_note` says why the lines are not read ('' while they are), for the agent's log
    (once each time it changes) and ``grstats doctor``.
    """

    log_note: str

    def take_log(self) -> tuple[MemberLogRow, ...]:
        """The member's new lines, oldest first (see the class)."""
        ...
