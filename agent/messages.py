"""What agents send, as values: gossip, the answer to an exchange, the report a Query carries.

:class:`Gossip` and :class:`Answer` are what the transport seam
(:mod:`grstats.agent.transports.base`) carries; :class:`SourceReport`
(:mod:`grstats.core.query_wire`'s, named here for its callers) is what a Query answer says of
the answering agent's source. Only the wire modules turn them into protobuf
(``ExchangeRequest``, ``ExchangeResponse`` and ``QueryResponse.source_fault``, see
:mod:`grstats.agent.convert`). The in-memory transport hands gossip over as it is.

Every message between agents, and every Query answer, says which grstats version the
sending agent runs and which revision of the wire contract it speaks (:class:`AgentBuild`,
:data:`PROTOCOL_REVISION`); docs/upgrades.md says which agents interoperate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from grstats.agent.gossip.updates import Key
from grstats.core.build import OWN_BUILD, AgentBuild
from grstats.core.query_wire import SourceReport

__all__ = ["Answer", "Gossip", "SourceReport", "for_build"]

if TYPE_CHECKING:
    from grstats.agent.gossip import Digest, Update


@dataclass(frozen=True, slots=True)
class Gossip:
    """One message from an agent to a peer: a push of its own news, or an exchange's request.

    Attributes:
        sender: the sending agent's address, ``host:port``.
        sender_member: the sending agent's member (server_uuid).
        updates: on a push, the sender's own values (all of them on a stream's first message,
            then what changed); on an exchange, its own values the receiver lacks.
        sent_at_us: the sender's clock when it sent (for the clock-offset estimate).
        digest: on an exchange, the stamps of everything the sender holds; empty on a push.
        build: the grstats the sending agent runs (this agent's own, unless decoded from
            the wire).
    """

    sender: str
    sender_member: str
    updates: tuple[Update, ...]
    sent_at_us: int
    digest: Digest = field(default_factory=dict)
    build: AgentBuild = OWN_BUILD


def for_build(updates: tuple[Update, ...], build: AgentBuild | None) -> tuple[Update, ...]:
    """``updates`` without those an agent running ``build`` (None: unknown yet) cannot take."""
    if build is not None and build.takes_log:
        return updates
    refused = {Key.LOG} if build is not None and build.takes_events else {Key.EVENTS, Key.LOG}
    return tuple(update for update in updates if update.key not in refused)


@dataclass(frozen=True, slots=True)
class Answer:
    """An agent's answer to an exchange: what the requester lacks, and the answerer's digest.

    Attributes:
        updates: the values the requester lacks, judged by the digest it sent.
        digest: the stamps of everything the answerer holds.
        member: the answerer's member, ``''`` before its first read.
        received_at_us: the answerer's clock when the request arrived.
        sent_at_us: the answerer's clock when it answered.
        request_bytes: the size of the request on the wire, filled in by the transport that
            sent it (0 for one that encodes nothing); for the metrics only.
        build: the grstats the answering agent runs (this agent's own, unless decoded from
            the wire).
    """

    updates: tuple[Update, ...] = ()
    digest: Digest = field(default_factory=dict)
    member: str = ""
    received_at_us: int = 0
    sent_at_us: int = 0
    request_bytes: int = 0
    build: AgentBuild = OWN_BUILD
