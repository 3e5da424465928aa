"""The seam between the agent and its own member: ``StatsSource``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from grstats.agent.model import MemberSnapshot


class StatsSource(Protocol):
    """Where the agent learns about its own member.

    Calling contract:

    * Who calls: the agent's exchange loop, once per period (1 to 60 s, default 1 s, like
      ``group_replication_flow_control_period``), and ``grstats`` tools that read one member.
    * Never concurrently: the next :meth:`read` starts only after the previous one returned.
    * It may block on I/O (it is awaited) and must finish within the source's own timeout.
    * Expected failures (server down, refused, too slow, a value outside its column's domain)
      raise :class:`grstats.agent.errors.SourceError`, with a message saying what failed;
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
