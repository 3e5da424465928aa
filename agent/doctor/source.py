"""The doctor's checks of the member's MySQL server: one read through the agent's own source.

:class:`~grstats.agent.sources.mysql.MySQLSource` diagnoses every fault of a read
(:mod:`grstats.core.fault`); the doctor reads once, as the agent would, and places
the fault on the line of the step it stops: the login, the privilege, performance_schema,
Group Replication, the member. Steps before it passed; steps after it are skipped. A read
that works gives every line, the last one naming the member's server_uuid.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grstats.agent.doctor.checklist import Check
from grstats.core.address import join_address
from grstats.core.errors import SourceError
from grstats.core.fault import fault_of

if TYPE_CHECKING:
    from grstats.agent.config import AgentConfig
    from grstats.agent.sources.mysql_config import MySQLSourceConfig
    from grstats.core.fault import SourceFault
    from grstats.core.model import MemberSnapshot

#: The steps of a read, in order: each line's name and what it checks.
STEPS = {
    "mysql.connect": "the login",
    "mysql.privileges": "the account's privileges",
    "mysql.performance_schema": "performance_schema",
    "mysql.group_replication": "Group Replication",
    "mysql.member": "the member",
}
#: The step each fault kind stops at; a kind not listed (a newer one) stops the login.
STEP_OF_KIND = {
    "connect_refused": "mysql.connect",
    "connect_timeout": "mysql.connect",
    "access_denied": "mysql.connect",
    "server_down": "mysql.connect",
    "other": "mysql.connect",
    "missing_privilege": "mysql.privileges",
    "performance_schema_off": "mysql.performance_schema",
    "not_mysql": "mysql.performance_schema",
    "gr_not_installed": "mysql.group_replication",
    "gr_not_started": "mysql.group_replication",
    "group_name_empty": "mysql.group_replication",
    "bad_data": "mysql.member",
}
#: Member states of a member that serves its group, and of one on its way there.
_SERVING = {"ONLINE"}
_JOINING = {"RECOVERING"}


@dataclass(frozen=True, slots=True)
class SourceResult:
    """What the source checks found.

    Attributes:
        checks: the ``mysql.*`` lines (one skipped ``mysql`` line for a simulated source).
        member_id: the member's server_uuid when known, else ``""``.
        discovered: the agents the member's view names (its members' hosts at
            ``agent_port``), for a config that discovers its peers; the member's own excluded.
    """

    checks: list[Check]
    member_id: str = ""
    discovered: tuple[str, ...] = ()


async def check_source(config: AgentConfig, timeout_s: float) -> SourceResult:
    """Read the member once as the agent would; the ``mysql.*`` lines and what the read gave."""
    if config.mysql is None:
        simulated = config.simulated
        assert simulated is not None
        member = simulated.member_uuid()
        message = (
            f"MySQL: not checked, source is simulated (member {simulated.member_index} of "
            f"scenario {simulated.scenario!r}, server_uuid {member})"
        )
        return SourceResult([Check.skipped("mysql", message)], member)
    mysql = dataclasses.replace(
        config.mysql,
        connect_timeout_s=min(config.mysql.connect_timeout_s, timeout_s),
        query_timeout_s=min(config.mysql.query_timeout_s, timeout_s),
    )
    # Imported here: the MySQL driver loads only for a config that reads a real member.
    from grstats.agent.sources.mysql import MySQLSource  # noqa: PLC0415

    try:
        async with MySQLSource(mysql) as source:
            snapshot = await source.read()
    except SourceError as exc:
        return SourceResult(_stopped(mysql, fault_of(exc)))
    if snapshot.fault is not None:  # GR not started: the member is known all the same
        checks = [*_stopped(mysql, snapshot.fault)[:-1], _member_line(snapshot)]
    else:
        checks = [
            *_passed_lines(mysql),
            _group_line(snapshot),
            _member_line(snapshot),
            _name_line(config, snapshot, source.cluster_name_note, source.cluster_name_fix),
        ]
    discovered = _discovered(config, snapshot) if config.discovery_enabled else ()
    return SourceResult(checks, snapshot.member_id, discovered)


def _stopped(config: MySQLSourceConfig, fault: SourceFault) -> list[Check]:
    """The lines of a read stopped by ``fault``: passed before its step, skipped after."""
    at = STEP_OF_KIND.get(fault.kind, "mysql.connect")
    steps = list(STEPS)
    stop = steps.index(at)
    checks = _passed_lines(config)[:stop]
    checks.append(Check.failed(at, fault.message, fault.fix))
    for name in steps[stop + 1 :]:
        checks.append(Check.skipped(name, f"{STEPS[name]}: not checked, {STEPS[at]} failed"))
    return checks


def _passed_lines(config: MySQLSourceConfig) -> list[Check]:
    """The lines of the login, the privileges and performance_schema, once they passed."""
    from grstats.agent.sources.mysql import password_source  # noqa: PLC0415  (as above)

    over = " over TLS" if config.uses_tls else ""
    return [
        Check.ok(
            "mysql.connect",
            f"MySQL at {config.address} accepts the login of {config.user!r}{over}, with the "
            f"password from {password_source(config)}",
        ),
        Check.ok(
            "mysql.privileges",
            f"the account may read Group Replication's tables in {config.schema}",
        ),
        Check.ok(
            "mysql.performance_schema",
            f"{config.schema} is enabled and has Group Replication's tables",
        ),
    ]


def _group_line(snapshot: MemberSnapshot) -> Check:
    """Whether the member serves its group: ONLINE passes, RECOVERING warns, others fail."""
    own = snapshot.own_row()
    state = own.member_state if own is not None else "not listed"
    role = f", {own.member_role}" if own is not None and own.member_role else ""
    view = snapshot.view
    group = (
        f"Group Replication is running: the member is {state}{role}, in group "
        f"{view.group_name} of {len(view.members)} member(s)"
    )
    name = "mysql.group_replication"
    if state in _SERVING:
        return Check.ok(name, group)
    if state in _JOINING:
        return Check.warning(
            name, f"{group}; it joins the group (distributed recovery) and serves once ONLINE"
        )
    return Check.failed(
        name,
        f"Group Replication is installed but the member is {state}{role}",
        "see the server's error log for why, then run STOP GROUP_REPLICATION; "
        "START GROUP_REPLICATION;",
    )


def _member_line(snapshot: MemberSnapshot) -> Check:
    own = snapshot.own_row()
    where = ""
    if own is not None and own.member_host:
        where = f" at {join_address(own.member_host, own.member_port or 3306)}"
    note = f" ({snapshot.health.message})" if snapshot.health.message else ""
    message = f"the member's server_uuid is {snapshot.member_id}{where}{note}"
    if not snapshot.health.ok:
        return Check.warning("mysql.member", message)
    return Check.ok("mysql.member", message)


def _name_line(config: AgentConfig, snapshot: MemberSnapshot, note: str, fix: str) -> Check:
    """Where the group's name comes from: the InnoDB Cluster metadata, else ``group_label``.

    An account that may not read the metadata warns with the GRANT: the group would show its
    InnoDB Cluster name with it.
    """
    # Imported here, as MySQLSource is: the MySQL driver loads only for a MySQL config.
    from grstats.agent.sources.mysql import METADATA_DENIED, NO_CLUSTER  # noqa: PLC0415

    assert config.mysql is not None
    schema = config.mysql.metadata_schema
    label = snapshot.view.group_label
    if label:
        return Check.ok("mysql.group_name", f"InnoDB Cluster {label!r} ({schema}.clusters)")
    configured = (
        f"the group is called {config.group_label!r} (group_label)"
        if config.group_label
        else "the group has no name: set group_label in the config to give it one"
    )
    if note == METADATA_DENIED:
        return Check.warning(
            "mysql.group_name",
            f"the account may not read {schema}, MySQL Shell's InnoDB Cluster metadata, so "
            f"the group's InnoDB Cluster name is unknown; {configured}",
            f"{fix} (deploy/mysql/grstats-user.sql grants it)",
        )
    where = (
        f"{schema} names no cluster of group {snapshot.view.group_name}"
        if note == NO_CLUSTER
        else f"not an InnoDB Cluster (no {schema})"
    )
    return Check.ok("mysql.group_name", f"{where}: {configured}")


def _discovered(config: AgentConfig, snapshot: MemberSnapshot) -> tuple[str, ...]:
    """The other members' agents, as the agent discovers them (member host at agent_port)."""
    return tuple(
        join_address(row.member_host, config.agent_port)
        for row in snapshot.view.members
        if row.member_id != snapshot.member_id and row.member_host
    )
