"""``/member/health`` and ``/member/ready``: may the member be restarted, may it get traffic.

Pure: no I/O, no clock. The answers are judged from the agent's own verdict (the rows of
``replication_group_status`` and ``replication_group_member_status`` it serves, one rule with
``grstats query status``), for the agent's own member only: a load balancer or a Kubernetes
probe asks the agent beside the server it routes to.

Two questions, because automation confuses them (a readiness probe that restarts a RECOVERING
member in a loop, percona-server-mysql-operator #1099):

* **health** (a liveness probe: restart, page an operator): 200 unless the member needs an
  operator: its server not read (``server_not_read``), OFFLINE (Group Replication not running
  on it, or it left the group: ``offline``), ERROR (``error``), or outside the majority's view
  while its own server says ONLINE or RECOVERING (``split_brain``, MySQL Shell's split-brain).
  A RECOVERING member is healthy (restarting it starts its recovery again), and so is one the
  group sees UNREACHABLE (Group Replication expels or takes it back by itself).
* **ready** (a readiness probe: route reads and writes to it): 200 only when it is healthy,
  ONLINE, its group has quorum (MySQL Shell's statuses ``OK...``; ``no_quorum`` else) and its
  applier backlog is at most ``health.ready_max_backlog`` transactions: TRANSACTIONS_BEHIND
  (received and not applied, ProxySQL's ``transactions_behind``), else the applier queue
  (COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE). Not ready: ``recovering``, ``unreachable``
  and the health's reasons.

Each answer is a JSON object, its keys in this order (HAProxy's example matches two of them
together): ``member_id``, ``state`` (MEMBER_STATE as the agent serves it), ``role``
(MEMBER_ROLE), ``super_read_only`` (ON or OFF, the member's own; a writer's is OFF), ``ok``,
``reason`` (one of :data:`REASONS`, ``""`` when ok), ``detail`` (a sentence for people),
``transactions_behind`` and ``applier_queue`` (the progress of a recovering member's
backlog), ``max_backlog`` on ``ready``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grstats.core.checks import check_int
from grstats.core.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from grstats.core.rows import Column, Value

    #: A served table: its columns and rows (:data:`grstats.agent.served.Table`).
    Table = tuple[tuple[Column, ...], list[tuple[Value, ...]]]

#: The paths, on the metrics listener.
HEALTH_PATH = "/member/health"
READY_PATH = "/member/ready"
PROBE_PATHS = (HEALTH_PATH, READY_PATH)
#: Why a member is not healthy or not ready.
REASONS = (
    "not_known",
    "server_not_read",
    "offline",
    "error",
    "split_brain",
    "recovering",
    "unreachable",
    "no_quorum",
    "applier_backlog",
)
#: replication_group_status's STATUS values of a group that has quorum (MySQL Shell's).
_QUORUM = ("OK", "OK_PARTIAL", "OK_NO_TOLERANCE", "OK_NO_TOLERANCE_PARTIAL")
_MAX_BACKLOG = 10**9


@dataclass(frozen=True, slots=True, kw_only=True)
class HealthConfig:
    """The ``[health]`` section; errors name ``health.<key>``.

    Attributes:
        ready_max_backlog: the most transactions the member may have received and not applied
            and still be ready (0 to 10**9); 100 by default, ProxySQL's common
            ``max_transactions_behind``.
    """

    ready_max_backlog: int = 100

    def __post_init__(self) -> None:
        check_int("health.ready_max_backlog", self.ready_max_backlog, 0, _MAX_BACKLOG)

    @classmethod
    def from_table(cls, table: object) -> HealthConfig:
        """Build the section from a TOML table; errors name ``health.<key>``."""
        if isinstance(table, HealthConfig):
            return table
        if not isinstance(table, dict):
            raise ConfigError(f"health: {table!r} is not a table ([health])")
        try:
            return cls(**table)
        except TypeError as exc:
            raise ConfigError(f"health: {exc}") from exc


#: The ``[health]`` section's defaults (the section absent).
DEFAULT_HEALTH = HealthConfig()


@dataclass(frozen=True, slots=True)
class ProbeAnswer:
    """One probe's answer: the HTTP status and the JSON body."""

    ok: bool
    body: Mapping[str, object]

    @property
    def status(self) -> str:
        """The HTTP status line: 200 or 503."""
        return "200 OK" if self.ok else "503 Service Unavailable"

    def json_bytes(self) -> bytes:
        """The body as UTF-8 JSON, one line."""
        return json.dumps(self.body, separators=(",", ":")).encode() + b"\n"


