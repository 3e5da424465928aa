"""``SourceFault``: why the agent cannot read its member, in words a DBA acts on.

A source that fails raises :class:`~grstats.core.errors.SourceError` carrying a fault
(``fault=``): its ``kind`` (one of :data:`FAULT_KINDS`, stable, for programs), its ``message``
(what is wrong, naming the server, the account and where the password came from, never the
password) and its ``fix`` (what to do, e.g. the ``GRANT`` to run). :func:`fault_of` gives the
fault of any error, so that a source which attaches none still reads as kind ``other``.

The builders below word each kind once, for every source and for the tools that check a set-up
(``grstats doctor``); they are pure: no I/O, no driver. This module imports nothing of grstats,
so that :mod:`grstats.core.errors` can name its type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Every kind of fault, for programs (the Query answer, metrics, tests). Append only.
FAULT_KINDS: tuple[str, ...] = (
    "connect_refused",  # nothing listens on host:port (or a firewall rejects)
    "connect_timeout",  # host:port did not answer within connect_timeout_s
    "access_denied",  # the server refused the login: wrong password, no such account
    "missing_privilege",  # logged in, but the account may not read a table
    "performance_schema_off",  # performance_schema = OFF: its tables are empty
    "not_mysql",  # not MySQL 5.7 or later (MariaDB has no Group Replication), or tables missing
    "gr_not_installed",  # the group_replication plugin is not installed
    "gr_not_started",  # installed but not started: the member is OFFLINE
    "group_name_empty",  # group_replication_group_name is empty: GR cannot start
    "server_down",  # the server stopped answering (crashed, restarted, too slow)
    "bad_data",  # the server answered a value outside its column's domain
    "other",  # anything else; the message says what
    "too_many_connections",  # the server holds max_connections already (MySQL error 1040)
)

#: The account grstats documents (deploy/mysql/grstats-user.sql) needs only this privilege.
GRANTED_PRIVILEGE = "SELECT"

_IDENTIFIER_RE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


@dataclass(frozen=True, slots=True)
class SourceFault:
    """Why the agent cannot read its member, in words a DBA acts on.

    Attributes:
        kind: one of :data:`FAULT_KINDS` (an answer from a newer agent may bring a kind this
            version does not know: show its message).
        message: what is wrong; names host:port, the user and the ``password_file`` or
            ``password_env`` read, as relevant; never a password.
        fix: what to do, e.g. the ``GRANT`` to run; ``""`` when there is nothing to suggest.
    """

    kind: str
    message: str
    fix: str = ""

    def __str__(self) -> str:
        return f"{self.message} Fix: {self.fix}" if self.fix else self.message


def fault_of(error: BaseException) -> SourceFault:
    """Return the fault ``error`` carries, or kind ``other`` with its text."""
    fault = getattr(error, "fault", None)
    if isinstance(fault, SourceFault):
        return fault
    return SourceFault("other", str(error) or type(error).__name__)


# -- the wording of each kind -----------------------------------------------------------


def connect_refused(address: str, reason: str) -> SourceFault:
    """Nothing accepts connections on ``address`` (``host:port``)."""
    return SourceFault(
        "connect_refused",
        f"cannot connect to MySQL at {address}: connection refused ({reason})",
        f"check that mysqld is running and listens on {address} (its port and bind_address), "
        "and that no firewall rejects the agent; else correct [mysql] host and port",
    )


def connect_timeout(address: str, limit_s: float) -> SourceFault:
    """``address`` did not answer the connect within ``limit_s`` seconds."""
    return SourceFault(
        "connect_timeout",
        f"cannot connect to MySQL at {address}: no answer within {limit_s:g} s (connect_timeout_s)",
        f"check that {address} is the server's address and that no firewall drops the "
        "agent's packets; on a slow network raise [mysql] connect_timeout_s",
    )


def too_many_connections(address: str, server_text: str) -> SourceFault:
    """The server at ``address`` refused the connect: it holds ``max_connections`` already.

    MySQL's ER_CON_COUNT_ERROR (1040, "Too many connections"), sent before the login beyond
    ``max_connections + 1`` connections and at the login beyond ``max_connections`` to an
    account without CONNECTION_ADMIN or SUPER (``Connection_handler_manager``'s
    ``check_and_incr_conn_count`` and ``valid_connection_count``,
    sql/conn_handler/connection_handler_manager.cc).
    """
    return SourceFault(
        "too_many_connections",
        f"MySQL at {address} refused the connection: it holds max_connections client "
        f"connections already ({server_text})",
        "find who holds the connections (SHOW PROCESSLIST, as an account with "
        "CONNECTION_ADMIN) and close the idle ones, or raise max_connections; the agent "
        "connects again by itself",
    )


def access_denied(
    address: str, account: str, password_source: str, server_text: str
) -> SourceFault:
    """The server at ``address`` refused the login of ``account`` (``'user'@'host'``)."""
    return SourceFault(
        "access_denied",
        f"MySQL at {address} refused the login of {account}, with the password from "
        f"{password_source}: {server_text}",
        f"check that {password_source} holds the account's password, and that the account "
        "exists for the agent's host (deploy/mysql/grstats-user.sql creates it and sets the "
        "password)",
    )


def missing_privilege(address: str, account: str, schema: str, server_text: str) -> SourceFault:
    """``account`` logged in at ``address`` but may not read ``schema``'s tables."""
    return SourceFault(
        "missing_privilege",
        f"the account {account} may not read {schema} on {address}: {server_text}",
        f"run {grant_statement(schema, account)}",
    )


