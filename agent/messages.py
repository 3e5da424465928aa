"""What agents send, as values: gossip, the answer to an exchange, the report a Query carries.

:class:`Gossip` and :class:`Answer` are what the transport seam
(:mod:`grstats.agent.transports.base`) carries; :class:`SourceReport` is what a Query answer
says of the answering agent's source. Only the wire modules turn them into protobuf
(``ExchangeRequest``, ``ExchangeResponse`` and ``QueryResponse.source_fault``, see
:mod:`grstats.agent.convert`). The in-memory transport hands gossip over as it is.

Every message between agents, and every Query answer, says which grstats version the
sending agent runs and which revision of the wire contract it speaks (:class:`AgentBuild`,
:data:`PROTOCOL_REVISION`); docs/upgrades.md says which agents interoperate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from grstats import __version__
from grstats.agent.gossip.updates import Key

if TYPE_CHECKING:
    from grstats.agent.gossip import Digest, Update
    from grstats.agent.sources.fault import SourceFault

#: The revision of the wire contract (proto/grstats.proto) this agent speaks. Bump it by one
#: with every field or enum value appended to the contract (tests/test_proto.py pins the
#: contract of each revision), and add a line to docs/upgrades.md's list of revisions.
#: 1: every agent before ``protocol_revision`` existed (it sends none); 2: agents say their
#: version and revision (ExchangeRequest, ExchangeResponse and QueryResponse); 3: the members'
#: events (``Update.events``, ``Key.EVENTS``), a new kind of value that agents of revisions 1
#: and 2 refuse, so it is sent only to agents of revision :data:`EVENTS_REVISION` or later;
#: 4: the member weight (``Server.member_weight``); 5: the members' Group Replication log
#: lines (``Update.log``, ``Key.LOG``), sent only to agents of :data:`LOG_REVISION` or later.
PROTOCOL_REVISION = 5
#: The first revision whose agents take the EVENTS value.
EVENTS_REVISION = 3
#: The first revision whose agents take the LOG value.
LOG_REVISION = 5
#: The revision of an agent that says none: one older than the field (proto3 reads it as 0).
UNSAID_REVISION = 1


@dataclass(frozen=True, slots=True)
class AgentBuild:
    """Which grstats an agent runs, as its messages say.

    Attributes:
        version: its grstats version (``grstats.__version__``); ``''`` when it did not say
            (an agent of revision 1).
        revision: the wire contract's revision it speaks (:data:`PROTOCOL_REVISION` of its
            release); :data:`UNSAID_REVISION` when it did not say.
    """

    version: str = __version__
    revision: int = PROTOCOL_REVISION

    @property
    def takes_events(self) -> bool:
        """Whether it takes the members' EVENTS values (older agents refuse the whole message)."""
        return self.revision >= EVENTS_REVISION

    @property
    def takes_log(self) -> bool:
        """Whether it takes the members' LOG values (older agents refuse the whole message)."""
        return self.revision >= LOG_REVISION

    @property
    def newer(self) -> bool:
        """Whether it speaks a newer revision than this agent (this one ignores its new fields)."""
        return self.revision > PROTOCOL_REVISION


#: What this agent says of itself.
OWN_BUILD = AgentBuild()
#: What an agent older than the fields is taken to run: an unknown version of revision 1.
UNSAID_BUILD = AgentBuild("", UNSAID_REVISION)


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


@dataclass(frozen=True, slots=True)
class SourceReport:
    """Whether an agent can read its own member, and since when it cannot (Query answers say).

    Attributes:
        fault: why the agent cannot read its member; None while it can. An answer of an agent
            older than the report has none, and reads as "can read".
        since_us: the agent's clock when the fault began, µs since the epoch; None while it
            can read, or when the agent did not say.
    """

    fault: SourceFault | None = None
    since_us: int | None = None

    @property
    def ok(self) -> bool:
        """Whether the agent can read its member."""
        return self.fault is None