_DETAIL = {
    "not_known": "the agent has not read its member yet",
    "server_not_read": "the agent cannot read its member's server",
    "offline": "the member is OFFLINE: Group Replication is not running on it",
    "error": "the member is in ERROR: it needs an operator",
    "split_brain": "split-brain: the member says ONLINE but is not in the majority's view",
    "recovering": "the member is RECOVERING: leave it alone, it is not ready for traffic yet",
    "unreachable": "the group cannot reach the member",
    "no_quorum": "the member's group has no quorum",
    "applier_backlog": "the member's applier backlog is over health.ready_max_backlog",
}


def _backlog(member: Mapping[str, Value]) -> int | None:
    """Transactions received and not applied: TRANSACTIONS_BEHIND, else the applier queue."""
    for column in ("TRANSACTIONS_BEHIND", "APPLIER_QUEUE"):
        value = member.get(column)
        if isinstance(value, int):
            return value
    return None


def _unhealthy(member: Mapping[str, Value] | None, read_failed: bool) -> str:
    """Why the member needs an operator, ``""`` when it does not."""
    if read_failed or (member is not None and member.get("CONNECTED") != "YES"):
        return "server_not_read"
    if member is None:
        return "not_known"
    if member.get("SPLIT_BRAIN") == "YES":
        return "split_brain"
    state = member.get("MEMBER_STATE")
    if state in ("OFFLINE", "ERROR"):
        return str(state).lower()
    return ""


def _answer(
    member_id: str, member: Mapping[str, Value] | None, reason: str, ok_detail: str, **extra: object
) -> ProbeAnswer:
    """The answer for ``reason`` (``""``: ok), with the member's state and backlog."""
    row = member or {}
    body: dict[str, object] = {
        "member_id": member_id,
        "state": row.get("MEMBER_STATE"),
        "role": row.get("MEMBER_ROLE"),
        "super_read_only": row.get("SUPER_READ_ONLY"),
        "ok": not reason,
        "reason": reason,
        "detail": _DETAIL[reason] if reason else ok_detail,
        "transactions_behind": row.get("TRANSACTIONS_BEHIND"),
        "applier_queue": row.get("APPLIER_QUEUE"),
        **extra,
    }
    return ProbeAnswer(not reason, body)


def health(
    member_id: str, member: Mapping[str, Value] | None, *, read_failed: bool = False
) -> ProbeAnswer:
    """``/member/health``: 200 unless the member needs an operator (see the module).

    ``read_failed``: the agent's last read of its server failed (known at once, where the
    served row's CONNECTED says so only after the silence).
    """
    reason = _unhealthy(member, read_failed)
    return _answer(member_id, member, reason, "healthy: no operator is needed")


def ready(
    member_id: str,
    member: Mapping[str, Value] | None,
    group_status: str,
    config: HealthConfig = DEFAULT_HEALTH,
    *,
    read_failed: bool = False,
) -> ProbeAnswer:
    """``/member/ready``: 200 only when the member may get traffic (see the module)."""
    reason = _unhealthy(member, read_failed)
    if not reason and member is not None:
        state = member.get("MEMBER_STATE")
        backlog = _backlog(member)
        if state in ("RECOVERING", "UNREACHABLE"):
            reason = str(state).lower()
        elif group_status not in _QUORUM:
            reason = "no_quorum"
        elif backlog is not None and backlog > config.ready_max_backlog:
            reason = "applier_backlog"
    return _answer(
        member_id, member, reason, "ready for traffic", max_backlog=config.ready_max_backlog
    )


def probe(
    path: str,
    member_id: str,
    served: Mapping[str, Table],
    config: HealthConfig = DEFAULT_HEALTH,
    *,
    read_failed: bool = False,
) -> ProbeAnswer | None:
    """The answer at ``path`` (None: no probe's path) from the served verdict's rows.

    Called on the agent's loop for each probe request: ``served`` are the agent's tables now,
    of which the group's row of ``replication_group_status`` and the members' rows of
    ``replication_group_member_status`` are read; ``read_failed`` as :func:`health` takes it.
    """
    if path not in PROBE_PATHS:
        return None
    # Here, not at the top: the config reads [health] from this module, and loading the rows'
    # schema with it would cost every command that reads a config (grstats --version, ...).
    from grstats.core.rows import (  # noqa: PLC0415
        REPLICATION_GROUP_MEMBER_STATUS,
        REPLICATION_GROUP_STATUS,
        by_name,
    )

    groups = by_name(*served[REPLICATION_GROUP_STATUS.name])
    group = groups[0] if groups else {}
    members = by_name(*served[REPLICATION_GROUP_MEMBER_STATUS.name])
    member = next((row for row in members if row.get("MEMBER_ID") == member_id), None)
    if path == HEALTH_PATH:
        return health(member_id, member, read_failed=read_failed)
    status = str(group.get("STATUS", "UNKNOWN"))
    return ready(member_id, member, status, config, read_failed=read_failed)
