"""Which build an agent is: its grstats version and the revision of the wire contract it speaks.

Every message between agents, and every Query answer and request, says it (:class:`AgentBuild`,
:data:`PROTOCOL_REVISION`); docs/upgrades.md says which agents interoperate. The agent's
messages (:mod:`grstats.agent.messages`), its wire modules and every Query client (the
collector's, ``grstats query``) read it from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from grstats import __version__

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