def grant_statement(schema: str, account: str) -> str:
    """Return the ``GRANT`` that lets ``account`` (``'user'@'host'``) read ``schema``."""
    name = schema if _IDENTIFIER_RE.fullmatch(schema) else f"`{schema}`"
    return f"GRANT {GRANTED_PRIVILEGE} ON {name}.* TO {account};"


def account_name(user: str, host: str) -> str:
    """Return ``'user'@'host'`` as MySQL writes an account."""
    return f"'{user}'@'{host}'"


def performance_schema_off(address: str) -> SourceFault:
    """The server at ``address`` runs with ``performance_schema = OFF``."""
    return SourceFault(
        "performance_schema_off",
        f"performance_schema is disabled on {address} (@@performance_schema = 0), so its "
        "tables are empty and Group Replication cannot be read",
        "set performance_schema = ON under [mysqld] in the server's my.cnf and restart "
        "mysqld (it cannot be turned on while the server runs)",
    )


def not_mysql(address: str, what: str) -> SourceFault:
    """The server at ``address`` is not a MySQL 5.7+ server with performance_schema's tables."""
    return SourceFault(
        "not_mysql",
        f"{address} {what}; grstats reads Group Replication members of MySQL 5.7, 8.0 and 8.4",
        "point [mysql] host and port at a MySQL Group Replication member",
    )


def gr_not_installed(address: str) -> SourceFault:
    """The server at ``address`` has no group_replication plugin."""
    return SourceFault(
        "gr_not_installed",
        f"the group_replication plugin is not installed on {address}",
        "run INSTALL PLUGIN group_replication SONAME 'group_replication.so'; (or "
        "plugin_load_add = group_replication.so in my.cnf), then configure and start Group "
        "Replication; or point [mysql] host and port at a member of the group",
    )


def gr_not_started(address: str, state: str) -> SourceFault:
    """Group Replication is installed on ``address`` but not running.

    ``state`` says how MySQL shows the member, e.g.
    ``OFFLINE in performance_schema.replication_group_members``.
    """
    return SourceFault(
        "gr_not_started",
        f"Group Replication is not running on {address}: this member is {state}",
        "run START GROUP_REPLICATION; on the member (on the group's first member: SET GLOBAL "
        "group_replication_bootstrap_group = ON first, and OFF after), and see the server's "
        "error log if it does not stay ONLINE",
    )


def group_name_empty(address: str) -> SourceFault:
    """``group_replication_group_name`` is empty on ``address``: GR cannot start."""
    return SourceFault(
        "group_name_empty",
        f"group_replication_group_name is empty on {address}, so Group Replication cannot start",
        "set group_replication_group_name to the group's UUID (the same on every member) in "
        "my.cnf or with SET PERSIST, then START GROUP_REPLICATION;",
    )


def server_down(message: str, fix: str = "") -> SourceFault:
    """The server stopped answering; ``message`` says how."""
    return SourceFault("server_down", message, fix)


def bad_data(message: str) -> SourceFault:
    """The server answered a value outside its column's domain; ``message`` names the column."""
    return SourceFault(
        "bad_data",
        f"the server answered a value grstats does not accept: {message}",
        "report it to grstats with the server's version and the value",
    )
