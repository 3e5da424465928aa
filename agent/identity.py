"""Member identities in certificates: with mutual TLS a peer speaks only for its own member.

The mapping: a member's agent certificate holds the subject alternative name
``URI:urn:grstats:member:<server_uuid>`` (the member's ``@@server_uuid``, lowercase), beside
DNS or IP names for the addresses its peers dial (``deploy/tls/make-certs.sh`` makes them).
Host names are not identities: several members may share a host, and a member may move.

The Gossip servicers check every request of a peer that presented a certificate: its
``sender_member`` and the origin of every update must be the member its certificate names.
An agent pushes only its own values (``Gossip.Push``, and the push half of
``Gossip.Exchange``); the values of third members travel only in Exchange *responses*, which
are bound to no member: the dialing agent takes them as relays, as
:class:`~grstats.agent.gossip.relays.RelayRule` admits them. A certificate without a member
(the client certificate of ``grstats query``) may query but not gossip.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from grstats.agent.gossip import Update

#: The prefix of the URI subject alternative name that names a member.
MEMBER_URI_PREFIX = "urn:grstats:member:"


def member_uri(member_id: str) -> str:
    """The subject alternative name URI of ``member_id``'s certificate."""
    return f"{MEMBER_URI_PREFIX}{member_id.lower()}"


def certified_members(auth_context: Mapping[str, Iterable[bytes]]) -> frozenset[str] | None:
    """The members the peer's certificate names, or None when it presented no certificate.

    ``auth_context`` is ``grpc.ServicerContext.auth_context()``: gRPC puts each URI subject
    alternative name of a verified client certificate under ``peer_uri``.
    """
    if not auth_context.get("x509_subject"):
        return None
    members = set()
    for raw in auth_context.get("peer_uri", ()):
        uri = raw.decode("utf-8", "replace")
        if uri.lower().startswith(MEMBER_URI_PREFIX):
            members.add(uri[len(MEMBER_URI_PREFIX) :].lower())
    return frozenset(members)


def refusal(certified: frozenset[str], sender_member: str, updates: Iterable[Update]) -> str:
    """Why a peer certified for ``certified`` may not send this, or "" when it may.

    It may when its certificate names exactly one member, ``sender_member`` is that member,
    and every update is of that member.
    """
    if len(certified) != 1:
        names = ", ".join(sorted(certified)) or "no member"
        return f"the peer's certificate names {names}, not exactly one member"
    (member,) = certified
    if sender_member != member:
        return f"sender_member {sender_member} is not the certificate's member {member}"
    for update in updates:
        if update.origin != member:
            return (
                f"an update of member {update.origin} is not of the certificate's member {member}"
            )
    return ""
