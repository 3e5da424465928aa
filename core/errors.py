"""Errors of the agent, translated once at each seam.

Tree::

    Exception
    └── AgentError              anything grstats's agent reports as a failure
        ├── ConfigError         invalid configuration; names the setting and the value
        ├── SourceError         a stats source could not read its member (``fault``: why)
        │   ├── SourceUnavailable   the server is down, refused, or answered too late
        │   └── SourceDataError     the server answered with a value outside its domain
        ├── RegistryError       the member registry could not be read or written
        │                       (defined in agent.registry, beside its implementations)
        └── TransportError      an exchange with a peer agent failed
            ├── PeerUnreachable     the peer could not be reached (or refused the call)
            └── PeerTimeout         the peer did not answer within the deadline
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grstats.core.fault import SourceFault


class AgentError(Exception):
    """Base of the agent's errors."""


class ConfigError(AgentError, ValueError):
    """Invalid configuration; the message names the setting and the value."""


class SourceError(AgentError):
    """A stats source could not read its member; the message says what failed.

    ``fault`` says why in words a DBA acts on (:class:`~grstats.core.fault.SourceFault`),
    or is None when the source could not tell; ``str()`` is the message alone.
    """

    def __init__(self, *args: object, fault: SourceFault | None = None) -> None:
        super().__init__(*args)
        self.fault = fault


class SourceUnavailable(SourceError):
    """The member's server could not be reached, refused us, or did not answer in time."""


class SourceDataError(SourceError):
    """The member's server returned a value outside its column's domain (names the column)."""


class TransportError(AgentError):
    """An exchange with a peer agent failed; the message names the peer."""


class PeerUnreachable(TransportError):
    """The peer agent could not be reached, or refused the exchange."""


class PeerTimeout(TransportError):
    """The peer agent did not answer within the deadline."""
